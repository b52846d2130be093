//! `cargo xtask bench NAME`: benchmarks that print their figures as `name: value unit` lines.
//! Figures measured in QEMU describe the emulator on this machine, not the board.

mod active;
mod figures;
pub mod idle;
mod ranks;
mod scaling_doc;
mod shmem;

use crate::qemu_run::{Load, RuntimeDir, node_specs};
use crate::{images, setup};
use anyhow::{Context, bail};
use qemu_virt::{Cluster, ClusterSpec, Event, NodeSpec};
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

const RUN_TIMEOUT: Duration = Duration::from_secs(300);

/// What every benchmark run needs: QEMU, the images, and where traces go if asked.
struct Bench<'a> {
    qemu: &'a Path,
    images: &'a images::Images,
    trace_dir: Option<&'a Path>,
}

impl Bench<'_> {
    /// Runs the test image on `nodes` nodes (with the R5) and `boot_args`.
    fn run_image(&self, nodes: usize, boot_args: &str) -> anyhow::Result<(Vec<String>, Duration)> {
        self.run_nodes(node_specs(nodes, Load::ktest(self.images, true), boot_args))
    }

    /// Runs the nodes to their end; returns every `bench ...` line (without the prefix) and
    /// the time until every node printed `node ready`.
    fn run_nodes(&self, specs: Vec<NodeSpec>) -> anyhow::Result<(Vec<String>, Duration)> {
        let trace = match self.trace_dir {
            Some(dir) => {
                std::fs::create_dir_all(dir)?;
                let args = specs.first().and_then(|s| s.boot_args.as_deref()).unwrap_or("boot");
                let name: String = args.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
                Some(dir.join(format!("{name}-{}-nodes.json", specs.len())))
            }
            None => None,
        };
        run_nodes(self.qemu, ClusterSpec { nodes: specs, trace, ..ClusterSpec::default() })
    }
}

fn run_nodes(qemu: &Path, spec: ClusterSpec) -> anyhow::Result<(Vec<String>, Duration)> {
    // The kernel's `bench ...` lines, and a program's logged ones (`[name domain] bench ...`).
    let (lines, boot) = run_collect(qemu, spec, RUN_TIMEOUT, bench_line)?;
    if let Some(failed) = lines.iter().find(|l| l.starts_with("node") && l.contains(": failed")) {
        bail!("{failed}");
    }
    Ok((lines.into_iter().filter(|l| !l.ends_with(": done")).collect(), boot))
}

/// Runs the nodes to their end (each must exit 0 within `timeout`); returns what `keep` makes
/// of every console line (prefixed `nodeN: `) and the time until every node printed
/// `node ready`.
/// The kernel's `bench ...` lines, and a program's logged ones (`[name domain] bench ...`).
fn bench_line(line: &str) -> Option<&str> {
    line.strip_prefix("bench ").or_else(|| Some(line.split_once("] bench ")?.1))
}

fn run_collect(
    qemu: &Path,
    spec: ClusterSpec,
    timeout: Duration,
    keep: impl Fn(&str) -> Option<&str>,
) -> anyhow::Result<(Vec<String>, Duration)> {
    let nodes = spec.nodes.len();
    let dir = RuntimeDir::new("bench")?;
    let (tx, rx) = mpsc::channel();
    let started = Instant::now();
    let _cluster = Cluster::start(&spec, qemu, &dir.0, tx)?;
    let (mut lines, mut ready, mut ended) = (Vec::new(), vec![None; nodes], 0);
    while ended < nodes {
        match rx.recv_timeout(timeout).context("a node hung")? {
            Event::Line { node, line, .. } => {
                if line.text == "node ready" {
                    ready[node].get_or_insert(started.elapsed());
                }
                if let Some(rest) = keep(&line.text) {
                    if rest == "done" {
                        lines.push(format!("node{node}: done"));
                    } else if rest.starts_with("failed") {
                        lines.push(format!("node{node}: {rest}"));
                    } else {
                        lines.push(rest.to_string());
                    }
                }
            }
            Event::Exited { node, status } => {
                ended += 1;
                if status != Some(0) {
                    bail!("node{node} ended with {status:?}");
                }
            }
        }
    }
    // A node that never said it was ready has no boot time: an error, never the timeout.
    let never: Vec<String> =
        ready.iter().enumerate().filter(|(_, r)| r.is_none()).map(|(n, _)| format!("node{n}")).collect();
    anyhow::ensure!(never.is_empty(), "{} never said `node ready`", never.join(", "));
    let boot = ready.iter().flatten().copied().max().unwrap_or_default();
    Ok((lines, boot))
}

