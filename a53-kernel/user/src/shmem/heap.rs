//! The symmetric heap's allocator: deterministic (the same calls in the same order give the same
//! offsets on every PE), its bookkeeping kept apart from the heap (a table of allocations), so
//! a bad `free` is found and refused, never corrupts anything.
//!
//! The heap starts with the library's own symmetric area ([`Reserved`]); allocations follow.

use super::ShmemError;
use super::launch::MAX_PES;

/// The library's own symmetric state at the start of the heap (offsets from its base).
pub struct Reserved;

impl Reserved {
    /// `[u64; MAX_PES]`: sync signals received from each PE (monotonic, only ever added to).
    pub const ARRIVALS: u64 = 0;
    /// `[u64; MAX_PES]`: each member's contribution size in `collect`.
    pub const SIZES: u64 = 0x1000;
    /// A word the liveness test fetches.
    pub const LIVENESS: u64 = 0x2000;
    /// `[u64; MAX_PES]`, private: sync signals this PE has consumed from each PE.
    pub const CONSUMED: u64 = 0x3000;
    /// `[(u64, u64); MAX_ALLOCATIONS]`, private: the allocator's table (kept off the 64 KiB
    /// stack).
    pub const TABLE: u64 = 0x4000;
    /// Private scratch of the reductions (never read by another PE).
    pub const SCRATCH: u64 = 0x1_0000;
    pub const SCRATCH_BYTES: u64 = 0x1_0000;
    /// Where allocations begin.
    pub const END: u64 = Self::SCRATCH + Self::SCRATCH_BYTES;
}

const _: () = assert!(Reserved::ARRIVALS + 8 * MAX_PES as u64 <= Reserved::SIZES);
const _: () = assert!(Reserved::SIZES + 8 * MAX_PES as u64 <= Reserved::LIVENESS);
const _: () = assert!(Reserved::CONSUMED + 8 * MAX_PES as u64 <= Reserved::TABLE);
const _: () = assert!(Reserved::TABLE + 16 * MAX_ALLOCATIONS as u64 <= Reserved::SCRATCH);

/// Most live allocations.
pub const MAX_ALLOCATIONS: usize = 1024;
/// Every allocation is aligned to at least this, and its size rounded up to it.
pub const MIN_ALIGN: u64 = 16;

/// Allocations in a heap of `len` bytes: `(offset, size)`, in offset order, the first `live`
/// entries of a table that lives outside the heap's allocations (its reserved area).
pub struct Heap {
    len: u64,
    table: &'static mut [(u64, u64)],
    live: usize,
}

impl Heap {
    /// An empty heap of `len` bytes keeping its allocations in `table` (up to its length).
    pub fn new(len: u64, table: &'static mut [(u64, u64)]) -> Self {
        Self { len, table, live: 0 }
    }

    fn blocks(&self) -> &[(u64, u64)] {
        &self.table[..self.live]
    }

    /// The offset of `size` bytes aligned to `align` (a power of two): the first gap that
    /// fits. `Ok(None)` for size 0 (a NULL pointer, as the spec says).
    pub fn alloc(&mut self, size: u64, align: u64) -> Result<Option<u64>, ShmemError> {
        if !align.is_power_of_two() {
            return Err(ShmemError::BadArgument("alignment not a power of two"));
        }
        if size == 0 {
            return Ok(None);
        }
        let full = ShmemError::HeapFull(size);
        let size = size.checked_next_multiple_of(MIN_ALIGN).ok_or(full)?;
        let align = align.max(MIN_ALIGN);
        let mut cursor = Reserved::END;
        let mut at = self.live;
        for (i, &(offset, len)) in self.blocks().iter().enumerate() {
            let start = cursor.checked_next_multiple_of(align).ok_or(full)?;
            if start.checked_add(size).ok_or(full)? <= offset {
                at = i;
                break;
            }
            cursor = offset + len;
        }
        let start = cursor.checked_next_multiple_of(align).ok_or(full)?;
        let end = if at == self.live { self.len } else { self.table[at].0 };
        if start.checked_add(size).is_none_or(|e| e > end) {
            return Err(full);
        }
        if self.live == self.table.len() {
            return Err(ShmemError::BadArgument("more than 1024 live allocations"));
        }
        self.table.copy_within(at..self.live, at + 1);
        self.table[at] = (start, size);
        self.live += 1;
        Ok(Some(start))
    }

    /// Forgets the allocation at `offset`; its size. `ForeignFree` if none starts there.
    pub fn free(&mut self, offset: u64, base: u64) -> Result<u64, ShmemError> {
        let i = self.find(offset).ok_or(ShmemError::ForeignFree(base.wrapping_add(offset)))?;
        let size = self.table[i].1;
        self.table.copy_within(i + 1..self.live, i);
        self.live -= 1;
        Ok(size)
    }

