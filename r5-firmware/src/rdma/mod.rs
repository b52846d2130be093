//! The RDMA scheduler (`docs/hw/pldma.md`, "The R5's rules"; seed 002 §1.3.2, §3.2.3.3): it
//! takes WQEs from the registered PDs' work queues, cuts transfers into blocks, keeps a bounded
//! number of blocks of each transfer in flight on the PLDMA, tracks their ACKs, NACKs and
//! page-fault NACKs, retransmits on timeouts, RAPFs and local fault messages, serves remote
//! reads, and posts exactly one CQE per transfer.
//!
//! Pure logic with fixed-capacity tables, no allocation: the image gives it an [`Engine`] (the
//! descriptor ring and two registers), a [`QueueMemory`] (queue-set addresses to references) and
//! the time; host tests give it fakes.

pub mod area;
mod events;
mod pds;
mod requests;
mod tids;
mod transfers;

pub use tids::MAX_TIDS;

use hal::pldma::descriptor::{Attempt, RawDescriptor};
use hal::pldma::{PDS, Pd};
use pds::PdState;
use proto::rdma::ipc::{RdmaConfig, RdmaStats};
use proto::rdma::queue::{CqeStatus, QueueSet};
use tids::{Tids, TxnState};
use transfers::Transfers;

/// What the scheduler needs of the engine.
pub trait Engine {
    /// Posts a descriptor as the ring holds it; false if the ring is full (the scheduler then
    /// counts it as lost: the block's timeout sends it again).
    fn post(&mut self, d: &RawDescriptor) -> bool;
    /// `cq_notify`: wake PD `pd`'s process.
    fn notify_cq(&mut self, pd: Pd);
}

/// Where queue sets are.
pub trait QueueMemory<'q> {
    /// The queue set at `pa`, if `pa` may hold one (page aligned inside the queue area).
    fn queue_set(&self, pa: u64) -> Option<&'q QueueSet>;
}

pub struct Scheduler<'q> {
    node: u16,
    nodes: u16,
    config: RdmaConfig,
    clock_hz: u64,
    timeout_ticks: u64,
    pds: [PdState<'q>; PDS],
    transfers: Transfers,
    tids: Tids,
    stats: RdmaStats,
    /// Where the last round of WQ intake and block dispatch started (fairness).
    next_pd: usize,
    /// Bit `p`: PD `p` has registered queues (the rounds look at these PDs only).
    registered: u16,
    /// Bit `p`: CQEs were posted to PD `p` since the last wake-up check.
    posted: u16,
    next_transfer: u8,
}

