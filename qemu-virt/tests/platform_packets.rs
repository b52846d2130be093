//! Packetizer packets between the platforms of two nodes, driven through `Platform::access`
//! exactly as the guests' forwarded accesses arrive (no QEMU): node 0's kernel programs its TIF,
//! a thread writes a PIF, node 1's vmbox takes the packet and raises its PL line. Offsets are
//! written as `docs/hw/packetizer.md` and `docs/hw/vmbox.md` give them.

use std::io::{ErrorKind, Read};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use board::pl::{PACKETIZER_BASE, VMBOX_BASE, irq_line};
use hal::packetizer::{Destination, PREFIX_MASK, base_dest};
use hal::vmbox::EMPTY_SENTINEL;
use proto::forward::{Access, Failure, Status};
use proto::gsas::Pid;
use qemu_virt::counters::{NodeCounters, Snapshot};
use qemu_virt::fabric::{EndpointsError, Fabric};
use qemu_virt::interconnect::{Interconnect, LinkConfig, Observers, qfdb_coordinates};
use qemu_virt::platform::Platform;
use qemu_virt::shm::Ddr;
use qemu_virt::trace::TraceWriter;
use tempfile::NamedTempFile;

const TIF: u64 = PACKETIZER_BASE + 0x40000;
const PIDT: u64 = TIF;
const BASE_DEST: u64 = TIF + 0x200;
const PID_CONF: u64 = TIF + 0x208;
/// BASE_DEST[33:18]: the vmbox's window, at the same local address on every node.
const WINDOW: u16 = (VMBOX_BASE >> 18) as u16;
const ACK: u128 = 1 << 3;
const NACK: u128 = 1 << 2;
const UNREACH: u128 = 1 << 5;
/// The sending thread's interface pair on node 0, and the MIF it sends to on node 1.
const PIF: u8 = 5;
const MIF: u8 = 7;

// MIF registers.
const DATA: u64 = 0x00;
const STATUS: u64 = 0x10;
const PACKET: u64 = 0x40;
const IRQ_ENABLE: u64 = 0x18;
const IRQ_STATUS: u64 = 0x1c;
const REFUSED: u64 = 0x24;
const NOT_EMPTY: u128 = 1 << 0;
const REFUSED_BIT: u128 = 1 << 2;

fn pif(n: u8, reg: u64) -> u64 {
    PACKETIZER_BASE + u64::from(n) * 0x1000 + reg
}

fn mif(n: u8, reg: u64) -> u64 {
    VMBOX_BASE + u64::from(n) * 0x1000 + reg
}

struct Rig {
    _ddr_files: Vec<NamedTempFile>,
    trace_file: NamedTempFile,
    fabric: Arc<Fabric>,
    alive: Vec<Arc<AtomicBool>>,
    platforms: Vec<Arc<Platform>>,
    /// The guests' ends of the interrupt wires.
    wires: Vec<UnixStream>,
}

impl Rig {
    fn new(nodes: usize, link: LinkConfig) -> Self {
        let ddr_files: Vec<_> = (0..nodes)
            .map(|_| {
                let f = NamedTempFile::new().unwrap();
                f.as_file().set_len(0x1000).unwrap();
                f
            })
            .collect();
        let ddrs = ddr_files.iter().map(|f| Arc::new(Ddr::open(f.path()).unwrap())).collect();
        let alive: Vec<_> = (0..nodes).map(|_| Arc::new(AtomicBool::new(true))).collect();
        let counters: Vec<Arc<NodeCounters>> = (0..nodes).map(|_| Arc::default()).collect();
        let trace_file = NamedTempFile::new().unwrap();
        let trace = Some(Arc::new(TraceWriter::create(trace_file.path(), nodes).unwrap()));
        let observers = Observers { counters: counters.clone(), trace: trace.clone() };
        let net = Interconnect::with_observers((0..nodes).map(qfdb_coordinates).collect(), link, observers);
        let fabric = Arc::new(Fabric::new(net, ddrs, alive.clone(), Arc::default(), counters, trace));
        let (mut platforms, mut wires) = (Vec::new(), Vec::new());
        for node in 0..nodes {
            let (host, guest) = UnixStream::pair().unwrap();
            guest.set_nonblocking(true).unwrap();
            platforms.push(Platform::new(fabric.local(node), fabric.clone(), host).unwrap());
            wires.push(guest);
        }
        fabric.set_endpoints(&platforms).unwrap();
        Self { _ddr_files: ddr_files, trace_file, fabric, alive, platforms, wires }
    }

