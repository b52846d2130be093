//! Time: the system counter, the periodic kernel tick (core 0) and one-shot alarms (any core).

use crate::arch::cpu;
use crate::irq::{self, IntId};
use board::Board as _;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use hal::generic_timer::SystemTimer;

/// The kernel tick: 100 Hz.
pub const TICK_HZ: u64 = 100;

static TICKS: AtomicU64 = AtomicU64::new(0);

const CORES: usize = crate::Board::A53_CORES;
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

pub fn timer() -> SystemTimer {
    SystemTimer::with_fallback(crate::Board::TIMER_HZ)
}

pub fn now() -> u64 {
    timer().now()
}

pub fn hz() -> u64 {
    timer().rate().hz
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
    let t = &CORE_TIMERS[cpu::core_id()];
    let period = t.period.load(Ordering::Relaxed);
    if period != 0 {
        // Catch up if ticks were missed; the counter keeps exact time either way.
        let mut next = t.next.load(Ordering::Relaxed);
        let boot_core = cpu::core_id() == 0;
        while next <= now {
            next += period;
            if boot_core {
                TICKS.fetch_add(1, Ordering::Relaxed);
            }
        }
        t.next.store(next, Ordering::Relaxed);
        timer().set_deadline(next);
        if boot_core {
            crate::process::scheduler::expire(now);
            crate::socket_node::on_tick();
        } else {
            crate::process::scheduler::on_tick();
        }
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
