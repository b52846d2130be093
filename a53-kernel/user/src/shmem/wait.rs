//! Point-to-point synchronisation: wait until / test local symmetric variables against a
//! comparison, for one element, all, any or some of an array. A wait polls local memory a few
//! times, then sleeps with a growing pause (1 µs doubling up to 1 ms, SLEEP_US), so an idle
//! wait costs little CPU; after [`super::LIVENESS_PERIOD_US`] it checks, every as long, that
//! the PEs it depends on are alive, and ends with [`ShmemError::PeGone`] naming one that has
//! ended (after one last look at the memory) instead of hanging.

use super::{Pe, ShmemError, Transport};

/// Polls before the first sleep.
const SPINS: u32 = 64;
/// The longest pause between two looks.
const MAX_PAUSE_US: u64 = 1_000;

/// `SHMEM_CMP_*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    Eq = 1,
    Ne = 2,
    Gt = 3,
    Ge = 4,
    Lt = 5,
    Le = 6,
}

impl Cmp {
    pub fn from_raw(raw: i32) -> Result<Cmp, ShmemError> {
        Ok(match raw {
            1 => Cmp::Eq,
            2 => Cmp::Ne,
            3 => Cmp::Gt,
            4 => Cmp::Ge,
            5 => Cmp::Lt,
            6 => Cmp::Le,
            _ => return Err(ShmemError::BadArgument("comparison (SHMEM_CMP_EQ..SHMEM_CMP_LE)")),
        })
    }

    /// Whether `a cmp b` for values of `kind` (sign- or zero-extended to 64 bits).
    fn holds(self, kind: Kind, a: u64, b: u64) -> bool {
        let order = if kind.signed { (a as i64).cmp(&(b as i64)) } else { a.cmp(&b) };
        use core::cmp::Ordering::*;
        match self {
            Cmp::Eq => order == Equal,
            Cmp::Ne => order != Equal,
            Cmp::Gt => order == Greater,
            Cmp::Ge => order != Less,
            Cmp::Lt => order == Less,
            Cmp::Le => order != Greater,
        }
    }
}

/// The type of the variables: width in bytes (1, 2, 4, 8), signed or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kind {
    pub width: usize,
    pub signed: bool,
}

impl Kind {
    /// The ABI's `kind`: width | 0x10 when signed.
    pub fn from_raw(raw: i32) -> Result<Kind, ShmemError> {
        let width = (raw & 0xf) as usize;
        if raw & !0x1f != 0 || !matches!(width, 1 | 2 | 4 | 8) {
            return Err(ShmemError::BadArgument("wait kind (width 1, 2, 4 or 8, | 0x10 when signed)"));
        }
        Ok(Kind { width, signed: raw & 0x10 != 0 })
    }

    /// `value` cut to the width and extended back to 64 bits.
    fn extend(self, value: u64) -> u64 {
        let shift = 64 - 8 * self.width as u32;
        if self.signed { (((value << shift) as i64) >> shift) as u64 } else { (value << shift) >> shift }
    }

    /// The element at `address` (volatile: another PE's writes change it).
    ///
    /// # Safety
    ///
    /// `address` is a live, aligned element of this process.
    unsafe fn read(self, address: u64) -> u64 {
        // SAFETY: the caller's.
        let raw = unsafe {
            match self.width {
                1 => u64::from(core::ptr::read_volatile(address as *const u8)),
                2 => u64::from(core::ptr::read_volatile(address as *const u16)),
                4 => u64::from(core::ptr::read_volatile(address as *const u32)),
                _ => core::ptr::read_volatile(address as *const u64),
            }
        };
        self.extend(raw)
    }
}

/// `ALL`, `ANY`, `SOME`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    All,
    Any,
    Some,
}

impl Mode {
    pub fn from_raw(raw: i32) -> Result<Mode, ShmemError> {
        match raw {
            0 => Ok(Mode::All),
            1 => Ok(Mode::Any),
            2 => Ok(Mode::Some),
            _ => Err(ShmemError::BadArgument("wait mode (0 ALL, 1 ANY, 2 SOME)")),
        }
    }
}

/// One wait or test: the variables and what they are compared with.
pub struct Wait<'a> {
    pub kind: Kind,
    pub mode: Mode,
    /// The first variable; `n` of them, `kind.width` apart.
    pub ivars: u64,
    pub n: usize,
    /// Non-zero: skip that element.
    pub status: Option<&'a [i32]>,
    pub cmp: Cmp,
    /// `n` values of `kind` to compare each element with; `None`: every one with `value`.
    pub values: Option<u64>,
    pub value: u64,
}

