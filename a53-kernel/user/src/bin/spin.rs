//! `spin`: never ends. What a test kills, and what a run that must time out runs.
//!
//! Argument (the thread argument, else the first argument): 0 or none spins in user mode
//! without ever calling the kernel; 1 sleeps in the kernel (a blocked process), forever.
#![no_std]
#![no_main]

use unimem_user::{Error, arguments, sys, thread_argument};

unimem_user::entry!(main);

fn main() -> Result<u64, Error> {
    let mode = match thread_argument() {
        Ok(mode) => mode,
        Err(Error::NoArgument) => arguments()?.number(0).unwrap_or(0),
        Err(e) => return Err(e),
    };
    if mode == 1 {
        loop {
            sys::sleep_us(u64::MAX)?;
        }
    }
    loop {
        core::hint::spin_loop();
    }
}
