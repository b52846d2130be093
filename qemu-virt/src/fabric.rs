//! What the nodes of a cluster share: the interconnect, every node's DDR (for the global
//! address window), liveness, counters, the trace, and a way to reach every node's platform
//! (a packet delivered to a node may raise one of its PL interrupt lines).

use crate::counters::NodeCounters;
use crate::interconnect::Interconnect;
use crate::models::sysblock::ClusterView;
use crate::platform::Platform;
use crate::shm::Ddr;
use crate::signal::Signal;
use crate::trace::TraceWriter;
use hal::sysblock::NodeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};

pub struct Fabric {
    pub interconnect: Arc<Interconnect>,
    ddrs: Vec<Arc<Ddr>>,
    alive: Vec<Arc<AtomicBool>>,
    /// Nodes that wrote their system block's RUN_DONE.
    done: Vec<AtomicBool>,
    pub counters: Vec<Arc<NodeCounters>>,
    pub trace: Option<Arc<TraceWriter>>,
    /// Raised when a node's `alive` or `done` changes (the cluster's monitor waits on it).
    pub membership: Arc<Signal>,
    /// Weak: every platform holds the fabric, so strong references back would be a cycle and
    /// neither would ever be freed. Whoever built the platforms (the cluster) owns them.
    platforms: OnceLock<Vec<Weak<Platform>>>,
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlatformsError {
    #[error("the fabric's platforms are already set")]
    AlreadySet,
    #[error("the fabric has {expected} nodes, not {got} platforms")]
    Count { expected: usize, got: usize },
}

impl Fabric {
    /// `counters` and `trace` are shared with the interconnect's observers; whoever clears an
    /// `alive` flag raises `membership`.
    pub fn new(
        interconnect: Arc<Interconnect>,
        ddrs: Vec<Arc<Ddr>>,
        alive: Vec<Arc<AtomicBool>>,
        membership: Arc<Signal>,
        counters: Vec<Arc<NodeCounters>>,
        trace: Option<Arc<TraceWriter>>,
    ) -> Self {
        let done = alive.iter().map(|_| AtomicBool::new(false)).collect();
        Self { interconnect, ddrs, alive, done, counters, trace, membership, platforms: OnceLock::new() }
    }

    pub fn nodes(&self) -> usize {
        self.ddrs.len()
    }

    /// A node's DDR, while its QEMU runs.
    pub fn ddr(&self, node: usize) -> Option<&Ddr> {
        let alive = self.alive.get(node)?.load(Ordering::Acquire);
        alive.then(|| &*self.ddrs[node])
    }

    /// Makes the platforms reachable by node index, once all of them exist (platform `i` is node
    /// `i`'s). Until then, and after a platform is dropped, packets to that node are refused.
    pub fn set_platforms(&self, platforms: &[Arc<Platform>]) -> Result<(), PlatformsError> {
        if platforms.len() != self.nodes() {
            return Err(PlatformsError::Count { expected: self.nodes(), got: platforms.len() });
        }
        self.platforms.set(platforms.iter().map(Arc::downgrade).collect()).map_err(|_| PlatformsError::AlreadySet)
    }

    /// Every platform still there, with its node index.
    pub fn platforms(&self) -> impl Iterator<Item = Arc<Platform>> + '_ {
        self.platforms.get().into_iter().flatten().filter_map(Weak::upgrade)
    }

    /// Node `node`'s platform, if it is set and still exists.
    pub fn platform(&self, node: usize) -> Option<Arc<Platform>> {
        self.platforms.get()?.get(node)?.upgrade()
    }
}

fn node_set(flags: impl Iterator<Item = bool>) -> NodeSet {
    flags.enumerate().filter(|(_, f)| *f).fold(NodeSet::default(), |set, (n, _)| set.with(n as u16))
}

/// The system blocks read the cluster's state from here (`docs/hw/sysblock.md`).
impl ClusterView for Fabric {
    fn done(&self) -> NodeSet {
        node_set(self.done.iter().map(|d| d.load(Ordering::Acquire)))
    }

    fn alive(&self) -> NodeSet {
        node_set(self.alive.iter().map(|a| a.load(Ordering::Acquire)))
    }

    fn report_done(&self, node: u16) {
        if let Some(done) = self.done.get(usize::from(node)) {
            done.store(true, Ordering::Release);
            self.membership.raise();
        }
    }
}
