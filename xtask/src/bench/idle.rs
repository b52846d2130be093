//! `cargo xtask bench idle`: what a node costs its host. The host CPU an idle cluster takes
//! (`host_cpu`), per node and per kind of thread: the nodes boot the kernel image, serve (boot
//! argument `serve`) and wait at their console prompt; nothing runs on them. Then the same for a
//! busy cluster: the test image's `bench=busy`, every node sending FAD64s to the next. Each
//! share is measured over [`INTERVAL`] after [`SETTLE`], as percent of one core, from `/proc`;
//! with it the memory each node takes, from `/proc/PID/smaps_rollup` ([`Memory`]).

use crate::host_cpu::{Kind, Snapshot, cpus};
use crate::images::Images;
use crate::qemu_run::{Load, RuntimeDir, node_specs};
use anyhow::Context;
use qemu_virt::{Cluster, ClusterSpec, Event};
use std::collections::HashMap;
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long the nodes may take to reach their prompt.
const BOOT_TIMEOUT: Duration = Duration::from_secs(120);
/// Quiet after the last prompt before measuring: the boot's late work (the R5's last round, a
/// host thread's last look) ends first.
const SETTLE: Duration = Duration::from_secs(1);
/// The measured interval.
pub const INTERVAL: Duration = Duration::from_secs(10);
/// `bench idle --quick`'s: enough to see that every figure is measured, not to trust them.
pub const QUICK_INTERVAL: Duration = Duration::from_secs(2);
/// The goal: an idle node costs the host at most this share of one core, all its threads and
/// its part of the platform's together.
pub const GOAL_PERCENT_PER_NODE: f64 = 2.0;

/// How many nodes keep busy in the busy measurement: two, so that on a 2-core host each could
/// take a core (with four, the host's cores, not the nodes, would set the figure).
pub const BUSY_NODES: usize = 2;

/// What a cluster of `nodes` took, per node and kind, in percent of one core, and its memory.
#[derive(Debug)]
pub struct IdleShares {
    pub nodes: usize,
    /// Per node: A53, R5 and QEMU's other threads.
    pub per_node: Vec<HashMap<Kind, f64>>,
    /// The platform's threads (this process), for the whole cluster.
    pub platform: f64,
    /// Per node: its QEMU's memory.
    pub memory: Vec<Memory>,
    /// This process's memory (the platform's, with the rest of xtask).
    pub platform_memory: Memory,
}

/// A process's memory, KiB, from `/proc/PID/smaps_rollup`: its resident set (shared pages
/// whole), and its proportional set (each shared page divided among the processes that map
/// it: summed over the cluster's processes, every page counts once) with its part in shared
/// memory (a node's DDR is a `/dev/shm` file that its QEMU and the platform both map).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Memory {
    pub rss_kib: u64,
    pub pss_kib: u64,
    pub pss_shmem_kib: u64,
}

impl Memory {
    /// From the text of a `smaps_rollup`; `None` without its `Rss` and `Pss` lines.
    pub fn parse(rollup: &str) -> Option<Self> {
        let field = |name: &str| {
            rollup
                .lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(':')?.trim().strip_suffix("kB")?.trim().parse().ok())
        };
        Some(Self { rss_kib: field("Rss")?, pss_kib: field("Pss")?, pss_shmem_kib: field("Pss_Shmem").unwrap_or(0) })
    }

    pub fn of(pid: u32) -> anyhow::Result<Self> {
        let path = format!("/proc/{pid}/smaps_rollup");
        let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
        Self::parse(&text).with_context(|| format!("{path} has no Rss or Pss"))
    }
}

impl IdleShares {
    /// A kind's share averaged over the nodes (the platform's divided among them).
    pub fn per_node_average(&self, kind: Kind) -> f64 {
        match kind {
            Kind::Platform => self.platform / self.nodes as f64,
            _ => self.per_node.iter().map(|k| k.get(&kind).copied().unwrap_or(0.0)).sum::<f64>() / self.nodes as f64,
        }
    }

    /// Every kind's share per node, averaged.
    pub fn total_per_node(&self) -> f64 {
        Kind::ALL.iter().map(|&k| self.per_node_average(k)).sum()
    }

    /// The largest share of `kind` on any one node.
    pub fn max_on_a_node(&self, kind: Kind) -> f64 {
        self.per_node.iter().map(|k| k.get(&kind).copied().unwrap_or(0.0)).fold(0.0, f64::max)
    }

