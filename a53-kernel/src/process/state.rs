//! The states of a process and the decisions the scheduler takes on them: plain logic, tested
//! on the host. `table` and `scheduler` apply them to the process table and the cores.

use proto::syscall::Error;
use proto::syscall::layout::{MIF_PAGE, PIF_PAGE};

/// What a process is waiting for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Its mailbox interface to hold this many words.
    Mif {
        words: u32,
    },
    /// A notification.
    Mailbox,
    Sleep,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    Status(u64),
    /// Killed by the kernel for an exception it could not resolve.
    Fault {
        esr: u64,
        far: u64,
        elr: u64,
    },
    /// Ended by `table::kill`.
    Killed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Runnable,
    Running(usize),
    Blocked { wait: Wait, deadline: Option<u64> },
    Exited(Exit),
}

/// Whether anyone will collect a process's exit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reap {
    /// The spawner calls `table::wait`.
    Wait,
    /// Nobody: the slot is freed at exit (remote spawns).
    Auto,
}

/// What the exception path decided for the process that trapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    Continue,
    Yield,
    Preempt,
    Block { wait: Wait, deadline: Option<u64> },
    Exit(Exit),
}

impl Event {
    /// A process that would continue gives up its core if a reschedule is due
    /// (`resched_due` is asked only then: it consumes the request).
    pub fn or_preempt(self, resched_due: impl FnOnce() -> bool) -> Self {
        match self {
            Event::Continue if resched_due() => Event::Preempt,
            e => e,
        }
    }

    /// The event that stands, with the process table held: a kill wins over anything (`killed`
    /// is always asked, and consumes the mark); a block that a wake-up overtook becomes a yield,
    /// so that the call runs again and finds what woke it (`woken` is asked only for a block).
    pub fn settle(self, killed: impl FnOnce() -> bool, woken: impl FnOnce() -> bool) -> Self {
        match self {
            _ if killed() => Event::Exit(Exit::Killed),
            Event::Block { .. } if woken() => Event::Yield,
            e => e,
        }
    }

    /// What happens to the process's core: it goes on with the same process only if it
    /// continues, or gives way while no other process waits.
    pub fn keeps_core(self, others_waiting: bool) -> bool {
        match self {
            Event::Continue => true,
            Event::Preempt | Event::Yield => !others_waiting,
            Event::Block { .. } | Event::Exit(_) => false,
        }
    }
}

/// What a deadline that passed ends a wait with, in x0: a timed-out error, or 0 for a sleep.
pub fn timeout_result(wait: Wait) -> i64 {
    match wait {
        Wait::Mif { .. } | Wait::Mailbox => Error::TimedOut as i64,
        Wait::Sleep => 0,
    }
}

/// The waits among `states` (slot, state) whose deadline is `now` or earlier.
pub fn expired(states: impl Iterator<Item = (usize, State)>, now: u64) -> impl Iterator<Item = (usize, Wait)> {
    states.filter_map(move |(slot, state)| match state {
        State::Blocked { wait, deadline: Some(d) } if d <= now => Some((slot, wait)),
        _ => None,
    })
}

/// How a woken process resumes when its wait ends with a value: the value goes into x0 and,
/// except for a sleep (which returned before blocking), the `svc` it would run again is
/// skipped. Returns how far ELR moves.
pub fn resume_past_call(wait: Wait) -> u64 {
    if wait == Wait::Sleep { 0 } else { 4 }
}

/// The physical address behind user address `va` if it is in the interface pages of the
/// process holding interface pair `index` (PIF or MIF page), which the platform serves.
pub fn interface_page(index: u8, va: u64) -> Option<u64> {
    let page = va & !0xfff;
    let base = if page == PIF_PAGE {
        board::pl::PACKETIZER_BASE
    } else if page == MIF_PAGE {
        board::pl::VMBOX_BASE
    } else {
        return None;
    };
    Some(base + u64::from(index) * 0x1000 + (va & 0xfff))
}

/// Process domain numbers: 1..=u16::MAX in order, never reused within a boot (0 is the
/// kernel's), so that pages an exited process owns can never be claimed by a newer one.
#[derive(Debug)]
pub struct Domains {
    next: u32,
}

impl Domains {
    pub const fn new() -> Self {
        Self { next: 1 }
    }

