//! Benchmarks (boot argument `bench=NAME`): each prints `bench <name>: <value> <unit>` lines,
//! which `cargo xtask bench` collects. Figures from QEMU describe the emulator, not the board.

use crate::cluster_support::{barrier, barrier_within, patient_barrier, publish, published, remote, wait_for, whoami};
use crate::gsas::{result_of, run_together};
use a53_kernel::exception::forward;
use a53_kernel::rpu;
use board::layout::TEST_BUFFER;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use hal::mmio::write_u128_pair;
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
        // The A53 sleeps while the R5 reads: spinning, its vCPU would take the host CPU the R5's
        // reads are timed on.
        match rpu::call_patiently(op::PL_PROBE, [0, op::PL_PROBE_MAX_READS, 0, 0, 0, 0, 0]) {
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

/// How long the R5 takes to wake: PING round trips to a sleeping R5 (the request rings the
/// APU's IPI doorbell, which on QEMU the platform turns into the semihosting byte that ends the
/// R5's SYS_READC) against round trips to an awake one (sent right after the last reply, while
/// the R5 still looks for work). The difference of the medians is the wake-up's cost.
fn platform_r5_wake() -> Result<(), &'static str> {
    use a53_kernel::timer;
    const PINGS: usize = 200;
    let ping = || -> Result<u64, &'static str> {
        let t0 = timer::now();
        rpu::call(op::PING, [0; 7]).map_err(|_| "the R5 did not answer a PING")?;
        Ok(timer::now() - t0)
    };
    let (mut asleep, mut awake) = (alloc::vec![0u64; PINGS], alloc::vec![0u64; PINGS]);
    let (_, rings_before) = rpu::r5_sleep_state().ok_or("no R5")?;
    for i in 0..PINGS {
        let give_up = timer::now() + timer::hz();
        // The R5 sleeps once it has found no work for a while (200 us of its clock).
        while !rpu::r5_sleep_state().is_some_and(|(sleeping, _)| sleeping) {
            if timer::now() > give_up {
                return Err("the R5 did not go to sleep within a second");
            }
            core::hint::spin_loop();
        }
        asleep[i] = ping()?;
        awake[i] = ping()?;
    }
    let (_, rings_after) = rpu::r5_sleep_state().ok_or("no R5")?;
    if rings_after.wrapping_sub(rings_before) < PINGS as u32 {
        return Err("a PING to the sleeping R5 rang no doorbell");
    }
    let (asleep_median, asleep_p99) = percentiles(&mut asleep);
    let (awake_median, awake_p99) = percentiles(&mut awake);
    print_us("r5_asleep_ping_round_trip_median", asleep_median);
    print_us("r5_asleep_ping_round_trip_p99", asleep_p99);
    print_us("r5_awake_ping_round_trip_median", awake_median);
    print_us("r5_awake_ping_round_trip_p99", awake_p99);
    Ok(())
}

/// How late a timer interrupt comes: one-shot alarms on core 1 (which has no periodic tick),
/// each 1 ms ahead; the counter in the handler minus the deadline. On QEMU that is mostly the
/// host's latency in raising the interrupt from its timer thread.
fn platform_alarm_latency() -> Result<(), &'static str> {
    use a53_kernel::{smp, timer};
    const ALARMS: usize = 200;
    let (median, p99, missed) = (AtomicU64::new(0), AtomicU64::new(0), AtomicBool::new(false));
    smp::run_on(1, &|_| {
        let mut samples = alloc::vec![0u64; ALARMS];
        for s in samples.iter_mut() {
            let deadline = timer::now() + timer::hz() / 1000;
            match crate::timer::wait_for_alarm(deadline, deadline + timer::hz()).fired {
                Some(fired) => *s = fired - deadline,
                None => return missed.store(true, Ordering::Relaxed),
            }
        }
        let (m, p) = percentiles(&mut samples);
        median.store(m, Ordering::Relaxed);
        p99.store(p, Ordering::Relaxed);
    })
    .map_err(|_| "core 1 offline")?;
    if missed.load(Ordering::Relaxed) {
        return Err("an alarm did not fire within a second of its deadline");
    }
    print_us("timer_alarm_latency_median", median.load(Ordering::Relaxed));
    print_us("timer_alarm_latency_p99", p99.load(Ordering::Relaxed));
    Ok(())
}