    /// MiB a node takes: the proportional sets of every node's QEMU and of the platform's
    /// process, over the nodes; and of it, the nodes' DDR pages.
    pub fn memory_per_node_mib(&self) -> (f64, f64) {
        let all = self.memory.iter().map(|m| m.pss_kib).sum::<u64>() + self.platform_memory.pss_kib;
        let shmem = self.memory.iter().map(|m| m.pss_shmem_kib).sum::<u64>() + self.platform_memory.pss_shmem_kib;
        let per_node = |kib: u64| kib as f64 / 1024.0 / self.nodes as f64;
        (per_node(all), per_node(shmem))
    }
}

/// Boots `nodes` nodes of the kernel image with their R5s, waits until every one waits at its
/// prompt, and measures what their threads take over `interval`.
pub fn measure(qemu: &Path, images: &Images, nodes: usize, interval: Duration) -> anyhow::Result<IdleShares> {
    let dir = RuntimeDir::new("idle")?;
    let (tx, rx) = mpsc::channel();
    let spec = ClusterSpec { nodes: node_specs(nodes, Load::kernel(images), "serve"), ..ClusterSpec::default() };
    let cluster = Cluster::start(&spec, qemu, &dir.0, tx)?;
    until_every_node(&rx, nodes, "console ready", |_| false, "booting")?;
    std::thread::sleep(SETTLE);
    let shares = shares_over(&cluster, interval)?;
    if let Ok(Event::Exited { node, status }) = rx.try_recv() {
        anyhow::bail!("node{node} ended while idle ({status:?})");
    }
    drop(cluster);
    Ok(shares)
}

/// Waits until each of the `nodes` nodes has printed a line that starts with `ready`; a line that
/// `fails`, a node that ends, or [`BOOT_TIMEOUT`] passing first is an error (the nodes were
/// `doing` it).
fn until_every_node(
    rx: &mpsc::Receiver<Event>,
    nodes: usize,
    ready: &str,
    fails: impl Fn(&str) -> bool,
    doing: &str,
) -> anyhow::Result<()> {
    let mut waiting: Vec<bool> = vec![true; nodes];
    let give_up = Instant::now() + BOOT_TIMEOUT;
    while waiting.iter().any(|&w| w) {
        let left = give_up.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left).with_context(|| format!("a node was still {doing} after {BOOT_TIMEOUT:?}"))? {
            Event::Line { node, line, .. } if line.text.starts_with(ready) => waiting[node] = false,
            Event::Line { node, line, .. } if fails(&line.text) => anyhow::bail!("node{node}: {}", line.text),
            Event::Line { .. } => {}
            Event::Exited { node, status } => anyhow::bail!("node{node} ended while {doing} ({status:?})"),
        }
    }
    Ok(())
}

/// What the cluster's threads take over `interval` from now, and its memory at the end.
fn shares_over(cluster: &Cluster, interval: Duration) -> anyhow::Result<IdleShares> {
    let pids: Vec<u32> = cluster.nodes().iter().map(|n| n.pid()).collect();
    let nodes = pids.len();
    let before = Snapshot::take(&pids)?;
    std::thread::sleep(interval);
    let after = Snapshot::take(&pids)?;
    let memory = pids.iter().map(|&pid| Memory::of(pid)).collect::<anyhow::Result<_>>()?;
    let platform_memory = Memory::of(std::process::id())?;
    let shares = before.shares(&after, cpus());
    let per_node = (0..nodes)
        .map(|n| Kind::ALL.iter().map(|&k| (k, shares.get(&(Some(n), k)).copied().unwrap_or(0.0))).collect())
        .collect();
    let platform = shares.get(&(None, Kind::Platform)).copied().unwrap_or(0.0);
    Ok(IdleShares { nodes, per_node, platform, memory, platform_memory })
}

/// Boots `nodes` nodes of the test image with their R5s and `bench=busy`, waits until every one
/// is at work, and measures what their threads take over `interval` while they are (the work
/// lasts past it: a node that ends first is an error, not a figure).
pub fn measure_busy(qemu: &Path, images: &Images, nodes: usize, interval: Duration) -> anyhow::Result<IdleShares> {
    let dir = RuntimeDir::new("busy")?;
    let (tx, rx) = mpsc::channel();
    let seconds = (SETTLE + interval).as_secs() + 10;
    let args = format!("bench=busy busy-seconds={seconds}");
    let spec = ClusterSpec { nodes: node_specs(nodes, Load::ktest(images, true), &args), ..ClusterSpec::default() };
    let cluster = Cluster::start(&spec, qemu, &dir.0, tx)?;
    let ended = |line: &str| line.starts_with("bench busy_end") || line.starts_with("bench failed");
    until_every_node(&rx, nodes, "bench busy_start", ended, "starting its work")?;
    std::thread::sleep(SETTLE);
    let shares = shares_over(&cluster, interval)?;
    let (mut done, mut finished) = (vec![false; nodes], 0);
    let give_up = Instant::now() + Duration::from_secs(seconds + 60);
    while finished < nodes {
        let left = give_up.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left).context("a busy node did not end")? {
            Event::Line { node, line, .. } if ended(&line.text) => {
                anyhow::ensure!(!line.text.starts_with("bench failed"), "node{node}: {}", line.text);
                done[node] = true;
            }
            Event::Line { .. } => {}
            Event::Exited { node, status } => {
                anyhow::ensure!(
                    status == Some(0) && done[node],
                    "node{node} ended with {status:?} before its work did"
                );
                finished += 1;
            }
        }
    }
    drop(cluster);
    Ok(shares)
}

