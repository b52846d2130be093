//! Model of the ZynqMP's SMMU-500 (`docs/hw/smmu.md`): the registers the kernel programs, with
//! their semantics (write-1-to-clear FSR, TLB invalidation completed by sync, RESUME), and the
//! translation a PL bus master sees ([`IoTranslate`]): stream matching, a stage-1 walk of the
//! guest's own tables, a TLB that only invalidation empties, terminate and stall.
//!
//! Thread-safe: the platform server calls [`Smmu500Model::read`] / [`write`](Smmu500Model::write)
//! while the PLDMA engine's thread translates. All state is behind one lock that is a leaf of
//! the platform's lock order (nothing else is taken while it is held).

mod device;
mod registers;
mod state;
mod tlb;
mod walk;

#[cfg(test)]
mod tests;

pub use device::SmmuDevice;
pub use registers::{idr0, idr1, idr2};
pub use state::Stats;
pub use walk::GuestMemory;

use super::ModelError;
use super::iommu::{Access, IoTranslate, StallId, StallOutcome, Translation};
use state::State;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Called after a translation raised the interrupt output, with the model's lock released.
pub type IrqNotifier = Box<dyn Fn() + Send + Sync>;

pub struct Smmu500Model {
    state: Mutex<State>,
    /// Signalled whenever held transactions may have been decided.
    decided: Condvar,
    memory: Arc<dyn GuestMemory>,
    notifier: Mutex<Option<IrqNotifier>>,
}

impl std::fmt::Debug for Smmu500Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Smmu500Model").field("stats", &self.stats()).finish_non_exhaustive()
    }
}

impl Smmu500Model {
    /// An SMMU in its reset state whose table walks read `memory` (the node's DDR).
    pub fn new(memory: Arc<dyn GuestMemory>) -> Self {
        Self { state: Mutex::new(State::new()), decided: Condvar::new(), memory, notifier: Mutex::new(None) }
    }

    /// TLBSTATUS / sTLBGSTATUS report a sync as running for `reads` reads after it starts.
    pub fn set_sync_busy_reads(&self, reads: u32) {
        self.lock().sync_busy_reads = reads;
    }

    /// Who to tell when a translation raises the interrupt output (the platform sends the
    /// line's byte). It runs on the translating thread, with no model lock held.
    pub fn set_irq_notifier(&self, notifier: IrqNotifier) {
        *self.notifier.lock().unwrap_or_else(|p| p.into_inner()) = Some(notifier);
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic under the lock leaves consistent register values; keep serving.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A forwarded read of `size` bytes at `offset` from the SMMU's base.
    pub fn read(&self, offset: u64, size: usize) -> Result<u128, ModelError> {
        self.lock().read_register(offset, size)
    }

    /// A forwarded write.
    pub fn write(&self, offset: u64, size: usize, value: u128) -> Result<(), ModelError> {
        let result = self.lock().write_register(offset, size, value);
        self.decided.notify_all();
        result
    }

    /// The interrupt output (context faults with CFIE, global faults with GFIE).
    pub fn irq(&self) -> bool {
        self.lock().irq()
    }

    pub fn stats(&self) -> Stats {
        self.lock().stats
    }

    /// Translations bank `bank`'s TLB holds (0 for a bad index).
    pub fn tlb_entries(&self, bank: usize) -> usize {
        self.lock().tlb_entries(bank)
    }

    /// Whether bank `bank` holds transactions (stalled, or waiting behind a stall).
    pub fn holds(&self, bank: usize) -> bool {
        bank < hal::smmu500::regs::CONTEXT_BANKS && self.lock().holds(bank)
    }

    /// Waits up to `timeout` for a held transaction to be decided; `Pending` if it was not.
    /// Reports the decision once, as [`IoTranslate::stall_outcome`] does.
    pub fn wait_stall(&self, stall: StallId, timeout: Duration) -> StallOutcome {
        let deadline = Instant::now() + timeout;
        let mut state = self.lock();
        loop {
            let outcome = state.stall_outcome(stall);
            let left = deadline.saturating_duration_since(Instant::now());
            if outcome != StallOutcome::Pending || left.is_zero() {
                return outcome;
            }
            state = self.decided.wait_timeout(state, left).unwrap_or_else(|p| p.into_inner()).0;
        }
    }
}

impl IoTranslate for Smmu500Model {
    fn translate(&self, stream: u16, iova: u64, access: Access) -> Translation {
        let (result, rose) = {
            let mut state = self.lock();
            let before = state.irq();
            let result = state.translate(stream, iova, access, &*self.memory);
            (result, !before && state.irq())
        };
        if rose && let Some(notify) = &*self.notifier.lock().unwrap_or_else(|p| p.into_inner()) {
            notify();
        }
        result
    }

    fn stall_outcome(&self, stall: StallId) -> StallOutcome {
        self.lock().stall_outcome(stall)
    }
}
