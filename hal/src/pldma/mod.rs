//! The PLDMA engine (`docs/hw/pldma.md`): the register block, the formats the engine itself reads
//! and writes (descriptors, events, the fault FIFO entry, the RAPF register, the packets on the
//! interconnect), and the drivers. The queues and rings in memory, which software lays out, are
//! in `proto::rdma`.
//!
//! Every entry format is a `#[repr(C)]` raw type (what memory or the wire holds) plus a typed
//! value with explicit `encode`/`decode`; decoding validates and answers a typed error, so a
//! malformed descriptor, packet or WQE can never reach the logic that acts on it.

pub mod active;
pub mod codes;
pub mod descriptor;
pub mod driver;
pub mod event;
pub mod fault;
pub mod geometry;
pub mod packet;
pub mod rapf;
pub mod regs;

// The raw formats are little-endian in memory and on the wire, and the processors that read them
// are too; the raw types rely on it.
const _: () = assert!(cfg!(target_endian = "little"));

/// Protection domains per node: SMMU context banks (seed 002 §1.3.2).
pub const PDS: usize = 16;
/// Virtual channels per PD (seed 002 §1.3.2).
pub const VCS_PER_PD: usize = 64;
/// The largest block, and the alignment of blocks on the destination VA (seed 002 §1.3.2).
pub const BLOCK_BYTES: u64 = 16 * 1024;
/// The largest packet payload, and the alignment of packets on the destination VA.
pub const PACKET_BYTES: u64 = 256;
/// Packets in a block at most.
pub const MAX_PACKETS: usize = (BLOCK_BYTES / PACKET_BYTES) as usize;
/// Entries of the receiver fault FIFO (seed 002 Tab 3.2).
pub const FIFO_DEPTH: usize = 512;
/// Transaction ids are 14 bits (seed 002 §3.2.3.3).
pub const TID_BITS: u32 = 14;
/// Sequence numbers are 14 bits, the FIFO's width (seed 002 Tab 3.2), compared modulo 2^14.
pub const SEQ_BITS: u32 = 14;
/// Transaction ids lie below this: 2^14.
pub const TID_LIMIT: u16 = 1 << TID_BITS;
/// The largest sequence number, and the mask of sequence-number space: 2^14 - 1.
pub const SEQ_MASK: u16 = (1 << SEQ_BITS) - 1;
/// Blocks the receiver's table remembers.
pub const RECEIVER_BLOCKS: usize = 1024;
/// Process VAs lie below this (the user half of a 48-bit address space).
pub const USER_VA_LIMIT: u64 = 1 << 48;
/// A page, as the SMMU translates it.
pub const PAGE_BYTES: u64 = 4096;

/// A protection domain of this node, 0..16.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pd(u8);

impl Pd {
    /// PD 0.
    pub const ZERO: Pd = Pd(0);

    /// PD `value`, or `None` if it is not below `PDS`.
    pub const fn new(value: u16) -> Option<Self> {
        if (value as usize) < PDS { Some(Self(value as u8)) } else { None }
    }

    /// Its number, as an index (0..16).
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    /// Its number, as the 16-bit `pd` fields of descriptors, events and packets hold it.
    pub const fn raw(self) -> u16 {
        self.0 as u16
    }

    /// Its bit in `pd_enable`, `pd_busy` and `cq_pending`: `1 << p`.
    pub const fn bit(self) -> u32 {
        1 << self.0
    }
}

/// The SMMU stream ID of the engine's accesses for PD `pd`: it drives the PD on its AXI ID
/// (`docs/hw/smmu.md`, "Stream IDs and protection domains"), so context bank `pd` translates
/// them.
pub const fn stream_id(pd: Pd) -> u16 {
    crate::smmu500::config::PLDMA_STREAM_BASE + pd.raw()
}

/// `seq + 1` in sequence-number space.
pub const fn seq_next(seq: u16) -> u16 {
    seq.wrapping_add(1) & SEQ_MASK
}

/// `a` is later than `b` in serial-number arithmetic modulo 2^14 (RFC 1982): at most half the
/// space ahead.
pub const fn seq_newer(a: u16, b: u16) -> bool {
    let d = a.wrapping_sub(b) & SEQ_MASK;
    d != 0 && d < 1 << (SEQ_BITS - 1)
}

/// `seq` lies in `[first, current]`, walking forward from `first`.
pub const fn seq_within(seq: u16, first: u16, current: u16) -> bool {
    (seq.wrapping_sub(first) & SEQ_MASK) <= (current.wrapping_sub(first) & SEQ_MASK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_numbers_compare_across_the_wrap() {
        assert!(seq_newer(1, 0));
        assert!(seq_newer(0, SEQ_MASK), "0 follows 16383");
        assert!(!seq_newer(5, 5));
        assert!(!seq_newer(0, 1));
        assert!(!seq_newer(0x2000, 0), "half the space away is not newer");
        assert_eq!(seq_next(SEQ_MASK), 0);
        assert!(seq_within(3, 1, 5));
        assert!(seq_within(1, 1, 1));
        assert!(!seq_within(0, 1, 5));
        assert!(!seq_within(6, 1, 5));
        assert!(seq_within(1, SEQ_MASK - 1, 2), "a window across the wrap");
        assert!(!seq_within(SEQ_MASK - 2, SEQ_MASK - 1, 2));
    }

    #[test]
    fn each_pd_has_the_stream_the_smmu_maps_to_its_bank() {
        for p in 0..PDS as u16 {
            let pd = Pd::new(p).unwrap();
            let stream = crate::smmu500::config::StreamId::pldma(p as u8).unwrap();
            assert_eq!(stream_id(pd), stream.get());
        }
    }

    #[test]
    fn pds_are_below_sixteen() {
        assert_eq!(Pd::new(15).map(Pd::index), Some(15));
        assert_eq!(Pd::new(16), None);
        assert_eq!(Pd::new(3).unwrap().bit(), 8);
    }
}
