//! The performance monitors (PMUv3) of this core: event counter 0 counting instructions.
//!
//! QEMU implements the instructions-retired event only under `-icount` (its count is then the
//! emulator's instruction count, shared by every vCPU of the node); without it the counter
//! stays at zero, which [`count_instructions`] reports.
//!
//! EL0 may not touch the PMU, unless a benchmark lets it read the event counters
//! ([`allow_el0_reads`]: the test image's `bench=active-icount`, where a process counts its own
//! handler's instructions). The kernel proper never does.

use core::arch::asm;

/// PMUv3 common event: instruction architecturally executed.
const INST_RETIRED: u64 = 0x08;
/// PMCR_EL0.E: counters enabled; .P: event counters reset.
const PMCR_E: u64 = 1 << 0;
const PMCR_P: u64 = 1 << 1;
/// Event counter 0 (PMCNTENSET_EL0 bit 0).
const COUNTER0: u64 = 1 << 0;

/// Starts event counter 0 of this core counting instructions at EL0 and EL1; returns whether
/// it counts.
pub fn count_instructions() -> bool {
    // SAFETY: PMU system registers only; counter 0 is the kernel's (EL0 access stays off unless
    // a benchmark allows reads) and nothing else in the kernel uses the PMU.
    unsafe {
        asm!("msr pmselr_el0, xzr", "isb", options(nostack, preserves_flags));
        // Filter bits [31:24] zero: EL0 and EL1 counted, EL2 not.
        asm!("msr pmxevtyper_el0, {}", in(reg) INST_RETIRED, options(nostack, preserves_flags));
        asm!("msr pmcntenset_el0, {}", in(reg) COUNTER0, options(nostack, preserves_flags));
        let pmcr: u64;
        asm!("mrs {}, pmcr_el0", out(reg) pmcr, options(nostack, preserves_flags));
        asm!("msr pmcr_el0, {}", "isb", in(reg) pmcr | PMCR_E | PMCR_P, options(nostack, preserves_flags));
    }
    let before = instructions();
    for i in 0..64u32 {
        core::hint::black_box(i);
    }
    instructions() != before
}

/// PMUSERENR_EL0.ER: EL0 may read the event counters (and PMSELR_EL0), nothing else.
const USERENR_ER: u64 = 1 << 3;

/// Lets EL0 on this core read the event counters (`allow`), or nothing of the PMU again. Only
/// for benchmarks: a process that reads the counters learns the node's instruction count.
pub fn allow_el0_reads(allow: bool) {
    let value = if allow { USERENR_ER } else { 0 };
    // SAFETY: a PMU access-control register; it grants EL0 reads of counters only.
    unsafe { asm!("msr pmuserenr_el0, {}", "isb", in(reg) value, options(nostack, preserves_flags)) };
}

/// Event counter 0 (32 bits); take differences with wrapping arithmetic.
#[inline(always)]
pub fn instructions() -> u32 {
    let value: u64;
    // SAFETY: reads this core's event counter 0.
    unsafe { asm!("isb", "mrs {}, pmevcntr0_el0", out(reg) value, options(nostack, preserves_flags)) };
    value as u32
}
