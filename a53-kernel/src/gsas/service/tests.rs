//! Atomic service against the host fakes: every operation, every error class, protection.

use std::vec::Vec;

use super::*;
use crate::gsas::fakes::FakeBackends;
use crate::gsas::mailbox::DeliverError;
use crate::gsas::softmmu::{Frame, Sharing};
use ErrorCode::*;
use hal::packetizer;
use proto::gsas::{
    AddressUse, EMPTY_THREAD_ARGUMENT, GlobalPage, MailboxOpcode, Message, Notification, Opcode, PAGE_CHUNKS,
    ReplyBody, ReplyPacket, Request, write_description,
};

const NODE: u16 = 1;
const ALICE: Pid = pid(5, 1);
const BOB: Pid = pid(6, 2);
/// Same domain number as Alice, other node: another domain.
const MALLORY: Pid = match Pid::new(2, 5, 0, 1) {
    Ok(p) => p,
    Err(_) => panic!(),
};

const fn pid(domain: u16, interface: u8) -> Pid {
    match Pid::new(NODE, domain, 0, interface) {
        Ok(p) => p,
        Err(_) => panic!(),
    }
}

struct T {
    svc: AtomicService,
    be: FakeBackends,
}

impl T {
    fn new() -> Self {
        let config = ServiceConfig { node: NODE, max_alloc_pages: 8, mmu_bucket_bits: 3, mmu_capacity: 12 };
        Self { svc: AtomicService::new(config).unwrap(), be: FakeBackends::new(16) }
    }

    fn handle(&mut self, bytes: &[u8; 32]) -> Outcome {
        self.svc.handle(bytes, &mut self.be.env())
    }

    fn send(&mut self, sender: Pid, opcode: Opcode, address: u64, arg1: u64, arg2: u64) -> Replies {
        let req = Request { sender, opcode, address: GlobalAddress::from_raw(address), arg1, arg2 };
        match self.handle(&req.encode()) {
            Outcome::Reply(r) => {
                assert_eq!(r.to(), sender, "replies go to the requester");
                for p in r.packets() {
                    assert_eq!((p.sender, p.opcode), (Pid::atomic_service(NODE), opcode.as_u8()));
                }
                r
            }
            other => panic!("{other:?}"),
        }
    }

    fn call(&mut self, sender: Pid, opcode: Opcode, address: u64, arg1: u64, arg2: u64) -> Result<u64, ErrorCode> {
        let r = self.send(sender, opcode, address, arg1, arg2);
        let s = r.status();
        assert_eq!(r.len(), if opcode == Opcode::Read4K && s.error.is_none() { PAGE_CHUNKS + 1 } else { 1 });
        assert_eq!(r.packet(r.len() - 1).unwrap().body, ReplyBody::Status(s), "status is last");
        match s.error {
            None => Ok(s.result),
            Some(e) => {
                assert_eq!(s.result, 0, "errors carry NULL");
                Err(e)
            }
        }
    }

    fn alloc(&mut self, who: Pid, pages: u64, sharing: Sharing) -> u64 {
        let base = GlobalAddress::new(NODE, 0).unwrap().raw();
        self.call(who, Opcode::AllocSharedPage, base, pages, sharing.bits()).unwrap()
    }
}

fn node_base() -> u64 {
    GlobalAddress::new(NODE, 0).unwrap().raw()
}

