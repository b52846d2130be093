//! `touch`: an EL0 load from the address in the thread argument, which must kill the process.
//!
//! The kernel tests give it the registers only the kernel (and the R5) may reach: the SMMU and
//! the PLDMA's control and fault pages, at their kernel addresses and at their physical ones.
//! Exit status: none expected (the kernel kills the process). 0 if the load returned, which is
//! the failure a kernel test detects.
#![no_std]
#![no_main]

use unimem_user::{Error, log, thread_argument};

unimem_user::entry!(main);

fn main() -> Result<u64, Error> {
    let address = thread_argument()?;
    log!("loading from {:#x}: the kernel must kill this process", address);
    // SAFETY: not safe, on purpose: this load must fault. Were the kernel wrong and let it
    // through, a 32-bit read of these registers has no side effect.
    let value = unsafe { core::ptr::read_volatile(address as usize as *const u32) };
    log!("the load returned {:#x}: EL0 reached {:#x}", value, address);
    Ok(0)
}
