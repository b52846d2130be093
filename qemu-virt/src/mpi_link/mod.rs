//! The link between the ranks of one emulated cluster spread over several hosts, over MPI
//! (feature `mpi`; `docs/architecture.md`, "Between hosts: the MPI link").
//!
//! One `qemu-virt` runs per MPI rank. The link gives the rest of the crate:
//!
//! - this process's rank and the rank count ([`Link::rank`], [`Link::ranks`]);
//! - one-way messages ([`Link::send`]: owned bytes and a [`Kind`]), which return at once
//!   whatever the peer is doing;
//! - request and reply ([`Link::call`]): the calling thread waits for the peer's answer, up to a
//!   timeout; any number of threads may each wait for their own, matched by a request number;
//! - a progress thread ([`Link::serve`]) that receives from every rank and hands each message to
//!   the user's [`Handler`], which answers requests through a [`Reply`];
//! - the detection of a rank that is gone: every rank hears from every other at least every
//!   `heartbeat`, and one silent for `lost_after` is lost: the calls waiting for it fail then
//!   with [`LinkError::RankLost`], later ones at once, and the handler is told
//!   ([`Handler::rank_lost`]);
//! - a clean end ([`Link::shutdown`]): every rank says goodbye and waits for everyone's goodbye
//!   (or loss) before leaving, so that no rank leaves while another may still ask it something.
//!
//! MPI is called from every thread that sends, so the library must give `MPI_THREAD_MULTIPLE`.
//! The message format is in [`frame`].

pub mod frame;
mod progress;
mod rank_link;
mod raw;

use frame::{Class, Trailer};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{RecvTimeoutError, SyncSender, sync_channel};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::thread::{JoinHandle, ThreadId};
use std::time::{Duration, Instant};
use thiserror::Error;

pub use rank_link::{MpiRankLink, RANKS_KIND};
pub use raw::MpiError;

/// An MPI rank: one process of the cluster, on some host.
pub type Rank = usize;
/// The user's kind of message, carried with it and echoed by a reply.
pub type Kind = u16;

/// How a rank watches the others.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkConfig {
    /// How often a rank tells every other that it is alive.
    pub heartbeat: Duration,
    /// After how long without a word from a rank it counts as lost. Generous by default: a rank
    /// whose host is busy with its QEMUs may be late, and a rank lost by mistake is lost for good.
    pub lost_after: Duration,
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig { heartbeat: Duration::from_millis(250), lost_after: Duration::from_secs(5) }
    }
}

impl LinkConfig {
    /// Whether a rank can be watched so: a heartbeat, and room for at least two of them before a
    /// rank counts as lost.
    pub fn check(&self) -> Result<(), LinkError> {
        if self.heartbeat.is_zero() || self.lost_after < 2 * self.heartbeat {
            return Err(LinkError::Init(format!(
                "lost_after ({:?}) must be at least twice the heartbeat ({:?}), which must not be zero",
                self.lost_after, self.heartbeat
            )));
        }
        Ok(())
    }
}

/// Why the link could not do what was asked.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum LinkError {
    #[error("cannot start the MPI link: {0}")]
    Init(String),
    #[error("rank {rank} does not exist: the job has {ranks} ranks")]
    NoSuchRank { rank: Rank, ranks: usize },
    #[error("rank {0} is lost: its host or its process is gone")]
    RankLost(Rank),
    #[error("rank {rank} did not answer within {after:?}")]
    Timeout { rank: Rank, after: Duration },
    #[error("rank {rank} could not answer: {why}")]
    Refused { rank: Rank, why: String },
    #[error("a payload of {0} bytes is too large for one MPI message")]
    TooLarge(usize),
    #[error("a handler may not wait for a reply: it runs on the progress thread, which receives it")]
    OnProgressThread,
    #[error("the link is not serving: call `serve` first")]
    NotServing,
    #[error("the link has shut down")]
    ShutDown,
    #[error("MPI, on the way to rank {rank}: {error}")]
    Mpi { rank: Rank, error: MpiError },
}

