//! One node's R5 and processes on top of the rig: the real RDMA scheduler
//! (`r5_firmware::rdma`) driving the engine model through its rings, queue sets in the node's
//! DDR, and the process side of `docs/hw/pldma.md` ("Using the queues").

use super::{BUFFERS, DESC_DOORBELL, PD_DOORBELL, Rig, pd_page};
use hal::pldma::Pd;
use hal::pldma::descriptor::RawDescriptor;
use hal::pldma::event::RawEvent;
use proto::ipc::Consumer;
use proto::rdma::ipc::{RdmaConfig, RdmaRequest, RdmaStatus};
use proto::rdma::queue::{Cqe, QUEUE_SET_BYTES, QueueSet, Wqe};
use proto::rdma::rings::{DescriptorPoster, EVENT_ENTRIES};
use qemu_virt::shm::Ddr;
use r5_firmware::rdma::{Engine, QueueMemory, Scheduler};
use std::time::Instant;

/// Queue sets live here in the test DDR (PD p's at `QUEUE_SETS + p * 8 KiB`).
pub const QUEUE_SETS: u64 = 0x20_0000;
/// Timeouts of the tests' schedulers, in us (ticks are microseconds): short where the links
/// lose packets, long where a test asserts that no timeout fires (the machines running the
/// tests are shared and loaded, and a fault's resolution must not race a timeout there).
pub const TIMEOUT_US: u64 = 50_000;
pub const PATIENT_TIMEOUT_US: u64 = 2_000_000;

struct TestEngine<'a> {
    rig: &'a Rig,
    node: usize,
    poster: DescriptorPoster<'a>,
}

impl Engine for TestEngine<'_> {
    fn post(&mut self, d: &RawDescriptor) -> bool {
        self.poster.post_raw(d).is_ok()
    }

    fn notify_cq(&mut self, pd: Pd) {
        self.rig.write(self.node, super::CQ_NOTIFY, 4, u128::from(pd.raw())).unwrap();
    }
}

struct DdrQueues<'a>(&'a Ddr);

impl<'a> QueueMemory<'a> for DdrQueues<'a> {
    fn queue_set(&self, pa: u64) -> Option<&'a QueueSet> {
        let inside = (QUEUE_SETS..QUEUE_SETS + 16 * QUEUE_SET_BYTES).contains(&pa);
        // SAFETY: queue sets are atomics and cells; any bit pattern is valid.
        (inside && pa.is_multiple_of(4096)).then(|| unsafe { self.0.view::<QueueSet>(pa) }).flatten()
    }
}

pub struct Node<'a> {
    pub rig: &'a Rig,
    pub node: usize,
    pub scheduler: Box<Scheduler<'a>>,
    engine: TestEngine<'a>,
    events: Consumer<'a, RawEvent, EVENT_ENTRIES>,
    memory: DdrQueues<'a>,
    start: Instant,
    seq: u32,
}

impl<'a> Node<'a> {
    /// The R5 of `node`: its engine started (as the firmware does), its scheduler running.
    pub fn start(rig: &'a Rig, node: usize) -> Self {
        Self::with_timeout(rig, node, TIMEOUT_US)
    }

    /// The same, with a retransmission timeout of `timeout_us`.
    pub fn with_timeout(rig: &'a Rig, node: usize, timeout_us: u64) -> Self {
        let rings = rig.r5(node).rings;
        let ddr = &*rig.ddrs[node];
        // SAFETY: this node's only producer of descriptors and consumer of events (the stand-in
        // that started the engine is gone).
        let (poster, events) = unsafe { (DescriptorPoster::new(rings), rings.events.consumer()) };
        let mut scheduler = Box::new(Scheduler::new());
        scheduler.start(node as u16, rig.platforms.len() as u16, RdmaConfig::with_timeout_us(timeout_us), 1_000_000);
        Self {
            rig,
            node,
            scheduler,
            engine: TestEngine { rig, node, poster },
            events,
            memory: DdrQueues(ddr),
            start: Instant::now(),
            seq: 0,
        }
    }

    pub fn now(&self) -> u64 {
        self.start.elapsed().as_micros() as u64
    }

    /// One round of the firmware's main loop.
    pub fn step(&mut self) {
        let now = self.now();
        while let Some(e) = self.events.pop() {
            self.scheduler.on_event(&e, &mut self.engine, now);
        }
        self.scheduler.poll(&mut self.engine, now);
        if self.engine.poster.take_kick() {
            self.rig.write(self.node, DESC_DOORBELL, 4, 1).unwrap();
        }
    }

    /// An RDMA request of the kernel over the IPC ring.
    pub fn request(&mut self, r: RdmaRequest) -> RdmaStatus {
        self.seq += 1;
        let now = self.now();
        let reply = self.scheduler.handle_request(&r.encode(self.seq), &self.memory, &mut self.engine, now).unwrap();
        RdmaStatus::from_raw(reply.args[0]).unwrap()
    }

    /// The kernel's set-up of PD `pd`'s process (`docs/hw/pldma.md`, "Registering").
    pub fn register(&mut self, pd: u16) -> Process<'a> {
        let pa = QUEUE_SETS + u64::from(pd) * QUEUE_SET_BYTES;
        self.rig.fill(self.node, pa, &vec![0; QUEUE_SET_BYTES as usize]);
        let p = Pd::new(pd).unwrap();
        assert_eq!(self.request(RdmaRequest::Register { pd: p, queue_set: pa }), RdmaStatus::Ok);
        // SAFETY: as in `DdrQueues`.
        let queues = unsafe { self.rig.ddrs[self.node].view::<QueueSet>(pa) }.unwrap();
        Process { rig: self.rig, node: self.node, pd: p, queues }
    }

    pub fn buffer(&self, index: u64) -> u64 {
        BUFFERS + index * (1 << 20)
    }
}

/// A process of PD `pd` on node `node`, using its queues.
pub struct Process<'a> {
    rig: &'a Rig,
    pub node: usize,
    pub pd: Pd,
    pub queues: &'a QueueSet,
}

impl Process<'_> {
    /// Posts a WQE and rings the doorbell; false if the WQ is full.
    pub fn submit(&self, w: &Wqe) -> bool {
        // SAFETY: the process is its WQ's only producer.
        if unsafe { self.queues.wq.producer() }.push(w.encode()).is_err() {
            return false;
        }
        let head = self.queues.wq.produced();
        self.rig.write(self.node, pd_page(self.pd.raw(), PD_DOORBELL), 4, u128::from(head)).unwrap();
        true
    }

    pub fn completions(&self) -> Vec<Cqe> {
        // SAFETY: the process is its CQ's only consumer.
        let mut c = unsafe { self.queues.cq.consumer() };
        std::iter::from_fn(|| c.pop()).map(|raw| Cqe::decode(&raw).expect("the R5 posts well-formed CQEs")).collect()
    }
}
