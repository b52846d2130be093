//! All four cores run, interrupt each other, and share memory under a spin lock.

use crate::ensure;
use crate::testkit::{Test, TestResult};
use a53_kernel::arch::cpu;
use a53_kernel::irq::{self, IntId, sgi};
use a53_kernel::smp;
use core::sync::atomic::{AtomicU32, Ordering};

pub const TESTS: &[Test] = &[
    Test::new("smp", "all_four_cores_online", all_online),
    Test::new("smp", "sgi_from_every_core_reaches_every_other_core", sgi_matrix),
    Test::new("smp", "spin_locked_counter_is_exact", counter),
];

/// The board's A53 cores (four on the ZynqMP).
const CORES: usize = <a53_kernel::Board as board::Board>::A53_CORES;
const ALL: u32 = (1 << CORES) - 1;

fn all_online() -> TestResult {
    ensure(smp::online_mask() == ALL, "not all of the board's A53 cores are online")
}

static RECEIVED: [AtomicU32; CORES] = [const { AtomicU32::new(0) }; CORES];

fn on_test_sgi(_: IntId) {
    RECEIVED[cpu::core_id()].fetch_add(1, Ordering::SeqCst);
}

fn sgi_matrix() -> TestResult {
    let id = IntId::sgi(sgi::TEST);
    irq::register(id, on_test_sgi, 0).map_err(|_| "test SGI already registered")?;
    let result = (|| {
        smp::run_on_all(&|_| irq::enable_private(id)).map_err(|_| "a core is offline")?;
        for sender in 0..CORES {
            for receiver in (0..CORES).filter(|&r| r != sender) {
                for r in &RECEIVED {
                    r.store(0, Ordering::SeqCst);
                }
                smp::run_on(sender, &|_| irq::send_sgi(sgi::TEST, 1 << receiver)).map_err(|_| "sender offline")?;
                // The receiver may be asleep in WFI; give it a bounded time to take the SGI.
                let deadline = a53_kernel::timer::now() + a53_kernel::timer::hz() / 2;
                while RECEIVED[receiver].load(Ordering::SeqCst) == 0 && a53_kernel::timer::now() < deadline {
                    core::hint::spin_loop();
                }
                ensure(RECEIVED[receiver].load(Ordering::SeqCst) == 1, "SGI not received exactly once")?;
                for (core, count) in RECEIVED.iter().enumerate() {
                    if core != receiver {
                        ensure(count.load(Ordering::SeqCst) == 0, "SGI delivered to a core it was not sent to")?;
                    }
                }
            }
        }
        Ok(())
    })();
    irq::unregister(id);
    result
}

fn counter() -> TestResult {
    const PER_CORE: u64 = 100_000;
    let counter = spin::Mutex::new(0u64);
    let ran = AtomicU32::new(0);
    smp::run_on_all(&|core| {
        ran.fetch_or(1 << core, Ordering::Relaxed);
        for _ in 0..PER_CORE {
            // A read-modify-write through a plain u64: only the lock makes it exact.
            let mut guard = counter.lock();
            let v = core::hint::black_box(*guard);
            *guard = v + 1;
        }
    })
    .map_err(|_| "a core is offline")?;
    ensure(ran.load(Ordering::Relaxed) == ALL, "not all cores counted")?;
    ensure(*counter.lock() == PER_CORE * CORES as u64, "the counter lost increments")
}
