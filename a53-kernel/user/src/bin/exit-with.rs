//! `exit-with STATUS`: exits with the status its first argument names (decimal or `0x` hex),
//! for checking that a failing program is reported. Without a usable argument it fails with
//! `NoArgument`'s status.
#![no_std]
#![no_main]

use unimem_user::{Error, arguments, log};

unimem_user::entry!(main);

fn main() -> Result<u64, Error> {
    let status = arguments()?.number(0)?;
    log!("exiting with status {}", status);
    Ok(status)
}
