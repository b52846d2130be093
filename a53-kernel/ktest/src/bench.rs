//! Benchmarks (boot argument `bench=NAME`): each prints `bench <name>: <value> <unit>` lines,
//! which `cargo xtask bench` collects. Figures from QEMU describe the emulator, not the board.

use crate::cluster_support::{barrier, publish, published, remote, wait_for, whoami};
use crate::gsas::{result_of, run_together};
use a53_kernel::rpu;
use board::layout::TEST_BUFFER;
use hal::mmio::write_u128;
use proto::ipc::op;

fn print_us(name: &str, ticks: u64) {
    let ns = a53_kernel::timer::timer().rate().ns_from_ticks(ticks);
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
    let mut samples = alloc::vec![0u64; READS];
    for s in samples.iter_mut() {
        let t0 = a53_kernel::timer::now();
        // The lock is taken per read (interrupts stay served between reads) and timed with it:
        // a few instructions against a forwarded round trip.
        core::hint::black_box(a53_kernel::cluster::with_sysblock(|block| block.scratch()));
        *s = a53_kernel::timer::now() - t0;
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
        let t0 = a53_kernel::timer::now();
        for _ in 0..ROUNDS {
            for i in 0..BYTES / 16 {
                let dst = remote::<u128>(1, TEST_BUFFER + i * 16);
                // SAFETY: node 1's TEST_BUFFER is reserved for tests and benchmarks.
                unsafe { write_u128(dst, value) };
            }
        }
        let ns = a53_kernel::timer::timer().rate().ns_from_ticks(a53_kernel::timer::now() - t0);
        let bytes = BYTES * ROUNDS;
        defmt::println!("bench window_copy_bytes: {=u64} B", bytes);
        defmt::println!("bench window_copy_ns: {=u64} ns", ns);
        defmt::println!("bench window_copy_throughput: {=u64} KiB/s", bytes * 1_000_000_000 / 1024 / ns.max(1));
    }
    barrier(2)?;
    wait_for(1, || true)
}

/// Processes per requesting node in the FAD benchmark (one per process core), and the requests
/// each keeps outstanding.
const FAD_PROCESSES: u64 = 2;
const FAD_WINDOW: u16 = 8;
const FAD_OPS: u64 = unimem_user::args::fad_bench::OPS as u64;

/// Runs `count` copies of `fad-bench` on this node; returns the nanoseconds until all ended.
fn fad_burst(counter: u64, count: u64) -> Result<u64, &'static str> {
    let counter = proto::gsas::GlobalAddress::from_raw(counter);
    let arg = unimem_user::args::fad_bench::pack(counter, FAD_WINDOW).ok_or("the counter is not a page")?;
    let t0 = a53_kernel::timer::now();
    run_together("fad-bench", arg, count as usize, 300)?;
    Ok(a53_kernel::timer::timer().rate().ns_from_ticks(a53_kernel::timer::now() - t0))
}

/// Remote FAD64 throughput with 1..=n requesting nodes, all on one counter on node 0. The
/// requesters join in the order 1, 2, 3, ..., and node 0 itself last (its requests take the
/// same packet path, to its own vmbox). Each requesting node prints how long its processes took;
/// the host divides the requests by the longest.
fn gsas_fad() -> Result<(), &'static str> {
    let (me, n) = whoami()?;
    barrier(10)?;
    if me == 0 {
        publish(3, result_of("alloc-counter", 0)?);
    }
    barrier(11)?;
    let counter = published(3);
    let rank = (me + n - 1) % n;
    for requesters in 1..=n {
        barrier(10 + 2 * u64::from(requesters))?;
        if rank < requesters {
            let ns = fad_burst(counter, FAD_PROCESSES)?;
            defmt::println!("bench gsas_fad_{=u16}_requesters_node{=u16}_ns: {=u64} ns", requesters, me, ns);
        }
        barrier(11 + 2 * u64::from(requesters))?;
    }
    if me == 0 {
        let total = result_of("read64", counter)?;
        let expected = (1..=u64::from(n)).sum::<u64>() * FAD_PROCESSES * FAD_OPS;
        defmt::println!("bench gsas_fad_requests_per_process: {=u64} requests", FAD_OPS);
        defmt::println!("bench gsas_fad_processes_per_node: {=u64} processes", FAD_PROCESSES);
        if total != expected {
            defmt::println!("counter {=u64}, expected {=u64}", total, expected);
            return Err("the counter is not the number of FADs");
        }
    }
    barrier(100)
}

/// Instructions the atomic service executes per FAD64 request (PMU, under `-icount`), from
/// one process's requests to its own node, one at a time.
fn gsas_service() -> Result<(), &'static str> {
    let counter = result_of("alloc-counter", u64::from(a53_kernel::gsas_node::node_id()))?;
    a53_kernel::gsas_node::profile::start()?;
    let ran = fad_burst(counter, 1);
    let mut samples = a53_kernel::gsas_node::profile::stop();
    ran?;
    if samples.len() < FAD_OPS as usize {
        return Err("fewer requests sampled than sent");
    }
    samples.sort_unstable();
    let n = samples.len();
    defmt::println!("bench gsas_service_requests_sampled: {=usize} requests", n);
    defmt::println!("bench gsas_service_instructions_per_fad_min: {=u32} instructions", samples[0]);
    defmt::println!("bench gsas_service_instructions_per_fad_median: {=u32} instructions", samples[n / 2]);
    defmt::println!("bench gsas_service_instructions_per_fad_p90: {=u32} instructions", samples[n * 9 / 10]);
    Ok(())
}

/// Runs benchmark `name`.
pub fn run(name: &str) -> a53_kernel::kernel::Stop {
    use a53_kernel::kernel::Stop;
    let result = match name {
        "platform" => {
            platform_single();
            Ok(())
        }
        "platform-window" => platform_window(),
        "gsas-fad" => gsas_fad(),
        "gsas-service" => gsas_service(),
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
