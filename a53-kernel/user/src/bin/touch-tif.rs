//! `touch-tif`: an EL0 load from a kernel address must kill the process.
//!
//! Argument: none (ignored). Loads from 0xffff_ff80_8014_0000, the kernel's linear map of the
//! packetizer's trusted interface page (PID table, BASE_DEST, PID_CONF).
//! Exit status: none expected (the kernel kills the process). 0 if the load returned, which is
//! the failure a kernel test detects.
#![no_std]
#![no_main]

use unimem_user::log;

unimem_user::entry!(main);

const TIF_KERNEL_VA: usize = 0xffff_ff80_8014_0000;

fn main() -> u64 {
    log!("loading from the TIF at {:#x}: the kernel must kill this process", TIF_KERNEL_VA);
    // SAFETY: not safe, on purpose: the address is the kernel's and this load must fault. If
    // the kernel were wrong and let it through, the read has no side effect on the TIF.
    let value = unsafe { core::ptr::read_volatile(TIF_KERNEL_VA as *const u64) };
    log!("the load returned {:#x}: EL0 can read the TIF", value);
    0
}