#[test]
fn reads_and_writes() {
    let mut t = T::new();
    let a = t.alloc(ALICE, 1, Sharing::Private);
    assert_eq!(GlobalAddress::from_raw(a).node(), NODE);
    assert_ne!(GlobalAddress::from_raw(a).offset(), 0, "never NULL");
    assert_eq!(t.call(ALICE, Opcode::Read64, a, 0, 0), Ok(0), "new pages are zeroed");
    assert_eq!(t.call(ALICE, Opcode::Write8, a + 1, 0xab, 0), Ok(0));
    assert_eq!(t.call(ALICE, Opcode::Read8, a + 1, 0, 0), Ok(0xab));
    assert_eq!(t.call(ALICE, Opcode::Write32, a + 4, 0xdead_beef, 0), Ok(0));
    assert_eq!(t.call(ALICE, Opcode::Read32, a + 4, 0, 0), Ok(0xdead_beef));
    assert_eq!(t.call(ALICE, Opcode::Read64, a, 0, 0), Ok(0xdead_beef_0000_ab00));
    assert_eq!(t.call(ALICE, Opcode::Write64, a + 8, u64::MAX, 0), Ok(0));
    assert_eq!(t.call(ALICE, Opcode::Read64, a + 8, 0, 0), Ok(u64::MAX));
    assert_eq!(t.call(ALICE, Opcode::Write128, a + 0xff0, 1, 2), Ok(0));
    assert_eq!(t.call(ALICE, Opcode::Read64, a + 0xff0, 0, 0), Ok(1), "arg1 is the low half");
    assert_eq!(t.call(ALICE, Opcode::Read64, a + 0xff8, 0, 0), Ok(2));
}

#[test]
fn atomics() {
    let mut t = T::new();
    let a = t.alloc(ALICE, 1, Sharing::Shared);
    assert_eq!(t.call(BOB, Opcode::Cas, a, 1, 5), Ok(0), "mismatch: unchanged");
    assert_eq!(t.call(ALICE, Opcode::Read64, a, 0, 0), Ok(0));
    assert_eq!(t.call(BOB, Opcode::Cas, a, 0, 5), Ok(1));
    assert_eq!(t.call(ALICE, Opcode::Fad, a, (-7i64) as u64, 0), Ok(5), "FAD returns the old value");
    assert_eq!(t.call(ALICE, Opcode::Read64, a, 0, 0), Ok((-2i64) as u64));
    assert_eq!(t.call(BOB, Opcode::Swap, a, 42, 0), Ok((-2i64) as u64));
    assert_eq!(t.call(ALICE, Opcode::Read64, a, 0, 0), Ok(42));
}

#[test]
fn read4k_is_a_complete_ordered_snapshot() {
    let mut t = T::new();
    let a = t.alloc(ALICE, 1, Sharing::ReadOnly);
    for i in 0..512u64 {
        t.call(ALICE, Opcode::Write64, a + 8 * i, i.wrapping_mul(0x0101_0101_0101_0101) ^ 0xCAFE_BEBE_DEAD_BEEF, 0)
            .unwrap();
    }
    let r = t.send(BOB, Opcode::Read4K, a, 0, 0);
    assert_eq!(r.status(), Response::ok(4096));
    assert_eq!(r.len(), PAGE_CHUNKS + 1);
    let mut page = Vec::new();
    for (i, p) in r.packets().enumerate() {
        match p.body {
            ReplyBody::Data { index, bytes } => {
                assert_eq!(usize::from(index), i, "in order");
                page.extend_from_slice(&bytes);
            }
            ReplyBody::Status(s) => assert_eq!((i, s), (PAGE_CHUNKS, Response::ok(4096))),
        }
        assert_eq!(ReplyPacket::decode(&p.encode()), Ok(p));
    }
    assert_eq!(page.len(), 4096);
    assert_eq!(&page[..], &r.page().unwrap()[..]);
    for i in 0..512 {
        let word = u64::from_le_bytes(page[8 * i..8 * i + 8].try_into().unwrap());
        assert_eq!(
            word,
            (i as u64).wrapping_mul(0x0101_0101_0101_0101) ^ 0xCAFE_BEBE_DEAD_BEEF,
            "the API sentinel is fine in data"
        );
    }
    assert_eq!(r.packet(PAGE_CHUNKS + 1), None);
}

