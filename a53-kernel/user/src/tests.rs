//! The client against the fake service (`fake.rs`).

use proto::gsas::{ErrorCode, GlobalAddress, MailboxOpcode, Notification, Opcode, Pid, RawRequest, Response, Sharing};

use crate::client::{Gsas, offset};
use crate::error::{Error, ProtocolError, status};
use crate::fake::{FakeNet, WINDOW};

fn client(nodes: u16) -> Gsas<FakeNet> {
    Gsas::new(FakeNet::new(nodes), FakeNet::ME, 0, nodes, WINDOW)
}

#[test]
fn reads_writes_and_atomics_reach_the_named_node() {
    let mut g = client(3);
    let page = g.alloc_shared(1, 2, Sharing::Shared).unwrap();
    assert_eq!(page.node(), 2);
    g.write64(page, 0x1122_3344_5566_7788).unwrap();
    assert_eq!(g.read64(page).unwrap(), 0x1122_3344_5566_7788);
    assert_eq!(g.read32(offset(page, 4)).unwrap(), 0x1122_3344);
    assert_eq!(g.read8(offset(page, 7)).unwrap(), 0x11);
    g.write8(offset(page, 9), 0xab).unwrap();
    g.write32(offset(page, 12), 0xdead_beef).unwrap();
    assert_eq!(g.read64(offset(page, 8)).unwrap(), 0xdead_beef_0000_ab00);
    g.write128(offset(page, 16), 0x0102_0304_0506_0708_090a_0b0c_0d0e_0f10).unwrap();
    assert_eq!(g.read64(offset(page, 24)).unwrap(), 0x0102_0304_0506_0708);
    assert_eq!(g.fad64(page, -0x88).unwrap(), 0x1122_3344_5566_7788);
    assert!(!g.cas64(page, 1, 2).unwrap());
    assert!(g.cas64(page, 0x1122_3344_5566_7700, 5).unwrap());
    assert_eq!(g.swap64(page, 9).unwrap(), 5);
    assert_eq!(g.read64(page).unwrap(), 9);
    assert!(g.link().sent.iter().all(|r| GlobalAddress::from_raw(r.address).node() == 2));
    assert_eq!(g.stats().stray, 0);
}

#[test]
fn alloc_free_and_stale_addresses() {
    let mut g = client(2);
    let four = g.alloc_shared(4, 1, Sharing::Private).unwrap();
    assert_eq!(g.free_shared(offset(four, 4096)), Err(Error::Service(ErrorCode::BadArgument)));
    assert_eq!(g.free_shared(four).unwrap(), 4);
    assert_eq!(g.read64(four), Err(Error::Service(ErrorCode::Unmapped)));
    assert_eq!(g.link().services[1].pages(), 0);
}

#[test]
fn local_checks_send_nothing() {
    let mut g = client(2);
    let a = GlobalAddress::new(1, 0x1004).unwrap();
    assert_eq!(g.read64(a), Err(Error::Local(ErrorCode::Unaligned)));
    assert_eq!(g.write128(GlobalAddress::new(1, 0x1ff8).unwrap(), 0), Err(Error::Local(ErrorCode::Unaligned)));
    assert_eq!(g.alloc_shared(0, 1, Sharing::Shared), Err(Error::Local(ErrorCode::BadArgument)));
    assert_eq!(g.alloc_shared(257, 1, Sharing::Shared), Err(Error::Local(ErrorCode::BadArgument)));
    assert_eq!(g.read4k(a, &mut [0; 4096]), Err(Error::Local(ErrorCode::Unaligned)));
    assert_eq!(g.read64(GlobalAddress::new(2, 0x1000).unwrap()), Err(Error::NoSuchNode(2)));
    assert_eq!(g.alloc_shared(1, 64, Sharing::Shared), Err(Error::NoSuchNode(64)));
    assert_eq!(g.remote_spawn("x", proto::gsas::EMPTY_THREAD_ARGUMENT, 1), Err(Error::Local(ErrorCode::BadArgument)));
    assert_eq!(g.remote_spawn(&"y".repeat(256), 1, 1), Err(Error::Local(ErrorCode::BadArgument)));
    assert!(g.link().sent.is_empty());
}

