//! `hello`: a smoke test of the runtime and the system calls.
//!
//! Argument: any value (a process without one reads `EMPTY_THREAD_ARGUMENT`).
//! Logs its node and argument. Exit status: argument + 1 (wrapping).
#![no_std]
#![no_main]

use unimem_user::{Error, board_count, board_id, log, sys};

unimem_user::entry!(main);

fn main() -> Result<u64, Error> {
    let arg = sys::thread_argument_raw();
    log!("hello from node {} of {}, argument {:#x}", board_id()?, board_count()?, arg);
    Ok(arg.wrapping_add(1))
}