/// The lines of the RDMA soak worth printing: the counters, the programs' verdicts, the summary.
fn soak_line(text: &str) -> Option<&str> {
    let keep = ["stress:", "passed,", "every byte", "FAILED", "failed"].iter().any(|k| text.contains(k));
    keep.then_some(text)
}

/// `cargo xtask soak rdma --transfers N`: the suite's random-transfer test, long: a process on
/// each of 4 nodes, N transfers in all (each a write and its read back, checked byte for byte),
/// over links that lose, duplicate and reorder 1% of the packets (or the links given); prints
/// the R5's and the kernel's counters and the run's time.
pub fn soak_rdma(transfers: u64, link: Option<qemu_virt::LinkConfig>, release: bool) -> anyhow::Result<()> {
    const NODES: usize = 4;
    let qemu = setup::ensure_qemu()?;
    let images = images::build_all(images::Options { release, qfdb: false })?;
    let args = format!("cluster cluster-only rdma-stress cluster-filter=rdma_random rdma-transfers={transfers}");
    let link = link.unwrap_or(crate::testing::runs::LOSSY_LINKS);
    let spec =
        ClusterSpec { nodes: node_specs(NODES, Load::ktest(&images, true), &args), link, ..ClusterSpec::default() };
    println!(
        "soak rdma: {transfers} transfers on {NODES} nodes, links: loss {}, duplicate {}, reorder {}",
        link.loss, link.duplicate, link.reorder
    );
    let started = Instant::now();
    let timeout = Duration::from_secs(600 + transfers / 2);
    let (lines, _) = run_collect(&qemu, spec, timeout, soak_line)?;
    for line in &lines {
        println!("{line}");
    }
    println!("soak rdma: {:.1} s", started.elapsed().as_secs_f64());
    anyhow::ensure!(lines.iter().any(|l| l.starts_with("stress:")), "the stress test printed no counters");
    anyhow::ensure!(!lines.iter().any(|l| l.contains("FAILED")), "the soak failed");
    Ok(())
}

/// A plain host memcpy of `bytes`, bytes per second (best of a few runs).
fn host_memcpy_rate(bytes: usize) -> f64 {
    let src = vec![0x5au8; bytes];
    let mut dst = vec![0u8; bytes];
    (0..20)
        .map(|_| {
            let t0 = Instant::now();
            dst.copy_from_slice(std::hint::black_box(&src));
            std::hint::black_box(&dst);
            bytes as f64 / t0.elapsed().as_secs_f64()
        })
        .fold(0.0, f64::max)
}

fn value_of(lines: &[String], name: &str) -> Option<f64> {
    lines.iter().find_map(|l| l.strip_prefix(name)?.strip_prefix(": ")?.split(' ').next()?.parse().ok())
}

fn platform(bench: &Bench, breakdown: bool, quick: bool) -> anyhow::Result<()> {
    let (single, _) = bench.run_image(1, "bench=platform")?;
    let round_trips = figures::RoundTrips::from_lines(&single)?;
    round_trips.print(figures::host_slot_round_trip(10_000));
    for what in ["median", "p99"] {
        let name = format!("timer_alarm_latency_{what}");
        println!("{name}: {:.3} us (an alarm's interrupt after its deadline)", required(&single, &name)?);
    }
    figures::R5Wake::from_lines(&single)?.print();
    if breakdown {
        platform_breakdown(bench)?;
    }
    let (window, _) = bench.run_image(2, "bench=platform-window")?;
    let (bytes, ns) = (value_of(&window, "window_copy_bytes"), value_of(&window, "window_copy_ns"));
    let (Some(bytes), Some(ns)) = (bytes, ns) else { bail!("the window benchmark printed no figures: {window:?}") };
    let window_rate = bytes / (ns / 1e9);
    let host_rate = host_memcpy_rate(bytes as usize);
    println!("global_window_copy_throughput: {:.1} KiB/s", window_rate / 1024.0);
    println!("host_memcpy_throughput: {:.1} MiB/s", host_rate / (1024.0 * 1024.0));
    let ratio = window_rate / host_rate;
    let verdict = if ratio >= figures::WINDOW_VS_MEMCPY_GOAL { "met" } else { "NOT met" };
    println!(
        "global_window_vs_host_memcpy: {ratio:.3e} ratio (goal >= {:.0e}: {verdict})",
        figures::WINDOW_VS_MEMCPY_GOAL
    );
    for nodes in [1, 2, 4] {
        let (_, boot) = bench.run_image(nodes, "bench=boot")?;
        println!("boot_to_ready_{nodes}_nodes: {:.0} ms", boot.as_secs_f64() * 1000.0);
    }
    // Within one rank and across ranks, in the same run (`bench ranks`).
    ranks::run(bench, quick)
}

