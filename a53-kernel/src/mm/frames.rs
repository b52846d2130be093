//! The page-frame allocator: a bitmap over the board's frame pool (`DdrLayout::frames`).
//!
//! Frames hold processes' pages, their page tables and the global shared address space's
//! shared pages. The allocator only does bookkeeping; whoever takes a frame zeroes it if it
//! needs to (`zero` in the kernel's glue).

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

pub struct FramePool {
    base: u64,
    frames: usize,
    used: Vec<u64>,
    free: usize,
    /// Where the next search starts (frames are handed out round-robin, which spreads reuse).
    cursor: usize,
}

impl FramePool {
    /// The pool of whole pages in `[start, end)`.
    pub fn new(start: u64, end: u64) -> Self {
        let base = start.next_multiple_of(PAGE_SIZE);
        let frames = (end.saturating_sub(base) / PAGE_SIZE) as usize;
        Self { base, frames, used: vec![0; frames.div_ceil(64)], free: frames, cursor: 0 }
    }

    pub fn free_frames(&self) -> usize {
        self.free
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

    /// Takes one frame; returns its physical address.
    pub fn alloc(&mut self) -> Result<u64, FrameError> {
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
        let mut got: Vec<u64> = (0..130).map(|_| pool.alloc().unwrap()).collect();
        assert_eq!(pool.alloc(), Err(FrameError::OutOfFrames));
        got.sort_unstable();
        got.dedup();
        assert_eq!(got.len(), 130);
        assert!(got.iter().all(|&pa| (0x1000..0x1000 + 130 * PAGE_SIZE).contains(&pa) && pa % PAGE_SIZE == 0));
    }

    #[test]
    fn freed_frames_come_back_and_errors_are_typed() {
        let mut pool = FramePool::new(0, 4 * PAGE_SIZE);
        let a = pool.alloc().unwrap();
        pool.free(a).unwrap();
        assert_eq!(pool.free(a), Err(FrameError::NotAllocated(a)));
        assert_eq!(pool.free(a + 1), Err(FrameError::NotAFrame(a + 1)));
        assert_eq!(pool.free(100 * PAGE_SIZE), Err(FrameError::NotAFrame(100 * PAGE_SIZE)));
        assert_eq!(pool.free_frames(), 4);
        for _ in 0..4 {
            pool.alloc().unwrap();
        }
        assert_eq!(pool.free_frames(), 0);
    }

    #[test]
    fn an_unaligned_pool_starts_at_the_next_page() {
        let pool = FramePool::new(10, 3 * PAGE_SIZE);
        assert_eq!(pool.total_frames(), 2);
    }
}
