//! The states of a process and the decisions the scheduler takes on them: plain logic, tested
//! on the host. `table` and `scheduler` apply them to the process table and the cores.

use hal::pldma::{PDS, Pd};
use proto::rdma::domain::domain_of;
use proto::syscall::Error;
use proto::syscall::layout::{MIF_PAGE, PD_PAGE, PIF_PAGE};

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
    /// An entry in its RDMA completion queue (the PLDMA's completion interrupt).
    Cq,
    /// A change in one of its sockets (`socket_node`): data, room, a connection, a hang-up.
    /// At the deadline the call ends with 0 (a poll that found nothing ready).
    Socket,
    /// The answer to its connect. At the deadline the call runs again, and gives up.
    Connect,
}

impl Wait {
    /// Whether a signal ends this wait (`Interrupted`): the waits a program asks for (sleep,
    /// notifications, completions), not the user library's wait for a GSAS reply, which a
    /// signal must not cut short.
    pub fn interruptible(self) -> bool {
        !matches!(self, Wait::Mif { .. })
    }
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
    /// Ended by `lifecycle::kill`.
    Killed,
}

/// How a running process that the kernel ends (`lifecycle::end`) is to end at its next
/// exception, as one word the scheduler keeps per slot beside the table: 0 = not to end,
/// 1 = [`Exit::Killed`], `2 + s` = [`Exit::Status`]`(s)` (a job's exit, `JOB_EXIT`).
pub struct KillMark;

impl KillMark {
    pub const NONE: u64 = 0;

    /// The mark of `exit`; `None` for an exit the kernel never imposes (a fault, a status too
    /// large to mark).
    pub const fn of(exit: Exit) -> Option<u64> {
        match exit {
            Exit::Killed => Some(1),
            Exit::Status(s) if s <= u64::MAX - 2 => Some(s + 2),
            Exit::Status(_) | Exit::Fault { .. } => None,
        }
    }

    pub const fn exit(mark: u64) -> Option<Exit> {
        match mark {
            0 => None,
            1 => Some(Exit::Killed),
            m => Some(Exit::Status(m - 2)),
        }
    }
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
    /// The spawner calls `lifecycle::wait`.
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
    /// is always asked, consumes the mark, and says how the process ends: [`KillMark`]); a block that a wake-up overtook becomes a yield,
    /// so that the call runs again and finds what woke it (`woken` is asked only for a block
    /// that something can wake: a sleep ends at its deadline, so a wake-up meant for an earlier
    /// wait must not cut it short).
    pub fn settle(self, killed: impl FnOnce() -> Option<Exit>, woken: impl FnOnce() -> bool) -> Self {
        if let Some(exit) = killed() {
            return Event::Exit(exit);
        }
        match self {
            Event::Block { wait, .. } if wait != Wait::Sleep && woken() => Event::Yield,
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
        Wait::Mif { .. } | Wait::Mailbox | Wait::Cq | Wait::Connect => Error::TimedOut as i64,
        Wait::Sleep | Wait::Socket => 0,
    }
}

/// The waits among `states` (slot, state) whose deadline is `now` or earlier.
pub fn expired(states: impl Iterator<Item = (usize, State)>, now: u64) -> impl Iterator<Item = (usize, Wait)> {
    states.filter_map(move |(slot, state)| match state {
        State::Blocked { wait, deadline: Some(d) } if d <= now => Some((slot, wait)),
        _ => None,
    })
}

/// The earliest deadline among blocked `states`.
pub fn earliest_deadline(states: impl Iterator<Item = State>) -> Option<u64> {
    states
        .filter_map(|state| match state {
            State::Blocked { deadline, .. } => deadline,
            _ => None,
        })
        .min()
}

/// How a woken process resumes when its wait ends with a value: the value goes into x0 and,
/// except for a sleep (which returned before blocking), the `svc` it would run again is
/// skipped. Returns how far ELR moves.
pub fn resume_past_call(wait: Wait) -> u64 {
    if wait == Wait::Sleep { 0 } else { 4 }
}

/// The physical address behind user address `va` if it is in the device pages the platform
/// serves for a process: the PIF and MIF pages of interface pair `index`, and PLDMA PD page
/// `pd` when the process holds its PD's RDMA resources.
pub fn interface_page(index: u8, pd: Option<Pd>, va: u64) -> Option<u64> {
    let page = va & !0xfff;
    let base = if page == PIF_PAGE {
        board::pl::PACKETIZER_BASE + u64::from(index) * 0x1000
    } else if page == MIF_PAGE {
        board::pl::VMBOX_BASE + u64::from(index) * 0x1000
    } else if page == PD_PAGE {
        pd_page(pd?)
    } else {
        return None;
    };
    Some(base + (va & 0xfff))
}

/// The physical address of PLDMA PD page `pd`.
pub fn pd_page(pd: Pd) -> u64 {
    board::pl::PLDMA_BASE + hal::pldma::regs::PD_PAGES_OFFSET + u64::from(pd.raw()) * hal::pldma::regs::PAGE
}

/// Process domain numbers: per PD, serials 1, 2, ... in order, never reused within a boot (0 is
/// the kernel's), so that pages an exited process owns can never be claimed by a newer one. The
/// PD is in the number's low bits (`proto::rdma::domain`).
#[derive(Debug)]
pub struct Domains {
    next: [u16; PDS],
}

impl Domains {
    pub const fn new() -> Self {
        Self { next: [1; PDS] }
    }

