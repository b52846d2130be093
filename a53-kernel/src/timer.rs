//! Time: the system counter, the periodic tick (core 0 and the process cores) and one-shot
//! alarms (any core).
//!
//! The tick serves the clients that registered for it ([`register_tick_client`]): core 0's
//! (process deadlines, the sockets' outbox) and the process cores' (preemption). A core that
//! idles through [`idle_until`] stops its tick unless a client still needs it: the comparator is
//! set to the earliest deadline a client asks for, or off, and back to the next tick when the
//! core wakes. Ticks skipped meanwhile are counted at the next tick interrupt, so [`ticks`]
//! stays exact; an idle node costs the host nothing between interrupts.

use crate::CORES;
use crate::arch::cpu;
use crate::hooks::{Full, Hooks};
use crate::irq::{self, IntId};
use crate::time::{self, Instant, TimedOut};
use board::Board as _;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use core::time::Duration;
use hal::generic_timer::SystemTimer;

/// The kernel tick: 100 Hz.
pub const TICK_HZ: u64 = 100;

static TICKS: AtomicU64 = AtomicU64::new(0);

const NONE: u64 = u64::MAX;

/// Per core: the tick period (ticks of the counter; 0 = no periodic tick), the next deadline
/// and the one-shot alarm callback.
struct CoreTimer {
    period: AtomicU64,
    next: AtomicU64,
    alarm: AtomicUsize,
}

static CORE_TIMERS: [CoreTimer; CORES] =
    [const { CoreTimer { period: AtomicU64::new(0), next: AtomicU64::new(NONE), alarm: AtomicUsize::new(0) } }; CORES];

pub type AlarmCallback = fn(now: u64);

/// A user of the periodic tick on the cores of `cores` (bit n: core n).
#[derive(Clone, Copy)]
pub struct TickClient {
    pub cores: u8,
    /// Runs at every tick, in the tick interrupt, with the counter's value.
    pub on_tick: fn(now: u64),
    /// While the core idles: the counter value by which `on_tick` must run next (`None`: not
    /// before something else changes, and whoever changes it calls [`needs_changed`]).
    pub due: fn() -> Option<u64>,
}

/// The tick's clients (registered at boot, before the cores they name tick).
static TICK_CLIENTS: Hooks<TickClient, 8> = Hooks::new();

/// Per core: it idles in [`idle_until`].
static IDLE: [AtomicBool; CORES] = [const { AtomicBool::new(false) }; CORES];
/// Per core: its tick is stopped while it idles (see [`needs_changed`]).
static TICK_STOPPED: [AtomicBool; CORES] = [const { AtomicBool::new(false) }; CORES];
/// Per core: a client's needs changed while its tick was stopped: it resumes the tick, whose
/// next interrupt runs the clients and decides again.
static RECHECK: [AtomicBool; CORES] = [const { AtomicBool::new(false) }; CORES];

/// Registers `client` for the tick of its cores (at boot, before the cores it names tick).
pub fn register_tick_client(client: TickClient) -> Result<(), Full> {
    TICK_CLIENTS.register(client)
}

/// The clients of `core`'s tick.
fn clients_of(core: usize) -> impl Iterator<Item = &'static TickClient> {
    TICK_CLIENTS.iter().filter(move |c| c.cores & (1 << core) != 0)
}

/// A tick client's needs grew (a process blocked with a deadline, a doorbell waits to be sent
/// again): a core whose tick is stopped wakes and looks at its clients again. The change must
/// be published before this call; a core stops its tick only after it has looked, and it
/// looks again after the wake-up this sends.
pub fn needs_changed() {
    core::sync::atomic::fence(Ordering::SeqCst);
    let stopped = (0..CORES).filter(|&c| TICK_STOPPED[c].load(Ordering::SeqCst)).fold(0u8, |m, c| m | 1 << c);
    for c in (0..CORES).filter(|c| stopped & 1 << c != 0) {
        RECHECK[c].store(true, Ordering::SeqCst);
    }
    if stopped != 0 {
        irq::send_sgi(crate::irq::sgi::WAKE, stopped);
    }
}

/// Sleeps until `ready()` holds, as [`cpu::idle_until`] does, and lets this core's tick stop
/// meanwhile: the first tick that finds the core idling with no client due before the next one
/// stops it ([`stop_tick_if_idle`]), so that a core idling between two short pieces of work
/// (a process waiting for a reply) never touches its timer. When the core leaves, or a client's
/// needs grow ([`needs_changed`]), the tick resumes at its next deadline (at once if that
/// passed: the tick interrupt then counts the ticks skipped and runs the clients).
pub fn idle_until(mut ready: impl FnMut() -> bool) {
    let core = cpu::core_id();
    if CORE_TIMERS[core].period.load(Ordering::Relaxed) == 0 {
        return cpu::idle_until(ready);
    }
    IDLE[core].store(true, Ordering::SeqCst);
    cpu::idle_until(|| {
        if RECHECK[core].swap(false, Ordering::SeqCst) {
            resume_tick(core);
        }
        ready()
    });
    IDLE[core].store(false, Ordering::SeqCst);
    resume_tick(core);
}

/// The tick of `core` goes on from its next deadline, if it was stopped (IRQs masked).
fn resume_tick(core: usize) {
    if TICK_STOPPED[core].swap(false, Ordering::SeqCst) {
        timer().set_deadline(CORE_TIMERS[core].next.load(Ordering::Relaxed));
    }
}