/// Prints the figures of one cluster size, each beside its goal where it has one.
pub fn print(shares: &IdleShares) {
    for line in lines(shares) {
        println!("{line}");
    }
}

/// The figures of one idle cluster, as printed.
pub fn lines(shares: &IdleShares) -> Vec<String> {
    let mut lines = shares_lines("idle", shares);
    let total = shares.total_per_node();
    lines.push(super::goal_line(
        &format!("idle_{}_nodes_host_cpu_per_node", shares.nodes),
        total,
        "% of a core",
        &format!("<= {GOAL_PERCENT_PER_NODE}%"),
        total <= GOAL_PERCENT_PER_NODE,
    ));
    lines
}

/// Prints the figures of the busy cluster.
pub fn print_busy(shares: &IdleShares) {
    for line in busy_lines(shares) {
        println!("{line}");
    }
}

/// The figures of the busy cluster, as printed.
pub fn busy_lines(shares: &IdleShares) -> Vec<String> {
    let mut lines = shares_lines("busy", shares);
    let n = shares.nodes;
    let total = shares.total_per_node();
    let host = total * n as f64 / cpus() as f64;
    lines.push(format!(
        "busy_{n}_nodes_host_cpu_per_node: {total:.1} % of a core (every node sending FAD64s to the next; the cluster took {host:.0} % of this host's {} cores)",
        cpus()
    ));
    lines
}

/// The shares per kind of thread and the memory, as `WHAT_N_nodes_...` lines.
fn shares_lines(what: &str, shares: &IdleShares) -> Vec<String> {
    let n = shares.nodes;
    let (memory, ddr) = shares.memory_per_node_mib();
    let rss = shares.memory.iter().map(|m| m.rss_kib).max().unwrap_or(0) as f64 / 1024.0;
    let mut lines = vec![
        format!(
            "{what}_{n}_nodes_memory_per_node: {memory:.0} MiB (proportional set of its QEMU and its share of the platform's process; {ddr:.0} MiB of it the DDR pages touched)"
        ),
        format!("{what}_{n}_nodes_qemu_rss_largest: {rss:.0} MiB (one QEMU's resident set, shared pages whole)"),
    ];
    for kind in Kind::ALL {
        lines.push(format!(
            "{what}_{n}_nodes_{}: {:.2} % of a core per node (largest on one node {:.2} %)",
            kind.name(),
            shares.per_node_average(kind),
            if kind == Kind::Platform { shares.per_node_average(kind) } else { shares.max_on_a_node(kind) }
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROLLUP: &str = "5580a0a3c000-7ffd5cbf7000 ---p 00000000 00:00 0                          [rollup]
Rss:              334460 kB
Pss:              201234 kB
Pss_Dirty:        150000 kB
Pss_Anon:          90000 kB
Pss_File:          11234 kB
Pss_Shmem:        100000 kB
Shared_Clean:      20000 kB
";

    #[test]
    fn memory_is_read_from_smaps_rollup() {
        let m = Memory::parse(ROLLUP).unwrap();
        assert_eq!(m, Memory { rss_kib: 334_460, pss_kib: 201_234, pss_shmem_kib: 100_000 });
        assert_eq!(Memory::parse("Pss: 1 kB\n"), None, "no Rss");
        assert!(Memory::of(std::process::id()).unwrap().pss_kib > 0);
    }

    /// Every node's QEMU and the platform's process, each page once, over the nodes.
    #[test]
    fn memory_per_node_divides_the_clusters_processes_among_the_nodes() {
        let qemu = Memory { rss_kib: 400 * 1024, pss_kib: 300 * 1024, pss_shmem_kib: 100 * 1024 };
        let shares = IdleShares {
            nodes: 2,
            per_node: vec![HashMap::new(); 2],
            platform: 0.0,
            memory: vec![qemu, qemu],
            platform_memory: Memory { rss_kib: 0, pss_kib: 200 * 1024, pss_shmem_kib: 50 * 1024 },
        };
        assert_eq!(shares.memory_per_node_mib(), (400.0, 125.0));
    }
}
