//! A platform on a transport that is not the fabric (`qemu_virt::transport`): everything the
//! node does beyond itself reaches the transport as an operation by node index, with the data
//! and the answer it carries, and what the transport brings to the node arrives through the
//! platform's `Endpoint`. This is the contract a transport between hosts implements.

use std::io::{ErrorKind, Read};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use board::pl::{PACKETIZER_BASE, PLDMA_BASE, SYSBLOCK_BASE, VMBOX_BASE, irq_line, window_address};
use hal::packetizer::{Destination, base_dest};
use hal::pldma::Pd;
use hal::pldma::descriptor::{Attempt, Descriptor};
use hal::pldma::packet::{Packet, Route, decode};
use hal::pldma::regs::Counter;
use hal::sysblock::NodeSet;
use hal::sysblock::regs::SysblockRegisters;
use proto::forward::Status;
use proto::gsas::Pid;
use proto::rdma::rings::{DescriptorPoster, EngineRings};
use qemu_virt::counters::NodeCounters;
use qemu_virt::fabric::Fabric;
use qemu_virt::interconnect::{Coordinates, Datagram, Interconnect, LinkConfig, channel, qfdb_coordinates};
use qemu_virt::platform::Platform;
use qemu_virt::shm::Ddr;
use qemu_virt::transport::{Carried, ClusterView, Delivery, Endpoint, Local, Transport};
use tempfile::NamedTempFile;

/// What the node asked of the transport, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Call {
    Packet { src: usize, dst: usize, iface: u8, bytes: usize },
    Resample(usize),
    Load { src: usize, dst: usize, pa: u64, size: u32 },
    Store { src: usize, dst: usize, pa: u64, size: u32, value: u128 },
    Datagrams(Vec<Datagram>),
    ReportDone(u16),
}

/// A transport of `NODES` nodes that records every call and answers as told.
struct Recorder {
    calls: Mutex<Vec<Call>>,
    /// The answer to the next packets.
    answer: Mutex<Carried>,
    alive: NodeSet,
}

const NODES: usize = 3;
/// What every remote load reads.
const LOADED: u128 = 0x0123_4567_89ab_cdef;

impl Recorder {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            calls: Mutex::default(),
            answer: Mutex::new(Carried { delivery: Delivery::Ack, touched: false }),
            alive: NodeSet::first(NODES as u16).without(NodeSet::default().with(2)),
        })
    }

    fn record(&self, call: Call) {
        self.calls.lock().unwrap().push(call);
    }

    fn take(&self) -> Vec<Call> {
        std::mem::take(&mut *self.calls.lock().unwrap())
    }
}

impl ClusterView for Recorder {
    fn done(&self) -> NodeSet {
        NodeSet::default()
    }

    fn alive(&self) -> NodeSet {
        self.alive
    }

    fn report_done(&self, node: u16) {
        self.record(Call::ReportDone(node));
    }
}

impl Transport for Recorder {
    fn nodes(&self) -> usize {
        NODES
    }

    fn coordinates(&self, node: usize) -> Coordinates {
        qfdb_coordinates(node)
    }

    fn deliver_packet(&self, src: usize, dst: usize, iface: u8, bytes: &[u8]) -> Carried {
        self.record(Call::Packet { src, dst, iface, bytes: bytes.len() });
        *self.answer.lock().unwrap()
    }

    fn resample_lines(&self, node: usize) {
        self.record(Call::Resample(node));
    }

    fn remote_load(&self, src: usize, dst: usize, pa: u64, size: u32) -> Result<u128, Status> {
        self.record(Call::Load { src, dst, pa, size });
        Ok(LOADED)
    }

    fn remote_store(&self, src: usize, dst: usize, pa: u64, size: u32, value: u128) -> Result<(), Status> {
        self.record(Call::Store { src, dst, pa, size, value });
        Ok(())
    }

    fn send_datagrams(&self, datagrams: Vec<Datagram>) {
        self.record(Call::Datagrams(datagrams));
    }
}

/// Node 0 of the recorder's cluster: its platform, its counters and its guest's interrupt wire.
struct Node {
    _ddr_file: NamedTempFile,
    ddr: Arc<Ddr>,
    transport: Arc<Recorder>,
    counters: Arc<NodeCounters>,
    platform: Arc<Platform>,
    wire: UnixStream,
}

impl Node {
    fn new() -> Self {
        let ddr_file = NamedTempFile::new().unwrap();
        ddr_file.as_file().set_len(1 << 20).unwrap();
        let ddr = Arc::new(Ddr::open(ddr_file.path()).unwrap());
        let counters = Arc::new(NodeCounters::default());
        let local = Local::new(0, ddr.clone(), Arc::new(AtomicBool::new(true)), counters.clone(), None);
        let transport = Recorder::new();
        let (host, wire) = UnixStream::pair().unwrap();
        wire.set_nonblocking(true).unwrap();
        let platform = Platform::new(local, transport.clone(), host).unwrap();
        Self { _ddr_file: ddr_file, ddr, transport, counters, platform, wire }
    }

