//! `shared-counter`: the example of the README's "Write your own program".
//!
//! Every node allocates a page on the next node, adds 1 to a counter in it 100 times with
//! remote fetch-and-add, checks the total and frees the page.
#![no_std]
#![no_main]

use unimem_user::{Error, alloc_shared, board_count, board_id, ensure, fad64, free_shared, log, read64};

unimem_user::entry!(main);

fn main() -> Result<u64, Error> {
    let (me, nodes) = (board_id()?, board_count()?);
    let next = (me + 1) % nodes;
    let counter = alloc_shared(1, next)?; // a page on the next node
    for _ in 0..100 {
        fad64(counter, 1)?; // served atomically by that node's service
    }
    let total = read64(counter)?;
    ensure!(total == 100, 1, "node {}: the counter on node {} holds {}", me, next, total);
    log!("node {}: counted to {} on node {}", me, total, next);
    free_shared(counter)?;
    Ok(0)
}
