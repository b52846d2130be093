//! The thin AArch64 layer: system registers, barriers and the calls into firmware.

pub mod cpu;
pub mod mmu;
pub mod pm;
pub mod pmu;
pub mod psci;
pub mod semihosting;

use board::layout::{KERNEL_IMAGE_VA_OFFSET, KERNEL_VA_OFFSET};

/// The kernel's virtual address of physical address `pa` (the linear map in TTBR1).
pub const fn phys_to_virt(pa: u64) -> usize {
    (KERNEL_VA_OFFSET + pa) as usize
}

/// The physical address of a kernel virtual address: in the image view (statics, stacks,
/// code) or in the linear map (heap, devices, frames).
pub const fn virt_to_phys(va: usize) -> u64 {
    let va = va as u64;
    if va >= KERNEL_IMAGE_VA_OFFSET { va - KERNEL_IMAGE_VA_OFFSET } else { va.wrapping_sub(KERNEL_VA_OFFSET) }
}