impl Default for Scheduler<'_> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'q> Scheduler<'q> {
    /// A scheduler that is not started. Its bytes are all zero, so the firmware keeps it in
    /// .bss (it is too big for a stack, and an initialiser image would cost TCM).
    pub const fn new() -> Self {
        Self {
            node: 0,
            nodes: 0,
            config: RdmaConfig { timeout_us: 0, window: 0, max_timeouts: 0, max_nack_retries: 0 },
            clock_hz: 0,
            timeout_ticks: 0,
            pds: [const { PdState::EMPTY }; PDS],
            transfers: Transfers::new(),
            tids: Tids::new(),
            stats: RdmaStats::ZERO,
            next_pd: 0,
            registered: 0,
            posted: 0,
            next_transfer: 0,
        }
    }

    /// Starts it as node `node` of `nodes`, with time in ticks of a `clock_hz` clock.
    pub fn start(&mut self, node: u16, nodes: u16, config: RdmaConfig, clock_hz: u64) {
        (self.node, self.nodes, self.clock_hz) = (node, nodes, clock_hz);
        self.set_config(config);
    }

    pub fn config(&self) -> RdmaConfig {
        self.config
    }

    fn set_config(&mut self, config: RdmaConfig) {
        self.config = config;
        self.timeout_ticks = crate::clock::ticks(config.timeout_us, self.clock_hz);
    }

    pub fn stats(&self) -> &RdmaStats {
        &self.stats
    }

    /// A signature of the work done so far: it changes whenever a round took a WQE, sent or
    /// retransmitted a block, or ended a transfer (what "a round with work" means for the
    /// R5's cost counters). A wrapping sum of the counters' low words: a round moves them by far
    /// less than 2^32, and 32-bit additions are what the R5 does in one instruction.
    pub fn work_signature(&self) -> u32 {
        let s = &self.stats;
        [
            s.transfers_started,
            s.blocks_sent,
            s.blocks_acked,
            s.transfers_completed,
            s.transfers_failed,
            s.timeout_retransmits,
            s.read_requests_served,
        ]
        .iter()
        .fold(0u32, |sum, &c| sum.wrapping_add(c as u32))
    }

    /// Adds one round with work that took `cycles` of the R5's cycle counter.
    pub fn note_busy_round(&mut self, cycles: u64) {
        self.stats.busy_cycles += cycles;
        self.stats.busy_rounds += 1;
    }

    /// The R5's forwarded accesses so far and the cycles their handler took, for `RDMA_STATS`
    /// page 3.
    pub fn note_forwarded(&mut self, accesses: u64, cycles: u64) {
        self.stats.forwarded_accesses = accesses;
        self.stats.forwarded_cycles = cycles;
    }

    /// A new kernel boot: every registration and transfer is forgotten (tids keep their seqs).
    pub fn reset(&mut self) {
        for pd in 0..PDS as u16 {
            if let Some(pd) = Pd::new(pd) {
                self.forget(pd);
            }
        }
    }

    /// When the scheduler next needs to run without news: the earliest timeout.
    pub fn next_deadline(&self) -> Option<u64> {
        self.tids.next_deadline()
    }

    /// Takes WQEs, sends blocks, handles timeouts, posts CQEs and wakes processes.
    pub fn poll(&mut self, engine: &mut impl Engine, now: u64) {
        self.timeouts(engine, now);
        self.take_work(engine);
        self.dispatch(engine, now);
        self.complete(engine);
    }

    /// Sends every block it may: up to `window` per transfer, in turn (starting where tids
    /// last ran out, so that every transfer gets its share).
    fn dispatch(&mut self, engine: &mut impl Engine, now: u64) {
        let deadline = now.saturating_add(self.timeout_ticks);
        for i in self.transfers.used().iter_from(self.next_transfer) {
            if self.tids.available() == 0 {
                self.next_transfer = i;
                return;
            }
            self.dispatch_transfer(engine, i, deadline);
        }
    }

    /// Sends transfer `i`'s next blocks while its window and the tids allow, with timeouts at
    /// `deadline`.
    fn dispatch_transfer(&mut self, engine: &mut impl Engine, i: u8, deadline: u64) {
        let Some(t) = self.transfers.get_mut(i) else { return };
        while !t.ended && t.next < t.blocks && t.in_flight < self.config.window && !t.fenced(t.next) {
            let block = t.next;
            let Some((tid, seq)) = self.tids.alloc_armed(i, block, deadline) else { return };
            t.next += 1;
            t.in_flight += 1;
            self.stats.blocks_sent += 1;
            let attempt = Attempt { pd: t.pd, tid, seq, first_seq: seq };
            post_block(engine, &mut self.stats, t, block, attempt);
        }
    }

    /// Posts the current attempt of `tid` and arms its timeout.
    fn send(&mut self, engine: &mut impl Engine, tid: u16, now: u64) {
        let Some(txn) = self.tids.get(tid).copied() else { return };
        let Some(t) = self.transfers.get(txn.transfer) else { return };
        let attempt = Attempt { pd: t.pd, tid, seq: txn.seq, first_seq: txn.first_seq };
        self.tids.arm(tid, now.saturating_add(self.timeout_ticks));
        post(engine, &mut self.stats, t.descriptor(txn.block, attempt));
    }

    /// A new attempt of `tid`'s block, at once.
    fn retransmit(&mut self, engine: &mut impl Engine, tid: u16, now: u64) {
        if let Some(txn) = self.tids.get_mut(tid) {
            txn.seq = hal::pldma::seq_next(txn.seq);
            self.send(engine, tid, now);
        }
    }

    fn timeouts(&mut self, engine: &mut impl Engine, now: u64) {
        while let Some(tid) = self.tids.expired(now) {
            let Some(txn) = self.tids.get_mut(tid) else { continue };
            txn.timeouts = txn.timeouts.saturating_add(1);
            if txn.timeouts > self.config.max_timeouts {
                let transfer = txn.transfer;
                self.fail(transfer, CqeStatus::Timeout);
            } else {
                self.stats.timeout_retransmits += 1;
                if txn.state == TxnState::Paused {
                    self.stats.paused_timeouts += 1;
                }
                self.retransmit(engine, tid, now);
            }
        }
    }

    /// Ends transfer `i` with `status` at once: its blocks in flight are forgotten, so their
    /// late messages are stale.
    fn fail(&mut self, i: u8, status: CqeStatus) {
        self.tids.free_transfer(i);
        self.transfers.end(i, status);
    }
}

/// Posts `d` (`None`: a block that cannot be cut, never in practice); a descriptor the ring
/// has no room for is counted as dropped (its timeout sends it again).
fn post(engine: &mut impl Engine, stats: &mut RdmaStats, d: Option<RawDescriptor>) {
    if !d.is_some_and(|d| engine.post(&d)) {
        stats.descriptors_dropped += 1;
    }
}

/// Posts the descriptor of `attempt` of `t`'s block `block`: out of line, so that the
/// descriptor is built with registers of its own, straight into its ring slot.
#[inline(never)]
fn post_block(engine: &mut impl Engine, stats: &mut RdmaStats, t: &transfers::Transfer, block: u32, attempt: Attempt) {
    post(engine, stats, t.descriptor(block, attempt));
}

#[cfg(test)]
mod tests;