/// Where a forwarded read of the system block's scratch register spends its time: the medians
/// of each part over many reads, in nanoseconds (`clock` = ticks) or instructions (under
/// `-icount`). The parts: the guest's trap, decode and return (the access's total minus the
/// kick and the wait), the kick, and the wait, split into the host's model and the rest
/// (wake-up, pick-up and reply), separately for the reads that kicked a sleeping host and
/// those that found it awake.
fn platform_breakdown(clock: forward::TimingClock) -> Result<(), &'static str> {
    const READS: usize = 4000;
    let instructions = clock == forward::TimingClock::Instructions;
    if instructions && !a53_kernel::arch::pmu::count_instructions() {
        return Err("the PMU counts no instructions (run under -icount)");
    }
    let now = || if instructions { u64::from(a53_kernel::arch::pmu::instructions()) } else { a53_kernel::timer::now() };
    let to_unit = |v: u64| if instructions { v } else { a53_kernel::timer::timer().rate().ns_from_ticks(v) };
    let (mut guest, mut kick, mut model) = (alloc::vec![], alloc::vec![], alloc::vec![]);
    let (mut rest_kicked, mut rest_awake) = (alloc::vec![], alloc::vec![]);
    let mut kicked_late = 0usize;
    forward::time_accesses(clock);
    for _ in 0..READS {
        let t0 = now();
        core::hint::black_box(a53_kernel::cluster::with_sysblock(|block| block.scratch()));
        let total = now().wrapping_sub(t0);
        let t = forward::last_timing();
        guest.push(to_unit(total.saturating_sub(t.kick + t.wait)));
        model.push(u64::from(t.model_ns));
        let wait_ns = to_unit(t.wait);
        let rest = wait_ns.saturating_sub(u64::from(t.model_ns));
        if t.kicked {
            kick.push(to_unit(t.kick));
            rest_kicked.push(rest);
        } else if t.kicked_late {
            kicked_late += 1;
        } else {
            rest_awake.push(rest);
        }
    }
    forward::time_accesses(forward::TimingClock::Off);
    let median = |v: &mut alloc::vec::Vec<u64>| {
        v.sort_unstable();
        v.get(v.len() / 2).copied()
    };
    if instructions {
        let g = median(&mut guest).ok_or("no samples")?;
        defmt::println!("bench a53_forward_guest_trap_decode_return: {=u64} instructions", g);
        return Ok(());
    }
    defmt::println!("bench a53_forward_reads_timed: {=usize} reads", READS);
    defmt::println!("bench a53_forward_reads_that_kicked: {=usize} reads", kick.len());
    defmt::println!("bench a53_forward_reads_that_kicked_late: {=usize} reads", kicked_late);
    let print = |name: &str, v: Option<u64>| match v {
        Some(ns) => defmt::println!("bench {=str}: {=u64}.{=u64:03} us", name, ns / 1000, ns % 1000),
        None => defmt::println!("bench {=str}: none measured", name),
    };
    print("a53_forward_guest_trap_decode_return_median", median(&mut guest));
    print("a53_forward_kick_median", median(&mut kick));
    print("a53_forward_host_model_median", median(&mut model));
    print("a53_forward_wake_pickup_reply_after_a_kick_median", median(&mut rest_kicked));
    print("a53_forward_pickup_reply_host_awake_median", median(&mut rest_awake));
    Ok(())
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
        // 32 bytes a store (`stp q, q`), as an optimised memcpy writes: one forwarded request.
        for _ in 0..ROUNDS {
            for i in 0..BYTES / 32 {
                let dst = remote::<u128>(1, TEST_BUFFER + i * 32);
                // SAFETY: node 1's TEST_BUFFER is reserved for tests and benchmarks.
                unsafe { write_u128_pair(dst, [value, !value]) };
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

/// Remote FAD64 throughput with 1..=n requesting nodes, all on one counter on node 0, after an
/// untimed warm-up. The requesters join in the order 1, 2, 3, ..., and node 0 itself last (its
/// requests take the same packet path, to its own vmbox). Each requesting node prints how long its processes took;
/// the host divides the requests by the longest.
fn gsas_fad() -> Result<(), &'static str> {
    let (me, n) = whoami()?;
    barrier(10)?;
    if me == 0 {
        publish(3, result_of("alloc-counter", 0)?);
    }
    barrier(11)?;
    let counter = published(3);
    // A warm-up on every node, untimed: the first requests of a boot also pay for QEMU
    // translating the code they run (the client's, the service's and the kernels' paths).
    fad_burst(counter, FAD_PROCESSES)?;
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
        let warm_up = u64::from(n);
        let expected = (warm_up + (1..=u64::from(n)).sum::<u64>()) * FAD_PROCESSES * FAD_OPS;
        defmt::println!("bench gsas_fad_requests_per_process: {=u64} requests", FAD_OPS);
        defmt::println!("bench gsas_fad_processes_per_node: {=u64} processes", FAD_PROCESSES);
        if total != expected {
            defmt::println!("counter {=u64}, expected {=u64}", total, expected);
            return Err("the counter is not the number of FADs");
        }
    }
    barrier(100)
}