impl Wait<'_> {
    fn skipped(&self, i: usize) -> bool {
        self.status.is_some_and(|s| s[i] != 0)
    }

    /// One look. ALL: 1 if all are met, else 0; ANY: the first index met, else `usize::MAX`;
    /// SOME: the count met (their indices into `indices`).
    ///
    /// # Safety
    ///
    /// `ivars` (and `values`) are `n` live, aligned elements of this process.
    unsafe fn look(&self, mut indices: Option<&mut [usize]>) -> (bool, usize) {
        let mut found = 0;
        let mut all = true;
        for i in (0..self.n).filter(|&i| !self.skipped(i)) {
            let at = self.ivars + (i * self.kind.width) as u64;
            // SAFETY: the caller's.
            let element = unsafe { self.kind.read(at) };
            let against = match self.values {
                // SAFETY: the caller's.
                Some(v) => unsafe { self.kind.read(v + (i * self.kind.width) as u64) },
                None => self.kind.extend(self.value),
            };
            if self.cmp.holds(self.kind, element, against) {
                match self.mode {
                    Mode::Any => return (true, i),
                    Mode::Some => {
                        if let Some(out) = indices.as_deref_mut() {
                            out[found] = i;
                        }
                        found += 1;
                    }
                    Mode::All => {}
                }
            } else {
                all = false;
            }
        }
        match self.mode {
            Mode::All => (all, usize::from(all)),
            Mode::Any => (false, usize::MAX),
            Mode::Some => (found > 0, found),
        }
    }

    /// Whether every element is skipped (or there are none): ANY and SOME then return at once.
    fn nothing_to_wait_for(&self) -> bool {
        (0..self.n).all(|i| self.skipped(i))
    }
}

impl<T: Transport> Pe<T> {
    /// `unimem_shmem_wait`: tests once (`block` false) or waits until the condition holds.
    /// Returns as `include/unimem_shmem.h` says (ALL: 1 / whether; ANY: index or `usize::MAX`; SOME: count).
    pub fn wait(&mut self, w: &Wait<'_>, block: bool, mut indices: Option<&mut [usize]>) -> Result<usize, ShmemError> {
        if w.n > 0 {
            let bytes = (w.n * w.kind.width) as u64;
            if !w.ivars.is_multiple_of(w.kind.width as u64) {
                return Err(ShmemError::BadArgument("wait variables not aligned to their width"));
            }
            self.check_symmetric(w.ivars, bytes)?;
            if w.status.is_some_and(|s| s.len() < w.n) || indices.as_deref().is_some_and(|s| s.len() < w.n) {
                return Err(ShmemError::BadArgument("status or indices shorter than the variables"));
            }
        }
        if w.mode == Mode::Some && indices.is_none() {
            return Err(ShmemError::BadArgument("wait SOME without indices"));
        }
        if w.nothing_to_wait_for() && w.mode != Mode::All {
            return Ok(if w.mode == Mode::Any { usize::MAX } else { 0 });
        }
        let all_others: heapless::Vec<u16, { super::MAX_PES }> = (0..self.n).filter(|&p| p != self.me).collect();
        // SAFETY: checked above: symmetric, aligned, so live memory of this process.
        let look = |indices: Option<&mut [usize]>| unsafe { w.look(indices) };
        if !block {
            return Ok(look(indices).1);
        }
        self.until(&all_others, || {
            let (met, result) = look(indices.as_deref_mut());
            met.then_some(result)
        })
    }

    /// Polls `check` with the backoff until it gives a value; checks the liveness of
    /// `depends_on` while that takes long. `PeGone` names a dead PE if `check` still fails
    /// after it was found dead.
    pub(crate) fn until<R>(
        &mut self,
        depends_on: &[u16],
        mut check: impl FnMut() -> Option<R>,
    ) -> Result<R, ShmemError> {
        let mut polls = 0u32;
        let mut pause = 1;
        let mut next_liveness: Option<u64> = None;
        loop {
            if let Some(r) = check() {
                core::sync::atomic::fence(core::sync::atomic::Ordering::Acquire);
                return Ok(r);
            }
            if polls < SPINS {
                polls += 1;
                core::hint::spin_loop();
                continue;
            }
            self.t.sleep_us(pause);
            pause = (pause * 2).min(MAX_PAUSE_US);
            let now = self.t.now_us();
            let due = *next_liveness.get_or_insert(now + self.liveness_period_us);
            if now < due {
                continue;
            }
            next_liveness = Some(now + self.liveness_period_us);
            for &pe in depends_on {
                if !self.alive(pe)? {
                    return check().ok_or(ShmemError::PeGone(pe));
                }
            }
        }
    }
}
