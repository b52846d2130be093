//! The node's GSAS decisions against fakes: a PIF that answers as scripted, a MIF that holds
//! packets, the mailbox service, and processes that record what was asked of them.

use super::client::{KernelClient, SEND_TRIES, SendError, Tally};
use super::*;
use crate::gsas::fakes::FakeBackends;
use crate::gsas::mailbox::{DeliverError, Received, RecvMode, WakeMode};
use crate::gsas::service::{AtomicService, Outcome, ServiceConfig};
use crate::gsas::softmmu::Sharing;
use proto::gsas::{ErrorCode, GlobalAddress, Opcode, PAGE_CHUNKS, ReplyBody, ReplyPacket, Request, Response};
use std::collections::VecDeque as Script;
use std::vec::Vec;

const NODE: u16 = 1;
const APP: u16 = 4;

/// A PIF that answers each send with the next scripted status (ACK once the script is out), and
/// keeps what it was asked to send.
#[derive(Default)]
struct FakePif {
    script: Script<SendStatus>,
    sent: Vec<([u128; 2], u64)>,
}

impl PacketSender for FakePif {
    fn send(&mut self, payload: [u128; 2], destination: u64) -> SendStatus {
        let status = self.script.pop_front().unwrap_or(SendStatus::Ack);
        self.sent.push((payload, destination));
        status
    }
}

impl FakePif {
    /// The packets it was asked to send, decoded as replies, with their destination.
    fn replies(&self) -> Vec<(ReplyPacket, u64)> {
        self.sent.iter().map(|&(p, to)| (reply_of(p), to)).collect()
    }
}

fn reply_of(payload: [u128; 2]) -> ReplyPacket {
    let bytes = hal::packetizer::bytes_from_words(hal::packetizer::words_from_words128(payload));
    ReplyPacket::decode(&bytes).unwrap()
}

/// A MIF's reading half holding packets.
#[derive(Default)]
struct FakeMif(Script<[u128; 2]>);

impl PacketSource for FakeMif {
    fn read_packet(&mut self) -> Option<[u128; 2]> {
        self.0.pop_front()
    }
}

fn pid(domain: u16, interface: u8) -> Pid {
    Pid::new(NODE, domain, 0, interface).unwrap()
}

/// The atomic service over the fakes, for real reply sequences.
struct Service {
    service: AtomicService,
    backends: FakeBackends,
}

impl Service {
    fn new() -> Self {
        let config = ServiceConfig { node: NODE, max_alloc_pages: 8, mmu_bucket_bits: 3, mmu_capacity: 12 };
        Self { service: AtomicService::new(config).unwrap(), backends: FakeBackends::new(16) }
    }

    fn replies(&mut self, sender: Pid, opcode: Opcode, address: u64, arg1: u64, arg2: u64) -> Replies {
        let request = Request { sender, opcode, address: GlobalAddress::from_raw(address), arg1, arg2 };
        match self.service.handle(&request.encode(), &mut self.backends.env()) {
            Outcome::Reply(r) => r,
            other => panic!("{other:?}"),
        }
    }

    /// A one-packet reply (a status) to `sender`.
    fn status(&mut self, sender: Pid) -> Replies {
        let base = GlobalAddress::new(NODE, 0).unwrap().raw();
        self.replies(sender, Opcode::AllocSharedPage, base, 1, Sharing::ReadOnly.bits())
    }
}

#[test]
fn an_outbox_stops_at_a_nack_and_resumes_with_the_same_packet_in_order() {
    let (dropped, nacks) = (AtomicU64::new(0), AtomicU64::new(0));
    let mut outbox = Outbox::new(&dropped, &nacks);
    let mut service = Service::new();
    let (alice, bob) = (pid(5, 1), pid(6, 2));
    let page = service.status(alice).status().result;
    let read = service.replies(bob, Opcode::Read4K, page, 0, 0);
    assert_eq!(read.len(), PAGE_CHUNKS + 1);
    outbox.push(read);
    outbox.push(service.status(alice));
    // Bob's FIFO fills after three packets.
    let mut pif = FakePif {
        script: [SendStatus::Ack, SendStatus::Ack, SendStatus::Ack, SendStatus::Nack].into(),
        ..Default::default()
    };
    assert!(!outbox.flush(&mut pif), "a NACK stops the flush");
    assert_eq!((nacks.load(Ordering::Relaxed), outbox.len()), (1, 2));
    assert!(outbox.flush(&mut pif));
    assert!(outbox.is_empty());
    let sent = pif.replies();
    assert_eq!(sent.len(), PAGE_CHUNKS + 2 + 1, "every packet once, and the NACKed one again");
    assert_eq!(sent[3], sent[4], "the NACKed packet is the next one sent");
    let to_bob = destination(NODE, 2).unwrap();
    let indices: Vec<_> = sent.iter().filter(|(_, to)| *to == to_bob).map(|(p, _)| p.body).collect();
    assert!(matches!(indices[4], ReplyBody::Data { index: 3, .. }), "Bob's fourth packet is chunk 3: {:?}", indices[4]);
    assert!(matches!(indices[PAGE_CHUNKS + 1], ReplyBody::Status(_)), "the status goes last");
    assert_eq!(sent.last().unwrap().1, destination(NODE, 1).unwrap(), "Alice's reply waits for Bob's");
    assert_eq!(dropped.load(Ordering::Relaxed), 0);
}

