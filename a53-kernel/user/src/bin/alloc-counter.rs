//! `alloc-counter`: allocates one Shared page (zeroed) for counters.
//!
//! Argument: the node to allocate on.
//! Exit status: the page's GSAS address (always >= 0x1000: page index 0 is never allocated), or
//! an error status (< 0x1000, `README.md`).
#![no_std]
#![no_main]

use unimem_user::{Error, alloc_shared, args, log, thread_argument};

unimem_user::entry!(main);

fn main() -> Result<u64, Error> {
    let node = args::node(thread_argument()?)?;
    let page = alloc_shared(1, node)?;
    log!("counter page {:#x} on node {}", page.raw(), node);
    Ok(page.raw())
}
