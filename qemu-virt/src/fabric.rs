//! What the nodes of a cluster share: the interconnect, every node's DDR (for the global
//! address window), liveness, counters and the trace.

use crate::counters::NodeCounters;
use crate::interconnect::Interconnect;
use crate::shm::Ddr;
use crate::trace::TraceWriter;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

pub struct Fabric {
    pub interconnect: Arc<Interconnect>,
    ddrs: Vec<Arc<Ddr>>,
    alive: Vec<Arc<AtomicBool>>,
    pub counters: Vec<Arc<NodeCounters>>,
    pub trace: Option<Arc<TraceWriter>>,
}

impl Fabric {
    /// `counters` and `trace` are shared with the interconnect's observers.
    pub fn new(
        interconnect: Arc<Interconnect>,
        ddrs: Vec<Arc<Ddr>>,
        alive: Vec<Arc<AtomicBool>>,
        counters: Vec<Arc<NodeCounters>>,
        trace: Option<Arc<TraceWriter>>,
    ) -> Self {
        Self { interconnect, ddrs, alive, counters, trace }
    }

    pub fn nodes(&self) -> usize {
        self.ddrs.len()
    }

    /// A node's DDR, while its QEMU runs.
    pub fn ddr(&self, node: usize) -> Option<&Ddr> {
        let alive = self.alive.get(node)?.load(Ordering::Acquire);
        alive.then(|| &*self.ddrs[node])
    }
}
