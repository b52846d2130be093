//! `fad-mesh-check VICTIMS PAGE...`: after `fad-mesh`, checks this node's counters exactly.
//!
//! For every node `s` but the victims (comma-separated, `-` for none), the adds `s` counted as acknowledged by
//! this node (word `RESULTS + me` of `s`'s page) must equal what this node's page holds in `s`'s
//! slot (word `s`). The victims' own adds are unknown: they died before telling.
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
    let victims = args.get(0).unwrap_or("-");
    let victim = |s: u16| victims.split(',').any(|v| v.parse::<u16>() == Ok(s));
    let page = |node: u16| args.number(1 + usize::from(node)).map(GlobalAddress::from_raw);
    let mine = page(me)?;
    let mut total = 0;
    for s in (0..nodes).filter(|&s| !victim(s)) {
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
