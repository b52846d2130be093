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
use super::state::{expired, resume_past_call, timeout_result};
use super::table::{State, Wait};
use crate::CORES;
use crate::arch::cpu;
use crate::arch::mmu::switch_user_table;
use crate::irq::{self, sgi};
use boot::a53::{ExceptionFrame, resume_frame, run_on_stack};
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The cores that run processes.
pub const PROCESS_CORES: u8 = 0b1100;
/// Bytes at the top of a process core's stack kept for the frame (the idle loop runs below).
const FRAME_ZONE: usize = 4096;
/// A process that keeps its core this many ticks is preempted if others are waiting.
const SLICE_TICKS: u32 = 2;

const NONE: usize = usize::MAX;
static CURRENT: [AtomicUsize; CORES] = [const { AtomicUsize::new(NONE) }; CORES];
/// The interface pair (`grant.index`) of the process running on each core, beside [`CURRENT`]:
/// the forwarding fault handler translates the process's interface pages with it, on every
/// access, without taking the process table.
static CURRENT_INTERFACE: [AtomicUsize; CORES] = [const { AtomicUsize::new(NONE) }; CORES];
static NEED_RESCHED: [AtomicBool; CORES] = [const { AtomicBool::new(false) }; CORES];
static SLICE: [AtomicUsize; CORES] = [const { AtomicUsize::new(0) }; CORES];
/// Per slot: the running process is to end at its next exception ([`kill_running`]).
static KILL: [AtomicBool; MAX_DOMAINS] = [const { AtomicBool::new(false) }; MAX_DOMAINS];
/// Per slot: a wake-up found the process not blocked. It may be on its way to blocking (its
/// call has looked and found nothing, and the scheduler has not yet recorded the wait): that
/// block then does not happen, and the call runs again and finds what woke it. A wake-up that
/// was not for it costs one extra look.
static WAKE_PENDING: [AtomicBool; MAX_DOMAINS] = [const { AtomicBool::new(false) }; MAX_DOMAINS];

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

/// Records that `slot` (holding interface pair `interface`), or nothing, runs on `core`.
fn set_running(core: usize, running: Option<(usize, u8)>) {
    let (slot, interface) = running.map_or((NONE, NONE), |(s, i)| (s, usize::from(i)));
    CURRENT_INTERFACE[core].store(interface, Ordering::Release);
    CURRENT[core].store(slot, Ordering::Release);
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

/// Takes the next runnable process for `core`, marks it running and returns its frame.
fn take_next(core: usize) -> Option<(usize, u8, ExceptionFrame, u64)> {
    let mut table = TABLE.lock();
    let slot = table.run_queue.pop_front()?;
    let p = table.slots[slot].as_mut()?;
    p.state = State::Running(core);
    Some((slot, p.grant.index, p.frame, p.space.ttbr0()))
}

/// A process core: ticks for preemption, then idles.
pub fn process_core_main() -> ! {
    crate::timer::start_preemption_tick();
    idle()
}

/// The idle loop of a process core, on a fresh stack: serves kernel jobs, runs the next
/// runnable process, otherwise sleeps until an interrupt.
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
            if let Some((slot, interface, frame, ttbr0)) = take_next(core) {
                enter(core, (slot, interface), &frame, ttbr0);
            }
            cpu::irq_restore(masked);
            crate::timer::idle_until(|| !TABLE.lock().run_queue.is_empty() || crate::smp::job_pending());
        }
    }
    let _ = cpu::irq_save_disable();
    // SAFETY: the idle loop never returns and uses the stack below the frame zone.
    unsafe { run_on_stack(stack_top(cpu::core_id()) - FRAME_ZONE, idle_loop) }
}

