//! Transfers in progress: one per WQE the scheduler took, on one of its PD's 64 virtual
//! channels, cut into blocks on the 16 KiB windows of the destination.

use hal::pldma::descriptor::{Attempt, RawDescriptor, WriteKind};
use hal::pldma::geometry::Windows;
use hal::pldma::{BLOCK_BYTES, Pd, VCS_PER_PD};
use proto::rdma::queue::{CqeStatus, Direction, Wqe};

/// Transfers in progress per node (fixed capacity).
pub const MAX_TRANSFERS: usize = 128;

/// log2 of [`BLOCK_BYTES`]: blocks are cut with constant shifts (the R5 is a 32-bit core, where
/// 64-bit shifts by a variable and divisions are long sequences).
const BLOCK_LOG2: u32 = BLOCK_BYTES.trailing_zeros();
const _: () = assert!(BLOCK_BYTES.is_power_of_two() && BLOCK_BYTES <= 1 << 16);

#[derive(Clone, Copy, Debug)]
pub struct Transfer {
    pub pd: Pd,
    pub vc: u8,
    pub wq_index: u32,
    pub wqe: Wqe,
    pub blocks: u32,
    /// Bytes of block 0 (from the destination to its first 16 KiB boundary, or the whole
    /// transfer); block `b > 0` starts at `first_len + (b - 1) * BLOCK_BYTES`.
    first_len: u32,
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
        let dst = Self::destination(&wqe);
        let blocks = u32::try_from(Windows::blocks(dst, u64::from(wqe.len))?.count()).ok()?;
        let to_boundary = BLOCK_BYTES - dst % BLOCK_BYTES;
        let first_len = wqe.len.min(to_boundary as u32);
        Some(Self {
            pd,
            vc,
            wq_index,
            wqe,
            blocks,
            first_len,
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

    /// The destination address: blocks are cut on its 16 KiB windows.
    fn destination(w: &Wqe) -> u64 {
        match w.direction {
            Direction::Write => w.remote,
            Direction::Read => w.local,
        }
    }

    /// Block `block`'s offset in the transfer and its length, if there is such a block (32-bit
    /// arithmetic: a transfer's length is a u32).
    fn piece(&self, block: u32) -> Option<(u32, u32)> {
        if block >= self.blocks {
            return None;
        }
        if block == 0 {
            return Some((0, self.first_len));
        }
        let offset = self.first_len + ((block - 1) << BLOCK_LOG2);
        Some((offset, (self.wqe.len - offset).min(BLOCK_BYTES as u32)))
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

    /// The descriptor of one attempt of block `block`, as the ring holds it.
    #[inline(always)]
    pub fn descriptor(&self, block: u32, attempt: Attempt) -> Option<RawDescriptor> {
        let (offset, len) = self.piece(block)?;
        let (w, offset) = (&self.wqe, u64::from(offset));
        Some(match w.direction {
            Direction::Write => {
                let kind = match w.notify {
                    Some(imm) if self.is_last(block) => WriteKind::Notify { imm },
                    _ => WriteKind::Write,
                };
                RawDescriptor::write_block(self.vc, &attempt, w.node, w.local + offset, w.remote + offset, len, kind)
            }
            Direction::Read => {
                RawDescriptor::read_request(self.vc, &attempt, w.node, w.remote + offset, w.local + offset, len)
            }
        })
    }
}

/// The transfer table (all-zero bytes are the empty table).
pub struct Transfers {
    slots: [Transfer; MAX_TRANSFERS],
    /// Slot i holds a transfer.
    used: SlotSet,
    /// The transfer in slot i has ended and waits for its CQE (the scheduler looks at these
    /// only, not at every transfer, each round).
    ended: SlotSet,
}

/// A set of transfer slots, as four 32-bit words: the R5 is a 32-bit core, where every u128
/// operation (shift, rotate, trailing zeros, population count) is a long sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotSet([u32; 4]);

const _: () = assert!(MAX_TRANSFERS == 128);

impl SlotSet {
    pub const EMPTY: Self = Self([0; 4]);

    /// Slot `i`'s word and bit.
    fn place(i: u8) -> (usize, u32) {
        let i = usize::from(i) % MAX_TRANSFERS;
        (i / 32, 1 << (i % 32))
    }

    pub fn contains(&self, i: u8) -> bool {
        let (word, bit) = Self::place(i);
        self.0[word] & bit != 0
    }

    fn insert(&mut self, i: u8) {
        let (word, bit) = Self::place(i);
        self.0[word] |= bit;
    }

    fn remove(&mut self, i: u8) {
        let (word, bit) = Self::place(i);
        self.0[word] &= !bit;
    }

    fn is_full(&self) -> bool {
        (self.0[0] & self.0[1] & self.0[2] & self.0[3]) == u32::MAX
    }

    /// The lowest slot not in the set.
    fn first_free(&self) -> Option<u8> {
        let k = self.0.iter().position(|&w| w != u32::MAX)?;
        Some((k * 32 + (!self.0[k]).trailing_zeros() as usize) as u8)
    }

    /// The slots in the set, lowest first.
    pub fn iter(self) -> impl Iterator<Item = u8> {
        let (mut words, mut k) = (self.0, 0);
        core::iter::from_fn(move || {
            while let Some(w) = words.get_mut(k) {
                if *w != 0 {
                    let bit = w.trailing_zeros();
                    *w &= *w - 1;
                    return Some((k as u32 * 32 + bit) as u8);
                }
                k += 1;
            }
            None
        })
    }

    /// The slots in the set from `start` up, then those below `start` (a round robin).
    pub fn iter_from(self, start: u8) -> RoundRobin {
        let start = usize::from(start) % MAX_TRANSFERS;
        RoundRobin {
            words: self.0,
            first: start / 32,
            low: (1u32 << (start % 32)).wrapping_sub(1),
            step: 0,
            word: 0,
            bits: 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        (self.0[0] | self.0[1] | self.0[2] | self.0[3]) == 0
    }
}

/// [`SlotSet::iter_from`]: word `first` from bit `start % 32` up, the next three words (round
/// the end), then word `first` below that bit; a handful of 32-bit operations per round, per
/// slot found.
pub struct RoundRobin {
    words: [u32; 4],
    first: usize,
    /// The bits of word `first` below `start`.
    low: u32,
    /// Words looked at so far (0..=5).
    step: usize,
    /// The word `bits` comes from, and its slots not yet returned.
    word: usize,
    bits: u32,
}

impl Iterator for RoundRobin {
    type Item = u8;

    #[inline(always)]
    fn next(&mut self) -> Option<u8> {
        loop {
            if self.bits != 0 {
                let bit = self.bits.trailing_zeros() as usize;
                self.bits &= self.bits - 1;
                return Some((self.word * 32 + bit) as u8);
            }
            if self.step > 4 {
                return None;
            }
            self.word = (self.first + self.step) % 4;
            let w = self.words[self.word];
            self.bits = match self.step {
                0 => w & !self.low,
                4 => w & self.low,
                _ => w,
            };
            self.step += 1;
        }
    }
}

impl Transfer {
    const UNUSED: Transfer = Transfer {
        pd: Pd::ZERO,
        vc: 0,
        wq_index: 0,
        wqe: Wqe { direction: Direction::Write, node: 0, len: 0, local: 0, remote: 0, tag: 0, notify: None },
        blocks: 0,
        first_len: 0,
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
        Self { slots: [Transfer::UNUSED; MAX_TRANSFERS], used: SlotSet::EMPTY, ended: SlotSet::EMPTY }
    }

    fn is_used(&self, i: u8) -> bool {
        usize::from(i) < MAX_TRANSFERS && self.used.contains(i)
    }

    pub fn is_full(&self) -> bool {
        self.used.is_full()
    }

    pub fn insert(&mut self, t: Transfer) -> Option<u8> {
        let free = self.used.first_free()?;
        *self.slots.get_mut(usize::from(free))? = t;
        self.used.insert(free);
        Some(free)
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
            self.used.remove(i);
            self.ended.remove(i);
        }
        t
    }

    /// Ends transfer `i` with `status`, unless it has ended already.
    pub fn end(&mut self, i: u8, status: CqeStatus) {
        if let Some(t) = self.get_mut(i) {
            t.end(status);
            self.ended.insert(i);
        }
    }

    /// The slots in use.
    pub fn used(&self) -> SlotSet {
        self.used
    }

    /// The ended transfers whose CQE is not posted yet.
    pub fn ended(&self) -> SlotSet {
        self.ended
    }
}

/// The indices of the set bits of `mask`, lowest first.
pub fn bits(mut mask: u32) -> impl Iterator<Item = usize> {
    core::iter::from_fn(move || {
        if mask == 0 {
            return None;
        }
        let i = mask.trailing_zeros() as usize;
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
    use hal::pldma::descriptor::Descriptor;

    /// Block `b`'s descriptor, decoded (`None`: no such block).
    fn decoded(t: &Transfer, b: u32) -> Option<Descriptor> {
        t.descriptor(b, attempt()).map(|r| Descriptor::decode(&r).expect("a well-formed descriptor"))
    }

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
            let Some(Descriptor::WriteBlock { src, dst, len, .. }) = decoded(&t, b) else { panic!() };
            assert_eq!(src - 0x1001, dst - 0x3ff0, "same offset on both sides");
            assert!(hal::pldma::geometry::is_block(dst, u64::from(len)));
            total += len;
        }
        assert_eq!(total, 40_000);
        assert!(decoded(&t, 4).is_none());
        // A read: cut on the local address.
        let r = Transfer::new(Pd::new(0).unwrap(), 0, 0, wqe(Direction::Read, 0x4000, 0x1, 16384, None)).unwrap();
        assert_eq!(r.blocks, 1);
        let Some(Descriptor::ReadRequest { src, dst, len, .. }) = decoded(&r, 0) else { panic!() };
        assert_eq!((src, dst, u64::from(len)), (0x1, 0x4000, BLOCK_BYTES));
    }

    #[test]
    fn the_32_bit_cut_matches_the_windows() {
        for dst in [0u64, 1, 16383, 16384, 0x7fff_c001, 0x1_0000_3ff0] {
            for len in [1u32, 16383, 16384, 16385, 40_000, 1 << 22, u32::MAX - 20_000] {
                let t = Transfer::new(Pd::new(0).unwrap(), 0, 0, wqe(Direction::Write, 0x10, dst, len, None)).unwrap();
                let w = Windows::blocks(dst, u64::from(len)).unwrap();
                assert_eq!(u64::from(t.blocks), w.count());
                for b in [0, 1, t.blocks / 2, t.blocks.saturating_sub(2), t.blocks - 1, t.blocks] {
                    let piece = w.piece(u64::from(b)).map(|p| (p.offset as u32, p.len as u32));
                    assert_eq!(t.piece(b), piece, "dst {dst:#x} len {len} block {b}");
                }
            }
        }
    }

    #[test]
    fn only_the_last_block_of_a_notify_write_notifies_and_it_waits() {
        let mut t = Transfer::new(Pd::new(0).unwrap(), 0, 0, wqe(Direction::Write, 0, 0, 3 * 16384, Some(9))).unwrap();
        let kind = |t: &Transfer, b| match decoded(t, b) {
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
    fn the_round_robin_visits_each_slot_once_from_its_start() {
        for slots in [vec![], vec![0], vec![31, 32], vec![0, 5, 31, 32, 63, 64, 100, 127], (0..128).collect()] {
            let mut set = SlotSet::EMPTY;
            slots.iter().for_each(|&i| set.insert(i));
            assert_eq!(set.is_empty(), slots.is_empty());
            for start in [0u8, 1, 5, 31, 32, 33, 64, 100, 127] {
                let expected: Vec<u8> = slots
                    .iter()
                    .copied()
                    .filter(|&i| i >= start)
                    .chain(slots.iter().copied().filter(|&i| i < start))
                    .collect();
                assert_eq!(set.iter_from(start).collect::<Vec<_>>(), expected, "{slots:?} from {start}");
            }
        }
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
        assert_eq!(table.used().iter().take(6).collect::<Vec<_>>(), [0, 1, 2, 3, 4, 6]);
        assert_eq!(table.used().iter().count(), MAX_TRANSFERS - 1);
        assert_eq!(table.used().iter_from(126).take(3).collect::<Vec<_>>(), [126, 127, 0]);
        assert_eq!(table.used().iter_from(4).take(2).collect::<Vec<_>>(), [4, 6]);
        assert_eq!(table.used().iter_from(33).count(), MAX_TRANSFERS - 1);
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
