//! The receiving side (`docs/hw/pldma.md`, "What a receiving engine does"): data packets are
//! written through this node's SMMU and counted per block until the block is complete; control
//! packets become events for this node's R5.

use super::ctx::{Ctx, Dma};
use crate::models::iommu::StallId;
use hal::pldma::active::{EntryKind, FLAG_DATA, FLAG_WRITTEN, LogEntry, entry_granules};
use hal::pldma::codes::{FaultCode, NackCode, PfNackCode};
use hal::pldma::descriptor::{Attempt, WriteKind};
use hal::pldma::event::{Event, TxnRef};
use hal::pldma::fault::FaultEntry;
use hal::pldma::packet::{self, Packet, Route};
use hal::pldma::regs::Counter;
use hal::pldma::{Pd, RECEIVER_BLOCKS, seq_newer};
use std::collections::{HashMap, VecDeque};

/// What the table remembers of one block: (owner, tid).
#[derive(Clone, Copy, Debug)]
struct Block {
    first_seq: u16,
    count: u8,
    written: u64,
    /// The newest seq of the packets written.
    newest: u16,
    /// The seq the last ACK carried, once the block is complete.
    acked: Option<u16>,
    /// The attempt (seq) and code of the last page-fault NACK that went out: one per attempt
    /// and code is enough to pause it (the fault entries, one per faulting page, tell the
    /// kernel the rest).
    pf_nacked: Option<(u16, PfNackCode)>,
}

/// The receiver's block table: the last `RECEIVER_BLOCKS` blocks, oldest evicted first.
#[derive(Debug, Default)]
pub struct Receiver {
    blocks: HashMap<(u16, u16), Block>,
    order: VecDeque<(u16, u16)>,
}

/// How a packet comes to the receiver: off the link, or handed back after the SMMU held its
/// write and RESUME decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    Fresh,
    /// RESUME retry: written again.
    Resumed,
    /// RESUME terminate: the write ended in a fault (it is not tried again).
    Terminated,
}

/// How a packet ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Received {
    Done,
    /// The SMMU holds the payload's write (under this PD); hand the packet back with the
    /// outcome later.
    Stalled(StallId, Pd),
}

impl Receiver {
    pub fn new() -> Self {
        Self::default()
    }

    /// A packet from node `link_src`, fresh or handed back after a stall (`delivery`).
    pub fn receive(&mut self, ctx: &mut Ctx<'_>, link_src: u16, bytes: &[u8], delivery: Delivery) -> Received {
        let p = match packet::decode(bytes) {
            Ok(p) if p.route().src == link_src => p,
            _ => {
                // Malformed, or a source that is not the link's: a spoofed packet.
                ctx.count(Counter::Malformed);
                return Received::Done;
            }
        };
        let me = ctx.node;
        let route = p.route();
        let for_me = match p {
            Packet::Data { kind, .. } => kind != WriteKind::ReadResponse || route.owner == me,
            Packet::ReadRequest { .. } => route.owner == route.src,
            _ => route.owner == me,
        };
        if !for_me {
            ctx.count(Counter::Malformed);
            return Received::Done;
        }
        match p {
            Packet::Data { attempt, index, count, va, kind, payload, .. } => {
                let data = DataPacket { route, attempt, index, count, va, kind };
                self.data(ctx, &data, payload, delivery)
            }
            Packet::Ack { txn, .. } => {
                ctx.post(Event::Ack { node: route.src, txn });
                Received::Done
            }
            Packet::Nack { txn, index, code, .. } => {
                ctx.post(Event::Nack { node: route.src, txn, index, code });
                Received::Done
            }
            Packet::PfNack { txn, index, code, va, .. } => {
                ctx.post(Event::PfNack { node: route.src, txn, index, code, va });
                Received::Done
            }
            Packet::Rapf { txn, claimed, action, .. } => {
                ctx.post(Event::Rapf { node: route.src, txn, claimed, action });
                Received::Done
            }
            Packet::ReadRequest { attempt, src_va, dst_va, len, .. } => {
                if ctx.pd_enabled(attempt.pd) {
                    ctx.post(Event::ReadRequest { node: route.src, attempt, src: src_va, dst: dst_va, len });
                } else {
                    let txn = TxnRef { pd: attempt.pd, tid: attempt.tid, seq: attempt.seq };
                    ctx.nack(route.src, txn, 0, NackCode::NoPd);
                }
                Received::Done
            }
        }
    }

