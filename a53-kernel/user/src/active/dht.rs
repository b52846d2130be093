//! The distributed hash table of the seed's Listings 2 and 3 (program `active-dht`): one
//! process's volume, a table of `TABLE` buckets and an overflow heap of `HEAP` cells, each cell
//! `{elem, ptr}`; a collision goes to the next free heap cell, chained from its bucket. The RMA
//! baseline runs the insert remotely ([`remote_insert`]: CAS, fetch-and-add, put, swap, put) on
//! this layout; Active Access runs [`Volume::local_insert`] in the owner's handler for one put
//! (at [`aa_slot`]).
//!
//! Both inserts are safe with several inserters at once: the swap of the bucket's `last_ptr`
//! hands every colliding insert the cell it must link from (none: the bucket itself), so each
//! `ptr` is written by exactly one insert, in whatever order they run.

use crate::error::Error;
use crate::rdma::{Doorbell, Rdma};
use proto::gsas::{VaOp, VaWidth};

/// Buckets: the first page of a volume (the page Active Access marks).
pub const TABLE: usize = 512;
/// Overflow cells.
pub const HEAP: usize = 256;
/// Cells in all.
pub const CELLS: usize = TABLE + HEAP;

/// A volume, in the owner's memory (page-aligned: `elems[..TABLE]` is its first page).
#[repr(C)]
pub struct Volume {
    /// Cell `i`'s element (0: empty).
    pub elems: [u64; CELLS],
    /// Cell `i`'s next cell in its bucket's chain (0: none).
    pub ptrs: [u64; CELLS],
    /// The next free heap cell (starts at `TABLE`).
    pub next_free: u64,
    /// Per bucket, the last heap cell chained to it.
    pub last_ptr: [u64; TABLE],
}

/// Byte offsets of the fields, for the remote baseline.
pub const ELEMS: u64 = core::mem::offset_of!(Volume, elems) as u64;
pub const PTRS: u64 = core::mem::offset_of!(Volume, ptrs) as u64;
pub const NEXT_FREE: u64 = core::mem::offset_of!(Volume, next_free) as u64;
pub const LAST_PTR: u64 = core::mem::offset_of!(Volume, last_ptr) as u64;

/// The overflow heap is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Overflow;

/// An element's bucket.
pub const fn bucket(elem: u64) -> usize {
    (elem % TABLE as u64) as usize
}

impl Volume {
    /// Empties it.
    pub fn clear(&mut self) {
        self.elems = [0; CELLS];
        self.ptrs = [0; CELLS];
        self.next_free = TABLE as u64;
        self.last_ptr = [0; TABLE];
    }

    /// Listing 2 with local operations (the AA handler's `local_insert`).
    pub fn local_insert(&mut self, elem: u64) -> Result<(), Overflow> {
        let pos = bucket(elem);
        if self.elems[pos] == 0 {
            self.elems[pos] = elem;
            return Ok(());
        }
        let free = self.next_free;
        self.next_free += 1;
        if free >= CELLS as u64 {
            return Err(Overflow);
        }
        self.elems[free as usize] = elem;
        let prev = core::mem::replace(&mut self.last_ptr[pos], free);
        // The bucket's first heap cell is linked from the bucket, the others from the cell
        // chained before them (what the swap returned).
        let from = if prev == 0 { pos } else { prev as usize };
        self.ptrs[from] = free;
        Ok(())
    }

    /// Whether the volume holds exactly `expected` (distinct, non-zero), each in its bucket's
    /// chain, and nothing else.
    pub fn holds_exactly(&self, expected: impl Iterator<Item = u64> + Clone) -> bool {
        let mut found = 0usize;
        for pos in 0..TABLE {
            let mut cell = pos;
            let mut steps = 0;
            loop {
                let e = self.elems[cell];
                if e == 0 || bucket(e) != pos {
                    if e != 0 || cell != pos {
                        return false;
                    }
                    break;
                }
                found += 1;
                let next = self.ptrs[cell] as usize;
                if next == 0 {
                    break;
                }
                steps += 1;
                if !(TABLE..CELLS).contains(&next) || steps > HEAP {
                    return false;
                }
                cell = next;
            }
        }
        let wanted = expected.clone().count();
        found == wanted && expected.into_iter().all(|e| self.find(e))
    }

    fn find(&self, elem: u64) -> bool {
        let mut cell = bucket(elem);
        for _ in 0..=HEAP {
            if self.elems[cell] == elem {
                return true;
            }
            match self.ptrs[cell] as usize {
                0 => return false,
                next if next < CELLS => cell = next,
                _ => return false,
            }
        }
        false
    }
}