/// Where a forwarded access spends its time: one node timing its parts, then one node under
/// `-icount` (without the R5, as for the service) counting the guest's instructions.
fn platform_breakdown(bench: &Bench) -> anyhow::Result<()> {
    let (times, _) = bench.run_nodes(node_specs(1, Load::ktest(bench.images, false), "bench=platform-breakdown"))?;
    let mut spec = node_specs(1, Load::ktest(bench.images, false), "bench=platform-breakdown-icount").remove(0);
    spec.extra_args = vec!["-icount".into(), "shift=0".into()];
    let (instructions, _) = bench.run_nodes(vec![spec])?;
    for line in times.iter().chain(&instructions) {
        println!("{line}");
    }
    Ok(())
}

/// The four nodes of a QFDB: remote FAD64 throughput with 1..4 requesting nodes; then one node
/// under `-icount` (QEMU counts instructions only there, and without the R5, which would spin
/// in the single emulation thread): the atomic service's instructions per request.
fn gsas(bench: &Bench) -> anyhow::Result<()> {
    const NODES: usize = 4;
    // Without the R5s: they take no part, and their polling would take host CPU from the nodes.
    let (lines, _) = bench.run_nodes(node_specs(NODES, Load::ktest(bench.images, false), "bench=gsas-fad"))?;
    let throughputs = figures::fad_throughputs(&lines, NODES)?;
    figures::print_fad_throughputs(&throughputs, figures::host_slot_round_trip(10_000));
    let counts = service_counts(bench.qemu, bench.images)?;
    println!(
        "gsas_service_instructions_per_fad_median: {} instructions (goal <= {SERVICE_INSTRUCTIONS_GOAL})",
        counts.instructions_median
    );
    println!("gsas_service_instructions_per_fad_p90: {} instructions", counts.instructions_p90);
    println!(
        "gsas_forwarded_accesses_per_fad: {:.2} accesses (all of the node's, one process's FADs)",
        counts.forwarded_per_fad
    );
    Ok(())
}

/// `value_of`, or an error naming what is missing.
fn required(lines: &[String], name: &str) -> anyhow::Result<f64> {
    value_of(lines, name).with_context(|| format!("the benchmark printed no {name}: {lines:?}"))
}

/// How counter `counter` of the `rdma` phases moved per transfer between phases `a` and `b`
/// (which differ only in their transfer count), and the transfers between them.
fn per_transfer(lines: &[String], a: &str, b: &str, counter: &str) -> anyhow::Result<f64> {
    let get = |phase: &str, c: &str| required(lines, &format!("rdma_{phase}_{c}"));
    let transfers = get(b, "transfers")? - get(a, "transfers")?;
    anyhow::ensure!(transfers > 0.0, "phases {a} and {b} have the same transfer count");
    Ok((get(b, counter)? - get(a, counter)?) / transfers)
}

/// Benchmark `name` on `nodes` nodes in real time, then `name`-icount on one node with its R5
/// under `-icount shift=0` (the PMUs count instructions); prints both runs' lines, prefixed.
fn timed_and_counted(bench: &Bench, nodes: usize, name: &str) -> anyhow::Result<(Vec<String>, Vec<String>)> {
    let (timed, _) = bench.run_image(nodes, &format!("bench={name}"))?;
    let mut spec = node_specs(1, Load::ktest(bench.images, true), &format!("bench={name}-icount")).remove(0);
    spec.extra_args = vec!["-icount".into(), "shift=0".into()];
    let (counted, _) = bench.run_nodes(vec![spec])?;
    for (run, lines) in [("timed", &timed), ("icount", &counted)] {
        for line in lines {
            println!("{run}: {line}");
        }
    }
    Ok((timed, counted))
}

/// A figure with its goal: `name: value unit (goal <= 300: met)`.
fn with_goal(name: &str, value: f64, unit: &str, goal: &str, met: bool) {
    println!("{}", goal_line(name, value, unit, goal, met));
}

/// The line [`with_goal`] prints.
fn goal_line(name: &str, value: f64, unit: &str, goal: &str, met: bool) -> String {
    format!("{name}: {value:.2} {unit} (goal {goal}: {})", if met { "met" } else { "NOT met" })
}

