//! `spawn-tree`: a binary tree of processes across the nodes, each counting itself.
//!
//! Argument: `args::spawn_tree::pack(counter, depth)` = the counter's address (page-aligned,
//! node in the top bits) | depth in bits [3:0]. Does `fad64(counter, 1)`; if depth > 0, spawns
//! itself on nodes (board_id() + 1) % n and (board_id() + 2) % n with depth - 1. A tree of
//! depth d makes 2^(d+1) - 1 increments (15 for depth 3); the parent does not wait for them.
//! Exit status: 0, or an error status (`README.md`).
#![no_std]
#![no_main]

use unimem_user::args::spawn_tree;
use unimem_user::{Error, board_count, board_id, fad64, log, remote_spawn, thread_argument};

unimem_user::entry!(main);

fn main() -> Result<u64, Error> {
    let (counter, depth) = spawn_tree::unpack(thread_argument()?);
    let old = fad64(counter, 1)?;
    let (me, n) = (board_id()?, board_count()?);
    log!("depth {} on node {}: counter {:#x} was {}", depth, me, counter.raw(), old);
    if depth > 0 {
        let arg = spawn_tree::pack(counter, depth - 1).ok_or(Error::NoArgument)?;
        for step in [1, 2] {
            let node = ((u32::from(me) + step) % u32::from(n)) as u16;
            remote_spawn(env!("CARGO_BIN_NAME"), arg, node)?;
        }
    }
    Ok(0)
}
