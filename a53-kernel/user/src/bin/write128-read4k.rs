//! `write128-read4k`: a page written in 16-byte atomic steps and read back whole.
//!
//! Argument: the node. Allocates a page there, `write128`s a distinct pattern into each of its
//! 256 chunks, `read4k`s it and compares, spot-checks words with `read64`, checks that a
//! write128 crossing the page end is refused before sending, and frees the page.
//! Exit status: 0; 1 = the page read back differs; 2 = a read64 spot check differs; 3 = the
//! write128 at offset 0xff8 was not refused as `Unaligned`; 4 = the free did not free 1 page;
//! otherwise an error status (`README.md`).
#![no_std]
#![no_main]

use unimem_user::{
    Error, ErrorCode, PAGE_SIZE, alloc_shared, args, ensure, free_shared, log, offset, read4k, read64, thread_argument,
    write128,
};

unimem_user::entry!(main);

const CHUNKS: u64 = PAGE_SIZE / 16;

/// Chunk `i`'s value: both halves differ from each other and from every other chunk's.
fn pattern(i: u64) -> u128 {
    let lo = 0x0123_4567_89ab_0000 | i << 1;
    u128::from(!lo) << 64 | u128::from(lo)
}

fn main() -> Result<u64, Error> {
    let node = args::node(thread_argument()?)?;
    let page = alloc_shared(1, node)?;
    for i in 0..CHUNKS {
        write128(offset(page, 16 * i), pattern(i))?;
    }
    let mut buf = [0u8; PAGE_SIZE as usize];
    read4k(page, &mut buf)?;
    for (i, chunk) in buf.chunks_exact(16).enumerate() {
        let got = u128::from_le_bytes(chunk.try_into().unwrap_or_default());
        ensure!(got == pattern(i as u64), 1, "chunk {}: read {:#x}, wrote {:#x}", i, got, pattern(i as u64));
    }
    for at in [0, 8, 0x7f0, 0x7f8, 0xff0, 0xff8] {
        let want = (pattern(at / 16) >> (8 * (at % 16))) as u64;
        let got = read64(offset(page, at))?;
        ensure!(got == want, 2, "read64 at +{:#x}: {:#x}, want {:#x}", at, got, want);
    }
    let across = write128(offset(page, 0xff8), 0);
    ensure!(across == Err(Error::Local(ErrorCode::Unaligned)), 3, "write128 across the page end: {:?}", across);
    let freed = free_shared(page)?;
    ensure!(freed == 1, 4, "free of {:#x} freed {} pages", page.raw(), freed);
    log!("page {:#x} on node {}: 256 write128, read4k and spot checks agree", page.raw(), node);
    Ok(0)
}