    fn two_nodes() -> Self {
        Self::new(2, LinkConfig { latency_us: 0.0, ..LinkConfig::default() })
    }

    fn write(&self, node: usize, addr: u64, size: u32, data: u128) -> Result<(), Status> {
        write(&self.platforms[node], addr, size, data)
    }

    fn read(&self, node: usize, addr: u64, size: u32) -> u128 {
        self.platforms[node].access_one(false, size, addr, 0).unwrap()
    }

    /// What node `node`'s kernel does before a thread may send on PIF `n`.
    fn program_tif(&self, node: usize, n: u8, pid: Pid) {
        self.write(node, PIDT + 8 * u64::from(n), 8, u128::from(pid.raw())).unwrap();
        self.write(node, BASE_DEST, 8, u128::from(base_dest(WINDOW))).unwrap();
        let conf = self.read(node, PID_CONF, 8);
        self.write(node, PID_CONF, 8, conf | 1 << n).unwrap();
    }

    /// The bytes node `node`'s guest has been sent on its interrupt wire since the last call.
    /// Every interrupt byte node `node`'s platform has decided to send so far. The guest end
    /// is read while the writer finishes, as a guest would: a full socket blocks the writer.
    fn wire(&self, node: usize) -> Vec<u8> {
        let platform = self.platforms[node].clone();
        let (settled, done) = mpsc::channel();
        std::thread::spawn(move || {
            platform.settle_irqs();
            let _ = settled.send(());
        });
        let mut got = Vec::new();
        loop {
            let last = done.recv_timeout(Duration::from_millis(1)).is_ok();
            let mut buf = [0; 64];
            loop {
                match (&self.wires[node]).read(&mut buf) {
                    Ok(0) => return got,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) => panic!("{e}"),
                }
            }
            if last {
                return got;
            }
        }
    }

    fn counters(&self, node: usize) -> Snapshot {
        self.fabric.counters[node].snapshot()
    }

    /// The names of the interconnect events in the trace, which is finished by this call.
    fn trace_events(&self) -> Vec<String> {
        self.fabric.trace.as_ref().unwrap().finish();
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(self.trace_file.path()).unwrap()).unwrap();
        doc["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["cat"] == "interconnect")
            .map(|e| e["name"].as_str().unwrap().to_owned())
            .collect()
    }
}

fn write(platform: &Platform, addr: u64, size: u32, data: u128) -> Result<(), Status> {
    platform.access_one(true, size, addr, data).map(|_| ())
}

/// A thread's three writes on PIF `n` (16, 16 and 8 bytes), then its status read.
fn send(platform: &Platform, n: u8, payload: [u128; 2], node: u16, interface: u8) -> u128 {
    let dest = Destination::mailbox(node, WINDOW, interface).unwrap().encode();
    write(platform, pif(n, 0x00), 16, payload[0]).unwrap();
    write(platform, pif(n, 0x10), 16, payload[1]).unwrap();
    write(platform, pif(n, 0x20), 8, u128::from(dest)).unwrap();
    platform.access_one(false, 4, pif(n, 0x30), 0).unwrap()
}

fn sender_pid() -> Pid {
    Pid::new(0, 3, 1, PIF).unwrap()
}

/// payload0 with bits [47:0] forged: another thread's PID.
fn forged_payload(i: u64) -> [u128; 2] {
    let forged = Pid::new(1, 0, 0, 0).unwrap().raw();
    [0x1122_3344_5566_7788_99aa << 48 | u128::from(forged), 0xfeed_0000_0000_0000_0000_0000_0000_0000 | u128::from(i)]
}

