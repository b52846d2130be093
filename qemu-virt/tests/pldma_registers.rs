//! The PLDMA's registers and its refusals (`docs/hw/pldma.md`): offsets and sizes, starting
//! the engine, doorbells wired to their PD, the completion interrupt, malformed descriptors and
//! packets, a full event ring, disabled PDs, and doorbell suppression.

mod common;

use board::pl::PLDMA_BASE;
use common::*;
use hal::pldma::codes::{NackCode, RefusalCode};
use hal::pldma::descriptor::{Attempt, Descriptor, RawDescriptor, WriteKind};
use hal::pldma::event::{Event, TxnRef};
use hal::pldma::packet::{HEADER_BYTES, MAX_BYTES, Packet, RawHeader, Route};
use hal::pldma::regs::{BLOCK_SIZE, Counter, ID_VALUE, caps_value};
use hal::pldma::{Pd, packet};
use proto::forward::Status;
use qemu_virt::interconnect::{Datagram, channel};
use std::sync::atomic::Ordering;
use std::time::Duration;

const WAIT: Duration = LONG;
const QUIET: Duration = Duration::from_millis(100);
const CQ: u32 = 1 << 2;
const EVENTS_LOST: u32 = 1 << 3;
const DESC_REFUSED: u32 = 1 << 4;

fn pd(n: u16) -> Pd {
    Pd::new(n).unwrap()
}

fn write(attempt: Attempt, node: u16, len: u32) -> Descriptor {
    Descriptor::WriteBlock { vc: 0, attempt, node, src: BUFFERS, dst: BUFFERS, len, kind: WriteKind::Write }
}

fn attempt(p: u16, tid: u16) -> Attempt {
    Attempt { pd: pd(p), tid, seq: 0, first_seq: 0 }
}

#[test]
fn registers_sit_where_the_doc_says() {
    let rig = Rig::clean(2);
    assert_eq!(board::pl::PLDMA_SIZE, BLOCK_SIZE, "the board's window is the hal block");
    assert_eq!(rig.reg(1, PLDMA_BASE), ID_VALUE);
    assert_eq!(rig.reg(1, PLDMA_BASE + 4), caps_value());
    assert_eq!(rig.reg(1, NODE), 1);
    assert_eq!(rig.read(0, PLDMA_BASE + 0x034, 4), Err(Status::Unmapped), "reserved");
    assert_eq!(rig.read(0, PLDMA_BASE + 0x0c0, 4), Err(Status::Unmapped), "past the counters");
    assert_eq!(rig.read(0, PLDMA_BASE + 0x2000, 4), Ok(0), "the active page (active-access.md): log 0's ctrl");
    assert_eq!(rig.read(0, PLDMA_BASE + 0x3000, 8), Ok(0), "the apt page: entry 0's tag");
    assert_eq!(rig.read(0, PLDMA_BASE + 0x4000, 4), Err(Status::Unmapped), "between the apt and PD pages");
    assert_eq!(rig.read(0, CTRL, 8), Err(Status::Rejected), "32-bit registers take 4 bytes");
    assert_eq!(rig.write(0, PLDMA_BASE, 4, 0), Err(Status::Rejected), "id is read-only");
    assert_eq!(rig.write(0, PD_BUSY, 4, 0), Err(Status::Rejected), "pd_busy is read-only");
    assert_eq!(rig.write(0, COUNTERS, 8, 0), Err(Status::Rejected), "counters are read-only");
    assert_eq!(rig.read(0, FIFO_LO, 4), Err(Status::Rejected), "fifo_lo is 8 or 16 bytes");
    assert_eq!(rig.write(0, FIFO_LO, 8, 0), Err(Status::Rejected));
    assert_eq!(rig.read(0, FIFO_LO, 16), Ok(0), "an empty FIFO reads VALID = 0");
    for p in 0..16u16 {
        assert_eq!(rig.reg(0, pd_page(p, 0x10)), u32::from(p), "PD page {p} names its PD");
    }
    assert_eq!(rig.read(0, pd_page(0, 0x20), 4), Err(Status::Unmapped), "a PD page has six registers");
    assert_eq!(rig.read(0, pd_page(0, PD_EVENTS_LOST), 4), Ok(0));
    assert_eq!(rig.read(0, pd_page(0, PD_RAPF_REFUSED), 4), Ok(0));
    assert_eq!(rig.write(0, pd_page(0, PD_EVENTS_LOST), 4, 1), Err(Status::Rejected), "read-only");
    assert_eq!(rig.read(0, pd_page(0, PD_RAPF), 4), Err(Status::Rejected), "rapf is one 8-byte write");
    assert_eq!(rig.write(0, pd_page(0, 0x10), 4, 1), Err(Status::Rejected), "pd is read-only");
    assert_eq!(rig.read(0, pd_page(0, PD_DOORBELL), 4), Ok(0), "write-only registers read 0");
    // Counters: 8 bytes, or either 4-byte half (the R5's LDRD).
    let mut a = rig.r5(0);
    let _b = rig.r5(1);
    a.post(&write(attempt(0, 1), 1, 16));
    assert!(matches!(a.event(WAIT), Some(Event::Ack { .. })));
    let descriptors = COUNTERS + 8 * Counter::Descriptors.index() as u64;
    assert_eq!(rig.read(0, descriptors, 8), Ok(1));
    assert_eq!(rig.read(0, descriptors, 4), Ok(1));
    assert_eq!(rig.read(0, descriptors + 4, 4), Ok(0));
    assert_eq!(rig.read(0, descriptors + 2, 4), Err(Status::Rejected));
}

