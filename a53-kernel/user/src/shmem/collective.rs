//! Collectives over active sets (start, stride, size), with the library's own symmetric
//! counters instead of pSync: `Reserved::ARRIVALS[j]` on PE i counts the sync signals PE j has
//! sent to PE i, ever; PE i counts those it has consumed. A sync is a dissemination barrier
//! (round k: signal the member 2^k ahead, consume one signal from the member 2^k behind), so
//! every pair's counts only grow and no reset can race with a late or early signal, whatever
//! sets follow each other. Data collectives are puts (or gets, for reductions) between syncs.

use proto::gsas::{VaOp, VaWidth};
use proto::rdma::queue::Direction;

use super::{Pe, Reserved, ShmemError, Transport};

/// PEs start, start + stride, ... (size of them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ActiveSet {
    pub start: i64,
    pub stride: i64,
    pub size: i64,
}

impl ActiveSet {
    /// Every PE: `SHMEM_TEAM_WORLD`.
    pub fn world(n_pes: u16) -> Self {
        Self { start: 0, stride: 1, size: i64::from(n_pes) }
    }
}

/// The members of a checked set, and this PE's index in it.
struct Members {
    start: u16,
    stride: u16,
    size: u16,
    mine: u16,
}

impl Members {
    fn pe(&self, index: u16) -> u16 {
        self.start + index * self.stride
    }
}

impl<T: Transport> Pe<T> {
    fn members(&self, set: ActiveSet) -> Result<Members, ShmemError> {
        let bad = ShmemError::BadActiveSet { start: set.start, stride: set.stride, size: set.size };
        let n = i64::from(self.n);
        let last = (set.size - 1).checked_mul(set.stride).and_then(|s| s.checked_add(set.start));
        let fits = set.size >= 1 && set.start >= 0 && (set.stride >= 1 || set.size == 1) && last.is_some_and(|l| l < n);
        if !fits {
            return Err(bad);
        }
        let stride = set.stride.max(1);
        let offset = i64::from(self.me) - set.start;
        if offset < 0 || offset % stride != 0 || offset / stride >= set.size {
            return Err(bad);
        }
        Ok(Members {
            start: set.start as u16,
            stride: stride as u16,
            size: set.size as u16,
            mine: (offset / stride) as u16,
        })
    }

    /// `shmem_sync`: every member has reached it (no quiet).
    pub fn sync(&mut self, set: ActiveSet) -> Result<(), ShmemError> {
        let m = self.members(set)?;
        self.sync_members(&m)
    }

    fn sync_members(&mut self, m: &Members) -> Result<(), ShmemError> {
        let mut distance = 1u16;
        while distance < m.size {
            let to = m.pe((m.mine + distance) % m.size);
            let from = m.pe((m.mine + m.size - distance) % m.size);
            self.signal(to)?;
            self.consumed[usize::from(from)] += 1;
            let want = self.consumed[usize::from(from)];
            let counter = self.reserved(Reserved::ARRIVALS + 8 * u64::from(from));
            self.until(&[from], || {
                // SAFETY: the library's own word in the mapped heap.
                let got = unsafe { core::ptr::read_volatile(counter as *const u64) };
                (got >= want).then_some(())
            })?;
            distance = distance.saturating_mul(2);
        }
        Ok(())
    }

    /// Adds one to this PE's arrival counter on `to`; while the job starts, a PE not there yet
    /// (or its heap not mapped yet) is tried again.
    fn signal(&mut self, to: u16) -> Result<(), ShmemError> {
        let counter = self.reserved(Reserved::ARRIVALS + 8 * u64::from(self.me));
        loop {
            match self.atomic_at(VaOp::FetchAdd, VaWidth::W64, to, counter, 1, 0) {
                Ok(_) => return Ok(()),
                Err(
                    ShmemError::PeGone(_) | ShmemError::Lib(crate::Error::Service(proto::gsas::ErrorCode::Unmapped)),
                ) if self.starting() => self.t.sleep_us(10_000),
                Err(e) => return Err(e),
            }
        }
    }

