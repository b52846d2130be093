//! The ranks' transport (`qemu_virt::ranks`) over real MPI ranks: one cluster of four stand-in
//! nodes spread over the ranks of an `mpirun` (2 or 4, over TCP: `cargo xtask test
//! ranks_over_mpi`), each rank hosting its share with a `Fabric::hosting` and a `RankTransport`
//! over the MPI link (`MpiRankLink`). The cross-rank scenarios of `tests/ranks.rs`: packets,
//! window stores and loads, datagrams in order, the cluster's liveness on every rank, and, with
//! `--lose-last-rank`, a rank that dies taking its nodes with it while nothing waits for them.
//!
//! Every rank prints `rank R/N: check NAME ... ok` (or `FAILED: why`) for each check it owes,
//! and exits non-zero if one failed.

use proto::forward::Status;
use qemu_virt::counters::NodeCounters;
use qemu_virt::fabric::Fabric;
use qemu_virt::interconnect::{Datagram, Interconnect, LinkConfig, Observers, channel, qfdb_coordinates};
use qemu_virt::mpi_link::{Handler, Kind, Link, LinkConfig as MpiConfig, MpiRankLink, Rank, Reply};
use qemu_virt::ranks::{NodeMap, RankLink, RankTransport};
use qemu_virt::shm::Ddr;
use qemu_virt::transport::{ClusterView, Delivery, Endpoint, Transport};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tempfile::NamedTempFile;

const NODES: usize = 4;
const DDR_BYTES: u64 = 0x1_0000;
/// The interface a stand-in vmbox refuses.
const REFUSED: u8 = 9;
/// Datagrams from each node to each node.
const BURST: u8 = 50;
/// Request to rank 0: answered once every party has come (payload: the parties, u32).
const BARRIER: Kind = 1;
const CONFIG: MpiConfig = MpiConfig { heartbeat: Duration::from_millis(100), lost_after: Duration::from_secs(2) };
/// What a check waits at most for something that must happen (only spent when it fails).
const LONG: Duration = Duration::from_secs(30);

/// A node's stand-in: its vmbox takes every packet but on interface `REFUSED`, and it records
/// what arrives.
#[derive(Default)]
struct Probe {
    packets: Mutex<Vec<(u8, Vec<u8>)>>,
    datagrams: Mutex<Vec<Datagram>>,
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

    fn resample_lines(&self) {}
}

/// The program's own kind on the link: a barrier held by rank 0.
#[derive(Default)]
struct Barrier {
    waiting: Mutex<Vec<Reply>>,
}

impl Handler for Barrier {
    fn message(&self, _: Rank, _: Kind, _: Vec<u8>) {}

    fn request(&self, _: Rank, kind: Kind, payload: Vec<u8>, reply: Reply) {
        if kind != BARRIER {
            let _ = reply.refuse("no such request");
            return;
        }
        let parties = payload.try_into().map(u32::from_le_bytes).unwrap_or(0) as usize;
        let mut waiting = self.waiting.lock().unwrap();
        waiting.push(reply);
        if waiting.len() >= parties {
            for reply in waiting.drain(..) {
                let _ = reply.send(Vec::new());
            }
        }
    }
}

type Check = Result<(), String>;

