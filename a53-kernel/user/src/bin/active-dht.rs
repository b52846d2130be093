//! `active-dht`: the distributed hash table of the seed's Listings 2 and 3 with Active Access
//! against the RMA baseline (`unimem_user::active::dht`, `docs/hw/active-access.md`). Started on
//! one node, it owns two volumes there and spawns an inserter on every other node
//! (`unimem_user::active::team`); the run's `DHT_INSERTS` elements, P % of them colliding, are
//! inserted twice, the inserters sharing them out:
//!
//! 1. Active Access (Listing 3): one active put of each element into its bucket's cell of the
//!    marked table page (logged with its 8 bytes, not written); the owner's handler inserts it
//!    (`local_insert`). Once every inserter's puts are acknowledged, each flushes
//!    (`active::flush`): its inserts are then in the table.
//! 2. The RMA baseline (Listing 2): `dht::remote_insert`, a CAS into the bucket and on a
//!    collision a fetch-and-add, a put, a swap and a put, every inserter at once.
//!
//! The owner checks that each volume holds exactly the elements, and the remote operations (AA
//! one per insert; RMA one per insert and four more per collision), then logs both ways' remote
//! operations per insert and inserts per second beside the seed's figures, and the `bench`
//! lines `cargo xtask bench active` reads (phase times from the owner's start of the phase to
//! the last inserter's report).
//!
//! The thread argument is `args::active_dht::pack(role)`. From the console the argument is P,
//! the collision percentage (0..=100):
//!
//! ```sh
//! cargo xtask run active-dht --nodes 4 --on 0 -- 25
//! ```
//!
//! Exit status: 0; 1 = no percentage, or one above 100; 2 = an inserter failed (its status is
//! logged); 3, 4 = the AA handler took a wrong entry or too few, or the heap overflowed; 5, 6 =
//! the AA / RMA volume is not exactly the elements; 7 = remote operations not as counted; an
//! inserter's own: 10 = phases out of order, 11 = the RMA volume overflowed; otherwise an error
//! status (`README.md`).
#![no_std]
#![no_main]

use unimem_user::active::dht::{self, Elements, Volume, aa_bucket_of, aa_slot, remote_insert, remote_ops, share};
use unimem_user::active::team::{Member, Team};
use unimem_user::active::{Log, actions, flush};
use unimem_user::args::active_dht::{Role, pack, unpack};
use unimem_user::{Error, board_id, ensure, log, sys, thread_argument};

unimem_user::entry!(main);

const PAGE: u64 = 4096;
/// Inserts per run.
const DHT_INSERTS: usize = 300;
/// A volume takes five pages: the AA volume, the RMA volume, then the flushing page.
const VOLUME_BYTES: u64 = 5 * PAGE;
const TRANSFER_US: u64 = 60_000_000;
const PHASE_US: u64 = 100_000_000;
/// The phases the owner starts.
const AA_PUTS: u64 = 1;
const AA_FLUSH: u64 = 2;
const RMA: u64 = 3;
/// Active puts an inserter keeps in flight.
const IN_FLIGHT: usize = 8;

fn seed_of(pct: u8) -> u64 {
    0x5eed_0000 + u64::from(pct)
}

fn main() -> Result<u64, Error> {
    let role = match thread_argument() {
        Err(Error::NoArgument) => {
            let pct = unimem_user::arguments()?.number(0).ok().filter(|&p| p <= 100);
            let Some(pct) = pct else {
                log!("usage: active-dht PERCENT (the elements that collide, 0..=100)");
                return Ok(1);
            };
            Role::Run { collide_pct: pct as u8 }
        }
        other => unpack(other?).ok_or(Error::NoArgument)?,
    };
    match role {
        Role::Run { collide_pct } => owner(collide_pct),
        Role::Inserter { owner, index, inserters, collide_pct } => {
            Member::run(owner, index, |m| inserter(m, owner, index, inserters, collide_pct))
        }
    }
}

/// The AA handler's tally.
#[derive(Default)]
struct Handled {
    inserts: usize,
    bad: u32,
    overflow: bool,
}

