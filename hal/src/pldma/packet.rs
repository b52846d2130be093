//! PLDMA packets on the interconnect (`docs/hw/pldma.md`, "Packets"): a 40-byte header, then
//! the payload of a data packet.

use super::codes::{NackCode, PfNackCode, RapfAction};
use super::descriptor::{Attempt, WriteKind, flags};
use super::event::TxnRef;
use super::geometry::{is_block, is_packet};
use super::{MAX_PACKETS, PACKET_BYTES, Pd, SEQ_MASK, TID_LIMIT};

/// Size of the header every packet starts with.
pub const HEADER_BYTES: usize = 40;
/// The header's `magic` byte.
pub const MAGIC: u8 = 0x50;
/// The largest packet: a header and a full payload.
pub const MAX_BYTES: usize = HEADER_BYTES + PACKET_BYTES as usize;

/// The header's fields at their offsets (the wire is little-endian; `to_bytes` and
/// `from_bytes` place each field at its `offset_of!`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawHeader {
    /// `MAGIC`.
    pub magic: u8,
    /// The packet kind (`kind`).
    pub kind: u8,
    /// Data: the descriptor's READ_RESPONSE and NOTIFY (`descriptor::flags`).
    pub flags: u8,
    /// Nack, PfNack: the code; Rapf: the action.
    pub code: u8,
    /// The sending node (stamped by the engine, checked against the link by the receiver).
    pub src: u16,
    /// The node whose R5 owns `tid`.
    pub owner: u16,
    /// The PD; Rapf: the wired PD.
    pub pd: u16,
    /// The transaction id (14 bits).
    pub tid: u16,
    /// The attempt's sequence number (14 bits).
    pub seq: u16,
    /// Data, ReadRequest: first_seq; Rapf: the claimed PD; Nack, PfNack: the packet index.
    pub aux: u16,
    /// Data: this packet's index in the block.
    pub index: u8,
    /// Data: the block's packets, 1..=64.
    pub count: u8,
    /// Data: the payload bytes, 1..=256; ReadRequest: the block length, 1..=16384.
    pub len: u16,
    /// Data with NOTIFY: the immediate.
    pub imm: u32,
    /// Data: the payload's destination VA; ReadRequest: the source VA at the target;
    /// PfNack: the faulting VA.
    pub va: u64,
    /// ReadRequest: the destination VA at the requester.
    pub va2: u64,
}

const _: () = assert!(core::mem::size_of::<RawHeader>() == HEADER_BYTES);

macro_rules! wire {
    ($($field:ident: $ty:ty),* $(,)?) => {
        impl RawHeader {
            /// The header as the wire carries it: each field little-endian at its offset.
            pub fn to_bytes(&self) -> [u8; HEADER_BYTES] {
                let mut out = [0u8; HEADER_BYTES];
                $(
                    let at = core::mem::offset_of!(RawHeader, $field);
                    out[at..at + size_of::<$ty>()].copy_from_slice(&self.$field.to_le_bytes());
                )*
                out
            }

            /// The header at the start of `bytes`, if there are enough of them.
            pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
                let bytes = bytes.get(..HEADER_BYTES)?;
                let mut h = RawHeader::default();
                $(
                    let at = core::mem::offset_of!(RawHeader, $field);
                    let mut b = [0u8; size_of::<$ty>()];
                    b.copy_from_slice(&bytes[at..at + size_of::<$ty>()]);
                    h.$field = <$ty>::from_le_bytes(b);
                )*
                Some(h)
            }
        }
    };
}

wire!(
    magic: u8, kind: u8, flags: u8, code: u8, src: u16, owner: u16, pd: u16, tid: u16, seq: u16, aux: u16,
    index: u8, count: u8, len: u16, imm: u32, va: u64, va2: u64,
);

/// Packet kinds (`RawHeader::kind`; "Packet kinds").
pub mod kind {
    /// Sender engine to the destination's engine: up to 256 B of a block.
    pub const DATA: u8 = 0x1;
    /// Target engine to the owner's: one per block, when every packet of it is written.
    pub const ACK: u8 = 0x2;
    /// Target engine (or R5, via a Nack descriptor) to the owner: one per failed packet.
    pub const NACK: u8 = 0x3;
    /// Target engine to the owner: one per faulting packet (destination) or per block (source).
    pub const PF_NACK: u8 = 0x4;
    /// A PD page's engine to the owner: tid, seq, wired and claimed PD, action.
    pub const RAPF: u8 = 0x5;
    /// The requester's engine to the target's: one block to read.
    pub const READ_REQUEST: u8 = 0x6;
}