/// FADs a `fad-latency` run times, writes an `rdma-bench` run makes, and runs of each per
/// target, in the full and the quick form (boot argument `ranks-cost-quick`: the runner's check
/// that the bench runs).
const RANKS_COST_FULL: (u16, u16, u32) = (300, 16, 7);
const RANKS_COST_QUICK: (u16, u16, u32) = (40, 2, 2);
/// The size of the timed RDMA writes: 64 KiB.
const RANKS_COST_WRITE_LOG2: u8 = 16;

/// The cost of a remote FAD64 and of a 64 KiB RDMA write from node 0 to a node of its own rank
/// and to one of another (`cargo xtask bench ranks`, a cluster over MPI ranks; the host names
/// the two nodes, `ranks-cost-near=N ranks-cost-far=M`). After an untimed warm-up of each,
/// ended by `bench ranks_cost_warm_up_done`, every repetition runs `fad-latency` to a counter
/// on each node, then `rdma-bench` writes to each, the two targets alternating so that both see
/// the same load; the programs log a median per run (`fad64_to_node<N>_median_us`,
/// `rdma_write_65536b_to_node<N>_median_us`). The other nodes wait at the barrier.
fn ranks_cost() -> Result<(), &'static str> {
    use unimem_user::args::{fad_latency, rdma_bench};
    let (me, _) = whoami()?;
    let args = a53_kernel::kernel::boot_args();
    let node = |name: &str| args.value(name).and_then(|v| v.parse::<u16>().ok());
    let (fads, writes, reps) = if args.flag("ranks-cost-quick") { RANKS_COST_QUICK } else { RANKS_COST_FULL };
    barrier(40)?;
    let drive = || {
        let (Some(near), Some(far)) = (node("ranks-cost-near"), node("ranks-cost-far")) else {
            return Err("no ranks-cost-near=N and ranks-cost-far=M boot arguments");
        };
        let mut counters = [0u64; 2];
        for (counter, target) in counters.iter_mut().zip([near, far]) {
            *counter = result_of("alloc-counter", u64::from(target))?;
        }
        let counter_arg = |counter: u64, count: u16| {
            fad_latency::pack(proto::gsas::GlobalAddress::from_raw(counter), count).ok_or("the counter is not a page")
        };
        let round = |fads: u16, writes: u16| -> Result<(), &'static str> {
            for counter in counters {
                let exit = crate::gsas::run("fad-latency", counter_arg(counter, fads)?)?;
                crate::gsas::judge("fad-latency", exit, 0)?;
            }
            for target in [near, far] {
                let role = rdma_bench::Role::Writes { node: target, count: writes, log2: RANKS_COST_WRITE_LOG2 };
                crate::gsas::judge("rdma-bench", crate::gsas::run("rdma-bench", rdma_bench::pack(role))?, 0)?;
            }
            Ok(())
        };
        round(fads.min(20), 1)?;
        defmt::println!("bench ranks_cost_warm_up_done: {=u32} repetitions follow", reps);
        for _ in 0..reps {
            round(fads, writes)?;
        }
        Ok(())
    };
    let result = if me == 0 { drive() } else { Ok(()) };
    // The others wait out node 0's runs, looking less often as they wait: their looks are
    // window loads, across ranks MPI round trips, which the timed FADs would compete with.
    patient_barrier(41, 600)?;
    result
}

