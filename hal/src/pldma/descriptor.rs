//! Descriptors: the R5's orders to the engine (`docs/hw/pldma.md`, "Descriptor").

use super::codes::NackCode;
use super::geometry::is_block;
use super::{Pd, SEQ_MASK, TID_LIMIT, VCS_PER_PD};

/// A descriptor as the ring holds it (64 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawDescriptor {
    /// The descriptor op (`op`).
    pub op: u8,
    /// `flags::READ_RESPONSE` or `flags::NOTIFY` (WriteBlock only), or 0.
    pub flags: u8,
    /// Nack: the NACK code; otherwise 0.
    pub code: u8,
    /// The transfer's virtual channel, 0..63; reported in refusals.
    pub vc: u8,
    /// The PD, 0..15: its stream ID goes with every source access, and the packets carry it.
    pub pd: u16,
    /// The destination node: the target of a write, of a read request, of a NACK.
    pub node: u16,
    /// The transaction id (14 bits); for READ_RESPONSE, the requester's.
    pub tid: u16,
    /// The attempt's sequence number (14 bits).
    pub seq: u16,
    /// The seq of the block's first attempt (14 bits); Nack: 0.
    pub first_seq: u16,
    /// Reserved: 0.
    pub reserved0: u16,
    /// WriteBlock, ReadRequest: the block's length in bytes, 1..=16384; Nack: 0.
    pub len: u32,
    /// WriteBlock with NOTIFY: the immediate for the target's CQE; otherwise 0.
    pub imm: u32,
    /// WriteBlock: the source VA on this node; ReadRequest: the source VA at `node`; Nack: 0.
    pub src: u64,
    /// WriteBlock: the destination VA at `node`; ReadRequest: the destination VA here; Nack: 0.
    pub dst: u64,
    /// Reserved: 24 bytes of 0.
    pub reserved1: [u64; 3],
}

const _: () = assert!(core::mem::size_of::<RawDescriptor>() == 64);

impl RawDescriptor {
    /// A WriteBlock as the ring holds it, built field by field: what
    /// [`Descriptor::encode`] gives for it, without the enum in between (the R5 builds one per
    /// block and writes it straight into its ring slot).
    #[inline(always)]
    pub const fn write_block(
        vc: u8,
        attempt: &Attempt,
        node: u16,
        src: u64,
        dst: u64,
        len: u32,
        kind: WriteKind,
    ) -> Self {
        let (flags, imm) = match kind {
            WriteKind::Write => (0, 0),
            WriteKind::Notify { imm } => (flags::NOTIFY, imm),
            WriteKind::ReadResponse => (flags::READ_RESPONSE, 0),
        };
        Self::block(op::WRITE_BLOCK, flags, imm, vc, attempt, node, src, dst, len)
    }

    /// A ReadRequest as the ring holds it (see [`RawDescriptor::write_block`]).
    #[inline(always)]
    pub const fn read_request(vc: u8, attempt: &Attempt, node: u16, src: u64, dst: u64, len: u32) -> Self {
        Self::block(op::READ_REQUEST, 0, 0, vc, attempt, node, src, dst, len)
    }

    /// Built as the sixteen little-endian words the ring holds (the layout above has no
    /// padding): the compiler then stores words into the ring slot, where a field-by-field
    /// literal made the R5 store bytes and halfwords and build the reserved zeros on its stack.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    const fn block(op: u8, flags: u8, imm: u32, vc: u8, a: &Attempt, node: u16, src: u64, dst: u64, len: u32) -> Self {
        const _: () = assert!(cfg!(target_endian = "little"), "the words below are little-endian");
        let words: [u32; 16] = [
            op as u32 | (flags as u32) << 8 | (vc as u32) << 24,
            a.pd.raw() as u32 | (node as u32) << 16,
            a.tid as u32 | (a.seq as u32) << 16,
            a.first_seq as u32,
            len,
            imm,
            src as u32,
            (src >> 32) as u32,
            dst as u32,
            (dst >> 32) as u32,
            0,
            0,
            0,
            0,
            0,
            0,
        ];
        // SAFETY: same size (asserted above the type), every field an integer, no padding
        // (the offsets are held to the doc's table by `layout_matches_the_doc`), so every bit
        // pattern is a RawDescriptor; word k holds bytes 4k..4k+4 in little-endian order.
        unsafe { core::mem::transmute::<[u32; 16], RawDescriptor>(words) }
    }
}

/// Descriptor ops (`RawDescriptor::op`; "Descriptor ops").
pub mod op {
    /// Read `[src, src + len)` under `pd`, cut it on the 256 B windows of `dst`, send to `node`.
    pub const WRITE_BLOCK: u8 = 0x1;
    /// Send one READ_REQUEST packet to `node`.
    pub const READ_REQUEST: u8 = 0x2;
    /// Send one NACK packet with `code` to `node` (the R5 refusing a read request).
    pub const NACK: u8 = 0x3;
}

