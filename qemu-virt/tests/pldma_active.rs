//! Active Access in the PLDMA model (`docs/hw/active-access.md`): pages marked in the engine's
//! active page table, remote puts and gets logged into rings in DDR, through the registers as
//! the kernel programs them (offsets and fields from `hal::pldma::active`). Two nodes (three
//! where two nodes flush), the stand-in R5s posting descriptors as in `pldma_transfers.rs`.

mod common;

use board::pl::PLDMA_BASE;
use common::{BUFFERS, IRQ_ENABLE, IRQ_STATUS, LONG, R5, Rig, pattern};
use core::mem::{offset_of, size_of};
use hal::pldma::Pd;
use hal::pldma::active::{
    APT_WAYS, ActiveRegisters, AptEntry, Attr, EntryKind, FLAG_DATA, FLAG_WRITTEN, GRANULE, KERNEL_LOG, LogCtrl,
    LogEntry, LogRegisters, apt_set, apt_tag, header,
};
use hal::pldma::descriptor::{Attempt, Descriptor, WriteKind};
use hal::pldma::event::Event;
use hal::pldma::regs::{ACTIVE_OFFSET, APT_OFFSET, IRQ};
use std::time::Duration;

const PD: u16 = 3;
/// The marked page at node 1 (identity-mapped: the rig translates VA = PA).
const PAGE: u64 = BUFFERS + 0x10_0000;
/// Log rings and headers at node 1.
const RING: u64 = 0xC0_0000;
const HDR: u64 = 0xC8_0000;
/// A short wait for something that must not happen.
const QUIET: Duration = Duration::from_millis(300);

fn pd(n: u16) -> Pd {
    Pd::new(n).unwrap()
}

fn log_reg(log: usize, field: usize) -> u64 {
    PLDMA_BASE + ACTIVE_OFFSET + (offset_of!(ActiveRegisters, logs) + log * size_of::<LogRegisters>() + field) as u64
}

fn ring(log: usize) -> u64 {
    RING + log as u64 * 0x4000
}

fn hdr(log: usize) -> u64 {
    HDR + log as u64 * 0x1000
}

/// Programs log `log` of node 1 for `owner` with 2^size_log2 granules, as the kernel does.
fn open_log(rig: &Rig, log: usize, owner: u16, size_log2: u32) {
    open_log_with(rig, log, LogCtrl { valid: true, notify: false, pd: owner as u8, size_log2 });
}

/// The same, with `ctrl` as given.
fn open_log_with(rig: &Rig, log: usize, ctrl: LogCtrl) {
    rig.fill(1, hdr(log), &[0xaa; 0xc0]);
    rig.write(1, log_reg(log, offset_of!(LogRegisters, base)), 8, u128::from(ring(log))).unwrap();
    rig.write(1, log_reg(log, offset_of!(LogRegisters, header)), 8, u128::from(hdr(log))).unwrap();
    rig.fill(1, hdr(log) + header::CONSUMED, &[0; 4]);
    rig.write(1, log_reg(log, offset_of!(LogRegisters, ctrl)), 4, u128::from(ctrl.encode())).unwrap();
    assert_eq!(produced(rig, log), 0, "a log made valid starts empty, in its header too");
}

/// Marks `pd`'s page at `va` on node 1 (way `way` of its set).
fn mark(rig: &Rig, pd_n: u16, va: u64, way: usize, attr: Attr) {
    let entry = (apt_set(va) * APT_WAYS + way) * size_of::<AptEntry>();
    let at = PLDMA_BASE + APT_OFFSET + entry as u64;
    rig.write(1, at + offset_of!(AptEntry, attr) as u64, 4, u128::from(attr.encode())).unwrap();
    rig.write(1, at + offset_of!(AptEntry, tag) as u64, 8, u128::from(apt_tag(pd(pd_n), va))).unwrap();
}

fn produced(rig: &Rig, log: usize) -> u32 {
    let header = u32::from_le_bytes(rig.bytes(1, hdr(log) + header::PRODUCED, 4).try_into().unwrap());
    assert_eq!(header, rig.reg(1, log_reg(log, offset_of!(LogRegisters, produced))), "header and register agree");
    header
}

fn consume_all(rig: &Rig, log: usize) {
    let p = produced(rig, log);
    rig.fill(1, hdr(log) + header::CONSUMED, &p.to_le_bytes());
}