#[test]
fn the_engine_refuses_rings_it_cannot_use() {
    let rig = Rig::clean(1);
    rig.write(0, RINGS_LO, 4, 0x10_0040).unwrap();
    rig.write(0, CTRL, 4, 1).unwrap();
    assert_eq!(rig.reg(0, CTRL), 0b10, "misaligned: ERROR, not enabled");
    rig.write(0, RINGS_LO, 4, 0).unwrap();
    rig.write(0, RINGS_HI, 4, 1).unwrap();
    rig.write(0, CTRL, 4, 1).unwrap();
    assert_eq!(rig.reg(0, CTRL), 0b10, "outside memory");
    rig.write(0, RINGS_HI, 4, 0).unwrap();
    rig.write(0, RINGS_LO, 4, u128::from(RINGS as u32)).unwrap();
    rig.write(0, CTRL, 4, 1).unwrap();
    assert_eq!(rig.reg(0, CTRL), 1, "enabled, ERROR cleared");
    rig.write(0, RINGS_LO, 4, 0x30_0000).unwrap();
    assert_eq!(rig.reg(0, RINGS_LO), RINGS as u32, "the rings do not move while enabled");
}

#[test]
fn doorbells_are_wired_to_their_pd_and_coalesced() {
    let rig = Rig::clean(1);
    let mut a = rig.r5(0);
    rig.r5_sleeps(0);
    rig.write(0, pd_page(7, PD_DOORBELL), 4, 5).unwrap();
    rig.write(0, pd_page(7, PD_DOORBELL), 4, 6).unwrap();
    rig.write(0, pd_page(9, PD_DOORBELL), 4, 1).unwrap();
    // The engine takes its inbox in order: once PD 9's event is out, PD 7's second ring has been
    // seen too. Reading before that would let the second ring find the first one read.
    assert!(eventually(LONG, || rig.counter(0, Counter::EventsPosted) >= 2), "the engine took the rings");
    let events = a.events(2, QUIET);
    assert!(events.contains(&Event::Doorbell { pd: pd(9), value: 1 }));
    assert!(events.contains(&Event::Doorbell { pd: pd(7), value: 5 }), "the first ring's; the second is merged");
    assert_eq!(rig.r5_woken_by_engine(0), 1, "the sleeping R5 was woken, once for its sleep");
    rig.write(0, pd_page(7, PD_DOORBELL), 4, 7).unwrap();
    assert_eq!(a.event(WAIT), Some(Event::Doorbell { pd: pd(7), value: 7 }), "read, so a new one");
    rig.write(0, PD_ENABLE, 4, 0xffff & !(1 << 7)).unwrap();
    rig.write(0, pd_page(7, PD_DOORBELL), 4, 8).unwrap();
    assert_eq!(rig.reg(0, pd_page(7, PD_STATUS)), 0b10, "refused: PD 7 is disabled");
    assert_eq!(a.event(QUIET), None);
    assert_eq!(rig.counter(0, Counter::Doorbells), 4);
}

#[test]
fn cq_notify_raises_the_completion_interrupt() {
    let rig = Rig::clean(1);
    let _a = rig.r5(0);
    rig.write(0, IRQ_ENABLE, 4, u128::from(CQ)).unwrap();
    rig.write(0, CQ_NOTIFY, 4, 3).unwrap();
    rig.write(0, CQ_NOTIFY, 4, 16).unwrap();
    assert_eq!(rig.reg(0, CQ_PENDING), 1 << 3, "a PD number sets its bit; others are ignored");
    assert_eq!(rig.reg(0, IRQ_STATUS), CQ | (1 << 3) << 16, "irq_status carries a copy of cq_pending");
    assert!(rig.line_raised(0, board::pl::irq_line::PLDMA));
    rig.write(0, IRQ_ENABLE, 4, u128::from(u32::MAX)).unwrap();
    assert_eq!(rig.reg(0, IRQ_ENABLE), 0xffff, "the cq_pending copy is no cause to enable");
    rig.write(0, CQ_PENDING, 4, 1 << 3).unwrap();
    assert_eq!(rig.reg(0, CQ_PENDING), 0);
    assert_eq!(rig.reg(0, IRQ_STATUS), 0, "the level cause and the copy follow cq_pending");
}

