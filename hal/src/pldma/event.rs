//! Events: what the engine tells its R5 (`docs/hw/pldma.md`, "Event").

use super::codes::{NackCode, PfNackCode, RapfAction, RefusalCode};
use super::descriptor::Attempt;
use super::geometry::is_block;
use super::{Pd, SEQ_MASK, TID_LIMIT};

/// An event as the ring holds it (32 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawEvent {
    pub kind: u8,
    pub code: u8,
    pub node: u16,
    pub pd: u16,
    pub tid: u16,
    pub seq: u16,
    pub aux: u16,
    pub len: u32,
    pub va: u64,
    pub va2: u64,
}

const _: () = assert!(core::mem::size_of::<RawEvent>() == 32);

pub mod kind {
    pub const ACK: u8 = 0x1;
    pub const NACK: u8 = 0x2;
    pub const PF_NACK: u8 = 0x3;
    pub const RAPF: u8 = 0x4;
    pub const READ_REQUEST: u8 = 0x5;
    pub const DOORBELL: u8 = 0x6;
    pub const REMOTE_NOTIFY: u8 = 0x7;
    pub const DESC_REFUSED: u8 = 0x8;
}

/// A transaction named by a control message: PD, tid and the attempt's seq.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxnRef {
    pub pd: Pd,
    pub tid: u16,
    pub seq: u16,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    Ack {
        node: u16,
        txn: TxnRef,
    },
    Nack {
        node: u16,
        txn: TxnRef,
        index: u16,
        code: NackCode,
    },
    PfNack {
        node: u16,
        txn: TxnRef,
        index: u16,
        code: PfNackCode,
        va: u64,
    },
    /// `txn.pd` is the wired PD; `claimed` what the writer claimed.
    Rapf {
        node: u16,
        txn: TxnRef,
        claimed: u16,
        action: RapfAction,
    },
    ReadRequest {
        node: u16,
        attempt: Attempt,
        src: u64,
        dst: u64,
        len: u32,
    },
    Doorbell {
        pd: Pd,
        value: u32,
    },
    RemoteNotify {
        node: u16,
        pd: Pd,
        imm: u32,
    },
    /// The refused descriptor's fields as they were (they may be out of range).
    DescRefused {
        code: RefusalCode,
        position: u16,
        pd: u16,
        tid: u16,
        seq: u16,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventError {
    UnknownKind(u8),
    BadCode(u8),
    BadPd(u16),
    BadTid(u16),
    BadSeq(u16),
    NotABlock,
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

    pub fn decode(r: &RawEvent) -> Result<Self, EventError> {
        let unused = |ok: bool| if ok { Ok(()) } else { Err(EventError::ReservedNotZero) };
        match r.kind {
            kind::ACK => {
                unused(r.code == 0 && r.aux == 0 && r.len == 0 && r.va == 0 && r.va2 == 0)?;
                Ok(Event::Ack { node: r.node, txn: txn(r)? })
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
