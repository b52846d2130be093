//! Two nodes wired together through the models: a thread on node 0 sends requests through its
//! PIF; node 1's atomic service reads MIF 0, applies them and sends the replies through its PIF 0
//! into the thread's MIF, with retries when the thread's FIFO is full.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use a53_kernel::gsas::fakes::FakeBackends;
use a53_kernel::gsas::interfaces::{InterfaceTable, ThreadKey};
use a53_kernel::gsas::service::{AtomicService, Outcome, Replies, ServiceConfig};
use a53_kernel::gsas::softmmu::Sharing;
use hal::packetizer::{Destination, base_dest, words128};
use proto::gsas::{ErrorCode, GlobalAddress, Opcode, PAGE_CHUNKS, Pid, ReplyBody, ReplyPacket, Request, Response};
use qemu_virt::models::Delivery;
use qemu_virt::models::packetizer::PacketizerModel;
use qemu_virt::models::vmbox::VmboxModel;

const WINDOW: u16 = 0x0123;
const TIF: u64 = 0x40000;
const ACK: u128 = 1 << 3;
const NACK: u128 = 1 << 2;
const PEND: u128 = 1;

struct Node {
    pkt: PacketizerModel,
    vmbox: Arc<Mutex<VmboxModel>>,
    interfaces: InterfaceTable,
}

fn cluster(depths: [u16; 2]) -> Vec<Node> {
    let vmboxes: Vec<_> = depths.iter().map(|&d| Arc::new(Mutex::new(VmboxModel::new(d).unwrap()))).collect();
    (0..2)
        .map(|n| {
            let net = vmboxes.clone();
            let sink = Box::new(move |p: qemu_virt::models::packetizer::OutgoingPacket| {
                match net.get(usize::from(p.dest_node)) {
                    Some(v) => v.lock().unwrap().deliver(p.dest_interface, &p.words),
                    None => Delivery::Nack,
                }
            });
            let mut node = Node {
                pkt: PacketizerModel::new(n as u16, sink),
                vmbox: vmboxes[n].clone(),
                interfaces: InterfaceTable::new(n as u16),
            };
            node.pkt.write(TIF + 0x200, 8, u128::from(base_dest(WINDOW))).unwrap();
            node.program_tif();
            node
        })
        .collect()
}

impl Node {
    /// What the atomicity driver does after every interface change.
    fn program_tif(&mut self) {
        for i in 0..64u8 {
            let entry = self.interfaces.pidt_entry(i);
            self.pkt.write(TIF + 8 * u64::from(i), 8, u128::from(entry)).unwrap();
        }
        self.pkt.write(TIF + 0x208, 8, u128::from(self.interfaces.pid_conf())).unwrap();
    }

    /// Three writes on PIF `pif`; returns the status once PEND is clear.
    fn send(&mut self, pif: u8, payload: [u128; 2], to: Pid) -> u128 {
        let base = u64::from(pif) * 0x1000;
        assert_eq!(self.pkt.read(base + 0x30, 4).unwrap() & PEND, 0, "PIF ready");
        let dest = Destination::mailbox(to.node(), WINDOW, to.interface()).unwrap().encode();
        self.pkt.write(base + 0x20, 8, u128::from(dest)).unwrap();
        self.pkt.write(base + 0x10, 16, payload[1]).unwrap();
        self.pkt.write(base, 16, payload[0]).unwrap();
        self.pkt.read(base + 0x30, 4).unwrap()
    }

    /// One packet (two words) from MIF `mif`, if there is one.
    fn receive(&mut self, mif: u8) -> Option<[u8; 32]> {
        let mut v = self.vmbox.lock().unwrap();
        let base = u64::from(mif) * 0x1000;
        if v.read(base + 0x10, 4).unwrap() & 0xffff < 2 {
            return None;
        }
        let words = [v.read(base, 16).unwrap(), v.read(base, 16).unwrap()];
        Some(hal::packetizer::packet_from_words128(words))
    }
}

