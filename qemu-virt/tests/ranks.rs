//! One cluster of four nodes spread over 2 and 4 ranks (`qemu_virt::ranks`), linked in this
//! process (`InProcessLinks`), each node a stand-in endpoint: the same traffic gets the same
//! answers, reaches the same places and is counted the same as on one fabric that hosts every
//! node; the links' injection applies across ranks; liveness and RUN_DONE are the cluster's on
//! every rank; a rank that dies takes its nodes with it, and nothing waits for them.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use proto::forward::Status;
use qemu_virt::counters::{NodeCounters, Snapshot};
use qemu_virt::fabric::Fabric;
use qemu_virt::interconnect::{Datagram, Interconnect, LinkConfig, Observers, channel, qfdb_coordinates};
use qemu_virt::ranks::{InProcessLinks, NodeMap, RankLink, RankTransport};
use qemu_virt::shm::Ddr;
use qemu_virt::transport::{ClusterView, Delivery, Endpoint, Transport};
use tempfile::NamedTempFile;

const NODES: usize = 4;
const DDR_BYTES: u64 = 0x1_0000;
/// The interface a stand-in vmbox refuses.
const REFUSED: u8 = 9;
/// What a test waits at most for something that must happen (only spent when it fails).
const LONG: Duration = Duration::from_secs(10);

fn clean() -> LinkConfig {
    LinkConfig { latency_us: 0.0, ..LinkConfig::default() }
}

