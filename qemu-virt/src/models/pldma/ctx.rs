//! What the engine's sender and receiver work with: the node's memory through the SMMU, the
//! links, the counters, and the events and faults they produce (posted by the engine thread
//! afterwards, in order, under the register lock).

use super::engine::Shared;
use super::fault_fifo::Push;
use crate::counters::NodeCounters;
use crate::interconnect::{Datagram, channel};
use crate::models::iommu::{Access, IoTranslate, StallId, Translation};
use crate::shm::Ddr;
use hal::pldma::active::{Attr, Flusher, LogEntry};
use hal::pldma::codes::{NackCode, PfNackCode};
use hal::pldma::event::{Event, TxnRef};
use hal::pldma::fault::FaultEntry;
use hal::pldma::packet::{MAX_BYTES, Packet, Route};
use hal::pldma::regs::{Counter, IRQ};
use hal::pldma::{PAGE_BYTES, Pd};
use std::sync::atomic::Ordering;

/// Events produced while the register lock is not held, posted at the end of the round, and
/// the round's packets, which leave together at its end (a block's 64 packets go out
/// back to back, as on the link, and cross it in one latency).
#[derive(Debug, Default)]
pub struct Outbox {
    pub events: Vec<Event>,
    /// The interrupt line may have changed: a fault was pushed or dropped, or an entry went to
    /// an Active Access log with NOTIFY.
    pub irq_changed: bool,
    pub packets: Vec<Datagram>,
}

/// How a DMA access through the SMMU ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dma {
    Done,
    /// Terminated at this VA (translation or permission fault).
    Fault(u64),
    /// The translation left memory at this VA.
    BusError(u64),
    /// Held by the SMMU at this VA.
    Stalled(StallId, u64),
}

pub struct Ctx<'a> {
    pub node: u16,
    pub nodes: u16,
    /// `pd_enable` when the round began.
    pub pd_enable: u16,
    pub ddr: &'a Ddr,
    pub iommu: &'a dyn IoTranslate,
    pub counters: &'a NodeCounters,
    pub shared: &'a Shared,
    pub out: Outbox,
}