#[test]
fn nacks_are_retried_with_the_same_packet() {
    let mut g = client(1);
    let page = g.alloc_shared(1, 0, Sharing::Shared).unwrap();
    g.link().nack = 5;
    assert_eq!(g.fad64(page, 1).unwrap(), 0);
    assert_eq!(g.read64(page).unwrap(), 1, "applied once");
    assert_eq!(g.stats().nacks, 5);
    assert_eq!(g.stats().requests, 3);
}

#[test]
fn a_target_that_never_takes_the_packet_times_out() {
    let mut g = client(1);
    g.set_timeout_us(10_000);
    g.link().nack = u32::MAX;
    assert_eq!(g.alloc_shared(1, 0, Sharing::Shared), Err(Error::Timeout));
}

#[test]
fn packets_from_anyone_but_the_target_service_are_skipped() {
    let mut g = client(2);
    let page = g.alloc_shared(1, 1, Sharing::Shared).unwrap();
    g.write64(page, 7).unwrap();
    let op = Opcode::Read64.as_u8();
    let forged = Response::ok(666);
    g.link().inject = std::vec![
        FakeNet::packet_from(Pid::new(1, 4, 0, 2).unwrap(), op, forged),
        FakeNet::packet_from(Pid::atomic_service(0), op, forged),
        FakeNet::packet_from(Pid::new(1, 0, 0, 1).unwrap(), op, forged),
    ];
    assert_eq!(g.read64(page).unwrap(), 7);
    assert_eq!(g.stats().stray, 3);
}

#[test]
fn a_reply_with_another_opcode_is_an_error_and_the_mailbox_is_emptied_after() {
    let mut g = client(1);
    let page = g.alloc_shared(1, 0, Sharing::Shared).unwrap();
    g.link().wrong_opcode = Some(Opcode::Read8.as_u8());
    let expected = Opcode::Read64.as_u8();
    assert_eq!(g.read64(page), Err(Error::Protocol(ProtocolError::OpcodeMismatch { expected, got: 0x01 })));
    g.link().duplicate = true;
    assert_eq!(g.fad64(page, 1).unwrap(), 0);
    // The duplicate is a genuine reply nobody asked for: the next request sees it first.
    let got = g.read64(page);
    assert_eq!(got, Err(Error::Protocol(ProtocolError::OpcodeMismatch { expected, got: Opcode::Fad.as_u8() })));
    assert_eq!(g.read64(page).unwrap(), 1);
    assert!(g.stats().drained >= 1);
}

#[test]
fn a_lost_reply_times_out_and_its_late_arrival_is_drained() {
    let mut g = client(1);
    let page = g.alloc_shared(1, 0, Sharing::Shared).unwrap();
    g.set_timeout_us(1000);
    g.link().lose = 1;
    assert_eq!(g.read64(page), Err(Error::Timeout));
    // The late reply arrives before the next request.
    let late = FakeNet::packet_from(Pid::atomic_service(0), Opcode::Read64.as_u8(), Response::ok(55));
    g.link().mif.extend(hal::packetizer::words128(&late));
    g.write64(page, 3).unwrap();
    assert_eq!(g.read64(page).unwrap(), 3);
    assert_eq!(g.stats().drained, 1);
}

#[test]
fn read4k_assembles_the_page_and_checks_the_order() {
    let mut g = client(2);
    let page = g.alloc_shared(1, 1, Sharing::Shared).unwrap();
    for i in 0..256u64 {
        let v = u128::from(i) * 0x0101_0101_0101_0101_0101_0101_0101_0101;
        g.write128(offset(page, 16 * i), v).unwrap();
    }
    let mut buf = [0u8; 4096];
    // 514 words do not fit a 512-word mailbox: the service delivers the rest as room frees.
    assert_eq!(g.read4k(page, &mut buf).unwrap(), 4096);
    assert!(buf.iter().enumerate().all(|(i, &b)| b == (i / 16) as u8));
    g.link().reorder = true;
    let got = g.read4k(page, &mut buf);
    assert_eq!(got, Err(Error::Protocol(ProtocolError::ChunkOrder { expected: 3, got: 4 })));
    g.link().reorder = false;
    assert_eq!(g.read64(offset(page, 16)).unwrap(), 0x0101_0101_0101_0101, "the rest was drained");
    assert_eq!(g.read4k(offset(page, 4096), &mut buf), Err(Error::Service(ErrorCode::Unmapped)));
}

