//! A cluster of platforms without QEMU, for the PLDMA tests: every node's DDR is a sparse file,
//! its PL is reached through `Platform::access` exactly as forwarded accesses arrive, its
//! interrupt bytes are collected, and a small stand-in for the R5 drives its engine through the
//! rings in DDR (`docs/hw/pldma.md`).
#![allow(dead_code)]

pub mod iommu;
pub mod node;

use board::pl::PLDMA_BASE;
use hal::pldma::descriptor::Descriptor;
use hal::pldma::event::{Event, RawEvent};
use hal::pldma::regs::Counter;
use proto::forward::Status;
use proto::ipc::{Consumer, IpcArea};
use proto::rdma::rings::{DescriptorPoster, EVENT_ENTRIES, EngineRings};
use qemu_virt::counters::NodeCounters;
use qemu_virt::fabric::Fabric;
use qemu_virt::interconnect::{Interconnect, LinkConfig, Observers, qfdb_coordinates};
use qemu_virt::models::iommu::{Bypass, IoTranslate};
use qemu_virt::platform::Platform;
use qemu_virt::r5_wake::R5Wake;
use qemu_virt::ranks::{InProcessLinks, NodeMap, RankTransport};
use qemu_virt::shm::Ddr;
use qemu_virt::transport::Transport;
use std::io::Read;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tempfile::NamedTempFile;

pub const DDR_BYTES: u64 = 16 << 20;
/// What a test waits at most for something that must happen. The machines running the tests
/// are shared and loaded: generous, and only ever spent when a test fails.
pub const LONG: Duration = Duration::from_secs(10);

/// Waits until `cond` holds, at most `limit`.
pub fn eventually(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + limit;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() > until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}
/// Where the stand-in R5 puts the engine's rings.
/// (Below 0x20_0000 lies the IPC area, whose sleep line the rig uses: `Rig::r5_sleeps`.)
pub const RINGS: u64 = 0x18_0000;
/// Data buffers of the tests live from here on (identity-mapped unless an IOMMU says else).
pub const BUFFERS: u64 = 0x40_0000;

// Control, fault and PD page registers, as docs/hw/pldma.md gives their offsets.
pub const CTRL: u64 = PLDMA_BASE + 0x008;
pub const NODE: u64 = PLDMA_BASE + 0x00c;
pub const RINGS_LO: u64 = PLDMA_BASE + 0x010;
pub const RINGS_HI: u64 = PLDMA_BASE + 0x014;
pub const DESC_DOORBELL: u64 = PLDMA_BASE + 0x018;
pub const CQ_NOTIFY: u64 = PLDMA_BASE + 0x01c;
pub const PD_ENABLE: u64 = PLDMA_BASE + 0x020;
pub const PD_BUSY: u64 = PLDMA_BASE + 0x024;
pub const IRQ_STATUS: u64 = PLDMA_BASE + 0x028;
pub const IRQ_ENABLE: u64 = PLDMA_BASE + 0x02c;
pub const CQ_PENDING: u64 = PLDMA_BASE + 0x030;
pub const COUNTERS: u64 = PLDMA_BASE + 0x040;
pub const FIFO_LO: u64 = PLDMA_BASE + 0x1000;
pub const FIFO_HI: u64 = PLDMA_BASE + 0x1008;
pub const FIFO_COUNT: u64 = PLDMA_BASE + 0x1010;

pub fn pd_page(pd: u16, reg: u64) -> u64 {
    PLDMA_BASE + 0x1_0000 + u64::from(pd) * 0x1000 + reg
}
pub const PD_DOORBELL: u64 = 0x00;
pub const PD_RAPF: u64 = 0x08;
pub const PD_STATUS: u64 = 0x14;
pub const PD_EVENTS_LOST: u64 = 0x18;
pub const PD_RAPF_REFUSED: u64 = 0x1c;