/// The entries of log `log` from granule `from` to `produced`, as a consumer reads them (pads
/// skipped), with their data.
fn entries(rig: &Rig, log: usize, from: u32, size: u32) -> Vec<(LogEntry, Vec<u8>)> {
    let mut out = Vec::new();
    let mut at = from;
    while at != produced(rig, log) {
        let pa = ring(log) + GRANULE * u64::from(at % size);
        let e = LogEntry::decode(&rig.bytes(1, pa, 32).try_into().unwrap()).expect("a well-formed entry");
        at = at.wrapping_add(u32::from(e.granules));
        if e.kind != EntryKind::Pad {
            out.push((e, rig.bytes(1, pa + GRANULE, e.data_len())));
        }
    }
    out
}

fn consume_to(rig: &Rig, log: usize, granules: u32) {
    rig.fill(1, hdr(log) + header::CONSUMED, &granules.to_le_bytes());
}

fn put(r5: &mut R5<'_>, tid: u16, seq: u16, src: u64, dst: u64, len: u32) {
    let attempt = Attempt { pd: pd(PD), tid, seq, first_seq: 0 };
    r5.post(&Descriptor::WriteBlock { vc: 0, attempt, node: 1, src, dst, len, kind: WriteKind::Write });
}

fn acked(r5: &mut R5<'_>, tid: u16, wait: Duration) -> bool {
    match r5.event(wait) {
        Some(Event::Ack { txn, .. }) => {
            assert_eq!(txn.tid, tid);
            true
        }
        None => false,
        Some(other) => panic!("unexpected {other:?}"),
    }
}

const ACTIVE_PUT: Attr = Attr { w: false, wl: true, wld: true, rl: false, rld: false, e: true, flush: false, iuid: 2 };
const PUT_LOG: Attr = Attr { w: true, wl: true, wld: false, rl: false, rld: false, e: true, flush: false, iuid: 2 };

#[test]
fn an_active_put_is_logged_with_its_data_and_not_written() {
    let rig = Rig::clean(2);
    let (mut a, _b) = (rig.r5(0), rig.r5(1));
    open_log(&rig, 2, PD, 9);
    mark(&rig, PD, PAGE, 1, ACTIVE_PUT);
    rig.fill(1, PAGE, &[0xee; 4096]);
    rig.fill(0, BUFFERS, &pattern(1, 40));
    put(&mut a, 7, 0, BUFFERS, PAGE + 0x10, 40);
    assert!(acked(&mut a, 7, LONG), "an active put is acknowledged like a put");
    assert_eq!(rig.bytes(1, PAGE, 4096), vec![0xee; 4096], "the memory is not written");
    let got = entries(&rig, 2, 0, 512);
    assert_eq!(got.len(), 1);
    let (e, data) = &got[0];
    assert_eq!((e.kind, e.flags, e.node, e.pd, e.iuid), (EntryKind::Put, FLAG_DATA, 0, PD, 2));
    assert_eq!((e.len, e.va, e.tid, e.index, e.granules, e.serial), (40, PAGE + 0x10, 7, 0, 3, 0));
    assert_eq!(data, &pattern(1, 40), "the data is in the log");
    assert_eq!(rig.reg(1, log_reg(2, offset_of!(LogRegisters, entries))), 1);
}

#[test]
fn put_logging_writes_and_logs_each_packet_once() {
    let rig = Rig::clean(2);
    let (mut a, _b) = (rig.r5(0), rig.r5(1));
    open_log(&rig, 2, PD, 9);
    mark(&rig, PD, PAGE, 0, PUT_LOG);
    rig.fill(0, BUFFERS, &pattern(2, 1000));
    put(&mut a, 9, 0, BUFFERS, PAGE + 24, 1000);
    assert!(acked(&mut a, 9, LONG));
    assert_eq!(rig.bytes(1, PAGE + 24, 1000), pattern(2, 1000), "the write lands");
    // 24..1024: four packets cut on 256 B windows.
    let got = entries(&rig, 2, 0, 512);
    let seen: Vec<_> = got.iter().map(|(e, d)| (e.index, e.va, e.len, e.flags, d.len())).collect();
    assert_eq!(
        seen,
        vec![
            (0, PAGE + 24, 232, FLAG_WRITTEN, 0),
            (1, PAGE + 256, 256, FLAG_WRITTEN, 0),
            (2, PAGE + 512, 256, FLAG_WRITTEN, 0),
            (3, PAGE + 768, 256, FLAG_WRITTEN, 0)
        ]
    );
    // A retransmission of the whole block (its ACK lost) is not logged again.
    put(&mut a, 9, 1, BUFFERS, PAGE + 24, 1000);
    assert!(acked(&mut a, 9, LONG));
    assert_eq!(entries(&rig, 2, 0, 512).len(), 4, "a packet is logged at most once");
    // An unmarked page next door, and the same page under another PD: plain puts.
    put(&mut a, 10, 0, BUFFERS, PAGE + 4096, 100);
    assert!(acked(&mut a, 10, LONG));
    let other = Attempt { pd: pd(4), tid: 11, seq: 0, first_seq: 0 };
    let (dst, src) = (PAGE + 8, BUFFERS);
    a.post(&Descriptor::WriteBlock { vc: 0, attempt: other, node: 1, src, dst, len: 8, kind: WriteKind::Write });
    assert!(acked(&mut a, 11, LONG));
    assert_eq!(entries(&rig, 2, 0, 512).len(), 4, "only the marked page of the marking PD is logged");
}

