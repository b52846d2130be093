//! The tick's decisions, apart from the counter's registers: which clients a core's tick serves,
//! how many ticks a late interrupt counts, when a core that idles stops its tick or moves it to
//! a client's deadline and when the tick resumes, and the one-shot alarm of a core without a
//! tick. Host-tested over a fake [`Comparator`]; `timer` keeps one [`CoreTimer`] per core and
//! gives them this core's EL1 physical timer. Why the tick stops at all: `docs/hw/forwarding.md`,
//! "What an idle node costs".

use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering, fence};

/// A core's timer comparator: it interrupts the core once the counter reaches the deadline.
pub trait Comparator {
    fn set_deadline(&self, deadline: u64);
    /// No interrupt until the next deadline is set.
    fn stop(&self);
}

pub type AlarmCallback = fn(now: u64);

/// A user of the periodic tick on the cores of `cores` (bit n: core n).
#[derive(Clone, Copy)]
pub struct TickClient {
    pub cores: u8,
    /// Runs at every tick, in the tick interrupt, with the counter's value.
    pub on_tick: fn(now: u64),
    /// While the core idles: the counter value by which `on_tick` must run next (`None`: not
    /// before something else changes, and whoever changes it calls `timer::needs_changed`).
    pub due: fn() -> Option<u64>,
}

impl TickClient {
    /// Whether the tick of `core` serves it.
    pub fn serves(&self, core: usize) -> bool {
        self.cores & 1 << core != 0
    }
}

const NONE: u64 = u64::MAX;

/// One core's timer: its tick period (counter ticks; 0 = no periodic tick), its next deadline,
/// its one-shot alarm, and whether it idles with its tick stopped. Atomics: the core's tick
/// interrupt, the core itself and other cores ([`needs_changed`]) look at it.
#[derive(Debug, Default)]
pub struct CoreTimer {
    period: AtomicU64,
    next: AtomicU64,
    /// The alarm's callback (an [`AlarmCallback`]), 0 when none is armed.
    alarm: AtomicUsize,
    /// It idles, letting its tick stop ([`enter_idle`](Self::enter_idle)).
    idle: AtomicBool,
    /// Its tick is stopped while it idles (see [`needs_changed`]).
    stopped: AtomicBool,
    /// A client's needs changed while its tick was stopped: it resumes the tick, whose next
    /// interrupt runs the clients and decides again.
    recheck: AtomicBool,
}

impl CoreTimer {
    pub const fn new() -> Self {
        Self {
            period: AtomicU64::new(0),
            next: AtomicU64::new(NONE),
            alarm: AtomicUsize::new(0),
            idle: AtomicBool::new(false),
            stopped: AtomicBool::new(false),
            recheck: AtomicBool::new(false),
        }
    }

    /// Starts a periodic tick of `period` counter ticks, the first a period after `now`.
    pub fn start(&self, now: u64, period: u64, comparator: &impl Comparator) {
        self.period.store(period, Ordering::Relaxed);
        let next = now + period;
        self.next.store(next, Ordering::Relaxed);
        comparator.set_deadline(next);
    }

    pub fn has_tick(&self) -> bool {
        self.period.load(Ordering::Relaxed) != 0
    }

    /// The next periodic tick deadline, if the core has a periodic tick.
    pub fn next_tick(&self) -> Option<u64> {
        self.has_tick().then(|| self.next.load(Ordering::Relaxed))
    }

    /// Arms the one-shot alarm at counter value `deadline`, in place of any armed before. Only
    /// on a core without the periodic tick, whose interrupt it would take.
    pub fn set_alarm(&self, deadline: u64, callback: AlarmCallback, comparator: &impl Comparator) {
        assert!(!self.has_tick(), "alarm on the tick core");
        self.alarm.store(callback as usize, Ordering::Release);
        self.next.store(deadline, Ordering::Relaxed);
        comparator.set_deadline(deadline);
    }

    /// The core starts idling: its tick may stop ([`on_interrupt`](Self::on_interrupt)).
    pub fn enter_idle(&self) {
        self.idle.store(true, Ordering::SeqCst);
    }

    /// The idling core woke (an interrupt): if a client's needs changed meanwhile
    /// ([`needs_changed`]), its tick resumes.
    pub fn on_wake(&self, comparator: &impl Comparator) {
        if self.recheck.swap(false, Ordering::SeqCst) {
            self.resume(comparator);
        }
    }

    /// The core stops idling: its tick resumes.
    pub fn leave_idle(&self, comparator: &impl Comparator) {
        self.idle.store(false, Ordering::SeqCst);
        self.resume(comparator);
    }

    /// The tick goes on from its next deadline, if it was stopped (at once if that passed: the
    /// tick interrupt then counts the ticks skipped and runs the clients).
    fn resume(&self, comparator: &impl Comparator) {
        if self.stopped.swap(false, Ordering::SeqCst) {
            comparator.set_deadline(self.next.load(Ordering::Relaxed));
        }
    }

