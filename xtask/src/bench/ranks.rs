//! `cargo xtask bench ranks` (and the end of `bench platform`): what crossing between MPI ranks
//! costs a remote FAD64 and a 64 KiB RDMA write, against the same within one rank, measured in
//! the same run. A cluster of [`NODES`] nodes over [`RANKS`] ranks of this host (forced over
//! TCP, as `cargo xtask qemu --ranks` runs one: `crate::mpi`), the test image with
//! `bench=ranks-cost` (`a53-kernel/ktest/src/bench.rs`): node 0 times FADs and writes to a
//! node of its own rank and to one of the other, alternating, in repetitions; each run of a
//! program logs its median. The figures are the medians of those medians, and their ratio.

use super::Bench;
use crate::mpi::{ClusterRun, Output};
use crate::qemu_run::Load;
use anyhow::{Context, bail};
use qemu_virt::ranks::NodeMap;
use std::time::Duration;

/// The cluster: a QFDB's four nodes over two ranks, nodes 0 and 1 on rank 0 (`NodeMap::blocks`).
pub const NODES: usize = 4;
pub const RANKS: usize = 2;
/// The size of a timed write (`RANKS_COST_WRITE_LOG2` in the guest).
const WRITE_BYTES: u64 = 64 * 1024;
/// Every figure line this bench prints, by name (`docs/scaling.md` quotes them; a test holds
/// the page to this list and the list to what is printed).
#[cfg(test)]
pub const FIGURES: [&str; 8] = [
    "fad_within_rank_median",
    "fad_across_ranks_median",
    "fad_across_vs_within_ratio",
    "rdma_64kib_write_within_rank_median",
    "rdma_64kib_write_across_ranks_median",
    "rdma_64kib_write_across_vs_within_ratio",
    "ranks_cost_repetitions",
    "ranks_cost_nodes",
];

/// Node 0's targets: the first other node of its own rank, the first node of another.
pub fn targets(map: &NodeMap) -> anyhow::Result<(usize, usize)> {
    let home = map.rank_of(0);
    let near = (1..map.nodes()).find(|&n| map.rank_of(n) == home);
    let far = (1..map.nodes()).find(|&n| map.rank_of(n) != home);
    match (near, far) {
        (Some(near), Some(far)) => Ok((near, far)),
        _ => bail!("node 0 needs a node of its own rank and one of another: {map:?}"),
    }
}

/// The timed lines of node `node` (the `bench ...` part of its console lines as the ranks
/// printed them, `nodeN a53 | ...`), after its warm-up.
pub fn timed_lines(output: &[String], node: usize) -> anyhow::Result<Vec<String>> {
    let prefix = format!("node{node} a53 | ");
    let lines: Vec<&str> = output
        .iter()
        .filter_map(|l| l.strip_prefix(&prefix))
        .filter_map(|printed| {
            let at = printed.match_indices("bench ").find(|&(i, _)| i == 0 || printed.as_bytes()[i - 1] == b' ')?.0;
            Some(&printed[at + "bench ".len()..])
        })
        .collect();
    if let Some(failed) = lines.iter().find(|l| l.starts_with("failed")) {
        bail!("node{node}: bench {failed}");
    }
    let start = lines
        .iter()
        .position(|l| l.starts_with("ranks_cost_warm_up_done"))
        .with_context(|| format!("node{node} printed no `bench ranks_cost_warm_up_done`"))?;
    Ok(lines[start + 1..].iter().map(|l| l.to_string()).collect())
}

/// Every value of figure `name` in `lines`, in order: one a repetition.
fn every(lines: &[String], name: &str) -> Vec<f64> {
    lines.iter().filter_map(|l| l.strip_prefix(name)?.strip_prefix(": ")?.split(' ').next()?.parse().ok()).collect()
}

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// One operation's per-repetition medians, to the node of the same rank and to the other's.
#[derive(Clone, Debug, PartialEq)]
pub struct Pair {
    pub within: Vec<f64>,
    pub across: Vec<f64>,
}

impl Pair {
    fn of(lines: &[String], name: impl Fn(usize) -> String, (near, far): (usize, usize)) -> anyhow::Result<Self> {
        let (within, across) = (every(lines, &name(near)), every(lines, &name(far)));
        anyhow::ensure!(
            !within.is_empty() && within.len() == across.len(),
            "{} runs of {} against {} of {}: every repetition times both",
            within.len(),
            name(near),
            across.len(),
            name(far)
        );
        anyhow::ensure!(within.iter().chain(&across).all(|&v| v > 0.0), "a run of {} took no time", name(near));
        Ok(Self { within, across })
    }

    /// The medians over the repetitions (within, across), in microseconds.
    pub fn medians(&self) -> (f64, f64) {
        (median(&self.within), median(&self.across))
    }

