//! `cargo xtask bench shmem`: OpenSHMEM (`unimem_user::shmem`) beside the raw layers under it,
//! in the OSU micro-benchmark style, each figure computed from what the run printed.
//!
//! The program `shmem-bench` runs as an OpenSHMEM job (PE 0 on node 0 spawns the others) and
//! prints, for each measurement, the median time of its repetitions in microseconds
//! (`bench NAME: VALUE us`):
//!
//! - `shmem_putmem_{B}b_us` / `raw_write_{B}b_us` and `shmem_getmem_{B}b_us` /
//!   `raw_read_{B}b_us`: one blocking put (get) of B bytes from PE 0 to PE 1, and one RDMA write
//!   (read) of the same bytes waited for, for B = 8 and 4 KiB .. 4 MiB;
//! - `shmem_fetch_add_us` / `gsas_fad64_us`: one `shmem_long_atomic_fetch_add` on PE 1's
//!   symmetric variable, one GSAS FAD64 on a shared page of node 1;
//! - `shmem_barrier_all_us` / `shmem_atomic_round_trip_us`: one barrier of every PE, one remote
//!   atomic fetch (the unit a barrier is counted in).

use super::{Bench, required};
use crate::qemu_run::{Load, node_specs_with};

/// The goals (#25).
pub const BANDWIDTH_VS_RAW_GOAL: f64 = 0.90;
/// From this size on the bandwidth goal holds.
pub const BANDWIDTH_GOAL_FROM: u64 = 64 * 1024;
pub const ATOMIC_RATE_VS_GSAS_GOAL: f64 = 0.90;

/// The sizes of the bandwidth lines: 4 KiB to 4 MiB, each four times the last.
pub fn bandwidth_sizes() -> impl Iterator<Item = u64> {
    (0..6).map(|k| 4096u64 << (2 * k))
}

/// One run of `shmem-bench` on `nodes` nodes (`quick`: a few repetitions each, its argument
/// `quick`); its `bench` lines.
fn run_program(bench: &Bench, nodes: usize, quick: bool) -> anyhow::Result<Vec<String>> {
    let run = if quick { "run=shmem-bench arg=quick exit" } else { "run=shmem-bench exit" };
    let mut boot_args = vec![run.to_string()];
    boot_args.extend((1..nodes).map(|_| "serve exit".to_string()));
    let (lines, _) = bench.run_nodes(node_specs_with(Load::kernel(bench.images), &boot_args))?;
    for line in &lines {
        println!("{nodes} nodes: {line}");
    }
    Ok(lines)
}

/// A figure in microseconds.
fn us(lines: &[String], name: &str) -> anyhow::Result<f64> {
    let v = required(lines, name)?;
    anyhow::ensure!(v > 0.0, "{name} is {v} us: nothing was timed");
    Ok(v)
}

/// The figures of one run, as lines (`name: value unit (goal ...: met)`); `Err` when a line
/// they need is missing.
pub fn figures(lines: &[String], nodes: usize) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    let mut push = |name: String, value: f64, unit: &str, goal: Option<(&str, bool)>| {
        out.push(match goal {
            Some((goal, met)) => {
                format!("{name}: {value:.2} {unit} (goal {goal}: {})", if met { "met" } else { "NOT met" })
            }
            None => format!("{name}: {value:.2} {unit}"),
        });
    };
    if nodes == 2 {
        for (shmem, raw) in [("putmem", "write"), ("getmem", "read")] {
            let s = us(lines, &format!("shmem_{shmem}_8b_us"))?;
            let r = us(lines, &format!("raw_{raw}_8b_us"))?;
            push(format!("shmem_{shmem}_8b_latency"), s, &format!("us (raw RDMA {raw}: {r:.2} us)"), None);
            for bytes in bandwidth_sizes() {
                let s = us(lines, &format!("shmem_{shmem}_{bytes}b_us"))?;
                let r = us(lines, &format!("raw_{raw}_{bytes}b_us"))?;
                let mib_s = |t: f64| bytes as f64 / t * 1e6 / (1024.0 * 1024.0);
                let ratio = r / s;
                let unit = format!("MiB/s (raw RDMA {raw}: {:.2} MiB/s, {:.0} %)", mib_s(r), ratio * 100.0);
                let goal = (bytes >= BANDWIDTH_GOAL_FROM).then_some((">= 90 % of raw", ratio >= BANDWIDTH_VS_RAW_GOAL));
                push(format!("shmem_{shmem}_{bytes}b_bandwidth"), mib_s(s), &unit, goal);
            }
        }
        let s = us(lines, "shmem_fetch_add_us")?;
        let g = us(lines, "gsas_fad64_us")?;
        let ratio = g / s;
        let unit = format!("ops/s (GSAS fad64: {:.0} ops/s, {:.0} %)", 1e6 / g, ratio * 100.0);
        push(
            "shmem_long_atomic_fetch_add_rate".into(),
            1e6 / s,
            &unit,
            Some((">= 90 % of fad64", ratio >= ATOMIC_RATE_VS_GSAS_GOAL)),
        );
    }
    let barrier = us(lines, "shmem_barrier_all_us")?;
    let round_trip = us(lines, "shmem_atomic_round_trip_us")?;
    push(
        format!("shmem_barrier_all_{nodes}_nodes"),
        barrier / round_trip,
        &format!("remote atomic round trips ({barrier:.1} us; one round trip {round_trip:.1} us)"),
        None,
    );
    Ok(out)
}

