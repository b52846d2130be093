//! The interconnect between nodes: routes by node coordinates (dimension order, x then y then
//! z), with configurable latency, loss, duplication and reordering, and counters per link.
//!
//! Two kinds of traffic cross it:
//! - **transactions** (global-window loads and stores, packetizer packets with their ACK/NACK):
//!   the link layer retransmits a lost request, as the Unimem links do, so a transaction always
//!   completes; injected losses show up as retries and latency, duplicates as discarded copies;
//! - **datagrams** (PLDMA packets): delivered after the latency, maybe never (loss), maybe twice
//!   (duplication), maybe after a later one (reordering); end-to-end protocols above must cope.

use crate::counters::NodeCounters;
use crate::trace::TraceWriter;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LinkConfig {
    /// Per hop.
    pub latency_us: f64,
    /// Probability that a datagram (or a transaction attempt) is lost on a link.
    pub loss: f64,
    /// Probability that a datagram is delivered twice.
    pub duplicate: f64,
    /// Probability that a datagram is held back so that later ones overtake it.
    pub reorder: f64,
    /// Seed of the injection's random numbers (runs are repeatable).
    pub seed: u64,
    /// The first this many datagrams the interconnect carries are lost, whatever the odds: a
    /// test loses one whole RDMA block this way (its 64 packets) and the block's retransmission
    /// timeout must bring it back.
    pub lose_first: u64,
}

impl Default for LinkConfig {
    fn default() -> Self {
        Self { latency_us: 1.0, loss: 0.0, duplicate: 0.0, reorder: 0.0, seed: 1, lose_first: 0 }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{0}")]
    Toml(#[from] toml::de::Error),
    #[error("{field} must be in [0, 1), got {value}")]
    Probability { field: &'static str, value: f64 },
    #[error("latency must be finite and non-negative, got {0}")]
    Latency(f64),
}

impl LinkConfig {
    /// Reads the `[interconnect]` table of a platform config file.
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        #[derive(serde::Deserialize, Default)]
        #[serde(deny_unknown_fields)]
        struct File {
            #[serde(default)]
            interconnect: LinkConfig,
        }
        let config = toml::from_str::<File>(text)?.interconnect;
        config.validate()?;
        Ok(config)
    }

    /// Whether the links lose, duplicate and reorder nothing.
    pub fn injects_nothing(&self) -> bool {
        self.loss == 0.0 && self.duplicate == 0.0 && self.reorder == 0.0 && self.lose_first == 0
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        for (field, value) in [("loss", self.loss), ("duplicate", self.duplicate), ("reorder", self.reorder)] {
            if !(0.0..1.0).contains(&value) {
                return Err(ConfigError::Probability { field, value });
            }
        }
        if !self.latency_us.is_finite() || self.latency_us < 0.0 {
            return Err(ConfigError::Latency(self.latency_us));
        }
        Ok(())
    }
}

/// What a packet carries, as the trace's `channel` argument and a datagram's `channel` name it.
pub mod channel {
    /// A global-window load or store.
    pub const WINDOW: u8 = 0;
    /// A packetizer packet on its way to a vmbox.
    pub const PACKETIZER: u8 = 1;
    /// A PLDMA packet (`docs/hw/pldma.md`, "Packets"), a datagram.
    pub const PLDMA: u8 = 2;
}

/// A node's position. On a QFDB the four MPSoCs are x = 0..3; boards stack along y.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Coordinates {
    pub x: u8,
    pub y: u8,
    pub z: u8,
}

/// Node `i` of a cluster of QFDBs.
pub fn qfdb_coordinates(node: usize) -> Coordinates {
    Coordinates { x: (node % 4) as u8, y: (node / 4) as u8, z: 0 }
}

/// A directed link between neighbours.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Link {
    pub from: usize,
    pub to: usize,
}

#[derive(Debug, Default)]
pub struct LinkCounters {
    pub sent: AtomicU64,
    pub dropped: AtomicU64,
    pub duplicated: AtomicU64,
    pub reordered: AtomicU64,
}

/// splitmix64: small, fast, and good enough for fault injection.
#[derive(Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
}