    /// The size of the allocation at `offset`.
    pub fn size_of(&self, offset: u64) -> Option<u64> {
        self.find(offset).map(|i| self.table[i].1)
    }

    /// Grows or shrinks the allocation at `offset` where it is, if the gap after it allows;
    /// whether it did.
    pub fn resize_in_place(&mut self, offset: u64, size: u64) -> Result<bool, ShmemError> {
        let i = self.find(offset).ok_or(ShmemError::ForeignFree(offset))?;
        let Some(size) = size.checked_next_multiple_of(MIN_ALIGN) else { return Ok(false) };
        let limit = self.blocks().get(i + 1).map_or(self.len, |b| b.0);
        if offset.checked_add(size).is_some_and(|end| end <= limit) {
            self.table[i].1 = size;
            return Ok(true);
        }
        Ok(false)
    }

    fn find(&self, offset: u64) -> Option<usize> {
        self.blocks().binary_search_by_key(&offset, |b| b.0).ok()
    }

    /// Live allocations.
    pub fn live(&self) -> usize {
        self.live
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn heap(len: u64) -> Heap {
        Heap::new(len, std::boxed::Box::leak(std::vec![(0, 0); MAX_ALLOCATIONS].into_boxed_slice()))
    }

    #[test]
    fn the_table_holds_1024_and_refuses_the_next_cleanly() {
        let mut h = heap(Reserved::END + 2048 * 16);
        for _ in 0..MAX_ALLOCATIONS {
            h.alloc(16, 16).unwrap().unwrap();
        }
        assert_eq!(h.alloc(16, 16), Err(ShmemError::BadArgument("more than 1024 live allocations")));
        assert_eq!(h.live(), MAX_ALLOCATIONS);
        assert_eq!(h.free(Reserved::END + 16 * 5, 0), Ok(16));
        assert_eq!(h.alloc(16, 16), Ok(Some(Reserved::END + 16 * 5)), "the freed slot again");
    }

    #[test]
    fn first_fit_is_deterministic_and_reuses_gaps() {
        let run = || {
            let mut h = heap(Reserved::END + 4096);
            let a = h.alloc(100, 1).unwrap().unwrap();
            let b = h.alloc(8, 64).unwrap().unwrap();
            let c = h.alloc(1000, 16).unwrap().unwrap();
            h.free(b, 0).unwrap();
            let d = h.alloc(16, 16).unwrap().unwrap();
            (a, b, c, d)
        };
        let (a, b, c, d) = run();
        assert_eq!(run(), (a, b, c, d), "same calls, same offsets");
        assert_eq!(a, Reserved::END);
        assert_eq!(b, Reserved::END + 128, "aligned to 64 after 112 bytes");
        assert_eq!(c, Reserved::END + 144);
        assert_eq!(d, Reserved::END + 112, "the gap before b's old place");
    }

    #[test]
    fn zero_bytes_full_heaps_and_foreign_frees_are_refused_cleanly() {
        let mut h = heap(Reserved::END + 4096);
        assert_eq!(h.alloc(0, 16), Ok(None));
        assert_eq!(h.alloc(4097, 16), Err(ShmemError::HeapFull(4097)));
        assert_eq!(h.alloc(8, 3), Err(ShmemError::BadArgument("alignment not a power of two")));
        let a = h.alloc(4096, 16).unwrap().unwrap();
        assert_eq!(h.alloc(1, 1), Err(ShmemError::HeapFull(1)));
        assert_eq!(h.free(a + 16, 0x1000), Err(ShmemError::ForeignFree(0x1000 + a + 16)));
        assert_eq!(h.live(), 1, "the bad free changed nothing");
        assert_eq!(h.free(a, 0), Ok(4096));
        assert_eq!(h.free(a, 0), Err(ShmemError::ForeignFree(a)), "twice");
    }

    #[test]
    fn resizing_in_place_only_into_free_room() {
        let mut h = heap(Reserved::END + 4096);
        let a = h.alloc(32, 16).unwrap().unwrap();
        let b = h.alloc(32, 16).unwrap().unwrap();
        assert_eq!(h.resize_in_place(a, 48), Ok(false), "b is in the way");
        assert_eq!(h.resize_in_place(b, 1024), Ok(true));
        assert_eq!(h.size_of(b), Some(1024));
        assert_eq!(h.resize_in_place(a, 16), Ok(true));
        assert_eq!(h.alloc(16, 16).unwrap(), Some(a + 16), "the shrunk tail is free");
    }
}