#[test]
fn a_pipeline_of_300_reads_gets_each_reply_once() {
    let mut g = client(2);
    let page = g.alloc_shared(1, 1, Sharing::Shared).unwrap();
    for i in 0..300 {
        g.write64(offset(page, 8 * i), 0xf100_d000 + i).unwrap();
    }
    let mut p = g.pipeline(1).unwrap();
    for i in 0..300 {
        p.post(Opcode::Read64, offset(page, 8 * i), 0, 0).unwrap();
    }
    assert_eq!(p.outstanding(), 300);
    // 300 replies, room for 256: the mailbox is full and the rest wait at the service.
    assert_eq!(p.wait_until_full(1000), Ok(()));
    let mut seen = [false; 300];
    for _ in 0..300 {
        let (op, r) = p.collect().unwrap();
        assert_eq!((op, r.error), (Opcode::Read64.as_u8(), None));
        let i = (r.result - 0xf100_d000) as usize;
        assert!(!seen[i]);
        seen[i] = true;
    }
    assert_eq!(p.collect_within(100), Err(Error::Timeout));
    assert_eq!(p.wait_until_full(1000), Err(Error::Timeout), "an empty mailbox never fills by itself");
    assert_eq!(p.post(Opcode::Read4K, page, 0, 0), Err(Error::Unsupported));
    drop(p);
    assert!(seen.iter().all(|&s| s));
}

#[test]
fn remote_spawn_writes_the_description_and_frees_its_page() {
    let mut g = client(2);
    assert_eq!(g.remote_spawn("spawn-tree", 0x33, 1).unwrap(), 1);
    let s = &g.link().services[1];
    assert_eq!(s.spawned, std::vec![("spawn-tree".into(), 0x33)]);
    assert_eq!(s.pages(), 0);
    assert_eq!(g.stats().leaked, 0);
}

#[test]
fn raw_calls_return_the_service_answer_and_forged_senders_are_replaced() {
    let mut g = client(2);
    let page = g.alloc_shared(1, 1, Sharing::Private).unwrap();
    let forged = Pid::new(1, 1, 0, 1).unwrap();
    let raw = RawRequest { sender: forged, reserved: 0, opcode: 0x13, address: page.raw(), arg1: 1, arg2: 0 };
    assert_eq!(g.call_raw(1, &raw).unwrap(), Response::ok(0));
    let net = g.link();
    assert_eq!(net.sent.last().unwrap().sender, net.me, "the hardware prefix wins");
    let bad = RawRequest { opcode: 0x77, ..raw };
    assert_eq!(g.call_raw(1, &bad).unwrap(), Response::err(ErrorCode::BadOpcode));
}

#[test]
fn notify_carries_the_notification() {
    let mut g = client(2);
    let n = Notification::new(MailboxOpcode::new(9).unwrap(), 0x1234).unwrap();
    g.notify(1, n).unwrap();
    let net = g.link();
    assert_eq!(net.services[1].notified, std::vec![(net.me, n)]);
}

#[test]
fn exit_statuses_are_distinct_and_below_a_page() {
    use proto::syscall::Error as Sys;
    let mut all = std::vec![
        Error::Timeout,
        Error::Illegal,
        Error::Overwritten,
        Error::NoSuchNode(1),
        Error::NoArgument,
        Error::Busy,
        Error::Unsupported,
        Error::UnknownReturn(-99),
    ];
    for code in ErrorCode::ALL {
        all.extend([Error::Service(code), Error::Local(code)]);
    }
    for e in [Sys::BadArgument, Sys::BadPointer, Sys::NoSuchCall, Sys::WouldBlock, Sys::Busy, Sys::NotRegistered] {
        all.push(Error::Syscall(e));
    }
    all.extend(
        [
            ProtocolError::OpcodeMismatch { expected: 1, got: 2 },
            ProtocolError::UnexpectedData,
            ProtocolError::ChunkOrder { expected: 0, got: 1 },
            ProtocolError::MissingData { chunks: 0 },
            ProtocolError::BadReply(proto::gsas::ReplyError::ReservedNotZero),
            ProtocolError::BadResult(0),
            ProtocolError::BadNotification(0),
            ProtocolError::BadInterface,
        ]
        .map(Error::Protocol),
    );
    let mut statuses: std::vec::Vec<u64> = all.iter().map(|e| e.exit_status()).collect();
    assert!(statuses.iter().all(|&s| (status::SERVICE..0x1000).contains(&s)));
    statuses.sort_unstable();
    statuses.dedup();
    assert_eq!(statuses.len(), all.len());
    assert_eq!(Error::Service(ErrorCode::PermissionDenied).exit_status(), 0x104);
    assert_eq!(Error::Syscall(Sys::WouldBlock).exit_status(), 0x204);
    assert_eq!(Error::from(Sys::TimedOut), Error::Timeout);
}