impl Ctx<'_> {
    pub fn count(&self, c: Counter) {
        self.counters.pldma(c).fetch_add(1, Ordering::Relaxed);
    }

    pub fn pd_enabled(&self, pd: Pd) -> bool {
        self.pd_enable & pd.bit() as u16 != 0
    }

    /// Queues `packet` to `dst`; the engine sends the round's packets, in order, when the round
    /// ends.
    pub fn send(&mut self, dst: u16, packet: &Packet<'_>) {
        let mut bytes = [0u8; MAX_BYTES];
        let len = packet.encode(&mut bytes);
        self.count(Counter::PacketsSent);
        self.out.packets.push(Datagram {
            src: usize::from(self.node),
            dst: usize::from(dst),
            channel: channel::PLDMA,
            payload: bytes[..len].to_vec(),
        });
    }

    /// A page-fault NACK (`code`) about `txn`'s packet `index` at `va` to the owner's R5: an
    /// event if the owner is this node, else a packet.
    pub fn pf_nack(&mut self, owner: u16, txn: TxnRef, index: u16, code: PfNackCode, va: u64) {
        self.count(Counter::PfNacksSent);
        if owner == self.node {
            self.post(Event::PfNack { node: self.node, txn, index, code, va });
        } else {
            let route = Route { src: self.node, owner };
            self.send(owner, &Packet::PfNack { route, txn, index, code, va });
        }
    }

    /// A NACK (`code`) about `txn`'s packet `index` to the owner's R5: an event if the owner is
    /// this node, else a packet.
    pub fn nack(&mut self, owner: u16, txn: TxnRef, index: u16, code: NackCode) {
        self.count(Counter::NacksSent);
        if owner == self.node {
            self.post(Event::Nack { node: self.node, txn, index, code });
        } else {
            let route = Route { src: self.node, owner };
            self.send(owner, &Packet::Nack { route, txn, index, code });
        }
    }

    pub fn post(&mut self, event: Event) {
        self.out.events.push(event);
    }

    /// Logs a refused access in the fault FIFO at once, before the NACK that reports it leaves.
    pub fn fault(&mut self, entry: FaultEntry) {
        let push = {
            let mut st = self.shared.state();
            let push = st.fifo.push(entry);
            if push == Push::Lost {
                st.regs.raise(IRQ::FAULT_LOST::SET.value);
            } else {
                // The kernel will see it: its answer may leave as a RAPF (`rapf_gate`).
                st.regs.gate.faulted(&entry);
            }
            push
        };
        self.count(match push {
            Push::Pushed => Counter::FaultsPushed,
            Push::Deduplicated => Counter::FaultsDeduplicated,
            Push::Lost => Counter::FaultsLost,
        });
        self.out.irq_changed |= push != Push::Deduplicated;
    }

    /// Active Access: the attributes of `pd`'s page at `va` and the log they send entries to.
    pub fn active(&self, pd: Pd, va: u64) -> Option<(Attr, usize)> {
        self.shared.state().regs.active.lookup(pd, va)
    }

    /// `log` has room for an entry of `granules`.
    pub fn log_room(&self, log: usize, granules: u32) -> bool {
        self.shared.state().regs.active.room(self.ddr, log, granules)
    }

    /// `who`'s read of `log`'s flushing page may be served now (`docs/hw/active-access.md`,
    /// "Flush").
    pub fn log_flush(&self, log: usize, who: Flusher) -> bool {
        self.shared.state().regs.active.flush(self.ddr, log, who)
    }

    /// An access was not served for want of room in `log`.
    pub fn log_refuse(&self, log: usize) {
        self.shared.state().regs.active.refuse(self.ddr, log);
    }

    /// Appends an entry and its data to `log`; false if it had no room after all (the kernel
    /// changed it meanwhile).
    pub fn log_append(&mut self, log: usize, entry: LogEntry, data: &[u8]) -> bool {
        let appended = self.shared.state().regs.active.append(self.ddr, log, entry, data);
        match appended {
            Some(notified) => {
                self.out.irq_changed |= notified;
                true
            }
            None => false,
        }
    }

    /// Runs `access` on each page piece of `[va, va + len)` after translating it for `pd` (as
    /// its stream, `hal::pldma::stream_id`); stops
    /// at the first piece that does not translate to memory.
    fn each_page(
        &self,
        pd: Pd,
        va: u64,
        len: usize,
        how: Access,
        mut access: impl FnMut(u64, usize, usize) -> Option<()>,
    ) -> Dma {
        let mut done = 0;
        while done < len {
            let at = va + done as u64;
            let piece = ((PAGE_BYTES - at % PAGE_BYTES) as usize).min(len - done);
            match self.iommu.translate(hal::pldma::stream_id(pd), at, how) {
                Translation::Ok(pa) => {
                    if access(pa, done, piece).is_none() {
                        return Dma::BusError(at);
                    }
                }
                Translation::Fault => return Dma::Fault(at),
                Translation::Stalled(id) => {
                    self.count(Counter::Stalls);
                    return Dma::Stalled(id, at);
                }
            }
            done += piece;
        }
        Dma::Done
    }

    /// A DMA read of `out.len()` bytes at `va` under `pd`.
    pub fn read(&self, pd: Pd, va: u64, out: &mut [u8]) -> Dma {
        let len = out.len();
        self.each_page(pd, va, len, Access::Read, |pa, at, n| self.ddr.read_bytes(pa, &mut out[at..at + n]))
    }

    /// A DMA write of `data` at `va` under `pd`.
    pub fn write(&self, pd: Pd, va: u64, data: &[u8]) -> Dma {
        self.each_page(pd, va, data.len(), Access::Write, |pa, at, n| self.ddr.write_bytes(pa, &data[at..at + n]))
    }
}
