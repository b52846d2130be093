//! `fad-mesh ROUNDS VICTIMS PAGE... [WITHIN_MS]`: fetch-and-add from every node to every node,
//! surviving nodes that die.
//!
//! `PAGE...` are the counter pages, one per node, in node order (GSAS addresses, `0x` hex). In
//! each round the process adds 1 to its own slot (word `me`) of every node's page. `VICTIMS` are
//! the nodes that will be killed, comma-separated (`2`, `2,3`; `-` for none): on a victim the
//! process logs `fad-mesh: halfway` after half the rounds and waits to be killed; elsewhere the
//! rounds go on until every victim is found unreachable. A request to a gone node must end in
//! `NodeUnreachable`, within `WITHIN_MS` (a second without it), never in `Timeout`: the request
//! timeout is set far above the time allowed. (A killed QEMU is known in milliseconds; a rank of
//! a cluster over MPI that dies, with its nodes, only when its link finds it silent.)
//!
//! At the end the process writes how many adds each node acknowledged into its own page (word
//! `RESULTS + t` for target `t`), for `fad-mesh-check`; then a notification and a read to each
//! victim must be refused the same way.
//!
//! Exit status: 0; 1 = a victim was never found unreachable; 2 = an unreachable answer took
//! longer than allowed; 3 = a victim answered a notification or a read; otherwise an error
//! status (`README.md`).
#![no_std]
#![no_main]

use unimem_user::{
    Error, GlobalAddress, MailboxOpcode, Notification, arguments, board_count, board_id, ensure, fad64, log, notify,
    offset, read64, set_request_timeout_us, sys, write64,
};

unimem_user::entry!(main);

/// First word of the results in a node's page.
const RESULTS: u64 = 0x100;
const MAX_NODES: usize = 8;
/// How long the survivors keep going while the victim is still alive.
const GIVE_UP_US: u64 = 120_000_000;
/// An unreachable node must be known faster than this, unless told otherwise.
const FAST_US: u64 = 1_000_000;

/// The victims of `VICTIMS`, by node.
fn victims(arg: Option<&str>) -> [bool; MAX_NODES] {
    let mut victims = [false; MAX_NODES];
    for node in arg.unwrap_or("-").split(',').filter_map(|v| v.parse::<usize>().ok()) {
        if let Some(v) = victims.get_mut(node) {
            *v = true;
        }
    }
    victims
}

fn main() -> Result<u64, Error> {
    let args = arguments()?;
    let (me, nodes) = (board_id()?, board_count()?);
    let rounds = args.number(0)?;
    let victims = victims(args.get(1));
    let n = usize::from(nodes).min(MAX_NODES);
    let mut pages = [GlobalAddress::from_raw(0); MAX_NODES];
    for (t, page) in pages.iter_mut().enumerate().take(n) {
        *page = GlobalAddress::from_raw(args.number(2 + t)?);
    }
    let fast_us = args.number(2 + n).map_or(FAST_US, |ms| ms * 1000);
    set_request_timeout_us(10 * GIVE_UP_US)?;
    let (mut acked, mut dead) = ([0u64; MAX_NODES], [false; MAX_NODES]);
    let started = sys::time_us()?;
    let mut slowest_unreachable = 0;
    let mut round = 0;
    loop {
        let victims_gone = (0..n).all(|v| !victims[v] || dead[v]);
        if round >= rounds && victims_gone {
            break;
        }
        if victims[usize::from(me)] && round == rounds / 2 {
            log!("fad-mesh: halfway");
            loop {
                sys::sleep_us(u64::MAX)?;
            }
        }
        ensure!(sys::time_us()? - started < GIVE_UP_US, 1, "victims {:?} never all became unreachable", &victims[..n]);
        for t in 0..n {
            if dead[t] {
                continue;
            }
            let asked = sys::time_us()?;
            match fad64(offset(pages[t], 8 * u64::from(me)), 1) {
                Ok(_) => acked[t] += 1,
                Err(Error::NodeUnreachable(x)) if usize::from(x) == t => {
                    dead[t] = true;
                    slowest_unreachable = slowest_unreachable.max(sys::time_us()? - asked);
                }
                Err(e) => return Err(e),
            }
        }
        round += 1;
    }
    for (t, count) in acked.iter().enumerate().take(n) {
        write64(offset(pages[usize::from(me)], 8 * (RESULTS + t as u64)), *count)?;
    }
    for v in (0..n).filter(|&v| victims[v]).map(|v| v as u16) {
        let note = Notification::new(MailboxOpcode::new(9).map_err(|_| Error::Unsupported)?, 1)
            .map_err(|_| Error::Unsupported)?;
        let asked = sys::time_us()?;
        let notified = notify(v, note);
        let between = sys::time_us()?;
        let read = read64(pages[usize::from(v)]).map(drop);
        let answered = sys::time_us()?;
        slowest_unreachable = slowest_unreachable.max(between - asked).max(answered - between);
        for refused in [notified, read] {
            ensure!(refused == Err(Error::NodeUnreachable(v)), 3, "node {} answered {:?}", v, refused);
        }
    }
    ensure!(slowest_unreachable < fast_us, 2, "an unreachable answer took {} us", slowest_unreachable);
    log!("{} rounds, acknowledged {:?}, unreachable known within {} us", round, &acked[..n], slowest_unreachable);
    Ok(0)
}
