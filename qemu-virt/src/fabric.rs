//! The transport of the nodes this process runs (`transport`): the interconnect, their DDR (for
//! the global window), the liveness of every node of the cluster, counters, the trace, and the
//! [`Endpoint`] of each node it hosts, registered once all of them exist.
//!
//! A cluster in one process is a fabric that hosts every node. A cluster spread over several
//! processes (`ranks`) has a fabric in each that hosts that process's share: the other nodes
//! have no DDR and no endpoint here, their liveness is what their host last said
//! ([`Fabric::hear`]), and what goes to them is carried by the ranks' transport through the
//! same sending half ([`Fabric::carry_packet`], [`Fabric::carry_window`]) and taken at the far
//! end by the same arriving half ([`Fabric::packet_arrives`], [`Fabric::load_arrives`],
//! [`Fabric::store_arrives`]).

use crate::counters::NodeCounters;
use crate::interconnect::{Coordinates, Datagram, Interconnect, channel};
use crate::shm::Ddr;
use crate::signal::Signal;
use crate::trace::TraceWriter;
use crate::transport::{Carried, ClusterView, Delivery, Endpoint, Local, Transport};
use hal::sysblock::NodeSet;
use proto::forward::Status;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};

pub struct Fabric {
    pub interconnect: Arc<Interconnect>,
    /// Every node of the cluster: its DDR if this process hosts it, `None` if another does.
    ddrs: Vec<Option<Arc<Ddr>>>,
    /// A hosted node's is set while its QEMU runs; another process's node's is what its host
    /// last said (`hear`).
    alive: Vec<Arc<AtomicBool>>,
    /// Nodes that wrote their system block's RUN_DONE.
    done: Vec<AtomicBool>,
    /// Every node's; those of nodes hosted elsewhere stay unused (their host counts them).
    pub counters: Vec<Arc<NodeCounters>>,
    pub trace: Option<Arc<TraceWriter>>,
    /// Raised when a node's `alive` or `done` changes (the cluster's monitor waits on it).
    pub membership: Arc<Signal>,
    /// By node, `None` for a node hosted elsewhere. Weak: every platform holds the fabric, so
    /// strong references back would be a cycle and neither would ever be freed. Whoever built
    /// the platforms (the cluster) owns them.
    endpoints: OnceLock<Vec<Option<Weak<dyn Endpoint>>>>,
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum EndpointsError {
    #[error("the fabric's endpoints are already set")]
    AlreadySet,
    #[error("the fabric hosts {expected} nodes, not {got} endpoints")]
    Count { expected: usize, got: usize },
}

impl Fabric {
    /// A fabric that hosts every node. `counters` and `trace` are shared with the
    /// interconnect's observers; whoever clears an `alive` flag raises `membership`.
    pub fn new(
        interconnect: Arc<Interconnect>,
        ddrs: Vec<Arc<Ddr>>,
        alive: Vec<Arc<AtomicBool>>,
        membership: Arc<Signal>,
        counters: Vec<Arc<NodeCounters>>,
        trace: Option<Arc<TraceWriter>>,
    ) -> Self {
        Self::hosting(interconnect, ddrs.into_iter().map(Some).collect(), alive, membership, counters, trace)
    }

    /// A fabric that hosts the nodes whose DDR is given, of a cluster of `ddrs.len()` nodes. The
    /// `alive` flags of the others start as given (clear: not heard of yet).
    pub fn hosting(
        interconnect: Arc<Interconnect>,
        ddrs: Vec<Option<Arc<Ddr>>>,
        alive: Vec<Arc<AtomicBool>>,
        membership: Arc<Signal>,
        counters: Vec<Arc<NodeCounters>>,
        trace: Option<Arc<TraceWriter>>,
    ) -> Self {
        let done = alive.iter().map(|_| AtomicBool::new(false)).collect();
        Self { interconnect, ddrs, alive, done, counters, trace, membership, endpoints: OnceLock::new() }
    }

    /// Whether this process runs node `node`.
    pub fn hosts(&self, node: usize) -> bool {
        self.ddrs.get(node).is_some_and(Option::is_some)
    }

    /// The nodes this process runs, in order.
    pub fn hosted(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.nodes()).filter(|&n| self.hosts(n))
    }

