//! `alloc-free`: allocation and freeing on every node.
//!
//! Argument: none (ignored). For every node in `0..board_count()`: allocate 1 and 4 pages,
//! check that the addresses name that node, write and read back a value in every page, free
//! both (the results must be 1 and 4 pages), and check that a freed address reads `Unmapped`.
//! Exit status: 0; 1 = an address names another node, is not page-aligned or overlaps the other
//! allocation; 2 = a value read back differs; 3 = a free returned the wrong page count; 4 = a
//! freed address did not read `Unmapped`; otherwise an error status (`README.md`).
#![no_std]
#![no_main]

use unimem_user::{
    Error, ErrorCode, GlobalAddress, PAGE_SIZE, alloc_shared, board_count, ensure, free_shared, log, offset, read64,
    write64,
};

unimem_user::entry!(main);

fn value(node: u16, page: u64) -> u64 {
    0xa110_c000_0000_0000 | u64::from(node) << 16 | page
}

fn main() -> Result<u64, Error> {
    for node in 0..board_count()? {
        let one = alloc_shared(1, node)?;
        let four = alloc_shared(4, node)?;
        for (a, pages) in [(one, 1), (four, 4)] {
            ensure!(a.node() == node && a.is_aligned(PAGE_SIZE), 1, "node {}: allocated {:#x}", node, a.raw());
            let (other, other_pages) = if pages == 1 { (four, 4) } else { (one, 1) };
            let disjoint =
                a.raw() + pages * PAGE_SIZE <= other.raw() || other.raw() + other_pages * PAGE_SIZE <= a.raw();
            ensure!(disjoint, 1, "node {}: {:#x} and {:#x} overlap", node, one.raw(), four.raw());
        }
        // Every page of both allocations gets its own value; all are written before any is read.
        let pages = |base: GlobalAddress, n: u64| (0..n).map(move |p| (offset(base, p * PAGE_SIZE + 8), p));
        for (at, p) in pages(one, 1).chain(pages(four, 4).map(|(at, p)| (at, p + 1))) {
            write64(at, value(node, p))?;
        }
        for (at, p) in pages(one, 1).chain(pages(four, 4).map(|(at, p)| (at, p + 1))) {
            let (got, want) = (read64(at)?, value(node, p));
            ensure!(got == want, 2, "node {}: [{:#x}] = {:#x}, wrote {:#x}", node, at.raw(), got, want);
        }
        let freed = (free_shared(one)?, free_shared(four)?);
        ensure!(freed == (1, 4), 3, "node {}: freeing 1 and 4 pages freed {:?}", node, freed);
        for stale in [one, offset(four, 3 * PAGE_SIZE)] {
            let got = read64(stale);
            let unmapped = got == Err(Error::Service(ErrorCode::Unmapped));
            ensure!(unmapped, 4, "node {}: freed {:#x} read {:?}", node, stale.raw(), got);
        }
        log!("node {}: allocated {:#x} and {:#x}, freed", node, one.raw(), four.raw());
    }
    Ok(0)
}