/// What the user of the link does with what arrives. Every method runs on the progress thread:
/// it must return soon (hand long work to another thread) and must not [`Link::call`].
pub trait Handler: Send + Sync + 'static {
    /// A message sent with [`Link::send`].
    fn message(&self, from: Rank, kind: Kind, payload: Vec<u8>);
    /// A request sent with [`Link::call`]: answer it through `reply`, now or later, from any
    /// thread. A reply dropped unanswered answers "refused".
    fn request(&self, from: Rank, kind: Kind, payload: Vec<u8>, reply: Reply);
    /// `rank` was found lost; its pending calls have already failed.
    fn rank_lost(&self, _rank: Rank) {}
}

/// The answer a handler owes to one request.
pub struct Reply {
    shared: Arc<Shared>,
    to: Rank,
    kind: Kind,
    id: u64,
    answered: bool,
}

impl Reply {
    /// Who asked.
    pub fn from(&self) -> Rank {
        self.to
    }

    /// Answers with `payload` (sent at once, like [`Link::send`]).
    pub fn send(mut self, payload: Vec<u8>) -> Result<(), LinkError> {
        self.answered = true;
        self.shared.send_frame(self.to, Trailer { class: Class::Reply, kind: self.kind, id: self.id }, payload)
    }

    /// Answers that there is no answer, and why: the caller's [`LinkError::Refused`].
    pub fn refuse(mut self, why: &str) -> Result<(), LinkError> {
        self.answered = true;
        self.shared.refuse(self.to, self.kind, self.id, why)
    }
}

impl Drop for Reply {
    fn drop(&mut self) {
        if !self.answered {
            let _ = self.shared.refuse(self.to, self.kind, self.id, "the handler dropped the request");
        }
    }
}

/// How the link ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ended {
    /// The ranks found lost during the run, in rank order.
    pub lost: Vec<Rank>,
    /// Whether MPI was finalised. It is not when a rank was lost or a send never completed:
    /// `MPI_Finalize` could then wait for the lost rank for ever, so the process just leaves.
    pub finalized: bool,
}

/// One rank's link to the others. Share it between threads by reference or in an `Arc`.
pub struct Link {
    shared: Arc<Shared>,
    progress: Mutex<Option<JoinHandle<()>>>,
    /// Dropping it finalises MPI; `None` once that has been decided.
    universe: Option<mpi::environment::Universe>,
}

/// What the link's threads share.
struct Shared {
    rank: Rank,
    ranks: usize,
    /// The watch's heartbeat and lost_after, in nanoseconds, as [`Link::init`] set them or
    /// [`Link::set_watch`] last changed them.
    heartbeat_ns: AtomicU64,
    lost_after_ns: AtomicU64,
    next_id: AtomicU64,
    /// Calls waiting for their answer, by request number.
    calls: Mutex<HashMap<u64, Waiting>>,
    /// What this rank knows of every rank (itself included).
    peers: Mutex<Vec<Peer>>,
    /// Sends not yet complete (the progress thread completes them).
    sends: Mutex<raw::Sends>,
    /// Set by `shutdown`: the progress thread says goodbye to every rank.
    leaving: AtomicBool,
    /// Set by the progress thread once it has.
    said_goodbye: AtomicBool,
    stop: AtomicBool,
    progress_thread: OnceLock<ThreadId>,
}

struct Waiting {
    rank: Rank,
    answer: SyncSender<Result<Vec<u8>, LinkError>>,
}