    /// The core's timer interrupt at counter value `now`, with the tick's clients (`clients`
    /// lists all of them, each time it is called: those of this `core` run). With a periodic tick: counts the ticks passed (more than one
    /// if the core was late or its tick stopped) and returns how many, arms the next, runs the
    /// clients, then stops the tick of an idling core ([`stop_if_idle`](Self::stop_if_idle)).
    /// Without: the alarm fires, once.
    pub fn on_interrupt<'a, I: Iterator<Item = &'a TickClient>>(
        &self,
        core: usize,
        now: u64,
        clients: impl Fn() -> I,
        comparator: &impl Comparator,
    ) -> u64 {
        let period = self.period.load(Ordering::Relaxed);
        if period == 0 {
            comparator.stop();
            self.next.store(NONE, Ordering::Relaxed);
            let callback = self.alarm.swap(0, Ordering::AcqRel);
            if callback != 0 {
                // SAFETY: only `set_alarm` stores non-zero values, and they are `AlarmCallback`s.
                let callback: AlarmCallback = unsafe { core::mem::transmute(callback) };
                callback(now);
            }
            return 0;
        }
        // Catch up if ticks were missed; the counter keeps exact time either way.
        let (mut next, mut passed) = (self.next.load(Ordering::Relaxed), 0);
        while next <= now {
            next += period;
            passed += 1;
        }
        self.next.store(next, Ordering::Relaxed);
        comparator.set_deadline(next);
        let of_core = || clients().filter(move |c| c.serves(core));
        for TickClient { on_tick, .. } in of_core() {
            on_tick(now);
        }
        self.stop_if_idle(next, of_core(), comparator);
        passed
    }

    /// After the clients ran: a core that idles with no client due before its next tick
    /// (`next_tick`) stops the tick, or moves it to the earliest client's deadline; the first
    /// tick of an idle stops it, so that a core idling between two short pieces of work never
    /// touches its timer. [`needs_changed`] and [`leave_idle`](Self::leave_idle) resume it.
    fn stop_if_idle<'a>(
        &self,
        next_tick: u64,
        clients: impl Iterator<Item = &'a TickClient>,
        comparator: &impl Comparator,
    ) {
        if !self.idle.load(Ordering::SeqCst) {
            return;
        }
        // Stopped before the clients are asked: a need published after this look is seen by
        // `needs_changed`, which then wakes the core.
        self.stopped.store(true, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        match clients.filter_map(|client| (client.due)()).min() {
            Some(due) if due <= next_tick => self.stopped.store(false, Ordering::SeqCst),
            Some(due) => comparator.set_deadline(due),
            None => comparator.stop(),
        }
    }
}