/// A program in `src/bin` without its `[[bin]]` entry would be built for the host by
/// `cargo test` (and fail to link) and left out of the kernel's images.
#[test]
fn every_program_is_declared_as_an_image_only_binary() {
    let manifest = include_str!("../Cargo.toml");
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/bin");
    for entry in std::fs::read_dir(dir).unwrap() {
        let file = entry.unwrap().file_name().into_string().unwrap();
        let name = file.strip_suffix(".rs").unwrap();
        let declared = format!(
            "[[bin]]\nname = \"{name}\"\npath = \"src/bin/{file}\"\nrequired-features = [\"image\"]\ntest = false\n"
        );
        assert!(manifest.contains(&declared), "Cargo.toml does not declare {name} as the others are");
    }
}

#[test]
fn a_dead_node_is_unreachable_at_once_not_after_the_timeout() {
    let mut g = client(3);
    let page = g.alloc_shared(1, 2, Sharing::Shared).unwrap();
    let other = g.alloc_shared(1, 1, Sharing::Shared).unwrap();
    g.link().dead.push(2);
    let before = g.link().now;
    assert_eq!(g.fad64(page, 1), Err(Error::NodeUnreachable(2)));
    assert_eq!(
        g.notify(2, Notification::new(MailboxOpcode::new(9).unwrap(), 1).unwrap()),
        Err(Error::NodeUnreachable(2))
    );
    assert!(g.link().now - before < 1000, "no retries, no waiting");
    assert_eq!(g.fad64(other, 1), Ok(0), "the other nodes still answer");
    assert_eq!(Error::NodeUnreachable(2).exit_status(), status::NODE_UNREACHABLE);
}

#[test]
fn a_node_that_dies_after_accepting_a_request_ends_the_wait_with_unreachable() {
    let mut g = client(3);
    g.set_timeout_us(60_000_000);
    let page = g.alloc_shared(1, 1, Sharing::Shared).unwrap();
    g.link().dies_after_accepting = Some(1);
    let before = g.link().now;
    assert_eq!(g.fad64(page, 1), Err(Error::NodeUnreachable(1)));
    assert_eq!(g.link().unreachable_waits, 1);
    assert!(g.link().now - before < 1000, "not the 60 s timeout");
}

#[test]
fn a_late_reply_to_an_earlier_holder_of_the_interface_is_skipped() {
    let mut g = client(2);
    let page = g.alloc_shared(1, 1, Sharing::Shared).unwrap();
    g.write64(page, 7).unwrap();
    // The same interface (3), an earlier generation: a process that timed out and exited.
    let earlier = Pid::new(0, 4, 0, 3).unwrap();
    let late = FakeNet::packet_for(earlier, Pid::atomic_service(1), Opcode::Read64.as_u8(), Response::ok(666));
    g.link().inject = std::vec![late];
    assert_eq!(g.read64(page).unwrap(), 7);
    assert_eq!(g.stats().stray, 1);
}

