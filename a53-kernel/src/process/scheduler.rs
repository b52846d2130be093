//! Running processes on the process cores (2 and 3).
//!
//! A process core is either running a process at EL0 or sitting in [`idle`] at EL1. There are
//! no per-process kernel stacks: a process's whole context is its saved [`ExceptionFrame`].
//! Entering a process puts its frame at the top of the core's stack and returns from
//! exception into it, so every exception from EL0 lands on that same frame; switching to
//! another process copies frames in place, and going idle restarts the idle loop on the stack
//! below the frame. Nothing is ever left on a stack that is abandoned: no lock is held across
//! a switch.

use super::MAX_DOMAINS;
use super::lifecycle::TABLE;
use super::state::KillMark;
use super::table::{Exit, Next, Slice, Switch, Wait};
use crate::CORES;
use crate::arch::cpu;
use crate::arch::mmu::switch_user_table;
use crate::irq::{self, sgi};
use boot::a53::{ExceptionFrame, resume_frame, run_on_stack};
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// The cores that run processes.
pub const PROCESS_CORES: u8 = 0b1100;
/// The cores whose tick ends the waits whose deadline passed ([`expire`], an exact tick client:
/// `kernel::wire`): core 0, which also takes the interrupts that wake waits early, so that a
/// wait is never ended both ways at once.
pub const EXPIRY_CORES: u8 = 0b0001;
/// Bytes at the top of a process core's stack kept for the frame (the idle loop runs below).
const FRAME_ZONE: usize = 4096;

const NONE: usize = usize::MAX;
static CURRENT: [AtomicUsize; CORES] = [const { AtomicUsize::new(NONE) }; CORES];
/// The interface pair (`grant.index`) of the process running on each core, beside [`CURRENT`]:
/// the forwarding fault handler translates the process's interface pages with it, on every
/// access, without taking the process table.
static CURRENT_INTERFACE: [AtomicUsize; CORES] = [const { AtomicUsize::new(NONE) }; CORES];
/// Per core: the running process's time slice (counted by the core's tick, without the table).
static SLICES: [Slice; CORES] = [const { Slice::new() }; CORES];
/// Per slot: the running process is to end at its next exception, and how ([`kill_running`],
/// a [`KillMark`]). An atomic beside the table, not in it: [`switch_point`] looks at it without
/// the table's lock.
static KILL: [AtomicU64; MAX_DOMAINS] = [const { AtomicU64::new(KillMark::NONE) }; MAX_DOMAINS];
/// Per core: the slot of the process it ran last (kept while it idles), for [`CHANGES`].
static LAST_RAN: [AtomicUsize; CORES] = [const { AtomicUsize::new(NONE) }; CORES];
/// How often a core started running a process other than the one it ran last: the registers
/// that are a process's own (its whole frame: general, FP/SIMD, TPIDR_EL0) changed hands there.
static CHANGES: AtomicU64 = AtomicU64::new(0);

pub use super::state::Event;

/// The slot of the process running on this core.
pub fn current() -> Option<usize> {
    let slot = CURRENT[cpu::core_id()].load(Ordering::Acquire);
    (slot != NONE).then_some(slot)
}

/// The interface pair of the process running on this core (fixed for the process's life).
pub fn current_interface() -> Option<u8> {
    u8::try_from(CURRENT_INTERFACE[cpu::core_id()].load(Ordering::Acquire)).ok()
}

