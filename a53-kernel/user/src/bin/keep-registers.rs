//! `keep-registers INDEX`: checks that the registers a process owns beyond the general ones
//! stay its own across every kind of switch: q0 and q8..q15 (all 128 bits), FPCR, FPSR and
//! TPIDR_EL0 (`unimem_user::held`). Several copies run at once on the process cores, each with
//! values of its own (drawn from INDEX and the round), so a value another process left behind
//! is caught.
//!
//! Each of `args::keep_registers::ROUNDS` rounds loads new values, then yields, sleeps 20 µs,
//! makes a call that returns at once, spins at EL0 (the tick interrupts, and preempts a long
//! spin) or makes a forwarded access, and reads the registers back.
//!
//! Exit status: 0 when every round found its values; else the bits of `held::changed` for what
//! differed in some round (1 a q register, 2 FPCR, 4 FPSR, 8 TPIDR_EL0); `0x10` plus those bits
//! when the CPU did not keep the values with nothing in between (the pattern is wrong, not the
//! kernel).
#![no_std]
#![no_main]

use unimem_user::args::keep_registers::ROUNDS;
use unimem_user::held::{Act, Held, hold_across};
use unimem_user::{Error, ensure, log, thread_argument};

unimem_user::entry!(main);

/// Turns of a short spin: a few milliseconds of QEMU, long enough that ticks come in some.
const SPIN: u64 = 500_000;
/// Turns of a long spin, one spin in five: tens of milliseconds, more than a slice (two ticks),
/// so the tick preempts it while the other copies wait.
const LONG_SPIN: u64 = 20 * SPIN;

fn main() -> Result<u64, Error> {
    let index = thread_argument()?;
    let seed = |round: u64| (index + 1) << 32 | round;
    let first = Held::pattern(seed(0));
    let kept = first.changed(&hold_across(&first, Act::Nothing));
    ensure!(kept == 0, 0x10 | kept, "process {}: the CPU did not keep {:#x} of {:x?}", index, kept, first);
    let mut changed = 0;
    for round in 1..=ROUNDS {
        let act = match round % 5 {
            0 => Act::Yield,
            1 => Act::Sleep(20),
            2 => Act::Call,
            3 => Act::Spin(if round % 25 == 3 { LONG_SPIN } else { SPIN }),
            _ => Act::ForwardedLoad,
        };
        let before = Held::pattern(seed(round));
        let after = hold_across(&before, act);
        let now = before.changed(&after);
        if now != 0 && changed == 0 {
            log!("process {} round {} ({:?}): {:#x} changed: {:x?}, not {:x?}", index, round, act, now, after, before);
        }
        changed |= now;
    }
    Ok(changed)
}