#[test]
fn an_unsendable_reply_is_dropped_and_the_others_go() {
    let (dropped, nacks) = (AtomicU64::new(0), AtomicU64::new(0));
    let mut outbox = Outbox::new(&dropped, &nacks);
    let mut service = Service::new();
    outbox.push(service.status(pid(5, 1)));
    outbox.push(service.status(pid(6, 2)));
    let mut pif = FakePif { script: [SendStatus::Stuck].into(), ..Default::default() };
    assert!(outbox.flush(&mut pif));
    assert_eq!((dropped.load(Ordering::Relaxed), nacks.load(Ordering::Relaxed)), (1, 0));
    assert_eq!(pif.sent.len(), 2, "the stuck packet is not retried");
    assert_eq!(pif.sent[1].1, destination(NODE, 2).unwrap());
}

#[test]
fn an_outbox_is_full_at_its_depth() {
    let counters = (AtomicU64::new(0), AtomicU64::new(0));
    let mut outbox = Outbox::new(&counters.0, &counters.1);
    let mut service = Service::new();
    for _ in 0..OUTBOX_DEPTH {
        assert!(!outbox.is_full());
        outbox.push(service.status(pid(5, 1)));
    }
    assert!(outbox.is_full());
}

/// Processes as deliveries see them: `APP` in slot 2; records what was asked.
#[derive(Default)]
struct Processes {
    handlers: Vec<(KernelHandler, Pid)>,
    woken: Vec<usize>,
    signals: Vec<(u16, u8)>,
}

impl Recipients for Processes {
    fn run_handler(&mut self, handler: KernelHandler, _: Notification, from: Pid) {
        self.handlers.push((handler, from));
    }

    fn slot_of_domain(&mut self, domain: u16) -> Option<usize> {
        (domain == APP).then_some(2)
    }

    fn wake_mailbox_waiter(&mut self, slot: usize) {
        self.woken.push(slot);
    }

    fn raise_signal(&mut self, domain: u16, signal: u8) {
        self.signals.push((domain, signal));
    }
}

fn user(channel: u8, payload: u64) -> Notification {
    Message::User { channel, payload }.encode().unwrap()
}

fn opcode(channel: u8) -> MailboxOpcode {
    MailboxOpcode::user(channel).unwrap()
}

#[test]
fn deliveries_signal_count_or_wake_as_the_receiver_asked() {
    let mut mailbox = MailboxService::new(8, 4).unwrap();
    let from = pid(9, 3);
    mailbox.register(opcode(0), Receiver::Process { domain: APP, wake: WakeMode::Signal(10) }).unwrap();
    mailbox.register(opcode(1), Receiver::Process { domain: APP, wake: WakeMode::Event }).unwrap();
    mailbox.register(opcode(2), Receiver::Process { domain: APP, wake: WakeMode::Read }).unwrap();
    let mut deliver = |channel| mailbox.deliver(from, user(channel, 1)).unwrap();
    let mut to = Processes::default();

    run_deliveries(&[deliver(0)], &mut to);
    assert_eq!((to.signals.as_slice(), to.woken.as_slice()), (&[(APP, 10)][..], &[][..]), "a signal, no wake");

    run_deliveries(&[deliver(1), deliver(1)], &mut to);
    assert_eq!(to.woken, [2, 2], "an event wakes the process waiting on its counter, each time");
    assert_eq!(mailbox.event_count(APP), Some(2), "and the counter counts them");

    to.woken.clear();
    run_deliveries(&[mailbox.deliver(from, user(2, 1)).unwrap()], &mut to);
    assert!(to.woken.is_empty(), "read mode with nobody blocked: queued, nobody woken");
    assert!(matches!(mailbox.receive(APP, 7, Some(opcode(2)), RecvMode::Blocking), Ok(Received::Message { .. })));
    assert_eq!(mailbox.receive(APP, 7, Some(opcode(2)), RecvMode::Blocking), Ok(Received::Blocked));
    run_deliveries(&[mailbox.deliver(from, user(2, 2)).unwrap()], &mut to);
    assert_eq!(to.woken, [7], "the blocked thread (its id is its slot) is woken");
    assert_eq!(to.signals.len(), 1);
}

