//! Events: what the engine tells its R5 (`docs/hw/pldma.md`, "Event").

use super::codes::{NackCode, PfNackCode, RapfAction, RefusalCode};
use super::descriptor::Attempt;
use super::geometry::is_block;
use super::{Pd, SEQ_MASK, TID_LIMIT};

/// An event as the ring holds it (32 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawEvent {
    /// The event kind (`kind`).
    pub kind: u8,
    /// Nack, PfNack: the code; Rapf: the action; DescRefused: the refusal code.
    pub code: u8,
    /// The node the message came from; this node for local events.
    pub node: u16,
    /// The packet's PD; Rapf: the wired PD; Doorbell: the PD page's.
    pub pd: u16,
    /// The transaction id (14 bits).
    pub tid: u16,
    /// The sequence number (14 bits).
    pub seq: u16,
    /// Rapf: the claimed PD; ReadRequest: first_seq; Nack, PfNack: the packet index;
    /// DescRefused: the descriptor's ring position (low 16 bits).
    pub aux: u16,
    /// ReadRequest: the block length; RemoteNotify: the immediate; Doorbell: the value written.
    pub len: u32,
    /// ReadRequest: the source VA on this node; PfNack: the faulting VA.
    pub va: u64,
    /// ReadRequest: the destination VA at the requester.
    pub va2: u64,
}

const _: () = assert!(core::mem::size_of::<RawEvent>() == 32);

impl RawEvent {
    /// An Ack's node and transaction, checked as [`Event::decode`] checks them (the caller has
    /// seen `kind` is [`kind::ACK`]): the R5 takes one Ack per block, and this spares it the
    /// enum.
    #[inline(always)]
    pub fn ack(&self) -> Result<(u16, TxnRef), EventError> {
        let unused = u32::from(self.code) | u32::from(self.aux) | self.len;
        if unused != 0 || (self.va | self.va2) != 0 {
            return Err(EventError::ReservedNotZero);
        }
        Ok((self.node, txn(self)?))
    }
}

/// Event kinds (`RawEvent::kind`; "Event kinds").
pub mod kind {
    /// A block of a transaction this R5 owns was written completely.
    pub const ACK: u8 = 0x1;
    /// A packet of such a block failed (bus error, PD disabled), or a read request was refused.
    pub const NACK: u8 = 0x2;
    /// A packet of such a block faulted at the destination, or the block's source faulted.
    pub const PF_NACK: u8 = 0x3;
    /// A RAPF for a transaction this R5 owns.
    pub const RAPF: u8 = 0x4;
    /// Node `node` asks this R5 to write `len` bytes from `va` here to `va2` there.
    pub const READ_REQUEST: u8 = 0x5;
    /// PD `pd`'s process rang its doorbell.
    pub const DOORBELL: u8 = 0x6;
    /// The NOTIFY block of a write from node `node` under `pd` was written completely here.
    pub const REMOTE_NOTIFY: u8 = 0x7;
    /// The engine refused the descriptor at ring position `aux`.
    pub const DESC_REFUSED: u8 = 0x8;
}

/// A transaction named by a control message: PD, tid and the attempt's seq.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxnRef {
    /// The transaction's PD.
    pub pd: Pd,
    /// The transaction id (14 bits).
    pub tid: u16,
    /// The attempt's sequence number (14 bits).
    pub seq: u16,
}

