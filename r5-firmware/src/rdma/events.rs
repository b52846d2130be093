//! What the engine reports (`docs/hw/pldma.md`, "Event kinds"), checked before anything is
//! done: the transaction must be live, of the message's PD, spoken of by a node that has a say
//! in it, and (except for ACKs, which any attempt of the block may earn) about its current
//! attempt. Everything else is counted as stale or foreign and ignored.

use super::tids::TxnState;
use super::{Engine, Scheduler};
use hal::pldma::codes::{NackCode, PfNackCode, RapfAction};
use hal::pldma::descriptor::{Descriptor, WriteKind};
use hal::pldma::event::{Event, RawEvent, TxnRef, kind};
use hal::pldma::seq_within;
use proto::rdma::ipc::RdmaStatus;
use proto::rdma::queue::{CqeStatus, Direction};

/// Why a message about a transaction is ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ignored {
    /// About an attempt that is not the current one, or a transaction that ended.
    Stale,
    /// The PD or the node does not belong to the transaction (or the claimed PD is not the wired
    /// one).
    Foreign,
}

impl From<Ignored> for RdmaStatus {
    fn from(i: Ignored) -> Self {
        match i {
            Ignored::Stale => RdmaStatus::Stale,
            Ignored::Foreign => RdmaStatus::Foreign,
        }
    }
}

/// A block paused on a page fault times out after this many timeouts: the kernel's fault path
/// (on QEMU, forwarded FIFO reads under a busy host) may take longer than a lost packet's
/// retransmission should wait, and a timeout there would be a retransmission for nothing.
pub const PAUSED_TIMEOUTS: u64 = 20;

impl<'q> Scheduler<'q> {
    pub fn on_event(&mut self, raw: &RawEvent, engine: &mut impl Engine, now: u64) {
        if raw.kind == kind::ACK {
            // One per block: checked and handled without the decoded enum.
            let result = match raw.ack() {
                Ok((node, txn)) => self.ack(node, txn),
                Err(_) => {
                    self.stats.malformed_events += 1;
                    return;
                }
            };
            self.count_ignored(result);
            return;
        }
        let Ok(event) = Event::decode(raw) else {
            self.stats.malformed_events += 1;
            return;
        };
        let result = match event {
            Event::Ack { node, txn } => self.ack(node, txn),
            Event::Nack { node, txn, code, .. } => self.nack(engine, node, txn, code, now),
            Event::PfNack { node, txn, code: PfNackCode::Resumed, .. } => self.resumed(node, txn, now),
            Event::PfNack { node, txn, .. } => self.pf_nack(node, txn, now),
            Event::Rapf { node, txn, claimed, action } => {
                let r = self.fault_resolved(engine, node, txn, claimed, action, now);
                if r.is_ok() && action == RapfAction::Retry {
                    self.stats.rapf_retransmits += 1;
                }
                r
            }
            Event::ReadRequest { node, attempt, src, dst, len } => {
                // Served at once, with no state here: the requester owns the transaction.
                let d = if self.pd(attempt.pd).queues.is_some() {
                    self.stats.read_requests_served += 1;
                    Descriptor::WriteBlock { vc: 0, attempt, node, src, dst, len, kind: WriteKind::ReadResponse }
                } else {
                    self.stats.read_requests_refused += 1;
                    let (pd, tid, seq) = (attempt.pd, attempt.tid, attempt.seq);
                    Descriptor::Nack { vc: 0, pd, tid, seq, node, code: NackCode::NoPd }
                };
                if !engine.post(&d.encode()) {
                    self.stats.descriptors_dropped += 1;
                }
                Ok(())
            }
            // The WQs are polled at every round (`take_work`): a doorbell only woke the loop.
            Event::Doorbell { .. } => Ok(()),
            Event::RemoteNotify { node, pd, imm } => {
                self.remote_write(engine, pd, node, imm);
                Ok(())
            }
            Event::DescRefused { pd, tid, seq, .. } => {
                self.stats.descriptors_refused += 1;
                self.refused(pd, tid, seq)
            }
        };
        self.count_ignored(result);
    }

    fn count_ignored(&mut self, result: Result<(), Ignored>) {
        match result {
            Ok(()) => {}
            Err(Ignored::Stale) => self.stats.stale_messages += 1,
            Err(Ignored::Foreign) => self.stats.foreign_messages += 1,
        }
    }

    /// The live transaction `txn.tid` of `txn.pd`, with its transfer index, if `node` has a
    /// say in it.
    fn check(&self, node: u16, txn: TxnRef) -> Result<u8, Ignored> {
        let t = self.tids.get(txn.tid).ok_or(Ignored::Stale)?;
        let transfer = self.transfers.get(t.transfer).ok_or(Ignored::Stale)?;
        if transfer.pd != txn.pd || !transfer.involves(self.node, node) {
            return Err(Ignored::Foreign);
        }
        Ok(t.transfer)
    }

