//! The PMU's event counter 0 read at EL0: the instructions the kernel set it counting
//! (`a53-kernel/src/arch/pmu.rs`), under QEMU's `-icount` the node's instructions. A process
//! may read it only where the kernel lets EL0 read event counters (PMUSERENR_EL0.ER: the test
//! image's `bench=active-icount`, for `cargo xtask bench active`); elsewhere the read is an
//! undefined instruction and the kernel kills the process.

/// Event counter 0 (32 bits); take differences with wrapping arithmetic.
#[inline(always)]
pub fn instructions() -> u32 {
    let value: u64;
    // SAFETY: reads event counter 0; a kernel that does not allow it kills the process, which
    // is what the caller accepted (module documentation).
    unsafe { core::arch::asm!("isb", "mrs {}, pmevcntr0_el0", out(reg) value, options(nostack, preserves_flags)) };
    value as u32
}