/// RDMA (`docs/hw/pldma.md`): two runs of `rdma-bench` phases (`a53-kernel/ktest/src/bench.rs`).
/// Each phase prints how this node's counters moved; a figure is the difference of two phases
/// that differ only in how many transfers they make, divided by that many transfers, so the
/// program's start, its peer and its end cancel out.
/// - Timed: node 0 writes to node 1: 16 B writes and 16 MiB writes; packets per transfer, the
///   R5's forwarded accesses per block, and the fastest 16 MiB write against host memcpy.
/// - Counted: one node under `-icount shift=0` with its R5 (the R5 spins in the single
///   emulation thread while idle, which only slows the run), writing to itself: the R5's cycle
///   counter then counts instructions. The scheduler's busy cycles (rounds that had work, so
///   idle polling is left out) minus the cycles its abort handler spent forwarding (on the
///   board a device store, counted apart as forwarded accesses) per block and per 16 B write;
///   the forwarded accesses per transfer.
fn rdma(bench: &Bench) -> anyhow::Result<()> {
    let (timed, counted) = timed_and_counted(bench, 2, "rdma")?;
    for (run, lines) in [("timed", &timed), ("icount", &counted)] {
        for phase in ["small_a", "small_b", "big_a", "big_b"] {
            for c in ["retransmits", "failed"] {
                let v = required(lines, &format!("rdma_{phase}_{c}"))?;
                anyhow::ensure!(c != "failed" || v == 0.0, "{run} run, phase {phase}: {v} transfers failed");
            }
        }
    }
    println!("--- figures (each computed from the lines above) ---");
    // The R5's instructions per 16 KiB block, in the steady state of a large write.
    let blocks = per_transfer(&counted, "big_a", "big_b", "r5_blocks")?;
    let busy = per_transfer(&counted, "big_a", "big_b", "r5_busy_cycles")?;
    let forwarding = per_transfer(&counted, "big_a", "big_b", "r5_forwarded_cycles")?;
    let per_block = (busy - forwarding) / blocks;
    with_goal("rdma_r5_instructions_per_16kib_block", per_block, "instructions", "<= 300", per_block <= 300.0);
    println!("rdma_r5_instructions_per_16kib_block_with_forwarding_emulation: {:.2} instructions", busy / blocks);
    println!("rdma_r5_blocks_per_icount_transfer: {blocks:.0} blocks");
    let rounds = per_transfer(&counted, "big_a", "big_b", "r5_busy_rounds")?;
    println!(
        "rdma_r5_busy_rounds_per_block: {:.2} rounds ({:.0} instructions per round)",
        rounds / blocks,
        (busy - forwarding) / rounds
    );
    // Forwarded accesses: per block on the R5, per transfer on the A53 (timed run, node 0).
    let blocks = per_transfer(&timed, "big_a", "big_b", "r5_blocks")?;
    let r5_per_block = per_transfer(&timed, "big_a", "big_b", "r5_forwarded")? / blocks;
    with_goal("rdma_r5_forwarded_accesses_per_block", r5_per_block, "accesses", "<= 2", r5_per_block <= 2.0);
    // The A53's, from the counted run. In the timed run the process cores' counts vary by tens
    // between runs of the same phase (waits whose length follows the host's timing), which the
    // difference of two phases does not cancel: a 16 MiB transfer there once counted -4. Under
    // -icount those waits run in virtual time and their counts repeat, so the transfer's own
    // accesses remain (those of its completion interrupt, on core 0).
    let a53_small = per_transfer(&counted, "small_a", "small_b", "a53_forwarded")?;
    with_goal("rdma_a53_forwarded_accesses_per_transfer_16b", a53_small, "accesses", "<= 2", a53_small <= 2.0);
    let a53_big = per_transfer(&counted, "big_a", "big_b", "a53_forwarded")?;
    let big_mib = required(&counted, "rdma_big_b_bytes_each")? / (1024.0 * 1024.0);
    println!("rdma_a53_forwarded_accesses_per_transfer_{big_mib:.0}mib: {a53_big:.2} accesses (counted run)");
    let timed_small = per_transfer(&timed, "small_a", "small_b", "a53_forwarded")?;
    let timed_big = per_transfer(&timed, "big_a", "big_b", "a53_forwarded")?;
    println!(
        "rdma_a53_forwarded_accesses_per_transfer_timed_run: {timed_small:.2} (16 B), {timed_big:.2} (16 MiB) accesses (whole node; waits that follow host timing vary it)"
    );
    // The cost of a 16 B write.
    let instructions = per_transfer(&counted, "small_a", "small_b", "r5_busy_cycles")?
        - per_transfer(&counted, "small_a", "small_b", "r5_forwarded_cycles")?;
    println!("rdma_16b_write_r5_instructions: {instructions:.1} instructions");
    let packets = per_transfer(&timed, "small_a", "small_b", "packets")?;
    println!("rdma_16b_write_packets: {packets:.2} packets (sent and received by the writer's engine)");
    let r5_small = per_transfer(&counted, "small_a", "small_b", "r5_forwarded")?;
    println!(
        "rdma_16b_write_forwarded_accesses: {:.2} accesses (A53 {a53_small:.2}, R5 {r5_small:.2}; counted run)",
        a53_small + r5_small
    );
    // Bandwidth of a 16 MiB write against host memcpy.
    let bytes = required(&timed, "rdma_big_b_bytes_each")?;
    let best_us = timed
        .iter()
        .filter_map(|l| {
            l.strip_prefix(&format!("rdma_write_{bytes}b_best_us: "))?.split(' ').next()?.parse::<f64>().ok()
        })
        .fold(f64::INFINITY, f64::min);
    anyhow::ensure!(best_us.is_finite() && best_us > 0.0, "no timing of a {bytes} B write: {timed:?}");
    let rate = bytes / (best_us / 1e6);
    let host = host_memcpy_rate(bytes as usize);
    let mib_s = rate / (1024.0 * 1024.0);
    with_goal(
        "rdma_16mib_write_throughput",
        mib_s,
        &format!("MiB/s ({best_us:.0} us)"),
        &format!(">= {RDMA_LINE_RATE_MIB_S} MiB/s, the QFDB link's 10 Gb/s"),
        mib_s >= RDMA_LINE_RATE_MIB_S,
    );
    println!("host_memcpy_throughput: {:.1} MiB/s", host / (1024.0 * 1024.0));
    let ratio = rate / host;
    with_goal("rdma_16mib_write_vs_host_memcpy", ratio * 100.0, "%", ">= 10%", ratio >= 0.10);
    Ok(())
}

