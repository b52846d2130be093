//! `intruder`: another domain's Private page must refuse everything.
//!
//! Argument: the page's GSAS address (from `private-owner`). `read64`, `write64`, `cas64` and
//! `free_shared` must each fail with `PermissionDenied`.
//! Exit status: 0; 1 = read64, 2 = write64, 3 = cas64, 4 = free_shared did not fail with
//! `PermissionDenied` (what it did is logged); otherwise an error status (`README.md`).
#![no_std]
#![no_main]

use unimem_user::{Error, ErrorCode, GlobalAddress, cas64, ensure, free_shared, log, read64, thread_argument, write64};

unimem_user::entry!(main);

fn main() -> Result<u64, Error> {
    let page = GlobalAddress::from_raw(thread_argument()?);
    let denied = |r: Result<(), Error>| r == Err(Error::Service(ErrorCode::PermissionDenied));
    let attempts = [
        ("read64", read64(page).map(drop)),
        ("write64", write64(page, 0x1badd00d)),
        ("cas64", cas64(page, 0, 0x1badd00d).map(drop)),
        ("free_shared", free_shared(page).map(drop)),
    ];
    for (status, (name, result)) in (1..).zip(attempts) {
        ensure!(denied(result), status, "{} of {:#x}: {:?}, not PermissionDenied", name, page.raw(), result);
    }
    log!("read64, write64, cas64 and free_shared of {:#x}: all PermissionDenied", page.raw());
    Ok(0)
}