#[test]
fn e0_and_foreign_logs_go_to_the_kernel_fault_log() {
    let rig = Rig::clean(2);
    let (mut a, _b) = (rig.r5(0), rig.r5(1));
    open_log(&rig, KERNEL_LOG, 0, 9);
    open_log(&rig, 5, 9, 9); // log 5 is PD 9's
    open_log(&rig, 2, PD, 9);
    mark(&rig, PD, PAGE, 0, Attr { e: false, ..ACTIVE_PUT });
    mark(&rig, PD, PAGE + 0x1000, 0, Attr { iuid: 5, ..ACTIVE_PUT });
    rig.fill(0, BUFFERS, &pattern(3, 16));
    put(&mut a, 1, 0, BUFFERS, PAGE, 16);
    assert!(acked(&mut a, 1, LONG));
    put(&mut a, 2, 0, BUFFERS, PAGE + 0x1000, 16);
    assert!(acked(&mut a, 2, LONG));
    let k = entries(&rig, KERNEL_LOG, 0, 512);
    assert_eq!(k.iter().map(|(e, _)| (e.va, e.iuid)).collect::<Vec<_>>(), vec![(PAGE, 2), (PAGE + 0x1000, 5)]);
    assert!(entries(&rig, 2, 0, 512).is_empty() && entries(&rig, 5, 0, 512).is_empty(), "no owner's log has them");
}

#[test]
fn a_full_log_holds_the_put_back_until_drained_and_loses_nothing() {
    let rig = Rig::clean(2);
    let (mut a, _b) = (rig.r5(0), rig.r5(1));
    // 4 granules: one 40-byte entry (3 granules) fits, a second does not.
    open_log(&rig, 2, PD, 2);
    rig.fill(1, ring(2) + 4 * GRANULE, &[0x5a; 64]);
    mark(&rig, PD, PAGE, 0, ACTIVE_PUT);
    rig.fill(0, BUFFERS, &pattern(4, 40));
    rig.fill(0, BUFFERS + 64, &pattern(5, 40));
    put(&mut a, 1, 0, BUFFERS, PAGE, 40);
    assert!(acked(&mut a, 1, LONG));
    put(&mut a, 2, 0, BUFFERS + 64, PAGE + 64, 40);
    assert!(!acked(&mut a, 2, QUIET), "no room: the packet is not taken, no ACK");
    assert_eq!(rig.reg(1, log_reg(2, offset_of!(LogRegisters, full))), 1);
    assert_eq!(u32::from_le_bytes(rig.bytes(1, hdr(2) + header::FULL, 4).try_into().unwrap()), 1);
    assert_eq!(rig.reg(1, PLDMA_BASE + ACTIVE_OFFSET + offset_of!(ActiveRegisters, apt_refused) as u64), 1);
    // A retransmission before the handler drained: still refused.
    put(&mut a, 2, 1, BUFFERS + 64, PAGE + 64, 40);
    assert!(!acked(&mut a, 2, QUIET));
    // The handler takes the first entry; the initiator's retransmission now gets through.
    let first = entries(&rig, 2, 0, 4);
    assert_eq!(first[0].1, pattern(4, 40));
    consume_all(&rig, 2);
    put(&mut a, 2, 2, BUFFERS + 64, PAGE + 64, 40);
    assert!(acked(&mut a, 2, LONG));
    // It wrapped: a pad of one granule, then the entry at the ring's start.
    let second = entries(&rig, 2, 3, 4);
    assert_eq!(second.len(), 1);
    assert_eq!((second[0].0.va, &second[0].1), (PAGE + 64, &pattern(5, 40)), "nothing lost");
    assert_eq!(produced(&rig, 2), 3 + 1 + 3);
    assert_eq!(rig.bytes(1, ring(2) + 4 * GRANULE, 64), vec![0x5a; 64], "nothing written past the ring");
}