pub struct Rig {
    _files: Vec<NamedTempFile>,
    pub ddrs: Vec<Arc<Ddr>>,
    /// The first rank's fabric (the only one, unless the rig is spread over ranks).
    pub fabric: Arc<Fabric>,
    /// Every rank's fabric.
    pub fabrics: Vec<Arc<Fabric>>,
    /// Every rank's transport, over ranks.
    transports: Vec<Arc<RankTransport>>,
    pub platforms: Vec<Arc<Platform>>,
    /// Interrupt bytes each guest received.
    pub irq_bytes: Vec<Arc<Mutex<Vec<u8>>>>,
    deliveries: Vec<JoinHandle<()>>,
    drains: Vec<JoinHandle<()>>,
    /// The R5 ends of the nodes' semihosting consoles (wake bytes arrive there).
    _r5_consoles: Vec<UnixStream>,
    _links: Option<InProcessLinks>,
}

impl Rig {
    pub fn new(nodes: usize, link: LinkConfig) -> Self {
        Self::with_iommus(link, (0..nodes).map(|_| Arc::new(Bypass) as Arc<dyn IoTranslate>).collect())
    }

    pub fn clean(nodes: usize) -> Self {
        Self::new(nodes, LinkConfig { latency_us: 0.0, ..LinkConfig::default() })
    }

    pub fn with_iommus(link: LinkConfig, iommus: Vec<Arc<dyn IoTranslate>>) -> Self {
        Self::build(link, iommus.into_iter().map(Some).collect(), 1)
    }

    /// Every node's engine translates through its platform's SMMU model.
    pub fn with_smmus(nodes: usize) -> Self {
        Self::build(LinkConfig { latency_us: 0.0, ..LinkConfig::default() }, (0..nodes).map(|_| None).collect(), 1)
    }

    /// The nodes spread over `ranks` ranks linked in this process (`qemu_virt::ranks`), each
    /// with its fabric and interconnect; every node's engine translates through `iommus`.
    pub fn over_ranks(ranks: usize, link: LinkConfig, iommus: Vec<Arc<dyn IoTranslate>>) -> Self {
        Self::build(link, iommus.into_iter().map(Some).collect(), ranks)
    }

    /// One fabric for every node when `ranks` is 1, as in one process.
    fn build(link: LinkConfig, iommus: Vec<Option<Arc<dyn IoTranslate>>>, ranks: usize) -> Self {
        let nodes = iommus.len();
        let files: Vec<_> = (0..nodes)
            .map(|_| {
                let f = NamedTempFile::new().unwrap();
                f.as_file().set_len(DDR_BYTES).unwrap();
                f
            })
            .collect();
        let ddrs: Vec<_> = files.iter().map(|f| Arc::new(Ddr::open(f.path()).unwrap())).collect();
        let map = NodeMap::blocks(nodes, ranks).unwrap();
        let links = (ranks > 1).then(|| InProcessLinks::new(ranks));
        let (mut fabrics, mut transports, mut deliveries) = (Vec::new(), Vec::new(), Vec::new());
        // The transport each node's platform speaks to.
        let mut speaks_to: Vec<Arc<dyn Transport>> = Vec::new();
        for rank in 0..ranks {
            let hosted = map.nodes_of(rank);
            let here = |n: &usize| hosted.contains(n);
            // Another rank's node is not alive here until its rank says so.
            let alive = (0..nodes).map(|n| Arc::new(AtomicBool::new(here(&n)))).collect();
            let counters: Vec<Arc<NodeCounters>> = (0..nodes).map(|_| Arc::default()).collect();
            let observers = Observers { counters: counters.clone(), trace: None };
            let net = Interconnect::with_observers((0..nodes).map(qfdb_coordinates).collect(), link, observers);
            let rank_ddrs = (0..nodes).map(|n| here(&n).then(|| ddrs[n].clone())).collect();
            let fabric = Arc::new(Fabric::hosting(net.clone(), rank_ddrs, alive, Arc::default(), counters, None));
            let transport: Arc<dyn Transport> = match &links {
                Some(links) => {
                    let t = RankTransport::start(fabric.clone(), map.clone(), links.link(rank)).unwrap();
                    transports.push(t.clone());
                    t
                }
                None => fabric.clone(),
            };
            speaks_to.extend(hosted.map(|_| transport.clone()));
            fabrics.push(fabric);
            deliveries.push(net.spawn_delivery());
        }
        let (mut platforms, mut irq_bytes, mut drains, mut r5_consoles) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (node, iommu) in iommus.into_iter().enumerate() {
            let (host, mut guest) = UnixStream::pair().unwrap();
            let (local, transport) = (fabrics[map.rank_of(node).unwrap()].local(node), speaks_to[node].clone());
            platforms.push(match iommu {
                Some(iommu) => Platform::with_iommu(local, transport, host, iommu).unwrap(),
                None => Platform::new(local, transport, host).unwrap(),
            });
            // The R5's semihosting console: its far end stays open with the rig.
            let (console, r5_end) = UnixStream::pair().unwrap();
            platforms.last().unwrap().set_r5_wake(Arc::new(R5Wake::new(ddrs[node].clone(), console)));
            r5_consoles.push(r5_end);
            let seen = Arc::new(Mutex::new(Vec::new()));
            let into = seen.clone();
            drains.push(std::thread::spawn(move || {
                let mut buf = [0u8; 64];
                while let Ok(n @ 1..) = guest.read(&mut buf) {
                    into.lock().unwrap().extend_from_slice(&buf[..n]);
                }
            }));
            irq_bytes.push(seen);
        }
        for (rank, fabric) in fabrics.iter().enumerate() {
            fabric.set_endpoints(&platforms[map.nodes_of(rank)]).unwrap();
        }
        for t in &transports {
            t.wait_for_peers(LONG).unwrap();
        }
        Self {
            _files: files,
            ddrs,
            fabric: fabrics[0].clone(),
            fabrics,
            transports,
            platforms,
            irq_bytes,
            deliveries,
            drains,
            _r5_consoles: r5_consoles,
            _links: links,
        }
    }