#[test]
fn a_handler_registry_refuses_a_second_receiver_and_runs_the_one_it_has() {
    let mut mailbox = MailboxService::new(8, 4).unwrap();
    let mut handlers = Handlers::new();
    // Which handler ran last (this test's own).
    static RAN: AtomicU64 = AtomicU64::new(0);
    let (first, second): (Handler, Handler) =
        (|_, _| RAN.store(1, Ordering::Relaxed), |_, _| RAN.store(2, Ordering::Relaxed));
    handlers.register(&mut mailbox, MailboxOpcode::PING, first).unwrap();
    assert_eq!(handlers.register(&mut mailbox, MailboxOpcode::PING, second), Err(MailboxError::AlreadyRegistered));
    let ping = Message::Ping { nonce: 1 }.encode().unwrap();
    let kernel = Pid::atomic_service(2);
    let Ok(Delivery::Kernel { handler, .. }) = mailbox.deliver(kernel, ping) else { panic!("not the kernel's") };
    handlers.get(handler).expect("registered")(ping, kernel);
    assert_eq!(RAN.load(Ordering::Relaxed), 1, "the first stays");
    // A process holds a user channel: the kernel cannot take it.
    mailbox.register(opcode(3), Receiver::Process { domain: APP, wake: WakeMode::Read }).unwrap();
    assert_eq!(handlers.register(&mut mailbox, opcode(3), first), Err(MailboxError::AlreadyRegistered));
    assert!(handlers.get(KernelHandler(opcode(3).index() as u16)).is_none());
    handlers.unregister(&mut mailbox, MailboxOpcode::PING).unwrap();
    assert!(handlers.get(handler).is_none());
    assert_eq!(mailbox.deliver(kernel, ping), Err(DeliverError::NoReceiver), "refused again");
    handlers.register(&mut mailbox, MailboxOpcode::PING, second).unwrap();
}

#[test]
fn the_kernel_client_retries_a_full_fifo_then_gives_up_and_counts_replies() {
    let (delivered, refused) = (AtomicU64::new(0), AtomicU64::new(0));
    let tally = Tally { delivered: &delivered, refused: &refused };
    let nacks = |n| core::iter::repeat_n(SendStatus::Nack, n).collect();
    let pif = FakePif { script: nacks(SEND_TRIES as usize - 1), ..Default::default() };
    let mut client = KernelClient::new(9, pif, FakeMif::default(), tally);
    let note = user(0, 5);
    assert_eq!(client.notify(2, note), Ok(()), "the last try goes");
    assert_eq!(client.notify(MAX_NODES_PLUS, note), Err(SendError::NoRoute));

    let pif = FakePif { script: nacks(SEND_TRIES as usize), ..Default::default() };
    let mut replies = FakeMif::default();
    let status = |error| {
        let response = if error { Response::err(ErrorCode::BadOpcode) } else { Response::ok(0) };
        let to = pid(0, 9);
        let reply = ReplyPacket {
            sender: Pid::atomic_service(2),
            to,
            opcode: Opcode::Notify.as_u8(),
            body: ReplyBody::Status(response),
        };
        reply.pif_payload()
    };
    replies.0.extend([status(false), status(true), status(false)]);
    let mut client = KernelClient::new(9, pif, replies, tally);
    assert_eq!(client.notify(2, note), Err(SendError::Busy), "the FIFO stayed full");
    assert_eq!((delivered.load(Ordering::Relaxed), refused.load(Ordering::Relaxed)), (2, 1), "counted at the send");
}

/// A node beyond the packetizer's range.
const MAX_NODES_PLUS: u16 = hal::packetizer::MAX_NODES;

#[test]
fn a_ping_is_answered_with_its_nonce_and_nonces_name_their_node() {
    let nonce = ping_nonce(3, 7);
    let ping = Message::Ping { nonce }.encode().unwrap();
    let pong = pong_for(ping).unwrap();
    assert_eq!(pong_nonce(pong), Some(nonce));
    assert_eq!(pong_for(pong), None, "a pong is not answered");
    assert_eq!(pong_nonce(ping), None);
    assert_ne!(ping_nonce(3, 7), ping_nonce(4, 7), "two nodes' pings differ");
    assert!(Message::Ping { nonce: ping_nonce(u16::MAX, u64::MAX) }.encode().is_ok(), "every nonce fits a Ping");
}

#[test]
fn a_remote_spawn_keeps_its_parents_job_and_a_kernel_spawn_starts_one() {
    let remote = SpawnRequest { parent: Pid::new(2, 0x0305, 0, 4).unwrap(), image: "worker", argument: 9 };
    let launch = launch_for(&remote);
    assert_eq!((launch.name, launch.argument, launch.reap), ("worker", Some(9), Reap::Auto));
    assert_eq!(launch.pd, PdRequest::Inherit(proto::rdma::domain::pd_of_domain(0x0305)));
    let kernel = SpawnRequest { parent: Pid::atomic_service(2), ..remote };
    assert_eq!(launch_for(&kernel).pd, PdRequest::Any);
    assert_eq!(spawned(Ok(4)), Ok(NonZeroU64::new(4).unwrap()));
    assert_eq!(spawned(Ok(0)), Err(SpawnError::NoResources));
    assert_eq!(spawned(Err(table::SpawnError::UnknownImage)), Err(SpawnError::UnknownImage));
    assert_eq!(spawned(Err(table::SpawnError::NoSlot)), Err(SpawnError::NoResources));
}