#[test]
fn a_forged_consumed_index_reads_as_full_and_the_engine_writes_nowhere_else() {
    let rig = Rig::clean(2);
    let (mut a, _b) = (rig.r5(0), rig.r5(1));
    open_log(&rig, 2, PD, 3);
    rig.fill(1, ring(2) - 64, &[0x33; 64]);
    rig.fill(1, ring(2) + 8 * GRANULE, &[0x33; 4096]);
    mark(&rig, PD, PAGE, 0, ACTIVE_PUT);
    rig.fill(0, BUFFERS, &pattern(6, 200));
    for (i, forged) in [5u32, 0x8000_0000, u32::MAX].into_iter().enumerate() {
        rig.fill(1, hdr(2) + header::CONSUMED, &forged.to_le_bytes());
        put(&mut a, 20 + i as u16, 0, BUFFERS, PAGE, 200);
        assert!(!acked(&mut a, 20 + i as u16, QUIET), "consumed {forged:#x} is no correct consumer's");
    }
    assert_eq!(produced(&rig, 2), 0);
    assert_eq!(rig.bytes(1, ring(2) - 64, 64), vec![0x33; 64]);
    assert_eq!(rig.bytes(1, ring(2) + 8 * GRANULE, 4096), vec![0x33; 4096]);
    // The consumer's index made right again: the retransmission is logged.
    rig.fill(1, hdr(2) + header::CONSUMED, &0u32.to_le_bytes());
    put(&mut a, 22, 1, BUFFERS, PAGE, 200);
    assert!(acked(&mut a, 22, LONG));
    assert_eq!(entries(&rig, 2, 0, 8).len(), 1);
}

/// Node 1 serves node 0's read of `len` bytes at `src` (as its R5 does for a ReadRequest).
fn serve(b: &mut R5<'_>, tid: u16, seq: u16, src: u64, dst: u64, len: u32) {
    serve_to(b, 0, Attempt { pd: pd(PD), tid, seq, first_seq: 0 }, src, dst, len);
}

/// Node 1 serves `attempt` of node `node`'s read.
fn serve_to(b: &mut R5<'_>, node: u16, attempt: Attempt, src: u64, dst: u64, len: u32) {
    b.post(&Descriptor::WriteBlock { vc: 0, attempt, node, src, dst, len, kind: WriteKind::ReadResponse });
}

#[test]
fn gets_are_logged_with_the_data_served_or_counted() {
    let rig = Rig::clean(2);
    let (mut a, mut b) = (rig.r5(0), rig.r5(1));
    open_log(&rig, 2, PD, 9);
    let rld = Attr { w: true, rl: true, rld: true, ..Attr::default() };
    let rl = Attr { w: true, rl: true, ..Attr::default() };
    mark(&rig, PD, PAGE, 0, Attr { e: true, iuid: 2, ..rld });
    mark(&rig, PD, PAGE + 0x1000, 0, Attr { e: true, iuid: 2, ..rl });
    rig.fill(1, PAGE, &pattern(7, 8192));
    // 64 bytes straddling the two pages: one packet, two pieces.
    serve(&mut b, 5, 0, PAGE + 0x1000 - 32, BUFFERS, 64);
    assert!(acked(&mut a, 5, LONG), "an active get is served");
    assert_eq!(rig.bytes(0, BUFFERS, 64), pattern(7, 8192)[0x1000 - 32..0x1000 + 32].to_vec());
    let got = entries(&rig, 2, 0, 512);
    let seen: Vec<_> = got.iter().map(|(e, d)| (e.kind, e.node, e.va, e.len, e.flags, d.clone())).collect();
    assert_eq!(
        seen,
        vec![
            (EntryKind::Get, 0, PAGE + 0x1000 - 32, 32, FLAG_DATA, pattern(7, 8192)[0x1000 - 32..0x1000].to_vec()),
            (EntryKind::Get, 0, PAGE + 0x1000, 32, 0, vec![]),
        ]
    );
    // A log without room: the get is not served until the handler drains it.
    open_log(&rig, 3, PD, 1);
    mark(&rig, PD, PAGE + 0x2000, 0, Attr { e: true, iuid: 3, ..rld });
    serve(&mut b, 6, 0, PAGE + 0x2000, BUFFERS + 0x200, 16);
    assert!(acked(&mut a, 6, LONG), "1 + 1 granules fit");
    serve(&mut b, 7, 0, PAGE + 0x2000, BUFFERS + 0x300, 16);
    assert!(!acked(&mut a, 7, QUIET), "full: not served");
    assert_eq!(rig.bytes(0, BUFFERS + 0x300, 16), vec![0; 16], "nothing of it reached the reader");
    consume_all(&rig, 3);
    serve(&mut b, 7, 1, PAGE + 0x2000, BUFFERS + 0x300, 16);
    assert!(acked(&mut a, 7, LONG));
    assert_eq!(entries(&rig, 3, 2, 2).len(), 1);
}

