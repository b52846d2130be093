//! `rdma-bench`: the transfers of `cargo xtask bench rdma` (`a53-kernel/ktest/src/bench.rs`).
//! The thread argument is `args::rdma_bench::pack(role)`:
//!
//! - `Writes { node, count, log2 }`: with `node` another node, spawns a `Peer` there (a remote
//!   spawn keeps this PD; the peer's buffer has the same address, as the program is the same)
//!   and waits for it; then `count` writes of 2^`log2` bytes from its buffer to `node`, one at a
//!   time, each waited for (to this node: from the first half of its buffer to the second).
//!   Checks the last one byte for byte where it can (this node) and logs
//!   `bench rdma_write_<bytes>b_best_us: <us> us`, the fastest write, `..._total_us`, all of
//!   them, and `bench rdma_write_<bytes>b_to_node<node>_median_us: <us> us`, the median of the
//!   first `MEDIAN_OF` (`cargo xtask bench ranks`). Releases the peer.
//! - `Peer { node }`: tells `node` it is there (opcode 10), waits for the release (opcode 11),
//!   and checks that the bytes written into it are the writer's pattern.
//!
//! Exit status: 0; 1 = wrong bytes; otherwise an error status (`README.md`).
#![no_std]
#![no_main]

use core::cell::UnsafeCell;
use unimem_user::args::rdma_bench::{Role, pack, unpack};
use unimem_user::{Error, board_id, ensure, log, register, remote_spawn, sys, thread_argument};

use unimem_user::channel::{op, send, take};

unimem_user::entry!(main);

const HALF: usize = 16 << 20;

/// Source (first half) and, for a write to this node, destination (second half); a peer's
/// writer fills the first half here. In `.bss`: resident, as every page of a process.
struct Buffer(UnsafeCell<[u8; 2 * HALF]>);
// SAFETY: a process has one thread.
unsafe impl Sync for Buffer {}
static BUFFER: Buffer = Buffer(UnsafeCell::new([0; 2 * HALF]));

fn buffer() -> &'static mut [u8; 2 * HALF] {
    // SAFETY: one thread; each role takes the buffer once.
    unsafe { &mut *BUFFER.0.get() }
}

const OP_READY: u8 = 10;
const OP_RELEASE: u8 = 11;
/// How long one write may take before the program gives up (the R5 ends it long before).
const TRANSFER_US: u64 = 120_000_000;
/// The writes whose median is logged: the first this many.
const MEDIAN_OF: usize = 256;

fn pattern(i: usize) -> u8 {
    (i.wrapping_mul(131) ^ (i >> 11)) as u8
}

fn main() -> Result<u64, Error> {
    match unpack(thread_argument()?).ok_or(Error::NoArgument)? {
        Role::Writes { node, count, log2 } => writes(node, count, 1 << log2),
        Role::Peer { node } => peer(node),
    }
}

fn writes(node: u16, count: u16, len: usize) -> Result<u64, Error> {
    let me = board_id()?;
    let rdma = unimem_user::rdma::open()?;
    let (source, destination) = buffer().split_at_mut(HALF);
    for (i, b) in source[..len].iter_mut().enumerate() {
        *b = pattern(i);
    }
    if node != me {
        register(op(OP_READY))?;
        remote_spawn(env!("CARGO_BIN_NAME"), pack(Role::Peer { node: me }), node)?;
        take(OP_READY)?;
    }
    // The peer's buffer is at the same address as ours; here, the second half.
    let remote = if node == me { destination.as_ptr() as u64 } else { source.as_ptr() as u64 };
    let mut best = u64::MAX;
    let mut total = 0;
    let mut samples = [0u64; MEDIAN_OF];
    for i in 0..usize::from(count) {
        let t0 = sys::time_us()?;
        rdma.write(&source[..len], node, remote)?.wait(TRANSFER_US)?;
        let took = sys::time_us()? - t0;
        best = best.min(took);
        total += took;
        if let Some(sample) = samples.get_mut(i) {
            *sample = took;
        }
    }
    if node == me {
        ensure!(destination[..len] == source[..len], 1, "the write of {} B landed wrong", len);
    } else {
        send(node, OP_RELEASE, len as u64)?;
    }
    if count > 0 {
        log!("bench rdma_write_{}b_best_us: {} us", len, best);
        log!("bench rdma_write_{}b_total_us: {} us", len, total);
        let timed = &mut samples[..usize::from(count).min(MEDIAN_OF)];
        timed.sort_unstable();
        log!("bench rdma_write_{}b_to_node{}_median_us: {} us", len, node, timed[timed.len() / 2]);
    }
    Ok(0)
}

fn peer(writer: u16) -> Result<u64, Error> {
    register(op(OP_RELEASE))?;
    send(writer, OP_READY, 0)?;
    let len = take(OP_RELEASE)? as usize;
    let landed = &buffer()[..len.min(HALF)];
    ensure!(landed.iter().enumerate().all(|(i, &b)| b == pattern(i)), 1, "the writes landed wrong");
    Ok(0)
}
