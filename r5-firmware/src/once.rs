//! A value handed out once as `&'static mut`: for the firmware's state that is too big for a
//! stack (the RDMA scheduler's tables). A second `take` gets `None`, so no two owners exist.

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, Ordering};

pub struct Once<T> {
    taken: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the value is reachable only through the one `&mut` that `take` hands out.
unsafe impl<T: Send> Sync for Once<T> {}

impl<T> Once<T> {
    pub const fn new(value: T) -> Self {
        Self { taken: AtomicBool::new(false), value: UnsafeCell::new(value) }
    }

    // The flag makes the one `&mut` unique, which is what the lint cannot see.
    #[allow(clippy::mut_from_ref)]
    pub fn take(&'static self) -> Option<&'static mut T> {
        if self.taken.swap(true, Ordering::AcqRel) {
            return None;
        }
        // SAFETY: the first and only take: no other reference to the value exists or will.
        Some(unsafe { &mut *self.value.get() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hands_out_once() {
        static CELL: Once<u32> = Once::new(5);
        let v = CELL.take().unwrap();
        *v += 1;
        assert_eq!(*v, 6);
        assert!(CELL.take().is_none());
    }
}