    /// `shmem_barrier`: quiet, then sync.
    pub fn barrier(&mut self, set: ActiveSet) -> Result<(), ShmemError> {
        self.quiet()?;
        self.sync(set)
    }

    /// `shmem_barrier_all`.
    pub fn barrier_all(&mut self) -> Result<(), ShmemError> {
        self.barrier(ActiveSet::world(self.n))
    }

    /// `shmem_sync_all`.
    pub fn sync_all(&mut self) -> Result<(), ShmemError> {
        self.sync(ActiveSet::world(self.n))
    }

    /// Puts `len` bytes from `local` to `remote` on `pe` (a copy for this PE), posted.
    fn put_to(&mut self, remote: u64, local: u64, len: usize, pe: u16) -> Result<(), ShmemError> {
        // SAFETY: the collectives' sources are the caller's buffers, kept until their quiet.
        unsafe { self.putmem_nbi(remote, local, len, i64::from(pe)) }
    }

    /// `shmem_broadcast`: `nbytes` of the root's `src` (root = its index in the set) into
    /// `dest` of every member; the root's own `dest` too when `with_root`.
    #[allow(clippy::too_many_arguments)]
    pub fn broadcast(
        &mut self,
        dest: u64,
        src: u64,
        nbytes: usize,
        root: i64,
        with_root: bool,
        set: ActiveSet,
    ) -> Result<(), ShmemError> {
        let m = self.members(set)?;
        if root < 0 || root >= i64::from(m.size) {
            return Err(ShmemError::BadArgument("broadcast root outside the set"));
        }
        self.check_symmetric(dest, nbytes as u64)?;
        self.sync_members(&m)?;
        if i64::from(m.mine) == root && nbytes > 0 {
            for i in (0..m.size).filter(|&i| i64::from(i) != root || with_root) {
                self.put_to(dest, src, nbytes, m.pe(i))?;
            }
        }
        self.quiet()?;
        self.sync_members(&m)
    }

    /// `shmem_fcollect`: every member's `nbytes` of `src`, in member order, into `dest`.
    pub fn fcollect(&mut self, dest: u64, src: u64, nbytes: usize, set: ActiveSet) -> Result<(), ShmemError> {
        let m = self.members(set)?;
        self.check_symmetric(dest, (nbytes * usize::from(m.size)) as u64)?;
        self.sync_members(&m)?;
        let at = dest + (nbytes * usize::from(m.mine)) as u64;
        for i in 0..m.size {
            if nbytes > 0 {
                self.put_to(at, src, nbytes, m.pe(i))?;
            }
        }
        self.quiet()?;
        self.sync_members(&m)
    }

    /// `shmem_collect`: like fcollect with each member's own `nbytes`: the sizes are exchanged
    /// first (`Reserved::SIZES`), so each knows where its part goes.
    pub fn collect(&mut self, dest: u64, src: u64, nbytes: usize, set: ActiveSet) -> Result<(), ShmemError> {
        let m = self.members(set)?;
        self.sync_members(&m)?;
        let slot = self.reserved(Reserved::SIZES + 8 * u64::from(m.mine));
        for i in 0..m.size {
            self.atomic_at(VaOp::Set, VaWidth::W64, m.pe(i), slot, nbytes as u64, 0)?;
        }
        self.sync_members(&m)?;
        let size = |pe: &Self, i: u16| {
            // SAFETY: the library's own words in the mapped heap.
            unsafe { core::ptr::read_volatile(pe.reserved(Reserved::SIZES + 8 * u64::from(i)) as *const u64) }
        };
        let before: u64 = (0..m.mine).map(|i| size(self, i)).sum();
        let total: u64 = (0..m.size).map(|i| size(self, i)).sum();
        self.check_symmetric(dest, total)?;
        for i in 0..m.size {
            if nbytes > 0 {
                self.put_to(dest + before, src, nbytes, m.pe(i))?;
            }
        }
        self.quiet()?;
        self.sync_members(&m)
    }