#[test]
fn process_atomics_apply_every_op_at_both_widths_on_the_named_node() {
    use proto::gsas::{VaOp, VaWidth};
    let mut g = client(3);
    let va = 0x20_0000_1000u64;
    g.link().services[2].map_process_page(va);
    let mut call = |op, width, a1, a2| g.va_atomic(op, width, 2, va, a1, a2);
    assert_eq!(call(VaOp::Set, VaWidth::W64, 0xf0f0_0000_0000_00ff, 0), Ok(0));
    assert_eq!(call(VaOp::Fetch, VaWidth::W64, 0, 0), Ok(0xf0f0_0000_0000_00ff));
    assert_eq!(call(VaOp::Fetch, VaWidth::W32, 0, 0), Ok(0xff), "the low half, zero-extended");
    assert_eq!(call(VaOp::FetchAdd, VaWidth::W32, 0xffff_ff01, 0), Ok(0xff));
    assert_eq!(call(VaOp::Fetch, VaWidth::W64, 0, 0), Ok(0xf0f0_0000_0000_0000), "32-bit add wraps in its half");
    assert_eq!(call(VaOp::CompareSwap, VaWidth::W64, 1, 2), Ok(0xf0f0_0000_0000_0000), "no match: kept");
    assert_eq!(call(VaOp::CompareSwap, VaWidth::W64, 0xf0f0_0000_0000_0000, 6), Ok(0xf0f0_0000_0000_0000));
    assert_eq!(call(VaOp::Swap, VaWidth::W64, 0b1100, 0), Ok(6));
    assert_eq!(call(VaOp::FetchAnd, VaWidth::W64, 0b1010, 0), Ok(0b1100));
    assert_eq!(call(VaOp::FetchOr, VaWidth::W64, 0b0001, 0), Ok(0b1000));
    assert_eq!(call(VaOp::FetchXor, VaWidth::W64, 0b1111, 0), Ok(0b1001));
    assert_eq!(call(VaOp::FetchAdd, VaWidth::W64, u64::MAX, 0), Ok(0b0110), "wrapping add of -1");
    assert_eq!(g.link().services[2].process_word(va), 0b0101);
    let sent = g.link().sent.clone();
    assert!(sent.iter().all(|r| GlobalAddress::from_raw(r.address) == GlobalAddress::new(2, va).unwrap()));
    assert_eq!(sent[1].opcode, 0x50);
    assert_eq!(sent[2].opcode, 0x58);
    assert_eq!(sent.iter().filter(|r| r.opcode == 0x50).map(|r| (r.arg1, r.arg2)).next(), Some((0, 0)));
}

#[test]
fn process_atomics_refused_here_or_there_say_why() {
    use proto::gsas::{VaOp, VaWidth};
    let mut g = client(3);
    let va = 0x20_0000_2000u64;
    g.link().services[1].map_process_page(va);
    let local = |c| Err(Error::Local(c));
    assert_eq!(g.va_atomic(VaOp::Fetch, VaWidth::W64, 1, va + 4, 0, 0), local(ErrorCode::Unaligned));
    assert_eq!(g.va_atomic(VaOp::Fetch, VaWidth::W32, 1, va + 2, 0, 0), local(ErrorCode::Unaligned));
    assert_eq!(g.va_atomic(VaOp::Set, VaWidth::W32, 1, va, 1 << 32, 0), local(ErrorCode::BadArgument));
    assert_eq!(g.va_atomic(VaOp::CompareSwap, VaWidth::W32, 1, va, 0, 1 << 32), local(ErrorCode::BadArgument));
    assert_eq!(g.va_atomic(VaOp::Fetch, VaWidth::W64, 1, 1 << 48, 0, 0), local(ErrorCode::BadArgument));
    assert_eq!(g.va_atomic(VaOp::Fetch, VaWidth::W64, 3, va, 0, 0), Err(Error::NoSuchNode(3)));
    assert!(g.link().sent.is_empty(), "nothing refused locally was sent");
    assert_eq!(g.va_atomic(VaOp::Fetch, VaWidth::W64, 2, va, 0, 0), Err(Error::Service(ErrorCode::NoProcess)));
    assert_eq!(g.va_atomic(VaOp::Fetch, VaWidth::W64, 1, va + 4096, 0, 0), Err(Error::Service(ErrorCode::Unmapped)));
    assert_eq!(g.va_atomic(VaOp::FetchAdd, VaWidth::W32, 1, va + 4, 7, 0), Ok(0));
    assert_eq!(g.link().services[1].process_word(va), 7 << 32);
}