fn owner(pct: u8) -> Result<u64, Error> {
    let me = board_id()?;
    let mut log = Log::open()?;
    let buf = sys::map_buffer((3 * VOLUME_BYTES) as usize)?;
    let base = buf.as_mut_ptr() as u64;
    // SAFETY: two page-aligned volumes in this fresh region, each `VOLUME_BYTES` (more than a
    // `Volume`), which nothing else names; the engine writes only the log, never these pages
    // (the AA bucket page is an active-put page: not written), and the RMA inserts are the
    // kernel's process atomics and puts, which this process does not race with (it only reads
    // the RMA volume once every inserter has reported).
    let (aa, rma) = unsafe { (&mut *(base as *mut Volume), &mut *((base + VOLUME_BYTES) as *mut Volume)) };
    aa.clear();
    rma.clear();
    log.assoc_page(base, actions::ACTIVE_PUT)?;
    log.assoc_page(base + 2 * VOLUME_BYTES, actions::FLUSH)?;
    let team = Team::spawn(env!("CARGO_BIN_NAME"), base, |index, inserters| {
        pack(Role::Inserter { owner: me, index, inserters, collide_pct: pct })
    })?;
    let inserters = team.len();
    let seed = seed_of(pct);
    let elements = || Elements::new(seed, pct).take(DHT_INSERTS);
    let n = DHT_INSERTS as u64;
    let collisions = elements().filter(|e| e.1).count() as u64;

    // Active Access: the handler inserts every element an active put brings (Listing 3's
    // insert_handler) while the inserters put, then flush.
    let mut handled = Handled::default();
    let mut handler = |log: &mut Log| {
        log.poll(|e| match (aa_bucket_of(base, e.header.va), e.data.try_into().map(u64::from_le_bytes)) {
            (Some(slot), Ok(elem)) if e.is_put() && dht::bucket(elem) == slot => {
                handled.overflow |= aa.local_insert(elem).is_err();
                handled.inserts += 1;
            }
            _ => handled.bad += 1,
        })
        .map(drop)
    };
    let t0 = sys::time_us()?;
    team.start(AA_PUTS)?;
    let Some(puts) = team.gather(PHASE_US, || handler(&mut log))? else { return Ok(2) };
    team.start(AA_FLUSH)?;
    if team.gather(PHASE_US, || handler(&mut log))?.is_none() {
        return Ok(2);
    }
    let aa_us = (sys::time_us()? - t0).max(1);
    let aa_ops: u64 = puts[..inserters].iter().sum();
    ensure!(handled.bad == 0 && !handled.overflow, 3, "{} bad entries, overflow {}", handled.bad, handled.overflow);
    ensure!(handled.inserts == DHT_INSERTS, 4, "the handler took {} inserts", handled.inserts);
    ensure!(aa.holds_exactly(elements().map(|e| e.0)), 5, "the AA volume is not exactly the elements");

    // The RMA baseline, every inserter at once.
    let t0 = sys::time_us()?;
    team.start(RMA)?;
    let Some(ops) = team.gather(PHASE_US, || Ok(()))? else { return Ok(2) };
    let rma_us = (sys::time_us()? - t0).max(1);
    // Every inserter has made its last report and ends.
    team.finish();
    let rma_ops: u64 = ops[..inserters].iter().sum();
    ensure!(rma.holds_exactly(elements().map(|e| e.0)), 6, "the RMA volume is not exactly the elements");
    ensure!((aa_ops, rma_ops) == remote_ops(n, collisions), 7, "remote operations AA {}, RMA {}", aa_ops, rma_ops);

    log!(
        "dht {}% collisions ({} of {}), {} inserters, both volumes exact: remote ops/insert AA {}.{:02} (seed: 1), RMA {}.{:02} (seed: 1 + up to 6 per collision); inserts/s AA {}, RMA {}, AA/RMA {}.{:02}x (seed: ~3x)",
        pct,
        collisions,
        n,
        inserters,
        aa_ops / n,
        aa_ops * 100 / n % 100,
        rma_ops / n,
        rma_ops * 100 / n % 100,
        n * 1_000_000 / aa_us,
        n * 1_000_000 / rma_us,
        rma_us / aa_us,
        rma_us * 100 / aa_us % 100
    );
    // For `cargo xtask bench active`.
    log!("bench active_dht_{}pct_inserts: {} inserts", pct, n);
    log!("bench active_dht_{}pct_collisions: {} inserts", pct, collisions);
    log!("bench active_dht_{}pct_aa_remote_ops: {} ops", pct, aa_ops);
    log!("bench active_dht_{}pct_rma_remote_ops: {} ops", pct, rma_ops);
    log!("bench active_dht_{}pct_aa_us: {} us", pct, aa_us);
    log!("bench active_dht_{}pct_rma_us: {} us", pct, rma_us);
    Ok(0)
}

fn inserter(m: &Member, owner: u16, index: u8, inserters: u8, pct: u8) -> Result<u64, Error> {
    let rdma = unimem_user::rdma::open()?;
    let base = m.address()?;
    let (rma, flush_page) = (base + VOLUME_BYTES, base + 2 * VOLUME_BYTES);
    let local = sys::map_buffer(IN_FLIGHT * 64)?;
    let mine = || share(seed_of(pct), pct, DHT_INSERTS, index, inserters);

    // Active Access: one put per insert into its bucket's cell, `IN_FLIGHT` at a time.
    ensure!(m.phase()? == AA_PUTS, 10, "phase");
    let mut elems = [0u64; DHT_INSERTS];
    let mut count = 0;
    for (slot, e) in elems.iter_mut().zip(mine()) {
        *slot = e;
        count += 1;
    }
    for chunk in elems[..count].chunks(IN_FLIGHT) {
        for (j, e) in chunk.iter().enumerate() {
            local[j * 64..j * 64 + 8].copy_from_slice(&e.to_le_bytes());
        }
        let mut transfers: [Option<unimem_user::rdma::Transfer<'_, _>>; IN_FLIGHT] = Default::default();
        for (j, e) in chunk.iter().enumerate() {
            transfers[j] = Some(rdma.write(&local[j * 64..j * 64 + 8], owner, aa_slot(base, *e))?);
        }
        for t in transfers.iter().flatten() {
            t.wait(TRANSFER_US)?;
        }
    }
    m.report(count as u64)?;
    // Every inserter's puts are acknowledged: the flush waits for the owner's handler only.
    ensure!(m.phase()? == AA_FLUSH, 10, "phase");
    flush(&rdma, owner, flush_page, TRANSFER_US)?;
    m.report(0)?;

    // The RMA baseline (Listing 2).
    ensure!(m.phase()? == RMA, 10, "phase");
    let mut ops = 0;
    for &e in &elems[..count] {
        match remote_insert(&rdma, local, owner, rma, e, TRANSFER_US)? {
            Ok(n) => ops += n,
            Err(_) => ensure!(false, 11, "the RMA volume overflowed"),
        }
    }
    m.report(ops)?;
    Ok(0)
}