    /// The ratio of the medians, and the smallest and largest ratio of one repetition.
    pub fn ratio(&self) -> (f64, f64, f64) {
        let (within, across) = self.medians();
        let each: Vec<f64> = self.within.iter().zip(&self.across).map(|(w, a)| a / w).collect();
        (across / within, each.iter().copied().fold(f64::INFINITY, f64::min), each.iter().copied().fold(0.0, f64::max))
    }
}

/// What a run measured.
#[derive(Clone, Debug, PartialEq)]
pub struct RanksCost {
    pub fad: Pair,
    pub write: Pair,
}

impl RanksCost {
    /// From node 0's timed lines, its targets `near` (same rank) and `far` (another).
    pub fn from_lines(lines: &[String], targets: (usize, usize)) -> anyhow::Result<Self> {
        Ok(Self {
            fad: Pair::of(lines, |n| format!("fad64_to_node{n}_median_us"), targets)?,
            write: Pair::of(lines, |n| format!("rdma_write_{WRITE_BYTES}b_to_node{n}_median_us"), targets)?,
        })
    }

    /// The figures, as printed: one `name: value unit (how)` line each, in [`FIGURES`]' order.
    pub fn figures(&self, (near, far): (usize, usize)) -> Vec<String> {
        let reps = self.fad.within.len();
        let no_goal = "no goal: a figure for docs/scaling.md";
        let (fad_within, fad_across) = self.fad.medians();
        let (fad_ratio, fad_low, fad_high) = self.fad.ratio();
        let (write_within, write_across) = self.write.medians();
        let (write_ratio, write_low, write_high) = self.write.ratio();
        let mib_s = |us: f64| WRITE_BYTES as f64 / (1024.0 * 1024.0) / (us / 1e6);
        let spread = |v: &[f64]| {
            format!(
                "runs' medians {:.0} to {:.0} us",
                v.iter().copied().fold(f64::INFINITY, f64::min),
                v.iter().copied().fold(0.0, f64::max)
            )
        };
        vec![
            format!(
                "fad_within_rank_median: {fad_within:.0} us (node 0 to node {near}, one FAD64 at a time; {})",
                spread(&self.fad.within)
            ),
            format!(
                "fad_across_ranks_median: {fad_across:.0} us (node 0 to node {far}, over MPI; {})",
                spread(&self.fad.across)
            ),
            format!(
                "fad_across_vs_within_ratio: {fad_ratio:.2} ratio (per repetition {fad_low:.2} to {fad_high:.2}; {no_goal})"
            ),
            format!(
                "rdma_64kib_write_within_rank_median: {write_within:.0} us = {:.1} MiB/s (node 0 to node {near}, one write at a time; {})",
                mib_s(write_within),
                spread(&self.write.within)
            ),
            format!(
                "rdma_64kib_write_across_ranks_median: {write_across:.0} us = {:.1} MiB/s (node 0 to node {far}, over MPI; {})",
                mib_s(write_across),
                spread(&self.write.across)
            ),
            format!(
                "rdma_64kib_write_across_vs_within_ratio: {write_ratio:.2} ratio (per repetition {write_low:.2} to {write_high:.2}; {no_goal})"
            ),
            format!("ranks_cost_repetitions: {reps} repetitions (each a median of its own run)"),
            format!("ranks_cost_nodes: {NODES} nodes over {RANKS} MPI ranks of this host, over TCP"),
        ]
    }
}

