//! The R5's sleep as the platform serves it (`docs/hw/ipi.md`, "On QEMU").
//!
//! The R5 sleeps in the semihosting call SYS_READC, which halts its vCPU until a byte reaches
//! the semihosting console; `qemu-virt` holds that console's socket. [`R5Wake::wake`] writes the
//! byte, once per sleep, for whoever has work for the R5: the APU's IPI (the kernel's
//! doorbell), the PLDMA engine model when it posts events, and the R5's own timer, which
//! [`R5Wake::watch`] keeps: before each sleep the R5 announces it with one byte and the thread
//! arms a host timer for the sleep's `timeout_us`.

use crate::shm::Ddr;
use proto::ipc::IpcArea;
use proto::r5_sleep::{NO_TIMEOUT, SleepLine};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

type QemuBoard = board::zcu102_qemu::Zcu102Qemu;

/// Who woke the R5.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// The APU's IPI: the kernel queued a request (or a new boot nonce).
    Ipi,
    /// The PLDMA engine posted events (an ACK, a doorbell, ...).
    Engine,
    /// The sleep's timeout passed: the R5's timer.
    Timer,
}

/// Wakes counted by cause, and sleeps announced.
#[derive(Debug, Default)]
pub struct WakeCounters {
    pub ipi: AtomicU64,
    pub engine: AtomicU64,
    pub timer: AtomicU64,
    pub announced: AtomicU64,
}

impl WakeCounters {
    fn of(&self, cause: Cause) -> &AtomicU64 {
        match cause {
            Cause::Ipi => &self.ipi,
            Cause::Engine => &self.engine,
            Cause::Timer => &self.timer,
        }
    }
}

/// Wake bytes written so far, by every node's platform: the looker gives up its real-time class
/// when it sees this move (`platform::looker`), so that the QEMU main loop and the vCPU it must
/// wake get a core.
static WAKES_SENT: AtomicU64 = AtomicU64::new(0);

/// Wake bytes written so far in this process.
pub fn wakes_sent() -> u64 {
    WAKES_SENT.load(Ordering::Relaxed)
}

/// One node's R5 wake-up line: the sleep line in its DDR and the semihosting console's socket.
pub struct R5Wake {
    ddr: Arc<Ddr>,
    console: UnixStream,
    /// The sleep last woken (the platform is one waker, whichever thread wakes).
    last_woken: AtomicU32,
    pub counters: WakeCounters,
}

/// A woken sleep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Woken(pub u32);

impl R5Wake {
    /// Over `ddr`'s sleep line, writing wake bytes to `console` (the semihosting chardev's
    /// socket).
    pub fn new(ddr: Arc<Ddr>, console: UnixStream) -> Self {
        Self { ddr, console, last_woken: AtomicU32::new(0), counters: WakeCounters::default() }
    }

    fn line(&self) -> Option<&SleepLine> {
        // SAFETY: the IPC area's lines are atomics in shared memory; any bit pattern is valid.
        let area = unsafe { self.ddr.view::<IpcArea>(<QemuBoard as board::Board>::IPC_BASE) }?;
        Some(&area.r5_sleep)
    }

    /// The sleep the R5 is in, if it sleeps.
    pub fn sleeping(&self) -> Option<u32> {
        self.line()?.sleeper()
    }

    /// Work for the R5 was published (before this call): wakes it if it sleeps in a sleep not
    /// woken yet. Never blocks for long: at most one byte per sleep is ever unread.
    pub fn wake(&self, cause: Cause) -> Option<Woken> {
        let seq = self.sleeping()?;
        if self.last_woken.swap(seq, Ordering::AcqRel) == seq {
            return None;
        }
        // Counted first: whoever the byte wakes may look at the counts at once.
        self.counters.of(cause).fetch_add(1, Ordering::Relaxed);
        WAKES_SENT.fetch_add(1, Ordering::Relaxed);
        (&self.console).write_all(b"w").ok()?;
        Some(Woken(seq))
    }