/// `cargo xtask bench shmem`: the latency, bandwidth and atomic figures on 2 nodes, the
/// barrier on 2 and 4.
pub fn run(bench: &Bench, quick: bool) -> anyhow::Result<()> {
    let mut all = Vec::new();
    for nodes in [2, 4] {
        let lines = run_program(bench, nodes, quick)?;
        all.push((nodes, lines));
    }
    println!("--- figures (each computed from the lines above) ---");
    for (nodes, lines) in &all {
        for line in figures(lines, *nodes)? {
            println!("{line}");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_node_lines(put_64k_us: f64) -> Vec<String> {
        let mut lines = vec![
            "shmem_putmem_8b_us: 40 us".to_string(),
            "raw_write_8b_us: 30 us".into(),
            "shmem_getmem_8b_us: 50 us".into(),
            "raw_read_8b_us: 45 us".into(),
            "shmem_fetch_add_us: 100 us".into(),
            "gsas_fad64_us: 95 us".into(),
            "shmem_barrier_all_us: 300 us".into(),
            "shmem_atomic_round_trip_us: 100 us".into(),
        ];
        for bytes in bandwidth_sizes() {
            let t = bytes as f64 / 1000.0;
            let put = if bytes == 65536 { put_64k_us } else { t };
            lines.push(format!("shmem_putmem_{bytes}b_us: {put} us"));
            lines.push(format!("raw_write_{bytes}b_us: {t} us"));
            lines.push(format!("shmem_getmem_{bytes}b_us: {t} us"));
            lines.push(format!("raw_read_{bytes}b_us: {t} us"));
        }
        lines
    }

    #[test]
    fn each_figure_follows_its_lines_and_its_goal() {
        let lines = two_node_lines(65.536);
        let out = figures(&lines, 2).unwrap();
        let line = |prefix: &str| out.iter().find(|l| l.starts_with(prefix)).unwrap().clone();
        assert_eq!(line("shmem_putmem_8b_latency"), "shmem_putmem_8b_latency: 40.00 us (raw RDMA write: 30.00 us)");
        assert!(line("shmem_putmem_65536b_bandwidth").ends_with("(goal >= 90 % of raw: met)"));
        assert!(!line("shmem_putmem_4096b_bandwidth").contains("goal"), "below 64 KiB no goal");
        assert!(
            line("shmem_long_atomic_fetch_add_rate").starts_with("shmem_long_atomic_fetch_add_rate: 10000.00 ops/s")
        );
        assert!(line("shmem_long_atomic_fetch_add_rate").ends_with("95 %) (goal >= 90 % of fad64: met)"));
        assert!(
            line("shmem_barrier_all_2_nodes").starts_with("shmem_barrier_all_2_nodes: 3.00 remote atomic round trips")
        );
        // A slower put misses the goal.
        let slow = figures(&two_node_lines(100.0), 2).unwrap();
        assert!(slow.iter().any(|l| l.starts_with("shmem_putmem_65536b_bandwidth") && l.ends_with("NOT met)")));
    }

    #[test]
    fn a_missing_or_empty_measurement_is_an_error() {
        let lines = two_node_lines(65.536);
        for missing in ["raw_read_1048576b_us", "gsas_fad64_us", "shmem_barrier_all_us"] {
            let without: Vec<String> = lines.iter().filter(|l| !l.starts_with(missing)).cloned().collect();
            assert!(figures(&without, 2).unwrap_err().to_string().contains(missing));
        }
        let zero: Vec<String> = lines.iter().map(|l| l.replace("gsas_fad64_us: 95", "gsas_fad64_us: 0")).collect();
        assert!(figures(&zero, 2).is_err());
        // Four nodes: only the barrier.
        let four = vec!["shmem_barrier_all_us: 500 us".to_string(), "shmem_atomic_round_trip_us: 100 us".into()];
        assert_eq!(figures(&four, 4).unwrap().len(), 1);
    }
}