/// Records that `next`, or nothing, runs on `core`; a process starts a whole slice.
fn set_running(core: usize, next: Option<Next>) {
    let (slot, interface) = next.map_or((NONE, NONE), |n| (n.slot, usize::from(n.interface)));
    CURRENT_INTERFACE[core].store(interface, Ordering::Release);
    CURRENT[core].store(slot, Ordering::Release);
    if let Some(next) = next {
        SLICES[core].restart();
        if LAST_RAN[core].swap(next.slot, Ordering::Relaxed) != next.slot {
            CHANGES.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// How many times since boot a core started running a process other than the one it ran
/// before (directly, or after idling): what the tests count to know processes shared a core.
pub fn process_changes() -> u64 {
    CHANGES.load(Ordering::Relaxed)
}

fn stack_top(core: usize) -> usize {
    unsafe extern "C" {
        static __stacks_start: u8;
    }
    let slot = (board::layout::KERNEL_STACK_SIZE + board::layout::KERNEL_STACK_GUARD) as usize;
    // SAFETY: only the linker symbol's address is used.
    let start = unsafe { &__stacks_start as *const u8 as usize };
    start + (core + 1) * slot
}

fn frame_slot(core: usize) -> *mut ExceptionFrame {
    (stack_top(core) - size_of::<ExceptionFrame>()) as *mut ExceptionFrame
}

/// Wakes the process cores to look at the run queue.
pub fn kick() {
    irq::send_sgi(sgi::WAKE, PROCESS_CORES);
}

/// A process core: ticks for preemption, then idles.
pub fn process_core_main() -> ! {
    crate::timer::start_preemption_tick();
    idle()
}

/// Frames an idle process core zeroes ahead between two looks for work (a few microseconds).
const ZERO_AHEAD_PER_ROUND: usize = 4;

/// The idle loop of a process core, on a fresh stack: serves kernel jobs, runs the next
/// runnable process, otherwise zeroes frames ahead (`mm::kernel_frames::zero_ahead`) or sleeps
/// until an interrupt.
pub fn idle() -> ! {
    extern "C" fn idle_loop() -> ! {
        let core = cpu::core_id();
        set_running(core, None);
        switch_user_table(None);
        loop {
            cpu::irq_enable();
            crate::smp::serve_jobs();
            // Interrupts stay masked from here into the process: ERET unmasks them.
            let masked = cpu::irq_save_disable();
            let next = TABLE.lock().take_next(core).map(|(next, frame)| (next, *frame));
            if let Some((next, frame)) = next {
                enter(core, next, &frame);
            }
            cpu::irq_restore(masked);
            // Nothing to run: zero a few frames ahead for the page faults to come (the PLDMA's
            // above all), then look for work again; sleep once the pool has enough.
            if crate::mm::kernel_frames::zero_ahead(ZERO_AHEAD_PER_ROUND) > 0 {
                continue;
            }
            crate::timer::idle_until(|| !TABLE.lock().run_queue.is_empty() || crate::smp::job_pending());
        }
    }
    let _ = cpu::irq_save_disable();
    // SAFETY: the idle loop never returns and uses the stack below the frame zone.
    unsafe { run_on_stack(stack_top(cpu::core_id()) - FRAME_ZONE, idle_loop) }
}

fn enter(core: usize, next: Next, frame: &ExceptionFrame) -> ! {
    set_running(core, Some(next));
    switch_user_table(Some(next.ttbr0));
    let at = frame_slot(core);
    // SAFETY: the frame zone at the top of this core's stack is reserved for the frame (the
    // idle loop runs below it); resume_frame restores it and enters the process.
    unsafe {
        at.write(*frame);
        resume_frame(at)
    }
}

/// Called at the end of every exception taken from EL0, with the process's frame (at the top
/// of this core's stack). Returns to let the same or another process run, or never returns
/// (the core goes idle). The decision is the table's ([`Table::switch`]); this carries it out.
///
/// [`Table::switch`]: super::table::TableOf::switch
pub fn switch_point(frame: &mut ExceptionFrame, event: Event) {
    let core = cpu::core_id();
    let Some(slot) = current() else { return };
    let event = event.or_preempt(|| SLICES[core].take_resched());
    // The common case (a forwarded access, a call that returns at once) needs no table: only a
    // kill could change it, and a kill that comes after this look is taken at the next
    // exception (the tick, at the latest), as it would if it came after the table was looked at.
    if event == Event::Continue && KILL[slot].load(Ordering::Acquire) == KillMark::NONE {
        return;
    }
    let switch = {
        let mut table = TABLE.lock();
        let killed = || KillMark::exit(KILL[slot].swap(KillMark::NONE, Ordering::AcqRel));
        let switch = table.switch(slot, core, frame, event, killed, || switch_user_table(None));
        if let Switch::Leave { next, .. } = switch {
            set_running(core, next);
        }
        switch
    };
    let Switch::Leave { next, ended, deadline } = switch else { return };
    if let Some(deadline) = deadline {
        crate::timer::needs_changed(EXPIRY_CORES, crate::timer::Need::At(deadline));
    }
    if let Some(ended) = ended {
        ended.finish();
    }
    match next {
        Some(next) => switch_user_table(Some(next.ttbr0)),
        None => idle(),
    }
}

/// Makes a blocked process runnable. `result` (with the syscall skipped) ends its wait with a
/// value in x0; without it the process re-executes its `svc` and looks again.
pub fn wake(slot: usize, result: Option<i64>) {
    if TABLE.lock().wake(slot, result) {
        kick();
    }
}

/// Wakes the process in `slot` if it waits for what `wanted` accepts, or, if it is not blocked
/// yet, keeps it from blocking (`Table::wake_waiter`). For events that can come at any time
/// (an interrupt, another process's message); a deadline uses [`wake`].
pub fn wake_waiter(slot: usize, wanted: impl Fn(Wait) -> bool) {
    if TABLE.lock().wake_waiter(slot, wanted) {
        kick();
    }
}

/// A user address of the running process's interface pages -> physical (the forwarder's
/// lookup, `exception::forward::set_user_pages`). Its packetizer and mailbox pages (every GSAS
/// access) need no lock: the scheduler keeps the running process's pair per core. Its PD page
/// is its own only while its RDMA is active, which the table says.
pub fn running_interface_page(va: u64) -> Option<u64> {
    let interface = current_interface()?;
    super::state::interface_page(interface, None, va).or_else(|| {
        let slot = current()?;
        TABLE.lock().slots[slot].as_ref()?.interface_page(va)
    })
}

/// A node became unreachable (`cluster::on_node_lost`): every process waiting for its mailbox
/// interface looks again, and finds out whether the node it waits for is gone.
pub fn wake_mif_waiters(_lost: u16) {
    if TABLE.lock().wake_waiters(|w| matches!(w, Wait::Mif { .. })) {
        kick();
    }
}

/// Marks the process in `slot`, running on some core, to end with `exit` (`Killed`, or a
/// job's status) when it next enters the kernel. The caller holds the table and has seen it
/// running: its next [`switch_point`] looks at the mark after that, so it sees it. An exit that
/// cannot be marked ends it as `Killed`.
pub(super) fn kill_running(slot: usize, exit: Exit) {
    let mark = KillMark::of(exit).or(KillMark::of(Exit::Killed)).unwrap_or(KillMark::NONE);
    KILL[slot].store(mark, Ordering::Release);
}

/// Per-core tick on the process cores: ask for a reschedule once the slice is used up.
pub fn on_tick() {
    SLICES[cpu::core_id()].tick();
}

/// The earliest deadline of a blocked process: when the tick of [`EXPIRY_CORES`] must run
/// [`expire`], to the counter tick.
pub fn next_deadline() -> Option<u64> {
    TABLE.lock().next_deadline()
}

/// The tick of [`EXPIRY_CORES`], at a tick or at a deadline: ends the waits whose deadline
/// passed (a timed-out mailbox wait, a sleep). The subsystems hear of each first, without the
/// table (a mailbox wait's interrupt is disarmed).
pub fn expire(now: u64) {
    let expired = TABLE.lock().expired(now);
    for (slot, wait) in expired {
        super::hooks::wait_expired(slot, wait);
        if TABLE.lock().time_out(slot, wait) {
            kick();
        }
    }
}
