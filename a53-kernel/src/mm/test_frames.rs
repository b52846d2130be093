//! A frame source for host tests: frames in a heap arena, whose "physical" addresses are
//! offsets into it.

use super::PAGE_SIZE;
use super::frames::Frame;
use super::user_space::FrameSource;
use std::boxed::Box;
use std::cell::RefCell;
use std::vec;
use std::vec::Vec;

/// Frames in a heap arena; "physical" addresses are offsets into it.
pub struct Arena {
    memory: *mut u8,
    pool: RefCell<crate::mm::frames::FramePool>,
    /// The frames `uncache` was asked for.
    pub uncached: RefCell<Vec<u64>>,
}

impl Arena {
    pub fn new(frames: usize) -> Self {
        let bytes = vec![0u8; (frames + 1) * PAGE_SIZE as usize].into_boxed_slice();
        let raw = Box::leak(bytes).as_mut_ptr();
        // Align the arena to a page so tables are page aligned.
        let memory = raw.wrapping_add(raw.align_offset(PAGE_SIZE as usize));
        let pool = RefCell::new(crate::mm::frames::FramePool::new(0, frames as u64 * PAGE_SIZE));
        Self { memory, pool, uncached: RefCell::default() }
    }
    /// Zeroes `frame` unless it is known to be zero; its address.
    fn zeroed(&self, frame: Frame) -> u64 {
        if !frame.zeroed {
            // SAFETY: the frame lies inside the arena.
            unsafe { self.memory.add(frame.pa as usize).write_bytes(0, PAGE_SIZE as usize) };
        }
        frame.pa
    }

    /// Zeroes frames ahead as an idle core does (`kernel_frames::zero_ahead`); how many.
    pub fn zero_ahead(&self) -> usize {
        let mut n = 0;
        loop {
            let next = self.pool.borrow_mut().to_zero();
            let Some(pa) = next else { break };
            // SAFETY: the frame lies inside the arena.
            unsafe { self.memory.add(pa as usize).write_bytes(0, PAGE_SIZE as usize) };
            self.pool.borrow_mut().put_zeroed(pa);
            n += 1;
        }
        n
    }

    /// Fills every free frame with `byte` (as a former owner's data would), zeroed ahead or not.
    pub fn dirty_free_frames(&self, byte: u8) {
        let mut pool = self.pool.borrow_mut();
        let mut taken = Vec::new();
        while let Ok(frame) = pool.take() {
            // SAFETY: the frame lies inside the arena.
            unsafe { self.memory.add(frame.pa as usize).write_bytes(byte, PAGE_SIZE as usize) };
            taken.push(frame.pa);
        }
        for pa in taken {
            pool.free(pa).unwrap();
        }
    }

    /// Frames taken and not given back.
    pub fn used(&self) -> usize {
        let pool = self.pool.borrow();
        pool.total_frames() - pool.free_frames()
    }
}

impl FrameSource for &Arena {
    fn alloc_zeroed(&self) -> Option<u64> {
        if self.pool.borrow().free_frames() <= 2 {
            return None;
        }
        self.alloc_table()
    }
    fn alloc_table(&self) -> Option<u64> {
        let frame = self.pool.borrow_mut().take().ok()?;
        Some(self.zeroed(frame))
    }
    fn alloc_zeroed_many(&self, out: &mut [u64]) -> usize {
        let mut frames = vec![Frame { pa: 0, zeroed: false }; out.len()];
        let taken = self.pool.borrow_mut().take_many(&mut frames, 2);
        for (pa, &frame) in out.iter_mut().zip(&frames[..taken]) {
            *pa = self.zeroed(frame);
        }
        taken
    }
    fn free(&self, pa: u64) {
        self.pool.borrow_mut().free(pa).unwrap();
    }
    fn virt(&self, pa: u64) -> *mut u8 {
        self.memory.wrapping_add(pa as usize)
    }
    fn uncache(&self, pa: u64) {
        self.uncached.borrow_mut().push(pa);
    }
}