    /// The number the next process of `pd` gets, if any is left.
    pub fn next(&self, pd: Pd) -> Option<u16> {
        domain_of(pd, self.next[pd.index()])
    }

    /// Hands out [`next`](Self::next) (once the process really exists).
    pub fn take(&mut self, pd: Pd) {
        self.next[pd.index()] = self.next[pd.index()].saturating_add(1);
    }
}

/// What a process has of its PD's RDMA resources on this node (context bank, queue set, PD
/// page). Only the process that holds its PD here (`rdma::pds`) has any.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rdma {
    /// None: the process does not hold its PD here, or the node has no RDMA.
    None,
    /// Being set up (SMMU bank, engine, R5) outside the process table's lock; the process
    /// does not run yet.
    Starting,
    /// Set up: the process may use its queues.
    Active,
    /// Being taken down after the process ended; its memory stays until this is done,
    /// because the engine may still be using it.
    Draining,
}

impl Rdma {
    /// The process ended: whether its resources are to be taken down now (by whoever ended
    /// it). A start still in progress is left to its starter ([`Rdma::started`]).
    pub fn exit(&mut self) -> bool {
        match self {
            Rdma::Active => {
                *self = Rdma::Draining;
                true
            }
            Rdma::None | Rdma::Starting | Rdma::Draining => false,
        }
    }

    /// The set-up finished (`ok`: it worked). Returns whether the resources are to be taken
    /// down at once: the process ended while they were being set up.
    pub fn started(&mut self, ok: bool, exited: bool) -> bool {
        *self = match (ok, exited) {
            (false, _) => Rdma::None,
            (true, false) => Rdma::Active,
            (true, true) => Rdma::Draining,
        };
        *self == Rdma::Draining
    }