#[test]
fn malformed_descriptors_are_refused_with_typed_codes_and_the_ring_goes_on() {
    let rig = Rig::clean(2);
    let (mut a, _b) = (rig.r5(0), rig.r5(1));
    rig.write(0, PD_ENABLE, 4, 0xffff & !(1 << 2)).unwrap();
    let mut bad_op = write(attempt(0, 1), 1, 16).encode();
    bad_op.op = 9;
    let mut bad_window = write(attempt(0, 2), 1, 16).encode();
    bad_window.dst = BUFFERS + 16380;
    let cases: [(RawDescriptor, RefusalCode); 4] = [
        (bad_op, RefusalCode::Malformed),
        (bad_window, RefusalCode::Malformed),
        (write(attempt(2, 3), 1, 16).encode(), RefusalCode::PdDisabled),
        (write(attempt(0, 4), 5, 16).encode(), RefusalCode::NoRoute),
    ];
    for (raw, _) in &cases {
        a.post_raw(raw);
    }
    for (position, (raw, code)) in cases.iter().enumerate() {
        assert_eq!(
            a.event(WAIT),
            Some(Event::DescRefused { code: *code, position: position as u16, pd: raw.pd, tid: raw.tid, seq: raw.seq })
        );
    }
    assert_eq!(rig.reg(0, IRQ_STATUS) & DESC_REFUSED, DESC_REFUSED);
    a.post(&write(attempt(0, 5), 1, 16));
    assert!(matches!(a.event(WAIT), Some(Event::Ack { txn: TxnRef { tid: 5, .. }, .. })), "the next one works");
    assert_eq!(rig.counter(0, Counter::Malformed), 4);
}

fn inject(rig: &Rig, src: usize, dst: usize, payload: Vec<u8>) {
    rig.fabric.interconnect.send(Datagram { src, dst, channel: channel::PLDMA, payload });
}

fn encoded(p: &Packet<'_>) -> Vec<u8> {
    let mut b = [0u8; MAX_BYTES];
    let n = p.encode(&mut b);
    b[..n].to_vec()
}

#[test]
fn malformed_and_spoofed_packets_are_counted_and_dropped() {
    let rig = Rig::clean(3);
    let (mut a, _b, _c) = (rig.r5(0), rig.r5(1), rig.r5(2));
    let txn = TxnRef { pd: pd(1), tid: 9, seq: 9 };
    let ack = |src, owner| Packet::Ack { route: Route { src, owner }, txn };
    let mut bad_magic = encoded(&ack(1, 0));
    bad_magic[0] = 0;
    let mut unknown_kind = encoded(&ack(1, 0));
    unknown_kind[1] = 0x77;
    let mut long_ack = encoded(&ack(1, 0));
    long_ack.push(0);
    let mut header = RawHeader::from_bytes(&encoded(&ack(1, 0))).unwrap();
    header.tid = 0x4000;
    let garbage: [Vec<u8>; 8] = [
        vec![],
        vec![0x50; HEADER_BYTES - 1],
        bad_magic,
        unknown_kind,
        long_ack,
        header.to_bytes().to_vec(),
        // Claims to come from node 2, arrives from node 1: spoofed.
        encoded(&ack(2, 0)),
        // An ACK for node 2's transaction delivered to node 0.
        encoded(&ack(1, 2)),
    ];
    let n = garbage.len() as u64;
    for g in garbage {
        inject(&rig, 1, 0, g);
    }
    // A well-formed one still gets through: the engine does no bookkeeping for the R5, which
    // checks the transaction itself.
    inject(&rig, 1, 0, encoded(&ack(1, 0)));
    assert_eq!(a.event(WAIT), Some(Event::Ack { node: 1, txn }));
    assert_eq!(a.event(QUIET), None);
    assert_eq!(rig.counter(0, Counter::Malformed), n);
    assert_eq!(packet::decode(&[]), Err(packet::PacketError::Short(0)));
}

