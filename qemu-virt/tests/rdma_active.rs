//! Active Access end to end on the host (`docs/hw/active-access.md`): the real R5 scheduler
//! (`r5_firmware::rdma`) of each node drives its engine model, so the back-pressure of a full log
//! is what the initiator's R5 makes of a packet the target did not take: its timeout sends it
//! again until the owner's handler made room, and a log nobody drains ends the transfer with a
//! Timeout completion: nothing is lost, nothing hangs.

mod common;

use board::pl::PLDMA_BASE;
use common::node::Node;
use common::*;
use core::mem::{offset_of, size_of};
use hal::pldma::Pd;
use hal::pldma::active::{
    APT_WAYS, ActiveRegisters, AptEntry, Attr, EntryKind, LogCtrl, LogRegisters, Reader, apt_set, apt_tag, header,
};
use hal::pldma::regs::{ACTIVE_OFFSET, APT_OFFSET};
use proto::rdma::queue::{Cqe, CqeStatus, Direction, Wqe};
use std::time::{Duration, Instant};

const PD: u16 = 3;
const RING: u64 = 0xC0_0000;
const HDR: u64 = 0xC8_0000;
/// 16 granules: one 256 B put with its data takes 9.
const SIZE_LOG2: u32 = 4;

fn log_reg(field: usize) -> u64 {
    PLDMA_BASE + ACTIVE_OFFSET + (offset_of!(ActiveRegisters, logs) + 2 * size_of::<LogRegisters>() + field) as u64
}

/// Log 2 of node 1 for PD 3, and the page at `page` of PD 3 marked for active puts into it.
fn set_up(rig: &Rig, page: u64) {
    rig.fill(1, HDR, &[0; 0xc0]);
    rig.write(1, log_reg(offset_of!(LogRegisters, base)), 8, u128::from(RING)).unwrap();
    rig.write(1, log_reg(offset_of!(LogRegisters, header)), 8, u128::from(HDR)).unwrap();
    let ctrl = LogCtrl { valid: true, notify: false, pd: PD as u8, size_log2: SIZE_LOG2 }.encode();
    rig.write(1, log_reg(offset_of!(LogRegisters, ctrl)), 4, u128::from(ctrl)).unwrap();
    let attr = Attr { wl: true, wld: true, e: true, iuid: 2, ..Attr::default() };
    let at = PLDMA_BASE + APT_OFFSET + (apt_set(page) * APT_WAYS * size_of::<AptEntry>()) as u64;
    rig.write(1, at + offset_of!(AptEntry, attr) as u64, 4, u128::from(attr.encode())).unwrap();
    rig.write(1, at + offset_of!(AptEntry, tag) as u64, 8, u128::from(apt_tag(Pd::new(PD).unwrap(), page))).unwrap();
}

fn word(rig: &Rig, at: u64) -> u32 {
    u32::from_le_bytes(rig.bytes(1, at, 4).try_into().unwrap())
}

/// The owner's handler: takes every entry, returns each put's data.
fn drain(rig: &Rig) -> Vec<Vec<u8>> {
    let ring = rig.bytes(1, RING, 32 << SIZE_LOG2);
    let (produced, consumed) = (word(rig, HDR + header::PRODUCED), word(rig, HDR + header::CONSUMED));
    let mut r = Reader::new(&ring, produced, consumed);
    let mut out = Vec::new();
    while let Some(e) = r.next_entry().expect("the engine writes well-formed entries") {
        assert_eq!(e.header.kind, EntryKind::Put);
        out.push(e.data.to_vec());
    }
    rig.fill(1, HDR + header::CONSUMED, &r.consumed().to_le_bytes());
    out
}

fn put(node: u16, len: u32, local: u64, remote: u64, tag: u64) -> Wqe {
    Wqe { direction: Direction::Write, node, len, local, remote, tag, notify: None }
}

#[test]
fn a_full_log_is_retried_by_the_initiators_r5_until_drained_and_nothing_is_lost() {
    let rig = Rig::clean(2);
    let mut nodes = [Node::with_timeout(&rig, 0, 2_000), Node::with_timeout(&rig, 1, 2_000)];
    let p0 = nodes[0].register(PD);
    let _p1 = nodes[1].register(PD);
    let page = nodes[1].buffer(1);
    set_up(&rig, page);
    // Four puts of 256 B, one page apart on the source: the log holds one at a time.
    let mut sent = Vec::new();
    for k in 0..4u64 {
        let data = pattern(k, 256);
        rig.fill(0, nodes[0].buffer(0) + k * 4096, &data);
        sent.push(data);
        assert!(p0.submit(&put(1, 256, nodes[0].buffer(0) + k * 4096, page + (k % 16) * 256, k)));
    }
    let (mut got, mut cqes) = (Vec::new(), Vec::new());
    let until = Instant::now() + LONG * 3;
    while cqes.len() < 4 {
        assert!(Instant::now() < until, "the puts did not complete");
        for n in nodes.iter_mut() {
            n.step();
        }
        cqes.extend(p0.completions());
        // A slow handler: it looks every few milliseconds.
        std::thread::sleep(Duration::from_millis(3));
        got.extend(drain(&rig));
    }
    got.extend(drain(&rig));
    for c in &cqes {
        assert!(matches!(c, Cqe::Local { status: CqeStatus::Ok, .. }), "{c:?}");
    }
    got.sort();
    sent.sort();
    assert_eq!(got, sent, "every put logged once, with its bytes");
    assert!(word(&rig, HDR + header::FULL) > 0, "the log was full at least once");
    assert!(nodes[0].scheduler.stats().timeout_retransmits > 0, "the refused puts were resent by the R5's timeout");
    assert_eq!(rig.bytes(1, page, 4096), vec![0; 4096], "active puts: nothing written");
}

#[test]
fn a_log_nobody_drains_ends_the_transfer_with_a_timeout_not_a_hang() {
    let rig = Rig::clean(2);
    let mut nodes = [Node::with_timeout(&rig, 0, 1_000), Node::with_timeout(&rig, 1, 1_000)];
    let p0 = nodes[0].register(PD);
    let _p1 = nodes[1].register(PD);
    let page = nodes[1].buffer(1);
    set_up(&rig, page);
    rig.fill(0, nodes[0].buffer(0), &pattern(9, 512));
    // Two packets: the first fills the log, the second never finds room.
    assert!(p0.submit(&put(1, 512, nodes[0].buffer(0), page, 7)));
    let until = Instant::now() + LONG * 3;
    let cqe = loop {
        assert!(Instant::now() < until, "the transfer hangs");
        for n in nodes.iter_mut() {
            n.step();
        }
        if let Some(c) = p0.completions().pop() {
            break c;
        }
        std::thread::sleep(Duration::from_micros(200));
    };
    assert!(matches!(cqe, Cqe::Local { tag: 7, status: CqeStatus::Timeout, .. }), "{cqe:?}");
    assert_eq!(drain(&rig).len(), 1, "the packet that found room is logged, once");
    assert!(word(&rig, HDR + header::FULL) >= 32, "each retransmission was refused");
}
