//! The page-frame allocator: a bitmap over the board's frame pool (`DdrLayout::frames`), and a
//! stack of frames zeroed ahead of need.
//!
//! Frames hold processes' pages, their page tables and the global shared address space's
//! shared pages, and every one of them is handed out zeroed. The allocator only does
//! bookkeeping: a frame comes with whether it is known to be zero ([`Frame::zeroed`]), and
//! whoever takes one that is not zeroes it (`zero` in the kernel's glue). Idle cores zero frames
//! ahead ([`FramePool::to_zero`], [`FramePool::put_zeroed`]), so that a page fault (the PLDMA's
//! above all, `docs/hw/pldma.md`, "Fault handling") takes a frame without zeroing it.
//!
//! The zeroed stack never holds frames back: a frame in it counts as free, and an allocation
//! takes from it when the bitmap has none left. It is filled only while the bitmap keeps
//! [`ZEROED_FLOOR`] frames free, so filling it never eats into what allocations need.

use super::PAGE_SIZE;
use alloc::vec;
use alloc::vec::Vec;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameError {
    OutOfFrames,
    /// Not a frame of this pool, or not page aligned.
    NotAFrame(u64),
    /// Freed twice.
    NotAllocated(u64),
}

/// Frames zeroed ahead of need at most (1 MiB of 4 KiB frames: a burst of PLDMA faults, 4 pages
/// each, finds them ready).
pub const ZEROED_MAX: usize = 256;

/// The stack is filled only while the bitmap has more than this many frames free: the frames
/// it keeps are a small share of a pool with plenty left.
pub const ZEROED_FLOOR: usize = 4 * ZEROED_MAX;

/// A frame handed out: its physical address, and whether it is known to hold zeroes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    pub pa: u64,
    pub zeroed: bool,
}

pub struct FramePool {
    base: u64,
    frames: usize,
    used: Vec<u64>,
    free: usize,
    /// Where the next search starts (frames are handed out round-robin, which spreads reuse).
    cursor: usize,
    /// Frames zeroed ahead, taken first (marked used in the bitmap, counted as free).
    zeroed: Vec<u64>,
    /// Frames taken by [`to_zero`](Self::to_zero) and not yet back (counted as free: they come
    /// back within one page's zeroing).
    zeroing: usize,
}

impl FramePool {
    /// The pool of whole pages in `[start, end)`.
    pub fn new(start: u64, end: u64) -> Self {
        let base = start.next_multiple_of(PAGE_SIZE);
        let frames = (end.saturating_sub(base) / PAGE_SIZE) as usize;
        let used = vec![0; frames.div_ceil(64)];
        Self { base, frames, used, free: frames, cursor: 0, zeroed: Vec::new(), zeroing: 0 }
    }

    /// Frames an allocation may still get: the bitmap's, those zeroed ahead, and those being
    /// zeroed.
    pub fn free_frames(&self) -> usize {
        self.free + self.zeroed.len() + self.zeroing
    }

    /// Frames zeroed ahead, ready.
    pub fn zeroed_frames(&self) -> usize {
        self.zeroed.len()
    }

    pub fn total_frames(&self) -> usize {
        self.frames
    }

    fn index(&self, pa: u64) -> Result<usize, FrameError> {
        if pa < self.base || !(pa - self.base).is_multiple_of(PAGE_SIZE) {
            return Err(FrameError::NotAFrame(pa));
        }
        let i = ((pa - self.base) / PAGE_SIZE) as usize;
        if i < self.frames { Ok(i) } else { Err(FrameError::NotAFrame(pa)) }
    }

    fn is_used(&self, i: usize) -> bool {
        self.used[i / 64] & (1 << (i % 64)) != 0
    }

    /// Takes one frame: one zeroed ahead if there is one, else one of the bitmap's (whose
    /// content is unknown).
    pub fn take(&mut self) -> Result<Frame, FrameError> {
        if let Some(pa) = self.zeroed.pop() {
            return Ok(Frame { pa, zeroed: true });
        }
        self.alloc_unzeroed().map(|pa| Frame { pa, zeroed: false })
    }

    /// Takes `out.len()` frames at most while more than `keep` stay free ([`free_frames`]);
    /// returns how many it took.
    ///
    /// [`free_frames`]: Self::free_frames
    pub fn take_many(&mut self, out: &mut [Frame], keep: usize) -> usize {
        let wanted = out.len().min(self.free_frames().saturating_sub(keep));
        for (taken, slot) in out[..wanted].iter_mut().enumerate() {
            match self.take() {
                Ok(frame) => *slot = frame,
                // Only frames being zeroed are left: counted free, not to be had yet.
                Err(_) => return taken,
            }
        }
        wanted
    }

    /// A frame for the zeroed stack, while it is short and the bitmap has plenty: the caller
    /// zeroes it and hands it to [`put_zeroed`](Self::put_zeroed).
    pub fn to_zero(&mut self) -> Option<u64> {
        if self.zeroed.len() + self.zeroing >= ZEROED_MAX || self.free <= ZEROED_FLOOR {
            return None;
        }
        let pa = self.alloc_unzeroed().ok()?;
        self.zeroing += 1;
        Some(pa)
    }

    /// A frame from [`to_zero`](Self::to_zero), now zeroed.
    pub fn put_zeroed(&mut self, pa: u64) {
        self.zeroing = self.zeroing.saturating_sub(1);
        self.zeroed.push(pa);
    }