/// How long every node keeps busy in `busy` without a `busy-seconds=N` boot argument.
const BUSY_SECONDS: u64 = 12;

/// A cluster at work, for the host CPU a busy node takes (`cargo xtask bench idle`): every node
/// sends FAD64s to a counter on the next node, bursts of `fad-bench` processes (one per process
/// core) one after the other, for `busy-seconds` (the host measures meanwhile), between
/// `bench busy_start` and `bench busy_end` lines.
fn busy() -> Result<(), &'static str> {
    use a53_kernel::timer;
    let (me, n) = whoami()?;
    let seconds = a53_kernel::kernel::boot_args().value("busy-seconds").and_then(|v| v.parse().ok());
    let seconds: u64 = seconds.unwrap_or(BUSY_SECONDS);
    let counter = result_of("alloc-counter", u64::from((me + 1) % n))?;
    barrier(50)?;
    defmt::println!("bench busy_start: {=u64} s", seconds);
    let until = timer::now() + seconds * timer::hz();
    let mut bursts = 0u64;
    while timer::now() < until {
        fad_burst(counter, FAD_PROCESSES)?;
        bursts += 1;
    }
    defmt::println!("bench busy_end: {=u64} FADs", bursts * FAD_PROCESSES * FAD_OPS);
    barrier_within(51, 120)
}

/// Instructions the atomic service executes per FAD64 request (PMU, under `-icount`), from
/// one process's requests to its own node, one at a time.
fn gsas_service() -> Result<(), &'static str> {
    let counter = result_of("alloc-counter", u64::from(a53_kernel::cluster::node_id()))?;
    a53_kernel::gsas_node::profile::start()?;
    let forwarded_before = forward::forwarded_count();
    let ran = fad_burst(counter, 1);
    let forwarded = forward::forwarded_count() - forwarded_before;
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
    // Every forwarded access of the node while one process did its FADs: its requests and
    // reply reads, the service's MIF reads and PIF writes, and the spawn and exit around them.
    defmt::println!("bench gsas_forwarded_accesses: {=u64} accesses", forwarded);
    defmt::println!("bench gsas_fads_sent: {=u64} requests", FAD_OPS);
    Ok(())
}

/// Counters of this node around one `rdma-bench` run.
struct RdmaSnapshot {
    a53_forwarded: u64,
    r5: proto::rdma::ipc::RdmaStats,
    packets: u64,
}

fn rdma_snapshot() -> Result<RdmaSnapshot, &'static str> {
    use hal::pldma::regs::Counter;
    let a53_forwarded = forward::forwarded_count();
    let r5 = crate::rdma::stats()?;
    let count = |c| a53_kernel::rdma_node::engine_counter(c).ok_or("no PLDMA engine");
    let packets = count(Counter::PacketsSent)? + count(Counter::PacketsReceived)?;
    Ok(RdmaSnapshot { a53_forwarded, r5, packets })
}