    /// `check`, and the message is about the current attempt.
    fn check_current(&self, node: u16, txn: TxnRef) -> Result<u8, Ignored> {
        let i = self.check(node, txn)?;
        match self.tids.get(txn.tid) {
            Some(t) if t.seq == txn.seq => Ok(i),
            _ => Err(Ignored::Stale),
        }
    }

    /// An ACK from the node that writes the block (which has a say in it), for any attempt of
    /// the block: the block is done, and its tid free.
    #[inline(always)]
    fn ack(&mut self, node: u16, txn: TxnRef) -> Result<(), Ignored> {
        let t = self.tids.get(txn.tid).ok_or(Ignored::Stale)?;
        let (i, first_seq, seq) = (t.transfer, t.first_seq, t.seq);
        let me = self.node;
        let transfer = self.transfers.get_mut(i).ok_or(Ignored::Stale)?;
        if transfer.pd != txn.pd || transfer.writer(me) != node {
            return Err(Ignored::Foreign);
        }
        if !seq_within(txn.seq, first_seq, seq) {
            return Err(Ignored::Stale);
        }
        transfer.in_flight = transfer.in_flight.saturating_sub(1);
        transfer.acked += 1;
        let done = transfer.acked == transfer.blocks;
        self.tids.free(txn.tid);
        self.stats.blocks_acked += 1;
        if done {
            self.transfers.end(i, CqeStatus::Ok);
        }
        Ok(())
    }

    fn nack(
        &mut self,
        engine: &mut impl Engine,
        node: u16,
        txn: TxnRef,
        code: NackCode,
        now: u64,
    ) -> Result<(), Ignored> {
        let i = self.check_current(node, txn)?;
        let Some(direction) = self.transfers.get(i).map(|t| t.wqe.direction) else { return Err(Ignored::Stale) };
        let status = match (code, direction) {
            (NackCode::NoPd, _) => {
                self.fail(i, CqeStatus::NoRemotePd);
                return Ok(());
            }
            (NackCode::WriteError, Direction::Write) | (NackCode::ReadError, Direction::Read) => CqeStatus::RemoteError,
            (NackCode::WriteError, Direction::Read) | (NackCode::ReadError, Direction::Write) => CqeStatus::LocalError,
        };
        let Some(t) = self.tids.get_mut(txn.tid) else { return Err(Ignored::Stale) };
        t.nacks = t.nacks.saturating_add(1);
        if t.nacks > self.config.max_nack_retries {
            self.fail(i, status);
        } else {
            self.stats.nack_retransmits += 1;
            self.retransmit(engine, txn.tid, now);
        }
        Ok(())
    }

    /// Paused: the kernel resolves the fault and its RAPF or fault message retransmits the
    /// block. The paused timeout ([`PAUSED_TIMEOUTS`] timeouts long) stays armed as the safety
    /// net, for an answer that never comes.
    fn pf_nack(&mut self, node: u16, txn: TxnRef, now: u64) -> Result<(), Ignored> {
        self.check_current(node, txn)?;
        self.stats.pf_nacks += 1;
        let deadline = now.saturating_add(self.timeout_ticks.saturating_mul(PAUSED_TIMEOUTS));
        self.tids.pause(txn.tid, deadline);
        Ok(())
    }

    /// The engine that held the block's stalled accesses let them go (RESUME retry): the block
    /// is in flight again, under its ordinary timeout from now.
    fn resumed(&mut self, node: u16, txn: TxnRef, now: u64) -> Result<(), Ignored> {
        self.check_current(node, txn)?;
        let paused = self.tids.get(txn.tid).is_some_and(|t| t.state == TxnState::Paused);
        if paused {
            self.stats.stalls_resumed += 1;
            self.tids.arm(txn.tid, now.saturating_add(self.timeout_ticks));
        }
        Ok(())
    }

    /// A RAPF (from `node`'s PD page) or this node's kernel: the fault of `txn` is resolved.
    pub(super) fn fault_resolved(
        &mut self,
        engine: &mut impl Engine,
        node: u16,
        txn: TxnRef,
        claimed: u16,
        action: RapfAction,
        now: u64,
    ) -> Result<(), Ignored> {
        if claimed != txn.pd.raw() {
            return Err(Ignored::Foreign);
        }
        let i = self.check_current(node, txn)?;
        match action {
            RapfAction::Retry => self.retransmit(engine, txn.tid, now),
            RapfAction::Abort => {
                let status = if node == self.node { CqeStatus::FaultLocal } else { CqeStatus::FaultRemote };
                self.fail(i, status);
            }
        }
        Ok(())
    }

    fn refused(&mut self, pd: u16, tid: u16, seq: u16) -> Result<(), Ignored> {
        let pd = hal::pldma::Pd::new(pd).ok_or(Ignored::Foreign)?;
        let i = self.check_current(self.node, TxnRef { pd, tid, seq })?;
        self.fail(i, CqeStatus::EngineRefused);
        Ok(())
    }
}
