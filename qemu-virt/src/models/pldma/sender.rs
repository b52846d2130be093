//! The sending side: descriptors in, packets out (`docs/hw/pldma.md`, "Descriptor ops").
//! A WriteBlock reads its source through the SMMU under the block's PD, one packet at a time
//! on the destination's 256 B windows; a fault stops the block and tells its owner.

use super::ctx::{Ctx, Dma};
use crate::models::iommu::StallId;
use hal::pldma::active::{EntryKind, FLAG_DATA, Flusher, LogEntry};
use hal::pldma::codes::{FaultCode, NackCode, PfNackCode, RefusalCode};
use hal::pldma::descriptor::{Attempt, Descriptor, RawDescriptor, WriteKind};
use hal::pldma::event::{Event, TxnRef};
use hal::pldma::fault::FaultEntry;
use hal::pldma::geometry::Windows;
use hal::pldma::packet::{Packet, Route};
use hal::pldma::regs::Counter;
use hal::pldma::{PACKET_BYTES, PAGE_BYTES, Pd};

/// A WriteBlock on its way out.
#[derive(Clone, Debug)]
pub struct BlockJob {
    attempt: Attempt,
    node: u16,
    src: u64,
    dst: u64,
    len: u32,
    kind: WriteKind,
    /// The next packet to send.
    next: u64,
}

impl BlockJob {
    pub fn pd(&self) -> Pd {
        self.attempt.pd
    }

    /// Whose transaction it is: the reader's for a read response, else this node's.
    fn owner(&self, ctx: &Ctx<'_>) -> u16 {
        if self.kind == WriteKind::ReadResponse { self.node } else { ctx.node }
    }

    fn txn(&self) -> TxnRef {
        TxnRef { pd: self.attempt.pd, tid: self.attempt.tid, seq: self.attempt.seq }
    }
}

/// Where a block stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// Every packet sent, or the block stopped on a fault.
    Finished,
    /// The SMMU holds the source read of the next packet, at this VA.
    Stalled(StallId, u64),
}

/// Takes descriptor `position` of the ring: sends what a single packet does, refuses what it
/// must, and returns the job of a WriteBlock.
pub fn take(ctx: &mut Ctx<'_>, position: u32, raw: &RawDescriptor) -> Option<BlockJob> {
    ctx.count(Counter::Descriptors);
    let refuse = |ctx: &mut Ctx<'_>, code| {
        ctx.count(Counter::Malformed);
        ctx.post(Event::DescRefused { code, position: position as u16, pd: raw.pd, tid: raw.tid, seq: raw.seq });
        None
    };
    let Ok(d) = Descriptor::decode(raw) else { return refuse(ctx, RefusalCode::Malformed) };
    if !ctx.pd_enabled(d.pd()) {
        return refuse(ctx, RefusalCode::PdDisabled);
    }
    if d.node() >= ctx.nodes {
        return refuse(ctx, RefusalCode::NoRoute);
    }
    let route = Route { src: ctx.node, owner: ctx.node };
    match d {
        Descriptor::WriteBlock { attempt, node, src, dst, len, kind, .. } => {
            Some(BlockJob { attempt, node, src, dst, len, kind, next: 0 })
        }
        Descriptor::ReadRequest { attempt, node, src, dst, len, .. } => {
            ctx.send(node, &Packet::ReadRequest { route, attempt, src_va: src, dst_va: dst, len });
            None
        }
        Descriptor::Nack { pd, tid, seq, node, code, .. } => {
            let route = Route { src: ctx.node, owner: node };
            ctx.send(node, &Packet::Nack { route, txn: TxnRef { pd, tid, seq }, index: 0, code });
            ctx.count(Counter::NacksSent);
            None
        }
    }
}