/// The seed's touch-ahead gains over touch-a-page (chapter 4) at 16, 32 and 64 KiB.
const SEED_TOUCH_AHEAD_GAIN_DESTINATION: [f64; 3] = [1.7, 1.2, 1.2];
const SEED_TOUCH_AHEAD_GAIN_SOURCE: [f64; 3] = [3.9, 3.9, 4.7];

/// Page faults during RDMA (`docs/hw/pldma.md`, "Fault handling"): one node writing between two
/// of its regions with every page of the source or of the destination evicted before each
/// write (`rdma-faults` Time), with touch-ahead and with touch-a-page in terminate mode and with
/// touch-ahead in SMMU stall mode, against the same writes on resident pages; then one node under
/// `-icount` for the instructions of a fault interrupt, in terminate mode (to the RAPF or fault
/// message) and in stall mode (to the RESUME).
fn pagefault(bench: &Bench) -> anyhow::Result<()> {
    const WAYS: [(u8, &str); 3] = [(0, "touch_ahead"), (1, "touch_a_page"), (2, "stall_touch_ahead")];
    let (timed, counted) = timed_and_counted(bench, 1, "pagefault")?;
    println!("--- figures (each computed from the lines above) ---");
    let get = |lines: &[String], tag: u8, side: &str, bytes: u64, what: &str| {
        required(lines, &format!("pagefault_{tag}_{side}_{bytes}b_{what}"))
    };
    for (side, seed) in [("destination", SEED_TOUCH_AHEAD_GAIN_DESTINATION), ("source", SEED_TOUCH_AHEAD_GAIN_SOURCE)] {
        for (k, bytes) in [16384u64, 32768, 65536].into_iter().enumerate() {
            let mut faulting_us = [0.0; WAYS.len()];
            for (tag, name) in WAYS {
                let blocks = get(&timed, tag, side, bytes, "blocks")?;
                let irqs = (get(&timed, tag, side, bytes, "fault_irqs")?
                    + get(&timed, tag, side, bytes, "stall_irqs")?)
                    / blocks;
                with_goal(
                    &format!("pagefault_{name}_{side}_{bytes}b_fault_irqs_per_block"),
                    irqs,
                    "interrupts",
                    "<= 1",
                    irqs <= 1.0,
                );
                let timeouts = get(&timed, tag, side, bytes, "timeouts")?;
                with_goal(
                    &format!("pagefault_{name}_{side}_{bytes}b_timeouts"),
                    timeouts,
                    "timeouts",
                    "0",
                    timeouts == 0.0,
                );
                let faulting = get(&timed, tag, side, bytes, "faulting_us")?;
                let resident = get(&timed, tag, side, bytes, "resident_us")?;
                faulting_us[usize::from(tag)] = faulting;
                println!(
                    "pagefault_{name}_{side}_{bytes}b_faulting_vs_resident: {:.2} ratio ({faulting:.0} us / {resident:.0} us)",
                    faulting / resident
                );
            }
            println!(
                "pagefault_{side}_{bytes}b_touch_ahead_gain: {:.2}x (touch-a-page / touch-ahead time; the seed: {:.1}x)",
                faulting_us[1] / faulting_us[0],
                seed[k]
            );
            println!(
                "pagefault_{side}_{bytes}b_stall_gain: {:.2}x (terminate / stall time, both touch-ahead)",
                faulting_us[0] / faulting_us[2]
            );
        }
    }
    for side in ["destination", "source"] {
        for (tag, mode, irq, answer) in
            [(0u8, "terminate", "fault", "RAPF or fault message"), (2, "stall", "stall", "RESUME")]
        {
            let of_run = |what: &str| get(&counted, tag, side, 16384, what);
            let get = |what: &str| of_run(&format!("{irq}_{what}"));
            let irqs = get("irqs")?;
            anyhow::ensure!(irqs > 0.0, "the icount run saw no {irq} interrupt ({side}, {mode})");
            let total = get("irq_instructions")? / irqs;
            let forwarding = get("irq_forwarding")? / irqs;
            let own = total - forwarding;
            with_goal(
                &format!("pagefault_{mode}_{side}_4_page_block_a53_instructions_per_fault_interrupt"),
                own,
                "instructions",
                "<= 2000",
                own <= 2000.0,
            );
            println!(
                "pagefault_{mode}_{side}_a53_instructions_with_forwarding: {total:.0} instructions per interrupt, {forwarding:.0} of them in forwarded accesses (the forwarding handler's decode, wait and return; one device access on the board; the exception's entry and exit around each access, which a board does not pay either, count as the interrupt's own), from the interrupt to the {answer}"
            );
            let resolves = of_run("faults_resolved")?;
            println!(
                "pagefault_{mode}_{side}_a53_resolve_instructions: {:.0} instructions per interrupt in giving pages their frames ({:.2} resolves per interrupt: the entries of other attempts of the block that the interrupt also found; one maps the block's pages, the others find them resident)",
                of_run("resolve_instructions")? / irqs,
                resolves / irqs
            );
        }
        println!(
            "pagefault_{side}_note: under -icount QEMU's PMU reads the global instruction count (icount_get_raw), all the node's vCPUs together: an idle A53 (WFI) or a sleeping R5 adds nothing, but the R5's work on the same block while the handler runs (the engine's events, the answer) is in the figure"
        );
    }
    Ok(())
}

