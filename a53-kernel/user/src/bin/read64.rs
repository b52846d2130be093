//! `read64`: reads one word.
//!
//! Argument: the GSAS address (8-aligned).
//! Exit status: the value read; on failure an error status (`README.md`), which the caller tells
//! apart only by knowing what value to expect (the error is logged).
#![no_std]
#![no_main]

use unimem_user::{Error, GlobalAddress, log, read64, thread_argument};

unimem_user::entry!(main);

fn main() -> Result<u64, Error> {
    let address = GlobalAddress::from_raw(thread_argument()?);
    let value = read64(address)?;
    log!("[{:#x}] = {:#x}", address.raw(), value);
    Ok(value)
}