/// Descriptor flags (`RawDescriptor::flags`), also the data packets' `flags`.
pub mod flags {
    /// Bit 0: the block serves node `node`'s read (WriteBlock only).
    pub const READ_RESPONSE: u8 = 1 << 0;
    /// Bit 1: the last block of a write that asked for a remote notification (WriteBlock only).
    pub const NOTIFY: u8 = 1 << 1;
}

/// One attempt of one block: the fields that name it everywhere (descriptor, packets, events).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attempt {
    /// The PD of the transfer.
    pub pd: Pd,
    /// 14 bits.
    pub tid: u16,
    /// This attempt (14 bits).
    pub seq: u16,
    /// The block's first attempt (14 bits).
    pub first_seq: u16,
}

impl Attempt {
    /// The tid and both seqs fit in 14 bits.
    pub const fn is_valid(&self) -> bool {
        self.tid < TID_LIMIT && self.seq <= SEQ_MASK && self.first_seq <= SEQ_MASK
    }
}

/// What a WriteBlock's packets are, beyond data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteKind {
    /// A block of this node's write: the target ACKs to this node.
    Write,
    /// The last block of a write whose target posts a RemoteWrite CQE with `imm`.
    Notify {
        /// The immediate for the target's CQE.
        imm: u32,
    },
    /// A block serving `node`'s read: `node` owns the transaction.
    ReadResponse,
}

/// A decoded descriptor: one of the three ops with the fields it uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Descriptor {
    /// Send `[src, src + len)` of this node to `[dst, dst + len)` at `node`.
    WriteBlock {
        /// The transfer's virtual channel, 0..63.
        vc: u8,
        /// The block's PD, tid and seqs.
        attempt: Attempt,
        /// The target node.
        node: u16,
        /// The source VA on this node.
        src: u64,
        /// The destination VA at `node`.
        dst: u64,
        /// Bytes, 1..=16384, inside one 16 KiB window of `dst`.
        len: u32,
        /// Plain write, notifying last block, or read response.
        kind: WriteKind,
    },
    /// Ask `node` to write its `[src, src + len)` to `[dst, dst + len)` here.
    ReadRequest {
        /// The transfer's virtual channel, 0..63.
        vc: u8,
        /// The block's PD, tid and seqs.
        attempt: Attempt,
        /// The node to read from.
        node: u16,
        /// The source VA at `node`.
        src: u64,
        /// The destination VA here.
        dst: u64,
        /// Bytes, 1..=16384, inside one 16 KiB window of `dst`.
        len: u32,
    },
    /// Send one NACK with `code` to `node` (the R5 refusing a read request).
    Nack {
        /// The virtual channel, 0..63.
        vc: u8,
        /// The PD of the refused request.
        pd: Pd,
        /// The transaction id the NACK names (14 bits): the requester's.
        tid: u16,
        /// The attempt's sequence number (14 bits): the requester's.
        seq: u16,
        /// The destination node: the requester.
        node: u16,
        /// Why it was refused.
        code: NackCode,
    },
}

/// Why `Descriptor::decode` refused a raw descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DescriptorError {
    /// `op` is not a descriptor op.
    UnknownOp(u8),
    /// `flags` is not allowed for the op.
    BadFlags(u8),
    /// `code` is not allowed for the op (or not a NACK code).
    BadCode(u8),
    /// `vc` is not below 64.
    BadVc(u8),
    /// `pd` is not below 16.
    BadPd(u16),
    /// `tid` does not fit in 14 bits.
    BadTid(u16),
    /// `seq` or `first_seq` does not fit in 14 bits.
    BadSeq(u16),
    /// Not 1..=16 KiB inside one 16 KiB window of the destination.
    NotABlock {
        /// The descriptor's `dst`.
        dst: u64,
        /// The descriptor's `len`.
        len: u32,
    },
    /// A reserved field, or a field the op does not use, is not 0.
    ReservedNotZero,
}

impl Descriptor {
    /// The virtual channel.
    pub fn vc(&self) -> u8 {
        match *self {
            Descriptor::WriteBlock { vc, .. } | Descriptor::ReadRequest { vc, .. } | Descriptor::Nack { vc, .. } => vc,
        }
    }

    /// The destination node.
    pub fn node(&self) -> u16 {
        match *self {
            Descriptor::WriteBlock { node, .. }
            | Descriptor::ReadRequest { node, .. }
            | Descriptor::Nack { node, .. } => node,
        }
    }