/// Runs `rdma-bench` with `count` writes of 2^`log2` bytes to `node` and prints what this
/// node's counters moved by, as `rdma_<phase>_<counter>` lines. The host takes differences of
/// two phases that differ only in `count`, so the program's start, its peer and its end cancel.
fn rdma_phase(phase: &str, node: u16, count: u16, log2: u8) -> Result<(), &'static str> {
    use unimem_user::args::rdma_bench::{Role, pack};
    let before = rdma_snapshot()?;
    let exit = crate::gsas::run("rdma-bench", pack(Role::Writes { node, count, log2 }))?;
    let after = rdma_snapshot()?;
    if exit != a53_kernel::process::table::Exit::Status(0) {
        defmt::println!("rdma-bench {=str} ended with {}", phase, defmt::Debug2Format(&exit));
        return Err("rdma-bench failed");
    }
    let (b, a) = (&before.r5, &after.r5);
    // The R5's forwarding cycles are a wrapping 32-bit count.
    let forwarded_cycles = (a.forwarded_cycles as u32).wrapping_sub(b.forwarded_cycles as u32);
    let lines: [(&str, u64, &str); 11] = [
        ("transfers", u64::from(count), "transfers"),
        ("bytes_each", 1 << log2, "B"),
        ("a53_forwarded", after.a53_forwarded - before.a53_forwarded, "accesses"),
        ("r5_forwarded", a.forwarded_accesses.wrapping_sub(b.forwarded_accesses) & 0xffff_ffff, "accesses"),
        ("r5_forwarded_cycles", u64::from(forwarded_cycles), "cycles"),
        ("r5_busy_cycles", a.busy_cycles - b.busy_cycles, "cycles"),
        ("r5_busy_rounds", a.busy_rounds - b.busy_rounds, "rounds"),
        ("r5_blocks", a.blocks_sent - b.blocks_sent, "blocks"),
        ("packets", after.packets.wrapping_sub(before.packets), "packets"),
        (
            "retransmits",
            (a.timeout_retransmits + a.nack_retransmits) - (b.timeout_retransmits + b.nack_retransmits),
            "blocks",
        ),
        ("failed", a.transfers_failed - b.transfers_failed, "transfers"),
    ];
    for (name, value, unit) in lines {
        defmt::println!("bench rdma_{=str}_{=str}: {=u64} {=str}", phase, name, value, unit);
    }
    Ok(())
}

/// The RDMA benchmark's phases (`cargo xtask bench rdma`), on node 0 towards `target`: small
/// writes (two counts) and large ones (two counts). `icount`: one node under `-icount`, where
/// the R5's cycle counter counts instructions; its timeout is raised, since virtual time there
/// runs with the instructions of every core the single emulation thread runs.
fn rdma(icount: bool) -> Result<(), &'static str> {
    let (me, n) = whoami()?;
    if !icount && n < 2 {
        return Err("the RDMA benchmark needs two nodes");
    }
    barrier(20)?;
    let drive = || {
        if !a53_kernel::rdma_node::available() {
            return Err("this node has no RDMA");
        }
        if icount {
            rpu::call(op::RDMA_CONFIG, [2_000_000, 0, 0, 0, 0, 0, 0]).map_err(|_| "no RDMA_CONFIG reply")?;
        }
        let target = if icount { me } else { 1 };
        let (small, big_log2) = if icount { ([4, 20], 22) } else { ([8, 40], 24) };
        rdma_phase("small_a", target, small[0], 4)?;
        rdma_phase("small_b", target, small[1], 4)?;
        rdma_phase("big_a", target, 1, big_log2)?;
        rdma_phase("big_b", target, 2, big_log2)
    };
    let result = if me == 0 { drive() } else { Ok(()) };
    // A failure on node 0 still reaches the barrier, or the others wait for it in vain; the
    // others wait out node 0's runs.
    barrier_within(21, 600)?;
    result
}

