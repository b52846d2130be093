//! The tick's decisions, apart from the counter's registers: which clients a core's tick serves,
//! how many ticks a late interrupt counts, when a core's comparator fires next (its next tick,
//! or an exact client's deadline before it; on a core that idles, only what a client needs), who
//! must decide again when a client's needs grow, and the one-shot alarm of a core without a
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
    /// Runs at every tick, in the tick interrupt, with the counter's value; an exact client's
    /// also at the interrupt its due asked for, between two ticks.
    pub on_tick: fn(now: u64),
    /// The counter value by which `on_tick` must run next (`None`: not before something else
    /// changes, and whoever changes it calls `timer::needs_changed`). An exact client's
    /// `on_tick` must move it past the counter value it is given, or its interrupt comes again.
    pub due: fn() -> Option<u64>,
    /// Whether `due` is a deadline to meet to the counter tick, busy or idle: the core's
    /// comparator is set to it when it comes before the next tick (a blocked process's
    /// deadline). Otherwise `due` matters only while the core idles, and is met by a tick (the
    /// first at or after it): for work that may as well wait for the tick (a retry).
    pub exact: bool,
}

impl TickClient {
    /// Whether the tick of `core` serves it.
    pub fn serves(&self, core: usize) -> bool {
        self.cores & 1 << core != 0
    }
}

/// What a client newly needs of the cores that serve it ([`needs_changed`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// A client's `on_tick` must run at a tick by this counter value (0: the next tick).
    Tick(u64),
    /// An exact client's `on_tick` must run at this counter value.
    At(u64),
}

const NONE: u64 = u64::MAX;

/// When a core's comparator is to interrupt next, or never: a core at work ticks, and an exact
/// need before its next tick comes first; a core that idles keeps no tick of its own, only the
/// earliest need of its clients: `loose` met at a tick (the next one, or the counter value
/// itself if that is later: the interrupt then counts the ticks it passed), `exact` as asked.
pub fn next_interrupt(next_tick: u64, idle: bool, loose: Option<u64>, exact: Option<u64>) -> Option<u64> {
    let tick = if idle { loose.map(|due| due.max(next_tick)) } else { Some(next_tick) };
    [tick, exact].into_iter().flatten().min()
}

/// One core's timer: its tick period (counter ticks; 0 = no periodic tick), its next tick
/// deadline, what its comparator is set to, its one-shot alarm, and whether it idles. Atomics:
/// the core's tick interrupt, the core itself and other cores ([`needs_changed`]) look at it.
/// The core decides its comparator with interrupts masked (in its timer interrupt, in the
/// handler of [`needs_changed`]'s wake-up, or as it leaves an idle), so one decision at a time.
#[derive(Debug)]
pub struct CoreTimer {
    period: AtomicU64,
    next: AtomicU64,
    /// The counter value the comparator interrupts at; `NONE` while it is off, and while the
    /// core decides (so that a need published meanwhile asks it to decide again).
    armed: AtomicU64,
    /// The alarm's callback (an [`AlarmCallback`]), 0 when none is armed.
    alarm: AtomicUsize,
    /// It idles, letting its tick stop ([`enter_idle`](Self::enter_idle)).
    idle: AtomicBool,
    /// A client's needs grew beyond what its comparator meets ([`needs_changed`]): it decides
    /// again at the wake-up that follows ([`on_recheck`](Self::on_recheck)).
    recheck: AtomicBool,
}

impl Default for CoreTimer {
    fn default() -> Self {
        Self::new()
    }
}

impl CoreTimer {
    pub const fn new() -> Self {
        Self {
            period: AtomicU64::new(0),
            next: AtomicU64::new(NONE),
            armed: AtomicU64::new(NONE),
            alarm: AtomicUsize::new(0),
            idle: AtomicBool::new(false),
            recheck: AtomicBool::new(false),
        }
    }

    /// Starts a periodic tick of `period` counter ticks, the first a period after `now`.
    pub fn start(&self, now: u64, period: u64, comparator: &impl Comparator) {
        self.period.store(period, Ordering::Relaxed);
        let next = now + period;
        self.next.store(next, Ordering::Relaxed);
        self.arm(Some(next), comparator);
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
        self.arm(Some(deadline), comparator);
    }

    /// The core starts idling: its tick may stop at its next interrupt (the first tick of an
    /// idle stops it, so that a core idling between two short pieces of work never touches its
    /// timer).
    pub fn enter_idle(&self) {
        self.idle.store(true, Ordering::SeqCst);
    }