    /// The PD.
    pub fn pd(&self) -> Pd {
        match *self {
            Descriptor::WriteBlock { attempt, .. } | Descriptor::ReadRequest { attempt, .. } => attempt.pd,
            Descriptor::Nack { pd, .. } => pd,
        }
    }

    /// The descriptor as the ring holds it; unused fields are 0.
    pub fn encode(&self) -> RawDescriptor {
        match *self {
            Descriptor::WriteBlock { vc, attempt, node, src, dst, len, kind } => {
                RawDescriptor::write_block(vc, &attempt, node, src, dst, len, kind)
            }
            Descriptor::ReadRequest { vc, attempt, node, src, dst, len } => {
                RawDescriptor::read_request(vc, &attempt, node, src, dst, len)
            }
            Descriptor::Nack { vc, pd, tid, seq, node, code } => RawDescriptor {
                op: op::NACK,
                code: code.raw(),
                vc,
                pd: pd.raw(),
                node,
                tid,
                seq,
                ..RawDescriptor::default()
            },
        }
    }

    /// Checks every rule of the descriptor table except the node's range (the engine's: it
    /// depends on the cluster).
    pub fn decode(r: &RawDescriptor) -> Result<Self, DescriptorError> {
        if r.reserved0 != 0 || r.reserved1 != [0; 3] {
            return Err(DescriptorError::ReservedNotZero);
        }
        if usize::from(r.vc) >= VCS_PER_PD {
            return Err(DescriptorError::BadVc(r.vc));
        }
        let pd = Pd::new(r.pd).ok_or(DescriptorError::BadPd(r.pd))?;
        if r.tid >= TID_LIMIT {
            return Err(DescriptorError::BadTid(r.tid));
        }
        if r.seq > SEQ_MASK || r.first_seq > SEQ_MASK {
            return Err(DescriptorError::BadSeq(if r.seq > SEQ_MASK { r.seq } else { r.first_seq }));
        }
        let attempt = Attempt { pd, tid: r.tid, seq: r.seq, first_seq: r.first_seq };
        let block = |r: &RawDescriptor| {
            if is_block(r.dst, u64::from(r.len)) && r.src.checked_add(u64::from(r.len)).is_some() {
                Ok(())
            } else {
                Err(DescriptorError::NotABlock { dst: r.dst, len: r.len })
            }
        };
        match r.op {
            op::WRITE_BLOCK => {
                if r.code != 0 {
                    return Err(DescriptorError::BadCode(r.code));
                }
                let kind = match r.flags {
                    0 => WriteKind::Write,
                    flags::NOTIFY => WriteKind::Notify { imm: r.imm },
                    flags::READ_RESPONSE => WriteKind::ReadResponse,
                    other => return Err(DescriptorError::BadFlags(other)),
                };
                if !matches!(kind, WriteKind::Notify { .. }) && r.imm != 0 {
                    return Err(DescriptorError::ReservedNotZero);
                }
                block(r)?;
                Ok(Descriptor::WriteBlock { vc: r.vc, attempt, node: r.node, src: r.src, dst: r.dst, len: r.len, kind })
            }
            op::READ_REQUEST => {
                if r.flags != 0 {
                    return Err(DescriptorError::BadFlags(r.flags));
                }
                if r.code != 0 {
                    return Err(DescriptorError::BadCode(r.code));
                }
                if r.imm != 0 {
                    return Err(DescriptorError::ReservedNotZero);
                }
                block(r)?;
                Ok(Descriptor::ReadRequest { vc: r.vc, attempt, node: r.node, src: r.src, dst: r.dst, len: r.len })
            }
            op::NACK => {
                if r.flags != 0 {
                    return Err(DescriptorError::BadFlags(r.flags));
                }
                let code = NackCode::from_raw(r.code).ok_or(DescriptorError::BadCode(r.code))?;
                if r.first_seq != 0 || r.len != 0 || r.imm != 0 || r.src != 0 || r.dst != 0 {
                    return Err(DescriptorError::ReservedNotZero);
                }
                Ok(Descriptor::Nack { vc: r.vc, pd, tid: r.tid, seq: r.seq, node: r.node, code })
            }
            other => Err(DescriptorError::UnknownOp(other)),
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

    fn attempt() -> Attempt {
        Attempt { pd: Pd::new(3).unwrap(), tid: 0x3fff, seq: 7, first_seq: 5 }
    }

    #[test]
    fn layout_matches_the_doc() {
        let fields = [
            ("op", offset_of!(RawDescriptor, op)),
            ("flags", offset_of!(RawDescriptor, flags)),
            ("code", offset_of!(RawDescriptor, code)),
            ("vc", offset_of!(RawDescriptor, vc)),
            ("pd", offset_of!(RawDescriptor, pd)),
            ("node", offset_of!(RawDescriptor, node)),
            ("tid", offset_of!(RawDescriptor, tid)),
            ("seq", offset_of!(RawDescriptor, seq)),
            ("first_seq", offset_of!(RawDescriptor, first_seq)),
            ("reserved0", offset_of!(RawDescriptor, reserved0)),
            ("len", offset_of!(RawDescriptor, len)),
            ("imm", offset_of!(RawDescriptor, imm)),
            ("src", offset_of!(RawDescriptor, src)),
            ("dst", offset_of!(RawDescriptor, dst)),
            ("reserved1", offset_of!(RawDescriptor, reserved1)),
        ];
        let expected: Vec<(String, usize)> = fields.iter().map(|(n, o)| ((*n).into(), *o)).collect();
        assert_eq!(doc_table(DOC, "Descriptor (64 B"), expected);
        let ops = [("WriteBlock", op::WRITE_BLOCK), ("ReadRequest", op::READ_REQUEST), ("Nack", op::NACK)];
        let ops: Vec<(String, usize)> = ops.iter().map(|(n, v)| ((*n).into(), usize::from(*v))).collect();
        assert_eq!(doc_table(DOC, "Descriptor ops"), ops);
    }

    #[test]
    fn every_kind_round_trips() {
        let a = attempt();
        for d in [
            Descriptor::WriteBlock {
                vc: 63,
                attempt: a,
                node: 2,
                src: 0x1001,
                dst: 0x4000,
                len: 16384,
                kind: WriteKind::Write,
            },
            Descriptor::WriteBlock {
                vc: 0,
                attempt: a,
                node: 2,
                src: 1,
                dst: 0x7fff,
                len: 1,
                kind: WriteKind::Notify { imm: 9 },
            },
            Descriptor::WriteBlock {
                vc: 1,
                attempt: a,
                node: 0,
                src: 1,
                dst: 2,
                len: 3,
                kind: WriteKind::ReadResponse,
            },
            Descriptor::ReadRequest { vc: 5, attempt: a, node: 1, src: 0xabc, dst: 0x100, len: 256 },
            Descriptor::Nack { vc: 0, pd: a.pd, tid: 9, seq: 3, node: 4, code: NackCode::NoPd },
        ] {
            assert_eq!(Descriptor::decode(&d.encode()), Ok(d));
        }
    }

    #[test]
    fn malformed_descriptors_are_refused() {
        let good = Descriptor::WriteBlock {
            vc: 0,
            attempt: attempt(),
            node: 1,
            src: 0,
            dst: 0,
            len: 16,
            kind: WriteKind::Write,
        }
        .encode();
        let bad = |f: fn(&mut RawDescriptor)| {
            let mut r = good;
            f(&mut r);
            Descriptor::decode(&r)
        };
        assert_eq!(bad(|r| r.op = 9), Err(DescriptorError::UnknownOp(9)));
        assert_eq!(bad(|r| r.op = 0), Err(DescriptorError::UnknownOp(0)));
        assert_eq!(bad(|r| r.flags = 3), Err(DescriptorError::BadFlags(3)));
        assert_eq!(bad(|r| r.vc = 64), Err(DescriptorError::BadVc(64)));
        assert_eq!(bad(|r| r.pd = 16), Err(DescriptorError::BadPd(16)));
        assert_eq!(bad(|r| r.tid = 0x4000), Err(DescriptorError::BadTid(0x4000)));
        assert_eq!(bad(|r| r.seq = 0x4000), Err(DescriptorError::BadSeq(0x4000)));
        assert_eq!(bad(|r| r.len = 0), Err(DescriptorError::NotABlock { dst: 0, len: 0 }));
        assert_eq!(bad(|r| r.len = 16385), Err(DescriptorError::NotABlock { dst: 0, len: 16385 }));
        assert_eq!(bad(|r| r.dst = 16383), Err(DescriptorError::NotABlock { dst: 16383, len: 16 }), "crosses a window");
        assert_eq!(bad(|r| r.src = u64::MAX), Err(DescriptorError::NotABlock { dst: 0, len: 16 }), "source wraps");
        assert_eq!(bad(|r| r.reserved1[2] = 1), Err(DescriptorError::ReservedNotZero));
        assert_eq!(bad(|r| r.imm = 1), Err(DescriptorError::ReservedNotZero), "imm without NOTIFY");
        assert_eq!(bad(|r| r.code = 1), Err(DescriptorError::BadCode(1)));
        assert_eq!(
            bad(|r| {
                r.op = op::NACK;
                r.code = 0;
                r.len = 0;
                r.first_seq = 0
            }),
            Err(DescriptorError::BadCode(0))
        );
        assert!(bad(|r| r.op = op::NACK).is_err(), "a NACK with block fields");
    }
}
