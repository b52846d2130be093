//! `mif-flood`: 300 requests outstanding at once, more replies than the mailbox holds.
//!
//! Argument: the node. Allocates a page there and writes word i = [`MAGIC`] | i for i < 300;
//! then sends 300 `read64` requests (word i each) back to back without reading a reply (the
//! service's mailbox interface 0 may refuse some: they are sent again), waits until its own
//! mailbox is full and [`REFUSED_US`] more, so that the service finds it full and must keep
//! replies and retry (`docs/hw/gsas-packets.md`, "Replies"); then collects the replies and
//! checks that every word came back exactly once, and that no further reply comes within 200 ms.
//! Exit status: 0; 1 = a reply carried an error; 2 = a reply echoed another opcode; 3 = a
//! value that is not one of the words, or one that came twice; 4 = a reply beyond the 300;
//! otherwise an error status (`README.md`).
#![no_std]
#![no_main]

use unimem_user::{
    Error, Opcode, alloc_shared, args, ensure, free_shared, log, offset, sys, thread_argument, with_client, write128,
};

unimem_user::entry!(main);

const REQUESTS: u64 = 300;
const MAGIC: u64 = 0xf100_d000_0000_0000;
const QUIET_US: u64 = 200_000;
/// Time the service has to try (and be refused) once the mailbox is full.
const REFUSED_US: u64 = 50_000;
const FILL_TIMEOUT_US: u64 = 20_000_000;

fn main() -> Result<u64, Error> {
    let node = args::node(thread_argument()?)?;
    let page = alloc_shared(1, node)?;
    for pair in 0..REQUESTS / 2 {
        let i = 2 * pair;
        write128(offset(page, 8 * i), u128::from(MAGIC | (i + 1)) << 64 | u128::from(MAGIC | i))?;
    }
    let status = with_client(|g| {
        let mut pipeline = g.pipeline(node)?;
        for i in 0..REQUESTS {
            pipeline.post(Opcode::Read64, offset(page, 8 * i), 0, 0)?;
        }
        pipeline.wait_until_full(FILL_TIMEOUT_US)?;
        sys::sleep_us(REFUSED_US)?;
        let mut seen = [false; REQUESTS as usize];
        for n in 0..REQUESTS {
            let (opcode, response) = pipeline.collect()?;
            ensure!(response.error.is_none(), 1, "reply {}: {:?}", n, response.error);
            ensure!(opcode == Opcode::Read64.as_u8(), 2, "reply {}: opcode {:#x}", n, opcode);
            let i = response.result ^ MAGIC;
            let fresh = i < REQUESTS && !seen[i as usize];
            ensure!(fresh, 3, "reply {}: value {:#x} is not a word not seen yet", n, response.result);
            seen[i as usize] = true;
        }
        let extra = pipeline.collect_within(QUIET_US);
        ensure!(extra == Err(Error::Timeout), 4, "after {} replies: {:?}", REQUESTS, extra);
        drop(pipeline);
        let stats = g.stats();
        log!(
            "{} replies, each once; {} NACKs from node {}, {} stray packets",
            REQUESTS,
            stats.nacks,
            node,
            stats.stray
        );
        Ok(0)
    })?;
    free_shared(page)?;
    Ok(status)
}
