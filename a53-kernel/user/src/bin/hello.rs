//! `hello`: a smoke test of the runtime and the system calls.
//!
//! Logs its node, its thread argument if it has one, and its arguments. Exit status: the
//! thread argument + 1 (wrapping) when it has one, otherwise 0.
#![no_std]
#![no_main]

use unimem_user::{Error, arguments, board_count, board_id, log, sys};

unimem_user::entry!(main);

fn main() -> Result<u64, Error> {
    let (node, nodes) = (board_id()?, board_count()?);
    let args = arguments()?;
    match sys::thread_argument() {
        Ok(arg) => {
            log!("hello from node {} of {}, argument {:#x}", node, nodes, arg);
            Ok(arg.wrapping_add(1))
        }
        Err(Error::NoArgument) if args.count() > 0 => {
            log!("hello from node {} of {}, arguments:", node, nodes);
            for (i, a) in args.iter().enumerate() {
                log!("  {}: {}", i, a);
            }
            Ok(0)
        }
        Err(Error::NoArgument) => {
            log!("hello from node {} of {}", node, nodes);
            Ok(0)
        }
        Err(e) => Err(e),
    }
}
