//! The registered PDs: their queues, the WQEs the scheduler takes from them, and the CQEs and
//! wake-ups it gives back (`docs/hw/pldma.md`, "Queue set", "Using the queues").

use super::transfers::{Channels, Transfer, bits};
use super::{Engine, Scheduler};
use core::sync::atomic::Ordering;
use hal::pldma::{PDS, Pd};
use proto::rdma::queue::{CQ_ENTRIES, Cqe, CqeStatus, QUEUE_SET_BYTES, QueueSet, Wqe};

pub struct PdState<'q> {
    pub queues: Option<&'q QueueSet>,
    pub pa: u64,
    /// Transfers taken and not yet completed (each holds a CQ slot).
    outstanding: u16,
    channels: Channels,
}

impl PdState<'_> {
    pub const EMPTY: Self = Self { queues: None, pa: 0, outstanding: 0, channels: Channels::EMPTY };
}

impl<'q> Scheduler<'q> {
    pub(super) fn pd(&self, pd: Pd) -> &PdState<'q> {
        &self.pds[pd.index()]
    }

    /// Starts serving `pd`'s queues at `pa` (already checked to be a queue-set address).
    pub(super) fn register(&mut self, pd: Pd, pa: u64, queues: &'q QueueSet) -> Result<(), RegisterError> {
        if self.pds[pd.index()].queues.is_some() {
            return Err(RegisterError::AlreadyRegistered);
        }
        let overlaps = self.pds.iter().any(|p| {
            p.queues.is_some() && pa < p.pa.saturating_add(QUEUE_SET_BYTES) && p.pa < pa.saturating_add(QUEUE_SET_BYTES)
        });
        if overlaps {
            return Err(RegisterError::Overlap);
        }
        self.pds[pd.index()] = PdState { queues: Some(queues), pa, ..PdState::EMPTY };
        self.registered |= pd.bit() as u16;
        // The scheduler looks at every registered WQ at every round: the process need not ring.
        queues.wq_polled.store(1, Ordering::Release);
        Ok(())
    }

    /// Stops serving `pd`: its transfers are dropped without CQEs (the queues are going away).
    pub(super) fn forget(&mut self, pd: Pd) -> bool {
        let was = self.pds[pd.index()].queues.is_some();
        for i in self.transfers.used().iter() {
            if self.transfers.get(i).is_some_and(|t| t.pd == pd) {
                self.tids.free_transfer(i);
                self.transfers.remove(i);
            }
        }
        if let Some(queues) = self.pds[pd.index()].queues {
            queues.wq_polled.store(0, Ordering::Release);
        }
        self.pds[pd.index()] = PdState::EMPTY;
        self.registered &= !(pd.bit() as u16);
        self.posted &= !(pd.bit() as u16);
        was
    }

    /// Takes the WQEs the registered PDs have room for, one PD after the other. Every WQ is
    /// looked at (`wq_polled`): a doorbell only wakes the loop.
    pub(super) fn take_work(&mut self, engine: &mut impl Engine) {
        let start = self.next_pd;
        self.next_pd = (self.next_pd + 1) % PDS;
        for k in pd_bits(self.registered.rotate_right(start as u32)) {
            let index = (start + k) % PDS;
            if self.pds[index].queues.is_none_or(|q| q.wq.is_empty()) {
                continue;
            }
            if let Some(pd) = Pd::new(index as u16) {
                self.take_from(engine, pd);
            }
        }
    }

    /// Whether `pd`'s WQ holds an entry this scheduler could take now: one CQ slot for every
    /// transfer taken and not completed (a scribbled index reads as a full CQ: then nothing is
    /// taken), a free channel and a free transfer slot. An entry left waiting for room is looked
    /// at again at every round, and after every sleep.
    fn takeable(&self, pd: usize) -> bool {
        let p = &self.pds[pd];
        let Some(queues) = p.queues else { return false };
        !queues.wq.is_empty()
            && usize::from(p.outstanding) + queues.cq.len() < CQ_ENTRIES
            && (p.channels.in_use() as usize) < hal::pldma::VCS_PER_PD
            && !self.transfers.is_full()
    }

    /// Before a sleep: processes ring the doorbell from now on (`wq_polled` = 0). The caller
    /// then looks at the WQs once more ([`Scheduler::has_work`]).
    pub fn stop_polling(&mut self) {
        self.set_polled(0);
    }

    /// After a sleep: the WQs are polled at every round again.
    pub fn resume_polling(&mut self) {
        self.set_polled(1);
    }

    fn set_polled(&self, polled: u32) {
        for index in pd_bits(self.registered) {
            if let Some(queues) = self.pds[index].queues {
                queues.wq_polled.store(polled, Ordering::Release);
            }
        }
        proto::ipc::system_barrier();
    }

    /// Whether a round would have work now without news from outside: a WQ entry it can take,
    /// or a deadline that passed (`docs/hw/ipi.md`, "The rule that loses no wake-up"). Blocks
    /// that wait for their window, a free tid or a fault's answer wait for engine events, which
    /// wake the R5 themselves; a CQE that found its CQ full (only a process that writes its own
    /// indices can fill it) waits for the next wake-up.
    pub fn has_work(&self, now: u64) -> bool {
        pd_bits(self.registered).any(|index| self.takeable(index)) || self.next_deadline().is_some_and(|d| d <= now)
    }

    /// Out of line: most rounds find every WQ empty and should not pay for its set-up.
    #[inline(never)]
    fn take_from(&mut self, engine: &mut impl Engine, pd: Pd) {
        let Some(queues) = self.pds[pd.index()].queues else { return };
        loop {
            if !self.takeable(pd.index()) {
                return;
            }
            let wq_index = queues.wq.consumed();
            // SAFETY: the scheduler is the only consumer of a registered PD's WQ (the handle
            // lives for this one pop).
            let Some(raw) = (unsafe { queues.wq.consumer() }).pop() else { return };
            let taken = match Wqe::decode(&raw) {
                Ok(w) if w.node < self.nodes => self.begin(pd, wq_index, w),
                _ => None,
            };
            if taken.is_none() {
                self.stats.bad_wqes += 1;
                let bad = queues.bad_wqes.load(Ordering::Relaxed);
                queues.bad_wqes.store(bad.wrapping_add(1), Ordering::Release);
                let cqe = Cqe::Local { tag: raw.tag, wq_index, len: 0, status: CqeStatus::BadRequest, node: raw.node };
                self.post_cqe(engine, pd, &cqe);
            }
        }
    }

    fn begin(&mut self, pd: Pd, wq_index: u32, wqe: Wqe) -> Option<u8> {
        let p = &mut self.pds[pd.index()];
        let vc = p.channels.take()?;
        let Some(t) = Transfer::new(pd, vc, wq_index, wqe) else {
            p.channels.give_back(vc);
            return None;
        };
        let Some(i) = self.transfers.insert(t) else {
            p.channels.give_back(vc);
            return None;
        };
        p.outstanding += 1;
        self.stats.transfers_started += 1;
        Some(i)
    }

    /// Posts the CQEs of ended transfers, then wakes the processes that armed their CQ.
    pub(super) fn complete(&mut self, engine: &mut impl Engine) {
        if self.transfers.ended().is_empty() && self.posted == 0 {
            return;
        }
        for i in self.transfers.ended().iter() {
            let Some(t) = self.transfers.get(i).copied() else { continue };
            let status = t.status;
            let len = if status == CqeStatus::Ok { t.wqe.len } else { 0 };
            let cqe = Cqe::Local { tag: t.wqe.tag, wq_index: t.wq_index, len, status, node: t.wqe.node };
            if !self.post_cqe(engine, t.pd, &cqe) {
                // The CQ is full (only a process writing its own indices can do that): later.
                continue;
            }
            self.transfers.remove(i);
            let p = &mut self.pds[t.pd.index()];
            p.channels.give_back(t.vc);
            p.outstanding = p.outstanding.saturating_sub(1);
            if status == CqeStatus::Ok {
                self.stats.transfers_completed += 1;
            } else {
                self.stats.transfers_failed += 1;
            }
        }
        for index in pd_bits(core::mem::take(&mut self.posted)) {
            let Some(queues) = self.pds[index].queues else { continue };
            let arm = queues.arm.load(Ordering::Acquire);
            if arm != queues.notified.load(Ordering::Acquire) {
                queues.notified.store(arm, Ordering::Release);
                if let Some(pd) = Pd::new(index as u16) {
                    proto::ipc::system_barrier();
                    engine.notify_cq(pd);
                    self.stats.cq_interrupts += 1;
                }
            }
        }
    }

    /// Pushes one CQE into `pd`'s CQ.
    fn post_cqe(&mut self, _engine: &mut impl Engine, pd: Pd, cqe: &Cqe) -> bool {
        let p = &mut self.pds[pd.index()];
        let Some(queues) = p.queues else { return false };
        // SAFETY: the scheduler is the only producer of a registered PD's CQ.
        let ok = unsafe { queues.cq.producer() }.push(cqe.encode()).is_ok();
        if ok {
            self.posted |= pd.bit() as u16;
        }
        ok
    }

    /// A RemoteWrite CQE for `pd`, if its CQ has a slot no transfer of its own needs.
    pub(super) fn remote_write(&mut self, engine: &mut impl Engine, pd: Pd, node: u16, imm: u32) {
        let p = &self.pds[pd.index()];
        let Some(queues) = p.queues else {
            self.stats.notifies_lost += 1;
            return;
        };
        let spare = usize::from(p.outstanding) + queues.cq.len() < CQ_ENTRIES;
        if spare && self.post_cqe(engine, pd, &Cqe::RemoteWrite { node, imm }) {
            self.stats.remote_notifies += 1;
        } else {
            self.stats.notifies_lost += 1;
            let lost = queues.notify_lost.load(Ordering::Relaxed);
            queues.notify_lost.store(lost.wrapping_add(1), Ordering::Release);
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegisterError {
    AlreadyRegistered,
    Overlap,
}

/// The indices of the set bits of a PD mask, lowest first.
fn pd_bits(mask: u16) -> impl Iterator<Item = usize> {
    bits(u32::from(mask))
}
