//! The generic timer: the periodic tick, one-shot alarms, and delays.

use crate::ensure;
use crate::testkit::{Test, TestResult};
use a53_kernel::arch::cpu;
use a53_kernel::{smp, timer};
use core::sync::atomic::{AtomicU64, Ordering};
use embedded_hal::delay::DelayNs;

pub const TESTS: &[Test] = &[
    Test::new("timer", "tick_counts_at_its_rate", tick_rate),
    Test::new("timer", "alarm_fires_within_two_ticks_of_its_deadline", alarm),
    Test::new("timer", "delay_waits_at_least_as_asked", delay),
];

fn tick_rate() -> TestResult {
    let period = timer::tick_period();
    let (t0, c0) = (timer::ticks(), timer::now());
    cpu::idle_until(|| timer::now() - c0 >= 10 * period);
    let elapsed = timer::ticks() - t0;
    ensure((9..=11).contains(&elapsed), "the tick did not count 10 +- 1 ticks in 10 periods")
}

static FIRED_AT: AtomicU64 = AtomicU64::new(0);

fn record_alarm(now: u64) {
    FIRED_AT.store(now, Ordering::SeqCst);
}

fn alarm() -> TestResult {
    let period = timer::tick_period();
    let deadline = AtomicU64::new(0);
    FIRED_AT.store(0, Ordering::SeqCst);
    // Core 1 has no periodic tick, so its timer is free for a one-shot alarm.
    smp::run_on(1, &|_| {
        let d = timer::now() + 3 * period;
        deadline.store(d, Ordering::SeqCst);
        timer::set_alarm(d, record_alarm);
        let give_up = d + 50 * period;
        cpu::idle_until(|| FIRED_AT.load(Ordering::SeqCst) != 0 || timer::now() > give_up);
    })
    .map_err(|_| "core 1 offline")?;
    let (fired, d) = (FIRED_AT.load(Ordering::SeqCst), deadline.load(Ordering::SeqCst));
    ensure(fired != 0, "the alarm never fired")?;
    ensure(fired >= d, "the alarm fired early")?;
    ensure(fired - d <= 2 * period, "the alarm fired more than two ticks late")
}

fn delay() -> TestResult {
    let mut t = timer::timer();
    let start = t.now();
    t.delay_ms(5);
    let waited = t.rate().ns_from_ticks(t.now() - start);
    ensure(waited >= 5_000_000, "delay_ms(5) returned early")
}