/// A tick client's needs grew: the cores among `cores` whose tick is stopped are to resume it
/// when they wake ([`CoreTimer::on_wake`]). Returns them (bit n: core n), for the caller to
/// wake. The change must be published before this call; a core stops its tick only after it
/// has looked, and it looks again after the wake-up.
pub fn needs_changed(cores: &[CoreTimer]) -> u8 {
    fence(Ordering::SeqCst);
    let stopped = cores.iter().enumerate().filter(|(_, t)| t.stopped.load(Ordering::SeqCst));
    stopped.fold(0, |mask, (core, t)| {
        t.recheck.store(true, Ordering::SeqCst);
        mask | 1 << core
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::cell::RefCell;
    use std::vec::Vec;

    /// What a comparator was told, in order.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Op {
        Set(u64),
        Stop,
    }

    #[derive(Default)]
    struct Fake(RefCell<Vec<Op>>);

    impl Fake {
        /// The operations since the last look.
        fn ops(&self) -> Vec<Op> {
            self.0.take()
        }
    }

    impl Comparator for Fake {
        fn set_deadline(&self, deadline: u64) {
            self.0.borrow_mut().push(Op::Set(deadline));
        }
        fn stop(&self) {
            self.0.borrow_mut().push(Op::Stop);
        }
    }

    const NO_CLIENTS: [TickClient; 0] = [];

    /// A core with a tick of 10 from 0, its comparator's start forgotten.
    fn ticking() -> (CoreTimer, Fake) {
        let (t, c) = (CoreTimer::new(), Fake::default());
        t.start(0, 10, &c);
        assert_eq!(c.ops(), [Op::Set(10)]);
        (t, c)
    }

    #[test]
    fn a_tick_runs_only_the_clients_of_its_core() {
        static RUNS: [AtomicU64; 2] = [const { AtomicU64::new(0) }; 2];
        let clients = [
            TickClient { cores: 0b0001, on_tick: |_| _ = RUNS[0].fetch_add(1, Ordering::Relaxed), due: || None },
            TickClient { cores: 0b1100, on_tick: |now| RUNS[1].store(now, Ordering::Relaxed), due: || None },
        ];
        let (t, c) = ticking();
        assert_eq!(t.on_interrupt(2, 10, || clients.iter(), &c), 1);
        assert_eq!((RUNS[0].load(Ordering::Relaxed), RUNS[1].load(Ordering::Relaxed)), (0, 10));
        t.on_interrupt(0, 20, || clients.iter(), &c);
        assert_eq!((RUNS[0].load(Ordering::Relaxed), RUNS[1].load(Ordering::Relaxed)), (1, 10));
        assert_eq!(c.ops(), [Op::Set(20), Op::Set(30)], "a busy core keeps its tick");
    }

    #[test]
    fn a_late_tick_counts_every_period_it_missed_and_arms_the_next() {
        let (t, c) = ticking();
        assert_eq!(t.on_interrupt(0, 35, || NO_CLIENTS.iter(), &c), 3, "10, 20 and 30 passed");
        assert_eq!((t.next_tick(), c.ops()), (Some(40), std::vec![Op::Set(40)]));
        assert_eq!(t.on_interrupt(0, 40, || NO_CLIENTS.iter(), &c), 1, "a deadline reached is passed");
    }

    #[test]
    fn the_first_tick_of_an_idle_stops_it_and_a_need_that_grows_resumes_it() {
        static DUE: AtomicU64 = AtomicU64::new(NONE);
        let clients = [TickClient {
            cores: 0b1,
            on_tick: |_| {},
            due: || Some(DUE.load(Ordering::Relaxed)).filter(|&d| d != NONE),
        }];
        let cores = [ticking().0, CoreTimer::new()];
        let c = Fake::default();
        cores[0].enter_idle();
        cores[0].on_interrupt(0, 10, || clients.iter(), &c);
        assert_eq!(c.ops(), [Op::Set(20), Op::Stop], "no client due: stopped");
        cores[0].on_wake(&c);
        assert_eq!(c.ops(), [], "woken for something else: the tick stays stopped");
        // A client's needs grow: the stopped core, and only it, is woken to look again.
        DUE.store(100, Ordering::Relaxed);
        assert_eq!(needs_changed(&cores), 0b1);
        cores[0].on_wake(&c);
        assert_eq!(c.ops(), [Op::Set(20)], "the tick resumes at its next deadline");
        assert_eq!(needs_changed(&cores), 0, "running: nobody to wake");
        // Its next tick, still idle, moves to the client's deadline; leaving the idle resumes it.
        assert_eq!(cores[0].on_interrupt(0, 25, || clients.iter(), &c), 1);
        assert_eq!(c.ops(), [Op::Set(30), Op::Set(100)]);
        cores[0].leave_idle(&c);
        assert_eq!(c.ops(), [Op::Set(30)]);
        cores[0].leave_idle(&c);
        assert_eq!(c.ops(), [], "resumed once");
    }

    #[test]
    fn an_idle_core_keeps_its_tick_while_a_client_is_due_before_the_next() {
        let clients = [TickClient { cores: 0b1, on_tick: |_| {}, due: || Some(15) }];
        let (t, c) = ticking();
        t.enter_idle();
        t.on_interrupt(0, 10, || clients.iter(), &c);
        assert_eq!(c.ops(), [Op::Set(20)]);
        t.leave_idle(&c);
        assert_eq!(c.ops(), [], "it never stopped");
        let elsewhere = [TickClient { cores: 0b10, ..clients[0] }];
        t.enter_idle();
        t.on_interrupt(0, 20, || elsewhere.iter(), &c);
        assert_eq!(c.ops(), [Op::Set(30), Op::Stop], "another core's client does not keep this tick");
    }

    #[test]
    fn an_alarm_fires_once_at_its_interrupt_and_the_last_armed_wins() {
        static FIRED: std::sync::Mutex<Vec<(u8, u64)>> = std::sync::Mutex::new(Vec::new());
        let (t, c) = (CoreTimer::new(), Fake::default());
        t.set_alarm(100, |now| FIRED.lock().unwrap().push((1, now)), &c);
        t.set_alarm(50, |now| FIRED.lock().unwrap().push((2, now)), &c);
        assert_eq!(c.ops(), [Op::Set(100), Op::Set(50)]);
        assert_eq!(t.on_interrupt(1, 51, || NO_CLIENTS.iter(), &c), 0);
        assert_eq!(c.ops(), [Op::Stop]);
        t.on_interrupt(1, 60, || NO_CLIENTS.iter(), &c);
        assert_eq!(*FIRED.lock().unwrap(), [(2, 51)], "once, the alarm armed last");
        // Armed again: alarms follow one another, each firing at its own interrupt.
        t.set_alarm(70, |now| FIRED.lock().unwrap().push((3, now)), &c);
        t.on_interrupt(1, 70, || NO_CLIENTS.iter(), &c);
        assert_eq!(*FIRED.lock().unwrap(), [(2, 51), (3, 70)]);
        assert_eq!(t.next_tick(), None, "no periodic tick");
    }

    #[test]
    #[should_panic(expected = "alarm on the tick core")]
    fn a_core_with_a_tick_takes_no_alarm() {
        let (t, c) = ticking();
        t.set_alarm(5, |_| {}, &c);
    }
}
