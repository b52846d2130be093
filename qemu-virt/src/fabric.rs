//! The transport of a cluster whose nodes all run in this process (`transport`): the
//! interconnect, every node's DDR (for the global window), liveness, counters, the trace, and
//! every node's [`Endpoint`], registered once all of them exist.

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
    endpoints: OnceLock<Vec<Weak<dyn Endpoint>>>,
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum EndpointsError {
    #[error("the fabric's endpoints are already set")]
    AlreadySet,
    #[error("the fabric has {expected} nodes, not {got} endpoints")]
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
        Self { interconnect, ddrs, alive, done, counters, trace, membership, endpoints: OnceLock::new() }
    }

    /// A node's DDR, while its QEMU runs.
    pub fn ddr(&self, node: usize) -> Option<&Ddr> {
        let alive = self.alive.get(node)?.load(Ordering::Acquire);
        alive.then(|| &*self.ddrs[node])
    }

    /// What node `node`'s platform uses of its own node (`node < nodes()`).
    pub fn local(&self, node: usize) -> Local {
        Local::new(
            node,
            self.ddrs[node].clone(),
            self.alive[node].clone(),
            self.counters[node].clone(),
            self.trace.clone(),
        )
    }

    /// Makes the nodes reachable by index, once all of them exist (endpoint `i` is node `i`'s).
    /// Until then, and after an endpoint is dropped, packets to that node are refused and its
    /// datagrams go nowhere.
    pub fn set_endpoints<E: Endpoint + 'static>(&self, endpoints: &[Arc<E>]) -> Result<(), EndpointsError> {
        if endpoints.len() != self.nodes() {
            return Err(EndpointsError::Count { expected: self.nodes(), got: endpoints.len() });
        }
        let weak: Vec<Weak<dyn Endpoint>> = endpoints.iter().map(|e| Arc::downgrade(e) as Weak<dyn Endpoint>).collect();
        self.endpoints.set(weak.clone()).map_err(|_| EndpointsError::AlreadySet)?;
        for (node, endpoint) in weak.into_iter().enumerate() {
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
        self.endpoints.get().into_iter().flatten().filter_map(Weak::upgrade)
    }

    /// Node `node`'s endpoint, if it is set and still exists.
    pub fn endpoint(&self, node: usize) -> Option<Arc<dyn Endpoint>> {
        self.endpoints.get()?.get(node)?.upgrade()
    }

    /// A window access crosses the links: a load waits for its data to come back; a store is
    /// posted (Unimem remote stores are: the CPU goes on once the store has left), so it does
    /// not wait the round trip.
    fn cross_window(&self, src: usize, dst: usize, size: u32, store: bool) {
        let net = &self.interconnect;
        let lost = if store { net.transact_posted(src, dst) } else { net.transact(src, dst) };
        if let Some(t) = &self.trace {
            let what = if lost > 0 { "window access (retried)" } else { "window access" };
            t.packet(src, dst, channel::WINDOW, size as usize, what);
        }
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
        NodeCounters::bump(&self.counters[src].packets_sent);
        let mut touched = false;
        let delivery = if dst < self.nodes() {
            // As for a window store to a stopped node, the links carry the packet and the dead
            // end answers with an error response.
            self.interconnect.transact(src, dst);
            match (self.ddr(dst), self.endpoint(dst)) {
                (Some(_), Some(endpoint)) => {
                    touched = true;
                    endpoint.packet(iface, bytes)
                }
                (None, _) => Delivery::Unreachable,
                // The cluster is starting: the node has no platform yet.
                (Some(_), None) => Delivery::Nack,
            }
        } else {
            // No route: the interconnect refuses it at the sender's edge.
            Delivery::Nack
        };
        match delivery {
            Delivery::Ack => NodeCounters::bump(&self.counters[dst].packets_received),
            // The vmbox answers at once (`Pending` is for an asynchronous interconnect).
            Delivery::Nack | Delivery::Pending | Delivery::Unreachable => {
                NodeCounters::bump(&self.counters[src].packets_nacked)
            }
        }
        if let Some(t) = &self.trace {
            let what = match delivery {
                Delivery::Ack => "packet",
                Delivery::Unreachable => "packet to an unreachable node",
                Delivery::Nack | Delivery::Pending => "packet nacked",
            };
            t.packet(src, dst, channel::PACKETIZER, bytes.len(), what);
        }
        Carried { delivery, touched }
    }

    fn resample_lines(&self, node: usize) {
        if let Some(endpoint) = self.endpoint(node) {
            endpoint.resample_lines();
        }
    }

    fn remote_load(&self, src: usize, dst: usize, pa: u64, size: u32) -> Result<u128, Status> {
        if dst >= self.nodes() {
            return Err(Status::Unmapped);
        }
        self.cross_window(src, dst, size, false);
        let ddr = self.ddr(dst).ok_or(Status::DeviceError)?;
        ddr.read(pa, size).ok_or(Status::Unmapped)
    }

    fn remote_store(&self, src: usize, dst: usize, pa: u64, size: u32, value: u128) -> Result<(), Status> {
        if dst >= self.nodes() {
            return Err(Status::Unmapped);
        }
        self.cross_window(src, dst, size, true);
        let ddr = self.ddr(dst).ok_or(Status::DeviceError)?;
        ddr.write(pa, size, value).ok_or(Status::Unmapped)
    }

    fn send_datagrams(&self, datagrams: Vec<Datagram>) {
        self.interconnect.send_all(datagrams);
    }
}
