//! The seam between a node's models and whatever carries its traffic to the other nodes
//! (`docs/architecture.md`, "The transport").
//!
//! Three parts, by where things are:
//!
//! - [`Transport`]: everything a node's platform and models reach beyond their own node, as
//!   operations by node index that take owned or borrowed data and return an explicit answer,
//!   so that an implementation can carry each one as a message between processes: packetizer
//!   packets to another node's vmbox, global-window loads and stores on another node's DDR,
//!   the PLDMA's datagrams, and the cluster's liveness ([`ClusterView`]). It never hands out
//!   another node's memory or platform. What a crossing costs (link counters, the far end's
//!   counters, the trace of the crossing) is the transport's to record.
//! - [`Endpoint`]: what the transport calls on a node it hosts when something arrives there.
//!   The platform implements it; the transport learns every hosted node's endpoint at start-up.
//! - [`Local`]: what a node's models use of their own node, directly: its DDR (while its QEMU
//!   runs), its counters and the trace of its host.
//!
//! `fabric::Fabric` is the implementation for a cluster in one process; the nodes of one
//! cluster spread over several hosts will have another behind the same traits. The models and
//! the platform name only these traits, never an implementation (`tests/layers.rs`).

use crate::counters::NodeCounters;
use crate::interconnect::{Coordinates, Datagram};
use crate::shm::Ddr;
use crate::trace::TraceWriter;
use hal::sysblock::NodeSet;
use proto::forward::Status;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The fate of a packet: the destination vmbox's answer, carried back by the interconnect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    Ack,
    Nack,
    /// The destination node is gone: the packet went nowhere, and never will.
    Unreachable,
    /// Not known yet (asynchronous interconnect): the sender calls
    /// `PacketizerModel::complete` later.
    Pending,
}

/// What every node's system block knows of the whole system (`docs/hw/sysblock.md`).
pub trait ClusterView: Send + Sync {
    /// The nodes that wrote RUN_DONE.
    fn done(&self) -> NodeSet;
    /// The nodes that are reachable.
    fn alive(&self) -> NodeSet;
    /// Node `node` wrote RUN_DONE.
    fn report_done(&self, node: u16);
}

/// A packet's answer from [`Transport::deliver_packet`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Carried {
    pub delivery: Delivery,
    /// A vmbox of this host saw the packet (took or refused it): its node's PL lines may have
    /// changed, and are the sender's to re-sample ([`Transport::resample_lines`]) once it holds
    /// no device lock. False when the far end re-samples them itself (another host).
    pub touched: bool,
}

/// Everything a node's platform and models reach beyond their own node. `src` is always a node
/// of the caller's host; `dst` and `node` may be any number (one past the cluster gets a clear
/// answer, not a panic).
pub trait Transport: ClusterView {
    /// The nodes of the cluster, on every host.
    fn nodes(&self) -> usize;

    /// Where node `node` sits (`node < nodes()`).
    fn coordinates(&self, node: usize) -> Coordinates;

    /// Carries a packet of node `src`'s packetizer to interface `iface` of node `dst`'s vmbox as
    /// one link-reliable transaction (lost attempts retried, latency waited) and returns the
    /// vmbox's answer: `Nack` for a node that does not exist or is not ready yet, `Unreachable`
    /// for one that has stopped. Runs under the sender's packetizer lock: the only lock it may
    /// take on this host is the destination vmbox's (`platform::routing`, lock order).
    fn deliver_packet(&self, src: usize, dst: usize, iface: u8, bytes: &[u8]) -> Carried;

    /// Re-samples node `node`'s PL lines after packets [`deliver_packet`](Self::deliver_packet)
    /// left there with `touched`; the caller holds no device lock.
    fn resample_lines(&self, node: usize);

    /// A global-window load by node `src` of `size` bytes at `pa` in node `dst`'s DDR: crosses
    /// the links and waits for the data. `DeviceError` if `dst` has stopped, `Unmapped` if it
    /// does not exist or `pa` is not in its DDR.
    fn remote_load(&self, src: usize, dst: usize, pa: u64, size: u32) -> Result<u128, Status>;

    /// A global-window store: posted (the links carry it, the sender does not wait for the
    /// round trip); the same answers as [`remote_load`](Self::remote_load).
    fn remote_store(&self, src: usize, dst: usize, pa: u64, size: u32, value: u128) -> Result<(), Status>;

    /// Sends PLDMA datagrams in order, as one burst; each may be lost, duplicated or reordered
    /// on the links, and arrives at its `dst`'s [`Endpoint::datagram`].
    fn send_datagrams(&self, datagrams: Vec<Datagram>);
}

/// A node's end of the transport: what arrives at it. The transport holds it weakly (the
/// platform owns its models, which hold the transport).
pub trait Endpoint: Send + Sync {
    /// A packet for interface `iface` of the node's vmbox: its answer (`Ack` or `Nack`). Takes
    /// only the vmbox's lock.
    fn packet(&self, iface: u8, bytes: &[u8]) -> Delivery;

    /// A datagram for the node's PLDMA engine.
    fn datagram(&self, datagram: Datagram);

    /// Samples the node's PL lines and sends a byte for each that rose.
    fn resample_lines(&self);
}

/// What a node's platform and models use of their own node, directly, on the host that runs it.
#[derive(Clone)]
pub struct Local {
    pub node: usize,
    ddr: Arc<Ddr>,
    alive: Arc<AtomicBool>,
    pub counters: Arc<NodeCounters>,
    pub trace: Option<Arc<TraceWriter>>,
}

impl Local {
    /// Node `node`, whose DDR is `ddr` while `alive` is set.
    pub fn new(
        node: usize,
        ddr: Arc<Ddr>,
        alive: Arc<AtomicBool>,
        counters: Arc<NodeCounters>,
        trace: Option<Arc<TraceWriter>>,
    ) -> Self {
        Self { node, ddr, alive, counters, trace }
    }

    /// The node's DDR, while its QEMU runs: after, a table walk or the engine reads nothing (an
    /// external fault) instead of memory the node no longer has.
    pub fn ddr(&self) -> Option<&Ddr> {
        self.alive.load(Ordering::Acquire).then_some(&*self.ddr)
    }
}