/// A 64 B socket round trip between two nodes (#21).
const SOCKET_ROUND_TRIP_GOAL_US: f64 = 500.0;
/// The QFDB link's line rate, 10 Gb/s, as the emulator's goal for a large RDMA write (#21).
const RDMA_LINE_RATE_MIB_S: f64 = 1192.0;

/// The atomic service's goal (issue: soNUMA's remote-memory controller is ~110 instructions).
pub const SERVICE_INSTRUCTIONS_GOAL: u64 = 150;

/// What one node under `-icount` counts while one process sends FAD64s to its own node.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ServiceCounts {
    pub instructions_median: u64,
    pub instructions_p90: u64,
    pub forwarded_per_fad: f64,
}

impl ServiceCounts {
    /// From the `bench=gsas-service` lines (without their `bench ` prefix).
    pub fn from_lines(lines: &[String]) -> anyhow::Result<Self> {
        let get =
            |name: &str| value_of(lines, name).with_context(|| format!("the service benchmark printed no {name}"));
        let fads = get("gsas_fads_sent")?;
        anyhow::ensure!(fads > 0.0, "the service benchmark sent no FADs");
        Ok(Self {
            instructions_median: get("gsas_service_instructions_per_fad_median")? as u64,
            instructions_p90: get("gsas_service_instructions_per_fad_p90")? as u64,
            forwarded_per_fad: get("gsas_forwarded_accesses")? / fads,
        })
    }
}

