//! When the R5 sleeps, and for how long at most (`docs/hw/ipi.md`).
//!
//! A round that found work is followed by another at once. After a round that found nothing the
//! R5 keeps looking for [`Idle::spin_ticks`] more (a stream of RDMA blocks brings an event every
//! few microseconds, and a sleep and its wake-up cost more than that), then sleeps until work
//! comes or its next deadline.

/// The longest sleep, in microseconds, whatever the deadlines: the firmware's clock extends a
/// 32-bit cycle counter (`clock::Extended`), which must be read at least once per wrap (4.3 s
/// at QEMU's nominal 1 GHz).
pub const MAX_SLEEP_US: u32 = 1_000_000;

/// The R5's idle state between rounds.
#[derive(Clone, Copy, Debug)]
pub struct Idle {
    spin_ticks: u64,
    /// When the rounds stopped finding work.
    quiet_since: Option<u64>,
}

impl Idle {
    /// Sleeps after `spin_ticks` of the firmware's clock without work.
    pub const fn new(spin_ticks: u64) -> Self {
        Self { spin_ticks, quiet_since: None }
    }

    /// A round found work (or the R5 just woke up): looking goes on.
    pub fn worked(&mut self) {
        self.quiet_since = None;
    }

    /// A round at `now` found nothing: whether it is time to sleep.
    pub fn time_to_sleep(&mut self, now: u64) -> bool {
        let since = *self.quiet_since.get_or_insert(now);
        now.saturating_sub(since) >= self.spin_ticks
    }
}

/// How long a sleep starting at `now` may last, in microseconds of a `hz` clock: until the next
/// deadline (0 if it passed), at most [`MAX_SLEEP_US`].
pub fn sleep_us(now: u64, deadline: Option<u64>, hz: u64) -> u32 {
    let Some(deadline) = deadline else { return MAX_SLEEP_US };
    let hz = hz.max(1);
    // At most a second of ticks: the product below stays in 64 bits for any clock to 18 THz.
    let ticks = deadline.saturating_sub(now).min(hz);
    (ticks * 1_000_000).div_ceil(hz).min(u64::from(MAX_SLEEP_US)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_sleeps_only_after_spinning_quietly_and_work_restarts_the_spin() {
        let mut idle = Idle::new(100);
        assert!(!idle.time_to_sleep(1000), "the first quiet round");
        assert!(!idle.time_to_sleep(1099));
        assert!(idle.time_to_sleep(1100));
        idle.worked();
        assert!(!idle.time_to_sleep(5000), "work restarted the spin");
        assert!(idle.time_to_sleep(5100));
        assert!(Idle::new(0).time_to_sleep(7), "no spin: sleep at the first quiet round");
    }

    #[test]
    fn a_sleep_ends_by_the_next_deadline_and_within_the_clocks_wrap() {
        const GHZ: u64 = 1_000_000_000;
        assert_eq!(sleep_us(0, None, GHZ), MAX_SLEEP_US);
        assert_eq!(sleep_us(1000, Some(1000 + 100_000_000), GHZ), 100_000, "100 ms ahead");
        assert_eq!(sleep_us(1000, Some(1001), GHZ), 1, "rounded up: never before the deadline");
        assert_eq!(sleep_us(5000, Some(1000), GHZ), 0, "passed");
        assert_eq!(sleep_us(0, Some(u64::MAX), GHZ), MAX_SLEEP_US);
        assert_eq!(sleep_us(0, Some(250), 100), MAX_SLEEP_US, "a slow clock: still at most a second");
        assert_eq!(sleep_us(0, Some(3), 100), 30_000);
        assert!(u64::from(MAX_SLEEP_US) * 1000 < (1 << 32), "shorter than one wrap at 1 GHz");
    }
}