/// Page faults during RDMA (`cargo xtask bench pagefault`), on this node: `rdma-faults` Time
/// runs for each way of answering faults (tag 0 touch-ahead, 1 touch-a-page, both in terminate
/// mode; 2 touch-ahead in SMMU stall mode), size and side, resident and faulting (the program
/// prints their median times), and for the faulting ones how this node's counters moved:
/// `pagefault_<tag>_<side>_<bytes>b_<counter>: <value>` lines. With `icount` only 16 KiB with
/// touch-ahead (tags 0 and 2), where the instructions of a fault interrupt count, and each
/// forwarded access is timed so that its share can be told apart.
fn pagefault(icount: bool) -> Result<(), &'static str> {
    use a53_kernel::mm::user_space::Touch;
    use a53_kernel::process::paging;
    use a53_kernel::rdma_node;
    use unimem_user::args::rdma_faults::{Role, Side, pack};
    if !rdma_node::available() {
        return Err("this node has no RDMA");
    }
    if icount {
        if !a53_kernel::arch::pmu::count_instructions() {
            return Err("the PMU counts no instructions (QEMU counts them only under -icount)");
        }
        rpu::call(op::RDMA_CONFIG, [2_000_000, 0, 0, 0, 0, 0, 0]).map_err(|_| "no RDMA_CONFIG reply")?;
        forward::time_accesses(forward::TimingClock::Instructions);
    }
    let ways: &[(u8, Touch, bool)] = if icount {
        &[(0, Touch::Block, false), (2, Touch::Block, true)]
    } else {
        &[(0, Touch::Block, false), (1, Touch::Page, false), (2, Touch::Block, true)]
    };
    let sizes: &[u8] = if icount { &[14] } else { &[14, 15, 16] };
    let mut result = Ok(());
    for &(tag, touch, stall) in ways {
        paging::set_rdma_touch(touch);
        let mode = rdma_node::set_stall_mode(stall);
        for &log2 in sizes {
            for (side, name) in [(Side::Source, "source"), (Side::Destination, "destination")] {
                for faulting in [false, true] {
                    let before = (rdma_node::counters(), crate::rdma::stats()?, forward::forwarded_count());
                    let exit = crate::gsas::run("rdma-faults", pack(Role::Time { log2, side, faulting, tag }))?;
                    let after = (rdma_node::counters(), crate::rdma::stats()?, forward::forwarded_count());
                    if exit != a53_kernel::process::table::Exit::Status(0) {
                        defmt::println!("rdma-faults Time ended with {}", defmt::Debug2Format(&exit));
                        result = Err("rdma-faults failed");
                        continue;
                    }
                    if !faulting {
                        continue;
                    }
                    let (k, r) = ((&before.0, &after.0), (&before.1, &after.1));
                    let lines: [(&str, u64); 11] = [
                        ("blocks", r.1.blocks_sent - r.0.blocks_sent),
                        ("fault_irqs", k.1.fault_irqs - k.0.fault_irqs),
                        ("fault_irq_instructions", k.1.fault_irq_instructions - k.0.fault_irq_instructions),
                        ("fault_irq_forwarding", k.1.fault_irq_forwarding - k.0.fault_irq_forwarding),
                        ("stall_irqs", k.1.stall_irqs - k.0.stall_irqs),
                        ("stall_irq_instructions", k.1.stall_irq_instructions - k.0.stall_irq_instructions),
                        ("stall_irq_forwarding", k.1.stall_irq_forwarding - k.0.stall_irq_forwarding),
                        ("timeouts", r.1.timeout_retransmits - r.0.timeout_retransmits),
                        ("faults_resolved", k.1.faults_resolved - k.0.faults_resolved),
                        ("a53_forwarded", after.2 - before.2),
                        ("resolve_instructions", k.1.resolve_instructions - k.0.resolve_instructions),
                    ];
                    for (counter, value) in lines {
                        defmt::println!(
                            "bench pagefault_{=u8}_{=str}_{=u64}b_{=str}: {=u64}",
                            tag,
                            name,
                            1u64 << log2,
                            counter,
                            value
                        );
                    }
                }
            }
        }
        rdma_node::set_stall_mode(mode);
    }
    paging::set_rdma_touch(Touch::Block);
    forward::time_accesses(forward::TimingClock::Off);
    result
}

