//! The transport of one rank of a cluster spread over several (`ranks`): what goes to a node of
//! this rank is the fabric's, as in one process; what goes to another rank's node crosses the
//! links here (the fabric's sending half: counters, trace, and the interconnect's loss,
//! duplication, reordering and latency, decided by the sender) and then the rank link as a
//! message ([`super::message`]), and the far rank's fabric takes it (its arriving half).
//!
//! - **Packets** are requests: the far vmbox's ACK, NACK or unreachable comes back, and the far
//!   rank re-samples its node's PL lines itself, from a thread of its own (the link's thread
//!   may not wait for a device lock: `platform/routing.rs`, lock order).
//! - **Window loads** are requests; **stores** are posted, one-way messages, which the link
//!   keeps in order with the sender's later loads. Their address is checked here, against the
//!   DDR size the far rank published.
//! - **Datagrams** cross the sending rank's interconnect and go to the far rank as one message
//!   per burst and rank, in order; the far rank's interconnect counts, traces and delivers them
//!   ([`Interconnect::arrive`](crate::interconnect::Interconnect::arrive)).
//! - **Liveness**: each rank publishes its nodes' state (alive, done, DDR size) to every rank
//!   at start, whenever it changes, and to a rank it hears from for the first time; the
//!   fabric keeps what it hears ([`Fabric::hear`]), so NODES_ALIVE and NODES_DONE are the
//!   cluster's everywhere. A rank the link reports lost has its nodes not alive at once: every
//!   access to them answers at once, as to a stopped node.