#[test]
fn a_flushing_page_is_served_only_once_the_log_is_drained() {
    let rig = Rig::clean(2);
    let (mut a, mut b) = (rig.r5(0), rig.r5(1));
    flushing_log(&rig);
    rig.fill(0, BUFFERS, &pattern(8, 8));
    put(&mut a, 1, 0, BUFFERS, PAGE, 8);
    assert!(acked(&mut a, 1, LONG));
    serve(&mut b, 2, 0, FLUSH_PAGE, BUFFERS + 0x100, 8);
    assert!(!acked(&mut a, 2, QUIET), "one entry not taken: the flush waits");
    consume_all(&rig, 2);
    serve(&mut b, 2, 1, FLUSH_PAGE, BUFFERS + 0x100, 8);
    assert!(acked(&mut a, 2, LONG), "drained: the flush completes");
    assert_eq!(produced(&rig, 2), 2, "the flush itself is not logged");
}

/// IUID 2's flushing page at node 1.
const FLUSH_PAGE: u64 = PAGE + 0x8000;
const FLUSHING: Attr = Attr { w: true, wl: false, wld: false, rl: false, rld: false, e: true, flush: true, iuid: 2 };
/// Granules of an active put of 8 bytes.
const PUT8: u32 = 2;

/// An active put of 8 bytes from `node` (tid `tid`) to the marked page, acknowledged.
fn put8(rig: &Rig, r5: &mut R5<'_>, node: usize, tid: u16) {
    rig.fill(node, BUFFERS, &pattern(u64::from(tid), 8));
    put(r5, tid, 0, BUFFERS, PAGE + 8 * u64::from(tid % 64), 8);
    assert!(acked(r5, tid, LONG), "an active put of node {node}");
}

/// Attempt `seq` of `flusher`'s flush (its read of the flushing page, tid `tid`) at node 1:
/// whether it was served (the requester's engine saw the read complete).
fn flush_attempt(b: &mut R5<'_>, flusher: (u16, &mut R5<'_>), tid: u16, seq: u16) -> bool {
    let (node, r5) = flusher;
    let attempt = Attempt { pd: pd(PD), tid, seq, first_seq: 0 };
    serve_to(b, node, attempt, FLUSH_PAGE, BUFFERS + 0x800, 8);
    acked(r5, tid, QUIET)
}

/// Log 2 of node 1 for `PD`, with an active put page and its flushing page.
fn flushing_log(rig: &Rig) {
    open_log(rig, 2, PD, 9);
    mark(rig, PD, PAGE, 0, ACTIVE_PUT);
    mark(rig, PD, FLUSH_PAGE, 0, FLUSHING);
}

#[test]
fn a_flush_is_served_at_its_own_point_while_another_node_keeps_appending() {
    let rig = Rig::clean(3);
    let (mut a, mut b, mut c) = (rig.r5(0), rig.r5(1), rig.r5(2));
    flushing_log(&rig);
    // Node 0's put, then its flush: the flush's point is 2 granules.
    put8(&rig, &mut a, 0, 1);
    assert!(!flush_attempt(&mut b, (0, &mut a), 40, 0), "the put is not taken");
    // Node 2 keeps appending, and the owner keeps one entry behind: the log is never drained.
    let mut tid = 10;
    for attempt in 1..4u16 {
        put8(&rig, &mut c, 2, tid);
        tid += 1;
        consume_to(&rig, 2, PUT8 - 1);
        assert!(!flush_attempt(&mut b, (0, &mut a), 40, attempt), "never before its point is consumed");
    }
    consume_to(&rig, 2, PUT8);
    put8(&rig, &mut c, 2, tid);
    assert!(produced(&rig, 2) > PUT8, "not drained");
    assert!(flush_attempt(&mut b, (0, &mut a), 40, 4), "its point is consumed: served");
    assert!(rig.reg(1, log_reg(2, offset_of!(LogRegisters, full))) >= 4, "each refusal counted as a full log");
}