    /// Takes one frame of the bitmap; returns its physical address.
    fn alloc_unzeroed(&mut self) -> Result<u64, FrameError> {
        if self.free == 0 {
            return Err(FrameError::OutOfFrames);
        }
        let words = self.used.len();
        for step in 0..=words {
            let w = (self.cursor / 64 + step) % words;
            if self.used[w] != u64::MAX {
                let bit = (!self.used[w]).trailing_zeros() as usize;
                let i = w * 64 + bit;
                if i < self.frames {
                    self.used[w] |= 1 << bit;
                    self.free -= 1;
                    self.cursor = i;
                    return Ok(self.base + i as u64 * PAGE_SIZE);
                }
            }
        }
        Err(FrameError::OutOfFrames)
    }

    pub fn free(&mut self, pa: u64) -> Result<(), FrameError> {
        let i = self.index(pa)?;
        if !self.is_used(i) {
            return Err(FrameError::NotAllocated(pa));
        }
        self.used[i / 64] &= !(1 << (i % 64));
        self.free += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocates_every_frame_once_then_refuses() {
        let mut pool = FramePool::new(0x1000, 0x1000 + 130 * PAGE_SIZE);
        assert_eq!(pool.total_frames(), 130);
        let mut got: Vec<u64> = (0..130).map(|_| pool.take().unwrap().pa).collect();
        assert_eq!(pool.take(), Err(FrameError::OutOfFrames));
        got.sort_unstable();
        got.dedup();
        assert_eq!(got.len(), 130);
        assert!(got.iter().all(|&pa| (0x1000..0x1000 + 130 * PAGE_SIZE).contains(&pa) && pa % PAGE_SIZE == 0));
    }

    #[test]
    fn freed_frames_come_back_and_errors_are_typed() {
        let mut pool = FramePool::new(0, 4 * PAGE_SIZE);
        let a = pool.take().unwrap().pa;
        pool.free(a).unwrap();
        assert_eq!(pool.free(a), Err(FrameError::NotAllocated(a)));
        assert_eq!(pool.free(a + 1), Err(FrameError::NotAFrame(a + 1)));
        assert_eq!(pool.free(100 * PAGE_SIZE), Err(FrameError::NotAFrame(100 * PAGE_SIZE)));
        assert_eq!(pool.free_frames(), 4);
        for _ in 0..4 {
            pool.take().unwrap();
        }
        assert_eq!(pool.free_frames(), 0);
    }

    /// Fills the zeroed stack as an idle core would; how many frames it took.
    fn zero_ahead(pool: &mut FramePool) -> usize {
        let mut n = 0;
        while let Some(pa) = pool.to_zero() {
            pool.put_zeroed(pa);
            n += 1;
        }
        n
    }

    #[test]
    fn frames_zeroed_ahead_go_first_and_say_so() {
        let mut pool = FramePool::new(0, (ZEROED_FLOOR + 10) as u64 * PAGE_SIZE);
        let a = pool.take().unwrap();
        assert!(!a.zeroed, "a frame of the bitmap must be zeroed by its taker");
        assert_eq!(zero_ahead(&mut pool), 9, "filled only while the bitmap keeps its floor");
        assert_eq!(pool.free_frames(), ZEROED_FLOOR + 9, "frames zeroed ahead still count as free");
        let b = pool.take().unwrap();
        assert!(b.zeroed);
        assert_ne!(a.pa, b.pa);
        assert_eq!(pool.zeroed_frames(), 8);
    }

    #[test]
    fn the_zeroed_stack_is_bounded() {
        let mut pool = FramePool::new(0, (ZEROED_FLOOR + 2 * ZEROED_MAX) as u64 * PAGE_SIZE);
        assert_eq!(zero_ahead(&mut pool), ZEROED_MAX);
        let pa = pool.take().unwrap().pa;
        assert_eq!(zero_ahead(&mut pool), 1, "one taken, one made again");
        pool.free(pa).unwrap();
        assert_eq!(pool.free_frames(), ZEROED_FLOOR + 2 * ZEROED_MAX);
    }

    #[test]
    fn under_pressure_every_frame_is_handed_out_the_zeroed_ones_last() {
        let total = ZEROED_FLOOR + 40;
        let mut pool = FramePool::new(0, total as u64 * PAGE_SIZE);
        assert_eq!(zero_ahead(&mut pool), 40);
        let mut got = Vec::new();
        let mut batch = [Frame { pa: 0, zeroed: false }; 7];
        loop {
            let n = pool.take_many(&mut batch, 0);
            if n == 0 {
                break;
            }
            got.extend_from_slice(&batch[..n]);
        }
        assert_eq!(got.len(), total, "the zeroed stack gives its frames back");
        assert_eq!(got.iter().filter(|f| f.zeroed).count(), 40);
        assert!(got[..40].iter().all(|f| f.zeroed), "taken first");
        let mut pas: Vec<u64> = got.iter().map(|f| f.pa).collect();
        pas.sort_unstable();
        pas.dedup();
        assert_eq!(pas.len(), total, "each frame once");
        assert_eq!(pool.take(), Err(FrameError::OutOfFrames));
        assert_eq!(pool.to_zero(), None, "nothing to zero ahead when the pool is empty");
    }

    #[test]
    fn take_many_keeps_what_it_is_told_to() {
        let mut pool = FramePool::new(0, 10 * PAGE_SIZE);
        let mut batch = [Frame { pa: 0, zeroed: false }; 8];
        assert_eq!(pool.take_many(&mut batch, 4), 6);
        assert_eq!(pool.free_frames(), 4);
        assert_eq!(pool.take_many(&mut batch, 4), 0);
    }

    #[test]
    fn an_unaligned_pool_starts_at_the_next_page() {
        let pool = FramePool::new(10, 3 * PAGE_SIZE);
        assert_eq!(pool.total_frames(), 2);
    }
}
