//! `fad-worker`: 1000 x `fad64(counter, 1)`.
//!
//! Argument: the counter's GSAS address (8-aligned; in a Shared page on any node).
//! Exit status: 0; 1 = an old value was not above the previous one this worker saw (the counter
//! went backwards or an increment was lost); otherwise an error status (`README.md`).
#![no_std]
#![no_main]

use unimem_user::{Error, GlobalAddress, ensure, fad64, log, thread_argument};

unimem_user::entry!(main);

const ITERATIONS: u32 = 1000;

fn main() -> Result<u64, Error> {
    let counter = GlobalAddress::from_raw(thread_argument()?);
    let mut last: Option<u64> = None;
    for i in 0..ITERATIONS {
        let old = fad64(counter, 1)?;
        ensure!(last.is_none_or(|l| old > l), 1, "fad #{}: old value {} after {:?}", i, old, last);
        last = Some(old);
    }
    log!("{} increments of {:#x}, last old value {:?}", ITERATIONS, counter.raw(), last);
    Ok(0)
}