    /// The attempts and datagrams the links lost, on every rank.
    pub fn links_dropped(&self) -> u64 {
        let links = self.fabrics.iter().flat_map(|f| f.interconnect.link_counters());
        links.map(|(_, c)| c.dropped.load(Ordering::Relaxed)).sum()
    }

    /// A forwarded access, as the platform's server performs it (lines updated after it).
    pub fn access(&self, node: usize, write: bool, addr: u64, size: u32, data: u128) -> Result<u128, Status> {
        self.platforms[node].forwarded_one(write, size, addr, data)
    }

    pub fn write(&self, node: usize, addr: u64, size: u32, data: u128) -> Result<(), Status> {
        self.access(node, true, addr, size, data).map(drop)
    }

    pub fn read(&self, node: usize, addr: u64, size: u32) -> Result<u128, Status> {
        self.access(node, false, addr, size, 0)
    }

    pub fn reg(&self, node: usize, addr: u64) -> u32 {
        self.read(node, addr, 4).unwrap() as u32
    }

    pub fn counter(&self, node: usize, c: Counter) -> u64 {
        self.read(node, COUNTERS + 8 * c.index() as u64, 8).unwrap() as u64
    }

    pub fn fill(&self, node: usize, pa: u64, bytes: &[u8]) {
        self.ddrs[node].write_bytes(pa, bytes).unwrap();
    }

    pub fn bytes(&self, node: usize, pa: u64, len: usize) -> Vec<u8> {
        let mut out = vec![0; len];
        self.ddrs[node].read_bytes(pa, &mut out).unwrap();
        out
    }

    /// Node `node`'s R5 goes to sleep, as its firmware does when it has nothing to do: the next
    /// event the engine posts must wake it (`docs/hw/ipi.md`).
    pub fn r5_sleeps(&self, node: usize) {
        // SAFETY: the IPC area's lines are atomics in the DDR file.
        let area = unsafe { self.ddrs[node].view::<IpcArea>(board::layout::IPC_BASE) }.unwrap();
        area.r5_sleep.begin(proto::r5_sleep::NO_TIMEOUT);
    }

    /// The wake-ups node `node`'s engine gave its R5.
    pub fn r5_woken_by_engine(&self, node: usize) -> u64 {
        self.platforms[node].r5_wake().unwrap().counters.engine.load(Ordering::SeqCst)
    }

    /// Node `node`'s guest has received a byte for PL line `line` (waits for it a while).
    pub fn line_raised(&self, node: usize, line: u8) -> bool {
        self.platforms[node].settle_irqs();
        eventually(LONG, || self.irq_bytes[node].lock().unwrap().contains(&line))
    }

