//! The R5's sleep (`docs/hw/ipi.md`): publish it on the sleep line, look at the inputs once
//! more, then sleep the board's way until a wake-up.

use board::R5Wait;
use proto::r5_sleep::SleepLine;

/// The board's way to sleep, over the sleep line of the IPC area.
pub struct Sleeper {
    line: &'static SleepLine,
    wait: R5Wait,
    /// Sleeps slept, and sleeps the last look cancelled.
    pub slept: u32,
    pub cancelled: u32,
}

impl Sleeper {
    pub fn new(line: &'static SleepLine, wait: R5Wait) -> Self {
        line.end();
        Self { line, wait, slept: 0, cancelled: 0 }
    }

    /// Sleeps for at most `timeout_us` unless `has_work`, asked after the sleep is published,
    /// finds work. Returns whether it slept. A board that polls only pauses.
    pub fn sleep(&mut self, timeout_us: u32, has_work: impl FnOnce() -> bool) -> bool {
        match self.wait {
            R5Wait::Poll => {
                core::hint::spin_loop();
                false
            }
            R5Wait::Semihosting => {
                self.line.begin(timeout_us);
                if has_work() {
                    self.line.end();
                    self.cancelled = self.cancelled.wrapping_add(1);
                    return false;
                }
                // The announcement lets the platform arm the R5's timer for `timeout_us`.
                crate::arch::semihosting::write_char(b'z');
                crate::arch::semihosting::read_char();
                self.line.end();
                self.slept = self.slept.wrapping_add(1);
                true
            }
        }
    }
}
