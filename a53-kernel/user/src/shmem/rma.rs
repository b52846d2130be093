//! Remote memory access: the PLDMA (`crate::rdma`) to the same virtual address in PE `pe`'s
//! process, a plain copy for this PE. Blocking calls end when the data is at its destination;
//! `_nbi` calls are posted and end at the next `quiet` (or any blocking call, which quiets).
//! `fence` is `quiet` here: the engine does not promise to keep the order of transfers to one
//! PE.

use proto::gsas::{VaOp, VaWidth};
use proto::rdma::queue::Direction;

use super::{Pe, ShmemError, Transport};

impl<T: Transport> Pe<T> {
    /// Posts one transfer (or copies, for this PE) after the checks: `remote` is the
    /// symmetric end.
    ///
    /// # Safety
    ///
    /// `local` is `len` bytes of this process, valid (and, for a read, not used otherwise)
    /// until the next quiet.
    unsafe fn post(
        &mut self,
        direction: Direction,
        remote: u64,
        local: u64,
        len: usize,
        pe: i64,
    ) -> Result<(), ShmemError> {
        let pe = self.check_pe(pe)?;
        if len == 0 {
            return Ok(());
        }
        self.check_symmetric(remote, len as u64)?;
        if pe == self.me {
            let (from, to) = match direction {
                Direction::Write => (local, remote),
                Direction::Read => (remote, local),
            };
            // SAFETY: both ranges are this process's (the caller's and a symmetric one); they
            // may overlap.
            unsafe { core::ptr::copy(from as *const u8, to as *mut u8, len) };
            return Ok(());
        }
        // SAFETY: the caller's.
        unsafe { self.t.post(direction, pe, local, len, remote) }.map_err(|e| ShmemError::at(pe, e))
    }

    /// `shmem_quiet`: every transfer this PE posted has ended (its data is at its destination).
    pub fn quiet(&mut self) -> Result<(), ShmemError> {
        core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst);
        self.t.quiet().map_err(|(pe, e)| ShmemError::at(pe, e))
    }

    /// `shmem_fence`: puts to a PE are delivered in order around it (here: a quiet).
    pub fn fence(&mut self) -> Result<(), ShmemError> {
        self.quiet()
    }

    /// `shmem_putmem`: `src` to the symmetric `dest` on `pe`; returns when it is there.
    pub fn putmem(&mut self, dest: u64, src: &[u8], pe: i64) -> Result<(), ShmemError> {
        // SAFETY: `src` is borrowed until the quiet below.
        unsafe { self.post(Direction::Write, dest, src.as_ptr() as u64, src.len(), pe)? };
        self.quiet()
    }

    /// `shmem_getmem`: the symmetric `src` on `pe` into `dest`.
    pub fn getmem(&mut self, dest: &mut [u8], src: u64, pe: i64) -> Result<(), ShmemError> {
        // SAFETY: `dest` is borrowed until the quiet below.
        unsafe { self.post(Direction::Read, src, dest.as_mut_ptr() as u64, dest.len(), pe)? };
        self.quiet()
    }

    /// `shmem_putmem_nbi`: posted; `src` must stay unchanged until the next quiet.
    ///
    /// # Safety
    ///
    /// `[src, src + len)` is this process's memory, unchanged until the next quiet.
    pub unsafe fn putmem_nbi(&mut self, dest: u64, src: u64, len: usize, pe: i64) -> Result<(), ShmemError> {
        // SAFETY: the caller's.
        unsafe { self.post(Direction::Write, dest, src, len, pe) }
    }

    /// `shmem_getmem_nbi`: posted; `dest` holds the data after the next quiet.
    ///
    /// # Safety
    ///
    /// `[dest, dest + len)` is this process's memory, not used until the next quiet.
    pub unsafe fn getmem_nbi(&mut self, dest: u64, src: u64, len: usize, pe: i64) -> Result<(), ShmemError> {
        // SAFETY: the caller's.
        unsafe { self.post(Direction::Read, src, dest, len, pe) }
    }

    /// The addresses of a strided array: its lowest and its end, or `BadArgument` on overflow.
    fn span(base: u64, stride: i64, nelems: usize, elem: usize) -> Result<(u64, u64), ShmemError> {
        let bad = ShmemError::BadArgument("strided range overflows");
        let last =
            i64::try_from(nelems - 1).ok().and_then(|n| n.checked_mul(stride)).and_then(|s| s.checked_mul(elem as i64));
        let last = last.ok_or(bad)?;
        let far = base.checked_add_signed(last).ok_or(bad)?;
        let (low, high) = if far < base { (far, base) } else { (base, far) };
        Ok((low, high.checked_add(elem as u64).ok_or(bad)?))
    }

    /// `shmem_iput` / `shmem_iget` core: `nelems` elements of `elem` bytes, strides in elements.
    ///
    /// # Safety
    ///
    /// The local strided array (`src` for a put, `dest` for a get) is this process's memory.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn strided(
        &mut self,
        direction: Direction,
        dest: u64,
        src: u64,
        dst: i64,
        sst: i64,
        nelems: usize,
        elem: usize,
        pe: i64,
    ) -> Result<(), ShmemError> {
        self.check_pe(pe)?;
        if !matches!(elem, 1 | 2 | 4 | 8 | 16) {
            return Err(ShmemError::BadArgument("element size (1, 2, 4, 8 or 16)"));
        }
        if nelems == 0 {
            return Ok(());
        }
        let (remote, rstride, local, lstride) = match direction {
            Direction::Write => (dest, dst, src, sst),
            Direction::Read => (src, sst, dest, dst),
        };
        let (low, high) = Self::span(remote, rstride, nelems, elem)?;
        self.check_symmetric(low, high - low)?;
        Self::span(local, lstride, nelems, elem)?;
        for k in 0..nelems as i64 {
            let r = remote.wrapping_add_signed(k * rstride * elem as i64);
            let l = local.wrapping_add_signed(k * lstride * elem as i64);
            // SAFETY: the caller's; the elements are kept until the quiet below.
            unsafe { self.post(direction, r, l, elem, pe)? };
        }
        self.quiet()
    }

    /// `shmem_put_signal[_nbi]`: `src` to `dest` on `pe`, then the signal (set or add) on the
    /// symmetric 64-bit `signal_at` there, once the data is in place. Both forms complete the
    /// data before the signal (the `_nbi` form as well: it may complete early).
    pub fn put_signal(
        &mut self,
        dest: u64,
        src: &[u8],
        signal_at: u64,
        signal: u64,
        add: bool,
        pe: i64,
    ) -> Result<(), ShmemError> {
        let p = self.check_pe(pe)?;
        if !signal_at.is_multiple_of(8) {
            return Err(ShmemError::BadArgument("signal address not 8-aligned"));
        }
        self.check_symmetric(signal_at, 8)?;
        self.putmem(dest, src, pe)?;
        let op = if add { VaOp::FetchAdd } else { VaOp::Set };
        self.atomic_at(op, VaWidth::W64, p, signal_at, signal, 0).map(drop)
    }

    /// `shmem_signal_fetch`: the local signal word.
    pub fn signal_fetch(&mut self, signal_at: u64) -> Result<u64, ShmemError> {
        let me = i64::from(self.me);
        self.atomic(VaOp::Fetch, VaWidth::W64, signal_at, 0, 0, me)
    }
}