#[test]
fn packet_reaches_the_remote_mailbox_with_the_senders_pid() {
    let rig = Rig::two_nodes();
    rig.program_tif(0, PIF, sender_pid());
    let payload = forged_payload(1);

    assert_eq!(send(&rig.platforms[0], PIF, payload, 1, MIF), ACK, "final when the third write completes");

    assert_eq!(rig.read(1, mif(MIF, STATUS), 4) & 0xffff, 2, "two words queued");
    let word0 = rig.read(1, mif(MIF, DATA), 16);
    assert_eq!(word0 & PREFIX_MASK, u128::from(sender_pid().raw()), "the PIDT entry, not the forged bits");
    assert_eq!(word0 & !PREFIX_MASK, payload[0] & !PREFIX_MASK);
    assert_eq!(rig.read(1, mif(MIF, DATA), 16), payload[1]);
    assert_eq!(rig.read(0, mif(MIF, STATUS), 4) & 0xffff, 0, "nothing on the sender's own vmbox");

    let (c0, c1) = (rig.counters(0), rig.counters(1));
    assert_eq!((c0.packets_sent, c0.packets_received, c0.packets_nacked), (1, 0, 0));
    assert_eq!((c1.packets_sent, c1.packets_received, c1.packets_nacked), (0, 1, 0));
    let links = rig.fabric.interconnect.link_counters();
    let sent: Vec<_> = links.iter().map(|(l, c)| (l.from, l.to, c.sent.load(Ordering::Relaxed))).collect();
    assert_eq!(sent, [(0, 1, 1), (1, 0, 1)], "one transaction: the packet and its ACK");
    assert_eq!(rig.trace_events(), ["packet 0->1"]);
}

/// What the software does since pairs are forwarded as one request: the payloads in one pair
/// write, the packet in one pair read of PACKET (which also says when nothing is queued); and a
/// pair whose second access fails says so.
#[test]
fn pairs_send_and_take_a_packet_in_one_request_each() {
    let rig = Rig::two_nodes();
    rig.program_tif(0, PIF, sender_pid());
    let payload = forged_payload(3);
    let pair = |write, addr, data| Access { write, size: 16, addr, pair: true, data };
    assert_eq!(rig.platforms[0].access(&pair(true, pif(PIF, 0x00), payload)), Ok([0, 0]));
    rig.write(0, pif(PIF, 0x20), 8, u128::from(Destination::mailbox(1, WINDOW, MIF).unwrap().encode())).unwrap();
    assert_eq!(rig.read(0, pif(PIF, 0x30), 4), ACK);
    let [word0, word1] = rig.platforms[1].access(&pair(false, mif(MIF, PACKET), [0; 2])).unwrap();
    assert_eq!(word0 & PREFIX_MASK, u128::from(sender_pid().raw()));
    assert_eq!(word1, payload[1]);
    assert_eq!(rig.platforms[1].access(&pair(false, mif(MIF, PACKET), [0; 2])), Ok([EMPTY_SENTINEL; 2]));
    // The second half of a pair at the end of the registers is reserved: the first is made.
    let past_end = pair(false, mif(MIF, PACKET + 16), [0; 2]);
    assert_eq!(rig.platforms[1].access(&past_end), Err(Failure { status: Status::Rejected, second: true }));
}

#[test]
fn the_destination_line_rises_once_not_empty_is_enabled() {
    let rig = Rig::two_nodes();
    rig.program_tif(0, PIF, sender_pid());

    // Interrupt disabled: the packet is queued, the wire stays silent.
    assert_eq!(send(&rig.platforms[0], PIF, forged_payload(1), 1, MIF), ACK);
    assert!(rig.wire(1).is_empty());
    // Node 1's kernel enables NOT_EMPTY; its server then updates the lines, as after every write.
    rig.platforms[1].forwarded_one(true, 4, mif(MIF, IRQ_ENABLE), NOT_EMPTY).unwrap();
    assert_eq!(rig.wire(1), [irq_line::VMBOX]);

    // The handler drains and clears: the line falls. The next packet raises it again, from node
    // 0's access alone (nobody on node 1 does anything).
    rig.read(1, mif(MIF, DATA), 16);
    rig.read(1, mif(MIF, DATA), 16);
    rig.platforms[1].forwarded_one(true, 4, mif(MIF, IRQ_STATUS), NOT_EMPTY).unwrap();
    assert!(rig.wire(1).is_empty());
    assert_eq!(send(&rig.platforms[0], PIF, forged_payload(2), 1, MIF), ACK);
    assert_eq!(rig.wire(1), [irq_line::VMBOX]);
    assert!(rig.wire(0).is_empty(), "the sender's lines are untouched");
    assert_eq!(rig.counters(1).interrupts, 2);
}