/// Where an inserter puts `elem` for Active Access: its bucket's cell in the volume at `volume`
/// (in the marked first page: the put is logged with its 8 bytes, not written, and the owner's
/// handler inserts the element, Listing 3).
pub const fn aa_slot(volume: u64, elem: u64) -> u64 {
    volume + ELEMS + bucket(elem) as u64 * 8
}

/// The cell the handler's entry at `va` names in the volume at `volume`, if it is a bucket's.
pub fn aa_bucket_of(volume: u64, va: u64) -> Option<usize> {
    let off = va.checked_sub(volume + ELEMS)?;
    (off.is_multiple_of(8) && off / 8 < TABLE as u64).then_some((off / 8) as usize)
}

/// One remote operation of Listing 2, at a byte offset of the volume.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// A process atomic: `new` stored iff the old value is `expected`; returns the old value.
    CompareSwap { at: u64, expected: u64, new: u64 },
    /// A process atomic: adds `add`; returns the old value.
    FetchAdd { at: u64, add: u64 },
    /// A process atomic: stores `new`; returns the old value.
    Swap { at: u64, new: u64 },
    /// An RDMA put of 8 bytes.
    Put { at: u64, value: u64 },
}

/// Listing 2's insert as the remote operations it makes, one at a time ([`Insert::step`]), so
/// that the same code runs over RDMA ([`remote_insert`]) and, in the tests, interleaved with
/// other inserts on a volume in memory. A CAS into the bucket; on a collision a fetch-and-add
/// for a heap cell, a put of the element into it, a swap of the bucket's `last_ptr`, and a put
/// of the link into the cell the swap returned (or into the bucket, when it returned none).
pub struct Insert {
    elem: u64,
    state: State,
}

#[derive(Clone, Copy)]
enum State {
    Start,
    Cas,
    FetchAdd,
    PutElem { free: u64 },
    Swap { free: u64 },
    Link,
    Done,
}

impl Insert {
    pub fn new(elem: u64) -> Self {
        Self { elem, state: State::Start }
    }

    /// The next operation, given the old value the previous one returned (ignored for the
    /// first and after a put); `None` once the element is in; `Overflow` when the heap is full.
    pub fn step(&mut self, result: u64) -> Result<Option<Op>, Overflow> {
        let pos = bucket(self.elem) as u64;
        let (op, next) = match self.state {
            State::Start => (Op::CompareSwap { at: ELEMS + pos * 8, expected: 0, new: self.elem }, State::Cas),
            State::Cas if result == 0 => return Ok(self.done()),
            State::Cas => (Op::FetchAdd { at: NEXT_FREE, add: 1 }, State::FetchAdd),
            State::FetchAdd if result >= CELLS as u64 => return Err(Overflow),
            State::FetchAdd => (Op::Put { at: ELEMS + result * 8, value: self.elem }, State::PutElem { free: result }),
            State::PutElem { free } => (Op::Swap { at: LAST_PTR + pos * 8, new: free }, State::Swap { free }),
            State::Swap { free } => {
                let from = if result == 0 { pos } else { result };
                (Op::Put { at: PTRS + from * 8, value: free }, State::Link)
            }
            State::Link | State::Done => return Ok(self.done()),
        };
        self.state = next;
        Ok(Some(op))
    }

    fn done(&mut self) -> Option<Op> {
        self.state = State::Done;
        None
    }
}

/// Listing 2 run remotely: inserts `elem` into the volume at `volume` of this PD's process on
/// `node` with process atomics and RDMA puts (`scratch`: at least 8 bytes of this process's
/// memory, the puts' source). Returns the remote operations it took (1, or 5 on a collision),
/// or `Overflow` when the heap is full.
pub fn remote_insert<D: Doorbell>(
    rdma: &Rdma<D>,
    scratch: &mut [u8],
    node: u16,
    volume: u64,
    elem: u64,
    timeout_us: u64,
) -> Result<Result<u64, Overflow>, Error> {
    let scratch = scratch.get_mut(..8).ok_or(Error::NoArgument)?;
    let atomic = |op, at, arg1, arg2| crate::api::va_atomic(op, VaWidth::W64, node, volume + at, arg1, arg2);
    let mut insert = Insert::new(elem);
    let (mut ops, mut result) = (0, 0);
    loop {
        let op = match insert.step(result) {
            Ok(Some(op)) => op,
            Ok(None) => return Ok(Ok(ops)),
            Err(overflow) => return Ok(Err(overflow)),
        };
        ops += 1;
        result = match op {
            Op::CompareSwap { at, expected, new } => atomic(VaOp::CompareSwap, at, expected, new)?,
            Op::FetchAdd { at, add } => atomic(VaOp::FetchAdd, at, add, 0)?,
            Op::Swap { at, new } => atomic(VaOp::Swap, at, new, 0)?,
            Op::Put { at, value } => {
                scratch.copy_from_slice(&value.to_le_bytes());
                rdma.write(scratch, node, volume + at)?.wait(timeout_us)?;
                0
            }
        };
    }
}

