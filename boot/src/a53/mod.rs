//! A53 entry: `_start` (boot core, from the loader or ATF) and `_secondary_entry` (PSCI
//! CPU_ON), both at EL2 or EL1 with the MMU off.
//!
//! The sequence, in assembly because nothing may touch memory through Rust before the MMU is
//! on (with the MMU off all memory is Device, and unaligned accesses fault):
//!
//! 1. at EL2: configure EL1 as AArch64 with the timer and FP usable, and drop to EL1;
//! 2. build the boot translation table (boot core only): 1 GiB blocks, DDR low as normal
//!    memory and 0xc000_0000..0x1_0000_0000 as device. With a 39-bit VA the level-1 index of
//!    `KERNEL_VA_OFFSET + pa` equals that of `pa`, so one table serves TTBR0 (the identity map
//!    the next instruction runs from) and TTBR1 (the kernel's linear map); its last two
//!    entries map the image view (`KERNEL_IMAGE_VA_OFFSET + pa`, see `board::layout`);
//! 3. MMU on, jump to the linked (upper-half) address, set this core's stack, vectors and
//!    TPIDR_EL1 = core index, zero .bss on the boot core, and call the kernel's
//!    `kernel_main(core, entry_el)` (boot core) or `kernel_secondary_main(core, entry_el)`.
//!
//! The kernel then replaces the boot table with the fine-grained map built from the board.

mod entry;
mod vectors;

pub use entry::{BOOT_TCR_EL1, MAIR_EL1, mair};
pub use vectors::{ExceptionFrame, ExceptionKind, ExceptionSource, ExceptionType, resume_frame, run_on_stack};

unsafe extern "C" {
    /// PSCI CPU_ON entry for secondary cores. Its physical address is
    /// `secondary_entry as usize - KERNEL_VA_OFFSET`; x0 carries the core index.
    pub fn _secondary_entry();
}