/// The atomic service's kernel loop on one node: requests in, replies out with retry on NACK.
struct ServiceLoop {
    svc: AtomicService,
    be: FakeBackends,
    outbox: VecDeque<(Replies, usize)>,
    nacks: usize,
}

impl ServiceLoop {
    fn new(node: u16) -> Self {
        Self {
            svc: AtomicService::new(ServiceConfig::new(node)).unwrap(),
            be: FakeBackends::new(8),
            outbox: VecDeque::new(),
            nacks: 0,
        }
    }

    fn step(&mut self, node: &mut Node) {
        while let Some(packet) = node.receive(0) {
            if let Outcome::Reply(r) = self.svc.handle(&packet, &mut self.be.env()) {
                self.outbox.push_back((r, 0));
            }
        }
        while let Some((replies, next)) = self.outbox.front_mut() {
            let packet = replies.packet(*next).unwrap();
            let status = node.send(0, packet.pif_payload(), replies.to());
            if status == NACK {
                self.nacks += 1;
                return; // the requester's FIFO is full: try again next time
            }
            assert_eq!(status, ACK);
            *next += 1;
            if *next == replies.len() {
                self.outbox.pop_front();
            }
        }
    }
}

/// A thread's view: its interface pair and the replies it has read.
struct Thread {
    pid: Pid,
    index: u8,
}

impl Thread {
    fn new(node: &mut Node, domain: u16) -> Self {
        let grant = node.interfaces.acquire(ThreadKey { domain, thread: 1 }).unwrap();
        node.program_tif();
        Self { pid: grant.pid, index: grant.index }
    }

    fn request(&self, node: &mut Node, op: Opcode, address: u64, arg1: u64, arg2: u64) {
        // The thread cannot set its PID: it writes zeros (or anything) there.
        let req = Request { sender: Pid::default(), opcode: op, address: GlobalAddress::from_raw(address), arg1, arg2 };
        let target = Pid::atomic_service(GlobalAddress::from_raw(address).node());
        assert_eq!(node.send(self.index, req.pif_payload(), target), ACK);
    }

    /// Reply packets available now, checked to come from `service`.
    fn replies(&self, node: &mut Node, service: Pid) -> Vec<ReplyPacket> {
        std::iter::from_fn(|| node.receive(self.index))
            .map(|b| ReplyPacket::decode(&b).unwrap())
            .inspect(|p| assert_eq!(p.sender, service, "authenticated by the prefix"))
            .collect()
    }
}

fn call(nodes: &mut [Node], svc: &mut ServiceLoop, t: &Thread, op: Opcode, addr: u64, a1: u64, a2: u64) -> Response {
    t.request(&mut nodes[0], op, addr, a1, a2);
    svc.step(&mut nodes[1]);
    let got = t.replies(&mut nodes[0], Pid::atomic_service(1));
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].opcode, op.as_u8());
    match got[0].body {
        ReplyBody::Status(s) => s,
        other => panic!("{other:?}"),
    }
}