/// Runs the test image of `images` on one node under `-icount` (QEMU counts instructions only
/// there; without the R5, which would spin in the single emulation thread) with
/// `bench=gsas-service`.
pub fn service_counts(qemu: &Path, images: &images::Images) -> anyhow::Result<ServiceCounts> {
    let mut spec = node_specs(1, Load::ktest(images, false), "bench=gsas-service").remove(0);
    spec.extra_args = vec!["-icount".into(), "shift=0".into()];
    let (lines, _) = run_nodes(qemu, ClusterSpec { nodes: vec![spec], ..ClusterSpec::default() })?;
    ServiceCounts::from_lines(&lines)
}

/// How counter `counter` of the `sockets` round-trip phases moved per round trip between
/// phases `a` and `b` (which differ only in their round trips).
fn per_round_trip(lines: &[String], counter: &str) -> anyhow::Result<f64> {
    let get = |phase: &str, c: &str| required(lines, &format!("sockets_rtt_{phase}_{c}"));
    let trips = get("b", "trips")? - get("a", "trips")?;
    anyhow::ensure!(trips > 0.0, "the round-trip phases have the same count");
    Ok((get("b", counter)? - get("a", counter)?) / trips)
}

/// Sockets over RDMA (`docs/hw/sockets.md`; `a53-kernel/ktest/src/bench.rs`, `sockets`).
/// - Timed, node 0 to node 1: raw RDMA (64 writes of 64 KiB, one at a time, by `rdma-bench`)
///   and a stream (4 MiB in 64 KiB writes, by `sock-perf`, hash checked); the stream's
///   throughput as a ratio of the raw one, both measured in this run. Then the cost of a 64 B
///   round trip (`sock-echo`) in packets, doorbells and forwarded accesses, from two phases
///   that differ only in their round trips.
/// - Counted: one node under `-icount` echoing to itself: the node's instructions per round
///   trip (every vCPU shares the count, the R5's idle polling included) and the R5's busy ones.
fn sockets(bench: &Bench) -> anyhow::Result<()> {
    let (timed, counted) = timed_and_counted(bench, 2, "sockets")?;
    println!("--- figures (each computed from the lines above) ---");
    let raw_bytes = 64.0 * 65536.0;
    let raw_us = required(&timed, "rdma_write_65536b_total_us")?;
    let stream_bytes = required(&timed, "sock_perf_bytes")?;
    let stream_us = required(&timed, "sock_perf_us")?;
    anyhow::ensure!(raw_us > 0.0 && stream_us > 0.0, "a phase took no time");
    let mib = |bytes: f64, us: f64| bytes / us * 1e6 / (1024.0 * 1024.0);
    println!("sockets_raw_rdma_64kib_writes: {:.2} MiB/s", mib(raw_bytes, raw_us));
    println!("sockets_stream_64kib_writes: {:.2} MiB/s", mib(stream_bytes, stream_us));
    let ratio = (stream_bytes / stream_us) / (raw_bytes / raw_us);
    with_goal("sockets_stream_vs_raw_rdma", ratio * 100.0, "%", ">= 80%", ratio >= 0.8);
    let median = required(&timed, "sock_echo_round_trip_median_us")?;
    with_goal(
        "sockets_64b_round_trip_median",
        median,
        "us (timed run, between two nodes)",
        &format!("<= {SOCKET_ROUND_TRIP_GOAL_US} us"),
        median <= SOCKET_ROUND_TRIP_GOAL_US,
    );
    let packets = per_round_trip(&timed, "packets")?;
    let doorbells = per_round_trip(&timed, "doorbells")?;
    println!("sockets_64b_round_trip_rdma_packets: {packets:.2} packets (sent and received by node 0's engine)");
    println!("sockets_64b_round_trip_doorbells: {doorbells:.2} doorbells (sent and received by node 0's kernel)");
    let a53 = per_round_trip(&timed, "a53_forwarded")?;
    let r5 = per_round_trip(&timed, "r5_forwarded")?;
    println!("sockets_64b_round_trip_forwarded_accesses: {:.2} accesses (node 0: A53 {a53:.2}, R5 {r5:.2})", a53 + r5);
    let instructions = per_round_trip(&counted, "instructions")?;
    let r5_busy = per_round_trip(&counted, "r5_busy_cycles")?;
    println!(
        "sockets_64b_round_trip_instructions: {instructions:.0} instructions (one node echoing to itself: every vCPU, \
         the R5's idle polling included; the R5's busy rounds {r5_busy:.0})"
    );
    Ok(())
}

