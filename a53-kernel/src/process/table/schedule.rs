//! The scheduler's decisions over the process table: what an exception of a running process
//! does to it and to the run queue ([`Event`]), wake-ups, deadlines and the time slice. Plain
//! logic, host-tested; `scheduler` takes the table's lock around them and carries them out on
//! the cores (the frame in place, the user table, the core's record of what it runs, SGIs).
//!
//! The rules (`docs/hw/syscalls.md`, "Processes" and "System calls"): round robin with
//! preemptive slices; a blocked process runs again when woken or at its deadline; a wake-up
//! that comes after a call has looked and before its wait is recorded is not lost; a killed
//! process that is running ends at its next exception.

use super::{Ended, TableOf};
use crate::mm::user_space::FrameSource;
use crate::process::MAX_DOMAINS;
use crate::process::state::{self, Event, Exit, State, Wait, resume_past_call, timeout_result};
use boot::frame::ExceptionFrame;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// A process that keeps its core this many ticks is preempted if others are waiting.
pub const SLICE_TICKS: usize = 2;

/// The process a core goes on with; its frame is the one [`TableOf::take_next`] returns or
/// [`TableOf::switch`] put in place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Next {
    pub slot: usize,
    /// Its interface pair (`grant.index`), which the core keeps beside the slot for the
    /// forwarder's lock-free lookup.
    pub interface: u8,
    /// Its address space's TTBR0 value.
    pub ttbr0: u64,
}

/// Where a core goes after an exception of the process it runs ([`TableOf::switch`]).
#[derive(Debug)]
pub enum Switch {
    /// Back into the same process, with the frame as `switch` left it.
    Stay,
    /// Away from it: into `next`, whose frame `switch` put in place, or idle without one.
    Leave {
        next: Option<Next>,
        /// It ended: what is left to do once the table is let go (`Ended::finish`).
        ended: Option<Ended>,
        /// It blocked with this deadline, which the tick that ends waits must now see
        /// (`timer::needs_changed`).
        deadline: Option<u64>,
    },
}

impl<F: FrameSource> TableOf<F> {
    /// Takes the next runnable process for `core` off the run queue: it runs there from now.
    /// Returns it and the frame to enter it with.
    pub fn take_next(&mut self, core: usize) -> Option<(Next, &ExceptionFrame)> {
        let slot = self.run_queue.pop_front()?;
        let p = self.slots[slot].as_mut()?;
        p.state = State::Running(core);
        Some((Next { slot, interface: p.grant.index, ttbr0: p.space.ttbr0() }, &p.frame))
    }

    /// The process in `slot`, running on `core`, took an exception that decided `event`;
    /// `frame` is its frame, at the top of the core's stack. Applies what stands with the table
    /// held ([`Event::settle`]: `killed` is the kill mark, asked once and consumed; a wake-up
    /// that overtook a block makes it a yield), and, if the process gives up its core, puts the
    /// next runnable one's frame in its place. A process that yields or is preempted goes to the
    /// run queue's back; one that blocks keeps its wait and deadline; one that ends is ended
    /// here, after `leave_space` (the core must stop using the tables that may go with it).
    pub fn switch(
        &mut self,
        slot: usize,
        core: usize,
        frame: &mut ExceptionFrame,
        event: Event,
        killed: impl FnOnce() -> Option<Exit>,
        leave_space: impl FnOnce(),
    ) -> Switch {
        let event =
            event.settle(killed, || self.slots[slot].as_mut().is_some_and(|p| core::mem::take(&mut p.wake_pending)));
        if event.keeps_core(!self.run_queue.is_empty()) {
            return Switch::Stay;
        }
        let (mut ended, mut until) = (None, None);
        match event {
            Event::Continue => return Switch::Stay,
            Event::Preempt | Event::Yield => {
                if let Some(p) = self.slots[slot].as_mut() {
                    p.frame = *frame;
                    p.state = State::Runnable;
                }
                self.run_queue.push_back(slot);
            }
            Event::Block { wait, deadline } => {
                let Some(p) = self.slots[slot].as_mut() else { return Switch::Stay };
                if p.signals != 0 && wait.interruptible() {
                    // A signal is pending: the wait ends before it begins (`raise_signal` ends
                    // one that has begun; both under the table lock, so none is missed).
                    frame.x[0] = proto::syscall::Error::Interrupted as i64 as u64;
                    frame.elr += resume_past_call(wait);
                    return Switch::Stay;
                }
                p.frame = *frame;
                p.state = State::Blocked { wait, deadline };
                until = deadline;
            }
            Event::Exit(exit) => {
                leave_space();
                ended = self.exit(slot, exit);
            }
        }
        let next = self.take_next(core).map(|(next, next_frame)| {
            *frame = *next_frame;
            next
        });
        Switch::Leave { next, ended, deadline: until }
    }