/// Runs the bench (`quick`: two short repetitions, for the runner's check that it runs).
pub(super) fn run(bench: &Bench, quick: bool) -> anyhow::Result<()> {
    let map = NodeMap::blocks(NODES, RANKS)?;
    let targets = targets(&map)?;
    let program = crate::mpi::build_ranks()?;
    let quick_arg = if quick { " ranks-cost-quick" } else { "" };
    let boot_args = format!("bench=ranks-cost ranks-cost-near={} ranks-cost-far={}{quick_arg}", targets.0, targets.1);
    let trace = match bench.trace_dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)?;
            Some(std::path::absolute(dir.join(format!("ranks-cost-{NODES}-nodes-{RANKS}-ranks.json")))?)
        }
        None => None,
    };
    let run = ClusterRun {
        nodes: NODES,
        ranks: RANKS,
        hosts: None,
        qemu: bench.qemu,
        load: Load::ktest(bench.images, true),
        boot_args: &boot_args,
        link: qemu_virt::LinkConfig::default(),
        trace: trace.as_deref(),
        timeout: Duration::from_secs(600),
    };
    println!(
        "ranks: {NODES} nodes over {RANKS} MPI ranks, node 0 to node {} (same rank) and {} (other)",
        targets.0, targets.1
    );
    let (code, output) = crate::mpi::run_built(&run, &program, Output::Keep)?;
    if code != 0 {
        let tail = output.len().saturating_sub(60);
        bail!("the run over ranks failed ({code}):\n{}", output[tail..].join("\n"));
    }
    let lines = timed_lines(&output, 0)?;
    for line in &lines {
        println!("timed: {line}");
    }
    println!("--- figures (each computed from the lines above) ---");
    for figure in RanksCost::from_lines(&lines, targets)?.figures(targets) {
        println!("{figure}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUTPUT: &str = "node0 a53 |   1.000 [rdma-bench 3] bench rdma_write_65536b_to_node1_median_us: 999 us
node0 a53 |   1.100 bench ranks_cost_warm_up_done: 2 repetitions follow
node2 a53 |   1.200 bench fad64_to_node1_median_us: 1 us
node0 a53 |   1.300 [fad-latency 4] bench fad64_to_node1_median_us: 40 us
node0 a53 |   1.310 [fad-latency 4] bench fad64_to_node1_p99_us: 90 us
node0 a53 |   1.400 [fad-latency 5] bench fad64_to_node2_median_us: 100 us
node0 a53 |   1.500 [rdma-bench 6] bench rdma_write_65536b_to_node1_median_us: 1000 us
node0 a53 |   1.600 [rdma-bench 7] bench rdma_write_65536b_to_node2_median_us: 4000 us
node0 a53 |   1.700 [fad-latency 8] bench fad64_to_node1_median_us: 50 us
node0 a53 |   1.800 [fad-latency 9] bench fad64_to_node2_median_us: 150 us
node0 a53 |   1.900 [rdma-bench 10] bench rdma_write_65536b_to_node1_median_us: 2000 us
node0 a53 |   2.000 [rdma-bench 11] bench rdma_write_65536b_to_node2_median_us: 6000 us
node0 a53 |   2.100 cannot spawn rdma-bench something
node0 finished
";

    fn output(text: &str) -> Vec<String> {
        text.lines().map(String::from).collect()
    }

    #[test]
    fn node_0_targets_a_node_of_its_rank_and_one_of_another() {
        assert_eq!(targets(&NodeMap::blocks(NODES, RANKS).unwrap()).unwrap(), (1, 2));
        assert_eq!(targets(&NodeMap::blocks(16, 4).unwrap()).unwrap(), (1, 4));
        assert!(targets(&NodeMap::blocks(4, 4).unwrap()).is_err(), "node 0 alone on its rank");
        assert!(targets(&NodeMap::blocks(4, 1).unwrap()).is_err(), "no other rank");
    }

    /// Only node 0's lines after its warm-up count; the figures are medians of the runs' medians.
    #[test]
    fn the_figures_come_from_node_0s_timed_lines() {
        let lines = timed_lines(&output(OUTPUT), 0).unwrap();
        assert_eq!(lines.len(), 9);
        let cost = RanksCost::from_lines(&lines, (1, 2)).unwrap();
        assert_eq!(cost.fad, Pair { within: vec![40.0, 50.0], across: vec![100.0, 150.0] });
        assert_eq!(cost.write.medians(), (2000.0, 6000.0));
        let (ratio, low, high) = cost.fad.ratio();
        assert_eq!((ratio, low, high), (3.0, 2.5, 3.0));
        let figures = cost.figures((1, 2));
        assert!(figures[1].starts_with("fad_across_ranks_median: 150 us"), "{}", figures[1]);
        assert!(figures[3].starts_with("rdma_64kib_write_within_rank_median: 2000 us = 31."), "{}", figures[3]);
        assert!(figures[5].starts_with("rdma_64kib_write_across_vs_within_ratio: 3.00 ratio"), "{}", figures[5]);
        // Every printed figure is one of FIGURES, in its order.
        let names: Vec<&str> = figures.iter().map(|f| f.split(':').next().unwrap()).collect();
        assert_eq!(names, FIGURES);
        // A changed line changes its figure.
        let changed = OUTPUT.replace("node2_median_us: 150 us", "node2_median_us: 250 us");
        let cost = RanksCost::from_lines(&timed_lines(&output(&changed), 0).unwrap(), (1, 2)).unwrap();
        assert_eq!(cost.fad.medians().1, 250.0);
    }

    #[test]
    fn a_missing_or_failed_measurement_is_an_error() {
        let no_warm_up = OUTPUT.replace("ranks_cost_warm_up_done", "something_else");
        assert!(timed_lines(&output(&no_warm_up), 0).unwrap_err().to_string().contains("warm_up_done"));
        let failed = format!("{OUTPUT}node0 a53 |   3.0 bench failed: rdma-bench failed\n");
        assert!(timed_lines(&output(&failed), 0).unwrap_err().to_string().contains("rdma-bench failed"));
        let one_sided: String =
            OUTPUT.lines().filter(|l| !l.contains("[fad-latency 9]")).map(|l| format!("{l}\n")).collect();
        let lines = timed_lines(&output(&one_sided), 0).unwrap();
        assert!(RanksCost::from_lines(&lines, (1, 2)).is_err(), "a repetition without its far run");
        assert!(RanksCost::from_lines(&[], (1, 2)).is_err());
    }
}