/// What a node costs its host (`idle`): the host CPU and memory of an idle cluster of 1, 2 and
/// 4 nodes, then of a busy one.
fn idle_cluster(bench: &Bench, quick: bool) -> anyhow::Result<()> {
    let interval = if quick { idle::QUICK_INTERVAL } else { idle::INTERVAL };
    for nodes in [1, 2, 4] {
        let shares = idle::measure(bench.qemu, bench.images, nodes, interval)?;
        idle::print(&shares);
    }
    let shares = idle::measure_busy(bench.qemu, bench.images, idle::BUSY_NODES, interval)?;
    idle::print_busy(&shares);
    Ok(())
}

/// How `cargo xtask bench` was asked to run.
pub struct Options<'a> {
    /// The release build (fw-release), or the development build.
    pub release: bool,
    /// `platform`: also the breakdown of a forwarded access.
    pub breakdown: bool,
    /// Every emulated run writes its trace here.
    pub trace_dir: Option<&'a Path>,
    /// `ranks`, and `platform`'s part of it, and `shmem`: a few short repetitions, to check
    /// that it runs.
    pub quick: bool,
}

/// Runs benchmark `name`.
pub fn run(name: &str, options: Options) -> anyhow::Result<()> {
    if options.quick && !matches!(name, "platform" | "ranks" | "idle" | "shmem") {
        bail!("--quick shortens `ranks` (and `platform`'s part of it), `idle` and `shmem` only, not `{name}`");
    }
    if name == "mpi-link" {
        // Two ranks of this host over TCP: no QEMU, no image.
        return crate::mpi::bench();
    }
    let qemu = setup::ensure_qemu()?;
    let build = images::Options { release: options.release, qfdb: false };
    let images = images::build_all(build)?;
    println!("build: {} (profile {})", if options.release { "release" } else { "dev" }, build.profile());
    let bench = Bench { qemu: &qemu, images: &images, trace_dir: options.trace_dir };
    match name {
        "platform" => platform(&bench, options.breakdown, options.quick),
        "ranks" => ranks::run(&bench, options.quick),
        "gsas" => gsas(&bench),
        "rdma" => rdma(&bench),
        "pagefault" => pagefault(&bench),
        "sockets" => sockets(&bench),
        "idle" => idle_cluster(&bench, options.quick),
        "shmem" => shmem::run(&bench, options.quick),
        "active" => active::run(&bench),
        other => {
            bail!(
                "unknown benchmark {other}: try `platform`, `ranks`, `gsas`, `rdma`, `pagefault`, `sockets`, `idle`, `shmem`, `active` or `mpi-link`"
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines of a run's output, as the benchmarks collect them.
    pub(super) fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_string).collect()
    }

    const SERVICE: &str = "gsas_service_requests_sampled: 1000 requests
gsas_service_instructions_per_fad_min: 200 instructions
gsas_service_instructions_per_fad_median: 210 instructions
gsas_service_instructions_per_fad_p90: 230 instructions
gsas_forwarded_accesses: 7250 accesses
gsas_fads_sent: 1000 requests";

    #[test]
    fn service_counts_come_from_the_measured_lines() {
        let c = ServiceCounts::from_lines(&lines(SERVICE)).unwrap();
        assert_eq!(c, ServiceCounts { instructions_median: 210, instructions_p90: 230, forwarded_per_fad: 7.25 });
        // Every figure follows its raw line: change one, and only its figure changes.
        let perturbed = SERVICE.replace("median: 210", "median: 211").replace("accesses: 7250", "accesses: 7500");
        let p = ServiceCounts::from_lines(&lines(&perturbed)).unwrap();
        assert_eq!(p, ServiceCounts { instructions_median: 211, forwarded_per_fad: 7.5, ..c });
    }

    #[test]
    fn a_figure_that_was_not_measured_is_an_error_not_a_default() {
        for name in ["gsas_service_instructions_per_fad_median", "gsas_forwarded_accesses", "gsas_fads_sent"] {
            let without: Vec<String> = lines(SERVICE).into_iter().filter(|l| !l.starts_with(name)).collect();
            let e = ServiceCounts::from_lines(&without).unwrap_err();
            assert!(e.to_string().contains(name), "{e}");
        }
        let none_sent = SERVICE.replace("gsas_fads_sent: 1000", "gsas_fads_sent: 0");
        assert!(ServiceCounts::from_lines(&lines(&none_sent)).is_err());
    }
}