    /// The core stops idling: if its tick was stopped, or moved past its next deadline, it
    /// resumes (at once if that deadline passed: the interrupt then counts the ticks skipped
    /// and runs the clients). Interrupts masked.
    pub fn leave_idle<'a, I: Iterator<Item = &'a TickClient>>(
        &self,
        core: usize,
        clients: impl Fn() -> I,
        comparator: &impl Comparator,
    ) {
        self.idle.store(false, Ordering::SeqCst);
        if self.armed.load(Ordering::SeqCst) > self.next.load(Ordering::Relaxed) {
            self.decide(core, clients, comparator);
        }
    }

    /// The wake-up [`needs_changed`] sent (or its caller's own core): the core decides its
    /// comparator again if a need grew beyond it. Interrupts masked.
    pub fn on_recheck<'a, I: Iterator<Item = &'a TickClient>>(
        &self,
        core: usize,
        clients: impl Fn() -> I,
        comparator: &impl Comparator,
    ) {
        if self.recheck.swap(false, Ordering::SeqCst) {
            self.decide(core, clients, comparator);
        }
    }

    /// The core's timer interrupt at counter value `now`, with the tick's clients (`clients`
    /// lists all of them, each time it is called: those of this `core` run). With a periodic
    /// tick: counts the ticks passed (more than one if the core was late or its tick stopped)
    /// and returns how many; at a tick every client runs, between two ticks (an exact client's
    /// deadline) only the exact clients that are due; then the comparator is set again
    /// ([`next_interrupt`]). Without: the alarm fires, once.
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
            self.armed.store(NONE, Ordering::SeqCst);
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
        for client in clients().filter(|c| c.serves(core)) {
            if passed > 0 || client.exact && (client.due)().is_some_and(|due| due <= now) {
                (client.on_tick)(now);
            }
        }
        self.decide(core, clients, comparator);
        passed
    }

    /// Sets the comparator for what the core's clients need now ([`next_interrupt`]). `armed`
    /// reads `NONE` from before the clients are asked until the comparator is set: a need
    /// published after that look is seen by [`needs_changed`], which then asks the core to
    /// decide again (a need published before it is seen here).
    fn decide<'a, I: Iterator<Item = &'a TickClient>>(
        &self,
        core: usize,
        clients: impl Fn() -> I,
        comparator: &impl Comparator,
    ) {
        self.armed.store(NONE, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        let idle = self.idle.load(Ordering::SeqCst);
        let (mut loose, mut exact) = (None, None);
        // A core at work ticks anyway, which meets every loose need: only idling asks for them.
        for client in clients().filter(|c| c.serves(core) && (c.exact || idle)) {
            let Some(due) = (client.due)() else { continue };
            let earliest: &mut Option<u64> = if client.exact { &mut exact } else { &mut loose };
            *earliest = Some(earliest.map_or(due, |e| e.min(due)));
        }
        self.arm(next_interrupt(self.next.load(Ordering::Relaxed), idle, loose, exact), comparator);
    }

    /// Sets the comparator to `at`, or off, and records it.
    fn arm(&self, at: Option<u64>, comparator: &impl Comparator) {
        self.armed.store(at.unwrap_or(NONE), Ordering::SeqCst);
        match at {
            Some(deadline) => comparator.set_deadline(deadline),
            None => comparator.stop(),
        }
    }
}