#[test]
fn two_flushers_of_two_nodes_are_each_served_at_their_own_point() {
    let rig = Rig::clean(3);
    let (mut a, mut b, mut c) = (rig.r5(0), rig.r5(1), rig.r5(2));
    flushing_log(&rig);
    // Node 0 puts and flushes (point 2); node 2 puts and flushes (the slot is node 0's).
    put8(&rig, &mut a, 0, 1);
    assert!(!flush_attempt(&mut b, (0, &mut a), 40, 0));
    put8(&rig, &mut c, 2, 2);
    assert!(!flush_attempt(&mut b, (2, &mut c), 41, 0), "node 0's point is not consumed");
    // Node 0's entry is taken: node 2's flush, asking first, takes the slot at point 4 (its own
    // put is not taken yet), and node 0's, asking next, is served all the same.
    consume_to(&rig, 2, PUT8);
    assert!(!flush_attempt(&mut b, (2, &mut c), 41, 1), "node 2's put is not taken");
    assert!(flush_attempt(&mut b, (0, &mut a), 40, 1), "node 0's point was consumed");
    // More puts; node 2's flush waits for its own point, not for them.
    put8(&rig, &mut a, 0, 3);
    consume_to(&rig, 2, 2 * PUT8 - 1);
    assert!(!flush_attempt(&mut b, (2, &mut c), 41, 2), "never before its point is consumed");
    consume_to(&rig, 2, 2 * PUT8);
    assert!(flush_attempt(&mut b, (2, &mut c), 41, 3), "node 2's point is consumed, node 0's later put not");
}

#[test]
fn a_stale_slot_is_taken_over_and_its_point_serves_no_one_else() {
    let rig = Rig::clean(3);
    let (mut a, mut b, mut c) = (rig.r5(0), rig.r5(1), rig.r5(2));
    flushing_log(&rig);
    // Node 0's flush takes the slot at point 2, then its initiator gives up: it never asks again.
    put8(&rig, &mut a, 0, 1);
    assert!(!flush_attempt(&mut b, (0, &mut a), 40, 0));
    put8(&rig, &mut c, 2, 2);
    consume_to(&rig, 2, PUT8);
    // Node 2's flush: the slot's point is consumed, so it is stale; node 2 takes it at point 4,
    // and the stale point (consumed already) does not serve it.
    assert!(!flush_attempt(&mut b, (2, &mut c), 41, 0), "taken over, at its own point");
    put8(&rig, &mut a, 0, 3);
    assert!(!flush_attempt(&mut b, (2, &mut c), 41, 1));
    consume_to(&rig, 2, 2 * PUT8);
    assert!(flush_attempt(&mut b, (2, &mut c), 41, 2), "served at its own point, the log not drained");
    // A new read of node 0 (a new first_seq) is a new flush: it waits for the put before it.
    let attempt = Attempt { pd: pd(PD), tid: 40, seq: 7, first_seq: 7 };
    serve_to(&mut b, 0, attempt, FLUSH_PAGE, BUFFERS + 0x800, 8);
    assert!(!acked(&mut a, 40, QUIET), "a new flush after a put not taken");
    consume_all(&rig, 2);
    serve_to(&mut b, 0, Attempt { seq: 8, ..attempt }, FLUSH_PAGE, BUFFERS + 0x800, 8);
    assert!(acked(&mut a, 40, LONG));
}

fn appended(rig: &Rig) -> u32 {
    rig.reg(1, PLDMA_BASE + ACTIVE_OFFSET + offset_of!(ActiveRegisters, appended) as u64)
}