/// Sends the block's remaining packets. `terminated`: the SMMU ended the stalled read of the
/// next packet with a fault at that VA.
pub fn run(ctx: &mut Ctx<'_>, job: &mut BlockJob, terminated: Option<u64>) -> Progress {
    let Some(packets) = Windows::packets(job.dst, u64::from(job.len)) else { return Progress::Finished };
    let count = packets.count();
    let mut payload = [0u8; PACKET_BYTES as usize];
    if let Some(va) = terminated {
        stop(ctx, job, Dma::Fault(va));
        return Progress::Finished;
    }
    while let Some(piece) = packets.piece(job.next) {
        let bytes = &mut payload[..piece.len as usize];
        match ctx.read(job.pd(), job.src + piece.offset, bytes) {
            Dma::Done => {}
            Dma::Stalled(id, va) => {
                // Held in the SMMU until the kernel RESUMEs it: the owner pauses the block.
                let owner = job.owner(ctx);
                ctx.pf_nack(owner, job.txn(), job.next as u16, PfNackCode::Stalled, va);
                return Progress::Stalled(id, va);
            }
            failed => {
                stop(ctx, job, failed);
                return Progress::Finished;
            }
        }
        if job.kind == WriteKind::ReadResponse && !serve_get(ctx, job, job.src + piece.offset, bytes) {
            // A flush not to be served yet, or a log with no room: the block stops before this
            // packet; the requester's timeout asks again.
            return Progress::Finished;
        }
        let route = Route { src: ctx.node, owner: job.owner(ctx) };
        let packet = Packet::Data {
            route,
            attempt: job.attempt,
            index: job.next as u8,
            count: count as u8,
            va: job.dst + piece.offset,
            kind: job.kind,
            payload: bytes,
        };
        ctx.send(job.node, &packet);
        job.next += 1;
    }
    ctx.count(Counter::BlocksSent);
    Progress::Finished
}

/// The block's stalled source read was RESUMEd with retry: the owner takes the block off pause
/// (if the read stalls again, a new `Stalled` follows this).
pub fn resumed(ctx: &mut Ctx<'_>, job: &BlockJob, va: u64) {
    let owner = job.owner(ctx);
    ctx.pf_nack(owner, job.txn(), job.next as u16, PfNackCode::Resumed, va);
}

/// A source read failed: record the fault for the kernel and tell the owner; the block sends
/// nothing more.
fn stop(ctx: &mut Ctx<'_>, job: &BlockJob, why: Dma) {
    let (code, va) = match why {
        Dma::Fault(va) => (FaultCode::SourceFault, va),
        Dma::BusError(va) => (FaultCode::SourceBusError, va),
        Dma::Done | Dma::Stalled(..) => return,
    };
    let owner = job.owner(ctx);
    let a = job.attempt;
    ctx.fault(FaultEntry::new(code, a.pd, owner, a.tid, a.seq, va));
    let (txn, index) = (job.txn(), job.next as u16);
    if code == FaultCode::SourceFault {
        ctx.pf_nack(owner, txn, index, PfNackCode::Source, va);
    } else {
        ctx.nack(owner, txn, index, NackCode::ReadError);
    }
}

/// Active Access on the read-serve path (`docs/hw/active-access.md`, "What the engine does"):
/// the packet `job.next` has read `data` from `start`; each source page piece that is marked is
/// checked (a flushing page waits for its log's flush slot to serve it) and logged. False: the
/// packet must not be sent.
fn serve_get(ctx: &mut Ctx<'_>, job: &BlockJob, start: u64, data: &[u8]) -> bool {
    let len = data.len();
    let mut at = 0usize;
    let mut parts: [Option<(u64, usize, usize)>; 2] = [None, None];
    let mut n = 0;
    while at < len && n < 2 {
        let va = start + at as u64;
        let take = ((PAGE_BYTES - va % PAGE_BYTES) as usize).min(len - at);
        parts[n] = Some((va, at, take));
        n += 1;
        at += take;
    }
    let pd = job.pd();
    for &(va, at, take) in parts.iter().flatten() {
        let Some((attr, log)) = ctx.active(pd, va) else { continue };
        let who = Flusher { node: job.node, tid: job.attempt.tid, first_seq: job.attempt.first_seq };
        if attr.flush && !ctx.log_flush(log, who) {
            ctx.log_refuse(log);
            return false;
        }
        if !attr.logs_get() {
            continue;
        }
        let bytes = if attr.rld { &data[at..at + take] } else { &[][..] };
        let entry = LogEntry {
            kind: EntryKind::Get,
            flags: if attr.rld { FLAG_DATA } else { 0 },
            node: job.node,
            pd: pd.raw(),
            iuid: attr.iuid,
            granules: 0,
            len: take as u16,
            tid: job.attempt.tid,
            first_seq: job.attempt.first_seq,
            index: job.next as u8,
            va,
            serial: 0,
        };
        if !ctx.log_append(log, entry, bytes) {
            ctx.log_refuse(log);
            return false;
        }
    }
    true
}
