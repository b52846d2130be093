//! Benchmarks (boot argument `bench=NAME`): each prints `bench <name>: <value> <unit>` lines,
//! which `cargo xtask bench` collects. Figures from QEMU describe the emulator, not the board.

use super::cluster_support::{barrier, remote, wait_for, whoami};
use crate::rpu;
use board::layout::TEST_BUFFER;
use core::arch::asm;
use hal::ipc::op;

fn print_us(name: &str, ticks: u64) {
    let ns = crate::timer::timer().rate().ns_from_ticks(ticks);
    defmt::println!("bench {=str}: {=u64}.{=u64:03} us", name, ns / 1000, ns % 1000);
}

/// Median and p99 of `samples` (sorted in place).
fn percentiles(samples: &mut [u64]) -> (u64, u64) {
    samples.sort_unstable();
    let n = samples.len();
    (samples[n / 2], samples[(n * 99).div_ceil(100) - 1])
}

/// Forwarded MMIO round trip, A53 and R5: reads of the system block's scratch register.
fn platform_single() {
    const READS: usize = 10_000;
    let block = crate::kernel::sysblock();
    let mut samples = alloc::vec![0u64; READS];
    for s in samples.iter_mut() {
        let t0 = crate::timer::now();
        core::hint::black_box(block.scratch());
        *s = crate::timer::now() - t0;
    }
    let (median, p99) = percentiles(&mut samples);
    print_us("a53_forwarded_round_trip_median", median);
    print_us("a53_forwarded_round_trip_p99", p99);
    if rpu::is_started() {
        match rpu::call(op::PL_PROBE, [0, op::PL_PROBE_MAX_READS, 0, 0, 0, 0, 0]) {
            // The R5's cycle counter runs at QEMU's nominal 1 GHz: cycles are nanoseconds.
            Ok(r) => {
                let us = |ns: u64| (ns / 1000, ns % 1000);
                let (m, p) = (us(r.args[4]), us(r.args[5]));
                defmt::println!("bench r5_forwarded_round_trip_median: {=u64}.{=u64:03} us", m.0, m.1);
                defmt::println!("bench r5_forwarded_round_trip_p99: {=u64}.{=u64:03} us", p.0, p.1);
            }
            Err(_) => defmt::println!("bench r5_forwarded_round_trip: no answer from the R5"),
        }
    }
}

/// Global-window copy throughput from node 0 to node 1 (1 MiB of 128-bit stores).
fn platform_window() -> Result<(), &'static str> {
    const BYTES: u64 = 256 * 1024;
    const ROUNDS: u64 = 4;
    let (me, n) = whoami()?;
    if n < 2 {
        return Err("the window benchmark needs two nodes");
    }
    barrier(1)?;
    if me == 0 {
        let value: u128 = 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210;
        let t0 = crate::timer::now();
        for _ in 0..ROUNDS {
            for i in 0..BYTES / 16 {
                let dst = remote::<u128>(1, TEST_BUFFER + i * 16);
                // SAFETY: node 1's TEST_BUFFER is reserved for tests and benchmarks.
                unsafe {
                    asm!("ldr {t:q}, [{src}]", "str {t:q}, [{dst}]", src = in(reg) &value, dst = in(reg) dst, t = out(vreg) _)
                };
            }
        }
        let ns = crate::timer::timer().rate().ns_from_ticks(crate::timer::now() - t0);
        let bytes = BYTES * ROUNDS;
        defmt::println!("bench window_copy_bytes: {=u64} B", bytes);
        defmt::println!("bench window_copy_ns: {=u64} ns", ns);
        defmt::println!("bench window_copy_throughput: {=u64} KiB/s", bytes * 1_000_000_000 / 1024 / ns.max(1));
    }
    barrier(2)?;
    wait_for(1, || true)
}

/// Runs benchmark `name`.
pub fn run(name: &str) -> crate::kernel::Stop {
    use crate::kernel::Stop;
    let result = match name {
        "platform" => {
            platform_single();
            Ok(())
        }
        "platform-window" => platform_window(),
        // Nothing after the boot itself: the host times boot-to-ready.
        "boot" => Ok(()),
        _ => Err("unknown benchmark"),
    };
    match result {
        Ok(()) => {
            defmt::println!("bench done");
            Stop::Success
        }
        Err(why) => {
            defmt::println!("bench failed: {=str}", why);
            Stop::Failure
        }
    }
}
