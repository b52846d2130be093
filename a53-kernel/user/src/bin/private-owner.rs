//! `private-owner`: owns a Private page for `intruder` and `forge-pid` to attack.
//!
//! Argument: the node. Allocates one Private page there and writes [`OWNER_VALUE`] into word 0.
//! Exit status: the page's GSAS address (>= 0x1000); 1 = the value did not read back; otherwise
//! an error status (< 0x1000, `README.md`). The page outlives the process only if the kernel
//! does not reclaim a domain's pages at exit.
#![no_std]
#![no_main]

use unimem_user::{Error, Sharing, alloc_shared_with, args, ensure, log, read64, thread_argument, write64};

unimem_user::entry!(main);

const OWNER_VALUE: u64 = 0x0bad_cafe_5ec2_e700;

fn main() -> Result<u64, Error> {
    let node = args::node(thread_argument()?)?;
    let page = alloc_shared_with(1, node, Sharing::Private)?;
    write64(page, OWNER_VALUE)?;
    let got = read64(page)?;
    ensure!(got == OWNER_VALUE, 1, "the owner read {:#x} from its own page", got);
    log!("private page {:#x} on node {} holds {:#x}", page.raw(), node, OWNER_VALUE);
    Ok(page.raw())
}