    /// `shmem_alltoall`: block j of `src` (of `nbytes`) to block (my index) of `dest` on
    /// member j.
    pub fn alltoall(&mut self, dest: u64, src: u64, nbytes: usize, set: ActiveSet) -> Result<(), ShmemError> {
        let m = self.members(set)?;
        self.check_symmetric(dest, (nbytes * usize::from(m.size)) as u64)?;
        self.sync_members(&m)?;
        for j in 0..m.size {
            if nbytes > 0 {
                let to = dest + (nbytes * usize::from(m.mine)) as u64;
                self.put_to(to, src + (nbytes * usize::from(j)) as u64, nbytes, m.pe(j))?;
            }
        }
        self.quiet()?;
        self.sync_members(&m)
    }

    /// `shmem_alltoalls`: as alltoall with strides (in elements of `elem` bytes) on both sides:
    /// `nelems` elements per member.
    #[allow(clippy::too_many_arguments)]
    pub fn alltoalls(
        &mut self,
        dest: u64,
        src: u64,
        dst: i64,
        sst: i64,
        nelems: usize,
        elem: usize,
        set: ActiveSet,
    ) -> Result<(), ShmemError> {
        let m = self.members(set)?;
        if dst < 1 || sst < 1 {
            return Err(ShmemError::BadArgument("alltoalls strides must be positive"));
        }
        self.sync_members(&m)?;
        let block = |stride: i64, index: u16| (nelems as u64) * (stride as u64) * (elem as u64) * u64::from(index);
        for j in 0..m.size {
            let (to, from) = (dest + block(dst, m.mine), src + block(sst, j));
            // SAFETY: the caller's source array, read until the quiet inside.
            unsafe { self.strided(Direction::Write, to, from, dst, sst, nelems, elem, i64::from(m.pe(j)))? };
        }
        self.quiet()?;
        self.sync_members(&m)
    }

    /// `unimem_shmem_reduce`: `op` over every member's `src` (`nreduce` elements of `ty`) into
    /// every member's `dest` (which may be `src`). Each member combines all contributions in
    /// member order (the same result everywhere, floating point included), a scratch chunk at
    /// a time, and writes `dest` only after every member has read its `src` for that chunk.
    #[allow(clippy::too_many_arguments)]
    pub fn reduce(
        &mut self,
        op: ReduceOp,
        ty: ReduceType,
        dest: u64,
        src: u64,
        nreduce: usize,
        set: ActiveSet,
    ) -> Result<(), ShmemError> {
        let m = self.members(set)?;
        ty.check(op)?;
        let width = ty.width();
        let bytes = nreduce * width;
        self.check_symmetric(dest, bytes as u64)?;
        self.check_symmetric(src, bytes as u64)?;
        let half = (Reserved::SCRATCH_BYTES / 2) as usize;
        let chunk = half - half % width;
        let acc = self.reserved(Reserved::SCRATCH);
        let part = acc + half as u64;
        let mut done = 0;
        loop {
            let len = (bytes - done).min(chunk);
            self.sync_members(&m)?;
            for i in 0..m.size {
                let into = if i == 0 { acc } else { part };
                if len > 0 {
                    // SAFETY: the library's private scratch, not otherwise used meanwhile.
                    unsafe { self.getmem_nbi(into, src + done as u64, len, i64::from(m.pe(i)))? };
                    self.quiet()?;
                }
                if i > 0 {
                    // SAFETY: two disjoint halves of the private scratch, `len` bytes each.
                    let (a, b) = unsafe {
                        (
                            core::slice::from_raw_parts_mut(acc as *mut u8, len),
                            core::slice::from_raw_parts(part as *const u8, len),
                        )
                    };
                    combine(op, ty, a, b);
                }
            }
            self.sync_members(&m)?;
            if len > 0 {
                // SAFETY: `dest` is symmetric (this PE's memory); the scratch holds `len` bytes.
                unsafe { core::ptr::copy(acc as *const u8, (dest + done as u64) as *mut u8, len) };
            }
            done += len;
            if done >= bytes {
                return Ok(());
            }
        }
    }
}