fn enter(core: usize, running: (usize, u8), frame: &ExceptionFrame, ttbr0: u64) -> ! {
    set_running(core, Some(running));
    SLICE[core].store(0, Ordering::Relaxed);
    switch_user_table(Some(ttbr0));
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
/// (the core goes idle).
pub fn switch_point(frame: &mut ExceptionFrame, event: Event) {
    let core = cpu::core_id();
    let Some(slot) = current() else { return };
    let event = event.or_preempt(|| NEED_RESCHED[core].swap(false, Ordering::AcqRel));
    // The common case (a forwarded access, a call that returns at once) needs no table: only a
    // kill could change it, and a kill that comes after this look is taken at the next
    // exception (the tick, at the latest), as it would if it came after the table was looked at.
    if event == Event::Continue && !KILL[slot].load(Ordering::Acquire) {
        return;
    }
    // An ended process's RDMA resources, taken down once the table is released.
    let mut down = None;
    // A wait with a deadline: core 0's tick must see it (`timer::needs_changed`).
    let mut timed = false;
    {
        let mut table = TABLE.lock();
        // Woken on its way to blocking: its call runs again (the frame is rewound to it).
        let event = event
            .settle(|| KILL[slot].swap(false, Ordering::AcqRel), || WAKE_PENDING[slot].swap(false, Ordering::AcqRel));
        if event.keeps_core(!table.run_queue.is_empty()) {
            return;
        }
        match event {
            Event::Continue => return,
            Event::Preempt | Event::Yield => {
                if let Some(p) = table.slots[slot].as_mut() {
                    p.frame = *frame;
                    p.state = State::Runnable;
                }
                table.run_queue.push_back(slot);
            }
            Event::Block { wait, deadline } => {
                let Some(p) = table.slots[slot].as_mut() else { return };
                if p.signals != 0 && wait.interruptible() {
                    // A signal is pending: the wait ends before it begins (`raise_signal` ends
                    // one that has begun; both under the table lock, so none is missed).
                    frame.x[0] = proto::syscall::Error::Interrupted as i64 as u64;
                    frame.elr += resume_past_call(wait);
                    return;
                }
                p.frame = *frame;
                p.state = State::Blocked { wait, deadline };
                timed = deadline.is_some();
            }
            Event::Exit(exit) => {
                switch_user_table(None);
                down = table.exit(slot, exit);
            }
        }
        set_running(core, None);
        if let Some(next) = table.run_queue.pop_front()
            && let Some(p) = table.slots[next].as_mut()
        {
            p.state = State::Running(core);
            *frame = p.frame;
            let ttbr0 = p.space.ttbr0();
            set_running(core, Some((next, p.grant.index)));
            SLICE[core].store(0, Ordering::Relaxed);
            drop(table);
            if timed {
                crate::timer::needs_changed();
            }
            if let Some(ended) = down {
                ended.finish();
            }
            switch_user_table(Some(ttbr0));
            return;
        }
    }
    if timed {
        crate::timer::needs_changed();
    }
    if let Some(ended) = down {
        ended.finish();
    }
    idle()
}

/// Makes a blocked process runnable. `result` (with the syscall skipped) ends its wait with a
/// value in x0; without it the process re-executes its `svc` and looks again.
pub fn wake(slot: usize, result: Option<i64>) {
    let mut table = TABLE.lock();
    let Some(p) = table.slots[slot].as_mut() else { return };
    let State::Blocked { wait, .. } = p.state else { return };
    WAKE_PENDING[slot].store(false, Ordering::Relaxed);
    if let Some(value) = result {
        p.frame.x[0] = value as u64;
        p.frame.elr += resume_past_call(wait);
    }
    p.state = State::Runnable;
    table.run_queue.push_back(slot);
    drop(table);
    kick();
}

/// Wakes the process in `slot` if it waits for what `wanted` accepts, or, if it is not blocked
/// yet, keeps it from blocking (see [`WAKE_PENDING`]). For events that can come at any time
/// (an interrupt, another process's message); a deadline uses [`wake`].
pub fn wake_waiter(slot: usize, wanted: impl Fn(Wait) -> bool) {
    let Some(pending) = WAKE_PENDING.get(slot) else { return };
    // Before the table lock: a scheduler recording this process's block takes the lock after
    // this store, or before our check below sees the block.
    pending.store(true, Ordering::Release);
    let waiting =
        matches!(TABLE.lock().slots[slot].as_ref().map(|p| p.state), Some(State::Blocked { wait, .. }) if wanted(wait));
    if waiting {
        wake(slot, None);
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
    let occupied: heapless::Vec<usize, { super::MAX_DOMAINS }> =
        TABLE.lock().slots.iter().enumerate().filter(|(_, p)| p.is_some()).map(|(i, _)| i).collect();
    for slot in occupied {
        wake_waiter(slot, |w| matches!(w, Wait::Mif { .. }));
    }
}

/// Marks the process in `slot`, running on some core, to be killed when it next enters the
/// kernel. The caller holds the table and has seen it running: its next [`switch_point`] looks
/// at the mark after that, so it sees it.
pub(super) fn kill_running(slot: usize) {
    KILL[slot].store(true, Ordering::Release);
}

/// Per-core tick on the process cores: ask for a reschedule once the slice is used up.
pub fn on_tick() {
    let core = cpu::core_id();
    if SLICE[core].fetch_add(1, Ordering::Relaxed) + 1 >= SLICE_TICKS as usize {
        NEED_RESCHED[core].store(true, Ordering::Release);
    }
}

/// The earliest deadline of a blocked process: when core 0's tick must run [`expire`].
pub fn next_deadline() -> Option<u64> {
    let table = TABLE.lock();
    super::state::earliest_deadline(table.slots.iter().filter_map(|p| Some(p.as_ref()?.state)))
}

/// Core 0's tick: ends the waits whose deadline passed (a timed-out mailbox wait, a sleep).
pub fn expire(now: u64) {
    let expired: heapless::Vec<(usize, Wait), { super::MAX_DOMAINS }> = {
        let table = TABLE.lock();
        let states = table.slots.iter().enumerate().filter_map(|(i, p)| Some((i, p.as_ref()?.state)));
        expired(states, now).collect()
    };
    for (slot, wait) in expired {
        super::hooks::wait_expired(slot, wait);
        if wait == Wait::Connect {
            // The connect runs again and gives its connection up (`syscall::socket`).
            wake(slot, None);
            continue;
        }
        wake(slot, Some(timeout_result(wait)));
    }
}
