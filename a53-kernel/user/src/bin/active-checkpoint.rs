//! `active-checkpoint`: incremental checkpointing with put logging, the seed's dirty tracking
//! (W=1, WL=1: every remote put is written and logged; `unimem_user::active::checkpoint`,
//! `docs/hw/active-access.md`). The thread argument is `args::active_checkpoint::pack(role)`:
//!
//! - `Run { rounds }`: owns a buffer of `checkpoint::PAGES` pages here, all put-logging, and
//!   spawns a writer on every other node (`unimem_user::active::team`). Each round the writers
//!   make the round's writes (`checkpoint::Round`: a pseudo-random subset of the pages, 1..=3
//!   writes of 1..=700 bytes each, writers drawn at random, so a page may have two); once every
//!   writer has seen its puts acknowledged, the owner takes the dirty pages from its log, which
//!   must be exactly the pages written (every packet of every write logged once, nothing else),
//!   copies those pages into its checkpoint, and checks the checkpoint byte for byte against
//!   what the round wrote (and the buffer too: a write the log missed would show there).
//! - `Writer { owner, index, writers }`: makes its share of each round's writes, 8 in flight.
//! - `PutCost { node }` / `CostOwner { node }`: the cost of logging on plain puts (`cargo xtask
//!   bench active`): `COST_PUTS` puts of 256 B, one at a time, to a plain page and to a
//!   put-logging page of the owner, whose handler drains the log meanwhile.
//! - `HandlerInstructions`: the handler's instructions per log entry (`cargo xtask bench
//!   active`, under `-icount` on one node): puts to its own put-logging pages, then the
//!   instructions of `Log::poll` marking their pages dirty, over 0, 64 and 256 entries (the
//!   median of `SAMPLES` each), read from the PMU. Only the test image's `bench=active-icount`
//!   lets EL0 read the PMU; elsewhere the process is killed.
//!
//! From the console, on every node (`--on 0`: the owner on node 0, writers on the others):
//!
//! ```sh
//! cargo xtask run active-checkpoint --nodes 4 --on 0          # 4 rounds
//! cargo xtask run active-checkpoint --nodes 4 --on 0 -- 10    # 10 rounds
//! cargo xtask run active-checkpoint --nodes 2 --on 0 -- put-cost
//! ```
//!
//! Exit status: 0; 1 = a bad argument; 2 = a writer failed (its status is logged); 3 = a round's
//! log was not exactly its writes (what differed is logged); 4 = the checkpoint is not what was
//! written; 5 = the buffer is not what was written; a writer's own: 10 = a round out of order;
//! PutCost: 20 = the owner handled another number of entries; HandlerInstructions: 30 = a poll
//! took another number of entries or pages; otherwise an error status (`README.md`).
#![no_std]
#![no_main]

use unimem_user::active::checkpoint::{MAX_WRITE, PAGE, PAGES, PageSet, Round, RoundLog};
use unimem_user::active::team::{Member, Team};
use unimem_user::active::{Log, actions, pattern};
use unimem_user::args::active_checkpoint::{MAX_ROUNDS, Role, pack, unpack};
use unimem_user::channel::{op, send, take};
use unimem_user::{Error, board_count, board_id, ensure, log, register, remote_spawn, sys, thread_argument};

unimem_user::entry!(main);

/// The run's seed: the owner and the writers derive every round from it.
const SEED: u64 = 0xc4ec_4901;
/// The buffer's bytes before the first round.
const INITIAL: u64 = 0x1417;
/// Rounds without an argument.
const ROUNDS: u8 = 4;
/// The phase that ends the writers (beyond every round).
const DONE: u64 = 1 << 40;
const TRANSFER_US: u64 = 60_000_000;
const ROUND_US: u64 = 100_000_000;
/// Writes a writer keeps in flight.
const IN_FLIGHT: usize = 8;

fn main() -> Result<u64, Error> {
    let role = match thread_argument() {
        Err(Error::NoArgument) => console_role()?,
        other => unpack(other?),
    };
    let Some(role) = role else {
        log!("usage: active-checkpoint [ROUNDS (1..={}) | put-cost | handler-instructions]", MAX_ROUNDS);
        return Ok(1);
    };
    match role {
        Role::Run { rounds } => owner(rounds),
        Role::Writer { owner, index, writers } => Member::run(owner, index, |m| writer(m, owner, index, writers)),
        Role::PutCost { node } => put_cost(node),
        Role::CostOwner { node } => cost_owner(node),
        Role::HandlerInstructions => handler_instructions(),
    }
}