/// `AND`, `OR`, `XOR`, `MAX`, `MIN`, `SUM`, `PROD` (the ABI's 0..=6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    And,
    Or,
    Xor,
    Max,
    Min,
    Sum,
    Prod,
}

impl ReduceOp {
    pub fn from_raw(raw: i32) -> Result<Self, ShmemError> {
        const ALL: [ReduceOp; 7] =
            [ReduceOp::And, ReduceOp::Or, ReduceOp::Xor, ReduceOp::Max, ReduceOp::Min, ReduceOp::Sum, ReduceOp::Prod];
        usize::try_from(raw)
            .ok()
            .and_then(|i| ALL.get(i).copied())
            .ok_or(ShmemError::BadArgument("reduction op (0..=6)"))
    }
}

/// The element type of a reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceType {
    Signed(usize),
    Unsigned(usize),
    /// `f32` (4) or `f64` (8); 16 (long double) is refused.
    Float(usize),
    /// `float complex` (8) or `double complex` (16).
    Complex(usize),
}

impl ReduceType {
    /// The ABI's `type`: width | class << 8.
    pub fn from_raw(raw: i32) -> Result<Self, ShmemError> {
        let width = (raw & 0xff) as usize;
        let ty = match raw >> 8 {
            0 => ReduceType::Signed(width),
            1 => ReduceType::Unsigned(width),
            2 => ReduceType::Float(width),
            3 => ReduceType::Complex(width),
            _ => return Err(ShmemError::BadArgument("reduction type class (0..=3)")),
        };
        match ty {
            ReduceType::Signed(1 | 2 | 4 | 8) | ReduceType::Unsigned(1 | 2 | 4 | 8) => Ok(ty),
            ReduceType::Float(4 | 8) | ReduceType::Complex(8 | 16) => Ok(ty),
            ReduceType::Float(16) => Err(ShmemError::BadArgument("long double reductions are not supported")),
            _ => Err(ShmemError::BadArgument("reduction type width")),
        }
    }

    pub fn width(self) -> usize {
        match self {
            ReduceType::Signed(w) | ReduceType::Unsigned(w) | ReduceType::Float(w) | ReduceType::Complex(w) => w,
        }
    }

    /// Whether `op` applies: bitwise ops to integers only, MAX/MIN not to complex numbers.
    fn check(self, op: ReduceOp) -> Result<(), ShmemError> {
        let bitwise = matches!(op, ReduceOp::And | ReduceOp::Or | ReduceOp::Xor);
        match self {
            ReduceType::Float(_) if bitwise => Err(ShmemError::BadArgument("bitwise reduction of floating point")),
            ReduceType::Complex(_) if !matches!(op, ReduceOp::Sum | ReduceOp::Prod) => {
                Err(ShmemError::BadArgument("complex reductions are SUM and PROD only"))
            }
            _ => Ok(()),
        }
    }
}

