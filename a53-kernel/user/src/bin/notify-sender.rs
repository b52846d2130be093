//! `notify-sender`: sends one notification.
//!
//! Argument: `args::notify_sender::pack(node, opcode, payload)` = node in bits [15:0], opcode in
//! [19:16], payload in [63:20] (44 bits). `NoReceiver` and `QueueFull` answers are retried for
//! up to 5 s, so the receiver may register after the sender started.
//! Exit status: 0; 1 = the argument's opcode is 0; otherwise an error status (`README.md`).
#![no_std]
#![no_main]

use unimem_user::args::notify_sender;
use unimem_user::{Error, ErrorCode, log, notify, sys, thread_argument};

unimem_user::entry!(main);

const RETRY_US: u64 = 5_000_000;

fn main() -> Result<u64, Error> {
    let arg = thread_argument()?;
    let Some((node, n)) = notify_sender::unpack(arg) else {
        log!("argument {:#x} has opcode 0", arg);
        return Ok(1);
    };
    let start = sys::time_us()?;
    loop {
        match notify(node, n) {
            Err(Error::Service(ErrorCode::NoReceiver | ErrorCode::QueueFull)) if sys::time_us()? - start < RETRY_US => {
                sys::sleep_us(10_000)?;
            }
            result => {
                result?;
                break;
            }
        }
    }
    log!("sent {:#x} to node {}", n.raw(), node);
    Ok(0)
}
