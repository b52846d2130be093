//! Time as the kernel keeps it: an [`Instant`] is a value of the system counter, a span is a
//! `core::time::Duration`, and the counter's rate converts one into the other. [`wait_until`]
//! is the kernel's one loop that waits for something with a deadline; `timer` gives it the
//! counter (`timer::now`, `timer::wait_for`). [`tick`] holds the periodic tick's and the
//! alarms' decisions, which `timer` applies to the cores' timers.

pub mod tick;

use core::time::Duration;

/// A value of the system counter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Instant(u64);

impl Instant {
    pub const fn from_ticks(ticks: u64) -> Self {
        Self(ticks)
    }

    pub const fn ticks(self) -> u64 {
        self.0
    }

    /// `span` later, on a counter of `hz` (never wrapping: a far deadline is the end of time).
    pub fn after(self, span: Duration, hz: u64) -> Self {
        Self(self.0.saturating_add(ticks_in(span, hz)))
    }

    /// The time from `earlier` to this instant (zero if `earlier` is later).
    pub fn since(self, earlier: Instant, hz: u64) -> Duration {
        let ticks = self.0.saturating_sub(earlier.0);
        Duration::from_nanos((u128::from(ticks) * 1_000_000_000 / u128::from(hz.max(1))) as u64)
    }
}

/// The counter ticks in `span` at `hz`, rounded up (a wait is never shorter than asked).
pub fn ticks_in(span: Duration, hz: u64) -> u64 {
    let ticks = (span.as_nanos() * u128::from(hz)).div_ceil(1_000_000_000);
    u64::try_from(ticks).unwrap_or(u64::MAX)
}

/// The deadline of a wait passed before what it waited for came.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimedOut;

/// Looks at `ready` until it is true (`Ok`) or the clock `now` is past `deadline` (`TimedOut`),
/// calling `pause` between two looks. `ready` is asked before the clock each time, so a wait
/// whose event came during its last pause does not time out.
pub fn wait_until(
    deadline: Instant,
    now: impl Fn() -> Instant,
    mut ready: impl FnMut() -> bool,
    mut pause: impl FnMut(),
) -> Result<(), TimedOut> {
    loop {
        if ready() {
            return Ok(());
        }
        if now() > deadline {
            return Err(TimedOut);
        }
        pause();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::cell::Cell;

    #[test]
    fn spans_convert_at_the_counters_rate_rounding_waits_up() {
        let hz = 62_500_000;
        let t0 = Instant::from_ticks(1000);
        assert_eq!(t0.after(Duration::from_secs(1), hz).ticks(), 1000 + hz);
        assert_eq!(ticks_in(Duration::from_nanos(1), hz), 1, "a nanosecond is a tick, not none");
        assert_eq!(t0.after(Duration::from_secs(1), hz).since(t0, hz), Duration::from_secs(1));
        assert_eq!(t0.since(t0.after(Duration::from_millis(5), hz), hz), Duration::ZERO, "earlier is later");
        assert_eq!(Instant::from_ticks(u64::MAX - 1).after(Duration::from_secs(10), hz).ticks(), u64::MAX);
    }

    #[test]
    fn a_wait_ends_when_ready_or_past_its_deadline() {
        let clock = Cell::new(0u64);
        let now = || Instant::from_ticks(clock.get());
        let tick = || clock.set(clock.get() + 1);
        assert_eq!(wait_until(Instant::from_ticks(5), now, || clock.get() == 3, tick), Ok(()));
        clock.set(0);
        assert_eq!(wait_until(Instant::from_ticks(5), now, || false, tick), Err(TimedOut));
        assert_eq!(clock.get(), 6, "it paused until the clock was past the deadline");
        // The event came during the last pause, which also took the clock past the deadline.
        clock.set(0);
        assert_eq!(wait_until(Instant::from_ticks(5), now, || clock.get() > 5, tick), Ok(()));
    }
}
