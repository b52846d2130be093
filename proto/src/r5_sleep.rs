//! How the R5 sleeps and who wakes it (`docs/hw/ipc.md`, "Waking the R5").
//!
//! The R5 sleeps when a round of its loop found nothing to do: on the board in WFI, woken by an
//! interrupt of its GIC (the APU's IPI, the PLDMA's line, its own timer); on QEMU in the
//! semihosting call SYS_READC, which halts its vCPU until `qemu-virt` writes one byte to the
//! semihosting console (`docs/hw/forwarding.md`, "The R5 on QEMU").
//!
//! No wake-up may be lost, and only loads, stores and full-system barriers are used on the
//! shared line (the A53 cluster and the RPU are not coherent, `ipc`):
//!
//! - The R5 publishes the number of the sleep it is going into ([`SleepLine::begin`]), issues a
//!   barrier, and then looks at every input once more (rings, engine events, work queues,
//!   its deadlines). Only if all are empty does it sleep.
//! - A producer publishes its work first, issues a barrier, then reads the line
//!   ([`SleepLine::sleeper`]) and, if the R5 is in a sleep, wakes it.
//!
//! One of the two always sees the other: either the producer reads the sleep (and wakes it) or
//! the R5's last look finds the work. A wake that comes after the R5 already left that sleep
//! (its last look found work) costs one spurious wake-up later, never a lost one. Each waker
//! remembers the sleep it last woke ([`Waker`]), so a sleep is woken at most once per waker.

use crate::ipc::system_barrier;
use core::sync::atomic::{AtomicU32, Ordering};

/// [`SleepLine::timeout_us`] when only news may end the sleep.
pub const NO_TIMEOUT: u32 = u32::MAX;

/// Written by the R5 only (one 64-byte line).
#[repr(C, align(64))]
pub struct SleepLine {
    /// 0 while the R5 runs (and looks at its inputs at every round); otherwise the number of
    /// the sleep it is in or going into (never 0).
    sleeping: AtomicU32,
    /// The longest the sleep may last, in microseconds ([`NO_TIMEOUT`]: no limit); written
    /// before `sleeping`.
    timeout_us: AtomicU32,
    /// The number of the last sleep begun, which is also how many there were (wrapping, 0
    /// skipped). It lives in shared memory so that the numbers go on across restarts of the
    /// firmware, and a waker's memory of an old sleep never matches a new one.
    last: AtomicU32,
    _pad: [u32; 13],
}

/// Written by the A53 only (one 64-byte line): the kernel's [`Waker`] state, kept in shared
/// memory so that any core holding the request ring's producer continues it. The kernel clears
/// it at every boot ([`A53WakeLine::reset`]): no sleep is numbered 0.
#[repr(C, align(64))]
pub struct A53WakeLine {
    /// The sleep the A53 last rang the R5's doorbell for.
    pub rang_for: AtomicU32,
    /// Doorbells rung so far (statistics).
    pub rings: AtomicU32,
    _pad: [u32; 14],
}

const _: () = assert!(core::mem::size_of::<SleepLine>() == 64);
const _: () = assert!(core::mem::size_of::<A53WakeLine>() == 64);

impl SleepLine {
    /// R5: goes into a new sleep of at most `timeout_us`, and returns its number. The caller
    /// then looks at its inputs once more and sleeps only if they are empty.
    pub fn begin(&self, timeout_us: u32) -> u32 {
        let seq = next_sleep(self.last.load(Ordering::Relaxed));
        self.last.store(seq, Ordering::Relaxed);
        self.timeout_us.store(timeout_us, Ordering::Relaxed);
        system_barrier();
        self.sleeping.store(seq, Ordering::Release);
        system_barrier();
        seq
    }

    /// R5: awake again (after the sleep, or instead of it when the last look found work).
    pub fn end(&self) {
        self.sleeping.store(0, Ordering::Release);
        system_barrier();
    }

    /// Producer, after publishing its work: the sleep the R5 is in, if any.
    pub fn sleeper(&self) -> Option<u32> {
        system_barrier();
        match self.sleeping.load(Ordering::Acquire) {
            0 => None,
            seq => Some(seq),
        }
    }

    /// The longest the current sleep may last ([`NO_TIMEOUT`]: no limit).
    pub fn timeout_us(&self) -> u32 {
        self.timeout_us.load(Ordering::Acquire)
    }

    /// The number of the last sleep begun: how many there were (wraps, skipping 0).
    pub fn last(&self) -> u32 {
        self.last.load(Ordering::Relaxed)
    }
}

/// The number of the sleep after `seq` (never 0).
pub const fn next_sleep(seq: u32) -> u32 {
    match seq.wrapping_add(1) {
        0 => 1,
        n => n,
    }
}

/// One waker's memory of the sleep it last woke: a producer that publishes several pieces of
/// work into one sleep wakes it once.
pub trait Waker {
    /// The sleep this waker last woke (0: none).
    fn last_woken(&self) -> u32;
    fn set_last_woken(&self, seq: u32);

    /// After publishing work: the sleep to wake, if the R5 is in one this waker has not woken
    /// yet. The caller then delivers the wake (IPI, semihosting byte). Single writer: callers
    /// of one waker are serialised (the A53 holds the request ring's lock).
    fn claim(&self, line: &SleepLine) -> Option<u32> {
        let seq = line.sleeper()?;
        if self.last_woken() == seq {
            return None;
        }
        self.set_last_woken(seq);
        Some(seq)
    }
}

