//! The R5's PMU cycle counter: the firmware's clock (`docs/hw/pldma.md`, "Time on the R5") and
//! the PL probe's stopwatch. QEMU counts it at 1 GHz of virtual time, the board at the RPU clock.

use aarch32_cpu::register::{Pmccntr, Pmcntenset, Pmcr};

/// PMCR.E (counters enabled) and PMCNTENSET.C (the cycle counter); the count is not reset.
pub fn enable_cycle_counter() {
    // SAFETY: PMU control registers: only timing is affected. PMCR is written whole with E set
    // (the other fields reset), and PMCNTENSET is write-one-to-set.
    unsafe {
        Pmcr::write(Pmcr(1));
        Pmcntenset::write(Pmcntenset(1 << 31));
    }
}

/// PMCCNTR.
pub fn cycles() -> u32 {
    Pmccntr::read().0
}