/// Waits `d`: short waits spin, because a sleeping thread wakes tens of microseconds late and
/// link latencies are a few microseconds.
fn wait(d: Duration) {
    const SPIN_BELOW: Duration = Duration::from_micros(200);
    if d >= SPIN_BELOW {
        std::thread::sleep(d);
    } else if !d.is_zero() {
        let until = Instant::now() + d;
        while Instant::now() < until {
            std::hint::spin_loop();
        }
    }
}

/// A datagram in flight.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Datagram {
    pub src: usize,
    pub dst: usize,
    /// What the receiver's model makes of it (packetizer, PLDMA, ...).
    pub channel: u8,
    pub payload: Vec<u8>,
}

pub type Receiver = Box<dyn Fn(Datagram) + Send + Sync>;

/// Where the datagrams for nodes of another process go once they have crossed the links, in
/// the order they were sent: one call per burst (`Interconnect::set_elsewhere`).
pub type Forward = Box<dyn Fn(Vec<Datagram>) + Send + Sync>;

/// The nodes this interconnect does not host, and where their datagrams go.
struct Elsewhere {
    nodes: Vec<bool>,
    forward: Forward,
}

struct Pending {
    due: Instant,
    order: u64,
    datagram: Datagram,
}

impl PartialEq for Pending {
    fn eq(&self, other: &Self) -> bool {
        (self.due, self.order) == (other.due, other.order)
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Pending {
    /// Earliest first in a max-heap.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (other.due, other.order).cmp(&(self.due, self.order))
    }
}

/// Where the interconnect reports what it does: per-node counters and the trace.
#[derive(Default)]
pub struct Observers {
    pub counters: Vec<Arc<NodeCounters>>,
    pub trace: Option<Arc<TraceWriter>>,
}

pub struct Interconnect {
    coordinates: Vec<Coordinates>,
    config: LinkConfig,
    observers: Observers,
    rng: Mutex<Rng>,
    links: Mutex<std::collections::HashMap<Link, Arc<LinkCounters>>>,
    receivers: Mutex<Vec<Option<Arc<Receiver>>>>,
    elsewhere: std::sync::OnceLock<Elsewhere>,
    queue: Mutex<(BinaryHeap<Pending>, u64, bool)>,
    wake: Condvar,
    /// Datagrams sent so far (for `LinkConfig::lose_first`).
    datagrams: AtomicU64,
}

impl Interconnect {
    pub fn new(coordinates: Vec<Coordinates>, config: LinkConfig) -> Arc<Self> {
        let observers = Observers { counters: coordinates.iter().map(|_| Arc::default()).collect(), trace: None };
        Self::with_observers(coordinates, config, observers)
    }

    pub fn with_observers(coordinates: Vec<Coordinates>, config: LinkConfig, observers: Observers) -> Arc<Self> {
        let n = coordinates.len();
        Arc::new(Self {
            coordinates,
            config,
            observers,
            rng: Mutex::new(Rng::new(config.seed)),
            links: Mutex::default(),
            receivers: Mutex::new(vec![None; n]),
            elsewhere: std::sync::OnceLock::new(),
            queue: Mutex::new((BinaryHeap::new(), 0, false)),
            wake: Condvar::new(),
            datagrams: AtomicU64::new(0),
        })
    }

    pub fn config(&self) -> LinkConfig {
        self.config
    }

    pub fn nodes(&self) -> usize {
        self.coordinates.len()
    }

    pub fn coordinates(&self, node: usize) -> Coordinates {
        self.coordinates[node]
    }

    /// The nodes a packet visits from `src` to `dst`, dimension by dimension.
    pub fn route(&self, src: usize, dst: usize) -> Vec<usize> {
        let target = self.coordinates[dst];
        let mut at = self.coordinates[src];
        let mut path = vec![src];
        let step = |from: u8, to: u8| if from < to { from + 1 } else { from - 1 };
        while at != target {
            if at.x != target.x {
                at.x = step(at.x, target.x);
            } else if at.y != target.y {
                at.y = step(at.y, target.y);
            } else {
                at.z = step(at.z, target.z);
            }
            match self.coordinates.iter().position(|c| *c == at) {
                Some(hop) => path.push(hop),
                // A hole in the grid: the packet is switched straight to the destination.
                None => {
                    at = target;
                    path.push(dst);
                }
            }
        }
        path
    }

    pub fn link(&self, from: usize, to: usize) -> Arc<LinkCounters> {
        self.links.lock().unwrap().entry(Link { from, to }).or_default().clone()
    }

