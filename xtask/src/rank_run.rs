//! One rank of a cluster spread over MPI ranks (`cargo xtask qemu --ranks H`; feature `mpi`):
//! the hidden command `rank` that `mpirun` starts once per rank (`crate::mpi::launch`).
//!
//! Each rank starts its share of the nodes (`NodeMap::blocks`) paused, with a fabric that hosts
//! them and the ranks' transport over the MPI link (`Cluster::start_share`), says which processes
//! it has (`crate::mpi::started_line`), waits until every rank has started, lets its guests run
//! and prints its nodes' lines as `cargo xtask qemu` does (`nodeK a53 | ...`). At the end every
//! rank sends its nodes' verdicts to rank 0, which prints the summary of the whole cluster
//! ("every node finished cleanly", or the failures, the nodes of a rank that was lost or never
//! started among them) and exits non-zero on a failure. With a trace, each rank writes its own
//! (`crate::mpi::rank_trace`), which the launcher merges.

use crate::outcome::{NodeEnd, NodeOutcome, RunReport};
use crate::qemu_run::{Load, RuntimeDir, node_specs, watch};
use anyhow::{Context, bail};
use qemu_virt::mpi_link::{Handler, Kind, Link, LinkConfig as MpiConfig, MpiRankLink, Rank, Reply};
use qemu_virt::ranks::{NodeMap, RankLink};
use qemu_virt::{Cluster, ClusterSpec, LinkConfig};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// A rank's verdicts to rank 0: one failure a line (none: its nodes finished cleanly).
const VERDICTS: Kind = 1;
/// How long a rank waits for every other to start its nodes: a busy host starts QEMUs slowly.
const START: Duration = Duration::from_secs(180);
/// The link's watch while the ranks start: generous, since a rank that starts its QEMUs before
/// it serves the link is silent meanwhile, and a rank lost by mistake is lost for good.
const LINK: MpiConfig = MpiConfig { heartbeat: Duration::from_millis(250), lost_after: Duration::from_secs(30) };
/// The watch once every rank has started, and so serves the link (its progress thread
/// heartbeats whatever its QEMUs do): a rank that dies is found, and its nodes unreachable,
/// within 4 s. Long enough for a loaded host (ranks were silent up to 2.25 s here under a load
/// of 12 on 2 cores), well inside the 10 s a guest waits for a forwarded access
/// (`docs/hw/forwarding.md`): a packet or a window access to a rank that died holds its node's
/// platform until the rank is found lost, and the node's other accesses wait behind it.
const RUNNING: MpiConfig = MpiConfig { heartbeat: Duration::from_millis(100), lost_after: Duration::from_secs(4) };

/// What `mpirun` passes each rank.
#[derive(Clone, Debug)]
pub struct RankOptions {
    pub nodes: usize,
    pub qemu: PathBuf,
    pub kernel: PathBuf,
    pub r5: Option<PathBuf>,
    pub store: PathBuf,
    pub boot_args: String,
    pub link: LinkConfig,
    pub timeout: Duration,
    /// The run's trace: this rank writes its share beside it (`crate::mpi::rank_trace`).
    pub trace: Option<PathBuf>,
}

/// Rank 0's collection of the others' verdicts.
#[derive(Default)]
struct Verdicts {
    by_rank: Mutex<BTreeMap<Rank, Vec<String>>>,
    changed: Condvar,
}

impl Handler for Verdicts {
    fn message(&self, from: Rank, kind: Kind, payload: Vec<u8>) {
        if kind == VERDICTS {
            let lines = String::from_utf8_lossy(&payload).lines().map(String::from).collect();
            self.by_rank.lock().unwrap_or_else(|e| e.into_inner()).insert(from, lines);
            self.changed.notify_all();
        }
    }

    fn request(&self, _: Rank, _: Kind, _: Vec<u8>, reply: Reply) {
        let _ = reply.refuse("a rank takes no requests but the transport's");
    }

    fn rank_lost(&self, _: Rank) {
        self.changed.notify_all();
    }
}

