//! `fad-mesh-check VICTIM PAGE...`: after `fad-mesh`, checks this node's counters exactly.
//!
//! For every node `s` but the victim (`-` for none), the adds `s` counted as acknowledged by
//! this node (word `RESULTS + me` of `s`'s page) must equal what this node's page holds in `s`'s
//! slot (word `s`). The victim's own adds are unknown: it died before telling.
//!
//! Exit status: 0; 1 = a counter differs from the adds acknowledged; otherwise an error status.
#![no_std]
#![no_main]

use unimem_user::{Error, GlobalAddress, arguments, board_count, board_id, ensure, log, offset, read64};

unimem_user::entry!(main);

const RESULTS: u64 = 0x100;

fn main() -> Result<u64, Error> {
    let args = arguments()?;
    let (me, nodes) = (board_id()?, board_count()?);
    let victim = args.get(0).and_then(|v| v.parse::<u16>().ok());
    let page = |node: u16| args.number(1 + usize::from(node)).map(GlobalAddress::from_raw);
    let mine = page(me)?;
    let mut total = 0;
    for s in (0..nodes).filter(|&s| Some(s) != victim) {
        let acknowledged = read64(offset(page(s)?, 8 * (RESULTS + u64::from(me))))?;
        let counted = read64(offset(mine, 8 * u64::from(s)))?;
        ensure!(
            acknowledged == counted,
            1,
            "node {} had {} adds acknowledged here, the counter holds {}",
            s,
            acknowledged,
            counted
        );
        total += counted;
    }
    log!("node {}: {} adds from the live nodes, each one counted", me, total);
    Ok(0)
}