    /// Counters of every link used so far.
    pub fn link_counters(&self) -> Vec<(Link, Arc<LinkCounters>)> {
        let mut links: Vec<_> = self.links.lock().unwrap().iter().map(|(l, c)| (*l, c.clone())).collect();
        links.sort_by_key(|(l, _)| (l.from, l.to));
        links
    }

    fn hops(&self, src: usize, dst: usize) -> Vec<Link> {
        self.route(src, dst).windows(2).map(|w| Link { from: w[0], to: w[1] }).collect()
    }

    fn latency(&self, hops: usize) -> Duration {
        Duration::from_secs_f64(self.config.latency_us * hops as f64 / 1e6)
    }

    /// A reliable transaction from `src` to `dst` and back: counts every attempt on every link
    /// (lost attempts are retried), waits the round-trip latency, and returns how many attempts
    /// were lost.
    pub fn transact(&self, src: usize, dst: usize) -> u32 {
        let (lost, hops) = self.cross(src, dst);
        wait(self.latency(hops + lost as usize));
        lost
    }

    /// [`transact`](Self::transact) for a posted write: the same attempts on the same links, but
    /// the sender does not wait for the response (the write is applied at once; a lost attempt
    /// is retried by the links).
    pub fn transact_posted(&self, src: usize, dst: usize) -> u32 {
        self.cross(src, dst).0
    }

    /// Crosses the links there and back, retrying lost attempts: (attempts lost, hops).
    fn cross(&self, src: usize, dst: usize) -> (u32, usize) {
        let mut path = self.hops(src, dst);
        path.extend(self.hops(dst, src));
        let mut lost = 0;
        for link in &path {
            let counters = self.link(link.from, link.to);
            loop {
                counters.sent.fetch_add(1, Ordering::Relaxed);
                if !self.rng.lock().unwrap().chance(self.config.loss) {
                    break;
                }
                counters.dropped.fetch_add(1, Ordering::Relaxed);
                lost += 1;
            }
        }
        (lost, path.len())
    }

    /// Where datagrams for `node` go.
    pub fn set_receiver(&self, node: usize, receiver: Receiver) {
        self.receivers.lock().unwrap()[node] = Some(Arc::new(receiver));
    }

    /// Datagrams for `nodes`, which another process hosts, are handed to `forward` once they
    /// have crossed the links (the loss, duplication, reordering and latency of the links are
    /// decided here, by the sender's process), and their arrival is recorded by that process
    /// ([`arrive`](Self::arrive)). Set once: a second call changes nothing and returns false.
    pub fn set_elsewhere(&self, nodes: impl IntoIterator<Item = usize>, forward: Forward) -> bool {
        let mut elsewhere = Elsewhere { nodes: vec![false; self.nodes()], forward };
        for node in nodes.into_iter().filter(|&n| n < self.nodes()) {
            elsewhere.nodes[node] = true;
        }
        self.elsewhere.set(elsewhere).is_ok()
    }

    fn elsewhere(&self, node: usize) -> Option<&Elsewhere> {
        self.elsewhere.get().filter(|e| e.nodes.get(node).copied().unwrap_or(false))
    }

    fn note(&self, node: usize, counter: impl Fn(&NodeCounters) -> &AtomicU64, by: u64) {
        if let Some(c) = self.observers.counters.get(node) {
            counter(c).fetch_add(by, Ordering::Relaxed);
        }
    }

    fn trace(&self, d: &Datagram, what: &str) {
        if let Some(t) = &self.observers.trace {
            t.packet(d.src, d.dst, d.channel, d.payload.len(), what);
        }
    }