/// The hidden command `rank`.
pub fn rank(opts: RankOptions) -> anyhow::Result<()> {
    let link = Link::init(LINK)?;
    let (me, ranks) = (link.rank(), link.ranks());
    let map = NodeMap::blocks(opts.nodes, ranks)?;
    let verdicts = Arc::new(Verdicts::default());
    let link = Arc::new(MpiRankLink::new(link, Some(verdicts.clone())));
    let mine = map.nodes_of(me);
    let dir = RuntimeDir::new(&crate::mpi::rank_dir_tag(me))?;
    let load = Load { kernel: &opts.kernel, r5: opts.r5.as_deref(), store: &opts.store };
    let spec = ClusterSpec {
        nodes: node_specs(opts.nodes, load, &opts.boot_args),
        link: opts.link,
        trace: opts.trace.as_deref().map(|trace| crate::mpi::rank_trace(trace, me)),
        ..Default::default()
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let rank_link: Arc<dyn RankLink> = link.clone();
    let (mut cluster, transport) = Cluster::start_share(&spec, map.clone(), rank_link, &opts.qemu, &dir.0, tx)
        .with_context(|| format!("rank {me}: cannot start nodes {mine:?}"))?;
    let qemus: Vec<u32> = cluster.nodes().iter().map(|node| node.pid()).collect();
    println!("{}", crate::mpi::started_line(me, std::process::id(), &qemus));
    let mut failures = Vec::new();
    match transport.wait_for_peers(START) {
        Ok(()) => {
            link.mpi().set_watch(RUNNING)?;
            cluster.resume()?;
            let stop = AtomicBool::new(false);
            let deadline = Some(Instant::now() + opts.timeout);
            let report = watch(&rx, mine.clone(), opts.nodes, &stop, deadline, false, None);
            for (node, end) in report.nodes.iter().enumerate() {
                if end.end == NodeEnd::Hung {
                    cluster.kill(node);
                }
            }
            failures.extend(report_of(&report, mine.clone()));
        }
        Err(missing) => failures.extend(missing.iter().map(|r| format!("rank {r} did not start its nodes"))),
    }
    for (node, counters) in mine.clone().zip(cluster.shut_down()) {
        println!("node{node} counters: {counters}");
    }
    let silences: Vec<String> = link.mpi().longest_silences().iter().map(|d| format!("{d:.2?}")).collect();
    println!("rank {me}: the other ranks' longest silences: {}", silences.join(" "));
    drop(transport);
    let code = if me == 0 {
        let summary = gather(&link, &verdicts, &map, failures, opts.timeout + START);
        print_summary(&summary);
        i32::from(!summary.is_empty())
    } else {
        let _ = link.mpi().send(0, VERDICTS, failures.join("\n").into_bytes());
        0
    };
    match Arc::try_unwrap(link) {
        Ok(link) => {
            link.shutdown()?;
        }
        Err(_) => bail!("rank {me}: the link is still in use after the cluster stopped"),
    }
    if code != 0 {
        std::process::exit(code);
    }
    Ok(())
}

/// The failures of this rank's nodes.
fn report_of(report: &RunReport, mine: std::ops::Range<usize>) -> Vec<String> {
    let not_here = NodeOutcome { end: NodeEnd::Stopped, processes: Vec::new(), notes: Vec::new() };
    let only_mine = RunReport {
        nodes: report
            .nodes
            .iter()
            .enumerate()
            .map(|(n, o)| if mine.contains(&n) { o.clone() } else { not_here.clone() })
            .collect(),
    };
    only_mine.failures()
}

/// Rank 0: its own failures and every other rank's, in rank order; a rank lost or silent until
/// `within` has passed fails with every one of its nodes.
fn gather(
    link: &MpiRankLink,
    verdicts: &Verdicts,
    map: &NodeMap,
    mut failures: Vec<String>,
    within: Duration,
) -> Vec<String> {
    let until = Instant::now() + within;
    let others: Vec<Rank> = (1..map.ranks()).collect();
    let mut by_rank = verdicts.by_rank.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let lost = link.lost();
        let pending = others.iter().any(|r| !by_rank.contains_key(r) && !lost.contains(r));
        let now = Instant::now();
        if !pending || now >= until {
            break;
        }
        by_rank = verdicts.changed.wait_timeout(by_rank, (until - now).min(Duration::from_millis(500))).unwrap().0;
    }
    let lost = link.lost();
    for rank in others {
        match by_rank.get(&rank) {
            Some(lines) => failures.extend(lines.iter().cloned()),
            None => {
                let why =
                    if lost.contains(&rank) { "was lost (its host or process is gone)" } else { "sent no verdict" };
                failures.extend(map.nodes_of(rank).map(|node| format!("node{node}: its rank {rank} {why}")));
            }
        }
    }
    failures
}

fn print_summary(failures: &[String]) {
    if failures.is_empty() {
        println!("{}", crate::mpi::CLEAN);
    } else {
        println!("the run failed:");
        for line in failures {
            println!("  {line}");
        }
    }
}
