//! Transfers in progress: one per WQE the scheduler took, on one of its PD's 64 virtual
//! channels, cut into blocks on the 16 KiB windows of the destination.

use hal::pldma::descriptor::{Attempt, Descriptor, WriteKind};
use hal::pldma::geometry::Windows;
use hal::pldma::{Pd, VCS_PER_PD};
use proto::rdma::queue::{CqeStatus, Direction, Wqe};

/// Transfers in progress per node (fixed capacity).
pub const MAX_TRANSFERS: usize = 128;

#[derive(Clone, Copy, Debug)]
pub struct Transfer {
    pub pd: Pd,
    pub vc: u8,
    pub wq_index: u32,
    pub wqe: Wqe,
    pub blocks: u32,
    /// The next block to send for the first time.
    pub next: u32,
    pub acked: u32,
    pub in_flight: u8,
    /// Ended with `status` (the CQE may still wait for room in the CQ).
    pub ended: bool,
    pub status: CqeStatus,
}

impl Transfer {
    /// `None` if the WQE's ranges cannot be cut (they were validated, so never in practice).
    pub fn new(pd: Pd, vc: u8, wq_index: u32, wqe: Wqe) -> Option<Self> {
        let blocks = u32::try_from(Self::windows_of(&wqe)?.count()).ok()?;
        Some(Self {
            pd,
            vc,
            wq_index,
            wqe,
            blocks,
            next: 0,
            acked: 0,
            in_flight: 0,
            ended: false,
            status: CqeStatus::Ok,
        })
    }

    /// Ends it with `status`, unless it has ended already ([`Transfers::end`] also marks it
    /// for its CQE).
    fn end(&mut self, status: CqeStatus) {
        if !self.ended {
            (self.ended, self.status, self.in_flight) = (true, status, 0);
        }
    }

    fn windows_of(w: &Wqe) -> Option<Windows> {
        let dst = match w.direction {
            Direction::Write => w.remote,
            Direction::Read => w.local,
        };
        Windows::blocks(dst, u64::from(w.len))
    }

    /// The node that writes a block and acknowledges it: the target of a write, this node for
    /// a read.
    pub fn writer(&self, me: u16) -> u16 {
        match self.wqe.direction {
            Direction::Write => self.wqe.node,
            Direction::Read => me,
        }
    }

    /// Nodes that may speak about its blocks (NACK, PF-NACK, RAPF): this one and the remote one.
    pub fn involves(&self, me: u16, node: u16) -> bool {
        node == me || node == self.wqe.node
    }

    pub fn is_last(&self, block: u32) -> bool {
        block + 1 == self.blocks
    }

    /// The last block of a NOTIFY write waits until every other block is acknowledged, so the
    /// target's notification means the whole transfer landed.
    pub fn fenced(&self, block: u32) -> bool {
        self.wqe.notify.is_some() && self.is_last(block) && self.acked + 1 < self.blocks
    }

    /// The descriptor of one attempt of block `block`.
    pub fn descriptor(&self, block: u32, attempt: Attempt) -> Option<Descriptor> {
        let piece = Self::windows_of(&self.wqe)?.piece(u64::from(block))?;
        let w = &self.wqe;
        let (len, vc, node) = (piece.len as u32, self.vc, w.node);
        Some(match w.direction {
            Direction::Write => {
                let kind = match w.notify {
                    Some(imm) if self.is_last(block) => WriteKind::Notify { imm },
                    _ => WriteKind::Write,
                };
                let (src, dst) = (w.local + piece.offset, w.remote + piece.offset);
                Descriptor::WriteBlock { vc, attempt, node, src, dst, len, kind }
            }
            Direction::Read => {
                let (src, dst) = (w.remote + piece.offset, w.local + piece.offset);
                Descriptor::ReadRequest { vc, attempt, node, src, dst, len }
            }
        })
    }
}

/// The transfer table (all-zero bytes are the empty table).
pub struct Transfers {
    slots: [Transfer; MAX_TRANSFERS],
    /// Bit i: slot i holds a transfer.
    used: u128,
    /// Bit i: the transfer in slot i has ended and waits for its CQE (the scheduler looks at
    /// these only, not at every transfer, each round).
    ended: u128,
}

impl Transfer {
    const UNUSED: Transfer = Transfer {
        pd: Pd::ZERO,
        vc: 0,
        wq_index: 0,
        wqe: Wqe { direction: Direction::Write, node: 0, len: 0, local: 0, remote: 0, tag: 0, notify: None },
        blocks: 0,
        next: 0,
        acked: 0,
        in_flight: 0,
        ended: false,
        status: CqeStatus::Ok,
    };
}

const _: () = assert!(MAX_TRANSFERS <= 128 && MAX_TRANSFERS <= u8::MAX as usize + 1);

impl Transfers {
    pub const fn new() -> Self {
        Self { slots: [Transfer::UNUSED; MAX_TRANSFERS], used: 0, ended: 0 }
    }

    fn is_used(&self, i: u8) -> bool {
        usize::from(i) < MAX_TRANSFERS && self.used & (1 << i) != 0
    }

    pub fn is_full(&self) -> bool {
        self.used.count_ones() as usize >= MAX_TRANSFERS
    }

    pub fn insert(&mut self, t: Transfer) -> Option<u8> {
        let free = (!self.used).trailing_zeros() as usize;
        if free >= MAX_TRANSFERS {
            return None;
        }
        self.slots[free] = t;
        self.used |= 1 << free;
        Some(free as u8)
    }

    pub fn get(&self, i: u8) -> Option<&Transfer> {
        self.is_used(i).then(|| &self.slots[usize::from(i)])
    }