    /// Sends a datagram; loss, duplication and reordering are decided here, per link. Links
    /// that inject nothing carry it on the sender's thread: it waits the path's latency (as a
    /// transaction does) and reaches the receiver in the order sent, with no hand-off to the
    /// delivery thread, whose wake-up costs more than the link.
    pub fn send(&self, datagram: Datagram) {
        if self.config.injects_nothing() {
            return self.send_all(vec![datagram]);
        }
        self.note(datagram.src, |c| &c.packets_sent, 1);
        self.trace(&datagram, "sent");
        let path = self.hops(datagram.src, datagram.dst);
        let lost_on_purpose = self.datagrams.fetch_add(1, Ordering::Relaxed) < self.config.lose_first;
        let mut copies = u32::from(!lost_on_purpose);
        if let (true, Some(first)) = (lost_on_purpose, path.first()) {
            self.link(first.from, first.to).dropped.fetch_add(1, Ordering::Relaxed);
        }
        let mut extra_delay = 0u32;
        {
            let mut rng = self.rng.lock().unwrap();
            for link in &path {
                let counters = self.link(link.from, link.to);
                counters.sent.fetch_add(u64::from(copies), Ordering::Relaxed);
                let mut survivors = 0;
                for _ in 0..copies {
                    if rng.chance(self.config.loss) {
                        counters.dropped.fetch_add(1, Ordering::Relaxed);
                    } else {
                        survivors += 1;
                    }
                }
                copies = survivors;
                if copies > 0 && rng.chance(self.config.duplicate) {
                    counters.duplicated.fetch_add(1, Ordering::Relaxed);
                    copies += 1;
                }
                if copies > 0 && rng.chance(self.config.reorder) {
                    counters.reordered.fetch_add(1, Ordering::Relaxed);
                    extra_delay += 1;
                }
            }
        }
        if copies == 0 {
            self.note(datagram.src, |c| &c.packets_dropped, 1);
            self.trace(&datagram, "dropped");
            return;
        }
        if copies > 1 {
            self.note(datagram.src, |c| &c.packets_duplicated, u64::from(copies - 1));
        }
        // A reordered packet is held back long enough for the next ones to overtake it.
        let base = self.latency(path.len().max(1));
        let hold = Duration::from_micros(200) * extra_delay + base * extra_delay;
        let mut queue = self.queue.lock().unwrap();
        for _ in 0..copies {
            let order = queue.1;
            queue.1 += 1;
            queue.0.push(Pending { due: Instant::now() + base + hold, order, datagram: datagram.clone() });
        }
        drop(queue);
        self.wake.notify_one();
    }

    /// Sends `datagrams` in order, as a burst: on links that inject nothing they cross in one
    /// latency together (a burst is pipelined on a real link), otherwise one by one.
    pub fn send_all(&self, datagrams: Vec<Datagram>) {
        if !self.config.injects_nothing() {
            datagrams.into_iter().for_each(|d| self.send(d));
            return;
        }
        let mut longest = 0;
        for d in &datagrams {
            self.note(d.src, |c| &c.packets_sent, 1);
            self.trace(d, "sent");
            let path = self.hops(d.src, d.dst);
            for link in &path {
                self.link(link.from, link.to).sent.fetch_add(1, Ordering::Relaxed);
            }
            longest = longest.max(path.len().max(1));
        }
        wait(self.latency(longest));
        let mut far = Vec::new();
        for d in datagrams {
            match self.elsewhere(d.dst) {
                Some(_) => far.push(d),
                None => self.arrive(d),
            }
        }
        if let (Some(elsewhere), false) = (self.elsewhere.get(), far.is_empty()) {
            (elsewhere.forward)(far);
        }
    }

    /// Hands a datagram that crossed the links to its receiver, or to the process that hosts
    /// its destination.
    fn deliver(&self, datagram: Datagram) {
        match self.elsewhere(datagram.dst) {
            Some(elsewhere) => (elsewhere.forward)(vec![datagram]),
            None => self.arrive(datagram),
        }
    }

    /// A datagram for a node of this process has arrived: counted, traced and handed to the
    /// node's receiver (none yet: it goes nowhere).
    pub fn arrive(&self, datagram: Datagram) {
        let receiver = self.receivers.lock().unwrap().get(datagram.dst).cloned().flatten();
        self.note(datagram.dst, |c| &c.packets_received, 1);
        self.trace(&datagram, "delivered");
        if let Some(r) = receiver {
            r(datagram);
        }
    }

    /// Runs the delivery loop on its own thread until [`Interconnect::stop`].
    pub fn spawn_delivery(self: &Arc<Self>) -> std::thread::JoinHandle<()> {
        let me = self.clone();
        std::thread::spawn(move || me.deliver_loop())
    }

    pub fn stop(&self) {
        self.queue.lock().unwrap().2 = true;
        self.wake.notify_all();
    }

