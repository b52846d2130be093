//! The generic timer: the periodic tick, one-shot alarms, and delays.

use crate::ensure;
use crate::testkit::{Test, TestResult};
use a53_kernel::arch::cpu;
use a53_kernel::{smp, timer};
use core::sync::atomic::{AtomicU64, Ordering};
use embedded_hal::delay::DelayNs;

pub const TESTS: &[Test] = &[
    Test::new("timer", "tick_counts_at_its_rate", tick_rate),
    Test::new("timer", "alarm_is_armed_for_its_deadline_and_fires_not_before_it", alarm),
    Test::new("timer", "delay_waits_at_least_as_asked", delay),
];

/// One tick per period, none lost, none ahead of the counter. A loaded host may deliver a tick
/// interrupt late (QEMU raises it from its own timer thread), so the test checks the count
/// against the deadlines the tick passed, not against the time a late interrupt came.
fn tick_rate() -> TestResult {
    let period = timer::tick_period();
    let tick_state = || cpu::without_irqs(|| (timer::ticks(), timer::next_tick()));
    let (t0, Some(n0)) = tick_state() else { return Err("core 0 has no periodic tick") };
    // Ten deadlines pass: n0, n0 + period, ..., n0 + 9 periods.
    cpu::idle_until(|| timer::now() >= n0 + 9 * period);
    let give_up = timer::now() + 100 * period;
    cpu::idle_until(|| timer::ticks() - t0 >= 10 || timer::now() > give_up);
    let (t1, Some(n1)) = tick_state() else { return Err("core 0 lost its periodic tick") };
    let counted = t1 - t0;
    ensure(counted >= 10, "ten tick deadlines passed, but the tick did not count ten in 100 periods")?;
    ensure(n1 - n0 == counted * period, "the tick count and its deadline moved apart")?;
    ensure(n1 <= timer::now() + period, "the next tick deadline is more than a period ahead of the counter")
}

static FIRED_AT: AtomicU64 = AtomicU64::new(0);

fn record_alarm(now: u64) {
    FIRED_AT.store(now, Ordering::SeqCst);
}

/// One alarm, as an alarm test or benchmark sees it.
pub(crate) struct AlarmSeen {
    /// The deadline the timer was armed for (read back from it).
    pub armed: Option<u64>,
    /// The counter in the handler; `None` if it had not fired by the give-up time.
    pub fired: Option<u64>,
}

/// Arms a one-shot alarm on this core (one without the periodic tick) for `deadline` and waits
/// for it until the counter passes `give_up`. How late it comes is the host's interrupt latency
/// (a loaded host delays it by ticks): a figure, not a behaviour, so the wait is only bounded.
pub(crate) fn wait_for_alarm(deadline: u64, give_up: u64) -> AlarmSeen {
    FIRED_AT.store(0, Ordering::SeqCst);
    // Masked, so that an early (or a late-running) interrupt cannot disarm it before the look.
    let armed = cpu::without_irqs(|| {
        timer::set_alarm(deadline, record_alarm);
        timer::timer().deadline()
    });
    cpu::idle_until(|| FIRED_AT.load(Ordering::SeqCst) != 0 || timer::now() > give_up);
    let fired = FIRED_AT.load(Ordering::SeqCst);
    AlarmSeen { armed, fired: (fired != 0).then_some(fired) }
}

fn alarm() -> TestResult {
    let period = timer::tick_period();
    let (deadline, armed, fired) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
    // Core 1 has no periodic tick, so its timer is free for a one-shot alarm.
    smp::run_on(1, &|_| {
        let d = timer::now() + 3 * period;
        let seen = wait_for_alarm(d, d + 100 * period);
        deadline.store(d, Ordering::SeqCst);
        armed.store(seen.armed.unwrap_or(0), Ordering::SeqCst);
        fired.store(seen.fired.unwrap_or(0), Ordering::SeqCst);
    })
    .map_err(|_| "core 1 offline")?;
    let [d, armed, fired] = [deadline, armed, fired].map(|a| a.load(Ordering::SeqCst));
    ensure(fired != 0, "the alarm never fired")?;
    ensure(fired >= d, "the alarm fired early")?;
    ensure(armed == d, "the alarm was armed for another deadline")
}

fn delay() -> TestResult {
    let mut t = timer::timer();
    let start = t.now();
    t.delay_ms(5);
    let waited = t.rate().ns_from_ticks(t.now() - start);
    ensure(waited >= 5_000_000, "delay_ms(5) returned early")
}