    fn write(&self, addr: u64, size: u32, data: u128) -> Result<(), Status> {
        self.platform.forwarded_one(true, size, addr, data).map(drop)
    }

    fn read(&self, addr: u64, size: u32) -> Result<u128, Status> {
        self.platform.forwarded_one(false, size, addr, 0)
    }

    /// The interrupt bytes the guest has been sent so far.
    fn wire(&self) -> Vec<u8> {
        self.platform.settle_irqs();
        let (mut got, mut buf) = (Vec::new(), [0; 64]);
        loop {
            match (&self.wire).read(&mut buf) {
                Ok(n @ 1..) => got.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => return got,
                other => panic!("{other:?}"),
            }
        }
    }
}

const PIF: u8 = 5;
const MIF: u8 = 7;
const WINDOW: u16 = (VMBOX_BASE >> 18) as u16;
const TIF: u64 = PACKETIZER_BASE + 0x40000;

fn pif(n: u8, reg: u64) -> u64 {
    PACKETIZER_BASE + u64::from(n) * 0x1000 + reg
}

fn mif(n: u8, reg: u64) -> u64 {
    VMBOX_BASE + u64::from(n) * 0x1000 + reg
}

/// The kernel's set-up of PIF `PIF`, then a thread's packet on it to `MIF` of `node`: the PIF's
/// status afterwards.
fn send_packet(node: &Node, to: u16) -> u128 {
    let pid = Pid::new(0, 3, 1, PIF).unwrap();
    node.write(TIF + 8 * u64::from(PIF), 8, u128::from(pid.raw())).unwrap();
    node.write(TIF + 0x200, 8, u128::from(base_dest(WINDOW))).unwrap();
    node.write(TIF + 0x208, 8, 1 << PIF).unwrap();
    let dest = Destination::mailbox(to, WINDOW, MIF).unwrap().encode();
    node.write(pif(PIF, 0x00), 16, 1).unwrap();
    node.write(pif(PIF, 0x10), 16, 2).unwrap();
    node.write(pif(PIF, 0x20), 8, u128::from(dest)).unwrap();
    node.read(pif(PIF, 0x30), 4).unwrap()
}

const ACK: u128 = 1 << 3;
const UNREACH: u128 = 1 << 5;

#[test]
fn window_loads_and_stores_reach_the_transport_by_node_and_address() {
    let node = Node::new();
    let at = window_address(1, 0x40).unwrap();
    assert_eq!(node.read(at, 8), Ok(LOADED), "the transport's answer");
    node.write(at + 8, 16, 0xfeed).unwrap();
    let beyond = window_address(NODES as u16, 0).unwrap();
    assert_eq!(node.read(beyond, 8), Err(Status::Unmapped), "a node beyond the transport's cluster");
    assert_eq!(
        node.transport.take(),
        [
            Call::Load { src: 0, dst: 1, pa: 0x40, size: 8 },
            Call::Store { src: 0, dst: 1, pa: 0x48, size: 16, value: 0xfeed },
        ]
    );
    assert_eq!(node.counters.snapshot().window_accesses, 2, "counted on the node itself");
}

#[test]
fn packets_reach_the_transport_and_its_answer_is_the_pif_status() {
    let node = Node::new();
    assert_eq!(send_packet(&node, 1), ACK);
    assert_eq!(node.transport.take(), [Call::Packet { src: 0, dst: 1, iface: MIF, bytes: 32 }]);

    // A vmbox of this host saw it: the destination's lines are re-sampled once the sender's
    // packetizer is released.
    *node.transport.answer.lock().unwrap() = Carried { delivery: Delivery::Ack, touched: true };
    assert_eq!(send_packet(&node, 1), ACK);
    assert_eq!(
        node.transport.take(),
        [Call::Packet { src: 0, dst: 1, iface: MIF, bytes: 32 }, Call::Resample(1)],
        "after the packet, not under it"
    );

    *node.transport.answer.lock().unwrap() = Carried { delivery: Delivery::Unreachable, touched: false };
    assert_eq!(send_packet(&node, 2), UNREACH);
    assert_eq!(node.transport.take(), [Call::Packet { src: 0, dst: 2, iface: MIF, bytes: 32 }]);
}

#[test]
fn the_system_block_reads_liveness_from_the_transport_and_reports_done_to_it() {
    let node = Node::new();
    let alive = SYSBLOCK_BASE + core::mem::offset_of!(SysblockRegisters, nodes_alive) as u64;
    assert_eq!(node.read(alive, 4), Ok(0b011), "node 2 is not alive on this transport");
    let run_done = SYSBLOCK_BASE + core::mem::offset_of!(SysblockRegisters, run_done) as u64;
    node.write(run_done, 4, 1).unwrap();
    assert_eq!(node.transport.take(), [Call::ReportDone(0)]);
}