use super::NodeMap;
use super::link::{LinkError, RankLink};
use super::message::{Message, NodeState, Reply};
use crate::fabric::Fabric;
use crate::interconnect::{Coordinates, Datagram};
use crate::transport::{Carried, ClusterView, Delivery, Transport};
use hal::sysblock::NodeSet;
use proto::forward::Status;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a packet or a load waits for the far rank's answer before it fails (as to a node
/// that is gone): before the guest, which waits 10 s for its forwarded access, gives up on its
/// own platform. A rank that dies is reported by the link long before.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(8);
/// How often the rank looks at the link's lost ranks when nothing else wakes it.
const WATCH_EVERY: Duration = Duration::from_millis(20);

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum RankError {
    #[error("the node map has {map} nodes, the fabric {fabric}")]
    Nodes { map: usize, fabric: usize },
    #[error("the node map has {map} ranks, the link {link}")]
    Ranks { map: usize, link: usize },
    #[error("rank {rank} runs nodes {expected:?}, but its fabric hosts {hosted:?}")]
    Hosted { rank: usize, expected: Vec<usize>, hosted: Vec<usize> },
    #[error("the interconnect already forwards datagrams elsewhere")]
    Forwarding,
    #[error(transparent)]
    Link(#[from] LinkError),
}

pub struct RankTransport {
    fabric: Arc<Fabric>,
    map: NodeMap,
    link: Arc<dyn RankLink>,
    /// By rank: it has published its nodes' state here.
    heard: Vec<AtomicBool>,
    /// By rank: the link reported it lost.
    lost: Vec<AtomicBool>,
    /// By node of another rank: its DDR size, as its rank published it.
    ddr_bytes: Vec<AtomicU64>,
    /// What this rank last published of its nodes.
    published: Mutex<Vec<NodeState>>,
    /// Nodes of this rank whose PL lines a packet from another rank may have changed.
    resample: Sender<usize>,
    /// Messages from other ranks that did not decode (each is dropped; a request gets no reply
    /// it can decode, so its sender's access fails).
    malformed: AtomicU64,
    stopped: Arc<AtomicBool>,
    /// The thread that watches the link's lost ranks and this rank's nodes. (The one that
    /// re-samples ends with the transport, when its channel closes.)
    watcher: Mutex<Option<JoinHandle<()>>>,
}

impl RankTransport {
    /// This rank's transport: `fabric` hosts exactly the nodes `map` gives the link's rank.
    /// Starts serving the link and publishes this rank's nodes to every rank.
    pub fn start(fabric: Arc<Fabric>, map: NodeMap, link: Arc<dyn RankLink>) -> Result<Arc<Self>, RankError> {
        if map.nodes() != fabric.nodes() {
            return Err(RankError::Nodes { map: map.nodes(), fabric: fabric.nodes() });
        }
        if map.ranks() != link.ranks() {
            return Err(RankError::Ranks { map: map.ranks(), link: link.ranks() });
        }
        let rank = link.rank();
        let (expected, hosted): (Vec<usize>, Vec<usize>) = (map.nodes_of(rank).collect(), fabric.hosted().collect());
        if expected != hosted {
            return Err(RankError::Hosted { rank, expected, hosted });
        }
        let (resample, to_resample) = mpsc::channel::<usize>();
        let ranks = map.ranks();
        let me = Arc::new(Self {
            heard: (0..ranks).map(|r| AtomicBool::new(r == rank)).collect(),
            lost: (0..ranks).map(|_| AtomicBool::new(false)).collect(),
            ddr_bytes: (0..map.nodes()).map(|_| AtomicU64::new(0)).collect(),
            published: Mutex::new(Vec::new()),
            resample,
            malformed: AtomicU64::new(0),
            stopped: Arc::new(AtomicBool::new(false)),
            watcher: Mutex::new(None),
            fabric,
            map,
            link,
        });
        let weak = Arc::downgrade(&me);
        let elsewhere = (0..me.map.nodes()).filter(|&n| me.elsewhere(n).is_some());
        let forward = Box::new(move |datagrams: Vec<Datagram>| {
            if let Some(me) = weak.upgrade() {
                me.forward(datagrams);
            }
        });
        if !me.fabric.interconnect.set_elsewhere(elsewhere, forward) {
            return Err(RankError::Forwarding);
        }
        let weak = Arc::downgrade(&me);
        me.link.serve(Box::new(move |from, bytes| weak.upgrade().and_then(|me| me.handle(from, bytes))))?;

        // The far end's re-samples: the link's thread hands them over.
        let fabric = Arc::downgrade(&me.fabric);
        let resampler = std::thread::Builder::new().name(format!("rank {rank} resample")).spawn(move || {
            for node in to_resample {
                match fabric.upgrade() {
                    Some(fabric) => fabric.resample_lines(node),
                    None => return,
                }
            }
        });
        // Lost ranks and this rank's nodes' changes (a node's QEMU ended).
        let (weak, membership, stopped) = (Arc::downgrade(&me), me.fabric.membership.clone(), me.stopped.clone());
        let watcher = std::thread::Builder::new().name(format!("rank {rank} watch")).spawn(move || {
            let mut generation = 0;
            while !stopped.load(Ordering::Acquire) {
                generation = membership.wait_past(generation, WATCH_EVERY);
                match weak.upgrade() {
                    Some(me) => me.watch(),
                    None => return,
                }
            }
        });
        let no_thread = |e: std::io::Error| LinkError::Other(format!("no thread for rank {rank}: {e}"));
        resampler.map_err(no_thread)?;
        *me.watcher.lock().unwrap() = Some(watcher.map_err(no_thread)?);
        me.publish(true);
        Ok(me)
    }

    /// Waits until every other rank has published its nodes (at most `timeout`): before that,
    /// their nodes refuse packets, as nodes that have not started yet do. The ranks not heard
    /// from, if any.
    pub fn wait_for_peers(&self, timeout: Duration) -> Result<(), Vec<usize>> {
        let until = Instant::now() + timeout;
        let membership = &self.fabric.membership;
        let mut generation = membership.generation();
        loop {
            let missing: Vec<usize> =
                (0..self.map.ranks()).filter(|&r| !self.heard[r].load(Ordering::Acquire)).collect();
            let now = Instant::now();
            if missing.is_empty() {
                return Ok(());
            }
            if now >= until {
                return Err(missing);
            }
            generation = membership.wait_past(generation, until - now);
        }
    }

    /// The ranks the link has reported lost so far (as this rank has noticed).
    pub fn lost_ranks(&self) -> Vec<usize> {
        (0..self.map.ranks()).filter(|&r| self.lost[r].load(Ordering::Acquire)).collect()
    }

    /// The messages from other ranks that did not decode.
    pub fn malformed(&self) -> u64 {
        self.malformed.load(Ordering::Relaxed)
    }

    pub fn fabric(&self) -> &Arc<Fabric> {
        &self.fabric
    }

    pub fn map(&self) -> &NodeMap {
        &self.map
    }

    /// Stops the rank's threads and waits for them (not from the link's thread).
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
        self.fabric.membership.raise();
        if let Some(watcher) = self.watcher.lock().unwrap().take() {
            let _ = watcher.join();
        }
    }

    /// The rank that runs node `node`, if it is not this one.
    fn elsewhere(&self, node: usize) -> Option<usize> {
        self.map.rank_of(node).filter(|&rank| rank != self.link.rank())
    }

    /// What a node of rank `rank` that is not alive answers a packet: NACK while its rank has
    /// not said anything yet (it is starting), unreachable after.
    fn not_alive(&self, rank: usize) -> Delivery {
        if self.heard[rank].load(Ordering::Acquire) || self.lost[rank].load(Ordering::Acquire) {
            Delivery::Unreachable
        } else {
            Delivery::Nack
        }
    }

    fn alive(&self, node: usize) -> bool {
        self.fabric.alive().contains(node as u16)
    }

    /// A request to rank `rank` and its decoded reply; `None` if it failed (and the rank is
    /// lost if the link says so).
    fn ask(&self, rank: usize, message: Message) -> Option<Reply> {
        match self.link.request(rank, message.encode(), REQUEST_TIMEOUT) {
            Ok(bytes) => Reply::decode(&bytes).ok(),
            Err(e) => {
                self.failed(rank, &e);
                None
            }
        }
    }

    fn failed(&self, rank: usize, error: &LinkError) {
        if *error == LinkError::Lost(rank) {
            self.lose(rank);
        }
    }

    /// Rank `rank` is gone: its nodes are not alive, here, from now on.
    fn lose(&self, rank: usize) {
        if rank == self.link.rank() || rank >= self.map.ranks() || self.lost[rank].swap(true, Ordering::AcqRel) {
            return;
        }
        for node in self.map.nodes_of(rank) {
            self.fabric.hear(node, false, false);
        }
        self.fabric.membership.raise();
    }

    /// Looks at the link's lost ranks and publishes this rank's nodes if they changed.
    fn watch(&self) {
        for rank in self.link.lost() {
            self.lose(rank);
        }
        self.publish(false);
    }

    /// This rank's nodes as they are now.
    fn own_nodes(&self) -> Vec<NodeState> {
        let (alive, done) = (self.fabric.alive(), self.fabric.done());
        self.map
            .nodes_of(self.link.rank())
            .map(|node| NodeState {
                node: node as u16,
                alive: alive.contains(node as u16),
                done: done.contains(node as u16),
                ddr_bytes: self.fabric.ddr_bytes(node).unwrap_or(0),
            })
            .collect()
    }

    /// Sends this rank's nodes to every rank that is not lost, if they changed since last time
    /// (or `always`).
    fn publish(&self, always: bool) {
        let now = self.own_nodes();
        let mut published = self.published.lock().unwrap();
        if !always && *published == now {
            return;
        }
        let bytes = Message::Nodes(now.clone()).encode();
        *published = now;
        for rank in (0..self.map.ranks()).filter(|&r| r != self.link.rank()) {
            if !self.lost[rank].load(Ordering::Acquire)
                && let Err(e) = self.link.send(rank, bytes.clone())
            {
                self.failed(rank, &e);
            }
        }
    }

    /// Datagrams that crossed this rank's links, to other ranks' nodes: one message per rank.
    fn forward(&self, datagrams: Vec<Datagram>) {
        let mut by_rank: BTreeMap<usize, Vec<Datagram>> = BTreeMap::new();
        for d in datagrams {
            if let Some(rank) = self.elsewhere(d.dst) {
                by_rank.entry(rank).or_default().push(d);
            }
        }
        for (rank, datagrams) in by_rank {
            // Lost on the way if the rank is gone: datagrams may be lost.
            if let Err(e) = self.link.send(rank, Message::Datagrams(datagrams).encode()) {
                self.failed(rank, &e);
            }
        }
    }

    /// What another rank sends: the reply to a request, nothing for a one-way message. Waits
    /// for nothing but the destination's vmbox lock (held only by threads that wait for
    /// nothing) and the DDR.
    fn handle(&self, from: usize, bytes: Vec<u8>) -> Option<Vec<u8>> {
        let Ok(message) = Message::decode(&bytes) else {
            self.malformed.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        let here = |node: u16| self.fabric.hosts(usize::from(node));
        match message {
            Message::Packet { dst, iface, bytes, .. } => {
                let carried = match here(dst) {
                    true => self.fabric.packet_arrives(usize::from(dst), iface, &bytes),
                    // The ranks disagree on the map: no route.
                    false => Carried { delivery: Delivery::Nack, touched: false },
                };
                if carried.touched {
                    let _ = self.resample.send(usize::from(dst));
                }
                Some(Reply::Delivered(carried.delivery).encode())
            }
            Message::Load { dst, pa, size, .. } => {
                let loaded = match here(dst) {
                    true => self.fabric.load_arrives(usize::from(dst), pa, size),
                    false => Err(Status::Unmapped),
                };
                Some(Reply::Loaded(loaded).encode())
            }
            Message::Store { dst, pa, size, value, .. } => {
                if here(dst) {
                    // Posted: its sender checked what it could and went on.
                    let _ = self.fabric.store_arrives(usize::from(dst), pa, size, value);
                }
                None
            }
            Message::Datagrams(datagrams) => {
                for d in datagrams.into_iter().filter(|d| self.fabric.hosts(d.dst)) {
                    self.fabric.interconnect.arrive(d);
                }
                None
            }
            Message::Nodes(nodes) => {
                self.hear(from, &nodes);
                None
            }
        }
    }

    /// Rank `from` says how its nodes are (what it says of others' nodes is ignored, and so is
    /// anything from a rank already lost: its last words may come late).
    fn hear(&self, from: usize, nodes: &[NodeState]) {
        if from >= self.map.ranks() || from == self.link.rank() || self.lost[from].load(Ordering::Acquire) {
            return;
        }
        for state in nodes.iter().filter(|s| self.map.rank_of(usize::from(s.node)) == Some(from)) {
            let node = usize::from(state.node);
            self.ddr_bytes[node].store(state.ddr_bytes, Ordering::Release);
            self.fabric.hear(node, state.alive, state.done);
        }
        if !self.heard[from].swap(true, Ordering::AcqRel) {
            self.fabric.membership.raise();
            // It may have started after this rank published: it hears this rank now.
            let bytes = Message::Nodes(self.own_nodes()).encode();
            if let Err(e) = self.link.send(from, bytes) {
                self.failed(from, &e);
            }
        }
    }
}

impl Drop for RankTransport {
    fn drop(&mut self) {
        // The threads end on their own (they hold the transport weakly); this may run on one.
        self.stopped.store(true, Ordering::Release);
        self.fabric.membership.raise();
    }
}

/// The cluster's liveness, every rank's nodes (the fabric keeps what the other ranks said).
impl ClusterView for RankTransport {
    fn done(&self) -> NodeSet {
        self.fabric.done()
    }

    fn alive(&self) -> NodeSet {
        self.fabric.alive()
    }

    /// Tells every rank at once (a node's RUN_DONE may end the run).
    fn report_done(&self, node: u16) {
        self.fabric.report_done(node);
        self.publish(false);
    }
}

impl Transport for RankTransport {
    fn nodes(&self) -> usize {
        self.fabric.nodes()
    }

    fn coordinates(&self, node: usize) -> Coordinates {
        self.fabric.coordinates(node)
    }

    fn deliver_packet(&self, src: usize, dst: usize, iface: u8, bytes: &[u8]) -> Carried {
        let Some(rank) = self.elsewhere(dst) else { return self.fabric.deliver_packet(src, dst, iface, bytes) };
        self.fabric.carry_packet(src, dst, bytes.len(), || {
            let delivery = if !self.alive(dst) {
                self.not_alive(rank)
            } else {
                let message = Message::Packet { src: src as u16, dst: dst as u16, iface, bytes: bytes.to_vec() };
                match self.ask(rank, message) {
                    Some(Reply::Delivered(delivery)) => delivery,
                    _ => Delivery::Unreachable,
                }
            };
            // The far rank re-samples its node's lines itself.
            Carried { delivery, touched: false }
        })
    }

    fn resample_lines(&self, node: usize) {
        self.fabric.resample_lines(node);
    }

    fn remote_load(&self, src: usize, dst: usize, pa: u64, size: u32) -> Result<u128, Status> {
        let Some(rank) = self.elsewhere(dst) else { return self.fabric.remote_load(src, dst, pa, size) };
        self.fabric.carry_window(src, dst, size, false, || {
            if !self.alive(dst) {
                return Err(Status::DeviceError);
            }
            match self.ask(rank, Message::Load { src: src as u16, dst: dst as u16, pa, size }) {
                Some(Reply::Loaded(loaded)) => loaded,
                _ => Err(Status::DeviceError),
            }
        })
    }

    fn remote_store(&self, src: usize, dst: usize, pa: u64, size: u32, value: u128) -> Result<(), Status> {
        let Some(rank) = self.elsewhere(dst) else { return self.fabric.remote_store(src, dst, pa, size, value) };
        self.fabric.carry_window(src, dst, size, true, || {
            if !self.alive(dst) {
                return Err(Status::DeviceError);
            }
            let end = pa.checked_add(u64::from(size));
            if size > 16 || end.is_none_or(|end| end > self.ddr_bytes[dst].load(Ordering::Acquire)) {
                return Err(Status::Unmapped);
            }
            let message = Message::Store { src: src as u16, dst: dst as u16, pa, size, value };
            self.link.send(rank, message.encode()).map_err(|e| {
                self.failed(rank, &e);
                Status::DeviceError
            })
        })
    }

    fn send_datagrams(&self, datagrams: Vec<Datagram>) {
        self.fabric.send_datagrams(datagrams);
    }
}