#[test]
fn alloc_and_free_whole_allocations() {
    let mut t = T::new();
    let free_before = t.be.frames.free_count();
    let a = t.alloc(ALICE, 3, Sharing::Shared);
    let b = t.alloc(BOB, 1, Sharing::Shared);
    assert_eq!(b, a + 3 * PAGE_SIZE, "consecutive virtual pages");
    assert_eq!(t.be.frames.free_count(), free_before - 4);
    t.call(ALICE, Opcode::Write64, a + 2 * PAGE_SIZE, 9, 0).unwrap();
    assert_eq!(t.call(ALICE, Opcode::FreeSharedPage, a + PAGE_SIZE, 0, 0), Err(BadArgument), "not the start");
    assert_eq!(t.call(BOB, Opcode::FreeSharedPage, a, 0, 0), Err(PermissionDenied), "shared is not ownership");
    assert_eq!(t.call(ALICE, Opcode::FreeSharedPage, a, 0, 0), Ok(3));
    assert_eq!(t.be.frames.free_count(), free_before - 1);
    assert_eq!(t.call(ALICE, Opcode::Read64, a + 2 * PAGE_SIZE, 0, 0), Err(Unmapped), "use after free");
    assert_eq!(t.call(ALICE, Opcode::FreeSharedPage, a, 0, 0), Err(Unmapped), "double free");
    let c = t.alloc(ALICE, 1, Sharing::Shared);
    assert!(c > b, "virtual pages are not reused");
    assert_eq!(t.call(ALICE, Opcode::Read64, c, 0, 0), Ok(0), "a reused frame comes back zeroed");
    assert_eq!(t.be.frames.bad_frees, 0);
}

#[test]
fn remote_spawn() {
    let mut t = T::new();
    let a = t.alloc(ALICE, 1, Sharing::Private);
    let mut desc = [0u8; 16];
    write_description("worker", &mut desc).unwrap();
    for (i, chunk) in desc.chunks(8).enumerate() {
        let word = u64::from_le_bytes(chunk.try_into().unwrap());
        t.call(ALICE, Opcode::Write64, a + 8 * i as u64, word, 0).unwrap();
    }
    assert_eq!(t.call(ALICE, Opcode::RemoteSpawn, a, 77, 0), Ok(101));
    assert_eq!(t.be.spawner.spawned, [(ALICE, "worker".into(), 77)]);
    assert_eq!(t.call(BOB, Opcode::RemoteSpawn, a, 77, 0), Err(PermissionDenied), "needs read access");
    assert_eq!(t.call(ALICE, Opcode::RemoteSpawn, a, EMPTY_THREAD_ARGUMENT, 0), Err(BadArgument));
    t.call(ALICE, Opcode::Write8, a, u64::from(b'x'), 0).unwrap();
    assert_eq!(t.call(ALICE, Opcode::RemoteSpawn, a, 1, 0), Err(SpawnFailed), "unknown image 'xorker'");
    t.call(ALICE, Opcode::Write8, a, 0, 0).unwrap();
    assert_eq!(t.call(ALICE, Opcode::RemoteSpawn, a, 1, 0), Err(BadArgument), "empty name");
    t.call(ALICE, Opcode::Write8, a, u64::from(b'w'), 0).unwrap();
    t.be.spawner.out_of_resources = true;
    assert_eq!(t.call(ALICE, Opcode::RemoteSpawn, a, 1, 0), Err(SpawnFailed));
    assert_eq!(t.call(ALICE, Opcode::RemoteSpawn, a + PAGE_SIZE, 1, 0), Err(Unmapped));
}

#[test]
fn notify() {
    let mut t = T::new();
    let n = Message::User { channel: 1, payload: 99 }.encode().unwrap();
    assert_eq!(t.call(ALICE, Opcode::Notify, node_base(), n.raw(), 0), Ok(0));
    assert_eq!(t.be.sink.received, [(ALICE, n)]);
    assert_eq!(t.call(ALICE, Opcode::Notify, node_base(), 5, 0), Err(BadArgument), "opcode 0 is no message");
    assert_eq!(t.call(ALICE, Opcode::Notify, node_base() + 8, n.raw(), 0), Err(BadArgument));
    for (refusal, code) in [
        (DeliverError::NoReceiver, NoReceiver),
        (DeliverError::QueueFull, QueueFull),
        (DeliverError::Forbidden, PermissionDenied),
    ] {
        t.be.sink.refuse = Some(refusal);
        assert_eq!(t.call(ALICE, Opcode::Notify, node_base(), n.raw(), 0), Err(code));
    }
}

