//! The scheduler's time: the R5's 32-bit PMU cycle counter extended to 64 bits
//! (`docs/hw/pldma.md`, "Time on the R5"). The firmware reads it far more often than it wraps
//! (4.3 s at 1 GHz), so one wrap between two readings is all there can be.

/// Extends successive readings of a wrapping 32-bit counter.
#[derive(Clone, Copy, Debug, Default)]
pub struct Extended {
    last: u32,
    high: u64,
}

impl Extended {
    pub const fn new() -> Self {
        Self { last: 0, high: 0 }
    }

    /// The 64-bit time of a new reading `raw`.
    pub fn extend(&mut self, raw: u32) -> u64 {
        if raw < self.last {
            self.high += 1 << 32;
        }
        self.last = raw;
        self.high | u64::from(raw)
    }
}

/// Ticks of a `hz` clock in `us` microseconds.
pub const fn ticks(us: u64, hz: u64) -> u64 {
    us.saturating_mul(hz) / 1_000_000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_extend_across_wraps() {
        let mut c = Extended::new();
        assert_eq!(c.extend(5), 5);
        assert_eq!(c.extend(u32::MAX), u64::from(u32::MAX));
        assert_eq!(c.extend(3), (1 << 32) + 3);
        assert_eq!(c.extend(3), (1 << 32) + 3, "no time passed");
        assert_eq!(c.extend(2), (2 << 32) + 2);
        assert_eq!(ticks(1000, 1_000_000_000), 1_000_000);
        assert_eq!(ticks(u64::MAX, 2), u64::MAX / 1_000_000);
    }
}