#[derive(Clone, Copy, Debug)]
struct Peer {
    last_heard: Instant,
    /// The longest it was silent, since the watch was last set.
    longest_silence: Duration,
    lost: bool,
    /// Whether the handler has been told of the loss.
    reported: bool,
    said_goodbye: bool,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere leaves the data consistent (every update is one assignment).
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Link {
    /// Initialises MPI (`MPI_THREAD_MULTIPLE`, errors returned rather than fatal). Messages that
    /// arrive before [`Link::serve`] wait in MPI.
    pub fn init(config: LinkConfig) -> Result<Link, LinkError> {
        config.check()?;
        let (universe, threading) = mpi::environment::initialize_with_threading(mpi::Threading::Multiple)
            .ok_or_else(|| LinkError::Init("MPI was already initialised in this process".into()))?;
        if threading != mpi::Threading::Multiple {
            return Err(LinkError::Init(format!(
                "the MPI library gives {threading:?} threads, the link needs MPI_THREAD_MULTIPLE ({})",
                mpi::environment::library_version().unwrap_or_default().lines().next().unwrap_or("")
            )));
        }
        raw::errors_return().map_err(|e| LinkError::Init(e.to_string()))?;
        use mpi::topology::Communicator;
        let world = universe.world();
        let (rank, ranks) = (world.rank() as Rank, world.size() as usize);
        let now = Instant::now();
        let peer = Peer {
            last_heard: now,
            longest_silence: Duration::ZERO,
            lost: false,
            reported: false,
            said_goodbye: false,
        };
        let shared = Shared {
            rank,
            ranks,
            heartbeat_ns: AtomicU64::new(config.heartbeat.as_nanos() as u64),
            lost_after_ns: AtomicU64::new(config.lost_after.as_nanos() as u64),
            next_id: AtomicU64::new(1),
            calls: Mutex::new(HashMap::new()),
            peers: Mutex::new(vec![peer; ranks]),
            sends: Mutex::new(raw::Sends::default()),
            leaving: AtomicBool::new(false),
            said_goodbye: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            progress_thread: OnceLock::new(),
        };
        Ok(Link { shared: Arc::new(shared), progress: Mutex::new(None), universe: Some(universe) })
    }

    /// This process's rank.
    pub fn rank(&self) -> Rank {
        self.shared.rank
    }

    /// How many ranks the job has.
    pub fn ranks(&self) -> usize {
        self.shared.ranks
    }

    /// Starts the progress thread, which hands what arrives to `handler` (once).
    pub fn serve(&self, handler: Arc<dyn Handler>) -> Result<(), LinkError> {
        let mut progress = lock(&self.progress);
        if progress.is_some() || self.shared.stop.load(Ordering::Acquire) {
            return Err(LinkError::Init("the link is already serving".into()));
        }
        let now = Instant::now();
        lock(&self.shared.peers).iter_mut().for_each(|p| p.last_heard = now);
        let shared = self.shared.clone();
        let thread = std::thread::Builder::new()
            .name(format!("mpi-link-{}", self.shared.rank))
            .spawn(move || progress::run(shared, handler))
            .map_err(|e| LinkError::Init(format!("cannot start the progress thread: {e}")))?;
        let _ = self.shared.progress_thread.set(thread.thread().id());
        *progress = Some(thread);
        Ok(())
    }

    /// Sends `payload` to `to` as a message of `kind`; returns once MPI has it, without waiting
    /// for the peer. What one thread sends to a rank (messages, requests) arrives in the order
    /// it was sent, and is handled in that order.
    pub fn send(&self, to: Rank, kind: Kind, payload: Vec<u8>) -> Result<(), LinkError> {
        self.shared.send_frame(to, Trailer { class: Class::Message, kind, id: 0 }, payload)
    }

    /// Sends a request of `kind` to `to` and waits for its answer, at most `timeout`.
    pub fn call(&self, to: Rank, kind: Kind, payload: Vec<u8>, timeout: Duration) -> Result<Vec<u8>, LinkError> {
        if self.shared.progress_thread.get().is_none() {
            return Err(LinkError::NotServing);
        }
        if self.shared.progress_thread.get() == Some(&std::thread::current().id()) {
            return Err(LinkError::OnProgressThread);
        }
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let (answer, answered) = sync_channel(1);
        // Registered before it is sent (the answer may come at once), and before the rank's
        // state is looked at, so that a loss found meanwhile fails this call too.
        lock(&self.shared.calls).insert(id, Waiting { rank: to, answer });
        if let Err(e) = self.shared.send_frame(to, Trailer { class: Class::Request, kind, id }, payload) {
            lock(&self.shared.calls).remove(&id);
            return Err(e);
        }
        match answered.recv_timeout(timeout) {
            Ok(answer) => answer,
            Err(RecvTimeoutError::Timeout) => match lock(&self.shared.calls).remove(&id) {
                Some(_) => Err(LinkError::Timeout { rank: to, after: timeout }),
                // Answered between the timeout and the removal.
                None => answered.try_recv().unwrap_or(Err(LinkError::Timeout { rank: to, after: timeout })),
            },
            Err(RecvTimeoutError::Disconnected) => Err(LinkError::ShutDown),
        }
    }

    /// The ranks found lost so far, in rank order.
    pub fn lost_ranks(&self) -> Vec<Rank> {
        self.shared.lost_ranks()
    }

    /// Watches the ranks as `config` says from now on: a heartbeat that often, and a rank silent
    /// for `lost_after` lost (one already silent that long is lost at the progress thread's next
    /// look; set the faster heartbeat at least `lost_after` before anyone relies on it, as every
    /// rank does when it sets the same watch at the same point). A program whose ranks are silent
    /// for long only while they start (a rank starting its QEMUs serves no link) starts generous
    /// and tightens the watch once every rank is up, so that a rank that dies is found within
    /// seconds.
    pub fn set_watch(&self, config: LinkConfig) -> Result<(), LinkError> {
        config.check()?;
        // The heartbeat first: a peer that tightened its watch already hears this rank at once.
        self.shared.heartbeat_ns.store(config.heartbeat.as_nanos() as u64, Ordering::Release);
        self.shared.lost_after_ns.store(config.lost_after.as_nanos() as u64, Ordering::Release);
        lock(&self.shared.peers).iter_mut().for_each(|p| p.longest_silence = Duration::ZERO);
        Ok(())
    }

    /// By rank, the longest it was silent since the watch was set (or the link began): how close
    /// the watch came to losing it (zero for this rank).
    pub fn longest_silences(&self) -> Vec<Duration> {
        lock(&self.shared.peers).iter().map(|p| p.longest_silence).collect()
    }

    /// How the link watches the ranks now.
    pub fn watch(&self) -> LinkConfig {
        LinkConfig { heartbeat: self.shared.heartbeat(), lost_after: self.shared.lost_after() }
    }

    /// Ends the link: says goodbye to every rank, keeps serving until every other rank has said
    /// goodbye or is lost, stops the progress thread, lets the last sends complete and finalises
    /// MPI if no rank was lost. Call it when this rank will send nothing new; it waits for the
    /// slowest rank to do the same.
    pub fn shutdown(mut self) -> Result<Ended, LinkError> {
        if lock(&self.progress).is_none() {
            self.serve(Arc::new(Refuser))?;
        }
        // The progress thread says goodbye, after its last heartbeat to each rank.
        self.shared.leaving.store(true, Ordering::Release);
        while !self.shared.everyone_left() {
            std::thread::sleep(Duration::from_millis(1));
        }
        self.stop_progress();
        let deadline = Instant::now() + self.shared.lost_after();
        while !self.shared.only_sends_to_lost_ranks_left() && Instant::now() < deadline {
            self.shared.reap_sends();
            std::thread::sleep(Duration::from_millis(1));
        }
        let lost = self.shared.lost_ranks();
        let finalized = lost.is_empty() && lock(&self.shared.sends).destinations().next().is_none();
        let universe = self.universe.take();
        if finalized {
            drop(universe);
        } else {
            std::mem::forget(universe);
        }
        Ok(Ended { lost, finalized })
    }

    fn stop_progress(&self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(thread) = lock(&self.progress).take() {
            let _ = thread.join();
        }
        // Whoever still waits for an answer will not get one.
        lock(&self.shared.calls).clear();
    }
}

impl Drop for Link {
    /// Without [`Link::shutdown`] (an error path): stops serving and leaves MPI unfinalised, so
    /// that the process can exit whatever the other ranks do.
    fn drop(&mut self) {
        self.stop_progress();
        std::mem::forget(self.universe.take());
    }
}

/// The handler of a link that shuts down without having served.
struct Refuser;

impl Handler for Refuser {
    fn message(&self, _: Rank, _: Kind, _: Vec<u8>) {}
    fn request(&self, _: Rank, _: Kind, _: Vec<u8>, reply: Reply) {
        let _ = reply.refuse("this rank is shutting down");
    }
}

impl Shared {
    fn send_frame(&self, to: Rank, trailer: Trailer, payload: Vec<u8>) -> Result<(), LinkError> {
        if to >= self.ranks {
            return Err(LinkError::NoSuchRank { rank: to, ranks: self.ranks });
        }
        if payload.len() > i32::MAX as usize - frame::TRAILER_LEN {
            return Err(LinkError::TooLarge(payload.len()));
        }
        if lock(&self.peers)[to].lost {
            return Err(LinkError::RankLost(to));
        }
        // Under the lock, so that the request and its buffer are recorded together.
        let sent = lock(&self.sends).isend(frame::seal(payload, trailer), to, frame::tag(trailer.class));
        match sent {
            Ok(()) => Ok(()),
            Err(error) => {
                self.lose(to);
                Err(LinkError::Mpi { rank: to, error })
            }
        }
    }

