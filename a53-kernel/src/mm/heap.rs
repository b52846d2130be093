//! The kernel heap: `linked_list_allocator` over the board's heap region.

use crate::Board;
use crate::arch::phys_to_virt;
use board::Board as _;
use linked_list_allocator::LockedHeap;

#[global_allocator]
static HEAP: LockedHeap = LockedHeap::empty();

/// Hands the board's heap region to the allocator (once, on the boot core, before any
/// allocation).
pub fn init() {
    let layout = Board::DDR_LAYOUT;
    // SAFETY: the region is reserved for the heap by the board layout, mapped as normal memory,
    // and given to the allocator exactly once.
    unsafe {
        HEAP.lock().init(phys_to_virt(layout.heap) as *mut u8, layout.heap_size as usize);
    }
}

/// Bytes currently allocated and free.
pub fn usage() -> (usize, usize) {
    let heap = HEAP.lock();
    (heap.used(), heap.free())
}
