//! `spin`: never ends. What a test kills.
//!
//! Argument: 0 spins in user mode without ever calling the kernel; 1 sleeps in the kernel (a
//! blocked process), forever.
#![no_std]
#![no_main]

use unimem_user::{Error, sys, thread_argument};

unimem_user::entry!(main);

fn main() -> Result<u64, Error> {
    if thread_argument()? == 1 {
        loop {
            sys::sleep_us(u64::MAX)?;
        }
    }
    loop {
        core::hint::spin_loop();
    }
}