    pub fn get_mut(&mut self, i: u8) -> Option<&mut Transfer> {
        if self.is_used(i) { Some(&mut self.slots[usize::from(i)]) } else { None }
    }

    pub fn remove(&mut self, i: u8) -> Option<Transfer> {
        let t = self.get(i).copied();
        if t.is_some() {
            self.used &= !(1u128 << i);
            self.ended &= !(1u128 << i);
        }
        t
    }

    /// Ends transfer `i` with `status`, unless it has ended already.
    pub fn end(&mut self, i: u8, status: CqeStatus) {
        if let Some(t) = self.get_mut(i) {
            t.end(status);
            self.ended |= 1 << i;
        }
    }

    /// The slots in use, as a bit mask (bit i: slot i).
    pub fn used(&self) -> u128 {
        self.used
    }

    /// The ended transfers whose CQE is not posted yet, as a bit mask.
    pub fn ended(&self) -> u128 {
        self.ended
    }
}

/// The indices of the set bits of `mask`, lowest first.
pub fn bits(mut mask: u128) -> impl Iterator<Item = u8> {
    core::iter::from_fn(move || {
        if mask == 0 {
            return None;
        }
        let i = mask.trailing_zeros() as u8;
        mask &= mask - 1;
        Some(i)
    })
}

impl Default for Transfers {
    fn default() -> Self {
        Self::new()
    }
}

/// A PD's virtual channels in use.
#[derive(Clone, Copy, Debug, Default)]
pub struct Channels(u64);

const _: () = assert!(VCS_PER_PD == 64);

impl Channels {
    pub const EMPTY: Channels = Channels(0);

    pub fn take(&mut self) -> Option<u8> {
        let vc = (!self.0).trailing_zeros();
        if vc >= VCS_PER_PD as u32 {
            return None;
        }
        self.0 |= 1 << vc;
        Some(vc as u8)
    }

    pub fn give_back(&mut self, vc: u8) {
        self.0 &= !(1u64.checked_shl(u32::from(vc)).unwrap_or(0));
    }

    pub fn in_use(&self) -> u32 {
        self.0.count_ones()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hal::pldma::BLOCK_BYTES;

    fn wqe(direction: Direction, local: u64, remote: u64, len: u32, notify: Option<u32>) -> Wqe {
        Wqe { direction, node: 1, len, local, remote, tag: 0, notify }
    }

    fn attempt() -> Attempt {
        Attempt { pd: Pd::new(0).unwrap(), tid: 0, seq: 1, first_seq: 1 }
    }

    #[test]
    fn blocks_follow_the_destination_windows() {
        // A write: cut on the remote address; sources follow at the same offsets.
        let t = Transfer::new(Pd::new(0).unwrap(), 0, 0, wqe(Direction::Write, 0x1001, 0x3ff0, 40_000, None)).unwrap();
        assert_eq!(t.blocks, 4);
        let mut total = 0;
        for b in 0..t.blocks {
            let Some(Descriptor::WriteBlock { src, dst, len, .. }) = t.descriptor(b, attempt()) else { panic!() };
            assert_eq!(src - 0x1001, dst - 0x3ff0, "same offset on both sides");
            assert!(hal::pldma::geometry::is_block(dst, u64::from(len)));
            total += len;
        }
        assert_eq!(total, 40_000);
        assert!(t.descriptor(4, attempt()).is_none());
        // A read: cut on the local address.
        let r = Transfer::new(Pd::new(0).unwrap(), 0, 0, wqe(Direction::Read, 0x4000, 0x1, 16384, None)).unwrap();
        assert_eq!(r.blocks, 1);
        let Some(Descriptor::ReadRequest { src, dst, len, .. }) = r.descriptor(0, attempt()) else { panic!() };
        assert_eq!((src, dst, u64::from(len)), (0x1, 0x4000, BLOCK_BYTES));
    }

    #[test]
    fn only_the_last_block_of_a_notify_write_notifies_and_it_waits() {
        let mut t = Transfer::new(Pd::new(0).unwrap(), 0, 0, wqe(Direction::Write, 0, 0, 3 * 16384, Some(9))).unwrap();
        let kind = |t: &Transfer, b| match t.descriptor(b, attempt()) {
            Some(Descriptor::WriteBlock { kind, .. }) => kind,
            _ => panic!(),
        };
        assert_eq!(kind(&t, 1), WriteKind::Write);
        assert_eq!(kind(&t, 2), WriteKind::Notify { imm: 9 });
        assert!(t.fenced(2));
        assert!(!t.fenced(1));
        t.acked = 2;
        assert!(!t.fenced(2));
    }

    #[test]
    fn the_table_and_the_channels_have_fixed_room() {
        let mut table = Transfers::new();
        let t = Transfer::new(Pd::new(0).unwrap(), 0, 0, wqe(Direction::Write, 0, 0, 1, None)).unwrap();
        for i in 0..MAX_TRANSFERS {
            assert_eq!(table.insert(t), Some(i as u8));
        }
        assert!(table.is_full());
        assert_eq!(table.insert(t), None);
        table.remove(5);
        assert_eq!(bits(table.used()).take(6).collect::<Vec<_>>(), [0, 1, 2, 3, 4, 6]);
        assert_eq!(bits(table.used()).count(), MAX_TRANSFERS - 1);
        assert_eq!(table.insert(t), Some(5));
        let mut vcs = Channels::default();
        for i in 0..64 {
            assert_eq!(vcs.take(), Some(i));
        }
        assert_eq!(vcs.take(), None);
        vcs.give_back(10);
        assert_eq!(vcs.take(), Some(10));
        vcs.give_back(200);
        assert_eq!(vcs.in_use(), 64);
    }
}