    fn data(&mut self, ctx: &mut Ctx<'_>, p: &DataPacket, payload: &[u8], delivery: Delivery) -> Received {
        let a = p.attempt;
        let owner = p.route.owner;
        let txn = TxnRef { pd: a.pd, tid: a.tid, seq: a.seq };
        if !ctx.pd_enabled(a.pd) {
            ctx.nack(owner, txn, p.index.into(), NackCode::NoPd);
            return Received::Done;
        }
        let key = (owner, a.tid);
        let fresh =
            Block { first_seq: a.first_seq, count: p.count, written: 0, newest: a.seq, acked: None, pf_nacked: None };
        match self.blocks.get_mut(&key) {
            Some(b) if b.first_seq == a.first_seq => {}
            Some(b) if seq_newer(a.first_seq, b.first_seq) => *b = fresh,
            Some(_) => {
                // A packet of a block the tid has finished with.
                ctx.count(Counter::Duplicates);
                return Received::Done;
            }
            None => self.insert(key, fresh),
        }
        let Some(block) = self.blocks.get_mut(&key) else { return Received::Done };
        if block.count != p.count {
            ctx.count(Counter::Malformed);
            return Received::Done;
        }
        if let Some(acked) = block.acked {
            if seq_newer(a.seq, acked) {
                // A retransmission of a complete block: its ACK was lost; answer without writing.
                block.acked = Some(a.seq);
                ack(ctx, owner, txn);
            } else {
                ctx.count(Counter::Duplicates);
            }
            return Received::Done;
        }
        let bit = 1u64 << p.index;
        if block.written & bit != 0 {
            if seq_newer(a.seq, block.newest) {
                block.newest = a.seq;
            }
            ctx.count(Counter::Duplicates);
            return Received::Done;
        }
        // Active Access (`docs/hw/active-access.md`, "What the engine does"): a remote put into
        // a marked page is taken only if its log has room; a read response is this node's own
        // get landing, never logged.
        let logged = match ctx.active(a.pd, p.va) {
            Some((attr, log)) if attr.logs_put() && p.kind != WriteKind::ReadResponse => {
                let data = if attr.put_data() { payload.len() } else { 0 };
                if !ctx.log_room(log, entry_granules(data)) {
                    // Not taken: not written, not counted; the initiator's timeout resends it.
                    ctx.log_refuse(log);
                    return Received::Done;
                }
                Some((attr, log))
            }
            _ => None,
        };
        let outcome = match (delivery, logged) {
            (Delivery::Terminated, _) => Dma::Fault(p.va),
            // An active put: the memory is not written.
            (_, Some((attr, _))) if !attr.w => Dma::Done,
            _ => ctx.write(a.pd, p.va, payload),
        };
        match outcome {
            Dma::Done => {}
            Dma::Stalled(id, va) => {
                // Held in the SMMU until the kernel RESUMEs it: the owner pauses the block.
                if block.pf_nacked != Some((a.seq, PfNackCode::Stalled)) {
                    block.pf_nacked = Some((a.seq, PfNackCode::Stalled));
                    ctx.pf_nack(owner, txn, p.index.into(), PfNackCode::Stalled, va);
                }
                return Received::Stalled(id, a.pd);
            }
            Dma::Fault(va) => {
                ctx.fault(FaultEntry::new(FaultCode::DestinationFault, a.pd, owner, a.tid, a.seq, va));
                if block.pf_nacked != Some((a.seq, PfNackCode::Destination)) {
                    block.pf_nacked = Some((a.seq, PfNackCode::Destination));
                    ctx.pf_nack(owner, txn, p.index.into(), PfNackCode::Destination, va);
                }
                return Received::Done;
            }
            Dma::BusError(va) => {
                ctx.fault(FaultEntry::new(FaultCode::DestinationBusError, a.pd, owner, a.tid, a.seq, va));
                ctx.nack(owner, txn, p.index.into(), NackCode::WriteError);
                return Received::Done;
            }
        }
        if let Some((attr, log)) = logged {
            let data = if attr.put_data() { payload } else { &[][..] };
            let flags = if attr.put_data() { FLAG_DATA } else { 0 } | if attr.w { FLAG_WRITTEN } else { 0 };
            let entry = LogEntry {
                kind: EntryKind::Put,
                flags,
                node: p.route.src,
                pd: a.pd.raw(),
                iuid: attr.iuid,
                granules: 0,
                len: payload.len() as u16,
                tid: a.tid,
                first_seq: a.first_seq,
                index: p.index,
                va: p.va,
                serial: 0,
            };
            if !ctx.log_append(log, entry, data) {
                // The log went away between the check and now: the packet stays untaken (a
                // retransmission writes the same bytes again and logs them).
                ctx.log_refuse(log);
                return Received::Done;
            }
        }
        block.written |= bit;
        if seq_newer(a.seq, block.newest) {
            block.newest = a.seq;
        }
        let all = if block.count == 64 { u64::MAX } else { (1u64 << block.count) - 1 };
        if block.written == all {
            block.acked = Some(block.newest);
            ack(ctx, owner, TxnRef { seq: block.newest, ..txn });
            if let WriteKind::Notify { imm } = p.kind {
                ctx.post(Event::RemoteNotify { node: p.route.src, pd: a.pd, imm });
            }
        } else if delivery == Delivery::Resumed && block.pf_nacked == Some((a.seq, PfNackCode::Stalled)) {
            // Off pause: the block's own timeout guards the rest (a packet lost meanwhile is
            // resent after one timeout, not after the paused one). Once per stall: a later
            // stall of the attempt is told again.
            block.pf_nacked = Some((a.seq, PfNackCode::Resumed));
            ctx.pf_nack(owner, txn, p.index.into(), PfNackCode::Resumed, p.va);
        }
        Received::Done
    }

    fn insert(&mut self, key: (u16, u16), block: Block) {
        while self.blocks.len() >= RECEIVER_BLOCKS {
            match self.order.pop_front() {
                Some(old) => {
                    self.blocks.remove(&old);
                }
                None => break,
            }
        }
        self.order.push_back(key);
        self.blocks.insert(key, block);
    }
}

/// A data packet's header fields.
struct DataPacket {
    route: Route,
    attempt: Attempt,
    index: u8,
    count: u8,
    va: u64,
    kind: WriteKind,
}

/// To the owner: an event if it is this node, else a packet.
fn ack(ctx: &mut Ctx<'_>, owner: u16, txn: TxnRef) {
    ctx.count(Counter::AcksSent);
    if owner == ctx.node {
        ctx.post(Event::Ack { node: ctx.node, txn });
    } else {
        ctx.send(owner, &Packet::Ack { route: Route { src: ctx.node, owner }, txn });
    }
}
