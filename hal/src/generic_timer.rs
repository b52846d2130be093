//! ARM generic timer: the EL1 physical timer (CNTP_*) and the system counter.
//!
//! The tick arithmetic is plain Rust and host-tested; only [`SystemTimer`]'s register accesses
//! are AArch64-specific.

/// Converts between counter ticks and time for a counter running at `hz`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TickRate {
    /// Counter ticks per second (CNTFRQ_EL0).
    pub hz: u64,
}

impl TickRate {
    /// Ticks in `ns` nanoseconds, rounded up so that a delay is never shorter than asked.
    pub fn ticks_from_ns(self, ns: u64) -> u64 {
        ((u128::from(ns) * u128::from(self.hz)).div_ceil(1_000_000_000)) as u64
    }

    /// Nanoseconds in `ticks` counter ticks.
    pub fn ns_from_ticks(self, ticks: u64) -> u64 {
        (u128::from(ticks) * 1_000_000_000 / u128::from(self.hz)) as u64
    }

    /// Microseconds in `ticks` counter ticks.
    pub fn us_from_ticks(self, ticks: u64) -> u64 {
        (u128::from(ticks) * 1_000_000 / u128::from(self.hz)) as u64
    }
}

#[cfg(target_arch = "aarch64")]
pub use arch::SystemTimer;

#[cfg(target_arch = "aarch64")]
mod arch {
    use super::TickRate;
    use aarch64_cpu::registers::{CNTFRQ_EL0, CNTP_CTL_EL0, CNTP_CVAL_EL0, CNTPCT_EL0};
    use aarch64_cpu::{asm::barrier, registers::Readable, registers::Writeable};

    /// The per-core EL1 physical timer and the shared system counter.
    #[derive(Clone, Copy)]
    pub struct SystemTimer {
        rate: TickRate,
    }

    impl SystemTimer {
        /// Reads the counter frequency that firmware (or QEMU) programmed into CNTFRQ_EL0.
        pub fn new() -> Self {
            Self { rate: TickRate { hz: CNTFRQ_EL0.get() } }
        }

        /// Like [`SystemTimer::new`], with `fallback_hz` when firmware left CNTFRQ_EL0 at zero.
        pub fn with_fallback(fallback_hz: u64) -> Self {
            let hz = CNTFRQ_EL0.get();
            Self { rate: TickRate { hz: if hz == 0 { fallback_hz } else { hz } } }
        }

        /// The counter's frequency.
        pub fn rate(&self) -> TickRate {
            self.rate
        }

        /// The system counter now (CNTPCT_EL0, after an ISB so it is not read early).
        pub fn now(&self) -> u64 {
            barrier::isb(barrier::SY);
            CNTPCT_EL0.get()
        }

        /// Programs this core's timer to fire at absolute counter value `deadline`.
        pub fn set_deadline(&self, deadline: u64) {
            CNTP_CVAL_EL0.set(deadline);
            CNTP_CTL_EL0.write(CNTP_CTL_EL0::ENABLE::SET + CNTP_CTL_EL0::IMASK::CLEAR);
        }

        /// The deadline this core's timer is armed for, if it is enabled (CNTP_CVAL_EL0).
        pub fn deadline(&self) -> Option<u64> {
            CNTP_CTL_EL0.is_set(CNTP_CTL_EL0::ENABLE).then(|| CNTP_CVAL_EL0.get())
        }

        /// Disables this core's timer and masks its interrupt.
        pub fn stop(&self) {
            CNTP_CTL_EL0.write(CNTP_CTL_EL0::ENABLE::CLEAR + CNTP_CTL_EL0::IMASK::SET);
        }

        /// Microseconds since the counter started.
        pub fn uptime_us(&self) -> u64 {
            self.rate.us_from_ticks(self.now())
        }
    }

    impl Default for SystemTimer {
        fn default() -> Self {
            Self::new()
        }
    }

    impl embedded_hal::delay::DelayNs for SystemTimer {
        fn delay_ns(&mut self, ns: u32) {
            let end = self.now() + self.rate.ticks_from_ns(u64::from(ns));
            while self.now() < end {
                core::hint::spin_loop();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::TickRate;

    #[test]
    fn conversions_round_trip_at_qemu_and_board_rates() {
        for hz in [62_500_000, 99_999_000, 100_000_000, 1_000_000_000] {
            let rate = TickRate { hz };
            for ns in [0, 1, 999, 1_000_000, 16_000_000_000] {
                let ticks = rate.ticks_from_ns(ns);
                assert!(rate.ns_from_ticks(ticks) >= ns.saturating_sub(1_000_000_000 / hz));
            }
        }
    }

    #[test]
    fn delays_round_up() {
        let rate = TickRate { hz: 62_500_000 }; // 16 ns per tick
        assert_eq!(rate.ticks_from_ns(1), 1);
        assert_eq!(rate.ticks_from_ns(16), 1);
        assert_eq!(rate.ticks_from_ns(17), 2);
        assert_eq!(rate.us_from_ticks(62_500_000), 1_000_000);
    }
}