/// The control packets' routing: who sent it, whose transaction it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    /// The sending node.
    pub src: u16,
    /// The node whose R5 owns the transaction.
    pub owner: u16,
}

/// A decoded packet: one of the kinds with the fields it uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Packet<'a> {
    /// `va` is the destination of `payload[0]`; `kind` says whether the block serves a read
    /// (then `route.owner` is the destination) or carries a notification.
    Data {
        /// Sender and owner.
        route: Route,
        /// The block's PD, tid and seqs.
        attempt: Attempt,
        /// This packet's index in the block.
        index: u8,
        /// The block's packets, 1..=64.
        count: u8,
        /// The destination VA of `payload[0]`.
        va: u64,
        /// Plain write, notifying last block, or read response.
        kind: WriteKind,
        /// 1..=256 bytes inside one 256 B window of `va`.
        payload: &'a [u8],
    },
    /// Every packet of a block was written.
    Ack {
        /// The target and the owner.
        route: Route,
        /// The acknowledged attempt.
        txn: TxnRef,
    },
    /// A packet failed, or a read request was refused.
    Nack {
        /// The target and the owner.
        route: Route,
        /// The failed attempt.
        txn: TxnRef,
        /// The failed packet's index in the block.
        index: u16,
        /// Why it failed.
        code: NackCode,
    },
    /// A packet's destination, or the block's source, faulted.
    PfNack {
        /// The target and the owner.
        route: Route,
        /// The faulted attempt.
        txn: TxnRef,
        /// The faulting packet's index in the block.
        index: u16,
        /// Which end faulted.
        code: PfNackCode,
        /// The faulting VA.
        va: u64,
    },
    /// `txn.pd` is the wired PD.
    Rapf {
        /// The PD page's node and the owner.
        route: Route,
        /// The faulted attempt, under the wired PD.
        txn: TxnRef,
        /// The PD the writer claimed.
        claimed: u16,
        /// Retry or Abort.
        action: RapfAction,
    },
    /// Asks the target to write one block of its memory back to the requester.
    ReadRequest {
        /// The requester, which is also the owner.
        route: Route,
        /// The requester's PD, tid and seqs.
        attempt: Attempt,
        /// The source VA at the target.
        src_va: u64,
        /// The destination VA at the requester.
        dst_va: u64,
        /// The block length, 1..=16384, inside one 16 KiB window of `dst_va`.
        len: u32,
    },
}

/// Why `decode` refused a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketError {
    /// Fewer bytes than a header: the length received.
    Short(usize),
    /// `magic` is not `MAGIC`.
    BadMagic(u8),
    /// `kind` is not a packet kind.
    UnknownKind(u8),
    /// `flags` is not allowed for a data packet.
    BadFlags(u8),
    /// `code` is not a code of the kind.
    BadCode(u8),
    /// `pd` is not below 16.
    BadPd(u16),
    /// `tid` does not fit in 14 bits.
    BadTid(u16),
    /// `seq` (or a first_seq in `aux`) does not fit in 14 bits.
    BadSeq(u16),
    /// Packet index or count out of range.
    BadIndex,
    /// The payload's length disagrees with the header, or breaks the 256 B window rule.
    BadLength,
    /// A read request's range is not 1..=16 KiB inside one 16 KiB window of the destination.
    NotABlock,
    /// A write's data packet or a read request whose owner is not its source.
    BadOwner,
    /// A field the kind does not use is not 0.
    ReservedNotZero,
}