    /// The number the next process gets, if any is left.
    pub fn next(&self) -> Option<u16> {
        u16::try_from(self.next).ok()
    }

    /// Hands out [`next`](Self::next) (once the process really exists).
    pub fn take(&mut self) {
        self.next += 1;
    }
}

impl Default for Domains {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BLOCK: Event = Event::Block { wait: Wait::Mailbox, deadline: None };

    #[test]
    fn a_due_reschedule_preempts_only_a_continuing_process() {
        assert_eq!(Event::Continue.or_preempt(|| true), Event::Preempt);
        assert_eq!(Event::Continue.or_preempt(|| false), Event::Continue);
        let mut asked = false;
        assert_eq!(
            Event::Yield.or_preempt(|| {
                asked = true;
                true
            }),
            Event::Yield
        );
        assert!(!asked, "the request is consumed only when it is acted on");
    }

    #[test]
    fn a_kill_wins_and_a_woken_block_becomes_a_yield() {
        assert_eq!(BLOCK.settle(|| true, || true), Event::Exit(Exit::Killed));
        assert_eq!(Event::Continue.settle(|| true, || false), Event::Exit(Exit::Killed));
        assert_eq!(BLOCK.settle(|| false, || true), Event::Yield);
        assert_eq!(BLOCK.settle(|| false, || false), BLOCK);
        let mut asked = false;
        assert_eq!(
            Event::Preempt.settle(
                || false,
                || {
                    asked = true;
                    true
                }
            ),
            Event::Preempt
        );
        assert!(!asked, "a pending wake-up is kept for a block");
    }

    #[test]
    fn the_core_changes_hands_only_when_someone_waits_or_the_process_stops() {
        assert!(Event::Continue.keeps_core(true));
        assert!(Event::Yield.keeps_core(false) && !Event::Yield.keeps_core(true));
        assert!(Event::Preempt.keeps_core(false) && !Event::Preempt.keeps_core(true));
        assert!(!BLOCK.keeps_core(false));
        assert!(!Event::Exit(Exit::Status(0)).keeps_core(false));
    }

    #[test]
    fn deadlines_expire_at_now_and_end_waits_with_their_results() {
        let states = [
            (0, State::Blocked { wait: Wait::Sleep, deadline: Some(10) }),
            (1, State::Blocked { wait: Wait::Mif { words: 2 }, deadline: Some(11) }),
            (2, State::Blocked { wait: Wait::Mailbox, deadline: None }),
            (3, State::Runnable),
            (4, State::Blocked { wait: Wait::Mailbox, deadline: Some(3) }),
        ];
        let due: Vec<_> = expired(states.into_iter(), 10).collect();
        assert_eq!(due, [(0, Wait::Sleep), (4, Wait::Mailbox)]);
        assert_eq!(timeout_result(Wait::Sleep), 0);
        assert_eq!(timeout_result(Wait::Mailbox), Error::TimedOut as i64);
        assert_eq!(timeout_result(Wait::Mif { words: 1 }), Error::TimedOut as i64);
        assert_eq!(resume_past_call(Wait::Sleep), 0);
        assert_eq!(resume_past_call(Wait::Mailbox), 4);
    }

    #[test]
    fn interface_pages_translate_to_the_pair_the_process_holds() {
        assert_eq!(interface_page(3, PIF_PAGE + 0x30), Some(board::pl::PACKETIZER_BASE + 0x3030));
        assert_eq!(interface_page(3, MIF_PAGE + 0x10), Some(board::pl::VMBOX_BASE + 0x3010));
        assert_eq!(interface_page(3, MIF_PAGE + 0x1000), None);
        assert_eq!(interface_page(3, PIF_PAGE - 1), None);
        assert_eq!(interface_page(0, 0), None);
    }

    #[test]
    fn domain_numbers_are_never_reused_and_run_out() {
        let mut d = Domains::new();
        assert_eq!(d.next(), Some(1));
        assert_eq!(d.next(), Some(1), "asking does not hand out");
        d.take();
        assert_eq!(d.next(), Some(2));
        let mut d = Domains { next: u32::from(u16::MAX) };
        assert_eq!(d.next(), Some(u16::MAX));
        d.take();
        assert_eq!(d.next(), None);
    }
}
