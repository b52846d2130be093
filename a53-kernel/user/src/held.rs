//! The registers a process owns beyond the general ones, and a check that the kernel keeps
//! them: the FP/SIMD registers with FPCR and FPSR, which compiled C uses freely, and TPIDR_EL0,
//! the thread pointer behind which a C library (picolibc) keeps its thread-local storage.
//!
//! [`hold_across`] loads a [`Held`] into the registers, does an [`Act`] that gives the kernel a
//! chance to switch away (a system call, a forwarded access, a spin that the tick interrupts)
//! and reads them back; nothing between the load and the read is compiled code, so whatever
//! differs was changed by the kernel. The values and their comparison are plain data,
//! host-tested; the load and read are assembly (`arch::held`).

use proto::rand::XorShift64;

/// The registers [`hold_across`] loads and reads back (the layout the assembly uses).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Held {
    /// q0, then q8..q15: a caller-saved register and the callee-saved ones, whose upper halves
    /// no call preserves (AAPCS64), all 128 bits.
    pub q: [u128; 9],
    pub fpcr: u64,
    pub fpsr: u64,
    pub tpidr_el0: u64,
}

/// The FPCR bits an A53 keeps: AHP, DN, FZ and RMode (bits 26..22; it traps no FP exception,
/// and has no FP16 arithmetic, so the trap enables and FZ16 read as zero).
pub const FPCR_KEPT: u64 = 0x1f << 22;
/// The FPSR bits it keeps: QC and the cumulative flags IDC, IXC, UFC, OFC, DZC and IOC.
pub const FPSR_KEPT: u64 = 1 << 27 | 0x9f;

/// What changed, as [`Held::changed`] reports it: one bit per kind of register.
pub mod changed {
    /// A q register.
    pub const Q: u64 = 1;
    pub const FPCR: u64 = 2;
    pub const FPSR: u64 = 4;
    pub const TPIDR_EL0: u64 = 8;
}

impl Held {
    /// Values that are `seed`'s own: every q register drawn from it, FPCR and FPSR bits among
    /// those the CPU keeps, and the seed itself as the thread pointer.
    pub fn pattern(seed: u64) -> Self {
        let mut rng = XorShift64::new(seed);
        let mut next = || rng.next_u64();
        let q = core::array::from_fn(|_| u128::from(next()) << 64 | u128::from(next()));
        Self { q, fpcr: next() & FPCR_KEPT, fpsr: next() & FPSR_KEPT, tpidr_el0: seed }
    }

    /// Which kinds of register differ between `self` and `other` (bits of [`changed`]).
    pub fn changed(&self, other: &Held) -> u64 {
        let differs = |bit, same: bool| if same { 0 } else { bit };
        differs(changed::Q, self.q == other.q)
            | differs(changed::FPCR, self.fpcr == other.fpcr)
            | differs(changed::FPSR, self.fpsr == other.fpsr)
            | differs(changed::TPIDR_EL0, self.tpidr_el0 == other.tpidr_el0)
    }
}

/// What [`hold_across`] does while the registers hold their values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Act {
    /// Nothing: the values are read back at once (they show what the CPU keeps).
    Nothing,
    /// YIELD: another runnable process takes the core.
    Yield,
    /// SLEEP_US for this many microseconds: the process blocks until its deadline.
    Sleep(u64),
    /// TIME_US, a call that returns at once.
    Call,
    /// This many turns of an empty loop at EL0, which the tick interrupts, and preempts if
    /// the slice ends.
    Spin(u64),
    /// A 32-bit load of the process's MIF DEPTH register, which changes nothing: on QEMU a
    /// translation fault that the kernel forwards.
    ForwardedLoad,
}

/// [`Act`] as the assembly takes it.
#[cfg(any(test, feature = "image"))]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RawAct {
    /// The system call to make, or `NO_CALL`.
    pub nr: u64,
    /// Its argument (x0; x1..x5 are 0).
    pub arg: u64,
    /// Turns of the empty loop.
    pub spins: u64,
    /// The address of a 32-bit load, or 0.
    pub load: u64,
}