impl Packet<'_> {
    /// Who sent it and whose transaction it is.
    pub fn route(&self) -> Route {
        match *self {
            Packet::Data { route, .. }
            | Packet::Ack { route, .. }
            | Packet::Nack { route, .. }
            | Packet::PfNack { route, .. }
            | Packet::Rapf { route, .. }
            | Packet::ReadRequest { route, .. } => route,
        }
    }

    /// Its header, with `MAGIC` and every field the kind does not use 0.
    pub fn header(&self) -> RawHeader {
        let mut h = RawHeader { magic: MAGIC, ..RawHeader::default() };
        let base = |h: &mut RawHeader, r: Route, pd: Pd, tid: u16, seq: u16| {
            (h.src, h.owner, h.pd, h.tid, h.seq) = (r.src, r.owner, pd.raw(), tid, seq);
        };
        match *self {
            Packet::Data { route, attempt, index, count, va, kind: k, payload } => {
                h.kind = kind::DATA;
                base(&mut h, route, attempt.pd, attempt.tid, attempt.seq);
                h.flags = match k {
                    WriteKind::Write => 0,
                    WriteKind::Notify { imm } => {
                        h.imm = imm;
                        flags::NOTIFY
                    }
                    WriteKind::ReadResponse => flags::READ_RESPONSE,
                };
                (h.aux, h.index, h.count, h.len, h.va) = (attempt.first_seq, index, count, payload.len() as u16, va);
            }
            Packet::Ack { route, txn } => {
                h.kind = kind::ACK;
                base(&mut h, route, txn.pd, txn.tid, txn.seq);
            }
            Packet::Nack { route, txn, index, code } => {
                (h.kind, h.code, h.aux) = (kind::NACK, code.raw(), index);
                base(&mut h, route, txn.pd, txn.tid, txn.seq);
            }
            Packet::PfNack { route, txn, index, code, va } => {
                (h.kind, h.code, h.aux, h.va) = (kind::PF_NACK, code.raw(), index, va);
                base(&mut h, route, txn.pd, txn.tid, txn.seq);
            }
            Packet::Rapf { route, txn, claimed, action } => {
                (h.kind, h.code, h.aux) = (kind::RAPF, action.raw(), claimed);
                base(&mut h, route, txn.pd, txn.tid, txn.seq);
            }
            Packet::ReadRequest { route, attempt, src_va, dst_va, len } => {
                h.kind = kind::READ_REQUEST;
                base(&mut h, route, attempt.pd, attempt.tid, attempt.seq);
                (h.aux, h.len, h.va, h.va2) = (attempt.first_seq, len as u16, src_va, dst_va);
            }
        }
        h
    }

    /// The payload after the header (data packets), or nothing.
    pub fn payload(&self) -> &[u8] {
        match self {
            Packet::Data { payload, .. } => payload,
            _ => &[],
        }
    }

    /// Writes the packet into `out` and returns its length (`out` holds `MAX_BYTES`).
    pub fn encode(&self, out: &mut [u8; MAX_BYTES]) -> usize {
        out[..HEADER_BYTES].copy_from_slice(&self.header().to_bytes());
        let payload = self.payload();
        out[HEADER_BYTES..HEADER_BYTES + payload.len()].copy_from_slice(payload);
        HEADER_BYTES + payload.len()
    }
}

fn txn(h: &RawHeader) -> Result<TxnRef, PacketError> {
    let pd = Pd::new(h.pd).ok_or(PacketError::BadPd(h.pd))?;
    if h.tid >= TID_LIMIT {
        return Err(PacketError::BadTid(h.tid));
    }
    if h.seq > SEQ_MASK {
        return Err(PacketError::BadSeq(h.seq));
    }
    Ok(TxnRef { pd, tid: h.tid, seq: h.seq })
}

fn attempt(h: &RawHeader) -> Result<Attempt, PacketError> {
    let t = txn(h)?;
    if h.aux > SEQ_MASK {
        return Err(PacketError::BadSeq(h.aux));
    }
    Ok(Attempt { pd: t.pd, tid: t.tid, seq: t.seq, first_seq: h.aux })
}

