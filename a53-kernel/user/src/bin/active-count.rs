//! `active-count`: access counting with get counting (RL=1 without RLD: every remote get of a
//! marked page is served and logged, without its data; `unimem_user::active::count`,
//! `docs/hw/active-access.md`). The thread argument is `args::active_count::pack(role)`:
//!
//! - `Run { reads }`: owns `count::PAGES` pages of objects of `count::OBJECT` bytes here, all
//!   get-counting, and spawns a reader on every other node (`unimem_user::active::team`), each
//!   making `reads` gets of one object (the page drawn with weight page + 1, the object
//!   uniformly: `count::reads`). The owner's handler counts the gets per page and per object
//!   from its log while they come; the counts must be what the readers read, exactly. A get
//!   retried after a lost packet is logged again: its entry's (node, tid, first_seq, index) is
//!   one seen before, and it is counted once (`active::Seen`).
//! - `Reader { owner, index, reads }`: makes its gets, 8 in flight, and checks the
//!   bytes of every object it read.
//!
//! From the console, on every node (`--on 0`: the owner on node 0, readers on the others), the
//! argument being the gets of each reader (100 without one):
//!
//! ```sh
//! cargo xtask run active-count --nodes 4 --on 0 -- 200
//! ```
//!
//! Exit status: 0; 1 = a bad argument (no gets, or more than `count::MAX_GETS` in all); 2 = a
//! reader failed (its status is logged); 3 = an entry that is not a get of one object; 4 = more
//! gets than the handler tells apart; 5 = the counts per page or per object differ from the
//! reads; 6 = the readers report another number of gets; a reader's own: 10 = phases out of
//! order, 11 = an object read with wrong bytes; otherwise an error status (`README.md`).
#![no_std]
#![no_main]

use unimem_user::active::count::{Counter, MAX_GETS, OBJECT, PAGE, PAGES, Tally, reads};
use unimem_user::active::team::{Member, Team};
use unimem_user::active::{Log, actions, pattern};
use unimem_user::args::active_count::{Role, pack, unpack};
use unimem_user::{Error, board_count, board_id, ensure, log, sys, thread_argument};

unimem_user::entry!(main);

/// The run's seed: the owner and the readers derive every read from it.
const SEED: u64 = 0xc0_0a7;
/// The objects' bytes.
const OBJECTS: u64 = 0x0b1e;
/// Gets of each reader without an argument.
const READS: u16 = 100;
const GO: u64 = 1;
const TRANSFER_US: u64 = 60_000_000;
const PHASE_US: u64 = 100_000_000;
/// Gets a reader keeps in flight.
const IN_FLIGHT: usize = 8;

fn main() -> Result<u64, Error> {
    let role = match thread_argument() {
        Err(Error::NoArgument) => {
            let args = unimem_user::arguments()?;
            match args.get(0) {
                None => Some(Role::Run { reads: READS }),
                Some(_) => args.number(0).ok().and_then(|r| u16::try_from(r).ok()).map(|reads| Role::Run { reads }),
            }
        }
        other => unpack(other?),
    };
    let Some(role) = role else {
        log!("usage: active-count [GETS (of each reader; at most {} in all)]", MAX_GETS);
        return Ok(1);
    };
    match role {
        Role::Run { reads } => owner(reads),
        Role::Reader { owner, index, reads } => Member::run(owner, index, |m| reader(m, owner, index, reads)),
    }
}

fn owner(reads_each: u16) -> Result<u64, Error> {
    let (me, nodes) = (board_id()?, board_count()?);
    let all = usize::from(nodes.saturating_sub(1)) * usize::from(reads_each);
    ensure!(reads_each > 0 && all <= MAX_GETS, 1, "{} gets in all: 1..={} can be told apart", all, MAX_GETS);
    let mut log = Log::open()?;
    let buf = sys::map_buffer(PAGES * PAGE)?;
    for (i, b) in buf.iter_mut().enumerate() {
        *b = pattern(OBJECTS, i);
    }
    let base = buf.as_ptr() as u64;
    for p in 0..PAGES {
        log.assoc_page(base + (p * PAGE) as u64, actions::GET_COUNT)?;
    }
    let team = Team::spawn(env!("CARGO_BIN_NAME"), base, |index, _| {
        pack(Role::Reader { owner: me, index, reads: reads_each })
    })?;
    let readers = team.len() as u8;
    let mut counter = Counter::new(base);
    team.start(GO)?;
    let Some(made) = team.gather(PHASE_US, || log.poll(|e| counter.take(e)).map(drop))? else { return Ok(2) };
    let reported: u64 = made[..team.len()].iter().sum();
    // Every reader has made its report and ends.
    team.finish();
    // A get's entry is appended before its data leaves: every completed get is in the log.
    log.poll(|e| counter.take(e))?;
    let want = Tally::expected(SEED, readers, reads_each);
    ensure!(counter.stray() == 0, 3, "{} entries were not a get of one object", counter.stray());
    ensure!(!counter.overflowed(), 4, "more gets than the handler tells apart");
    let mut logged = [0u32; PAGES];
    let mut read = [0u32; PAGES];
    for p in 0..PAGES {
        (logged[p], read[p]) = (counter.tally().page(p), want.page(p));
    }
    ensure!(counter.tally() == &want, 5, "gets per page: logged {:?}, read {:?} (or per object)", logged, read);
    ensure!(
        reported == u64::from(want.total()),
        6,
        "the readers made {} gets, {} were planned",
        reported,
        want.total()
    );
    log!(
        "{} gets by {} readers counted exactly per page and per object: per page {:?}; {} entries were a retried get's copy, counted once",
        want.total(),
        readers,
        logged,
        counter.copies()
    );
    Ok(0)
}

fn reader(m: &Member, owner: u16, index: u8, reads_each: u16) -> Result<u64, Error> {
    let rdma = unimem_user::rdma::open()?;
    let base = m.address()?;
    let local = sys::map_buffer(IN_FLIGHT * OBJECT)?;
    ensure!(m.phase()? == GO, 10, "phase");
    let mut plan = reads(SEED, index, reads_each).peekable();
    let mut made = 0u64;
    while plan.peek().is_some() {
        let mut batch = [None; IN_FLIGHT];
        for (slot, read) in batch.iter_mut().zip(plan.by_ref()) {
            *slot = Some(read);
        }
        {
            let mut transfers: [Option<unimem_user::rdma::Transfer<'_, _>>; IN_FLIGHT] = Default::default();
            for ((t, chunk), read) in transfers.iter_mut().zip(local.chunks_mut(OBJECT)).zip(&batch) {
                if let Some((page, object)) = read {
                    *t = Some(rdma.read(chunk, owner, base + (page * PAGE + object * OBJECT) as u64)?);
                }
            }
            for t in transfers.iter().flatten() {
                t.wait(TRANSFER_US)?;
            }
        }
        for (chunk, read) in local.chunks(OBJECT).zip(&batch) {
            if let Some((page, object)) = read {
                let at = page * PAGE + object * OBJECT;
                ensure!(
                    chunk.iter().enumerate().all(|(i, &b)| b == pattern(OBJECTS, at + i)),
                    11,
                    "object {} of page {} read with wrong bytes",
                    object,
                    page
                );
                made += 1;
            }
        }
    }
    m.report(made)?;
    Ok(0)
}