/// The Active Access handler's instructions per log entry (`cargo xtask bench active`), on one
/// node under `-icount` with its R5: `active-checkpoint` HandlerInstructions puts to its own
/// put-logging pages and reads the PMU around `Log::poll` itself. For that, every core counts
/// instructions and lets EL0 read the counters, for this program only; the R5's timeout is
/// raised (virtual time runs with the instructions of every core).
fn active_handler() -> Result<(), &'static str> {
    use a53_kernel::{arch::pmu, smp};
    use unimem_user::args::active_checkpoint::{Role, pack};
    if !a53_kernel::rdma_node::available() {
        return Err("this node has no RDMA");
    }
    let counting = AtomicBool::new(true);
    smp::run_on_all(&|_| {
        if !pmu::count_instructions() {
            counting.store(false, Ordering::Relaxed);
        }
        pmu::allow_el0_reads(true);
    })
    .map_err(|_| "a core is offline")?;
    let result = if counting.load(Ordering::Relaxed) {
        rpu::call(op::RDMA_CONFIG, [2_000_000, 0, 0, 0, 0, 0, 0]).map_err(|_| "no RDMA_CONFIG reply")?;
        crate::gsas::run("active-checkpoint", pack(Role::HandlerInstructions))
            .and_then(|exit| crate::gsas::judge("active-checkpoint", exit, 0))
    } else {
        Err("the PMU counts no instructions (QEMU counts them only under -icount)")
    };
    smp::run_on_all(&|_| pmu::allow_el0_reads(false)).map_err(|_| "a core is offline")?;
    result
}