/// Checks every rule that does not depend on the receiver (which also checks `src` against
/// the link and `owner` against itself).
pub fn decode(bytes: &[u8]) -> Result<Packet<'_>, PacketError> {
    let h = RawHeader::from_bytes(bytes).ok_or(PacketError::Short(bytes.len()))?;
    let body = &bytes[HEADER_BYTES..];
    if h.magic != MAGIC {
        return Err(PacketError::BadMagic(h.magic));
    }
    let route = Route { src: h.src, owner: h.owner };
    let unused = |ok: bool| if ok { Ok(()) } else { Err(PacketError::ReservedNotZero) };
    let no_body = || if body.is_empty() { Ok(()) } else { Err(PacketError::BadLength) };
    let control =
        |h: &RawHeader| unused(h.flags == 0 && h.index == 0 && h.count == 0 && h.len == 0 && h.imm == 0 && h.va2 == 0);
    match h.kind {
        kind::DATA => {
            let attempt = attempt(&h)?;
            unused(h.code == 0 && h.va2 == 0)?;
            let k = match h.flags {
                0 => WriteKind::Write,
                flags::NOTIFY => WriteKind::Notify { imm: h.imm },
                flags::READ_RESPONSE => WriteKind::ReadResponse,
                other => return Err(PacketError::BadFlags(other)),
            };
            if !matches!(k, WriteKind::Notify { .. }) && h.imm != 0 {
                return Err(PacketError::ReservedNotZero);
            }
            if h.count == 0 || usize::from(h.count) > MAX_PACKETS || h.index >= h.count {
                return Err(PacketError::BadIndex);
            }
            if usize::from(h.len) != body.len() || !is_packet(h.va, u64::from(h.len)) {
                return Err(PacketError::BadLength);
            }
            if k != WriteKind::ReadResponse && h.owner != h.src {
                return Err(PacketError::BadOwner);
            }
            Ok(Packet::Data { route, attempt, index: h.index, count: h.count, va: h.va, kind: k, payload: body })
        }
        kind::ACK => {
            control(&h)?;
            unused(h.code == 0 && h.aux == 0 && h.va == 0)?;
            no_body()?;
            Ok(Packet::Ack { route, txn: txn(&h)? })
        }
        kind::NACK => {
            control(&h)?;
            unused(h.va == 0)?;
            no_body()?;
            let code = NackCode::from_raw(h.code).ok_or(PacketError::BadCode(h.code))?;
            Ok(Packet::Nack { route, txn: txn(&h)?, index: h.aux, code })
        }
        kind::PF_NACK => {
            control(&h)?;
            no_body()?;
            let code = PfNackCode::from_raw(h.code).ok_or(PacketError::BadCode(h.code))?;
            Ok(Packet::PfNack { route, txn: txn(&h)?, index: h.aux, code, va: h.va })
        }
        kind::RAPF => {
            control(&h)?;
            unused(h.va == 0)?;
            no_body()?;
            let action = RapfAction::from_raw(h.code).ok_or(PacketError::BadCode(h.code))?;
            Ok(Packet::Rapf { route, txn: txn(&h)?, claimed: h.aux, action })
        }
        kind::READ_REQUEST => {
            let attempt = attempt(&h)?;
            unused(h.flags == 0 && h.code == 0 && h.index == 0 && h.count == 0 && h.imm == 0)?;
            no_body()?;
            if !is_block(h.va2, u64::from(h.len)) || h.va.checked_add(u64::from(h.len)).is_none() {
                return Err(PacketError::NotABlock);
            }
            if h.owner != h.src {
                return Err(PacketError::BadOwner);
            }
            Ok(Packet::ReadRequest { route, attempt, src_va: h.va, dst_va: h.va2, len: u32::from(h.len) })
        }
        other => Err(PacketError::UnknownKind(other)),
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
    fn header_and_kinds_match_the_doc() {
        let fields = [
            ("magic", offset_of!(RawHeader, magic)),
            ("kind", offset_of!(RawHeader, kind)),
            ("flags", offset_of!(RawHeader, flags)),
            ("code", offset_of!(RawHeader, code)),
            ("src", offset_of!(RawHeader, src)),
            ("owner", offset_of!(RawHeader, owner)),
            ("pd", offset_of!(RawHeader, pd)),
            ("tid", offset_of!(RawHeader, tid)),
            ("seq", offset_of!(RawHeader, seq)),
            ("aux", offset_of!(RawHeader, aux)),
            ("index", offset_of!(RawHeader, index)),
            ("count", offset_of!(RawHeader, count)),
            ("len", offset_of!(RawHeader, len)),
            ("imm", offset_of!(RawHeader, imm)),
            ("va", offset_of!(RawHeader, va)),
            ("va2", offset_of!(RawHeader, va2)),
        ];
        let expected: Vec<(String, usize)> = fields.iter().map(|(n, o)| ((*n).into(), *o)).collect();
        assert_eq!(doc_table(DOC, "## Packets"), expected);
        let kinds = [
            ("Data", kind::DATA),
            ("Ack", kind::ACK),
            ("Nack", kind::NACK),
            ("PfNack", kind::PF_NACK),
            ("Rapf", kind::RAPF),
            ("ReadRequest", kind::READ_REQUEST),
        ];
        let kinds: Vec<(String, usize)> = kinds.iter().map(|(n, v)| ((*n).into(), usize::from(*v))).collect();
        assert_eq!(doc_table(DOC, "Packet kinds"), kinds);
    }

    #[test]
    fn the_wire_is_little_endian_at_the_documented_offsets() {
        let h = RawHeader { magic: MAGIC, src: 0x0102, va: 0x1122_3344_5566_7788, ..RawHeader::default() };
        let b = h.to_bytes();
        assert_eq!(b[0], 0x50);
        assert_eq!(&b[4..6], &[0x02, 0x01]);
        assert_eq!(&b[0x18..0x20], &[0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11]);
        assert_eq!(RawHeader::from_bytes(&b), Some(h));
        assert_eq!(RawHeader::from_bytes(&b[..39]), None);
    }

    fn round_trip(p: Packet<'_>) {
        let mut buf = [0u8; MAX_BYTES];
        let n = p.encode(&mut buf);
        assert_eq!(decode(&buf[..n]), Ok(p));
    }

    #[test]
    fn every_kind_round_trips() {
        let pd = Pd::new(7).unwrap();
        let a = Attempt { pd, tid: 100, seq: 9, first_seq: 8 };
        let t = TxnRef { pd, tid: 100, seq: 9 };
        let r = Route { src: 1, owner: 1 };
        let data = [0xa5u8; 256];
        round_trip(Packet::Data {
            route: r,
            attempt: a,
            index: 0,
            count: 64,
            va: 0x1000,
            kind: WriteKind::Write,
            payload: &data,
        });
        round_trip(Packet::Data {
            route: r,
            attempt: a,
            index: 3,
            count: 4,
            va: 0x10ff,
            kind: WriteKind::Notify { imm: 5 },
            payload: &data[..1],
        });
        round_trip(Packet::Data {
            route: Route { src: 2, owner: 1 },
            attempt: a,
            index: 0,
            count: 1,
            va: 0x0,
            kind: WriteKind::ReadResponse,
            payload: &data[..16],
        });
        round_trip(Packet::Ack { route: r, txn: t });
        round_trip(Packet::Nack { route: r, txn: t, index: 5, code: NackCode::NoPd });
        round_trip(Packet::PfNack { route: r, txn: t, index: 5, code: PfNackCode::Destination, va: 0xdead_b000 });
        round_trip(Packet::Rapf { route: r, txn: t, claimed: 3, action: RapfAction::Retry });
        round_trip(Packet::ReadRequest { route: r, attempt: a, src_va: 0x123, dst_va: 0x4000, len: 16384 });
    }

    #[test]
    fn malformed_packets_are_refused() {
        let pd = Pd::new(0).unwrap();
        let a = Attempt { pd, tid: 1, seq: 1, first_seq: 1 };
        let r = Route { src: 1, owner: 1 };
        let payload = [1u8; 32];
        let good =
            Packet::Data { route: r, attempt: a, index: 0, count: 1, va: 0, kind: WriteKind::Write, payload: &payload };
        let mut buf = [0u8; MAX_BYTES];
        let n = good.encode(&mut buf);
        let with = |f: &dyn Fn(&mut RawHeader), extra: isize| {
            let mut h = RawHeader::from_bytes(&buf).unwrap();
            f(&mut h);
            let mut b = std::vec::Vec::from(&h.to_bytes()[..]);
            b.extend_from_slice(&buf[HEADER_BYTES..(n as isize + extra) as usize]);
            decode(&b).map(|_| ())
        };
        assert_eq!(decode(&buf[..10]), Err(PacketError::Short(10)));
        assert_eq!(with(&|h| h.magic = 0, 0), Err(PacketError::BadMagic(0)));
        assert_eq!(with(&|h| h.kind = 0x7f, 0), Err(PacketError::UnknownKind(0x7f)));
        assert_eq!(with(&|h| h.flags = 3, 0), Err(PacketError::BadFlags(3)));
        assert_eq!(with(&|h| h.pd = 16, 0), Err(PacketError::BadPd(16)));
        assert_eq!(with(&|h| h.tid = 0xffff, 0), Err(PacketError::BadTid(0xffff)));
        assert_eq!(with(&|h| h.aux = 0xffff, 0), Err(PacketError::BadSeq(0xffff)));
        assert_eq!(with(&|h| h.count = 0, 0), Err(PacketError::BadIndex));
        assert_eq!(with(&|h| h.count = 65, 0), Err(PacketError::BadIndex));
        assert_eq!(with(&|h| h.index = 1, 0), Err(PacketError::BadIndex));
        assert_eq!(with(&|_| {}, -1), Err(PacketError::BadLength), "truncated payload");
        assert_eq!(with(&|h| h.va = 0xf0, 0), Err(PacketError::BadLength), "crosses a 256 B window");
        assert_eq!(with(&|h| h.owner = 2, 0), Err(PacketError::BadOwner), "a write owned by someone else");
        assert_eq!(with(&|h| h.imm = 1, 0), Err(PacketError::ReservedNotZero));
        assert_eq!(
            with(
                &|h| {
                    h.kind = kind::ACK;
                    h.count = 0;
                    h.len = 0;
                    h.aux = 0;
                    h.va = 0
                },
                -32
            ),
            Ok(())
        );
        assert_eq!(
            with(
                &|h| {
                    h.kind = kind::ACK;
                    h.count = 0;
                    h.len = 0;
                    h.aux = 0;
                    h.va = 0
                },
                0
            ),
            Err(PacketError::BadLength),
            "an ACK with a body"
        );
    }
}