    /// Makes the blocked process in `slot` runnable, at the run queue's back. `result` (with
    /// the call skipped) ends its wait with a value in x0; without it the process runs its
    /// `svc` again and looks again. Returns whether it was blocked (the process cores are then
    /// to look at the run queue).
    pub fn wake(&mut self, slot: usize, result: Option<i64>) -> bool {
        let Some(p) = self.slots.get_mut(slot).and_then(Option::as_mut) else { return false };
        let State::Blocked { wait, .. } = p.state else { return false };
        p.wake_pending = false;
        if let Some(value) = result {
            p.frame.x[0] = value as u64;
            p.frame.elr += resume_past_call(wait);
        }
        p.state = State::Runnable;
        self.run_queue.push_back(slot);
        true
    }

    /// Wakes the process in `slot` if it waits for what `wanted` accepts; otherwise it may be
    /// on its way to blocking, and its next block does not happen (`wake_pending`). For events
    /// that can come at any time (an interrupt, another process's message); a deadline uses
    /// [`wake`](Self::wake). Returns whether it woke.
    pub fn wake_waiter(&mut self, slot: usize, wanted: impl Fn(Wait) -> bool) -> bool {
        let Some(p) = self.slots.get_mut(slot).and_then(Option::as_mut) else { return false };
        match p.state {
            State::Blocked { wait, .. } if wanted(wait) => self.wake(slot, None),
            _ => {
                p.wake_pending = true;
                false
            }
        }
    }

    /// [`wake_waiter`](Self::wake_waiter) for every process. Returns whether any woke.
    pub fn wake_waiters(&mut self, wanted: impl Fn(Wait) -> bool) -> bool {
        (0..MAX_DOMAINS).fold(false, |woke, slot| self.wake_waiter(slot, &wanted) | woke)
    }

    /// The earliest deadline of a blocked process: when core 0's tick must look for expired
    /// waits.
    pub fn next_deadline(&self) -> Option<u64> {
        state::earliest_deadline(self.slots.iter().filter_map(|p| Some(p.as_ref()?.state)))
    }

    /// The waits whose deadline is `now` or earlier, with their slots (each is ended with
    /// [`time_out`](Self::time_out), after the subsystems heard of it: `hooks::wait_expired`).
    pub fn expired(&self, now: u64) -> heapless::Vec<(usize, Wait), MAX_DOMAINS> {
        let states = self.slots.iter().enumerate().filter_map(|(i, p)| Some((i, p.as_ref()?.state)));
        state::expired(states, now).collect()
    }

    /// Ends the wait of the process in `slot` at its deadline: a connect runs again and gives
    /// its connection up (`syscall::socket`), any other wait ends with its timeout result.
    /// Returns whether it woke.
    pub fn time_out(&mut self, slot: usize, wait: Wait) -> bool {
        let result = (wait != Wait::Connect).then(|| timeout_result(wait));
        self.wake(slot, result)
    }
}

/// A core's time slice: the ticks the process it runs has had, and whether it is to give way.
/// Kept per core, outside the table: the core's tick counts, and the core's next exception of
/// the process looks (`Event::or_preempt`), neither with the table's lock.
#[derive(Debug, Default)]
pub struct Slice {
    used: AtomicUsize,
    resched: AtomicBool,
}

impl Slice {
    pub const fn new() -> Self {
        Self { used: AtomicUsize::new(0), resched: AtomicBool::new(false) }
    }

    /// A process starts running on the core: its slice is whole. (A reschedule already asked
    /// for stands.)
    pub fn restart(&self) {
        self.used.store(0, Ordering::Relaxed);
    }

