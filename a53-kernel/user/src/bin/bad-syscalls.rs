//! `bad-syscalls`: every system call with arguments the kernel must refuse.
//!
//! No argument. Each call below must come back with its error return (`docs/hw/syscalls.md`)
//! and the process must carry on: afterwards it logs a line and exits normally.
//! Exit status: 0; otherwise the number (1-based) of the first call answered wrongly.
#![no_std]
#![no_main]

use proto::syscall::{Error as E, LOG_MAX, nr};
use unimem_user::{Error, log, sys};

unimem_user::entry!(main);

/// An address no process has mapped (below the image), one in the kernel's half, and the
/// last page before the stack guard's end.
const UNMAPPED: u64 = 0x1000;
const KERNEL: u64 = 0xffff_ff80_0000_0000;
const STACK_TOP: u64 = proto::syscall::layout::STACK_TOP;

fn main() -> Result<u64, Error> {
    let line = b"sixteen bytes ok";
    let calls: [(u64, [u64; 6], E); 19] = [
        (99, [0; 6], E::NoSuchCall),
        (u64::MAX, [0; 6], E::NoSuchCall),
        (nr::LOG, [UNMAPPED, 8, 0, 0, 0, 0], E::BadPointer),
        (nr::LOG, [KERNEL, 8, 0, 0, 0, 0], E::BadPointer),
        // Starts in the stack, runs past its top.
        (nr::LOG, [STACK_TOP - 4, 8, 0, 0, 0, 0], E::BadPointer),
        (nr::LOG, [line.as_ptr() as u64, LOG_MAX + 1, 0, 0, 0, 0], E::BadArgument),
        (nr::LOG, [u64::MAX - 3, 8, 0, 0, 0, 0], E::BadPointer),
        (nr::WAIT_MIF, [0, 1000, 0, 0, 0, 0], E::BadArgument),
        (nr::WAIT_MIF, [1 << 40, 1000, 0, 0, 0, 0], E::BadArgument),
        // Opcodes 0..=7 are the kernel's channels; 16 and up do not exist.
        (nr::MAILBOX_REGISTER, [3, 0, 0, 0, 0, 0], E::BadArgument),
        (nr::MAILBOX_REGISTER, [200, 0, 0, 0, 0, 0], E::BadArgument),
        (nr::MAILBOX_UNREGISTER, [9, 0, 0, 0, 0, 0], E::NotRegistered),
        (nr::MAILBOX_RECEIVE, [9, 2, 0, 0, 0, 0], E::BadArgument),
        (nr::MAILBOX_RECEIVE, [9, 1, 0, 0, 0, 0], E::NotRegistered),
        // A mode past event, a signal number past 63, a signal number outside signal mode.
        (nr::MAILBOX_REGISTER, [9, 3, 0, 0, 0, 0], E::BadArgument),
        (nr::MAILBOX_REGISTER, [9, 1, 64, 0, 0, 0], E::BadArgument),
        (nr::MAILBOX_REGISTER, [9, 2, 5, 0, 0, 0], E::BadArgument),
        (nr::MAILBOX_EVENT, [2, 0, 0, 0, 0, 0], E::BadArgument),
        (nr::MAILBOX_EVENT, [1, 0, 0, 0, 0, 0], E::NotRegistered),
    ];
    for (i, (number, args, expected)) in calls.iter().enumerate() {
        let got = sys::raw(*number, *args)[0] as i64;
        if got != *expected as i64 {
            log!("call {} (number {:#x}): returned {}, expected {:?}", i + 1, number, got, expected);
            return Ok(i as u64 + 1);
        }
    }
    log!("{} bad calls refused, the process lives on", calls.len());
    Ok(0)
}