#[test]
fn a_full_mailbox_nacks_and_loses_nothing() {
    let rig = Rig::two_nodes();
    rig.program_tif(0, PIF, sender_pid());
    rig.write(1, mif(MIF, IRQ_ENABLE), 4, REFUSED_BIT).unwrap();
    let depth = u64::from(hal::vmbox::REFERENCE_DEPTH);
    let packets = depth / 2 - 1;
    for i in 0..packets {
        assert_eq!(send(&rig.platforms[0], PIF, forged_payload(i), 1, MIF), ACK, "packet {i}");
    }
    // A local word leaves one free slot: too few for a packet, which is taken whole or not at all.
    let local = 0x10ca1_u128;
    rig.write(1, mif(MIF, DATA), 16, local).unwrap();
    assert!(rig.wire(1).is_empty());

    assert_eq!(send(&rig.platforms[0], PIF, forged_payload(packets), 1, MIF), NACK);
    assert_eq!(rig.wire(1), [irq_line::VMBOX], "REFUSED is enabled");
    assert_eq!(rig.read(1, mif(MIF, STATUS), 4) & 0xffff, u128::from(depth as u16 - 1));
    assert_eq!(rig.read(1, mif(MIF, REFUSED), 4), 1);
    for i in 0..packets {
        assert_eq!(rig.read(1, mif(MIF, DATA), 16) & PREFIX_MASK, u128::from(sender_pid().raw()));
        assert_eq!(rig.read(1, mif(MIF, DATA), 16), forged_payload(i)[1], "packet {i} in order");
    }
    assert_eq!(rig.read(1, mif(MIF, DATA), 16), local);

    // The sender kept its packet: once there is room, the retry goes through.
    assert_eq!(send(&rig.platforms[0], PIF, forged_payload(packets), 1, MIF), ACK);
    let (c0, c1) = (rig.counters(0), rig.counters(1));
    assert_eq!((c0.packets_sent, c0.packets_nacked), (packets + 2, 1));
    assert_eq!(c1.packets_received, packets + 1);
    let events = rig.trace_events();
    assert_eq!(events.iter().filter(|e| *e == "packet nacked 0->1").count(), 1);
    assert_eq!(events.iter().filter(|e| *e == "packet 0->1").count() as u64, packets + 1);
}

#[test]
fn a_packet_to_a_node_that_does_not_exist_is_nacked() {
    let rig = Rig::two_nodes();
    rig.program_tif(0, PIF, sender_pid());
    assert_eq!(send(&rig.platforms[0], PIF, forged_payload(0), 5, MIF), NACK);
    let c0 = rig.counters(0);
    assert_eq!((c0.packets_sent, c0.packets_nacked), (1, 1));
    assert_eq!(rig.counters(1), Snapshot::default());
    assert!(rig.fabric.interconnect.link_counters().is_empty(), "no route, no link traffic");
    assert_eq!(rig.trace_events(), ["packet nacked 0->5"]);
}

/// A stopped node is unreachable, which software tells apart from a full FIFO: sending again
/// will not help.
#[test]
fn a_packet_to_a_stopped_node_is_unreachable() {
    let rig = Rig::two_nodes();
    rig.program_tif(0, PIF, sender_pid());
    rig.write(1, mif(MIF, IRQ_ENABLE), 4, NOT_EMPTY).unwrap();
    rig.alive[1].store(false, Ordering::Release);
    assert_eq!(send(&rig.platforms[0], PIF, forged_payload(0), 1, MIF), UNREACH);
    assert_eq!(rig.platforms[1].access_one(false, 4, mif(MIF, STATUS), 0), Ok(1 << 16), "empty");
    assert!(rig.wire(1).is_empty());
    assert_eq!(rig.counters(0).packets_nacked, 1);
    assert_eq!(rig.counters(1).packets_received, 0);
    assert_eq!(rig.trace_events(), ["packet to an unreachable node 0->1"]);
}