    fn deliver_loop(&self) {
        let mut queue = self.queue.lock().unwrap();
        loop {
            if queue.2 {
                return;
            }
            let now = Instant::now();
            match queue.0.peek().map(|p| p.due) {
                Some(due) if due <= now => {
                    let Pending { datagram, .. } = queue.0.pop().unwrap();
                    drop(queue);
                    self.deliver(datagram);
                    queue = self.queue.lock().unwrap();
                }
                Some(due) => queue = self.wake.wait_timeout(queue, due - now).unwrap().0,
                None => queue = self.wake.wait(queue).unwrap(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    fn grid(n: usize, config: LinkConfig) -> Arc<Interconnect> {
        Interconnect::new((0..n).map(qfdb_coordinates).collect(), config)
    }

    #[test]
    fn routes_in_dimension_order() {
        let net = grid(8, LinkConfig::default());
        assert_eq!(net.route(0, 3), [0, 1, 2, 3]);
        assert_eq!(net.route(0, 5), [0, 1, 5]);
        assert_eq!(net.route(6, 1), [6, 5, 1]);
        assert_eq!(net.route(2, 2), [2]);
    }

    #[test]
    fn config_file_is_validated() {
        let c = LinkConfig::from_toml("[interconnect]\nlatency_us = 5\nloss = 0.25\n").unwrap();
        assert_eq!((c.latency_us, c.loss, c.duplicate), (5.0, 0.25, 0.0));
        assert!(LinkConfig::from_toml("[interconnect]\nloss = 1.5\n").is_err());
        assert!(LinkConfig::from_toml("[interconnect]\nlatency_us = -1\n").is_err());
        assert!(LinkConfig::from_toml("[interconnect]\nlosss = 0.1\n").is_err(), "unknown fields are errors");
        assert_eq!(LinkConfig::from_toml("").unwrap(), LinkConfig::default());
    }

    /// Sends `n` numbered datagrams 0 -> 1 and returns what arrived, in arrival order.
    fn run(config: LinkConfig, n: u32) -> (Vec<u32>, Arc<Interconnect>) {
        let net = grid(2, config);
        let (tx, rx) = mpsc::channel();
        let tx = Mutex::new(tx);
        net.set_receiver(
            1,
            Box::new(move |d: Datagram| {
                tx.lock().unwrap().send(u32::from_le_bytes(d.payload[..4].try_into().unwrap())).unwrap()
            }),
        );
        let delivery = net.spawn_delivery();
        for i in 0..n {
            net.send(Datagram { src: 0, dst: 1, channel: 0, payload: i.to_le_bytes().to_vec() });
        }
        let mut got = Vec::new();
        while let Ok(v) = rx.recv_timeout(Duration::from_millis(300)) {
            got.push(v);
        }
        net.stop();
        delivery.join().unwrap();
        (got, net)
    }

    #[test]
    fn clean_links_deliver_everything_in_order() {
        let (got, net) = run(LinkConfig { latency_us: 0.0, ..LinkConfig::default() }, 1000);
        assert_eq!(got, (0..1000).collect::<Vec<_>>());
        let links = net.link_counters();
        assert_eq!(links.len(), 1);
        assert_eq!(links[0].1.sent.load(Ordering::Relaxed), 1000);
    }

    #[test]
    fn injection_statistics_match_the_settings() {
        const N: u32 = 20_000;
        let config = LinkConfig { latency_us: 0.0, loss: 0.1, duplicate: 0.05, reorder: 0.02, seed: 42, lose_first: 0 };
        let (got, net) = run(config, N);
        let (_, c) = &net.link_counters()[0];
        let (dropped, duplicated) = (c.dropped.load(Ordering::Relaxed), c.duplicated.load(Ordering::Relaxed));
        let within = |measured: f64, expected: f64| (measured - expected).abs() <= expected * 0.15 + 0.002;
        assert!(within(dropped as f64 / f64::from(N), 0.1), "loss rate {}", dropped as f64 / f64::from(N));
        let survivors = f64::from(N) - dropped as f64;
        assert!(within(duplicated as f64 / survivors, 0.05), "duplication rate {}", duplicated as f64 / survivors);
        assert_eq!(got.len() as u64, u64::from(N) - dropped + duplicated, "every surviving copy arrives");
        let mut unique = got.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len() as u64, u64::from(N) - dropped);
        // Reordering: packets that arrive after a higher-numbered one.
        let mut highest = 0;
        let late = got
            .iter()
            .filter(|&&v| {
                let late = v < highest;
                highest = highest.max(v);
                late
            })
            .count();
        let reordered = c.reordered.load(Ordering::Relaxed) as f64;
        assert!(within(reordered / survivors, 0.02), "reorder rate {}", reordered / survivors);
        assert!(late as f64 >= reordered * 0.5, "held-back packets arrive late ({late} of {reordered})");
    }

    #[test]
    fn per_node_counters_see_sends_drops_and_deliveries() {
        let (got, net) = run(LinkConfig { latency_us: 0.0, loss: 0.5, seed: 3, ..LinkConfig::default() }, 1000);
        let (sent, dropped) = (
            net.observers.counters[0].packets_sent.load(Ordering::Relaxed),
            net.observers.counters[0].packets_dropped.load(Ordering::Relaxed),
        );
        assert_eq!(sent, 1000);
        assert_eq!(got.len() as u64, sent - dropped);
        assert_eq!(net.observers.counters[1].packets_received.load(Ordering::Relaxed), got.len() as u64);
    }

    #[test]
    fn the_first_datagrams_are_lost_on_purpose_and_the_rest_arrive() {
        let (got, net) = run(LinkConfig { latency_us: 0.0, lose_first: 64, ..LinkConfig::default() }, 200);
        assert_eq!(got, (64..200).collect::<Vec<u32>>(), "exactly the first 64 lost, the rest in order");
        assert_eq!(net.observers.counters[0].packets_dropped.load(Ordering::Relaxed), 64);
        let c = net.link_counters().into_iter().find(|(l, _)| (l.from, l.to) == (0, 1)).unwrap().1;
        assert_eq!(c.dropped.load(Ordering::Relaxed), 64, "counted on the first link");
        assert_eq!(LinkConfig::from_toml("[interconnect]\nlose_first = 64\n").unwrap().lose_first, 64);
    }

    #[test]
    fn transactions_survive_loss_by_retrying() {
        let net = grid(4, LinkConfig { latency_us: 0.0, loss: 0.3, seed: 7, ..LinkConfig::default() });
        let lost: u32 = (0..2000).map(|_| net.transact(0, 3)).sum();
        let sent: u64 = net.link_counters().iter().map(|(_, c)| c.sent.load(Ordering::Relaxed)).sum();
        // 6 hops per transaction; every loss costs one more attempt.
        assert_eq!(sent, 2000 * 6 + u64::from(lost));
        let rate = f64::from(lost) / sent as f64;
        assert!((rate - 0.3).abs() < 0.03, "attempt loss rate {rate}");
    }

    #[test]
    fn datagrams_for_nodes_elsewhere_are_forwarded_as_a_burst_and_arrive_there() {
        let config = LinkConfig { latency_us: 0.0, ..LinkConfig::default() };
        let (here, there) = (grid(4, config), grid(4, config));
        let forwarded = Arc::new(Mutex::new(Vec::new()));
        let into = forwarded.clone();
        assert!(here.set_elsewhere([2, 3, 9], Box::new(move |burst| into.lock().unwrap().push(burst))));
        assert!(!here.set_elsewhere([1], Box::new(|_| {})), "set once");
        let (tx, rx) = mpsc::channel();
        let tx = Mutex::new(tx);
        here.set_receiver(1, Box::new(move |d: Datagram| tx.lock().unwrap().send(d.payload[0]).unwrap()));
        let d = |dst, i| Datagram { src: 0, dst, channel: channel::PLDMA, payload: vec![i] };
        here.send_all(vec![d(2, 0), d(1, 1), d(3, 2), d(2, 3)]);
        assert_eq!(rx.try_iter().collect::<Vec<_>>(), [1], "the node of this process");
        let bursts = forwarded.lock().unwrap().clone();
        assert_eq!(bursts, [vec![d(2, 0), d(3, 2), d(2, 3)]], "one burst, in order");
        let received =
            |net: &Interconnect, n: usize| net.observers.counters[n].packets_received.load(Ordering::Relaxed);
        assert_eq!((received(&here, 1), received(&here, 2)), (1, 0), "counted where they arrive");
        // The process that hosts node 2 records the arrival.
        bursts.into_iter().flatten().for_each(|d| there.arrive(d));
        assert_eq!((received(&there, 2), received(&there, 3)), (2, 1));
        assert_eq!(here.observers.counters[0].packets_sent.load(Ordering::Relaxed), 4, "sent, on the sender's side");
    }
}
