//! `short-waits WAIT`: `args::short_waits::COUNT` waits of `args::short_waits::US` µs each, a
//! hundredth of a tick: SLEEP_US (WAIT 0) or WAIT_MIF on the process's empty mailbox interface,
//! which times out (WAIT 1). Each must last at least what it asked for; the test judges the
//! total by the node's clock: a wait that ends at the next tick instead of its deadline makes it
//! a hundred times longer.
//!
//! Exit status: the microseconds all the waits took (at least COUNT x US, above every failure
//! status); 1 = a wait ended before its time; 2 = WAIT_MIF ended otherwise than by timing out.
#![no_std]
#![no_main]

use unimem_user::args::short_waits::{COUNT, US, Wait, unpack};
use unimem_user::{Error, ensure, log, sys, thread_argument};

unimem_user::entry!(main);

fn main() -> Result<u64, Error> {
    let wait = unpack(thread_argument()?).ok_or(Error::NoArgument)?;
    let start = sys::time_us()?;
    for _ in 0..COUNT {
        let asked = sys::time_us()?;
        match wait {
            Wait::Sleep => sys::sleep_us(US)?,
            Wait::Mailbox => match sys::wait_mif(1, US, None) {
                Err(Error::Timeout) => {}
                other => {
                    log!("WAIT_MIF on an empty interface ended with {:?}", other);
                    return Ok(2);
                }
            },
        }
        let waited = sys::time_us()? - asked;
        ensure!(waited >= US, 1, "a wait of {} us ended after {} us", US, waited);
    }
    Ok(sys::time_us()? - start)
}