#[test]
fn what_the_transport_brings_arrives_through_the_platforms_endpoint() {
    let node = Node::new();
    let endpoint: &dyn Endpoint = &*node.platform;
    node.write(mif(MIF, 0x18), 4, 1).unwrap(); // IRQ_ENABLE: NOT_EMPTY
    assert_eq!(endpoint.packet(MIF, &[0xab; 32]), Delivery::Ack);
    assert_eq!(node.wire(), [0u8; 0], "taking a packet samples no line (it runs under the sender's packetizer)");
    endpoint.resample_lines();
    assert_eq!(node.wire(), [irq_line::VMBOX], "the vmbox's line rose");
    let status = node.platform.access_one(false, 4, mif(MIF, 0x10), 0);
    assert_eq!(status.map(|s| s & 0xffff), Ok(2), "two words queued");

    // The engine is off: a datagram is dropped at its door, and counted.
    endpoint.datagram(Datagram { src: 1, dst: 0, channel: channel::PLDMA, payload: vec![0; 16] });
    assert_eq!(node.counters.pldma(Counter::PacketsReceived).load(Ordering::Relaxed), 1);
    assert!(node.transport.take().is_empty(), "nothing went back out");
}

/// The fabric answers a window access to a node it does not have, or one that has stopped,
/// without crossing any link.
#[test]
fn the_fabric_answers_window_accesses_to_missing_and_stopped_nodes() {
    let file = NamedTempFile::new().unwrap();
    file.as_file().set_len(0x1000).unwrap();
    let ddr = Arc::new(Ddr::open(file.path()).unwrap());
    let alive = [Arc::new(AtomicBool::new(true)), Arc::new(AtomicBool::new(true))];
    let net = Interconnect::new((0..2).map(qfdb_coordinates).collect(), LinkConfig::default());
    let counters = vec![Arc::default(), Arc::default()];
    let fabric = Fabric::new(net, vec![ddr.clone(), ddr], alive.to_vec(), Arc::default(), counters, None);
    assert_eq!(fabric.remote_store(0, 1, 0x10, 8, 42), Ok(()));
    assert_eq!(fabric.remote_load(0, 1, 0x10, 8), Ok(42));
    assert_eq!(fabric.remote_load(0, 1, 0x1000, 8), Err(Status::Unmapped), "past the node's DDR");
    assert_eq!(fabric.remote_load(0, 2, 0, 8), Err(Status::Unmapped), "no node 2");
    assert_eq!(fabric.remote_store(0, 64, 0, 8, 0), Err(Status::Unmapped), "no node 64");
    alive[1].store(false, Ordering::Release);
    assert_eq!(fabric.remote_load(0, 1, 0x10, 8), Err(Status::DeviceError), "node 1 has stopped");
    let carried = fabric.deliver_packet(0, 1, MIF, &[0; 32]);
    assert_eq!(carried, Carried { delivery: Delivery::Unreachable, touched: false });
    let carried = fabric.deliver_packet(0, 5, MIF, &[0; 32]);
    assert_eq!(carried, Carried { delivery: Delivery::Nack, touched: false }, "no route");
}

#[test]
fn the_pldma_engine_sends_its_packets_through_the_transport() {
    let node = Node::new();
    // What the R5 does (`docs/hw/pldma.md`): the rings, the engine on, every PD enabled.
    const RINGS: u64 = 0x1_0000;
    // SAFETY: the rings' bytes in the node's DDR; any bit pattern is valid.
    let rings = unsafe { node.ddr.view::<EngineRings>(RINGS) }.unwrap();
    // SAFETY: the test is the descriptor ring's only producer.
    let mut poster = unsafe { DescriptorPoster::new(rings) };
    node.write(PLDMA_BASE + 0x010, 4, u128::from(RINGS as u32)).unwrap();
    node.write(PLDMA_BASE + 0x014, 4, 0).unwrap();
    node.write(PLDMA_BASE + 0x008, 4, 1).unwrap();
    node.write(PLDMA_BASE + 0x020, 4, 0xffff).unwrap();
    let attempt = Attempt { pd: Pd::new(3).unwrap(), tid: 4, seq: 5, first_seq: 5 };
    let read = Descriptor::ReadRequest { vc: 0, attempt, node: 1, src: 0x2000, dst: 0x3000, len: 64 };
    poster.post_raw(&read.encode()).unwrap();
    node.write(PLDMA_BASE + 0x018, 4, 1).unwrap();

    let until = Instant::now() + Duration::from_secs(10);
    let sent = loop {
        let calls = node.transport.take();
        if !calls.is_empty() {
            break calls;
        }
        assert!(Instant::now() < until, "the engine sent nothing");
        std::thread::sleep(Duration::from_millis(1));
    };
    let [Call::Datagrams(datagrams)] = &sent[..] else { panic!("one burst: {sent:?}") };
    let [datagram] = &datagrams[..] else { panic!("one packet: {datagrams:?}") };
    assert_eq!((datagram.src, datagram.dst, datagram.channel), (0, 1, channel::PLDMA));
    let route = Route { src: 0, owner: 0 };
    let expected = Packet::ReadRequest { route, attempt, src_va: 0x2000, dst_va: 0x3000, len: 64 };
    assert_eq!(decode(&datagram.payload), Ok(expected));
}