    /// A hosted node's DDR, while its QEMU runs.
    pub fn ddr(&self, node: usize) -> Option<&Ddr> {
        let alive = self.alive.get(node)?.load(Ordering::Acquire);
        alive.then(|| self.ddrs[node].as_deref()).flatten()
    }

    /// The size of a hosted node's DDR.
    pub fn ddr_bytes(&self, node: usize) -> Option<u64> {
        Some(self.ddrs.get(node)?.as_ref()?.len() as u64)
    }

    /// What node `node`'s platform uses of its own node (a node this fabric hosts).
    pub fn local(&self, node: usize) -> Local {
        Local::new(
            node,
            self.ddrs[node].clone().expect("a node this fabric hosts"),
            self.alive[node].clone(),
            self.counters[node].clone(),
            self.trace.clone(),
        )
    }

    /// Makes the hosted nodes reachable by index, once all of them exist: `endpoints` are theirs,
    /// in order (every node's, in one process). Until then, and after an endpoint is dropped,
    /// packets to that node are refused and its datagrams go nowhere.
    pub fn set_endpoints<E: Endpoint + 'static>(&self, endpoints: &[Arc<E>]) -> Result<(), EndpointsError> {
        let hosted: Vec<usize> = self.hosted().collect();
        if endpoints.len() != hosted.len() {
            return Err(EndpointsError::Count { expected: hosted.len(), got: endpoints.len() });
        }
        let mut weak: Vec<Option<Weak<dyn Endpoint>>> = vec![None; self.nodes()];
        for (&node, endpoint) in hosted.iter().zip(endpoints) {
            weak[node] = Some(Arc::downgrade(endpoint) as Weak<dyn Endpoint>);
        }
        self.endpoints.set(weak.clone()).map_err(|_| EndpointsError::AlreadySet)?;
        for (node, endpoint) in weak.into_iter().enumerate() {
            let Some(endpoint) = endpoint else { continue };
            self.interconnect.set_receiver(
                node,
                Box::new(move |d: Datagram| {
                    if let Some(endpoint) = endpoint.upgrade() {
                        endpoint.datagram(d);
                    }
                }),
            );
        }
        Ok(())
    }

    /// Every endpoint still there.
    pub fn endpoints(&self) -> impl Iterator<Item = Arc<dyn Endpoint>> + '_ {
        self.endpoints.get().into_iter().flatten().flatten().filter_map(Weak::upgrade)
    }

    /// Node `node`'s endpoint, if this process hosts it, it is set and still exists.
    pub fn endpoint(&self, node: usize) -> Option<Arc<dyn Endpoint>> {
        self.endpoints.get()?.get(node)?.as_ref()?.upgrade()
    }

    /// What the host of node `node` (another process) last said of it. Raises `membership`
    /// when that changes what this process knew; a hosted node's state is its own, not
    /// heard, and stays as it is.
    pub fn hear(&self, node: usize, alive: bool, done: bool) {
        if node >= self.nodes() || self.hosts(node) {
            return;
        }
        let alive_changed = self.alive[node].swap(alive, Ordering::AcqRel) != alive;
        let newly_done = done && !self.done[node].swap(true, Ordering::AcqRel);
        if alive_changed || newly_done {
            self.membership.raise();
        }
    }

    /// The sending half of a packet of node `src` to node `dst`, `len` bytes: counts it, crosses
    /// the links (a link-reliable transaction), has `arrive` take it at the far end, and counts
    /// and traces the answer. No route to `dst` is a NACK at the sender's edge.
    pub fn carry_packet(&self, src: usize, dst: usize, len: usize, arrive: impl FnOnce() -> Carried) -> Carried {
        NodeCounters::bump(&self.counters[src].packets_sent);
        let carried = if dst < self.nodes() {
            // As for a window store to a stopped node, the links carry the packet and the dead
            // end answers with an error response.
            self.interconnect.transact(src, dst);
            arrive()
        } else {
            // No route: the interconnect refuses it at the sender's edge.
            Carried { delivery: Delivery::Nack, touched: false }
        };
        match carried.delivery {
            Delivery::Ack => {}
            // The vmbox answers at once (`Pending` is for an asynchronous interconnect).
            Delivery::Nack | Delivery::Pending | Delivery::Unreachable => {
                NodeCounters::bump(&self.counters[src].packets_nacked)
            }
        }
        if let Some(t) = &self.trace {
            let what = match carried.delivery {
                Delivery::Ack => "packet",
                Delivery::Unreachable => "packet to an unreachable node",
                Delivery::Nack | Delivery::Pending => "packet nacked",
            };
            t.packet(src, dst, channel::PACKETIZER, len, what);
        }
        carried
    }

    /// The arriving half of a packet: what hosted node `dst`'s vmbox makes of it (counted at
    /// `dst` when taken). A node that has stopped is `Unreachable`, one without a platform yet
    /// refuses it.
    pub fn packet_arrives(&self, dst: usize, iface: u8, bytes: &[u8]) -> Carried {
        let carried = match (self.ddr(dst), self.endpoint(dst)) {
            (Some(_), Some(endpoint)) => Carried { delivery: endpoint.packet(iface, bytes), touched: true },
            (None, _) => Carried { delivery: Delivery::Unreachable, touched: false },
            // The cluster is starting: the node has no platform yet.
            (Some(_), None) => Carried { delivery: Delivery::Nack, touched: false },
        };
        if carried.delivery == Delivery::Ack {
            NodeCounters::bump(&self.counters[dst].packets_received);
        }
        carried
    }

    /// The sending half of a window access of node `src` to node `dst`: it crosses the links,
    /// and `arrive` does it at the far end. A load waits for its data to come back; a store is
    /// posted (Unimem remote stores are: the CPU goes on once the store has left), so it does
    /// not wait the round trip. A node beyond the cluster is `Unmapped`, with no crossing.
    pub fn carry_window<T>(
        &self,
        src: usize,
        dst: usize,
        size: u32,
        store: bool,
        arrive: impl FnOnce() -> Result<T, Status>,
    ) -> Result<T, Status> {
        if dst >= self.nodes() {
            return Err(Status::Unmapped);
        }
        let net = &self.interconnect;
        let lost = if store { net.transact_posted(src, dst) } else { net.transact(src, dst) };
        if let Some(t) = &self.trace {
            let what = if lost > 0 { "window access (retried)" } else { "window access" };
            t.packet(src, dst, channel::WINDOW, size as usize, what);
        }
        arrive()
    }

    /// The arriving half of a window load on hosted node `dst`'s DDR: `DeviceError` if it has
    /// stopped (or is not hosted here), `Unmapped` if `pa` is not in its DDR.
    pub fn load_arrives(&self, dst: usize, pa: u64, size: u32) -> Result<u128, Status> {
        let ddr = self.ddr(dst).ok_or(Status::DeviceError)?;
        ddr.read(pa, size).ok_or(Status::Unmapped)
    }

    /// The arriving half of a window store, with the answers of [`load_arrives`](Self::load_arrives).
    pub fn store_arrives(&self, dst: usize, pa: u64, size: u32, value: u128) -> Result<(), Status> {
        let ddr = self.ddr(dst).ok_or(Status::DeviceError)?;
        ddr.write(pa, size, value).ok_or(Status::Unmapped)
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

impl Transport for Fabric {
    fn nodes(&self) -> usize {
        self.ddrs.len()
    }

    fn coordinates(&self, node: usize) -> Coordinates {
        self.interconnect.coordinates(node)
    }

    /// Takes no lock of its own: the destination's vmbox lock, in `Endpoint::packet`, is the
    /// only one (the interconnect's random numbers and link counters, and the trace, are
    /// leaves).
    fn deliver_packet(&self, src: usize, dst: usize, iface: u8, bytes: &[u8]) -> Carried {
        self.carry_packet(src, dst, bytes.len(), || self.packet_arrives(dst, iface, bytes))
    }

    fn resample_lines(&self, node: usize) {
        if let Some(endpoint) = self.endpoint(node) {
            endpoint.resample_lines();
        }
    }

    fn remote_load(&self, src: usize, dst: usize, pa: u64, size: u32) -> Result<u128, Status> {
        self.carry_window(src, dst, size, false, || self.load_arrives(dst, pa, size))
    }

    fn remote_store(&self, src: usize, dst: usize, pa: u64, size: u32, value: u128) -> Result<(), Status> {
        self.carry_window(src, dst, size, true, || self.store_arrives(dst, pa, size, value))
    }

    fn send_datagrams(&self, datagrams: Vec<Datagram>) {
        self.interconnect.send_all(datagrams);
    }
}