    /// A stand-in R5 for `node`, its engine started and every PD enabled.
    pub fn r5(&self, node: usize) -> R5<'_> {
        R5::start(self, node)
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        for t in &self.transports {
            t.stop();
        }
        for fabric in &self.fabrics {
            fabric.interconnect.stop();
        }
        for d in self.deliveries.drain(..) {
            let _ = d.join();
        }
        self.platforms.clear();
        for d in self.drains.drain(..) {
            let _ = d.join();
        }
    }
}

/// What the R5 does with the engine, reduced to what the tests need.
pub struct R5<'a> {
    pub rig: &'a Rig,
    pub node: usize,
    pub rings: &'a EngineRings,
    poster: DescriptorPoster<'a>,
    events: Consumer<'a, RawEvent, EVENT_ENTRIES>,
    pub kicks: u32,
}

impl<'a> R5<'a> {
    fn start(rig: &'a Rig, node: usize) -> Self {
        // SAFETY: the rings' bytes in the node's DDR; any bit pattern is valid.
        let rings = unsafe { rig.ddrs[node].view::<EngineRings>(RINGS) }.unwrap();
        rig.write(node, CTRL, 4, 0).unwrap();
        // SAFETY: this stand-in is the only producer of descriptors and consumer of events.
        let (poster, mut events) = unsafe { (DescriptorPoster::new(rings), rings.events.consumer()) };
        events.discard_pending();
        rig.write(node, RINGS_LO, 4, u128::from(RINGS as u32)).unwrap();
        rig.write(node, RINGS_HI, 4, 0).unwrap();
        rig.write(node, CTRL, 4, 1).unwrap();
        assert_eq!(rig.reg(node, CTRL), 1, "the engine started");
        rig.write(node, PD_ENABLE, 4, 0xffff).unwrap();
        Self { rig, node, rings, poster, events, kicks: 0 }
    }

    /// Posts and rings `desc_doorbell` if the engine said it sleeps (as the firmware does).
    pub fn post(&mut self, d: &Descriptor) {
        self.post_raw(&d.encode());
    }

    pub fn post_raw(&mut self, raw: &hal::pldma::descriptor::RawDescriptor) {
        self.queue_raw(raw);
        self.kick_if_asked();
    }

    /// Posts if the ring has room (the firmware treats a full ring as a lost descriptor).
    pub fn try_post(&mut self, d: &Descriptor) -> bool {
        let posted = self.poster.post(d).is_ok();
        self.kick_if_asked();
        posted
    }

    /// Posts without a doorbell (`kick_if_asked` later).
    pub fn queue_raw(&mut self, raw: &hal::pldma::descriptor::RawDescriptor) {
        self.poster.post_raw(raw).expect("room in the descriptor ring");
    }

    pub fn kick_if_asked(&mut self) {
        if self.poster.take_kick() {
            self.kicks += 1;
            self.rig.write(self.node, DESC_DOORBELL, 4, 1).unwrap();
        }
    }

    pub fn try_event(&mut self) -> Option<Event> {
        self.events.pop().map(|raw| Event::decode(&raw).expect("the engine posts well-formed events"))
    }

    /// The next event, waiting up to `timeout`.
    pub fn event(&mut self, timeout: Duration) -> Option<Event> {
        let until = Instant::now() + timeout;
        loop {
            if let Some(e) = self.try_event() {
                return Some(e);
            }
            if Instant::now() > until {
                return None;
            }
            std::thread::sleep(Duration::from_micros(50));
        }
    }

    /// Exactly `n` events (fails if they take longer than `LONG`), then none for `quiet`.
    pub fn events(&mut self, n: usize, quiet: Duration) -> Vec<Event> {
        let mut all = Vec::new();
        let until = Instant::now() + LONG;
        while all.len() < n {
            assert!(Instant::now() < until, "only {} of {n} events: {all:?}", all.len());
            if let Some(e) = self.event(Duration::from_millis(10)) {
                all.push(e);
            }
        }
        if let Some(extra) = self.event(quiet) {
            panic!("more than {n} events: {all:?} and {extra:?}");
        }
        all
    }
}

/// A repeatable byte pattern.
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}