#[test]
fn a_notifying_log_raises_the_active_log_interrupt_until_the_kernel_clears_it() {
    let rig = Rig::clean(2);
    let (mut a, _b) = (rig.r5(0), rig.r5(1));
    let active_log = IRQ::ACTIVE_LOG::SET.value;
    rig.write(1, IRQ_ENABLE, 4, u128::from(active_log)).unwrap();
    // Log 2 is polled (NOTIFY = 0), log 5 notifies; each has a marked page.
    open_log(&rig, 2, PD, 9);
    open_log_with(&rig, 5, LogCtrl { valid: true, notify: true, pd: PD as u8, size_log2: 9 });
    let notifying = PAGE + 0x1000;
    mark(&rig, PD, PAGE, 0, PUT_LOG);
    mark(&rig, PD, notifying, 0, Attr { iuid: 5, ..PUT_LOG });
    rig.fill(0, BUFFERS, &pattern(3, 64));
    put(&mut a, 1, 0, BUFFERS, PAGE, 64);
    assert!(acked(&mut a, 1, LONG));
    assert_eq!(produced(&rig, 2), 1, "logged");
    assert_eq!((appended(&rig), rig.reg(1, IRQ_STATUS) & active_log), (0, 0), "a polled log raises nothing");
    put(&mut a, 2, 0, BUFFERS, notifying, 64);
    assert!(acked(&mut a, 2, LONG));
    assert_eq!(appended(&rig), 1 << 5, "the notifying log's bit");
    assert_eq!(rig.reg(1, IRQ_STATUS) & active_log, active_log);
    assert!(rig.line_raised(1, board::pl::irq_line::PLDMA), "PL line 3 rose at the owner");
    // Writes to other bits change nothing; writing the bit clears it and the level cause.
    rig.write(1, PLDMA_BASE + ACTIVE_OFFSET + offset_of!(ActiveRegisters, appended) as u64, 4, 1 << 2).unwrap();
    assert_eq!(appended(&rig), 1 << 5);
    rig.write(1, PLDMA_BASE + ACTIVE_OFFSET + offset_of!(ActiveRegisters, appended) as u64, 4, 1 << 5).unwrap();
    assert_eq!((appended(&rig), rig.reg(1, IRQ_STATUS) & active_log), (0, 0));
    // NOTIFY can be turned off while the log is valid without emptying it.
    let quiet = LogCtrl { valid: true, notify: false, pd: PD as u8, size_log2: 9 };
    rig.write(1, log_reg(5, offset_of!(LogRegisters, ctrl)), 4, u128::from(quiet.encode())).unwrap();
    assert_eq!(produced(&rig, 5), 1, "a ctrl write that keeps VALID keeps the log");
    put(&mut a, 3, 0, BUFFERS, notifying, 64);
    assert!(acked(&mut a, 3, LONG));
    assert_eq!((produced(&rig, 5), appended(&rig)), (2, 0));
}

#[test]
fn log_registers_follow_the_contract() {
    let rig = Rig::clean(2);
    let _b = rig.r5(1);
    open_log(&rig, 4, PD, 9);
    // Base and header are fixed while the log is valid.
    rig.write(1, log_reg(4, offset_of!(LogRegisters, base)), 8, 0x1234_0000).unwrap();
    assert_eq!(rig.read(1, log_reg(4, offset_of!(LogRegisters, base)), 8).unwrap(), u128::from(ring(4)));
    // Read-only registers refuse writes; a bad SIZE_LOG2 reads as invalid.
    assert!(rig.write(1, log_reg(4, offset_of!(LogRegisters, produced)), 4, 9).is_err());
    assert!(rig.write(1, log_reg(4, offset_of!(LogRegisters, entries)), 4, 9).is_err());
    let bad = LogCtrl { valid: true, notify: false, pd: 1, size_log2: 12 }.encode();
    rig.write(1, log_reg(6, offset_of!(LogRegisters, ctrl)), 4, u128::from(bad)).unwrap();
    assert_eq!(rig.reg(1, log_reg(6, offset_of!(LogRegisters, ctrl))) & 1, 0);
    // The APT reads back; beyond the log table is unmapped.
    mark(&rig, PD, PAGE, 3, PUT_LOG);
    let entry = (apt_set(PAGE) * APT_WAYS + 3) * size_of::<AptEntry>();
    let attr = PLDMA_BASE + APT_OFFSET + (entry + offset_of!(AptEntry, attr)) as u64;
    assert_eq!(rig.reg(1, attr), PUT_LOG.encode());
    assert!(rig.read(1, PLDMA_BASE + ACTIVE_OFFSET + 0x220, 4).is_err());
}