fn eventually(mut cond: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + LONG;
    while !cond() {
        if Instant::now() > until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    true
}

/// This rank's share of the cluster.
struct Share {
    link: Arc<MpiRankLink>,
    transport: Arc<RankTransport>,
    probes: Vec<Arc<Probe>>,
    mine: std::ops::Range<usize>,
    delivery: Option<std::thread::JoinHandle<()>>,
    _files: Vec<NamedTempFile>,
    failures: usize,
}

impl Share {
    fn start(link: Link) -> Result<Self, String> {
        let (me, ranks) = (link.rank(), link.ranks());
        let link = Arc::new(MpiRankLink::new(link, Some(Arc::new(Barrier::default()))));
        let map = NodeMap::blocks(NODES, ranks).map_err(|e| e.to_string())?;
        let mine = map.nodes_of(me);
        let mut files = Vec::new();
        let mut ddrs = Vec::new();
        for node in 0..NODES {
            if mine.contains(&node) {
                let file = NamedTempFile::new().map_err(|e| e.to_string())?;
                file.as_file().set_len(DDR_BYTES).map_err(|e| e.to_string())?;
                ddrs.push(Some(Arc::new(Ddr::open(file.path()).map_err(|e| e.to_string())?)));
                files.push(file);
            } else {
                ddrs.push(None);
            }
        }
        // This rank's nodes alive; the others' not until their rank says so.
        let alive = (0..NODES).map(|n| Arc::new(AtomicBool::new(mine.contains(&n)))).collect();
        let counters: Vec<Arc<NodeCounters>> = (0..NODES).map(|_| Arc::default()).collect();
        let observers = Observers { counters: counters.clone(), trace: None };
        let clean = LinkConfig { latency_us: 0.0, ..LinkConfig::default() };
        let net = Interconnect::with_observers((0..NODES).map(qfdb_coordinates).collect(), clean, observers);
        let fabric = Arc::new(Fabric::hosting(net.clone(), ddrs, alive, Arc::default(), counters, None));
        let probes: Vec<Arc<Probe>> = (0..NODES).map(|_| Arc::default()).collect();
        fabric.set_endpoints(&probes[mine.clone()]).map_err(|e| e.to_string())?;
        let as_rank_link: Arc<dyn RankLink> = link.clone();
        let transport = RankTransport::start(fabric, map, as_rank_link).map_err(|e| e.to_string())?;
        let delivery = Some(net.spawn_delivery());
        Ok(Self { link, transport, probes, mine, delivery, _files: files, failures: 0 })
    }

    fn tag(&self) -> String {
        format!("rank {}/{}", self.link.rank(), self.link.ranks())
    }

    fn report(&mut self, name: &str, verdict: Check) {
        match verdict {
            Ok(()) => println!("{}: check {name} ... ok", self.tag()),
            Err(why) => {
                println!("{}: check {name} ... FAILED: {why}", self.tag());
                self.failures += 1;
            }
        }
    }

    /// Every rank of `parties` (0 among them) waits here until all have come.
    fn barrier(&self, parties: usize) -> Check {
        let parties = (parties as u32).to_le_bytes().to_vec();
        self.link.mpi().call(0, BARRIER, parties, LONG).map(drop).map_err(|e| e.to_string())
    }

    fn packet_bytes(src: usize, dst: usize) -> Vec<u8> {
        (0..32).map(|i| (src * 16 + dst) as u8 ^ i).collect()
    }

    /// From each of this rank's nodes to every node (and one that does not exist): taken,
    /// refused; then, once every rank has sent, what reached this rank's nodes.
    fn packets(&self, ranks: usize) -> Check {
        let t = &self.transport;
        for src in self.mine.clone() {
            for dst in 0..=NODES {
                for iface in [3, REFUSED] {
                    let expected = if dst == NODES || iface == REFUSED { Delivery::Nack } else { Delivery::Ack };
                    let got = t.deliver_packet(src, dst, iface, &Self::packet_bytes(src, dst)).delivery;
                    if got != expected {
                        return Err(format!("node {src} to node {dst}, interface {iface}: {got:?}, not {expected:?}"));
                    }
                }
            }
        }
        self.barrier(ranks)?;
        for dst in self.mine.clone() {
            let mut got = self.probes[dst].packets.lock().unwrap().clone();
            got.sort();
            let mut expected: Vec<_> = (0..NODES).map(|src| (3, Self::packet_bytes(src, dst))).collect();
            expected.sort();
            if got != expected {
                return Err(format!("node {dst} received {got:?}, not a packet from each node"));
            }
        }
        Ok(())
    }

    /// Stores and loads of every size from this rank's nodes to every node: each load finds the
    /// store before it; out of bounds and to no node, unmapped.
    fn window(&self) -> Check {
        let t = &self.transport;
        for src in self.mine.clone() {
            for dst in 0..NODES {
                for (i, size) in [1u32, 2, 4, 8, 16].into_iter().enumerate() {
                    let pa = 0x100 * (src as u64 + 1) + 0x20 * i as u64;
                    let value = u128::from_le_bytes([(src * 16 + dst) as u8 + size as u8; 16]) >> (128 - 8 * size);
                    let stored = t.remote_store(src, dst, pa, size, value);
                    let loaded = t.remote_load(src, dst, pa, size);
                    if (stored, loaded) != (Ok(()), Ok(value)) {
                        return Err(format!("node {src} at node {dst} {pa:#x}/{size}: {stored:?}, then {loaded:?}"));
                    }
                }
                for (pa, size) in [(DDR_BYTES - 4, 8), (DDR_BYTES, 1)] {
                    let got = t.remote_load(src, dst, pa, size);
                    if got != Err(Status::Unmapped) {
                        return Err(format!("node {src} loads node {dst} {pa:#x}/{size}: {got:?}, not unmapped"));
                    }
                }
            }
            let got = t.remote_load(src, NODES, 0x100, 8);
            if got != Err(Status::Unmapped) {
                return Err(format!("node {src} loads from no node: {got:?}"));
            }
        }
        Ok(())
    }

    /// A burst from each of this rank's nodes to every node; each of this rank's nodes receives
    /// every node's, in the order sent.
    fn datagrams(&self) -> Check {
        for src in self.mine.clone() {
            let burst = (0..NODES)
                .flat_map(|dst| {
                    (0..BURST).map(move |i| Datagram { src, dst, channel: channel::PLDMA, payload: vec![i] })
                })
                .collect();
            self.transport.send_datagrams(burst);
        }
        let all = BURST as usize * NODES;
        for dst in self.mine.clone() {
            let probe = &self.probes[dst];
            if !eventually(|| probe.datagrams.lock().unwrap().len() >= all) {
                return Err(format!(
                    "node {dst} received {} datagrams of {all}",
                    probe.datagrams.lock().unwrap().len()
                ));
            }
            for src in 0..NODES {
                let from: Vec<u8> =
                    probe.datagrams.lock().unwrap().iter().filter(|d| d.src == src).map(|d| d.payload[0]).collect();
                if from != (0..BURST).collect::<Vec<u8>>() {
                    return Err(format!("node {dst} received from node {src}: {from:?}"));
                }
            }
        }
        Ok(())
    }

    /// Every node alive everywhere; each rank's first node reports RUN_DONE, which every rank
    /// sees.
    fn liveness(&self, ranks: usize) -> Check {
        let every: u128 = (1 << NODES) - 1;
        if !eventually(|| self.transport.alive().0 == every) {
            return Err(format!("alive {:#b}, not every node", self.transport.alive().0));
        }
        self.transport.report_done(self.mine.start as u16);
        let map = NodeMap::blocks(NODES, ranks).map_err(|e| e.to_string())?;
        let firsts: u128 = (0..ranks).map(|r| 1 << map.nodes_of(r).start).sum();
        if !eventually(|| self.transport.done().0 == firsts) {
            return Err(format!("done {:#b}, not {firsts:#b}", self.transport.done().0));
        }
        Ok(())
    }

    /// Rank `gone` died: its nodes answer unreachable without a hang (once it is found lost, at
    /// once), every rank sees them gone, and the rest of the cluster goes on.
    fn lost_rank(&self, gone: usize, ranks: usize) -> Check {
        let map = NodeMap::blocks(NODES, ranks).map_err(|e| e.to_string())?;
        let (t, src) = (&self.transport, self.mine.start);
        let lost = map.nodes_of(gone);
        let start = Instant::now();
        let bound = CONFIG.lost_after + Duration::from_secs(5);
        // The rank may answer a few more before it is gone (it dies just after the barrier):
        // then, whatever the link has found yet, unreachable.
        for dst in lost.clone() {
            loop {
                match t.deliver_packet(src, dst, 3, &[0; 32]).delivery {
                    Delivery::Unreachable => break,
                    Delivery::Ack if start.elapsed() < bound => {}
                    got => {
                        return Err(format!(
                            "a packet to node {dst} of the lost rank, after {:?}: {got:?}",
                            start.elapsed()
                        ));
                    }
                }
            }
        }
        if start.elapsed() > bound {
            return Err(format!("the lost rank's nodes took {:?} to answer", start.elapsed()));
        }
        let expected: u128 = (0..NODES).filter(|n| !lost.contains(n)).map(|n| 1 << n).sum();
        if !eventually(|| t.alive().0 == expected) {
            return Err(format!("alive {:#b}, not {expected:#b}", t.alive().0));
        }
        if t.lost_ranks() != [gone] {
            return Err(format!("lost ranks {:?}, not [{gone}]", t.lost_ranks()));
        }
        let start = Instant::now();
        for dst in lost {
            let answers = (
                t.deliver_packet(src, dst, 3, &[0; 32]).delivery,
                t.remote_load(src, dst, 0x10, 8),
                t.remote_store(src, dst, 0x10, 8, 1),
            );
            if answers != (Delivery::Unreachable, Err(Status::DeviceError), Err(Status::DeviceError)) {
                return Err(format!("node {dst} of the lost rank answered {answers:?}"));
            }
        }
        if start.elapsed() > Duration::from_millis(500) {
            return Err(format!("once lost, its nodes took {:?} to answer", start.elapsed()));
        }
        // The survivors still reach each other.
        for dst in (0..NODES).filter(|n| !map.nodes_of(gone).contains(n)) {
            let got = t.deliver_packet(src, dst, 3, &[0; 32]).delivery;
            if got != Delivery::Ack {
                return Err(format!("a packet to surviving node {dst}: {got:?}"));
            }
        }
        Ok(())
    }

    /// Stops the rank's threads and ends the link; whether it names exactly `expected_lost`.
    fn finish(mut self, expected_lost: &[usize]) -> (String, usize, Check) {
        let (tag, failures) = (self.tag(), self.failures);
        self.transport.stop();
        self.transport.fabric().interconnect.stop();
        if let Some(delivery) = self.delivery.take() {
            let _ = delivery.join();
        }
        let Share { link, transport, .. } = self;
        drop(transport);
        let verdict = match Arc::try_unwrap(link) {
            Ok(link) => match link.shutdown() {
                Ok(ended) if ended.lost == expected_lost => Ok(()),
                other => Err(format!("ended {other:?}, expected lost {expected_lost:?}")),
            },
            Err(_) => Err("the link is still shared after the transport stopped".into()),
        };
        (tag, failures, verdict)
    }
}

fn main() {
    let lose_last = std::env::args().any(|a| a == "--lose-last-rank");
    let link = match Link::init(CONFIG) {
        Ok(link) => link,
        Err(e) => {
            eprintln!("ranks_over_mpi: {e}");
            std::process::exit(2);
        }
    };
    let (me, ranks) = (link.rank(), link.ranks());
    if !(2..=NODES).contains(&ranks) {
        eprintln!("ranks_over_mpi: needs 2 to {NODES} ranks, not {ranks}");
        std::process::exit(2);
    }
    let mut share = match Share::start(link) {
        Ok(share) => share,
        Err(e) => {
            eprintln!("ranks_over_mpi, rank {me}: {e}");
            std::process::exit(2);
        }
    };
    let heard = share.transport.wait_for_peers(LONG).map_err(|missing| format!("not heard from ranks {missing:?}"));
    share.report("every_rank_hears_every_other", heard);
    let verdict = share.liveness(ranks);
    share.report("liveness_and_run_done_are_the_clusters_on_every_rank", verdict);
    let verdict = share.packets(ranks);
    share.report("packets_cross_ranks_and_arrive_intact", verdict);
    let verdict = share.window();
    share.report("window_stores_and_loads_cross_ranks_in_order", verdict);
    let verdict = share.datagrams();
    share.report("datagrams_arrive_in_order_from_every_node", verdict);
    let _ = share.barrier(ranks);
    let gone = ranks - 1;
    if lose_last && me == gone {
        println!("{}: leaving without a word, as planned", share.tag());
        // SAFETY: kill with this process's own id.
        unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
    }
    if lose_last {
        let verdict = share.lost_rank(gone, ranks);
        share.report("a_lost_ranks_nodes_are_unreachable_without_a_hang", verdict);
        // No survivor stops serving while another still checks it.
        let _ = share.barrier(gone);
    }
    let expected_lost = if lose_last { vec![gone] } else { vec![] };
    let (tag, mut failures, verdict) = share.finish(&expected_lost);
    match verdict {
        Ok(()) => println!("{tag}: check shutdown_names_the_lost ... ok"),
        Err(why) => {
            println!("{tag}: check shutdown_names_the_lost ... FAILED: {why}");
            failures += 1;
        }
    }
    println!("{tag}: finished");
    std::process::exit(if failures == 0 { 0 } else { 1 });
}