/// The remote operations of `inserts` inserts of which `collisions` collide, for both ways:
/// (Active Access: one put each, RMA: as [`remote_insert`] counts them).
pub const fn remote_ops(inserts: u64, collisions: u64) -> (u64, u64) {
    (inserts, inserts + 4 * collisions)
}

/// The elements of a run that inserter `index` of `inserters` inserts: every `inserters`-th
/// of the first `inserts`, from the `index`-th (so the inserters' shares make the run).
pub fn share(seed: u64, pct: u8, inserts: usize, index: u8, inserters: u8) -> impl Iterator<Item = u64> + Clone {
    let (index, inserters) = (usize::from(index), usize::from(inserters).max(1));
    Elements::new(seed, pct).take(inserts).enumerate().filter(move |(k, _)| k % inserters == index).map(|(_, e)| e.0)
}

/// The elements of a run, in order (at most `TABLE`): element `k` collides with an earlier
/// one's bucket with probability `pct` %, else takes a bucket no earlier element has. Yields
/// the element and whether it collides; distinct and non-zero.
#[derive(Clone)]
pub struct Elements {
    rng: proto::rand::XorShift64,
    pct: u8,
    buckets: [u16; TABLE],
    k: usize,
    fresh: u64,
}

impl Elements {
    pub fn new(seed: u64, pct: u8) -> Self {
        Self { rng: proto::rand::XorShift64::new(seed), pct, buckets: [0; TABLE], k: 0, fresh: 0 }
    }
}