/// `acc[i] = acc[i] op x[i]` for every element (unaligned-safe: elements are read and written
/// as bytes).
fn combine(op: ReduceOp, ty: ReduceType, acc: &mut [u8], x: &[u8]) {
    macro_rules! ints {
        ($t:ty) => {{
            const W: usize = core::mem::size_of::<$t>();
            for (a, b) in acc.chunks_exact_mut(W).zip(x.chunks_exact(W)) {
                let (p, q) = (<$t>::from_le_bytes(a.try_into().unwrap()), <$t>::from_le_bytes(b.try_into().unwrap()));
                let r = match op {
                    ReduceOp::And => p & q,
                    ReduceOp::Or => p | q,
                    ReduceOp::Xor => p ^ q,
                    ReduceOp::Max => p.max(q),
                    ReduceOp::Min => p.min(q),
                    ReduceOp::Sum => p.wrapping_add(q),
                    ReduceOp::Prod => p.wrapping_mul(q),
                };
                a.copy_from_slice(&r.to_le_bytes());
            }
        }};
    }
    macro_rules! floats {
        ($t:ty) => {{
            const W: usize = core::mem::size_of::<$t>();
            for (a, b) in acc.chunks_exact_mut(W).zip(x.chunks_exact(W)) {
                let (p, q) = (<$t>::from_le_bytes(a.try_into().unwrap()), <$t>::from_le_bytes(b.try_into().unwrap()));
                let r = match op {
                    ReduceOp::Max => p.max(q),
                    ReduceOp::Min => p.min(q),
                    ReduceOp::Sum => p + q,
                    _ => p * q,
                };
                a.copy_from_slice(&r.to_le_bytes());
            }
        }};
    }
    macro_rules! complex {
        ($t:ty) => {{
            const W: usize = core::mem::size_of::<$t>();
            for (a, b) in acc.chunks_exact_mut(2 * W).zip(x.chunks_exact(2 * W)) {
                let f = |s: &[u8], k: usize| <$t>::from_le_bytes(s[k * W..(k + 1) * W].try_into().unwrap());
                let (pr, pi, qr, qi) = (f(a, 0), f(a, 1), f(b, 0), f(b, 1));
                let (r, i) = match op {
                    ReduceOp::Sum => (pr + qr, pi + qi),
                    _ => (pr * qr - pi * qi, pr * qi + pi * qr),
                };
                a[..W].copy_from_slice(&r.to_le_bytes());
                a[W..].copy_from_slice(&i.to_le_bytes());
            }
        }};
    }
    match ty {
        ReduceType::Signed(1) => ints!(i8),
        ReduceType::Signed(2) => ints!(i16),
        ReduceType::Signed(4) => ints!(i32),
        ReduceType::Signed(_) => ints!(i64),
        ReduceType::Unsigned(1) => ints!(u8),
        ReduceType::Unsigned(2) => ints!(u16),
        ReduceType::Unsigned(4) => ints!(u32),
        ReduceType::Unsigned(_) => ints!(u64),
        ReduceType::Float(4) => floats!(f32),
        ReduceType::Float(_) => floats!(f64),
        ReduceType::Complex(8) => complex!(f32),
        ReduceType::Complex(_) => complex!(f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_and_ops_of_the_abi_decode_and_combine() {
        assert_eq!(ReduceType::from_raw(8), Ok(ReduceType::Signed(8)));
        assert_eq!(ReduceType::from_raw(0x104), Ok(ReduceType::Unsigned(4)));
        assert_eq!(ReduceType::from_raw(0x208), Ok(ReduceType::Float(8)));
        assert_eq!(ReduceType::from_raw(0x310), Ok(ReduceType::Complex(16)));
        assert!(ReduceType::from_raw(0x210).is_err(), "long double refused");
        assert!(ReduceType::from_raw(3).is_err());
        assert!(ReduceOp::from_raw(7).is_err());
        assert!(ReduceType::Float(4).check(ReduceOp::Xor).is_err());
        assert!(ReduceType::Complex(8).check(ReduceOp::Max).is_err());
        let mut a = (-5i16).to_le_bytes().to_vec();
        combine(ReduceOp::Max, ReduceType::Signed(2), &mut a, &3i16.to_le_bytes());
        assert_eq!(a, 3i16.to_le_bytes());
        combine(ReduceOp::Min, ReduceType::Unsigned(2), &mut a, &0xfff0u16.to_le_bytes());
        assert_eq!(a, 3u16.to_le_bytes());
        let c = |r: f64, i: f64| [r.to_le_bytes(), i.to_le_bytes()].concat();
        let mut z = c(1.0, 2.0);
        combine(ReduceOp::Prod, ReduceType::Complex(16), &mut z, &c(3.0, -1.0));
        assert_eq!(z, c(5.0, 5.0), "(1+2i)(3-i) = 5+5i");
    }
}
