//! The secondary A53 cores: started through PSCI CPU_ON, then each waits (in WFI) for work
//! handed to it with [`run_on_all`] or [`run_on`].

use crate::CORES;
use crate::arch::{cpu, psci, virt_to_phys};
use crate::hooks::{AlreadySet, Hook};
use crate::irq::{self, IntId, sgi};
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use core::time::Duration;

/// Bit n set when core n is online.
static ONLINE: AtomicU32 = AtomicU32::new(1);

type Job = *const (dyn Fn(usize) + Sync + 'static);

struct WorkSlot {
    job: spin::Mutex<Option<SendJob>>,
    done: AtomicBool,
    requester: AtomicU32,
}

struct SendJob(Job);
// SAFETY: the job is a `Sync` closure that outlives its use (run_on waits for completion).
unsafe impl Send for SendJob {}

static SLOTS: [WorkSlot; CORES] =
    [const { WorkSlot { job: spin::Mutex::new(None), done: AtomicBool::new(true), requester: AtomicU32::new(0) } };
        CORES];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmpError {
    Psci(u32),
    Timeout(u32),
    Offline(u32),
}

pub fn online_mask() -> u32 {
    ONLINE.load(Ordering::Acquire)
}

pub fn online_count() -> usize {
    online_mask().count_ones() as usize
}

fn wake(_: IntId) {}

/// Boot core: registers the wake-up SGI and starts every other core, waiting (bounded) for
/// each to report online.
pub fn start_secondaries() -> Result<(), SmpError> {
    irq::register(IntId::sgi(sgi::WAKE), wake, 0).expect("wake SGI taken");
    let entry = virt_to_phys(boot::a53::_secondary_entry as *const () as usize);
    for core in 1..CORES as u32 {
        // On the ZynqMP the A53s are cluster 0: MPIDR affinity 0 is the core number.
        psci::cpu_on(u64::from(core), entry, u64::from(core)).map_err(|_| SmpError::Psci(core))?;
        let online = || online_mask() & (1 << core) != 0;
        crate::timer::wait_for(Duration::from_secs(1), online, core::hint::spin_loop)
            .map_err(|_| SmpError::Timeout(core))?;
    }
    Ok(())
}

/// What each secondary core runs once it is up ([`set_role`]).
static ROLES: [Hook<fn() -> !>; CORES] = [const { Hook::new() }; CORES];

/// Gives `core` its role: the loop it runs for good once it is up, which serves kernel jobs
/// ([`serve_jobs`]) too (boot core, before [`start_secondaries`]).
pub fn set_role(core: usize, main: fn() -> !) -> Result<(), AlreadySet> {
    ROLES.get(core).ok_or(AlreadySet)?.set(main)
}

/// A core with no role serves kernel jobs only.
fn jobs_only() -> ! {
    loop {
        cpu::idle_until(job_pending);
        serve_jobs();
    }
}

/// A secondary core, after its own set-up: announce, then take up its role.
pub fn secondary_loop(core: usize) -> ! {
    irq::enable_private(IntId::sgi(sgi::WAKE));
    ONLINE.fetch_or(1 << core, Ordering::AcqRel);
    cpu::irq_enable();
    let main = ROLES.get(core).and_then(Hook::get).copied().unwrap_or(jobs_only);
    main()
}

/// Whether a job waits for this core.
pub fn job_pending() -> bool {
    SLOTS[cpu::core_id()].job.lock().is_some()
}

/// Runs the job waiting for this core, if any, and tells its requester.
pub fn serve_jobs() {
    let core = cpu::core_id();
    let slot = &SLOTS[core];
    let job = slot.job.lock().take();
    if let Some(SendJob(job)) = job {
        // SAFETY: the requester keeps the closure alive until `done` is set.
        unsafe { (*job)(core) };
        slot.done.store(true, Ordering::Release);
        let requester = slot.requester.load(Ordering::Relaxed);
        irq::send_sgi(sgi::WAKE, 1 << requester);
    }
}

/// Runs `f(core)` on every core in `mask` (the caller's own core included, if set) in parallel
/// and returns when all have finished.
pub fn run_on_mask(mask: u32, f: &(dyn Fn(usize) + Sync)) -> Result<(), SmpError> {
    let me = cpu::core_id();
    let offline = mask & !online_mask();
    if offline != 0 {
        return Err(SmpError::Offline(offline.trailing_zeros()));
    }
    // SAFETY: only the lifetime is erased; every job completes before this function returns.
    let job: Job = unsafe { core::mem::transmute::<*const (dyn Fn(usize) + Sync + '_), Job>(f) };
    let others = (0..CORES).filter(|&c| c != me && mask & (1 << c) != 0);
    for core in others.clone() {
        let slot = &SLOTS[core];
        slot.done.store(false, Ordering::Relaxed);
        slot.requester.store(me as u32, Ordering::Relaxed);
        *slot.job.lock() = Some(SendJob(job));
        irq::send_sgi(sgi::WAKE, 1 << core);
    }
    if mask & (1 << me) != 0 {
        f(me);
    }
    for core in others {
        cpu::idle_until(|| SLOTS[core].done.load(Ordering::Acquire));
    }
    Ok(())
}

pub fn run_on_all(f: &(dyn Fn(usize) + Sync)) -> Result<(), SmpError> {
    run_on_mask(online_mask(), f)
}

pub fn run_on(core: usize, f: &(dyn Fn(usize) + Sync)) -> Result<(), SmpError> {
    run_on_mask(1 << core, f)
}
