//! The node's page frames: the board's frame pool behind a lock, for process memory, page
//! tables and the atomic service's shared pages. The lock masks interrupts: the PLDMA's fault
//! interrupt maps pages too (`process::paging`). Idle process cores zero frames ahead
//! ([`zero_ahead`]), so that a fault takes them ready; a frame not zeroed ahead is zeroed by
//! its taker, outside the lock.

use super::PAGE_SIZE;
use super::frames::{Frame, FramePool};
use super::user_space::{FrameSource, TABLE_RESERVE};
use crate::Board;
use crate::arch::phys_to_virt;
use crate::sync::IrqMutex;
use board::Board as _;
use spin::Once;

static POOL: Once<IrqMutex<FramePool>> = Once::new();

fn pool() -> &'static IrqMutex<FramePool> {
    POOL.call_once(|| {
        let layout = Board::DDR_LAYOUT;
        IrqMutex::new(FramePool::new(layout.frames, layout.frames_end))
    })
}

pub fn free_frames() -> usize {
    pool().lock().free_frames()
}

fn zero(pa: u64) -> u64 {
    // SAFETY: a frame just taken from the pool: nobody else's, normal memory in the kernel's
    // linear map.
    unsafe { crate::arch::mmu::zero_page(phys_to_virt(pa) as *mut u8) };
    pa
}

/// `frame`'s address, zeroed unless it was zeroed ahead.
fn zeroed(frame: Frame) -> u64 {
    if frame.zeroed { frame.pa } else { zero(frame.pa) }
}

/// Zeroes up to `max` frames ahead of need (an idle core's work: `process::scheduler`); returns
/// how many, 0 when the pool has enough ready or too few free (`FramePool::to_zero`). Each
/// frame is zeroed outside the lock.
pub fn zero_ahead(max: usize) -> usize {
    for done in 0..max {
        let Some(pa) = pool().lock().to_zero() else { return done };
        zero(pa);
        pool().lock().put_zeroed(pa);
    }
    max
}

/// The kernel's frame source (a handle to the global pool).
#[derive(Clone, Copy, Debug, Default)]
pub struct KernelFrames;

impl FrameSource for KernelFrames {
    fn alloc_zeroed(&self) -> Option<u64> {
        let mut pool = pool().lock();
        if pool.free_frames() <= TABLE_RESERVE {
            return None;
        }
        let frame = pool.take().ok();
        drop(pool);
        frame.map(zeroed)
    }

    fn alloc_zeroed_many(&self, out: &mut [u64]) -> usize {
        const MAX: usize = 8;
        let mut frames = [Frame { pa: 0, zeroed: false }; MAX];
        let wanted = out.len().min(MAX);
        let taken = pool().lock().take_many(&mut frames[..wanted], TABLE_RESERVE);
        for (pa, &frame) in out.iter_mut().zip(&frames[..taken]) {
            *pa = zeroed(frame);
        }
        taken
    }

    fn alloc_table(&self) -> Option<u64> {
        let frame = pool().lock().take().ok()?;
        Some(zeroed(frame))
    }

    fn free(&self, pa: u64) {
        let freed = pool().lock().free(pa);
        if let Err(e) = freed {
            defmt::error!("frame pool: {}", defmt::Debug2Format(&e));
        }
    }

    fn virt(&self, pa: u64) -> *mut u8 {
        phys_to_virt(pa) as *mut u8
    }

    fn uncache(&self, pa: u64) {
        crate::arch::mmu::clean_invalidate_to_poc(phys_to_virt(pa) as *const u8, PAGE_SIZE as usize);
    }
}
