//! The table of interrupt handlers, indexed by GIC interrupt ID.
//!
//! Lock-free: handlers are plain function pointers in atomics, so the IRQ path reads the
//! table without taking a lock that a registering core could hold.

use core::sync::atomic::{AtomicPtr, Ordering};
use hal::gic400::IntId;

pub type Handler = fn(IntId);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IrqError {
    OutOfRange(u32),
    AlreadyRegistered(u32),
}

pub struct HandlerTable<const N: usize> {
    slots: [AtomicPtr<()>; N],
}

impl<const N: usize> HandlerTable<N> {
    pub const fn new() -> Self {
        Self { slots: [const { AtomicPtr::new(core::ptr::null_mut()) }; N] }
    }

    /// Installs `handler` for `id`; one handler per interrupt.
    pub fn register(&self, id: IntId, handler: Handler) -> Result<(), IrqError> {
        let slot = self.slots.get(id.0 as usize).ok_or(IrqError::OutOfRange(id.0))?;
        slot.compare_exchange(core::ptr::null_mut(), handler as *mut (), Ordering::AcqRel, Ordering::Acquire)
            .map(|_| ())
            .map_err(|_| IrqError::AlreadyRegistered(id.0))
    }

    pub fn unregister(&self, id: IntId) {
        if let Some(slot) = self.slots.get(id.0 as usize) {
            slot.store(core::ptr::null_mut(), Ordering::Release);
        }
    }

    pub fn get(&self, id: IntId) -> Option<Handler> {
        let ptr = self.slots.get(id.0 as usize)?.load(Ordering::Acquire);
        // SAFETY: non-null slots only ever hold a `Handler` stored by `register`.
        (!ptr.is_null()).then(|| unsafe { core::mem::transmute::<*mut (), Handler>(ptr) })
    }
}

impl<const N: usize> Default for HandlerTable<N> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    static SEEN: AtomicU32 = AtomicU32::new(0);
    fn record(id: IntId) {
        SEEN.store(id.0, Ordering::SeqCst);
    }
    fn other(_: IntId) {}

    #[test]
    fn dispatches_to_the_registered_handler_only() {
        let table = HandlerTable::<64>::new();
        assert!(table.get(IntId(30)).is_none());
        table.register(IntId(30), record).unwrap();
        assert_eq!(table.register(IntId(30), other), Err(IrqError::AlreadyRegistered(30)));
        table.get(IntId(30)).unwrap()(IntId(30));
        assert_eq!(SEEN.load(Ordering::SeqCst), 30);
        table.unregister(IntId(30));
        assert!(table.get(IntId(30)).is_none());
        assert_eq!(table.register(IntId(64), other), Err(IrqError::OutOfRange(64)));
        assert!(table.get(IntId(1000)).is_none());
    }
}