#[test]
fn remote_atomics_through_the_hardware_models() {
    let mut nodes = cluster([512, 512]);
    let mut svc = ServiceLoop::new(1);
    let alice = Thread::new(&mut nodes[0], 3);
    let bob = Thread::new(&mut nodes[0], 4);
    assert_ne!(alice.pid, bob.pid);
    let node1 = GlobalAddress::new(1, 0).unwrap().raw();

    let a = call(&mut nodes, &mut svc, &alice, Opcode::AllocSharedPage, node1, 1, Sharing::Private.bits());
    assert_eq!(a.error, None);
    let a = a.result;
    assert_eq!(call(&mut nodes, &mut svc, &alice, Opcode::Write64, a + 8, 41, 0), Response::ok(0));
    assert_eq!(call(&mut nodes, &mut svc, &alice, Opcode::Fad, a + 8, 1, 0), Response::ok(41));
    assert_eq!(call(&mut nodes, &mut svc, &alice, Opcode::Read64, a + 8, 0, 0), Response::ok(42));
    assert_eq!(
        call(&mut nodes, &mut svc, &bob, Opcode::Read64, a + 8, 0, 0),
        Response::err(ErrorCode::PermissionDenied)
    );

    // Bob writes Alice's PID into payload0[47:0]: the packetizer replaces it with his.
    let forged = Request {
        sender: alice.pid,
        opcode: Opcode::Write64,
        address: GlobalAddress::from_raw(a + 8),
        arg1: 0,
        arg2: 0,
    };
    let mut payload = forged.pif_payload();
    payload[0] |= u128::from(alice.pid.raw());
    assert_eq!(nodes[0].send(bob.index, payload, Pid::atomic_service(1)), ACK);
    svc.step(&mut nodes[1]);
    assert!(alice.replies(&mut nodes[0], Pid::atomic_service(1)).is_empty(), "the reply went to Bob");
    let to_bob = bob.replies(&mut nodes[0], Pid::atomic_service(1));
    assert_eq!(to_bob[0].body, ReplyBody::Status(Response::err(ErrorCode::PermissionDenied)));
    assert_eq!(call(&mut nodes, &mut svc, &alice, Opcode::Read64, a + 8, 0, 0), Response::ok(42));
}

#[test]
fn read4k_streams_with_flow_control() {
    // The requester's FIFO holds 64 words: the 514-word reply needs many NACKed retries.
    let mut nodes = cluster([64, 512]);
    let mut svc = ServiceLoop::new(1);
    let t = Thread::new(&mut nodes[0], 3);
    let node1 = GlobalAddress::new(1, 0).unwrap().raw();
    let a = call(&mut nodes, &mut svc, &t, Opcode::AllocSharedPage, node1, 1, 0).result;
    for i in 0..512u64 {
        assert_eq!(call(&mut nodes, &mut svc, &t, Opcode::Write64, a + 8 * i, i << 32 | 0xbeef, 0), Response::ok(0));
    }
    t.request(&mut nodes[0], Opcode::Read4K, a, 0, 0);
    let mut got = Vec::new();
    while got.len() < PAGE_CHUNKS + 2 {
        svc.step(&mut nodes[1]);
        // The page is a snapshot: a write queued behind the Read4K does not show in it.
        if got.is_empty() {
            t.request(&mut nodes[0], Opcode::Write64, a, 0xdead, 0);
        }
        got.extend(t.replies(&mut nodes[0], Pid::atomic_service(1)));
    }
    assert!(svc.nacks > 0, "flow control was exercised");
    let mut page = Vec::new();
    for (i, p) in got[..PAGE_CHUNKS].iter().enumerate() {
        let ReplyBody::Data { index, bytes } = p.body else { panic!("{p:?}") };
        assert_eq!(usize::from(index), i);
        page.extend_from_slice(&bytes);
    }
    assert_eq!(got[PAGE_CHUNKS].body, ReplyBody::Status(Response::ok(4096)));
    for i in 0..512 {
        assert_eq!(u64::from_le_bytes(page[8 * i..8 * i + 8].try_into().unwrap()), (i as u64) << 32 | 0xbeef);
    }
    // Then the Write64's own reply, and nothing else.
    assert_eq!(got.len(), PAGE_CHUNKS + 2);
    let last = got[PAGE_CHUNKS + 1];
    assert_eq!((last.opcode, last.body), (Opcode::Write64.as_u8(), ReplyBody::Status(Response::ok(0))));
    assert_eq!(words128(&last.encode())[1], Response::ok(0).to_u128(), "the response is the second word");
    assert_eq!(call(&mut nodes, &mut svc, &t, Opcode::Read64, a, 0, 0), Response::ok(0xdead));
}