/// Runs benchmark `name`.
pub fn run(name: &str) -> a53_kernel::kernel::Stop {
    use a53_kernel::kernel::Stop;
    let result = match name {
        "platform" => {
            platform_single();
            platform_alarm_latency().and_then(|()| platform_r5_wake())
        }
        "platform-window" => platform_window(),
        "platform-breakdown" => platform_breakdown(forward::TimingClock::Ticks),
        "platform-breakdown-icount" => platform_breakdown(forward::TimingClock::Instructions),
        "gsas-fad" => gsas_fad(),
        "ranks-cost" => ranks_cost(),
        "busy" => busy(),
        "gsas-service" => gsas_service(),
        "rdma" => rdma(false),
        "rdma-icount" => rdma(true),
        "pagefault" => pagefault(false),
        "sockets" => sockets(false),
        "sockets-icount" => sockets(true),
        "pagefault-icount" => pagefault(true),
        "active-icount" => active_handler(),
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

/// What a socket phase moved on this node: the engine's packets, the doorbells, the forwarded
/// accesses of the A53s and the R5, the R5's busy cycles, and (under `-icount`, where every
/// vCPU of the node shares the count) the instructions.
struct SocketSnapshot {
    rdma: RdmaSnapshot,
    doorbells: u64,
    instructions: u32,
}

fn socket_snapshot() -> Result<SocketSnapshot, &'static str> {
    let s = a53_kernel::socket_node::stats();
    Ok(SocketSnapshot {
        rdma: rdma_snapshot()?,
        doorbells: s.doorbells_sent + s.doorbells_received,
        instructions: a53_kernel::arch::pmu::instructions(),
    })
}

/// `sock-echo` with `trips` 64 B round trips to `node`, and how this node's counters moved, as
/// `sockets_rtt_<phase>_<counter>` lines. Two phases that differ only in `trips` give the cost
/// of one round trip (the host takes the difference).
fn socket_phase(phase: &str, node: u16, trips: u64, icount: bool) -> Result<(), &'static str> {
    let before = socket_snapshot()?;
    let args = [alloc::format!("{node}"), alloc::format!("{trips}")];
    let exit = crate::gsas::run_with_args_within("sock-echo", &[&args[0], &args[1]], 300)?;
    let after = socket_snapshot()?;
    crate::gsas::judge("sock-echo", exit, 0)?;
    let (b, a) = (&before.rdma.r5, &after.rdma.r5);
    let instructions = if icount { u64::from(after.instructions.wrapping_sub(before.instructions)) } else { 0 };
    let lines: [(&str, u64, &str); 7] = [
        ("trips", trips, "round trips"),
        ("packets", after.rdma.packets.wrapping_sub(before.rdma.packets), "packets"),
        ("doorbells", after.doorbells - before.doorbells, "doorbells"),
        ("a53_forwarded", after.rdma.a53_forwarded - before.rdma.a53_forwarded, "accesses"),
        ("r5_forwarded", a.forwarded_accesses.wrapping_sub(b.forwarded_accesses) & 0xffff_ffff, "accesses"),
        ("r5_busy_cycles", a.busy_cycles - b.busy_cycles, "cycles"),
        ("instructions", instructions, "instructions"),
    ];
    for (name, value, unit) in lines {
        defmt::println!("bench sockets_rtt_{=str}_{=str}: {=u64} {=str}", phase, name, value, unit);
    }
    Ok(())
}

/// Sockets over RDMA (`cargo xtask bench sockets`), node 0 towards node 1: 64 writes of 64 KiB
/// by `rdma-bench` (raw RDMA, one at a time) and 4 MiB streamed by `sock-perf` in 64 KiB writes
/// (each program prints its bytes and time), then two `sock-echo` phases of 64 B round trips.
/// `icount`: one node under `-icount`, echoing to itself, for the instructions.
fn sockets(icount: bool) -> Result<(), &'static str> {
    use unimem_user::args::rdma_bench::{Role, pack};
    let (me, n) = whoami()?;
    if !icount && n < 2 {
        return Err("the sockets benchmark needs two nodes");
    }
    barrier(30)?;
    let drive = || {
        if !a53_kernel::socket_node::available() {
            return Err("this node has no sockets");
        }
        let target = if icount { me } else { 1 };
        if icount {
            if !a53_kernel::arch::pmu::count_instructions() {
                return Err("the PMU counts no instructions (QEMU counts them only under -icount)");
            }
            rpu::call(op::RDMA_CONFIG, [2_000_000, 0, 0, 0, 0, 0, 0]).map_err(|_| "no RDMA_CONFIG reply")?;
        } else {
            let raw = crate::gsas::run("rdma-bench", pack(Role::Writes { node: target, count: 64, log2: 16 }))?;
            crate::gsas::judge("rdma-bench", raw, 0)?;
            let args = [alloc::format!("{target}"), alloc::format!("{}", 64 * 64)];
            // Unchecked: the guest's per-byte pattern and hash would weigh on the emulated
            // CPUs, not on the transport (the tests check the bytes).
            let stream =
                crate::gsas::run_with_args_within("sock-perf", &[&args[0], &args[1], "64", "1", "5003", "0"], 300)?;
            crate::gsas::judge("sock-perf", stream, 0)?;
        }
        socket_phase("a", target, 20, icount)?;
        socket_phase("b", target, 120, icount)
    };
    let result = if me == 0 { drive() } else { Ok(()) };
    // The others wait out node 0's runs.
    barrier_within(31, 600)?;
    result
}
