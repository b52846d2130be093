//! A spin lock for data that interrupt handlers also take: IRQs stay masked on this core while
//! it is held, so a handler can never spin on a lock its own core holds.

use crate::arch::cpu::{self, IrqState};
use core::ops::{Deref, DerefMut};

pub struct IrqMutex<T> {
    inner: spin::Mutex<T>,
}

pub struct IrqMutexGuard<'a, T> {
    guard: Option<spin::MutexGuard<'a, T>>,
    irq: Option<IrqState>,
}

impl<T> IrqMutex<T> {
    pub const fn new(value: T) -> Self {
        Self { inner: spin::Mutex::new(value) }
    }

    pub fn lock(&self) -> IrqMutexGuard<'_, T> {
        let irq = cpu::irq_save_disable();
        IrqMutexGuard { guard: Some(self.inner.lock()), irq: Some(irq) }
    }
}

impl<T> Deref for IrqMutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.guard.as_ref().expect("held")
    }
}

impl<T> DerefMut for IrqMutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.guard.as_mut().expect("held")
    }
}

impl<T> Drop for IrqMutexGuard<'_, T> {
    fn drop(&mut self) {
        // Unlock first, then let interrupts in.
        self.guard.take();
        if let Some(irq) = self.irq.take() {
            cpu::irq_restore(irq);
        }
    }
}