/// A decoded event: one of the kinds with the fields it uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A block of a transaction this R5 owns was written completely.
    Ack {
        /// The node that wrote the block (this node for a read response).
        node: u16,
        /// The acknowledged attempt (the highest seq the target saw).
        txn: TxnRef,
    },
    /// A packet of a block failed, or a read request was refused.
    Nack {
        /// The node the NACK came from (this node for a local one).
        node: u16,
        /// The failed attempt.
        txn: TxnRef,
        /// The failed packet's index in the block.
        index: u16,
        /// Why it failed.
        code: NackCode,
    },
    /// A packet's destination or the block's source faulted.
    PfNack {
        /// The node the PF-NACK came from (this node for a local one).
        node: u16,
        /// The faulted attempt.
        txn: TxnRef,
        /// The faulting packet's index in the block.
        index: u16,
        /// Which end faulted.
        code: PfNackCode,
        /// The faulting VA.
        va: u64,
    },
    /// `txn.pd` is the wired PD; `claimed` what the writer claimed.
    Rapf {
        /// The node whose PD page was written (this node for a local one).
        node: u16,
        /// The faulted attempt, under the wired PD.
        txn: TxnRef,
        /// The PD the writer claimed.
        claimed: u16,
        /// Retry or Abort.
        action: RapfAction,
    },
    /// Node `node` asks this R5 to write `len` bytes from `src` here to `dst` there.
    ReadRequest {
        /// The requester.
        node: u16,
        /// The requester's PD, tid and seqs.
        attempt: Attempt,
        /// The source VA on this node.
        src: u64,
        /// The destination VA at the requester.
        dst: u64,
        /// The block length, 1..=16384, inside one 16 KiB window of `dst`.
        len: u32,
    },
    /// PD `pd`'s process rang its doorbell.
    Doorbell {
        /// The PD page's PD.
        pd: Pd,
        /// The value written (the work queue's new head, a hint).
        value: u32,
    },
    /// The NOTIFY block of a write from `node` under `pd` was written completely here.
    RemoteNotify {
        /// The writer's node.
        node: u16,
        /// The write's PD.
        pd: Pd,
        /// The writer's immediate.
        imm: u32,
    },
    /// The refused descriptor's fields as they were (they may be out of range).
    DescRefused {
        /// Why the engine refused it.
        code: RefusalCode,
        /// The descriptor's ring position (low 16 bits).
        position: u16,
        /// The descriptor's `pd`.
        pd: u16,
        /// The descriptor's `tid`.
        tid: u16,
        /// The descriptor's `seq`.
        seq: u16,
    },
}

/// Why `Event::decode` refused a raw event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventError {
    /// `kind` is not an event kind.
    UnknownKind(u8),
    /// `code` is not a code of the kind.
    BadCode(u8),
    /// `pd` is not below 16.
    BadPd(u16),
    /// `tid` does not fit in 14 bits.
    BadTid(u16),
    /// `seq` (or a ReadRequest's first_seq) does not fit in 14 bits.
    BadSeq(u16),
    /// A ReadRequest's range is not 1..=16 KiB inside one 16 KiB window of the destination.
    NotABlock,
    /// A field the kind does not use is not 0.
    ReservedNotZero,
}

fn txn(r: &RawEvent) -> Result<TxnRef, EventError> {
    let pd = Pd::new(r.pd).ok_or(EventError::BadPd(r.pd))?;
    if r.tid >= TID_LIMIT {
        return Err(EventError::BadTid(r.tid));
    }
    if r.seq > SEQ_MASK {
        return Err(EventError::BadSeq(r.seq));
    }
    Ok(TxnRef { pd, tid: r.tid, seq: r.seq })
}

impl Event {
    /// The PD whose share of the event ring the event takes (`docs/hw/pldma.md`, "Each PD's
    /// share of the event ring"): the transaction's, the page's or the write's; a refused
    /// descriptor's field as it was, taken modulo the PD count.
    pub fn pd_index(&self) -> usize {
        match self {
            Event::Ack { txn, .. } | Event::Nack { txn, .. } | Event::PfNack { txn, .. } | Event::Rapf { txn, .. } => {
                txn.pd.index()
            }
            Event::ReadRequest { attempt, .. } => attempt.pd.index(),
            Event::Doorbell { pd, .. } | Event::RemoteNotify { pd, .. } => pd.index(),
            Event::DescRefused { pd, .. } => usize::from(*pd) % super::PDS,
        }
    }

