//! The progress thread: receives from every rank, hands each message to the handler, completes
//! sends, says it is alive, finds the ranks that are not, and says goodbye when the link ends.
//!
//! MPI's blocking receive spins on a core (Open MPI and MPICH both poll), which a host running
//! QEMUs cannot spare, so the thread polls with `MPI_Improbe` instead: without a pause for
//! [`SPIN`] after the last message (longer, [`CALL_SPIN`], while a call waits for its answer or
//! a send to complete), then with pauses that grow with the quiet, up to [`MAX_PAUSE`] (an idle
//! link costs about a thousand probes a second).

use super::frame::{self, Class, Trailer};
use super::{Handler, LinkError, Rank, Reply, Shared, lock, raw};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// After traffic, the thread keeps polling without a pause this long.
const SPIN: Duration = Duration::from_micros(50);
/// While a call or a send waits, this long: a round trip over TCP takes tens of microseconds, one
/// to a busy host a millisecond or so; what waits longer (a held request, a send to a rank that
/// died) is not worth a core.
const CALL_SPIN: Duration = Duration::from_millis(2);
/// The most messages received in a row before the thread sees to its other duties.
const BATCH: usize = 64;
/// The longest pause of an idle link: the most a message waits before it is received.
const MAX_PAUSE: Duration = Duration::from_millis(1);

pub(super) fn run(shared: Arc<Shared>, handler: Arc<dyn Handler>) {
    let mut last_traffic = Instant::now();
    let mut last_heartbeat: Option<Instant> = None;
    let mut receive_failed = false;
    while !shared.stop.load(Ordering::Acquire) {
        let mut busy = false;
        // Heartbeats first, so that a backlog of one rank's messages does not hide the others'
        // (`frame`); then a bounded batch of the rest, so that a stream of messages does not hold
        // up this rank's own heartbeats (a peer would find it silent, and lose it) nor the
        // completion of sends.
        for (tag, batch) in [(frame::HEARTBEAT_TAG, usize::MAX), (frame::TAG, BATCH)] {
            for _ in 0..batch {
                match raw::try_receive(tag) {
                    Ok(Some((from, bytes))) => {
                        busy = true;
                        dispatch(&shared, handler.as_ref(), from, bytes);
                    }
                    Ok(None) => break,
                    Err(e) => {
                        // Said once: a failed probe (a rank gone, for MPICH) repeats every poll.
                        if !receive_failed {
                            eprintln!("mpi link, rank {}: {e}", shared.rank);
                            receive_failed = true;
                        }
                        break;
                    }
                }
            }
        }
        // A completed send is traffic too: a large one needs a few turns of MPI's progress.
        busy |= shared.reap_sends() > 0;
        if last_heartbeat.is_none_or(|t| t.elapsed() >= shared.heartbeat()) {
            heartbeat(&shared);
            last_heartbeat = Some(Instant::now());
        }
        if shared.leaving.load(Ordering::Acquire) && !shared.said_goodbye.load(Ordering::Acquire) {
            say_goodbye(&shared);
        }
        find_lost(&shared, handler.as_ref());
        if busy {
            last_traffic = Instant::now();
        }
        let quiet = last_traffic.elapsed();
        let waiting = !lock(&shared.calls).is_empty() || lock(&shared.sends).destinations().next().is_some();
        if quiet < SPIN || (quiet < CALL_SPIN && waiting) {
            std::thread::yield_now();
        } else {
            std::thread::sleep((quiet / 4).min(MAX_PAUSE));
        }
    }
}

fn dispatch(shared: &Arc<Shared>, handler: &dyn Handler, from: Rank, bytes: Vec<u8>) {
    if from >= shared.ranks {
        return;
    }
    {
        let mut peers = lock(&shared.peers);
        let (peer, now) = (&mut peers[from], Instant::now());
        peer.longest_silence = peer.longest_silence.max(now - peer.last_heard);
        peer.last_heard = now;
    }
    let (Trailer { class, kind, id }, payload) = match frame::open(bytes) {
        Ok(opened) => opened,
        Err(e) => {
            eprintln!("mpi link, rank {}: a message from rank {from} is refused: {e}", shared.rank);
            return;
        }
    };
    match class {
        Class::Message => {
            let delivered = catch_unwind(AssertUnwindSafe(|| handler.message(from, kind, payload)));
            if delivered.is_err() {
                eprintln!("mpi link, rank {}: the handler panicked on a message from rank {from}", shared.rank);
            }
        }
        Class::Request => {
            let reply = Reply { shared: shared.clone(), to: from, kind, id, answered: false };
            // A panicking handler drops the reply, which answers "refused".
            let _ = catch_unwind(AssertUnwindSafe(|| handler.request(from, kind, payload, reply)));
        }
        Class::Reply => answer(shared, from, id, Ok(payload)),
        Class::Failure => {
            let why = String::from_utf8_lossy(&payload).into_owned();
            answer(shared, from, id, Err(LinkError::Refused { rank: from, why }));
        }
        Class::Heartbeat => {}
        Class::Goodbye => lock(&shared.peers)[from].said_goodbye = true,
    }
}

/// Hands the answer to the call waiting for it; an answer whose call has timed out is dropped.
fn answer(shared: &Shared, from: Rank, id: u64, result: Result<Vec<u8>, LinkError>) {
    let mut calls = lock(&shared.calls);
    if calls.get(&id).is_some_and(|w| w.rank == from) {
        let waiting = calls.remove(&id).expect("looked up");
        let _ = waiting.answer.try_send(result);
    }
}

fn heartbeat(shared: &Shared) {
    let peers = lock(&shared.peers).clone();
    for rank in (0..shared.ranks).filter(|&r| shared.watches(r, &peers[r])) {
        let _ = shared.send_frame(rank, Trailer { class: Class::Heartbeat, kind: 0, id: 0 }, Vec::new());
    }
}

/// The last message to every rank that is not lost (but for answers still owed).
fn say_goodbye(shared: &Shared) {
    for rank in (0..shared.ranks).filter(|&r| r != shared.rank) {
        // A rank that cannot be told is, or will be found, lost.
        let _ = shared.send_frame(rank, Trailer { class: Class::Goodbye, kind: 0, id: 0 }, Vec::new());
    }
    shared.said_goodbye.store(true, Ordering::Release);
}

/// Loses the ranks watched and silent for `lost_after`, and tells the handler of every loss.
fn find_lost(shared: &Shared, handler: &dyn Handler) {
    let lost_after = shared.lost_after();
    let silent: Vec<Rank> = lock(&shared.peers)
        .iter()
        .enumerate()
        .filter(|(r, p)| shared.watches(*r, p) && p.last_heard.elapsed() > lost_after)
        .map(|(r, _)| r)
        .collect();
    for rank in silent {
        shared.lose(rank);
    }
    let unreported: Vec<Rank> = {
        let mut peers = lock(&shared.peers);
        peers
            .iter_mut()
            .enumerate()
            .filter(|(_, p)| p.lost && !p.reported)
            .map(|(r, p)| {
                p.reported = true;
                r
            })
            .collect()
    };
    for rank in unreported {
        if catch_unwind(AssertUnwindSafe(|| handler.rank_lost(rank))).is_err() {
            eprintln!("mpi link, rank {}: the handler panicked on the loss of rank {rank}", shared.rank);
        }
    }
}