#[test]
fn lossy_links_still_deliver_every_packet_exactly_once() {
    let rig = Rig::new(2, LinkConfig { latency_us: 0.0, loss: 0.3, seed: 11, ..LinkConfig::default() });
    rig.program_tif(0, PIF, sender_pid());
    for i in 0..100 {
        assert_eq!(send(&rig.platforms[0], PIF, forged_payload(i), 1, MIF), ACK);
    }
    assert_eq!(rig.read(1, mif(MIF, STATUS), 4) & 0xffff, 200);
    let dropped: u64 =
        rig.fabric.interconnect.link_counters().iter().map(|(_, c)| c.dropped.load(Ordering::Relaxed)).sum();
    assert!(dropped > 0, "losses were injected, and retried by the links");
}

#[test]
fn nodes_sending_to_each_other_do_not_deadlock() {
    const PACKETS: u64 = 200;
    let rig = Rig::two_nodes();
    for node in 0..2 {
        rig.program_tif(node, PIF, Pid::new(node as u16, 3, 1, PIF).unwrap());
        // With the line enabled every delivery updates the other node's lines, which locks all
        // of its devices: the case where a wrong lock order would deadlock.
        rig.write(node, mif(MIF, IRQ_ENABLE), 4, NOT_EMPTY).unwrap();
    }
    let (done, finished) = mpsc::channel();
    for node in 0..2usize {
        let (platform, done) = (rig.platforms[node].clone(), done.clone());
        std::thread::spawn(move || {
            let acks =
                (0..PACKETS).filter(|&i| send(&platform, PIF, forged_payload(i), 1 - node as u16, MIF) == ACK).count();
            done.send(acks as u64).unwrap();
        });
    }
    for _ in 0..2 {
        let acks = finished.recv_timeout(Duration::from_secs(30)).expect("both senders finish");
        assert_eq!(acks, PACKETS);
    }
    for node in 0..2 {
        assert_eq!(rig.read(node, mif(MIF, STATUS), 4) & 0xffff, u128::from(2 * PACKETS as u16));
        assert_eq!(rig.wire(node), [irq_line::VMBOX], "one rise per node");
    }
}

#[test]
fn the_fabric_does_not_keep_platforms_alive() {
    let mut rig = Rig::two_nodes();
    let again = rig.platforms.clone();
    assert_eq!(rig.fabric.set_endpoints(&again), Err(EndpointsError::AlreadySet));
    assert_eq!(rig.fabric.set_endpoints(&again[..1]), Err(EndpointsError::Count { expected: 2, got: 1 }));
    drop(again);
    assert!(rig.fabric.endpoint(1).is_some());
    rig.platforms.truncate(1);
    assert!(rig.fabric.endpoint(1).is_none(), "no strong reference from the fabric");
    rig.program_tif(0, PIF, sender_pid());
    assert_eq!(send(&rig.platforms[0], PIF, forged_payload(0), 1, MIF), NACK, "a node without a platform");
    rig.platforms.clear();
    assert_eq!(Arc::strong_count(&rig.fabric), 1, "the platforms released the fabric: no cycle");
}

/// The guest drains its UART only when the draining core is not itself waiting for a forwarded
/// access. A line held high while a node's threads keep writing asks for a byte after every
/// write; if those bytes could block the server, the guest and the server would wait for each
/// other. Here the guest never reads: every access still completes, and the bytes coalesce.
#[test]
fn a_guest_that_does_not_drain_its_uart_never_stalls_the_server() {
    let rig = Rig::two_nodes();
    rig.program_tif(1, PIF, sender_pid());
    rig.write(1, mif(MIF, IRQ_ENABLE), 4, NOT_EMPTY).unwrap();
    // Node 1 sends to its own vmbox: the line rises and stays high.
    assert_eq!(send(&rig.platforms[1], PIF, forged_payload(0), 1, MIF), ACK);
    let platform = rig.platforms[1].clone();
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        for _ in 0..20_000 {
            platform.forwarded_one(true, 4, mif(MIF, IRQ_ENABLE), NOT_EMPTY).unwrap();
        }
        done.send(()).unwrap();
    });
    finished.recv_timeout(Duration::from_secs(20)).expect("20,000 writes served while the guest reads nothing");

    let bytes = rig.wire(1);
    assert!(bytes.iter().all(|&b| b == irq_line::VMBOX));
    assert!(!bytes.is_empty() && bytes.len() < 20_000, "{} bytes for 20,000 requests", bytes.len());
}
