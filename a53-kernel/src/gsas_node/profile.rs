//! Instructions the atomic service spends deciding and applying each request (`service.handle`,
//! which touches no forwarded MMIO: reading the request from MIF 0 and sending the replies
//! through PIF 0 are outside it), for `cargo xtask bench gsas`.

use super::SERVICE_CORE;
use crate::arch::pmu;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};

/// Requests sampled at most per run.
const CAPACITY: usize = 4096;

static ACTIVE: AtomicBool = AtomicBool::new(false);
static SAMPLES: [AtomicU32; CAPACITY] = [const { AtomicU32::new(0) }; CAPACITY];
static TAKEN: AtomicUsize = AtomicUsize::new(0);

/// Starts sampling on the service core; fails when its PMU does not count instructions.
pub fn start() -> Result<(), &'static str> {
    let counting = AtomicBool::new(false);
    crate::smp::run_on(SERVICE_CORE, &|_| counting.store(pmu::count_instructions(), Ordering::Relaxed))
        .map_err(|_| "the service core is offline")?;
    if !counting.load(Ordering::Relaxed) {
        return Err("the PMU counts no instructions (QEMU counts them only under -icount)");
    }
    TAKEN.store(0, Ordering::Relaxed);
    ACTIVE.store(true, Ordering::Release);
    Ok(())
}

/// Stops sampling; returns the instruction counts of the requests handled since [`start`].
pub fn stop() -> Vec<u32> {
    ACTIVE.store(false, Ordering::Release);
    let taken = TAKEN.load(Ordering::Acquire).min(CAPACITY);
    SAMPLES[..taken].iter().map(|s| s.load(Ordering::Relaxed)).collect()
}

/// Around one `handle` on the service core: the counter before it, when sampling.
#[inline(always)]
pub(super) fn begin() -> Option<u32> {
    ACTIVE.load(Ordering::Relaxed).then(pmu::instructions)
}

#[inline(always)]
pub(super) fn end(begun: Option<u32>) {
    if let Some(before) = begun {
        let spent = pmu::instructions().wrapping_sub(before);
        let i = TAKEN.fetch_add(1, Ordering::AcqRel);
        if let Some(slot) = SAMPLES.get(i) {
            slot.store(spent, Ordering::Relaxed);
        }
    }
}