fn eventually(mut cond: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + LONG;
    while !cond() {
        if Instant::now() > until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    true
}

/// A node's stand-in: its vmbox takes every packet but on interface `REFUSED`, and it records
/// what arrives.
#[derive(Default)]
struct Probe {
    packets: Mutex<Vec<(u8, Vec<u8>)>>,
    datagrams: Mutex<Vec<Datagram>>,
    resamples: AtomicUsize,
}

impl Endpoint for Probe {
    fn packet(&self, iface: u8, bytes: &[u8]) -> Delivery {
        if iface == REFUSED {
            return Delivery::Nack;
        }
        self.packets.lock().unwrap().push((iface, bytes.to_vec()));
        Delivery::Ack
    }

    fn datagram(&self, datagram: Datagram) {
        self.datagrams.lock().unwrap().push(datagram);
    }

    fn resample_lines(&self) {
        self.resamples.fetch_add(1, Ordering::SeqCst);
    }
}

impl Probe {
    /// The datagrams from node `src`, in arrival order (their first payload byte).
    fn datagrams_from(&self, src: usize) -> Vec<u8> {
        self.datagrams.lock().unwrap().iter().filter(|d| d.src == src).map(|d| d.payload[0]).collect()
    }
}

/// The nodes of one rank.
struct Rank {
    fabric: Arc<Fabric>,
    /// `None` for the single fabric.
    transport: Option<Arc<RankTransport>>,
    delivery: Option<JoinHandle<()>>,
}

/// A cluster of `NODES` stand-in nodes: on one fabric, or over ranks.
struct World {
    _files: Vec<NamedTempFile>,
    /// Each node's own `alive` flag, on its rank.
    alive: Vec<Arc<AtomicBool>>,
    probes: Vec<Arc<Probe>>,
    ranks: Vec<Rank>,
    map: NodeMap,
    links: Option<InProcessLinks>,
}

impl World {
    /// Every node on one fabric, as in one process.
    fn one_fabric(link: LinkConfig) -> Self {
        Self::build(1, link, false)
    }

    /// The nodes over `ranks` ranks.
    fn ranks(ranks: usize, link: LinkConfig) -> Self {
        Self::build(ranks, link, true)
    }

    fn build(ranks: usize, link: LinkConfig, over_links: bool) -> Self {
        let map = NodeMap::blocks(NODES, ranks).unwrap();
        let files: Vec<NamedTempFile> = (0..NODES)
            .map(|_| {
                let f = NamedTempFile::new().unwrap();
                f.as_file().set_len(DDR_BYTES).unwrap();
                f
            })
            .collect();
        let alive: Vec<_> = (0..NODES).map(|_| Arc::new(AtomicBool::new(true))).collect();
        let probes: Vec<Arc<Probe>> = (0..NODES).map(|_| Arc::default()).collect();
        let links = over_links.then(|| InProcessLinks::new(ranks));
        let mut world_ranks = Vec::new();
        for rank in 0..ranks {
            let hosted = map.nodes_of(rank);
            let ddrs = (0..NODES).map(|n| hosted.contains(&n).then(|| Arc::new(Ddr::open(files[n].path()).unwrap())));
            // Another rank's node: not alive until its rank says so.
            let flags = (0..NODES)
                .map(|n| if hosted.contains(&n) { alive[n].clone() } else { Arc::new(AtomicBool::new(false)) })
                .collect();
            let counters: Vec<Arc<NodeCounters>> = (0..NODES).map(|_| Arc::default()).collect();
            let observers = Observers { counters: counters.clone(), trace: None };
            let net = Interconnect::with_observers((0..NODES).map(qfdb_coordinates).collect(), link, observers);
            let fabric = Arc::new(Fabric::hosting(net.clone(), ddrs.collect(), flags, Arc::default(), counters, None));
            fabric.set_endpoints(&probes[hosted]).unwrap();
            let transport = links.as_ref().map(|links| {
                let link: Arc<dyn RankLink> = links.link(rank);
                RankTransport::start(fabric.clone(), map.clone(), link).unwrap()
            });
            world_ranks.push(Rank { fabric, transport, delivery: Some(net.spawn_delivery()) });
        }
        for rank in &world_ranks {
            if let Some(t) = &rank.transport {
                t.wait_for_peers(LONG).unwrap();
            }
        }
        Self { _files: files, alive, probes, ranks: world_ranks, map, links }
    }

    fn rank(&self, node: usize) -> &Rank {
        &self.ranks[self.map.rank_of(node).unwrap()]
    }

    /// The transport node `node`'s platform speaks to.
    fn transport(&self, node: usize) -> Arc<dyn Transport> {
        let rank = self.rank(node);
        match &rank.transport {
            Some(t) => t.clone(),
            None => rank.fabric.clone(),
        }
    }

    /// Node `node`'s counters, on its own rank.
    fn counters(&self, node: usize) -> Snapshot {
        self.rank(node).fabric.counters[node].snapshot()
    }

    /// The links' counters (sent, dropped), summed over the ranks.
    fn link_counters(&self) -> BTreeMap<(usize, usize), (u64, u64)> {
        let mut links = BTreeMap::new();
        for rank in &self.ranks {
            for (link, c) in rank.fabric.interconnect.link_counters() {
                let entry: &mut (u64, u64) = links.entry((link.from, link.to)).or_default();
                entry.0 += c.sent.load(Ordering::Relaxed);
                entry.1 += c.dropped.load(Ordering::Relaxed);
            }
        }
        links
    }

    /// Node `node`'s QEMU ends, as `Node` reports it.
    fn stop_node(&self, node: usize) {
        self.alive[node].store(false, Ordering::Release);
        self.rank(node).fabric.membership.raise();
    }
}

impl Drop for World {
    fn drop(&mut self) {
        for rank in &mut self.ranks {
            if let Some(t) = &rank.transport {
                t.stop();
            }
            rank.fabric.interconnect.stop();
            if let Some(d) = rank.delivery.take() {
                d.join().unwrap();
            }
        }
    }
}

/// A window access: (src, dst, pa, size).
type At = (usize, usize, u64, u32);

/// What reached a node: its packets (interface, bytes), then its datagrams from each node in
/// arrival order (their first byte).
#[derive(Debug, PartialEq)]
struct Arrived {
    packets: Vec<(u8, Vec<u8>)>,
    datagrams: Vec<Vec<u8>>,
}

/// What a run of traffic came to, to compare between worlds.
#[derive(Debug, PartialEq)]
struct Outcome {
    deliveries: Vec<(usize, usize, u8, Delivery)>,
    loads: Vec<(At, Result<u128, Status>)>,
    stores: Vec<(At, Result<(), Status>)>,
    arrived: Vec<Arrived>,
    counters: Vec<Snapshot>,
    links: BTreeMap<(usize, usize), (u64, u64)>,
}

/// The same traffic on any world: packets between every pair (taken, refused, to no node),
/// window stores and loads of every size between every pair and out of bounds, and a burst of
/// datagrams from every node to every node.
fn traffic(world: &World) -> Outcome {
    let mut deliveries = Vec::new();
    for src in 0..NODES {
        let t = world.transport(src);
        for dst in 0..NODES + 2 {
            for iface in [3, REFUSED] {
                let bytes: Vec<u8> = (0..32).map(|i| (src * 16 + dst) as u8 ^ i).collect();
                deliveries.push((src, dst, iface, t.deliver_packet(src, dst, iface, &bytes).delivery));
            }
        }
    }
    let (mut loads, mut stores) = (Vec::new(), Vec::new());
    for src in 0..NODES {
        let t = world.transport(src);
        for dst in 0..NODES + 1 {
            for (i, size) in [1u32, 2, 4, 8, 16].into_iter().enumerate() {
                let pa = 0x100 * (src as u64 + 1) + 0x20 * i as u64;
                let value = u128::from_le_bytes([(src * 16 + dst) as u8 + size as u8; 16]) >> (128 - 8 * size);
                stores.push(((src, dst, pa, size), t.remote_store(src, dst, pa, size, value)));
                loads.push(((src, dst, pa, size), t.remote_load(src, dst, pa, size)));
            }
            for (pa, size) in [(DDR_BYTES - 4, 8), (DDR_BYTES, 1), (u64::MAX, 2)] {
                stores.push(((src, dst, pa, size), t.remote_store(src, dst, pa, size, 0)));
                loads.push(((src, dst, pa, size), t.remote_load(src, dst, pa, size)));
            }
        }
    }
    for src in 0..NODES {
        let burst = (0..NODES)
            .flat_map(|dst| (0..50u8).map(move |i| Datagram { src, dst, channel: channel::PLDMA, payload: vec![i] }))
            .collect();
        world.transport(src).send_datagrams(burst);
    }
    assert!(
        eventually(|| world.probes.iter().all(|p| p.datagrams.lock().unwrap().len() == 50 * NODES)),
        "every datagram arrives"
    );
    let arrived = world
        .probes
        .iter()
        .map(|p| Arrived {
            packets: p.packets.lock().unwrap().clone(),
            datagrams: (0..NODES).map(|src| p.datagrams_from(src)).collect(),
        })
        .collect();
    Outcome {
        deliveries,
        loads,
        stores,
        arrived,
        counters: (0..NODES).map(|n| world.counters(n)).collect(),
        links: world.link_counters(),
    }
}

#[test]
fn over_two_and_four_ranks_the_traffic_comes_to_what_it_does_on_one_fabric() {
    let one = traffic(&World::one_fabric(clean()));
    // What one fabric does, to be sure the comparison compares something.
    assert!(one.deliveries.contains(&(0, 3, 3, Delivery::Ack)));
    assert!(one.deliveries.contains(&(0, 3, REFUSED, Delivery::Nack)));
    assert!(one.deliveries.contains(&(1, 5, 3, Delivery::Nack)), "no node 5");
    assert!(one.loads.contains(&((2, 1, 0x380, 16), Ok(u128::from_le_bytes([0x21 + 16; 16])))));
    assert!(one.loads.contains(&((2, 1, DDR_BYTES, 1), Err(Status::Unmapped))));
    assert!(one.loads.contains(&((2, 4, 0x380, 16), Err(Status::Unmapped))), "no node 4");
    assert_eq!(one.arrived[3].datagrams[0], (0..50).collect::<Vec<u8>>(), "datagrams in order");
    assert!(one.counters.iter().all(|c| c.packets_received > 0 && c.packets_nacked > 0));
    for ranks in [2, 4] {
        let world = World::ranks(ranks, clean());
        assert_eq!(traffic(&world), one, "over {ranks} ranks");
        for rank in &world.ranks {
            assert_eq!(rank.transport.as_ref().unwrap().malformed(), 0);
        }
    }
}

#[test]
fn a_packet_from_another_rank_has_its_destinations_lines_resampled_there() {
    let world = World::ranks(2, clean());
    let carried = world.transport(0).deliver_packet(0, 3, 3, &[1; 32]);
    assert_eq!((carried.delivery, carried.touched), (Delivery::Ack, false), "the far rank re-samples, not the sender");
    assert!(eventually(|| world.probes[3].resamples.load(Ordering::SeqCst) == 1));
    let carried = world.transport(0).deliver_packet(0, 1, 3, &[1; 32]);
    assert_eq!((carried.delivery, carried.touched), (Delivery::Ack, true), "on this rank, as on one fabric");
}

#[test]
fn run_done_and_a_stopped_node_are_seen_by_every_rank() {
    for ranks in [1, 2, 4] {
        let world = World::ranks(ranks, clean());
        let all = |set: fn(&dyn Transport) -> hal::sysblock::NodeSet, expected: u128| {
            eventually(|| (0..NODES).all(|n| set(&*world.transport(n)).0 == expected))
        };
        assert!(all(|t| t.alive(), 0b1111), "every node alive everywhere, over {ranks} ranks");
        world.transport(1).report_done(1);
        assert!(all(|t| t.done(), 0b0010), "node 1's RUN_DONE everywhere, over {ranks} ranks");

        world.stop_node(2);
        assert!(all(|t| t.alive(), 0b1011), "node 2 stopped, everywhere, over {ranks} ranks");
        let t = world.transport(0);
        assert_eq!(t.deliver_packet(0, 2, 3, &[0; 32]).delivery, Delivery::Unreachable);
        assert_eq!(t.remote_load(0, 2, 0x10, 8), Err(Status::DeviceError));
        assert_eq!(t.remote_store(0, 2, 0x10, 8, 1), Err(Status::DeviceError));
        assert!(world.probes[2].packets.lock().unwrap().is_empty(), "nothing reached it");
    }
}

#[test]
fn a_lost_rank_takes_its_nodes_and_nothing_waits_for_them() {
    for ranks in [2, 4] {
        let world = World::ranks(ranks, clean());
        let lost_rank = 1;
        let lost_nodes = world.map.nodes_of(lost_rank);
        let t = world.transport(0);
        let signal = world.ranks[0].fabric.membership.clone();
        let generation = signal.generation();

        world.links.as_ref().unwrap().kill(lost_rank);
        let start = Instant::now();
        for dst in lost_nodes.clone() {
            // At once, whether or not the rank's watcher has noticed yet.
            assert_eq!(t.deliver_packet(0, dst, 3, &[0; 32]).delivery, Delivery::Unreachable);
            assert_eq!(t.remote_load(0, dst, 0x10, 8), Err(Status::DeviceError));
            assert_eq!(t.remote_store(0, dst, 0x10, 8, 1), Err(Status::DeviceError));
        }
        assert!(start.elapsed() < Duration::from_secs(1), "answered at once: {:?}", start.elapsed());
        let expected: u128 = (0..NODES).filter(|n| !lost_nodes.contains(n)).map(|n| 1 << n).sum();
        for rank in (0..ranks).filter(|&r| r != lost_rank) {
            let t = world.ranks[rank].transport.as_ref().unwrap();
            assert!(eventually(|| t.alive().0 == expected), "rank {rank} sees the lost nodes gone");
            assert_eq!(t.lost_ranks(), [lost_rank]);
        }
        assert!(signal.generation() > generation, "the cluster's monitor is woken (PEER_LOST)");
        // The rest of the cluster goes on.
        let survivor = (0..NODES).rev().find(|n| !lost_nodes.contains(n)).unwrap();
        assert_eq!(t.deliver_packet(0, survivor, 3, &[0; 32]).delivery, Delivery::Ack);
        assert_eq!(t.remote_store(0, survivor, 0x10, 8, 7), Ok(()));
        assert_eq!(t.remote_load(0, survivor, 0x10, 8), Ok(7));
    }
}

#[test]
fn loss_duplication_and_reordering_apply_on_links_between_ranks() {
    const N: u32 = 3000;
    let link = LinkConfig { latency_us: 0.0, loss: 0.2, duplicate: 0.1, reorder: 0.05, seed: 11, lose_first: 0 };
    let world = World::ranks(2, link);
    // Node 0 on rank 0 to node 3 on rank 1, three links each way.
    let t = world.transport(0);
    for i in 0..N {
        t.send_datagrams(vec![Datagram { src: 0, dst: 3, channel: channel::PLDMA, payload: i.to_le_bytes().to_vec() }]);
    }
    let sender = world.counters(0);
    assert_eq!(sender.packets_sent, u64::from(N));
    let expected = u64::from(N) - sender.packets_dropped + sender.packets_duplicated;
    assert!(sender.packets_dropped > 0 && sender.packets_duplicated > 0, "{sender:?}");
    let probe = &world.probes[3];
    assert!(eventually(|| probe.datagrams.lock().unwrap().len() as u64 == expected), "every surviving copy arrives");
    assert_eq!(world.counters(3).packets_received, expected, "counted at the receiver, on its rank");
    let got: Vec<u32> = probe
        .datagrams
        .lock()
        .unwrap()
        .iter()
        .map(|d| u32::from_le_bytes(d.payload[..4].try_into().unwrap()))
        .collect();
    assert!(got.windows(2).any(|w| w[1] < w[0]), "some overtaken");
    // Decided on the sender's rank: its interconnect counted the links' drops.
    let rank0: u64 =
        world.ranks[0].fabric.interconnect.link_counters().iter().map(|(_, c)| c.dropped.load(Ordering::Relaxed)).sum();
    let rank1: u64 =
        world.ranks[1].fabric.interconnect.link_counters().iter().map(|(_, c)| c.dropped.load(Ordering::Relaxed)).sum();
    assert_eq!((rank0 > 0, rank1), (true, 0));

    // Transactions (packets, window accesses) are retried on the links, and always arrive.
    for i in 0..200u32 {
        assert_eq!(t.deliver_packet(0, 3, 3, &i.to_le_bytes()).delivery, Delivery::Ack);
        assert_eq!(t.remote_store(0, 3, 0x40, 4, u128::from(i)), Ok(()));
        assert_eq!(t.remote_load(0, 3, 0x40, 4), Ok(u128::from(i)), "the store is there before the load");
    }
    let retried: u64 = world.link_counters().values().map(|(_, dropped)| dropped).sum();
    assert!(retried > rank0, "lost attempts of transactions were counted too");
}

#[test]
fn a_malformed_message_is_counted_and_answered_with_nothing() {
    let world = World::ranks(2, clean());
    let links = world.links.as_ref().unwrap();
    assert_eq!(links.link(0).request(1, vec![0xee, 1, 2], LONG), Ok(vec![]), "a request gets an empty reply");
    links.link(0).send(1, vec![0x01, 0, 0]).unwrap();
    let far = world.ranks[1].transport.as_ref().unwrap();
    assert!(eventually(|| far.malformed() == 2));
    // The rank still serves.
    assert_eq!(world.transport(0).deliver_packet(0, 2, 3, &[0; 32]).delivery, Delivery::Ack);
}

#[test]
fn a_rank_transport_checks_its_map_against_its_fabric_and_link() {
    use qemu_virt::ranks::RankError;
    let world = World::one_fabric(clean());
    let fabric = world.ranks[0].fabric.clone();
    let links = InProcessLinks::new(2);
    let start = |map: NodeMap, rank: usize| RankTransport::start(fabric.clone(), map, links.link(rank)).err();
    assert_eq!(start(NodeMap::blocks(3, 2).unwrap(), 0), Some(RankError::Nodes { map: 3, fabric: 4 }));
    assert_eq!(start(NodeMap::blocks(4, 4).unwrap(), 0), Some(RankError::Ranks { map: 4, link: 2 }));
    assert_eq!(
        start(NodeMap::blocks(4, 2).unwrap(), 1),
        Some(RankError::Hosted { rank: 1, expected: vec![2, 3], hosted: vec![0, 1, 2, 3] })
    );
}

#[test]
fn the_nodes_of_a_rank_not_heard_from_yet_refuse_packets_as_nodes_that_are_starting() {
    // Rank 1 of two never starts: rank 0 alone.
    let world = World::one_fabric(clean());
    let file = NamedTempFile::new().unwrap();
    file.as_file().set_len(DDR_BYTES).unwrap();
    let ddrs = vec![
        Some(Arc::new(Ddr::open(file.path()).unwrap())),
        Some(Arc::new(Ddr::open(file.path()).unwrap())),
        None,
        None,
    ];
    let alive = (0..NODES).map(|n| Arc::new(AtomicBool::new(n < 2))).collect();
    let net = Interconnect::new((0..NODES).map(qfdb_coordinates).collect(), clean());
    let counters = (0..NODES).map(|_| Arc::default()).collect();
    let fabric = Arc::new(Fabric::hosting(net, ddrs, alive, Arc::default(), counters, None));
    fabric.set_endpoints(&world.probes[..2]).unwrap();
    let links = InProcessLinks::new(2);
    let t = RankTransport::start(fabric, NodeMap::blocks(NODES, 2).unwrap(), links.link(0)).unwrap();
    assert_eq!(t.wait_for_peers(Duration::from_millis(50)), Err(vec![1]));
    assert_eq!(t.deliver_packet(0, 2, 3, &[0; 32]).delivery, Delivery::Nack);
    assert_eq!(t.remote_load(0, 3, 0, 8), Err(Status::DeviceError));
    assert_eq!(t.alive().0, 0b0011);
    assert_eq!(t.deliver_packet(0, 1, 3, &[0; 32]).delivery, Delivery::Ack, "its own nodes serve");
    t.stop();
}