    /// The event as the ring holds it; unused fields are 0.
    pub fn encode(&self) -> RawEvent {
        let mut r = RawEvent::default();
        let set = |r: &mut RawEvent, node: u16, t: &TxnRef| {
            (r.node, r.pd, r.tid, r.seq) = (node, t.pd.raw(), t.tid, t.seq);
        };
        match *self {
            Event::Ack { node, txn } => {
                r.kind = kind::ACK;
                set(&mut r, node, &txn);
            }
            Event::Nack { node, txn, index, code } => {
                (r.kind, r.code, r.aux) = (kind::NACK, code.raw(), index);
                set(&mut r, node, &txn);
            }
            Event::PfNack { node, txn, index, code, va } => {
                (r.kind, r.code, r.aux, r.va) = (kind::PF_NACK, code.raw(), index, va);
                set(&mut r, node, &txn);
            }
            Event::Rapf { node, txn, claimed, action } => {
                (r.kind, r.code, r.aux) = (kind::RAPF, action.raw(), claimed);
                set(&mut r, node, &txn);
            }
            Event::ReadRequest { node, attempt, src, dst, len } => {
                (r.kind, r.node, r.pd, r.tid, r.seq) =
                    (kind::READ_REQUEST, node, attempt.pd.raw(), attempt.tid, attempt.seq);
                (r.aux, r.va, r.va2, r.len) = (attempt.first_seq, src, dst, len);
            }
            Event::Doorbell { pd, value } => (r.kind, r.pd, r.len) = (kind::DOORBELL, pd.raw(), value),
            Event::RemoteNotify { node, pd, imm } => {
                (r.kind, r.node, r.pd, r.len) = (kind::REMOTE_NOTIFY, node, pd.raw(), imm)
            }
            Event::DescRefused { code, position, pd, tid, seq } => {
                (r.kind, r.code, r.aux, r.pd, r.tid, r.seq) = (kind::DESC_REFUSED, code.raw(), position, pd, tid, seq)
            }
        }
        r
    }