    /// The core's tick: once the slice is used up, a reschedule is due.
    pub fn tick(&self) {
        if self.used.fetch_add(1, Ordering::Relaxed) + 1 >= SLICE_TICKS {
            self.resched.store(true, Ordering::Release);
        }
    }

    /// Whether a reschedule is due; asking consumes it.
    pub fn take_resched(&self) -> bool {
        self.resched.swap(false, Ordering::AcqRel)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{Node, table};
    use super::*;
    use crate::mm::test_frames::Arena;
    use crate::process::state::Exit;
    use crate::process::table::Launch;
    use core::cell::Cell;
    use proto::syscall::Error;
    use std::vec::Vec;

    type T = TableOf<&'static Arena>;

    /// A table with `n` processes spawned (slots 0..n, queued in that order).
    fn spawned(n: usize) -> (Node, T) {
        let node = Node::new(false);
        let mut t = table();
        for _ in 0..n {
            node.spawn(&mut t, &Launch::new("prog", None)).unwrap();
        }
        (node, t)
    }

    fn queue(t: &T) -> Vec<usize> {
        t.run_queue.iter().copied().collect()
    }

    fn state(t: &T, slot: usize) -> State {
        t.slots[slot].as_ref().unwrap().state
    }

    /// Runs the head of the run queue on `core`: returns its slot and the frame it traps with.
    fn run(t: &mut T, core: usize) -> (usize, ExceptionFrame) {
        let (next, frame) = t.take_next(core).unwrap();
        (next.slot, *frame)
    }

    /// `switch` for the process in `slot` on core 2, not killed; the address space is left
    /// only for an exit.
    fn trap(t: &mut T, slot: usize, frame: &mut ExceptionFrame, event: Event) -> Switch {
        t.switch(slot, 2, frame, event, || None, || assert!(matches!(event, Event::Exit(_)), "left only to end"))
    }

    fn next_of(s: &Switch) -> Option<usize> {
        match s {
            Switch::Stay => panic!("stayed"),
            Switch::Leave { next, .. } => next.map(|n| n.slot),
        }
    }

    #[test]
    fn a_yield_goes_to_the_back_of_the_queue_and_keeps_the_core_when_alone() {
        let (_node, mut t) = spawned(3);
        let (a, mut frame) = run(&mut t, 2);
        assert_eq!((a, state(&t, a)), (0, State::Running(2)));
        frame.x[1] = 42;
        let s = trap(&mut t, a, &mut frame, Event::Yield);
        assert_eq!(next_of(&s), Some(1));
        assert_eq!(queue(&t), [2, 0], "round robin: the yielder is last");
        assert_eq!((state(&t, 0), state(&t, 1)), (State::Runnable, State::Running(2)));
        assert_eq!(t.slots[0].as_ref().unwrap().frame.x[1], 42, "its frame was saved");
        assert_eq!(frame.elr, t.slots[1].as_ref().unwrap().frame.elr, "the next one's frame is in place");
        let (_node, mut t) = spawned(1);
        let (a, mut frame) = run(&mut t, 3);
        assert!(matches!(trap(&mut t, a, &mut frame, Event::Yield), Switch::Stay), "nobody waits: it goes on");
        assert_eq!(state(&t, a), State::Running(3));
    }

    #[test]
    fn the_thread_pointer_and_the_fp_simd_state_go_with_the_process_not_the_core() {
        let (_node, mut t) = spawned(2);
        let (a, mut frame) = run(&mut t, 2);
        (frame.tpidr_el0, frame.q[8], frame.fpcr) = (0xa0, 0xa8 << 64, 1 << 22);
        for event in [Event::Preempt, Event::Block { wait: Wait::Sleep, deadline: Some(9) }] {
            assert_eq!(next_of(&trap(&mut t, a, &mut frame, event)), Some(1));
            assert_eq!(
                (frame.tpidr_el0, frame.q[8], frame.fpcr),
                (0, 0, 0),
                "the next one's own, a new process's zeros"
            );
            let saved = &t.slots[a].as_ref().unwrap().frame;
            assert_eq!((saved.tpidr_el0, saved.q[8], saved.fpcr), (0xa0, 0xa8 << 64, 1 << 22));
            // Process 1 yields the core back (after the sleep, once it is woken).
            t.wake(a, Some(0));
            assert_eq!(next_of(&trap(&mut t, 1, &mut frame, Event::Yield)), Some(a));
            assert_eq!((frame.tpidr_el0, frame.q[8], frame.fpcr), (0xa0, 0xa8 << 64, 1 << 22), "its own again");
        }
    }

    #[test]
    fn preemption_comes_when_the_slice_is_used_and_only_if_others_wait() {
        let slice = Slice::new();
        slice.restart();
        slice.tick();
        assert_eq!(Event::Continue.or_preempt(|| slice.take_resched()), Event::Continue, "one tick is not a slice");
        slice.tick();
        assert_eq!(Event::Continue.or_preempt(|| slice.take_resched()), Event::Preempt);
        assert!(!slice.take_resched(), "the request is consumed");
        let (_node, mut t) = spawned(1);
        let (a, mut frame) = run(&mut t, 2);
        assert!(matches!(trap(&mut t, a, &mut frame, Event::Preempt), Switch::Stay), "alone, it keeps the core");
        let (_node, mut t) = spawned(2);
        let (a, mut frame) = run(&mut t, 2);
        assert_eq!(next_of(&trap(&mut t, a, &mut frame, Event::Preempt)), Some(1));
        assert_eq!(queue(&t), [0]);
    }

    #[test]
    fn a_block_with_a_deadline_expires_with_the_timeout_result_and_skips_the_call() {
        let (_node, mut t) = spawned(1);
        let (a, mut frame) = run(&mut t, 2);
        let (elr, block) = (frame.elr, Event::Block { wait: Wait::Mailbox, deadline: Some(100) });
        let s = trap(&mut t, a, &mut frame, block);
        assert!(
            matches!(s, Switch::Leave { next: None, ended: None, deadline: Some(100) }),
            "idle, and the tick must look"
        );
        assert_eq!(t.next_deadline(), Some(100));
        assert!(t.expired(99).is_empty());
        assert_eq!(&t.expired(100)[..], [(a, Wait::Mailbox)]);
        assert!(t.time_out(a, Wait::Mailbox));
        let p = t.slots[a].as_ref().unwrap();
        assert_eq!((p.state, p.frame.x[0], p.frame.elr), (State::Runnable, Error::TimedOut as i64 as u64, elr + 4));
        assert_eq!((queue(&t), t.next_deadline()), (std::vec![a], None));
        assert!(!t.time_out(a, Wait::Mailbox), "not blocked any more: nothing to end");
        assert_eq!(queue(&t), [a], "queued once");
    }

    #[test]
    fn a_connect_at_its_deadline_runs_its_call_again_and_a_sleep_returns_zero() {
        for (wait, x0, skip) in [(Wait::Connect, 7, 0), (Wait::Sleep, 0, 0), (Wait::Socket, 0, 4)] {
            let (_node, mut t) = spawned(1);
            let (a, mut frame) = run(&mut t, 2);
            frame.x[0] = 7;
            let elr = frame.elr;
            trap(&mut t, a, &mut frame, Event::Block { wait, deadline: Some(5) });
            assert!(t.time_out(a, wait));
            let p = t.slots[a].as_ref().unwrap();
            assert_eq!((p.frame.x[0], p.frame.elr), (x0, elr + skip), "{wait:?}");
        }
    }

    #[test]
    fn a_wake_up_before_the_block_cancels_it_and_the_call_runs_again() {
        let (_node, mut t) = spawned(2);
        let (a, mut frame) = run(&mut t, 2);
        // The interrupt comes while the call runs: the process is not blocked yet.
        assert!(!t.wake_waiter(a, |w| w == Wait::Cq));
        let s = trap(&mut t, a, &mut frame, Event::Block { wait: Wait::Cq, deadline: None });
        assert_eq!(next_of(&s), Some(1), "a yield: the other process runs first");
        assert_eq!((state(&t, a), queue(&t)), (State::Runnable, std::vec![a]));
        // Process 1 blocks; then process 0 runs again, and this time its block happens: the
        // wake-up that overtook the first one was consumed.
        let s = trap(&mut t, 1, &mut frame, Event::Block { wait: Wait::Cq, deadline: None });
        assert_eq!(next_of(&s), Some(a));
        let s = trap(&mut t, a, &mut frame, Event::Block { wait: Wait::Cq, deadline: None });
        assert!(matches!(s, Switch::Leave { next: None, deadline: None, .. }));
        assert!(matches!(state(&t, a), State::Blocked { wait: Wait::Cq, .. }));
        // Now the wake-up finds it blocked, for what it wants: it wakes, and the call runs again.
        assert!(!t.wake_waiter(a, |w| w == Wait::Mailbox), "not what it waits for");
        assert!(t.wake_waiters(|w| w == Wait::Cq), "both wait for a completion");
        assert_eq!(queue(&t), [0, 1]);
        assert_eq!(t.slots[a].as_ref().unwrap().frame.elr, frame.elr, "no result: the svc runs again");
        assert!(!t.slots[a].as_ref().unwrap().wake_pending, "the wake-up that missed is cleared by the wake");
    }

    #[test]
    fn a_sleep_is_not_cut_short_by_a_wake_up_meant_for_another_wait() {
        let (_node, mut t) = spawned(1);
        let (a, mut frame) = run(&mut t, 2);
        t.wake_waiter(a, |_| true);
        trap(&mut t, a, &mut frame, Event::Block { wait: Wait::Sleep, deadline: Some(9) });
        assert!(matches!(state(&t, a), State::Blocked { wait: Wait::Sleep, deadline: Some(9) }));
        assert!(!t.wake_waiter(a, |w| w != Wait::Sleep), "a sleep ends only at its deadline");
        assert_eq!(state(&t, a), State::Blocked { wait: Wait::Sleep, deadline: Some(9) });
    }

    #[test]
    fn a_pending_signal_ends_an_interruptible_wait_before_it_begins() {
        let (_node, mut t) = spawned(2);
        let (a, mut frame) = run(&mut t, 2);
        t.slots[a].as_mut().unwrap().signals = 1;
        let elr = frame.elr;
        let s = trap(&mut t, a, &mut frame, Event::Block { wait: Wait::Mailbox, deadline: None });
        assert!(matches!(s, Switch::Stay));
        assert_eq!((frame.x[0], frame.elr), (Error::Interrupted as i64 as u64, elr + 4));
        assert_eq!(state(&t, a), State::Running(2));
        let s = trap(&mut t, a, &mut frame, Event::Block { wait: Wait::Mif { words: 1 }, deadline: None });
        assert_eq!(next_of(&s), Some(1), "the library's wait for a reply is not cut short");
    }

    #[test]
    fn a_killed_running_process_ends_at_its_next_exception_and_leaves_its_space_first() {
        let (node, mut t) = spawned(2);
        let (a, mut frame) = run(&mut t, 2);
        let left = Cell::new(false);
        let s = t.switch(a, 2, &mut frame, Event::Continue, || Some(Exit::Killed), || left.set(true));
        let Switch::Leave { next: Some(next), ended: Some(ended), .. } = s else { panic!("{s:?}") };
        assert!(left.get(), "the core let go of its tables before they could go");
        assert_eq!((next.slot, ended.process.slot), (1, a));
        assert_eq!(state(&t, a), State::Exited(Exit::Killed));
        assert!(ended.teardown.is_none());
        assert_eq!(t.reap(u64::from(ended.process.domain)), Some(Exit::Killed));
        let s = t.switch(1, 2, &mut frame, Event::Exit(Exit::Status(3)), || None, || {});
        assert!(matches!(s, Switch::Leave { next: None, ended: Some(_), deadline: None }), "nothing left: idle");
        assert_eq!(state(&t, 1), State::Exited(Exit::Status(3)));
        drop(t);
        assert_eq!(node.arena.used(), 0);
    }

    #[test]
    fn a_continuing_process_keeps_its_core_and_its_frame() {
        let (_node, mut t) = spawned(2);
        let (a, mut frame) = run(&mut t, 2);
        frame.x[3] = 9;
        assert!(matches!(trap(&mut t, a, &mut frame, Event::Continue), Switch::Stay));
        assert_eq!((frame.x[3], queue(&t)), (9, std::vec![1]));
    }
}
