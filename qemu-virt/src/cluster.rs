//! A cluster of nodes: their QEMU processes, the shared fabric, the platform servers and the
//! interconnect's delivery thread, started and stopped together.
//!
//! Start-up: every node's QEMU starts paused, the fabric and device models are built once all
//! DDR files exist, and only then are the nodes released (`cont` over QMP), so no guest access
//! can reach a model that is not ready.

use crate::counters::Snapshot;
use crate::fabric::Fabric;
use crate::interconnect::{Interconnect, LinkConfig, Observers, qfdb_coordinates};
use crate::node::{Event, Node, NodeError, NodeSpec};
use crate::platform::{Looker, Platform};
use crate::ranks::{NodeMap, RankLink, RankTransport};
use crate::signal::Signal;
use crate::trace::TraceWriter;
use crate::transport::ClusterView;
use crate::transport::Transport;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::thread::JoinHandle;
use std::time::Duration;

#[derive(Clone, Debug, Default)]
pub struct ClusterSpec {
    pub nodes: Vec<NodeSpec>,
    pub link: LinkConfig,
    pub trace: Option<PathBuf>,
    /// Leave the nodes paused (for gdb): `continue` in gdb runs a node.
    pub paused: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error(transparent)]
    Node(#[from] NodeError),
    #[error("node {node}: {source}")]
    Platform { node: usize, source: crate::platform::MapError },
    #[error("cannot write the trace file {path}: {source}")]
    Trace { path: PathBuf, source: std::io::Error },
    #[error("a cluster has 1 to {max} nodes, not {0}", max = board::pl::MAX_NODES)]
    Size(usize),
    #[error(transparent)]
    Endpoints(#[from] crate::fabric::EndpointsError),
    #[error(transparent)]
    Rank(#[from] crate::ranks::RankError),
    #[error("the node map has {map} nodes, the cluster {spec}")]
    Map { map: usize, spec: usize },
}

pub struct Cluster {
    nodes: Vec<Node>,
    fabric: Arc<Fabric>,
    platforms: Vec<Arc<Platform>>,
    servers: Vec<JoinHandle<()>>,
    /// Looks at every node's request slots after a kick (`platform::Looker`).
    looker: Looker,
    delivery: Option<JoinHandle<()>>,
    monitor: Option<Monitor>,
    /// The transport to the other ranks' nodes, for a rank's share of a cluster.
    ranks: Option<Arc<RankTransport>>,
}

/// Watches which nodes are alive and done (`docs/hw/sysblock.md`) and, when that changes,
/// re-samples every node's PL lines, so that `ALL_DONE` and `PEER_LOST` reach the guests. It
/// sleeps until a node reports RUN_DONE or its QEMU ends (`Fabric::membership`).
struct Monitor {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

impl Monitor {
    fn spawn(fabric: Arc<Fabric>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("cluster monitor".into())
            .spawn(move || {
                let mut generation = 0;
                let mut seen = (fabric.alive(), fabric.done());
                while !flag.load(Ordering::Acquire) {
                    generation = fabric.membership.wait_past(generation, Duration::from_secs(1));
                    let now = (fabric.alive(), fabric.done());
                    if now != seen {
                        seen = now;
                        for endpoint in fabric.endpoints() {
                            endpoint.resample_lines();
                        }
                    }
                }
            })
            .expect("a thread for the cluster's monitor");
        Self { stop, thread }
    }

    fn stop(self, fabric: &Fabric) {
        self.stop.store(true, Ordering::Release);
        fabric.membership.raise();
        let _ = self.thread.join();
    }
}

impl Cluster {
    /// Starts every node paused, builds the platform, then lets the nodes run.
    pub fn start(
        spec: &ClusterSpec,
        qemu: &Path,
        runtime_dir: &Path,
        events: Sender<Event>,
    ) -> Result<Self, ClusterError> {
        cluster_size(spec)?;
        let membership = Arc::new(Signal::default());
        let nodes = start_nodes(&spec.nodes, qemu, runtime_dir, &events, &membership)?;
        let (interconnect, counters, trace) = interconnect_of(spec)?;
        let fabric = Arc::new(Fabric::new(
            interconnect.clone(),
            nodes.iter().map(|node| node.ddr().clone()).collect(),
            nodes.iter().map(|node| node.alive().clone()).collect(),
            membership,
            counters,
            trace,
        ));
        let (platforms, servers, looker) = wire(&nodes, &fabric, fabric.clone())?;
        let delivery = Some(interconnect.spawn_delivery());
        let monitor = Some(Monitor::spawn(fabric.clone()));
        let mut cluster = Self { nodes, fabric, platforms, servers, looker, delivery, monitor, ranks: None };
        if !spec.paused {
            for node in &mut cluster.nodes {
                node.resume()?;
            }
        }
        Ok(cluster)
    }

    /// Starts this rank's share of a cluster spread over ranks (`docs/architecture.md`, "A
    /// cluster over several ranks"): of `spec`'s nodes, the ones `map` gives the link's rank,
    /// paused; a fabric that hosts them and a [`RankTransport`] over `link` to the others'. The
    /// nodes stay paused: wait for the other ranks ([`RankTransport::wait_for_peers`]), then
    /// [`resume`](Self::resume) them. The trace, if any, is this rank's nodes' alone.
    pub fn start_share(
        spec: &ClusterSpec,
        map: NodeMap,
        link: Arc<dyn RankLink>,
        qemu: &Path,
        runtime_dir: &Path,
        events: Sender<Event>,
    ) -> Result<(Self, Arc<RankTransport>), ClusterError> {
        let n = cluster_size(spec)?;
        if map.nodes() != n {
            return Err(ClusterError::Map { map: map.nodes(), spec: n });
        }
        let mine = map.nodes_of(link.rank());
        let membership = Arc::new(Signal::default());
        let nodes = start_nodes(&spec.nodes[mine], qemu, runtime_dir, &events, &membership)?;
        let (interconnect, counters, trace) = interconnect_of(spec)?;
        let hosted = |index: usize| nodes.iter().find(|node| node.index == index);
        let ddrs = (0..n).map(|i| hosted(i).map(|node| node.ddr().clone())).collect();
        // Another rank's node: not alive until its rank says so.
        let alive = (0..n).map(|i| hosted(i).map_or_else(Arc::default, |node| node.alive().clone())).collect();
        let fabric = Arc::new(Fabric::hosting(interconnect.clone(), ddrs, alive, membership, counters, trace));
        let transport = RankTransport::start(fabric.clone(), map, link)?;
        // A packet from another rank before the endpoints are set is NACKed (retried), as to a
        // node starting.
        let (platforms, servers, looker) = wire(&nodes, &fabric, transport.clone())?;
        let delivery = Some(interconnect.spawn_delivery());
        let monitor = Some(Monitor::spawn(fabric.clone()));
        let ranks = Some(transport.clone());
        Ok((Self { nodes, fabric, platforms, servers, looker, delivery, monitor, ranks }, transport))
    }

    /// Lets every node of this process run (after [`start_share`](Self::start_share)).
    pub fn resume(&mut self) -> Result<(), ClusterError> {
        for node in &mut self.nodes {
            node.resume()?;
        }
        Ok(())
    }

    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    pub fn node_mut(&mut self, index: usize) -> Option<&mut Node> {
        self.nodes.get_mut(index)
    }

    pub fn platform(&self, node: usize) -> Option<&Arc<Platform>> {
        self.platforms.get(node)
    }

    pub fn fabric(&self) -> &Arc<Fabric> {
        &self.fabric
    }

    /// Kills one node's QEMU, as a crash would (its `Exited` event follows).
    pub fn kill(&self, node: usize) {
        if let Some(n) = self.nodes.iter().find(|n| n.index == node) {
            n.kill();
        }
    }

    /// Every node's counters (this process's nodes, in order), with the WQEs its R5 refused (read from its queue sets).
    pub fn counters(&self) -> Vec<Snapshot> {
        self.nodes
            .iter()
            .map(|node| Snapshot { bad_wqes: bad_wqes(node.ddr()), ..self.fabric.counters[node.index].snapshot() })
            .collect()
    }

    /// Stops everything and removes the shared-memory files.
    pub fn shut_down(mut self) -> Vec<Snapshot> {
        self.stop()
    }

    fn stop(&mut self) -> Vec<Snapshot> {
        if let Some(m) = self.monitor.take() {
            m.stop(&self.fabric);
        }
        if let Some(ranks) = self.ranks.take() {
            ranks.stop();
        }
        for node in &mut self.nodes {
            node.shut_down();
        }
        self.fabric.interconnect.stop();
        if let Some(d) = self.delivery.take() {
            let _ = d.join();
        }
        for s in self.servers.drain(..) {
            let _ = s.join();
        }
        self.looker.stop();
        if let Some(t) = &self.fabric.trace {
            t.finish();
        }
        self.counters()
    }
}

/// The R5's refused WQEs, summed over every queue-set slot of `ddr`'s PLDMA area (a slot no PD
/// registered reads 0: the kernel zeroes a slot before it hands it out).
fn bad_wqes(ddr: &crate::shm::Ddr) -> u64 {
    use proto::rdma::queue::{QUEUE_SET_BYTES, QueueSet};
    let (start, size) = (board::layout::PLDMA_QUEUES, board::layout::PLDMA_QUEUES_SIZE);
    (start..start + size)
        .step_by(QUEUE_SET_BYTES as usize)
        // SAFETY: a queue set's fields are atomics and cells; any bit pattern is valid.
        .filter_map(|pa| unsafe { ddr.view::<QueueSet>(pa) })
        .map(|set| u64::from(set.bad_wqes.load(std::sync::atomic::Ordering::Relaxed)))
        .sum()
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The cluster's node count, if the platform can have that many.
fn cluster_size(spec: &ClusterSpec) -> Result<usize, ClusterError> {
    let n = spec.nodes.len();
    if n == 0 || n as u64 > board::pl::MAX_NODES {
        return Err(ClusterError::Size(n));
    }
    Ok(n)
}

/// Starts the QEMUs of `specs`, paused or not as each says.
fn start_nodes(
    specs: &[NodeSpec],
    qemu: &Path,
    runtime_dir: &Path,
    events: &Sender<Event>,
    membership: &Arc<Signal>,
) -> Result<Vec<Node>, ClusterError> {
    specs.iter().map(|spec| Ok(Node::start(spec, qemu, runtime_dir, events.clone(), membership.clone())?)).collect()
}

/// Every node's counters, by node index.
type Counters = Vec<Arc<crate::counters::NodeCounters>>;

/// The interconnect, every node's counters, and the trace.
type Links = (Arc<Interconnect>, Counters, Option<Arc<TraceWriter>>);

/// The platforms, their forwarding servers, and the looker that serves them.
type Wired = (Vec<Arc<Platform>>, Vec<JoinHandle<()>>, Looker);

/// The interconnect of all `spec`'s nodes, with its observers: a counter set per node and the
/// trace, if `spec` asks for one.
fn interconnect_of(spec: &ClusterSpec) -> Result<Links, ClusterError> {
    let n = spec.nodes.len();
    let trace = match &spec.trace {
        Some(path) => Some(Arc::new(
            TraceWriter::create(path, n).map_err(|source| ClusterError::Trace { path: path.clone(), source })?,
        )),
        None => None,
    };
    let counters: Vec<_> = (0..n).map(|_| Arc::default()).collect();
    let observers = Observers { counters: counters.clone(), trace: trace.clone() };
    let interconnect = Interconnect::with_observers((0..n).map(qfdb_coordinates).collect(), spec.link, observers);
    Ok((interconnect, counters, trace))
}

/// The platforms of `nodes` speaking to `transport`, their forwarding servers and the looker,
/// made reachable through `fabric` before any node runs (a packet can reach every node from
/// the first guest access on).
fn wire(nodes: &[Node], fabric: &Arc<Fabric>, transport: Arc<dyn Transport>) -> Result<Wired, ClusterError> {
    let looker = Looker::spawn();
    let mut platforms = Vec::with_capacity(nodes.len());
    let mut servers = Vec::with_capacity(nodes.len());
    for node in nodes {
        let channel = |node: &Node| {
            node.platform_channel().map_err(|source| NodeError::Io {
                node: node.index,
                what: "platform channel",
                source,
            })
        };
        let platform = Platform::new(fabric.local(node.index), transport.clone(), channel(node)?)
            .map_err(|source| ClusterError::Platform { node: node.index, source })?;
        if let Some(wake) = node.r5_wake() {
            platform.set_r5_wake(wake.clone());
        }
        servers.push(platform.spawn_server(channel(node)?, looker.nudge()));
        platforms.push(platform);
    }
    fabric.set_endpoints(&platforms)?;
    looker.set_platforms(&platforms);
    Ok((platforms, servers, looker))
}