    fn refuse(&self, to: Rank, kind: Kind, id: u64, why: &str) -> Result<(), LinkError> {
        self.send_frame(to, Trailer { class: Class::Failure, kind, id }, why.as_bytes().to_vec())
    }

    /// Completes the sends that are done; how many did. A send that failed loses its rank.
    fn reap_sends(&self) -> usize {
        let (done, failed) = lock(&self.sends).reap();
        for rank in failed {
            self.lose(rank);
        }
        done
    }

    /// Whether every send not yet complete goes to a lost rank (and never will).
    fn only_sends_to_lost_ranks_left(&self) -> bool {
        let peers = lock(&self.peers);
        lock(&self.sends).destinations().all(|to| peers[to].lost)
    }

    /// Marks `rank` lost and fails the calls waiting for it.
    fn lose(&self, rank: Rank) {
        {
            let mut peers = lock(&self.peers);
            if peers[rank].lost {
                return;
            }
            peers[rank].lost = true;
        }
        let mut calls = lock(&self.calls);
        calls.retain(|_, w| {
            if w.rank != rank {
                return true;
            }
            let _ = w.answer.try_send(Err(LinkError::RankLost(rank)));
            false
        });
    }

    /// Whether this rank and every other have said goodbye (or are lost): nothing new will be
    /// sent by anyone, so this rank may stop serving.
    fn everyone_left(&self) -> bool {
        self.said_goodbye.load(Ordering::Acquire)
            && lock(&self.peers).iter().enumerate().all(|(r, p)| r == self.rank || p.said_goodbye || p.lost)
    }

