//! A generation counter that threads wait on: one side says "something changed", the other
//! sleeps until it does (or a timeout passes) instead of polling.

use std::sync::{Condvar, Mutex};
use std::time::Duration;

#[derive(Debug, Default)]
pub struct Signal {
    generation: Mutex<u64>,
    changed: Condvar,
}

impl Signal {
    /// Something changed: every waiter wakes.
    pub fn raise(&self) {
        *self.generation.lock().unwrap() += 1;
        self.changed.notify_all();
    }

    /// The current generation.
    pub fn generation(&self) -> u64 {
        *self.generation.lock().unwrap()
    }

    /// Waits until the generation differs from `seen` or `timeout` passes; returns the
    /// generation then.
    pub fn wait_past(&self, seen: u64, timeout: Duration) -> u64 {
        let generation = self.generation.lock().unwrap();
        let (generation, _) = self.changed.wait_timeout_while(generation, timeout, |g| *g == seen).unwrap();
        *generation
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Instant;

    #[test]
    fn a_waiter_wakes_when_raised_and_otherwise_at_its_timeout() {
        let signal = Arc::new(Signal::default());
        let start = Instant::now();
        assert_eq!(signal.wait_past(0, Duration::from_millis(20)), 0);
        assert!(start.elapsed() >= Duration::from_millis(20));
        let raiser = {
            let signal = signal.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(10));
                signal.raise();
            })
        };
        assert_eq!(signal.wait_past(0, Duration::from_secs(10)), 1);
        raiser.join().unwrap();
        assert_eq!(signal.wait_past(0, Duration::from_secs(10)), 1, "already past: no wait");
    }
}