/// [`RawAct::nr`] when no call is made.
#[cfg(any(test, feature = "image"))]
pub(crate) const NO_CALL: u64 = u64::MAX;

#[cfg(any(test, feature = "image"))]
impl Act {
    /// The act in the assembly's terms.
    pub(crate) fn raw(self) -> RawAct {
        use proto::syscall::nr;
        let none = RawAct { nr: NO_CALL, arg: 0, spins: 0, load: 0 };
        match self {
            Act::Nothing => none,
            Act::Yield => RawAct { nr: nr::YIELD, ..none },
            Act::Sleep(us) => RawAct { nr: nr::SLEEP_US, arg: us, ..none },
            Act::Call => RawAct { nr: nr::TIME_US, ..none },
            Act::Spin(turns) => RawAct { spins: turns, ..none },
            Act::ForwardedLoad => {
                let depth = core::mem::offset_of!(hal::vmbox::regs::MifRegisters, depth) as u64;
                RawAct { load: proto::syscall::layout::MIF_PAGE + depth, ..none }
            }
        }
    }
}

/// Puts `before` in the registers (and leaves TPIDR_EL0 at its value), does `act`, and returns
/// what the registers hold afterwards. q8..q15's lower halves, FPCR and FPSR are the caller's
/// again on return.
#[cfg(all(feature = "image", target_arch = "aarch64", target_os = "none"))]
pub fn hold_across(before: &Held, act: Act) -> Held {
    crate::arch::held::hold_across(before, &act.raw())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_are_each_seeds_own_and_keep_to_the_bits_the_cpu_keeps() {
        let (a, b) = (Held::pattern(1 << 32 | 5), Held::pattern(2 << 32 | 5));
        assert_eq!(a, Held::pattern(1 << 32 | 5), "the same seed, the same values");
        assert_eq!(a.changed(&b), changed::Q | changed::FPCR | changed::FPSR | changed::TPIDR_EL0);
        assert!(a.q.iter().all(|q| b.q.iter().all(|r| q != r)), "no register holds another's value");
        for seed in 0..64 {
            let p = Held::pattern(seed);
            assert_eq!((p.fpcr & !FPCR_KEPT, p.fpsr & !FPSR_KEPT, p.tpidr_el0), (0, 0, seed));
        }
        // Over a few seeds every kept bit is set somewhere, and left clear somewhere.
        let (or, and) = (0..64).map(Held::pattern).fold((0, u64::MAX), |(o, a), p| (o | p.fpcr, a & p.fpcr));
        assert_eq!((or, and), (FPCR_KEPT, 0));
    }

    #[test]
    fn a_change_is_reported_by_the_kind_of_register() {
        let held = Held::pattern(7);
        let mut after = held;
        assert_eq!(held.changed(&after), 0);
        after.q[8] ^= 1 << 127;
        after.tpidr_el0 = 0;
        assert_eq!(held.changed(&after), changed::Q | changed::TPIDR_EL0);
        after = Held { fpsr: held.fpsr ^ 1, fpcr: held.fpcr ^ 1 << 22, ..held };
        assert_eq!(held.changed(&after), changed::FPCR | changed::FPSR);
    }

    #[test]
    fn acts_become_a_call_a_spin_or_a_load_of_the_mif_depth() {
        use proto::syscall::{layout::MIF_PAGE, nr};
        assert_eq!(Act::Nothing.raw(), RawAct { nr: NO_CALL, arg: 0, spins: 0, load: 0 });
        assert_eq!(Act::Sleep(50).raw(), RawAct { nr: nr::SLEEP_US, arg: 50, spins: 0, load: 0 });
        assert_eq!((Act::Yield.raw().nr, Act::Call.raw().nr), (nr::YIELD, nr::TIME_US));
        assert_eq!(Act::Spin(9).raw(), RawAct { nr: NO_CALL, arg: 0, spins: 9, load: 0 });
        assert_eq!(Act::ForwardedLoad.raw().load, MIF_PAGE + 0x14, "DEPTH (docs/hw/vmbox.md)");
    }
}