    /// Whether this rank still watches `peer` and tells it it is alive: until both have said
    /// goodbye (after that either may leave, silently).
    fn watches(&self, rank: Rank, peer: &Peer) -> bool {
        rank != self.rank && !peer.lost && !(peer.said_goodbye && self.said_goodbye.load(Ordering::Acquire))
    }

    fn heartbeat(&self) -> Duration {
        Duration::from_nanos(self.heartbeat_ns.load(Ordering::Acquire))
    }

    fn lost_after(&self) -> Duration {
        Duration::from_nanos(self.lost_after_ns.load(Ordering::Acquire))
    }

    fn lost_ranks(&self) -> Vec<Rank> {
        lock(&self.peers).iter().enumerate().filter(|(_, p)| p.lost).map(|(r, _)| r).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `init` and `set_watch` accept: a heartbeat, and at least two before a loss.
    #[test]
    fn a_rank_is_lost_only_after_two_heartbeats_at_least() {
        let ms = Duration::from_millis;
        assert_eq!(LinkConfig::default().check(), Ok(()));
        assert_eq!(LinkConfig { heartbeat: ms(250), lost_after: ms(500) }.check(), Ok(()));
        assert!(LinkConfig { heartbeat: ms(250), lost_after: ms(499) }.check().is_err());
        let zero = LinkConfig { heartbeat: Duration::ZERO, lost_after: ms(500) }.check().unwrap_err();
        assert!(zero.to_string().contains("must not be zero"), "{zero}");
    }
}