/// A client of the cores among `serving` needs `need`, published before this call: the cores
/// with a tick whose comparator does not meet it (off, later than an exact need, or past the
/// tick a loose need waits for) are to decide again ([`CoreTimer::on_recheck`]). Returns them
/// (bit n: core n), for the caller to wake. A core busy with a tick meets every loose need, so
/// a client that retries at the next tick wakes only idle cores.
pub fn needs_changed(cores: &[CoreTimer], serving: u8, need: Need) -> u8 {
    fence(Ordering::SeqCst);
    let serves = |core: usize| serving & 1 << core != 0;
    let behind = cores.iter().enumerate().filter(|&(core, t)| {
        let by = match need {
            Need::Tick(due) => due.max(t.next.load(Ordering::Relaxed)),
            Need::At(due) => due,
        };
        serves(core) && t.has_tick() && by < t.armed.load(Ordering::SeqCst)
    });
    behind.fold(0, |mask, (core, t)| {
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

    /// A due that a test sets: `NONE` reads as no need.
    fn due_of(due: &AtomicU64) -> Option<u64> {
        Some(due.load(Ordering::Relaxed)).filter(|&d| d != NONE)
    }

    #[test]
    fn the_comparator_follows_the_tick_an_exact_need_before_it_and_an_idle_cores_needs_only() {
        // At work: the next tick, unless an exact need comes first; loose needs wait for it.
        assert_eq!(next_interrupt(20, false, None, None), Some(20));
        assert_eq!(next_interrupt(20, false, Some(5), None), Some(20));
        assert_eq!(next_interrupt(20, false, None, Some(13)), Some(13));
        assert_eq!(next_interrupt(20, false, None, Some(80)), Some(20));
        // Idle: nothing due stops it; a loose need is met at a tick, the next or a later one.
        assert_eq!(next_interrupt(20, true, None, None), None);
        assert_eq!(next_interrupt(20, true, Some(5), None), Some(20));
        assert_eq!(next_interrupt(20, true, Some(80), None), Some(80));
        // An exact need is met as asked, before the tick or far after it.
        assert_eq!(next_interrupt(20, true, None, Some(13)), Some(13));
        assert_eq!(next_interrupt(20, true, Some(80), Some(50)), Some(50));
        assert_eq!(next_interrupt(20, true, Some(5), Some(50)), Some(20));
    }

    #[test]
    fn a_tick_runs_only_the_clients_of_its_core() {
        static RUNS: [AtomicU64; 2] = [const { AtomicU64::new(0) }; 2];
        let clients = [
            TickClient {
                cores: 0b0001,
                on_tick: |_| _ = RUNS[0].fetch_add(1, Ordering::Relaxed),
                due: || None,
                exact: false,
            },
            TickClient {
                cores: 0b1100,
                on_tick: |now| RUNS[1].store(now, Ordering::Relaxed),
                due: || None,
                exact: false,
            },
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
        let clients = [TickClient { cores: 0b1, on_tick: |_| {}, due: || due_of(&DUE), exact: false }];
        let cores = [ticking().0, CoreTimer::new()];
        let c = Fake::default();
        cores[0].enter_idle();
        assert_eq!(c.ops(), [], "entering an idle does not touch the timer");
        cores[0].on_interrupt(0, 10, || clients.iter(), &c);
        assert_eq!(c.ops(), [Op::Stop], "no client due: stopped");
        cores[0].on_recheck(0, || clients.iter(), &c);
        assert_eq!(c.ops(), [], "woken for something else: the tick stays stopped");
        // A client's needs grow: the stopped core, and only it, is to decide again.
        DUE.store(100, Ordering::Relaxed);
        assert_eq!(needs_changed(&cores, 0b11, Need::Tick(100)), 0b1, "the core without a tick is never asked");
        cores[0].on_recheck(0, || clients.iter(), &c);
        assert_eq!(c.ops(), [Op::Set(100)], "the comparator moves to the need, skipping the ticks before it");
        assert_eq!(needs_changed(&cores, 0b1, Need::Tick(100)), 0, "met already: nobody to wake");
        // Its interrupt counts the ticks it skipped; leaving the idle resumes the tick.
        assert_eq!(cores[0].on_interrupt(0, 100, || clients.iter(), &c), 9);
        DUE.store(NONE, Ordering::Relaxed);
        cores[0].on_interrupt(0, 110, || clients.iter(), &c);
        assert_eq!(c.ops(), [Op::Set(110), Op::Stop]);
        cores[0].leave_idle(0, || clients.iter(), &c);
        assert_eq!(c.ops(), [Op::Set(120)]);
        cores[0].leave_idle(0, || clients.iter(), &c);
        assert_eq!(c.ops(), [], "resumed once");
    }

    #[test]
    fn an_idle_core_keeps_its_tick_while_a_loose_client_is_due_before_the_next() {
        let clients = [TickClient { cores: 0b1, on_tick: |_| {}, due: || Some(15), exact: false }];
        let (t, c) = ticking();
        t.enter_idle();
        t.on_interrupt(0, 10, || clients.iter(), &c);
        assert_eq!(c.ops(), [Op::Set(20)], "met by the next tick, not at 15");
        t.leave_idle(0, || clients.iter(), &c);
        assert_eq!(c.ops(), [], "it never stopped");
        let elsewhere = [TickClient { cores: 0b10, ..clients[0] }];
        t.enter_idle();
        t.on_interrupt(0, 20, || elsewhere.iter(), &c);
        assert_eq!(c.ops(), [Op::Stop], "another core's client does not keep this tick");
    }

    #[test]
    fn an_exact_need_interrupts_between_ticks_busy_or_idle_and_runs_only_the_exact_clients_due() {
        static DUE: AtomicU64 = AtomicU64::new(25);
        static RUNS: [AtomicU64; 2] = [const { AtomicU64::new(0) }; 2];
        let clients = [
            // A wait's deadline: it runs at its due, and its next due is later (or none).
            TickClient {
                cores: 0b1,
                on_tick: |now| {
                    RUNS[0].fetch_add(1, Ordering::Relaxed);
                    if due_of(&DUE).is_some_and(|d| d <= now) {
                        DUE.store(if now < 40 { 47 } else { NONE }, Ordering::Relaxed);
                    }
                },
                due: || due_of(&DUE),
                exact: true,
            },
            // The preemption's count: only at ticks.
            TickClient {
                cores: 0b1,
                on_tick: |_| _ = RUNS[1].fetch_add(1, Ordering::Relaxed),
                due: || None,
                exact: false,
            },
        ];
        let runs = || RUNS.each_ref().map(|r| r.load(Ordering::Relaxed));
        let (t, c) = ticking();
        assert_eq!(t.on_interrupt(0, 10, || clients.iter(), &c), 1);
        assert_eq!(c.ops(), [Op::Set(20)], "the next tick comes first");
        t.on_interrupt(0, 20, || clients.iter(), &c);
        assert_eq!(c.ops(), [Op::Set(25)], "the need comes before the tick at 30");
        assert_eq!(runs(), [2, 2]);
        assert_eq!(t.on_interrupt(0, 25, || clients.iter(), &c), 0, "not a tick");
        assert_eq!((runs(), c.ops()), ([3, 2], std::vec![Op::Set(30)]), "only the exact client ran");
        // Idle: the tick stops, the need still interrupts at its counter value.
        t.enter_idle();
        t.on_interrupt(0, 30, || clients.iter(), &c);
        assert_eq!(c.ops(), [Op::Set(47)]);
        assert_eq!(t.on_interrupt(0, 47, || clients.iter(), &c), 1, "the tick at 40 passed meanwhile");
        assert_eq!(c.ops(), [Op::Stop], "nothing due any more");
        assert_eq!(runs(), [5, 4]);
    }

    #[test]
    fn a_need_wakes_only_the_serving_cores_whose_comparator_comes_too_late() {
        let c = Fake::default();
        // Core 0 at work (next tick 20), core 1 idle with its tick stopped, core 2 without a
        // tick, core 3 at work.
        let cores: [CoreTimer; 4] = core::array::from_fn(|_| CoreTimer::new());
        for core in [0, 1, 3] {
            cores[core].start(10, 10, &c);
        }
        cores[1].enter_idle();
        cores[1].on_interrupt(1, 20, || NO_CLIENTS.iter(), &c);
        assert_eq!(needs_changed(&cores, 0b1, Need::At(25)), 0, "the tick at 20 comes first");
        assert_eq!(needs_changed(&cores, 0b1, Need::At(15)), 0b1);
        assert_eq!(needs_changed(&cores, 0b1111, Need::Tick(0)), 0b10, "a busy core's tick meets a loose need");
        assert_eq!(needs_changed(&cores, 0b0100, Need::At(5)), 0, "a core without a tick has no clients");
        assert_eq!(needs_changed(&cores, 0b1000, Need::At(15)), 0b1000, "only the cores named");
        // Asked, core 0 decides again once: its exact client's need comes before its tick.
        let clients = [TickClient { cores: 0b1, on_tick: |_| {}, due: || Some(15), exact: true }];
        c.ops();
        cores[0].on_recheck(0, || clients.iter(), &c);
        cores[0].on_recheck(0, || clients.iter(), &c);
        assert_eq!(c.ops(), [Op::Set(15)]);
        assert_eq!(needs_changed(&cores, 0b1, Need::At(15)), 0, "met");
    }

    #[test]
    fn a_need_published_while_the_core_decides_is_not_lost() {
        static CORES: [CoreTimer; 1] = [CoreTimer::new()];
        static WOKEN: AtomicU64 = AtomicU64::new(0);
        // The client's due is read before another core publishes a need (here, inside the
        // look itself): that core must find this one deciding, and ask it to decide again.
        let clients = [TickClient {
            cores: 0b1,
            on_tick: |_| {},
            due: || {
                WOKEN.store(u64::from(needs_changed(&CORES, 0b1, Need::At(12))), Ordering::Relaxed);
                Some(50)
            },
            exact: true,
        }];
        let c = Fake::default();
        CORES[0].start(0, 10, &c);
        CORES[0].on_interrupt(0, 10, || clients.iter(), &c);
        assert_eq!((WOKEN.load(Ordering::Relaxed), c.ops()), (1, std::vec![Op::Set(10), Op::Set(20)]));
        CORES[0].on_recheck(0, || clients.iter(), &c);
        assert_eq!(c.ops(), [Op::Set(20)], "it decided again");
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