impl Iterator for Elements {
    type Item = (u64, bool);
    fn next(&mut self) -> Option<(u64, bool)> {
        if self.k >= TABLE {
            return None;
        }
        let collide = self.k > 0 && self.rng.below(100) < u64::from(self.pct);
        let pos = if collide {
            u64::from(self.buckets[self.rng.below(self.k as u64) as usize])
        } else {
            self.fresh += 1;
            ((self.fresh - 1) * 37) % TABLE as u64
        };
        self.buckets[self.k] = pos as u16;
        self.k += 1;
        Some((pos + TABLE as u64 * self.k as u64, collide))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::boxed::Box;
    use std::vec::Vec;

    fn volume() -> Box<Volume> {
        let mut v: Box<Volume> =
            Box::new(Volume { elems: [0; CELLS], ptrs: [0; CELLS], next_free: 0, last_ptr: [0; TABLE] });
        v.clear();
        v
    }

    #[test]
    fn inserts_chain_collisions_and_the_check_is_exact() {
        let n = 120;
        let all: Vec<(u64, bool)> = Elements::new(7, 25).take(n).collect();
        let collisions = all.iter().filter(|e| e.1).count();
        assert!((15..=45).contains(&collisions), "about 25 %: {collisions}");
        let elems: Vec<u64> = all.iter().map(|e| e.0).collect();
        let mut sorted = elems.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), n, "distinct");
        let mut v = volume();
        for &e in &elems {
            v.local_insert(e).unwrap();
        }
        assert_eq!(v.next_free as usize - TABLE, collisions, "one heap cell per collision");
        assert!(v.holds_exactly(elems.iter().copied()));
        // One missing, one extra, one in the wrong bucket: not exact.
        assert!(!v.holds_exactly(elems[1..].iter().copied()));
        let mut w = volume();
        for &e in &elems[1..] {
            w.local_insert(e).unwrap();
        }
        assert!(!w.holds_exactly(elems.iter().copied()));
        let mut x = volume();
        for &e in &elems {
            x.local_insert(e).unwrap();
        }
        x.elems[TABLE] ^= TABLE as u64 * 3 + 1;
        assert!(!x.holds_exactly(elems.iter().copied()));
        // A chain that loops is refused, not followed for ever.
        let mut y = volume();
        for &e in &elems {
            y.local_insert(e).unwrap();
        }
        let first = (TABLE..CELLS).find(|&c| y.elems[c] != 0).unwrap();
        y.ptrs[first] = first as u64;
        assert!(!y.holds_exactly(elems.iter().copied()));
    }

    /// A volume as the words the remote operations address.
    fn words() -> Vec<u64> {
        let mut w = std::vec![0; core::mem::size_of::<Volume>() / 8];
        w[(NEXT_FREE / 8) as usize] = TABLE as u64;
        w
    }

    /// Applies `op` to the words; the old value.
    fn apply(w: &mut [u64], op: Op) -> u64 {
        let (at, new) = match op {
            Op::CompareSwap { at, expected, new } => {
                (at, if w[(at / 8) as usize] == expected { new } else { w[(at / 8) as usize] })
            }
            Op::FetchAdd { at, add } => (at, w[(at / 8) as usize] + add),
            Op::Swap { at, new } | Op::Put { at, value: new } => (at, new),
        };
        core::mem::replace(&mut w[(at / 8) as usize], new)
    }

    fn volume_of(w: &[u64]) -> Box<Volume> {
        let mut v = volume();
        let word = |at: u64| (at / 8) as usize;
        v.elems.copy_from_slice(&w[word(ELEMS)..word(ELEMS) + CELLS]);
        v.ptrs.copy_from_slice(&w[word(PTRS)..word(PTRS) + CELLS]);
        v.next_free = w[word(NEXT_FREE)];
        v.last_ptr.copy_from_slice(&w[word(LAST_PTR)..word(LAST_PTR) + TABLE]);
        v
    }

    #[test]
    fn concurrent_remote_inserts_in_any_interleaving_build_the_exact_table() {
        let (n, pct, inserters) = (150, 40, 3u8);
        for seed in 1..300u64 {
            let elems: Vec<u64> = share(seed, pct, n, 0, 1).collect();
            let collisions = Elements::new(seed, pct).take(n).filter(|e| e.1).count() as u64;
            let mut shares: Vec<Vec<u64>> =
                (0..inserters).map(|i| share(seed, pct, n, i, inserters).collect()).collect();
            assert_eq!(shares.iter().map(Vec::len).sum::<usize>(), n, "the shares make the run");
            for s in &mut shares {
                s.reverse();
            }
            // Each inserter runs one insert at a time, one operation per turn, turns taken at
            // random: two inserts into one bucket interleave every way.
            let mut running: Vec<Option<(Insert, u64)>> = (0..inserters).map(|_| None).collect();
            let (mut w, mut rng, mut ops) = (words(), proto::rand::XorShift64::new(seed * 7 + 1), 0u64);
            loop {
                let ready: Vec<usize> =
                    (0..usize::from(inserters)).filter(|&i| running[i].is_some() || !shares[i].is_empty()).collect();
                if ready.is_empty() {
                    break;
                }
                let i = ready[rng.below(ready.len() as u64) as usize];
                let (mut insert, last) =
                    running[i].take().unwrap_or_else(|| (Insert::new(shares[i].pop().unwrap()), 0));
                if let Some(op) = insert.step(last).unwrap() {
                    ops += 1;
                    let result = apply(&mut w, op);
                    running[i] = Some((insert, result));
                }
            }
            assert_eq!(ops, remote_ops(n as u64, collisions).1, "seed {seed}");
            assert!(volume_of(&w).holds_exactly(elems.iter().copied()), "seed {seed}");
        }
    }

    #[test]
    fn an_aa_slot_names_its_bucket() {
        let base = 0x10_0000_0000;
        for e in Elements::new(3, 30).take(50).map(|e| e.0) {
            assert_eq!(aa_bucket_of(base, aa_slot(base, e)), Some(bucket(e)));
        }
        assert_eq!(aa_bucket_of(base, base + ELEMS + 4), None);
        assert_eq!(aa_bucket_of(base, base + ELEMS + 8 * TABLE as u64), None);
        assert_eq!(aa_bucket_of(base, base - 8), None);
    }

    #[test]
    fn the_heap_overflows_cleanly() {
        let mut v = volume();
        v.local_insert(5).unwrap();
        for k in 1..=HEAP as u64 {
            v.local_insert(5 + k * TABLE as u64).unwrap();
        }
        assert_eq!(v.local_insert(5 + (HEAP as u64 + 1) * TABLE as u64), Err(Overflow));
    }
}