/// In the tick interrupt, after the clients ran: a core that idles (in [`idle_until`]) with no
/// client due before its next tick stops the tick, or moves it to the earliest client's
/// deadline. [`needs_changed`] and leaving [`idle_until`] resume it.
fn stop_tick_if_idle(core: usize, next_tick: u64) {
    if !IDLE[core].load(Ordering::SeqCst) {
        return;
    }
    TICK_STOPPED[core].store(true, Ordering::SeqCst);
    core::sync::atomic::fence(Ordering::SeqCst);
    match clients_of(core).filter_map(|client| (client.due)()).min() {
        Some(due) if due <= next_tick => TICK_STOPPED[core].store(false, Ordering::SeqCst),
        Some(due) => timer().set_deadline(due),
        None => timer().stop(),
    }
}

pub fn timer() -> SystemTimer {
    SystemTimer::with_fallback(crate::Board::TIMER_HZ)
}

pub fn now() -> u64 {
    timer().now()
}

pub fn hz() -> u64 {
    timer().rate().hz
}

/// The counter now, as an [`Instant`].
pub fn instant() -> Instant {
    Instant::from_ticks(now())
}

/// The instant `span` from now.
pub fn deadline_in(span: Duration) -> Instant {
    instant().after(span, hz())
}

/// Waits up to `span` for `ready`, calling `pause` between two looks (a spin, or a nap).
pub fn wait_for(span: Duration, ready: impl FnMut() -> bool, pause: impl FnMut()) -> Result<(), TimedOut> {
    time::wait_until(deadline_in(span), instant, ready, pause)
}

/// Waits up to `span` for `ready` asleep (WFI between looks: an interrupt, the tick at the
/// latest, wakes the core to look again).
pub fn idle_for(span: Duration, mut ready: impl FnMut() -> bool) -> Result<(), TimedOut> {
    let deadline = deadline_in(span);
    let mut came = false;
    cpu::idle_until(|| {
        came = ready();
        came || instant() > deadline
    });
    if came { Ok(()) } else { Err(TimedOut) }
}

/// Microseconds since the counter started (the console's timestamps, `TIME_US`).
pub fn uptime_us() -> u64 {
    let t = timer();
    t.rate().us_from_ticks(t.now())
}

pub fn tick_period() -> u64 {
    hz() / TICK_HZ
}

pub fn ticks() -> u64 {
    TICKS.load(Ordering::Relaxed)
}

/// This core's next periodic tick deadline (counter value), if it has a periodic tick. The
/// tick count advances by one for each deadline passed, so across two reads on the tick core
/// (IRQs masked) the deadline moves by exactly `tick_period()` per tick counted.
pub fn next_tick() -> Option<u64> {
    let t = &CORE_TIMERS[cpu::core_id()];
    (t.period.load(Ordering::Relaxed) != 0).then(|| t.next.load(Ordering::Relaxed))
}

pub fn intid() -> IntId {
    IntId(crate::Board::TIMER_INTID)
}

/// Registers the timer interrupt (boot core) and starts the periodic tick on this core.
pub fn init_boot_core() {
    irq::register(intid(), on_interrupt, 0).expect("timer interrupt taken");
    start_periodic_tick();
}

/// Enables the (banked) timer interrupt on a secondary core; it has no periodic tick.
pub fn init_this_core() {
    irq::enable_private(intid());
}

/// A process core: a periodic tick for preemption (`scheduler::on_tick`).
pub fn start_preemption_tick() {
    start_periodic_tick();
}

fn start_periodic_tick() {
    let period = tick_period();
    let t = &CORE_TIMERS[cpu::core_id()];
    t.period.store(period, Ordering::Relaxed);
    let next = now() + period;
    t.next.store(next, Ordering::Relaxed);
    timer().set_deadline(next);
}

/// Arms a one-shot alarm on this core at counter value `deadline`. Only on cores without the
/// periodic tick.
pub fn set_alarm(deadline: u64, callback: AlarmCallback) {
    let t = &CORE_TIMERS[cpu::core_id()];
    assert_eq!(t.period.load(Ordering::Relaxed), 0, "alarm on the tick core");
    t.alarm.store(callback as usize, Ordering::Release);
    t.next.store(deadline, Ordering::Relaxed);
    timer().set_deadline(deadline);
}

/// Sleeps (WFI) until the counter passes `deadline`, on a core with the periodic tick, which
/// wakes it: the sleep ends at the first tick (or other interrupt) after the deadline, at most
/// one tick period late. For polling loops that should leave the host's CPU to others.
pub fn sleep_until(deadline: u64) {
    assert_ne!(CORE_TIMERS[cpu::core_id()].period.load(Ordering::Relaxed), 0, "sleep on a core without a tick");
    cpu::idle_until(|| now() >= deadline);
}

fn on_interrupt(_: IntId) {
    let now = now();
    let core = cpu::core_id();
    let t = &CORE_TIMERS[core];
    let period = t.period.load(Ordering::Relaxed);
    if period != 0 {
        // Catch up if ticks were missed; the counter keeps exact time either way.
        let mut next = t.next.load(Ordering::Relaxed);
        while next <= now {
            next += period;
            if core == 0 {
                TICKS.fetch_add(1, Ordering::Relaxed);
            }
        }
        t.next.store(next, Ordering::Relaxed);
        timer().set_deadline(next);
        for TickClient { on_tick, .. } in clients_of(core) {
            on_tick(now);
        }
        stop_tick_if_idle(core, next);
    } else {
        timer().stop();
        t.next.store(NONE, Ordering::Relaxed);
        let callback = t.alarm.swap(0, Ordering::AcqRel);
        if callback != 0 {
            // SAFETY: only `set_alarm` stores non-zero values, and they are `AlarmCallback`s.
            let callback: AlarmCallback = unsafe { core::mem::transmute(callback) };
            callback(now);
        }
    }
}
