//! The R5's PMU cycle counter: the firmware's clock (`docs/hw/pldma.md`, "Time on the R5") and
//! the PL probe's stopwatch. QEMU counts it at 1 GHz of virtual time, the board at the RPU clock.

use core::arch::asm;

/// PMCR.E (enable) and PMCNTENSET.C (the cycle counter); the count is not reset.
pub fn enable_cycle_counter() {
    // SAFETY: PMU control writes: only the counters are affected.
    unsafe {
        asm!("mcr p15, 0, {}, c9, c12, 0", in(reg) 1u32, options(nomem, nostack));
        asm!("mcr p15, 0, {}, c9, c12, 1", in(reg) 1u32 << 31, options(nomem, nostack));
    }
}

/// PMCCNTR.
pub fn cycles() -> u32 {
    let c: u32;
    // SAFETY: reading PMCCNTR has no side effect.
    unsafe { asm!("mrc p15, 0, {}, c9, c13, 0", out(reg) c, options(nomem, nostack)) };
    c
}