    /// Whether the process's slot and memory may go: nothing of the engine uses them.
    pub fn is_settled(self) -> bool {
        matches!(self, Rdma::None | Rdma::Active)
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
    fn a_kill_mark_says_how_the_process_ends() {
        for exit in [Exit::Killed, Exit::Status(0), Exit::Status(255), Exit::Status(u64::MAX - 2)] {
            let mark = KillMark::of(exit).unwrap();
            assert_ne!(mark, KillMark::NONE);
            assert_eq!(KillMark::exit(mark), Some(exit));
        }
        assert_eq!(KillMark::exit(KillMark::NONE), None);
        assert_eq!(KillMark::of(Exit::Status(u64::MAX)), None);
        assert_eq!(KillMark::of(Exit::Fault { esr: 0, far: 0, elr: 0 }), None);
    }

    #[test]
    fn a_kill_wins_and_a_woken_block_becomes_a_yield() {
        assert_eq!(BLOCK.settle(|| Some(Exit::Killed), || true), Event::Exit(Exit::Killed));
        assert_eq!(Event::Continue.settle(|| Some(Exit::Killed), || false), Event::Exit(Exit::Killed));
        assert_eq!(Event::Continue.settle(|| Some(Exit::Status(7)), || false), Event::Exit(Exit::Status(7)));
        assert_eq!(BLOCK.settle(|| None, || true), Event::Yield);
        assert_eq!(BLOCK.settle(|| None, || false), BLOCK);
        let mut asked = false;
        assert_eq!(
            Event::Preempt.settle(
                || None,
                || {
                    asked = true;
                    true
                }
            ),
            Event::Preempt
        );
        assert!(!asked, "a pending wake-up is kept for a block");
        let sleep = Event::Block { wait: Wait::Sleep, deadline: Some(5) };
        assert_eq!(
            sleep.settle(
                || None,
                || {
                    asked = true;
                    true
                }
            ),
            sleep,
            "a sleep is not overtaken by a wake-up"
        );
        assert!(!asked, "and the wake-up is kept for a wait it may be for");
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
        assert_eq!(earliest_deadline(states.iter().map(|s| s.1)), Some(3), "core 0's tick is due then");
        assert_eq!(earliest_deadline(states[2..4].iter().map(|s| s.1)), None, "no deadline: no tick needed");
        assert_eq!(timeout_result(Wait::Sleep), 0);
        assert_eq!(timeout_result(Wait::Mailbox), Error::TimedOut as i64);
        assert_eq!(timeout_result(Wait::Mif { words: 1 }), Error::TimedOut as i64);
        assert_eq!(timeout_result(Wait::Cq), Error::TimedOut as i64);
        assert_eq!(resume_past_call(Wait::Sleep), 0);
        assert_eq!(resume_past_call(Wait::Mailbox), 4);
    }

    #[test]
    fn interface_pages_translate_to_the_pair_and_the_pd_page_the_process_holds() {
        let pd = Pd::new(5);
        assert_eq!(interface_page(3, pd, PIF_PAGE + 0x30), Some(board::pl::PACKETIZER_BASE + 0x3030));
        assert_eq!(interface_page(3, pd, MIF_PAGE + 0x10), Some(board::pl::VMBOX_BASE + 0x3010));
        assert_eq!(interface_page(3, pd, PD_PAGE + 0x8), Some(board::pl::PLDMA_BASE + 0x1_5008));
        assert_eq!(interface_page(3, None, PD_PAGE + 0x8), None, "no PD held: a real fault");
        assert_eq!(interface_page(3, pd, PD_PAGE + 0x1000), None, "the next PD's page is not the process's");
        assert_eq!(interface_page(3, pd, MIF_PAGE + 0x1000), None);
        assert_eq!(interface_page(3, pd, PIF_PAGE - 1), None);
        assert_eq!(interface_page(0, pd, 0), None);
        assert_eq!(interface_page(0, pd, board::pl::PLDMA_BASE), None, "the control page's address means nothing");
    }

    #[test]
    fn domain_numbers_carry_their_pd_are_never_reused_and_run_out() {
        let (p3, p4) = (Pd::new(3).unwrap(), Pd::new(4).unwrap());
        let mut d = Domains::new();
        assert_eq!(d.next(p3), Some(0x13));
        assert_eq!(d.next(p3), Some(0x13), "asking does not hand out");
        d.take(p3);
        assert_eq!(d.next(p3), Some(0x23));
        assert_eq!(d.next(p4), Some(0x14), "each PD counts on its own");
        let mut d = Domains::new();
        d.next[3] = proto::rdma::domain::SERIALS_PER_PD;
        assert_eq!(d.next(p3), Some(0xfff3));
        d.take(p3);
        assert_eq!(d.next(p3), None);
        d.take(p3);
        assert_eq!(d.next(p3), None, "stays exhausted");
    }

    #[test]
    fn rdma_resources_are_taken_down_once_and_never_while_they_start() {
        let mut r = Rdma::Starting;
        assert!(!r.exit(), "the starter takes them down");
        assert_eq!(r, Rdma::Starting);
        assert!(!r.is_settled());
        assert!(r.started(true, true), "ended while starting: down at once");
        assert_eq!(r, Rdma::Draining);
        assert!(!r.exit(), "not twice");
        let mut r = Rdma::Starting;
        assert!(!r.started(false, true));
        assert_eq!(r, Rdma::None);
        assert!(r.is_settled());
        let mut r = Rdma::Starting;
        assert!(!r.started(true, false));
        assert_eq!(r, Rdma::Active);
        assert!(r.exit());
        assert_eq!(r, Rdma::Draining);
        let mut r = Rdma::None;
        assert!(!r.exit());
    }
}