    /// Checks the kind, its codes and ranges, and that unused fields are 0.
    pub fn decode(r: &RawEvent) -> Result<Self, EventError> {
        let unused = |ok: bool| if ok { Ok(()) } else { Err(EventError::ReservedNotZero) };
        match r.kind {
            kind::ACK => {
                let (node, txn) = r.ack()?;
                Ok(Event::Ack { node, txn })
            }
            kind::NACK => {
                unused(r.len == 0 && r.va == 0 && r.va2 == 0)?;
                let code = NackCode::from_raw(r.code).ok_or(EventError::BadCode(r.code))?;
                Ok(Event::Nack { node: r.node, txn: txn(r)?, index: r.aux, code })
            }
            kind::PF_NACK => {
                unused(r.len == 0 && r.va2 == 0)?;
                let code = PfNackCode::from_raw(r.code).ok_or(EventError::BadCode(r.code))?;
                Ok(Event::PfNack { node: r.node, txn: txn(r)?, index: r.aux, code, va: r.va })
            }
            kind::RAPF => {
                unused(r.len == 0 && r.va == 0 && r.va2 == 0)?;
                let action = RapfAction::from_raw(r.code).ok_or(EventError::BadCode(r.code))?;
                Ok(Event::Rapf { node: r.node, txn: txn(r)?, claimed: r.aux, action })
            }
            kind::READ_REQUEST => {
                unused(r.code == 0)?;
                let t = txn(r)?;
                if r.aux > SEQ_MASK {
                    return Err(EventError::BadSeq(r.aux));
                }
                if !is_block(r.va2, u64::from(r.len)) || r.va.checked_add(u64::from(r.len)).is_none() {
                    return Err(EventError::NotABlock);
                }
                let attempt = Attempt { pd: t.pd, tid: t.tid, seq: t.seq, first_seq: r.aux };
                Ok(Event::ReadRequest { node: r.node, attempt, src: r.va, dst: r.va2, len: r.len })
            }
            kind::DOORBELL => {
                unused(
                    r.code == 0 && r.node == 0 && r.tid == 0 && r.seq == 0 && r.aux == 0 && r.va == 0 && r.va2 == 0,
                )?;
                Ok(Event::Doorbell { pd: Pd::new(r.pd).ok_or(EventError::BadPd(r.pd))?, value: r.len })
            }
            kind::REMOTE_NOTIFY => {
                unused(r.code == 0 && r.tid == 0 && r.seq == 0 && r.aux == 0 && r.va == 0 && r.va2 == 0)?;
                Ok(Event::RemoteNotify { node: r.node, pd: Pd::new(r.pd).ok_or(EventError::BadPd(r.pd))?, imm: r.len })
            }
            kind::DESC_REFUSED => {
                unused(r.node == 0 && r.len == 0 && r.va == 0 && r.va2 == 0)?;
                let code = RefusalCode::from_raw(r.code).ok_or(EventError::BadCode(r.code))?;
                Ok(Event::DescRefused { code, position: r.aux, pd: r.pd, tid: r.tid, seq: r.seq })
            }
            other => Err(EventError::UnknownKind(other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc_table;
    use crate::pldma::codes::tests::DOC;
    use core::mem::offset_of;
    use std::string::String;
    use std::vec::Vec;

    #[test]
    fn layout_and_kinds_match_the_doc() {
        let fields = [
            ("kind", offset_of!(RawEvent, kind)),
            ("code", offset_of!(RawEvent, code)),
            ("node", offset_of!(RawEvent, node)),
            ("pd", offset_of!(RawEvent, pd)),
            ("tid", offset_of!(RawEvent, tid)),
            ("seq", offset_of!(RawEvent, seq)),
            ("aux", offset_of!(RawEvent, aux)),
            ("len", offset_of!(RawEvent, len)),
            ("va", offset_of!(RawEvent, va)),
            ("va2", offset_of!(RawEvent, va2)),
        ];
        let expected: Vec<(String, usize)> = fields.iter().map(|(n, o)| ((*n).into(), *o)).collect();
        assert_eq!(doc_table(DOC, "Event (32 B"), expected);
        let kinds = [
            ("Ack", kind::ACK),
            ("Nack", kind::NACK),
            ("PfNack", kind::PF_NACK),
            ("Rapf", kind::RAPF),
            ("ReadRequest", kind::READ_REQUEST),
            ("Doorbell", kind::DOORBELL),
            ("RemoteNotify", kind::REMOTE_NOTIFY),
            ("DescRefused", kind::DESC_REFUSED),
        ];
        let kinds: Vec<(String, usize)> = kinds.iter().map(|(n, v)| ((*n).into(), usize::from(*v))).collect();
        assert_eq!(doc_table(DOC, "Event kinds"), kinds);
    }

    #[test]
    fn every_kind_round_trips() {
        let pd = Pd::new(15).unwrap();
        let t = TxnRef { pd, tid: 0x3fff, seq: 0x3fff };
        let a = Attempt { pd, tid: 1, seq: 2, first_seq: 1 };
        for e in [
            Event::Ack { node: 3, txn: t },
            Event::Nack { node: 1, txn: t, index: 63, code: NackCode::WriteError },
            Event::PfNack { node: 1, txn: t, index: 2, code: PfNackCode::Source, va: 0x1234_5000 },
            Event::Rapf { node: 2, txn: t, claimed: 0xffff, action: RapfAction::Abort },
            Event::ReadRequest { node: 2, attempt: a, src: 0x10, dst: 0x4000, len: 16384 },
            Event::Doorbell { pd, value: 77 },
            Event::RemoteNotify { node: 9, pd, imm: 0xdead_beef },
            Event::DescRefused { code: RefusalCode::NoRoute, position: 400, pd: 99, tid: 0xffff, seq: 0 },
        ] {
            assert_eq!(Event::decode(&e.encode()), Ok(e));
        }
    }

    #[test]
    fn malformed_events_are_refused() {
        let ack = Event::Ack { node: 1, txn: TxnRef { pd: Pd::new(0).unwrap(), tid: 1, seq: 1 } }.encode();
        let bad = |f: fn(&mut RawEvent)| {
            let mut r = ack;
            f(&mut r);
            Event::decode(&r)
        };
        assert_eq!(bad(|r| r.kind = 0), Err(EventError::UnknownKind(0)));
        assert_eq!(bad(|r| r.kind = 9), Err(EventError::UnknownKind(9)));
        assert_eq!(bad(|r| r.pd = 16), Err(EventError::BadPd(16)));
        assert_eq!(bad(|r| r.tid = 0x4000), Err(EventError::BadTid(0x4000)));
        assert_eq!(bad(|r| r.seq = 0x4000), Err(EventError::BadSeq(0x4000)));
        assert_eq!(bad(|r| r.va = 1), Err(EventError::ReservedNotZero));
        assert_eq!(
            bad(|r| {
                r.kind = kind::NACK;
                r.code = 0
            }),
            Err(EventError::BadCode(0))
        );
        assert_eq!(
            bad(|r| {
                r.kind = kind::READ_REQUEST;
                r.len = 0
            }),
            Err(EventError::NotABlock)
        );
    }
}