fn console_role() -> Result<Option<Role>, Error> {
    let args = unimem_user::arguments()?;
    Ok(match args.get(0) {
        None => Some(Role::Run { rounds: ROUNDS }),
        Some("put-cost") => Some(Role::PutCost { node: (board_id()? + 1) % board_count()? }),
        Some("handler-instructions") => Some(Role::HandlerInstructions),
        Some(_) => {
            let rounds = args.number(0).ok().filter(|r| (1..=u64::from(MAX_ROUNDS)).contains(r));
            rounds.map(|r| Role::Run { rounds: r as u8 })
        }
    })
}

/// FNV-1a over `bytes`: the checkpoint's increment, logged.
fn hash(bytes: impl Iterator<Item = u8>) -> u64 {
    bytes.fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

fn owner(rounds: u8) -> Result<u64, Error> {
    let me = board_id()?;
    let mut log = Log::open()?;
    let live = sys::map_buffer(PAGES * PAGE)?;
    // The checkpoint, and what the buffer must hold (the rounds' writes applied).
    let image = sys::map_buffer(PAGES * PAGE)?;
    let model = sys::map_buffer(PAGES * PAGE)?;
    for (i, b) in live.iter_mut().enumerate() {
        *b = pattern(INITIAL, i);
    }
    image.copy_from_slice(live);
    model.copy_from_slice(live);
    let base = live.as_ptr() as u64;
    for p in 0..PAGES {
        log.assoc_page(base + (p * PAGE) as u64, actions::PUT_LOG)?;
    }
    let team =
        Team::spawn(env!("CARGO_BIN_NAME"), base, |index, writers| pack(Role::Writer { owner: me, index, writers }))?;
    let writers = team.len() as u8;
    for r in 0..u32::from(rounds) {
        let round = Round::new(SEED, r, writers);
        let mut taken = RoundLog::new(&round, base);
        team.start(u64::from(r))?;
        // The handler runs meanwhile (a round fits the ring, but need not wait in it); every
        // write acknowledged is logged, so after the last report one more look finds all.
        let Some(_) = team.gather(ROUND_US, || log.poll(|e| taken.take(e)).map(drop))? else { return Ok(2) };
        log.poll(|e| taken.take(e))?;
        if let Err(m) = taken.check() {
            log!("round {}: the log is not the round's writes: {:?}", r, m);
            return Ok(3);
        }
        let dirty = taken.dirty();
        for p in dirty.iter() {
            image[p * PAGE..(p + 1) * PAGE].copy_from_slice(&live[p * PAGE..(p + 1) * PAGE]);
        }
        round.apply(model);
        ensure!(*image == *model, 4, "round {}: the checkpoint is not what was written", r);
        ensure!(*live == *model, 5, "round {}: the buffer is not what was written (a write the log missed)", r);
        let increment = hash(dirty.iter().flat_map(|p| image[p * PAGE..(p + 1) * PAGE].iter().copied()));
        log!(
            "round {}: {} writes by {} writers, {} log entries; dirty pages {:#010x}, exactly the pages written; checkpointed {} pages (hash {:#018x}), checkpoint exact",
            r,
            round.writes().len(),
            writers,
            taken.entries(),
            dirty.bits(),
            dirty.len(),
            increment
        );
    }
    team.start(DONE)?;
    team.finish();
    log!("{} rounds checkpointed exactly, {} writers", rounds, writers);
    Ok(0)
}

fn writer(m: &Member, owner: u16, index: u8, writers: u8) -> Result<u64, Error> {
    let rdma = unimem_user::rdma::open()?;
    let base = m.address()?;
    let local = sys::map_buffer(IN_FLIGHT * MAX_WRITE)?;
    let mut expected = 0u64;
    loop {
        let phase = m.phase()?;
        if phase == DONE {
            return Ok(0);
        }
        ensure!(phase == expected, 10, "round {} came after round {}", phase, expected.wrapping_sub(1));
        expected += 1;
        let round = Round::new(SEED, phase as u32, writers);
        let mut mine = round.writes().iter().filter(|w| w.writer == index).peekable();
        let mut made = 0u64;
        while mine.peek().is_some() {
            let mut batch = [None; IN_FLIGHT];
            for (slot, w) in batch.iter_mut().zip(mine.by_ref()) {
                *slot = Some(*w);
            }
            for (j, w) in batch.iter().enumerate() {
                if let Some(w) = w {
                    for (i, b) in local[j * MAX_WRITE..][..usize::from(w.len)].iter_mut().enumerate() {
                        *b = w.byte(i);
                    }
                }
            }
            let mut transfers: [Option<unimem_user::rdma::Transfer<'_, _>>; IN_FLIGHT] = Default::default();
            for (j, w) in batch.iter().enumerate() {
                if let Some(w) = w {
                    let data = &local[j * MAX_WRITE..][..usize::from(w.len)];
                    transfers[j] = Some(rdma.write(data, owner, base + w.start() as u64)?);
                    made += 1;
                }
            }
            for t in transfers.iter().flatten() {
                t.wait(TRANSFER_US)?;
            }
        }
        m.report(made)?;
    }
}

const OP_ADDRESS: u8 = 8;
const OP_PHASE: u8 = 9;
const OP_RESULT: u8 = 10;
/// Puts of each kind in `PutCost`.
const COST_PUTS: u64 = 400;

fn put_cost(node: u16) -> Result<u64, Error> {
    let me = board_id()?;
    register(op(OP_ADDRESS))?;
    register(op(OP_RESULT))?;
    let rdma = unimem_user::rdma::open()?;
    remote_spawn(env!("CARGO_BIN_NAME"), pack(Role::CostOwner { node: me }), node)?;
    let base = take(OP_ADDRESS)?;
    let local = sys::map_buffer(256)?;
    for (i, b) in local.iter_mut().enumerate() {
        *b = pattern(7, i);
    }
    let time = |page: u64| -> Result<u64, Error> {
        let t0 = sys::time_us()?;
        for k in 0..COST_PUTS {
            rdma.write(&local[..256], node, page + (k % 16) * 256)?.wait(TRANSFER_US)?;
        }
        Ok(sys::time_us()? - t0)
    };
    // Alternating rounds, so that a slow phase of the host weighs on both alike.
    let (mut plain, mut logged) = (0, 0);
    for _ in 0..2 {
        plain += time(base)?;
        logged += time(base + PAGE as u64)?;
    }
    send(node, OP_PHASE, 0)?;
    let handled = take(OP_RESULT)?;
    ensure!(handled == 2 * COST_PUTS, 20, "the owner handled {} entries", handled);
    log!("bench active_put_plain_us: {} us", plain);
    log!("bench active_put_logged_us: {} us", logged);
    log!("bench active_put_count: {} puts", 2 * COST_PUTS);
    Ok(0)
}

fn cost_owner(initiator: u16) -> Result<u64, Error> {
    register(op(OP_PHASE))?;
    let mut log = Log::open()?;
    let buf = sys::map_buffer(2 * PAGE)?;
    let base = buf.as_ptr() as u64;
    log.assoc_page(base + PAGE as u64, actions::PUT_LOG)?;
    send(initiator, OP_ADDRESS, base)?;
    let mut handled = 0u64;
    let mut dirty = PageSet::new();
    loop {
        let n = log.poll(|e| {
            dirty.insert((e.header.va.wrapping_sub(base) / PAGE as u64) as usize);
        })? as u64;
        handled += n;
        if n == 0 {
            if unimem_user::receive(Some(op(OP_PHASE)), false).is_ok() {
                break;
            }
            sys::yield_now();
        }
    }
    log.poll(|_| handled += 1)?;
    send(initiator, OP_RESULT, handled)?;
    Ok(0)
}

/// Entries of each measured poll: 0, 4 and 16 pages of 16 packets.
const POLL_PAGES: [usize; 3] = [0, 4, 16];
/// Polls of each size; the median counts.
const SAMPLES: usize = 7;

fn handler_instructions() -> Result<u64, Error> {
    let me = board_id()?;
    let rdma = unimem_user::rdma::open()?;
    let mut log = Log::open()?;
    let pages = POLL_PAGES[POLL_PAGES.len() - 1];
    let buf = sys::map_buffer(pages * PAGE)?;
    let base = buf.as_ptr() as u64;
    for p in 0..pages {
        log.assoc_page(base + (p * PAGE) as u64, actions::PUT_LOG)?;
    }
    let src = sys::map_buffer(pages * PAGE)?;
    for (i, b) in src.iter_mut().enumerate() {
        *b = pattern(3, i);
    }
    let mut samples = [[0u32; POLL_PAGES.len()]; SAMPLES];
    for sample in samples.iter_mut() {
        for (k, &n) in POLL_PAGES.iter().enumerate() {
            if n > 0 {
                // One put per page per 256 B: 16 entries a page.
                rdma.write(&src[..n * PAGE], me, base)?.wait(TRANSFER_US)?;
            }
            // Every core and the R5 back asleep: under -icount the counter counts every vCPU
            // of the node, and an idle one adds nothing.
            sys::sleep_us(20_000)?;
            let mut dirty = PageSet::new();
            let before = unimem_user::pmu::instructions();
            let taken = log.poll(|e| {
                dirty.insert((e.header.va.wrapping_sub(base) / PAGE as u64) as usize);
            })?;
            let spent = unimem_user::pmu::instructions().wrapping_sub(before);
            ensure!(taken == n * 16 && dirty.len() == n, 30, "a poll took {} entries of {} pages", taken, dirty.len());
            sample[k] = spent;
        }
    }
    for (k, &n) in POLL_PAGES.iter().enumerate() {
        let mut polls = samples.map(|sample| sample[k]);
        polls.sort_unstable();
        log!("bench active_handler_{}_entries_instructions: {} instructions", n * 16, polls[SAMPLES / 2]);
    }
    Ok(0)
}