#[test]
fn notify_through_the_mailbox_service() {
    use crate::gsas::mailbox::{Delivery, MailboxService, Receiver, WakeMode, Wakeup};
    let mut t = T::new();
    let mut mailbox = MailboxService::new(1, 4).unwrap();
    let u0 = MailboxOpcode::user(0).unwrap();
    mailbox.register(u0, Receiver::Process { domain: 9, wake: WakeMode::Read }).unwrap();
    let mut sink = MailboxActions { mailbox: &mut mailbox, actions: Vec::new() };
    let n = Notification::new(u0, 1).unwrap();
    let req = Request {
        sender: BOB,
        opcode: Opcode::Notify,
        address: GlobalAddress::from_raw(node_base()),
        arg1: n.raw(),
        arg2: 0,
    };
    let mut run = |sink: &mut MailboxActions<'_>| {
        let mut env = Env {
            memory: &mut t.be.memory,
            frames: &mut t.be.frames,
            spawner: &mut t.be.spawner,
            notifications: sink,
            processes: &mut t.be.processes,
        };
        match t.svc.handle(&req.encode(), &mut env) {
            Outcome::Reply(r) => r.status(),
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(run(&mut sink), Response::ok(0));
    assert_eq!(sink.take(), [Delivery::Queued { domain: 9, wake: Wakeup::None }]);
    assert_eq!(run(&mut sink), Response::err(QueueFull));
    let ping = Message::Ping { nonce: 1 }.encode().unwrap();
    let req2 = Request { arg1: ping.raw(), ..req };
    let mut env = Env {
        memory: &mut t.be.memory,
        frames: &mut t.be.frames,
        spawner: &mut t.be.spawner,
        notifications: &mut sink,
        processes: &mut t.be.processes,
    };
    let Outcome::Reply(r) = t.svc.handle(&req2.encode(), &mut env) else { panic!() };
    assert_eq!(r.status(), Response::err(PermissionDenied), "user domains cannot send kernel opcodes");
}

#[test]
fn unknown_opcodes_and_reserved_byte() {
    let mut t = T::new();
    for byte in 0..=u8::MAX {
        if Opcode::try_from(byte).is_ok() {
            continue;
        }
        let raw = RawRequest { sender: ALICE, opcode: byte, ..RawRequest::default() };
        let Outcome::Reply(r) = t.handle(&raw.to_bytes()) else { panic!() };
        let only = r.packet(0).unwrap();
        assert_eq!((r.len(), only.opcode, only.body), (1, byte, ReplyBody::Status(Response::err(BadOpcode))));
    }
    let raw = RawRequest { sender: ALICE, reserved: 1, opcode: Opcode::Read8.as_u8(), ..RawRequest::default() };
    let Outcome::Reply(r) = t.handle(&raw.to_bytes()) else { panic!() };
    assert_eq!(r.status(), Response::err(BadArgument));
}

#[test]
fn alignment_rules() {
    let mut t = T::new();
    let a = t.alloc(ALICE, 1, Sharing::Shared);
    let data_ops = [
        (Opcode::Read8, 1),
        (Opcode::Read32, 4),
        (Opcode::Read64, 8),
        (Opcode::Write8, 1),
        (Opcode::Write32, 4),
        (Opcode::Write64, 8),
        (Opcode::Write128, 8),
        (Opcode::Cas, 8),
        (Opcode::Fad, 8),
        (Opcode::Swap, 8),
    ];
    for (op, align) in data_ops {
        for off in 0..16u64 {
            let got = t.call(ALICE, op, a + off, 0, 0);
            assert_eq!(got == Err(Unaligned), off % align != 0, "{op:?} at +{off}: {got:?}");
        }
    }
    assert_eq!(t.call(ALICE, Opcode::Write128, a + 0xff8, 0, 0), Err(Unaligned), "would cross the page");
    assert_eq!(t.call(ALICE, Opcode::Read64, a + 0xff8, 0, 0), Ok(0));
    for op in [Opcode::Read4K, Opcode::FreeSharedPage, Opcode::RemoteSpawn] {
        for off in [1, 8, 0x800, 0xfff] {
            assert_eq!(t.call(ALICE, op, a + off, 0, 0), Err(Unaligned), "{op:?} at +{off}");
        }
    }
}

#[test]
fn argument_checks() {
    let mut t = T::new();
    let a = t.alloc(ALICE, 1, Sharing::Shared);
    let base = node_base();
    let bad = [
        (Opcode::Read64, a, 1, 0),
        (Opcode::Read64, a, 0, 1),
        (Opcode::Write64, a, 0, 1),
        (Opcode::Write8, a, 0x100, 0),
        (Opcode::Write32, a, 1 << 32, 0),
        (Opcode::Fad, a, 1, 1),
        (Opcode::FreeSharedPage, a, 1, 0),
        (Opcode::AllocSharedPage, base, 0, 0),
        (Opcode::AllocSharedPage, base, 9, 0),
        (Opcode::AllocSharedPage, base, 1, 3),
        (Opcode::AllocSharedPage, base, 1, 1 << 8),
        (Opcode::AllocSharedPage, base + PAGE_SIZE, 1, 0),
        (Opcode::RemoteSpawn, a, 1, 1),
    ];
    for (op, addr, a1, a2) in bad {
        assert_eq!(t.call(ALICE, op, addr, a1, a2), Err(BadArgument), "{op:?} {a1:#x} {a2:#x}");
    }
    assert_eq!(t.call(ALICE, Opcode::Read64, a, 0, 0), Ok(0), "nothing was written");
}

#[test]
fn wrong_node_and_unmapped() {
    let mut t = T::new();
    let elsewhere = GlobalAddress::new(NODE + 1, PAGE_SIZE).unwrap().raw();
    for op in Opcode::ALL {
        let addr = if op.address_use() == AddressUse::NodeOnly { elsewhere & !0xffff_ffff_ffff } else { elsewhere };
        assert_eq!(t.call(ALICE, op, addr, 1, 0), Err(WrongNode), "{op:?}");
    }
    let nowhere = GlobalAddress::new(NODE, 0x7000).unwrap().raw();
    for op in [Opcode::Read8, Opcode::Read4K, Opcode::Write64, Opcode::Cas, Opcode::FreeSharedPage] {
        assert_eq!(t.call(ALICE, op, nowhere, 0, 0), Err(Unmapped), "{op:?}");
    }
}

#[test]
fn out_of_memory_rolls_back() {
    let mut t = T::new();
    // 16 frames, 12 MMU entries, at most 8 pages per request.
    t.alloc(ALICE, 8, Sharing::Shared);
    t.alloc(ALICE, 3, Sharing::Shared);
    let frames = t.be.frames.free_count();
    assert_eq!(t.call(ALICE, Opcode::AllocSharedPage, node_base(), 2, 0), Err(OutOfMemory), "MMU full");
    assert_eq!(t.be.frames.free_count(), frames);
    t.alloc(ALICE, 1, Sharing::Shared);

    let mut t = T::new();
    t.be.frames = crate::gsas::fakes::FakeFrames::contiguous(FakeBackends::RAM_BASE, 3);
    assert_eq!(t.call(ALICE, Opcode::AllocSharedPage, node_base(), 4, 0), Err(OutOfMemory), "frames exhausted");
    assert_eq!(t.be.frames.free_count(), 3, "partial allocation returned");
    assert_eq!(t.svc.mmu().len(), 0);
    assert_eq!(t.alloc(ALICE, 3, Sharing::Shared), node_base() + PAGE_SIZE, "no virtual range consumed");
}

#[test]
fn memory_fault_is_reported() {
    let mut t = T::new();
    let outside = Frame::new(0x1000_0000).unwrap();
    t.be.frames = crate::gsas::fakes::FakeFrames::new([outside]);
    assert_eq!(
        t.call(ALICE, Opcode::AllocSharedPage, node_base(), 1, 0),
        Err(ErrorCode::MemoryFault),
        "cannot zero it"
    );
    assert_eq!(t.be.frames.free_count(), 1);
}

#[test]
fn foreign_domains_cannot_touch_private_pages() {
    let mut t = T::new();
    let a = t.alloc(ALICE, 1, Sharing::Private);
    t.call(ALICE, Opcode::Write64, a, 0x1234, 0).unwrap();
    let before = t.be.memory.clone();
    for thief in [BOB, MALLORY] {
        for (op, a1, a2) in [
            (Opcode::Read8, 0, 0),
            (Opcode::Read32, 0, 0),
            (Opcode::Read64, 0, 0),
            (Opcode::Read4K, 0, 0),
            (Opcode::Write8, 1, 0),
            (Opcode::Write32, 1, 0),
            (Opcode::Write64, 1, 0),
            (Opcode::Write128, 1, 1),
            (Opcode::Cas, 0x1234, 0),
            (Opcode::Fad, 1, 0),
            (Opcode::Swap, 1, 0),
            (Opcode::FreeSharedPage, 0, 0),
            (Opcode::RemoteSpawn, 1, 0),
        ] {
            assert_eq!(t.call(thief, op, a, a1, a2), Err(PermissionDenied), "{thief:?} {op:?}");
        }
    }
    assert_eq!(t.be.memory, before, "memory unchanged");
    assert_eq!(t.call(ALICE, Opcode::Read64, a, 0, 0), Ok(0x1234));
}

#[test]
fn read_only_pages() {
    let mut t = T::new();
    let a = t.alloc(ALICE, 1, Sharing::ReadOnly);
    t.call(ALICE, Opcode::Write64, a, 7, 0).unwrap();
    assert_eq!(t.call(BOB, Opcode::Read64, a, 0, 0), Ok(7));
    assert_eq!(t.call(BOB, Opcode::Write64, a, 8, 0), Err(PermissionDenied));
    assert_eq!(t.call(BOB, Opcode::Swap, a, 8, 0), Err(PermissionDenied));
    assert_eq!(t.call(BOB, Opcode::Cas, a, 7, 8), Err(PermissionDenied));
    assert_eq!(t.call(ALICE, Opcode::Read64, a, 0, 0), Ok(7));
}

#[test]
fn forged_pid_in_the_payload_is_ignored() {
    let mut t = T::new();
    let a = t.alloc(ALICE, 1, Sharing::Private);
    // Bob writes a request claiming to be Alice; his packetizer interface stamps his PID.
    let forged =
        Request { sender: ALICE, opcode: Opcode::Write64, address: GlobalAddress::from_raw(a), arg1: 1, arg2: 0 };
    let mut payload = forged.pif_payload();
    payload[0] |= u128::from(ALICE.raw()); // even if he sets the prefix bits himself
    let on_wire = packetizer::assemble(BOB.raw(), payload[0], payload[1]);
    let Outcome::Reply(r) = t.handle(&on_wire) else { panic!() };
    assert_eq!((r.to(), r.status()), (BOB, Response::err(PermissionDenied)));
    assert_eq!(t.call(ALICE, Opcode::Read64, a, 0, 0), Ok(0));
}

#[test]
fn packets_from_interface_zero_are_dropped() {
    let mut t = T::new();
    let service_reply = ReplyPacket {
        sender: Pid::atomic_service(NODE + 1),
        to: Pid::atomic_service(NODE),
        opcode: Opcode::Read64.as_u8(),
        body: ReplyBody::Status(Response::ok(0)),
    };
    assert_eq!(t.handle(&service_reply.encode()), Outcome::Dropped(DropReason::FromServiceInterface));
    assert_eq!(t.svc.stats(), ServiceStats { requests: 0, errors: 0, dropped: 1 });
}

#[test]
fn release_domain_reclaims() {
    let mut t = T::new();
    let free = t.be.frames.free_count();
    t.alloc(ALICE, 2, Sharing::Shared);
    let b = t.alloc(BOB, 1, Sharing::Shared);
    t.alloc(ALICE, 1, Sharing::Shared);
    assert_eq!(t.svc.release_domain(ALICE.owner(), &mut t.be.frames), 3);
    assert_eq!(t.be.frames.free_count(), free - 1);
    assert_eq!(t.call(BOB, Opcode::Read64, b, 0, 0), Ok(0));
    assert!(t.svc.mmu().iter().all(|(p, e)| e.owner == BOB.owner() && p == GlobalAddress::from_raw(b).page()));
    let _ = GlobalPage::from_raw(0);
}
