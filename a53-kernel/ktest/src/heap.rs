//! The heap survives a long mixed workload with its contents intact.

use crate::ensure;
use crate::testkit::{Test, TestResult};
use alloc::alloc::{Layout, alloc, dealloc};
use proto::rand::XorShift64;

pub const TESTS: &[Test] = &[Test::new("heap", "ten_thousand_mixed_allocations_keep_their_contents", stress)];

struct Block {
    ptr: *mut u8,
    layout: Layout,
    seed: u8,
}

fn fill(b: &Block) {
    for i in 0..b.layout.size() {
        // SAFETY: `ptr` points to `size` bytes we allocated.
        unsafe { b.ptr.add(i).write(b.seed.wrapping_add(i as u8)) };
    }
}

fn intact(b: &Block) -> bool {
    // SAFETY: `ptr` points to `size` bytes we allocated and filled.
    (0..b.layout.size()).all(|i| unsafe { b.ptr.add(i).read() } == b.seed.wrapping_add(i as u8))
}

fn stress() -> TestResult {
    const OPERATIONS: usize = 10_000;
    const LIVE_MAX: usize = 256;
    let (used_before, _) = a53_kernel::mm::heap::usage();
    let mut rng = XorShift64::new(0x9e37_79b9_7f4a_7c15);
    let mut live: heapless::Vec<Block, LIVE_MAX> = heapless::Vec::new();
    let mut result = Ok(());
    for _ in 0..OPERATIONS {
        let r = rng.next_u64();
        if live.is_full() || (!live.is_empty() && r.is_multiple_of(3)) {
            let b = live.swap_remove((r >> 8) as usize % live.len());
            if !intact(&b) {
                result = Err("a block's contents changed while it was allocated");
            }
            // SAFETY: allocated below with this layout and not freed since.
            unsafe { dealloc(b.ptr, b.layout) };
        } else {
            let size = 1 + (r >> 16) as usize % 4096;
            let align = 1 << ((r >> 32) % 8);
            let layout = Layout::from_size_align(size, align).map_err(|_| "bad layout")?;
            // SAFETY: the layout has a non-zero size.
            let ptr = unsafe { alloc(layout) };
            if ptr.is_null() {
                result = Err("allocation failed");
                break;
            }
            if !(ptr as usize).is_multiple_of(align) {
                result = Err("allocation misaligned");
            }
            let b = Block { ptr, layout, seed: (r >> 40) as u8 };
            fill(&b);
            let _ = live.push(b);
        }
    }
    for b in live {
        if !intact(&b) {
            result = Err("a block's contents changed while it was allocated");
        }
        // SAFETY: allocated with this layout and not freed.
        unsafe { dealloc(b.ptr, b.layout) };
    }
    result?;
    ensure(a53_kernel::mm::heap::usage().0 == used_before, "the heap did not return to its starting usage")
}
