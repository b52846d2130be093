//! Per-core state and the small instructions around it.

use aarch64_cpu::registers::{DAIF, MPIDR_EL1, Readable, TPIDR_EL1, Writeable};
use core::arch::asm;

/// This core's index (0..4), set by the entry code into TPIDR_EL1.
#[inline(always)]
pub fn core_id() -> usize {
    TPIDR_EL1.get() as usize
}

pub fn mpidr() -> u64 {
    MPIDR_EL1.get()
}

/// Saved interrupt mask; restoring it re-enables IRQs only if they were enabled.
#[must_use]
pub struct IrqState(u64);

/// Masks IRQs on this core and returns the previous state.
#[inline(always)]
pub fn irq_save_disable() -> IrqState {
    let daif = DAIF.get();
    // SAFETY: masking interrupts has no memory-safety effect.
    unsafe { asm!("msr daifset, #2", options(nomem, nostack, preserves_flags)) };
    IrqState(daif)
}

#[inline(always)]
pub fn irq_restore(state: IrqState) {
    DAIF.set(state.0);
}

#[inline(always)]
pub fn irq_enable() {
    // SAFETY: unmasking IRQs: handlers are installed before any source is enabled.
    unsafe { asm!("msr daifclr, #2", options(nomem, nostack, preserves_flags)) };
}

pub fn irqs_enabled() -> bool {
    DAIF.get() & (1 << 7) == 0
}

/// Runs `f` with IRQs masked on this core.
pub fn without_irqs<R>(f: impl FnOnce() -> R) -> R {
    let state = irq_save_disable();
    let r = f();
    irq_restore(state);
    r
}

/// Sleeps until `ready()` holds. IRQs are masked while the condition is checked, and WFI wakes
/// on a pending interrupt even while masked, so a wake-up between check and sleep is not lost;
/// the interrupt is then taken when IRQs are unmasked again.
pub fn idle_until(mut ready: impl FnMut() -> bool) {
    loop {
        let state = irq_save_disable();
        if ready() {
            irq_restore(state);
            return;
        }
        aarch64_cpu::asm::wfi();
        irq_enable();
        irq_restore(state);
    }
}

/// Parks this core for good.
pub fn park() -> ! {
    let _ = irq_save_disable();
    loop {
        aarch64_cpu::asm::wfi();
    }
}

/// Writes TPIDR_EL1; only the entry code and tests that restore it call this.
pub fn set_core_id(id: usize) {
    TPIDR_EL1.set(id as u64);
}
