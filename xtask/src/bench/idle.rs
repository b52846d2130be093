//! `cargo xtask bench idle`: the host CPU an idle cluster takes (`host_cpu`), per node and per
//! kind of thread. The nodes boot the kernel image, serve (boot argument `serve`) and wait at
//! their console prompt; nothing runs on them. Each share is measured over [`INTERVAL`] after
//! [`SETTLE`], as percent of one core, from `/proc`.

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
/// The goal: an idle node costs the host at most this share of one core, all its threads and
/// its part of the platform's together.
pub const GOAL_PERCENT_PER_NODE: f64 = 2.0;

/// What an idle cluster of `nodes` took, per node and kind, in percent of one core.
#[derive(Debug)]
pub struct IdleShares {
    pub nodes: usize,
    /// Per node: A53, R5 and QEMU's other threads.
    pub per_node: Vec<HashMap<Kind, f64>>,
    /// The platform's threads (this process), for the whole cluster.
    pub platform: f64,
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
}

/// Boots `nodes` nodes of the kernel image with their R5s, waits until every one waits at its
/// prompt, and measures what their threads take over `interval`.
pub fn measure(qemu: &Path, images: &Images, nodes: usize, interval: Duration) -> anyhow::Result<IdleShares> {
    let dir = RuntimeDir::new("idle")?;
    let (tx, rx) = mpsc::channel();
    let spec = ClusterSpec { nodes: node_specs(nodes, Load::kernel(images), "serve"), ..ClusterSpec::default() };
    let cluster = Cluster::start(&spec, qemu, &dir.0, tx)?;
    let mut waiting: Vec<bool> = vec![true; nodes];
    let give_up = Instant::now() + BOOT_TIMEOUT;
    while waiting.iter().any(|&w| w) {
        let left = give_up.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left).context("a node did not reach its console prompt")? {
            Event::Line { node, line, .. } if line.text.starts_with("console ready") => waiting[node] = false,
            Event::Line { .. } => {}
            Event::Exited { node, status } => anyhow::bail!("node{node} ended while booting ({status:?})"),
        }
    }
    std::thread::sleep(SETTLE);
    let pids: Vec<u32> = cluster.nodes().iter().map(|n| n.pid()).collect();
    let before = Snapshot::take(&pids)?;
    std::thread::sleep(interval);
    let after = Snapshot::take(&pids)?;
    if let Ok(Event::Exited { node, status }) = rx.try_recv() {
        anyhow::bail!("node{node} ended while idle ({status:?})");
    }
    let shares = before.shares(&after, cpus());
    let per_node = (0..nodes)
        .map(|n| Kind::ALL.iter().map(|&k| (k, shares.get(&(Some(n), k)).copied().unwrap_or(0.0))).collect())
        .collect();
    let platform = shares.get(&(None, Kind::Platform)).copied().unwrap_or(0.0);
    drop(cluster);
    Ok(IdleShares { nodes, per_node, platform })
}

/// Prints the figures of one cluster size, each beside its goal where it has one.
pub fn print(shares: &IdleShares) {
    let n = shares.nodes;
    for kind in Kind::ALL {
        println!(
            "idle_{n}_nodes_{}: {:.2} % of a core per node (largest on one node {:.2} %)",
            kind.name(),
            shares.per_node_average(kind),
            if kind == Kind::Platform { shares.per_node_average(kind) } else { shares.max_on_a_node(kind) }
        );
    }
    let total = shares.total_per_node();
    super::with_goal(
        &format!("idle_{n}_nodes_host_cpu_per_node"),
        total,
        "% of a core",
        &format!("<= {GOAL_PERCENT_PER_NODE}%"),
        total <= GOAL_PERCENT_PER_NODE,
    );
}