impl A53WakeLine {
    /// Kernel, at boot: forgets the sleeps an earlier boot rang for.
    pub fn reset(&self) {
        self.rang_for.store(0, Ordering::Relaxed);
        self.rings.store(0, Ordering::Relaxed);
        system_barrier();
    }
}

impl Waker for A53WakeLine {
    fn last_woken(&self) -> u32 {
        self.rang_for.load(Ordering::Relaxed)
    }

    fn set_last_woken(&self, seq: u32) {
        self.rang_for.store(seq, Ordering::Relaxed);
        self.rings.store(self.rings.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::offset_of;
    use std::sync::Arc;
    use std::sync::atomic::AtomicU64;
    use std::sync::mpsc;
    use std::time::Duration;

    fn line() -> SleepLine {
        // SAFETY: all-zero atomics are a valid line of an R5 that runs.
        unsafe { core::mem::zeroed() }
    }

    struct HostWaker(AtomicU32);

    impl Waker for HostWaker {
        fn last_woken(&self) -> u32 {
            self.0.load(Ordering::Relaxed)
        }
        fn set_last_woken(&self, seq: u32) {
            self.0.store(seq, Ordering::Relaxed);
        }
    }

    /// The two lines' tables in `docs/hw/ipi.md`: every field at the offset the struct has.
    #[test]
    fn layout_matches_docs_hw_ipi() {
        const DOC: &str = include_str!("../../docs/hw/ipi.md");
        let fields = [
            ("sleeping", offset_of!(SleepLine, sleeping)),
            ("timeout_us", offset_of!(SleepLine, timeout_us)),
            ("last", offset_of!(SleepLine, last)),
            ("rang_for", offset_of!(A53WakeLine, rang_for)),
            ("rings", offset_of!(A53WakeLine, rings)),
        ];
        for (name, offset) in fields {
            let row = std::format!("| {offset:#04x} | 4 | `{name}`:");
            assert!(DOC.contains(&row), "docs/hw/ipi.md has no row {row}");
        }
        let area = |field, offset: usize| DOC.contains(&std::format!("`{field}` (offset {offset:#x}"));
        assert!(area("r5_sleep", offset_of!(crate::ipc::IpcArea, r5_sleep)), "r5_sleep's place in the IPC area");
        assert!(area("a53_wake", offset_of!(crate::ipc::IpcArea, a53_wake)), "a53_wake's place in the IPC area");
    }

    #[test]
    fn a_sleep_is_woken_once_per_waker_and_never_while_running() {
        let line = line();
        let waker = HostWaker(AtomicU32::new(0));
        assert_eq!(waker.claim(&line), None, "a running R5 needs no wake");
        assert_eq!(line.begin(250), 1);
        assert_eq!((line.timeout_us(), line.last()), (250, 1));
        assert_eq!(waker.claim(&line), Some(1));
        assert_eq!(waker.claim(&line), None, "already woken");
        line.end();
        assert_eq!(waker.claim(&line), None, "running again");
        assert_eq!(line.begin(NO_TIMEOUT), 2);
        assert_eq!(waker.claim(&line), Some(2), "the next sleep is woken again");
        line.last.store(u32::MAX, Ordering::Relaxed);
        assert_eq!(line.begin(NO_TIMEOUT), 1, "0 means running: never a sleep's number");
    }

    /// The protocol under a real race: a producer thread publishes work items one at a time,
    /// wakes the R5 the protocol's way and waits until the item is taken; the "R5" thread
    /// sleeps (blocks on a channel that stands for the semihosting byte) whenever its last look
    /// finds nothing. Each item races one sleep: a lost wake-up leaves the sleeper blocked and
    /// the bounded waits fail the test.
    #[test]
    fn no_wake_up_is_lost_between_a_producer_and_a_sleeping_r5() {
        const ITEMS: u64 = 20_000;
        let line = Arc::new(line());
        let (posted, taken) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let (bytes, wakes) = mpsc::channel::<()>();
        let r5 = {
            let (line, posted, taken) = (line.clone(), posted.clone(), taken.clone());
            std::thread::spawn(move || {
                let (mut sleeps, mut spurious) = (0u64, 0u64);
                while taken.load(Ordering::Relaxed) < ITEMS {
                    let now = posted.load(Ordering::Acquire);
                    if now > taken.load(Ordering::Relaxed) {
                        taken.store(now, Ordering::Release);
                        continue;
                    }
                    line.begin(NO_TIMEOUT);
                    if posted.load(Ordering::Acquire) > now {
                        line.end();
                        continue;
                    }
                    sleeps += 1;
                    if wakes.recv_timeout(Duration::from_secs(10)).is_err() {
                        return Err("a wake-up was lost");
                    }
                    line.end();
                    if posted.load(Ordering::Acquire) == now {
                        spurious += 1;
                    }
                }
                Ok((sleeps, spurious))
            })
        };
        let waker = HostWaker(AtomicU32::new(0));
        for i in 1..=ITEMS {
            posted.store(i, Ordering::Release);
            if waker.claim(&line).is_some() {
                let _ = bytes.send(());
            }
            let give_up = std::time::Instant::now() + Duration::from_secs(10);
            while taken.load(Ordering::Acquire) < i && !r5.is_finished() {
                assert!(std::time::Instant::now() < give_up, "item {i} was never taken: a wake-up was lost");
                std::thread::yield_now();
            }
        }
        let (sleeps, spurious) = r5.join().unwrap().unwrap();
        assert!(sleeps > ITEMS / 2, "the sleeper slept {sleeps} times: the race was not run");
        assert!(spurious <= sleeps, "{spurious} spurious wake-ups in {sleeps} sleeps");
    }
}