/// `docs/hw/pldma.md`, "Each PD's share of the event ring": a PD whose events flood the ring
/// (600 refused descriptors) fills its reserve and the shared half, then loses its own events,
/// counted for it; another PD still posts within its reserve.
#[test]
fn a_pd_that_floods_the_event_ring_loses_only_its_own_events() {
    let rig = Rig::clean(1);
    let mut a = rig.r5(0);
    let mut bad = write(attempt(0, 0), 0, 16).encode();
    bad.op = 0;
    for _ in 0..3 {
        for _ in 0..200 {
            a.post_raw(&bad);
        }
        assert!(eventually(LONG, || a.rings.desc.is_empty()));
    }
    let handled = || rig.counter(0, Counter::EventsPosted) + rig.counter(0, Counter::EventsLost);
    assert!(eventually(LONG, || handled() == 600));
    let share = 512 / 2 + 512 / 2 / 16;
    assert_eq!(rig.counter(0, Counter::EventsPosted), share, "PD 0's reserve and the shared half");
    assert_eq!(rig.counter(0, Counter::EventsLost), 600 - share);
    assert_eq!(rig.reg(0, pd_page(0, PD_EVENTS_LOST)), 600 - share as u32, "counted for PD 0");
    assert_eq!(rig.reg(0, IRQ_STATUS) & EVENTS_LOST, EVENTS_LOST);
    rig.write(0, pd_page(7, PD_DOORBELL), 4, 1).unwrap();
    assert!(eventually(LONG, || rig.counter(0, Counter::EventsPosted) == share + 1), "PD 7 still posts");
    assert_eq!(rig.reg(0, pd_page(7, PD_EVENTS_LOST)), 0);
    let events = a.events(share as usize + 1, Duration::ZERO);
    assert_eq!(events.last(), Some(&Event::Doorbell { pd: pd(7), value: 1 }));
    rig.write(0, IRQ_STATUS, 4, u128::from(EVENTS_LOST)).unwrap();
    assert_eq!(rig.reg(0, IRQ_STATUS) & EVENTS_LOST, 0);
}

#[test]
fn a_pd_without_a_process_at_the_target_is_nacked() {
    let rig = Rig::clean(2);
    let (mut a, _b) = (rig.r5(0), rig.r5(1));
    rig.write(1, PD_ENABLE, 4, 0xffff & !(1 << 2)).unwrap();
    a.post(&write(attempt(2, 1), 1, 300));
    let txn = TxnRef { pd: pd(2), tid: 1, seq: 0 };
    let nacks = a.events(2, QUIET);
    assert_eq!(nacks, [0, 1].map(|index| Event::Nack { node: 1, txn, index, code: NackCode::NoPd }));
    a.post(&Descriptor::ReadRequest { vc: 0, attempt: attempt(2, 2), node: 1, src: 0, dst: BUFFERS, len: 8 });
    let txn = TxnRef { tid: 2, ..txn };
    assert_eq!(a.event(WAIT), Some(Event::Nack { node: 1, txn, index: 0, code: NackCode::NoPd }));
}

#[test]
fn an_idle_engine_sleeps_until_its_doorbell() {
    let rig = Rig::clean(2);
    let (mut a, _b) = (rig.r5(0), rig.r5(1));
    assert!(eventually(LONG, || a.rings.engine_idle.load(Ordering::SeqCst) == 1), "an idle engine says so");
    // A descriptor published without the doorbell waits...
    a.queue_raw(&write(attempt(0, 1), 1, 16).encode());
    assert_eq!(a.event(QUIET), None);
    assert_eq!(a.rings.desc.len(), 1);
    // ...until the doorbell the poster asks for.
    a.kick_if_asked();
    assert_eq!(a.kicks, 1);
    assert!(matches!(a.event(WAIT), Some(Event::Ack { .. })));
}

#[test]
fn a_stopped_engine_takes_nothing_and_drops_packets() {
    let rig = Rig::clean(2);
    let (mut a, _b) = (rig.r5(0), rig.r5(1));
    rig.write(1, CTRL, 4, 0).unwrap();
    a.post(&write(attempt(0, 1), 1, 16));
    assert_eq!(a.event(QUIET), None, "the target's engine is off: no ACK");
    assert_eq!(rig.counter(1, Counter::AcksSent), 0);
    rig.write(0, CTRL, 4, 0).unwrap();
    a.queue_raw(&write(attempt(0, 2), 1, 16).encode());
    rig.write(0, DESC_DOORBELL, 4, 1).unwrap();
    std::thread::sleep(QUIET);
    assert_eq!(a.rings.desc.len(), 1, "a stopped engine takes no descriptor");
    // Restarting drops what the ring held.
    rig.write(0, CTRL, 4, 1).unwrap();
    assert_eq!(a.rings.desc.len(), 0);
}