    /// Serves the R5's sleep announcements from `announcements` (the console's read side) until
    /// QEMU closes it: arms the R5's timer for each sleep, and wakes the R5 when it expires in
    /// the same sleep. `on_tick` runs after every announcement and at least every `poll` while
    /// the R5 is awake (every second while it sleeps): the node drains the R5's trace there.
    pub fn watch(&self, mut announcements: UnixStream, poll: Duration, mut on_tick: impl FnMut()) {
        let mut timer: Option<(u32, Instant)> = None;
        let mut buf = [0u8; 64];
        loop {
            let asleep = self.sleeping().is_some();
            let idle_wait = if asleep { Duration::from_secs(1) } else { poll };
            let wait = match timer {
                Some((_, at)) => at.saturating_duration_since(Instant::now()).min(idle_wait),
                None => idle_wait,
            };
            let _ = announcements.set_read_timeout(Some(wait.max(Duration::from_micros(1))));
            match announcements.read(&mut buf) {
                Ok(0) => {
                    on_tick();
                    return;
                }
                Ok(n) => {
                    self.counters.announced.fetch_add(n as u64, Ordering::Relaxed);
                    timer = self.line().and_then(|line| {
                        let seq = line.sleeper()?;
                        let us = line.timeout_us();
                        (us != NO_TIMEOUT).then(|| (seq, Instant::now() + Duration::from_micros(u64::from(us))))
                    });
                }
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return,
            }
            if let Some((seq, at)) = timer
                && Instant::now() >= at
            {
                timer = None;
                if self.sleeping() == Some(seq) {
                    self.wake(Cause::Timer);
                }
            }
            on_tick();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rig() -> (tempfile::NamedTempFile, Arc<Ddr>, Arc<R5Wake>, UnixStream) {
        let file = tempfile::NamedTempFile::new().unwrap();
        file.as_file().set_len(4 << 20).unwrap();
        let ddr = Arc::new(Ddr::open(file.path()).unwrap());
        let (platform_end, guest_end) = UnixStream::pair().unwrap();
        (file, ddr.clone(), Arc::new(R5Wake::new(ddr, platform_end)), guest_end)
    }

    fn line(ddr: &Ddr) -> &SleepLine {
        // SAFETY: as in `R5Wake::line`.
        &unsafe { ddr.view::<IpcArea>(<QemuBoard as board::Board>::IPC_BASE) }.unwrap().r5_sleep
    }

    #[test]
    fn a_sleep_gets_one_byte_whoever_wakes_it_and_a_running_r5_none() {
        let (_dir, ddr, wake, mut guest) = rig();
        assert_eq!(wake.wake(Cause::Engine), None, "running");
        let seq = line(&ddr).begin(NO_TIMEOUT);
        assert_eq!(wake.wake(Cause::Ipi), Some(Woken(seq)));
        assert_eq!(wake.wake(Cause::Engine), None, "woken already");
        let mut b = [0u8; 8];
        guest.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
        assert_eq!(guest.read(&mut b).unwrap(), 1, "one byte");
        line(&ddr).end();
        line(&ddr).begin(NO_TIMEOUT);
        assert!(wake.wake(Cause::Engine).is_some(), "a new sleep is woken again");
        assert_eq!((wake.counters.ipi.load(Ordering::Relaxed), wake.counters.engine.load(Ordering::Relaxed)), (1, 1));
    }

    #[test]
    fn the_r5s_timer_wakes_an_announced_sleep_when_its_timeout_passes_and_not_before() {
        let (_dir, ddr, wake, mut guest) = rig();
        let watcher = {
            let wake = wake.clone();
            // The guest's announcements arrive on the platform's end of the console.
            let announcements = wake.console.try_clone().unwrap();
            std::thread::spawn(move || wake.watch(announcements, Duration::from_millis(10), || {}))
        };
        let start = Instant::now();
        line(&ddr).begin(30_000);
        guest.write_all(b"z").unwrap();
        let mut b = [0u8; 1];
        guest.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        assert_eq!(guest.read(&mut b).unwrap(), 1, "the timer woke the sleep");
        assert!(start.elapsed() >= Duration::from_millis(30), "not before its timeout");
        assert_eq!(wake.counters.timer.load(Ordering::Relaxed), 1);
        line(&ddr).end();
        // A sleep without a timeout is not woken by the timer.
        line(&ddr).begin(NO_TIMEOUT);
        guest.write_all(b"z").unwrap();
        guest.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
        assert!(guest.read(&mut b).is_err(), "no byte: only work ends this sleep");
        drop(guest);
        wake.console.shutdown(std::net::Shutdown::Both).unwrap();
        watcher.join().unwrap();
    }
}
