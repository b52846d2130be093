//! Faults in the PLDMA model (`docs/hw/pldma.md`, "Fault handling"): destination faults give a
//! PF-NACK per packet and one fault FIFO entry per page; the kernel's RAPF reaches the owner's R5
//! with the PD of the page it was written to; source faults stop the block and tell the owner;
//! stalled accesses wait for RESUME without holding up other PDs; bus errors are NACKed.

mod common;

use common::iommu::{Page, TestIommu};
use common::*;
use hal::pldma::codes::{FaultCode, NackCode, PfNackCode, RapfAction};
use hal::pldma::descriptor::{Attempt, Descriptor, WriteKind};
use hal::pldma::event::{Event, TxnRef};
use hal::pldma::fault::FaultEntry;
use hal::pldma::rapf::RapfRequest;
use hal::pldma::regs::Counter;
use hal::pldma::{BLOCK_BYTES, Pd};
use qemu_virt::interconnect::LinkConfig;
use qemu_virt::models::iommu::{Access, Bypass, IoTranslate, StallOutcome};
use std::sync::Arc;
use std::time::Duration;

const WAIT: Duration = LONG;
const QUIET: Duration = Duration::from_millis(100);
/// irq_status/irq_enable bits.
const FAULT: u32 = 1 << 0;
const FAULT_LOST: u32 = 1 << 1;

fn pd(n: u16) -> Pd {
    Pd::new(n).unwrap()
}

/// Two nodes; node `faulty`'s engine translates through the returned stand-in.
fn rig_with(faulty: usize) -> (Rig, Arc<TestIommu>) {
    let iommu = Arc::new(TestIommu::new());
    let iommus: Vec<Arc<dyn IoTranslate>> =
        (0..2).map(|n| if n == faulty { iommu.clone() as Arc<dyn IoTranslate> } else { Arc::new(Bypass) }).collect();
    (Rig::with_iommus(LinkConfig { latency_us: 0.0, ..LinkConfig::default() }, iommus), iommu)
}

fn write(attempt: Attempt, node: u16, src: u64, dst: u64, len: u32) -> Descriptor {
    Descriptor::WriteBlock { vc: 0, attempt, node, src, dst, len, kind: WriteKind::Write }
}

/// The kernel's drain: `fifo_lo` then `fifo_hi`, until empty.
fn drain_fifo(rig: &Rig, node: usize) -> Vec<FaultEntry> {
    let mut all = Vec::new();
    loop {
        let lo = rig.read(node, FIFO_LO, 8).unwrap() as u64;
        if lo & 1 == 0 {
            return all;
        }
        let hi = rig.read(node, FIFO_HI, 8).unwrap() as u64;
        match FaultEntry::decode(lo, hi).unwrap() {
            Some(e) => all.push(e),
            None => return all,
        }
    }
}

fn rapf(rig: &Rig, node: usize, page_pd: u16, request: RapfRequest) {
    rig.write(node, pd_page(page_pd, PD_RAPF), 8, u128::from(request.encode().unwrap())).unwrap();
}

#[test]
fn a_destination_fault_nacks_the_attempt_once_logs_the_page_once_and_the_rapf_retransmits() {
    let (rig, iommu) = rig_with(1);
    let (mut a, _b) = (rig.r5(0), rig.r5(1));
    rig.write(1, IRQ_ENABLE, 4, u128::from(FAULT)).unwrap();
    let (src, dst) = (BUFFERS, BUFFERS + 0x10_0000);
    let data = pattern(9, BLOCK_BYTES as usize);
    rig.fill(0, src, &data);
    // The block's third page is not mapped at the target.
    iommu.mark(5, dst + 2 * 4096, Page::Fault, Some(Access::Write));
    let attempt = Attempt { pd: pd(5), tid: 42, seq: 7, first_seq: 7 };
    a.post(&write(attempt, 1, src, dst, BLOCK_BYTES as u32));
    let txn = TxnRef { pd: pd(5), tid: 42, seq: 7 };
    let Some(Event::PfNack { node: 1, txn: t, index, code: PfNackCode::Destination, va }) = a.event(WAIT) else {
        panic!("a PF-NACK")
    };
    assert_eq!(t, txn);
    assert_eq!(index, 32, "the first packet of page 2");
    assert_eq!(va >> 12, (dst >> 12) + 2);
    assert_eq!(a.event(QUIET), None, "one PF-NACK per attempt: its 15 other faulting packets send none");
    // The target's kernel: an interrupt, one FIFO entry (the rest were duplicates of it).
    assert!(rig.line_raised(1, board::pl::irq_line::PLDMA), "PL line 3 rose at the target");
    assert_eq!(rig.reg(1, FIFO_COUNT), 1);
    assert_eq!(rig.counter(1, Counter::FaultsDeduplicated), 15);
    let entries = drain_fifo(&rig, 1);
    assert_eq!(entries, [FaultEntry::new(FaultCode::DestinationFault, pd(5), 0, 42, 7, dst + 2 * 4096)]);
    assert_eq!(rig.reg(1, IRQ_STATUS) & FAULT, 0, "the level cause drops with the FIFO");
    // It maps the page and sends the RAPF from PD page 5: the owner's R5 is told.
    iommu.map(5, dst + 2 * 4096);
    rapf(&rig, 1, 5, RapfRequest { node: 0, tid: 42, seq: 7, action: RapfAction::Retry, claimed_pd: 5 });
    assert_eq!(a.event(WAIT), Some(Event::Rapf { node: 1, txn, claimed: 5, action: RapfAction::Retry }));
    // The retransmission completes the block.
    a.post(&write(Attempt { seq: 8, ..attempt }, 1, src, dst, BLOCK_BYTES as u32));
    assert_eq!(a.event(WAIT), Some(Event::Ack { node: 1, txn: TxnRef { seq: 8, ..txn } }));
    assert_eq!(rig.bytes(1, dst, BLOCK_BYTES as usize), data);
}

/// Node 1's engine faults a block of PD `p` from node 0 (tid `tid`, seq 1): its answer may leave
/// as a RAPF from PD page `p`.
fn destination_fault(rig: &Rig, iommu: &TestIommu, a: &mut R5<'_>, p: u16, tid: u16) {
    let dst = BUFFERS + 0x10_0000 + u64::from(tid) * BLOCK_BYTES;
    iommu.mark(p, dst, Page::Fault, Some(Access::Write));
    a.post(&write(Attempt { pd: pd(p), tid, seq: 1, first_seq: 1 }, 1, BUFFERS, dst, 256));
    assert!(matches!(a.event(WAIT), Some(Event::PfNack { .. })), "the fault's PF-NACK");
    drain_fifo(rig, 1);
}

/// `docs/hw/pldma.md`, "Who may send a RAPF": a `rapf` write leaves only as the answer to a fault
/// of the page's PD that the engine logged, once; it carries the page's PD whatever it claims.
#[test]
fn a_rapf_leaves_only_as_the_answer_to_a_fault_of_its_pd_and_carries_that_pd() {
    let (rig, iommu) = rig_with(1);
    let (mut a, _b) = (rig.r5(0), rig.r5(1));
    // Forged: no fault awaits it. Refused at the door, counted, nothing sent.
    let forged = RapfRequest { node: 0, tid: 100, seq: 1, action: RapfAction::Abort, claimed_pd: 5 };
    for _ in 0..1000 {
        rapf(&rig, 1, 3, forged);
    }
    assert_eq!(rig.reg(1, pd_page(3, PD_STATUS)), 0b11, "enabled, REFUSED");
    assert_eq!(rig.reg(1, pd_page(3, PD_RAPF_REFUSED)), 1000);
    assert_eq!(a.event(QUIET), None, "no RAPF reached the owner's R5");
    // A real fault of PD 3's transaction 100: its answer leaves, once, with the wired PD.
    destination_fault(&rig, &iommu, &mut a, 3, 100);
    rapf(&rig, 1, 3, forged);
    assert_eq!(
        a.event(WAIT),
        Some(Event::Rapf {
            node: 1,
            txn: TxnRef { pd: pd(3), tid: 100, seq: 1 },
            claimed: 5,
            action: RapfAction::Abort
        })
    );
    assert_eq!(rig.reg(1, pd_page(3, PD_STATUS)), 1, "enabled, not refused");
    rapf(&rig, 1, 3, forged);
    assert_eq!(a.event(QUIET), None, "answered already");
    assert_eq!(rig.reg(1, pd_page(3, PD_RAPF_REFUSED)), 1001);
    // Another PD's page cannot answer it, nor another attempt.
    destination_fault(&rig, &iommu, &mut a, 3, 101);
    rapf(&rig, 1, 4, RapfRequest { tid: 101, claimed_pd: 3, ..forged });
    rapf(&rig, 1, 3, RapfRequest { tid: 101, seq: 2, ..forged });
    assert_eq!(a.event(QUIET), None);
    // To a node that does not exist, or with a reserved action: refused, nothing sent.
    let bad = RapfRequest { node: 9, tid: 101, seq: 1, action: RapfAction::Retry, claimed_pd: 3 };
    rapf(&rig, 1, 3, bad);
    assert_eq!(rig.reg(1, pd_page(3, PD_STATUS)), 0b11, "REFUSED");
    let reserved = RapfRequest { node: 0, ..bad }.encode().unwrap() | 3 << 30;
    rig.write(1, pd_page(3, PD_RAPF), 8, u128::from(reserved)).unwrap();
    assert_eq!(rig.reg(1, pd_page(3, PD_STATUS)), 0b11);
    // From a disabled PD's page: refused, and the PD's faults await nothing any more.
    rig.write(1, PD_ENABLE, 4, 0xffff & !(1 << 3)).unwrap();
    rapf(&rig, 1, 3, RapfRequest { node: 0, ..bad });
    assert_eq!(rig.reg(1, pd_page(3, PD_STATUS)), 0b10, "disabled and refused");
    rig.write(1, PD_ENABLE, 4, 0xffff).unwrap();
    rapf(&rig, 1, 3, RapfRequest { node: 0, ..bad });
    assert_eq!(a.event(QUIET), None);
    // A good one clears REFUSED.
    destination_fault(&rig, &iommu, &mut a, 4, 102);
    rapf(&rig, 1, 4, RapfRequest { node: 0, tid: 102, claimed_pd: 4, ..bad });
    assert_eq!(rig.reg(1, pd_page(4, PD_STATUS)), 1);
    assert!(matches!(a.event(WAIT), Some(Event::Rapf { txn: TxnRef { pd: p, .. }, .. }) if p == pd(4)));
}

#[test]
fn a_source_fault_stops_the_block_and_is_reported_to_the_owner() {
    let (rig, iommu) = rig_with(0);
    let (mut a, _b) = (rig.r5(0), rig.r5(1));
    let (src, dst) = (BUFFERS + 0x800, BUFFERS + 0x10_0000);
    // The source's second page faults: packet 8 of the block reads it first.
    iommu.mark(2, src + 4096, Page::Fault, Some(Access::Read));
    let attempt = Attempt { pd: pd(2), tid: 5, seq: 1, first_seq: 1 };
    a.post(&write(attempt, 1, src, dst, 8192));
    let txn = TxnRef { pd: pd(2), tid: 5, seq: 1 };
    assert_eq!(
        a.events(1, QUIET),
        [Event::PfNack { node: 0, txn, index: 8, code: PfNackCode::Source, va: (src + 4096) & !0xfff }],
        "one local PF-NACK and no ACK"
    );
    assert_eq!(drain_fifo(&rig, 0), [FaultEntry::new(FaultCode::SourceFault, pd(2), 0, 5, 1, src + 4096)]);
    assert_eq!(rig.counter(0, Counter::PacketsSent), 8, "the packets before the fault went");
    assert_eq!(rig.counter(0, Counter::BlocksSent), 0);
}

#[test]
fn a_source_fault_while_serving_a_read_is_reported_to_the_reader() {
    let (rig, iommu) = rig_with(1);
    let (mut a, mut b) = (rig.r5(0), rig.r5(1));
    let remote = BUFFERS;
    iommu.mark(6, remote, Page::Fault, None);
    let attempt = Attempt { pd: pd(6), tid: 8, seq: 3, first_seq: 2 };
    a.post(&Descriptor::ReadRequest { vc: 0, attempt, node: 1, src: remote, dst: BUFFERS, len: 100 });
    let Some(Event::ReadRequest { node: 0, attempt: got, src, dst, len }) = b.event(WAIT) else { panic!() };
    b.post(&Descriptor::WriteBlock { vc: 0, attempt: got, node: 0, src, dst, len, kind: WriteKind::ReadResponse });
    let txn = TxnRef { pd: pd(6), tid: 8, seq: 3 };
    assert_eq!(a.event(WAIT), Some(Event::PfNack { node: 1, txn, index: 0, code: PfNackCode::Source, va: remote }));
    // The target's kernel sees who owns the transaction: the reader, node 0.
    assert_eq!(drain_fifo(&rig, 1), [FaultEntry::new(FaultCode::SourceFault, pd(6), 0, 8, 3, remote)]);
    assert_eq!(b.event(QUIET), None);
}

#[test]
fn a_stalled_write_waits_for_resume_and_other_pds_go_on() {
    let (rig, iommu) = rig_with(1);
    let (mut a, _b) = (rig.r5(0), rig.r5(1));
    let (src, dst) = (BUFFERS, BUFFERS + 0x10_0000);
    rig.fill(0, src, &pattern(4, 2048));
    iommu.mark(1, dst, Page::Stall, None);
    a.post(&write(Attempt { pd: pd(1), tid: 1, seq: 0, first_seq: 0 }, 1, src, dst, 2048));
    // PD 2 writes to the same addresses of its own process, which are mapped.
    a.post(&write(Attempt { pd: pd(2), tid: 2, seq: 0, first_seq: 0 }, 1, src, dst + 0x8000, 2048));
    let events = a.events(2, QUIET);
    assert!(events.contains(&Event::Ack { node: 1, txn: TxnRef { pd: pd(2), tid: 2, seq: 0 } }), "{events:?}");
    let stalled = TxnRef { pd: pd(1), tid: 1, seq: 0 };
    let told = Event::PfNack { node: 1, txn: stalled, index: 0, code: PfNackCode::Stalled, va: dst };
    assert!(events.contains(&told), "the owner is told PD 1's block stalls, and it waits: {events:?}");
    assert!(eventually(LONG, || rig.reg(1, PD_BUSY) == 1 << 1), "the engine holds PD 1's work");
    assert!(rig.counter(1, Counter::Stalls) >= 1);
    // The kernel maps the page and resumes every stalled transaction with retry.
    iommu.map(1, dst);
    for (id, ..) in iommu.stalled() {
        iommu.resume(id, StallOutcome::Retry);
    }
    let resumed = Event::PfNack { node: 1, txn: stalled, index: 0, code: PfNackCode::Resumed, va: dst };
    assert_eq!(a.event(WAIT), Some(resumed), "the owner takes the block off pause, once");
    assert_eq!(a.event(WAIT), Some(Event::Ack { node: 1, txn: TxnRef { pd: pd(1), tid: 1, seq: 0 } }));
    assert_eq!(rig.bytes(1, dst, 2048), pattern(4, 2048));
    assert!(eventually(LONG, || rig.reg(1, PD_BUSY) == 0));
    assert_eq!(rig.reg(1, FIFO_COUNT), 0, "nothing for the fault path");
}

#[test]
fn a_terminated_stall_is_a_fault() {
    let (rig, iommu) = rig_with(1);
    let (mut a, _b) = (rig.r5(0), rig.r5(1));
    let dst = BUFFERS + 0x10_0000;
    iommu.mark(1, dst, Page::Stall, None);
    let txn = TxnRef { pd: pd(1), tid: 1, seq: 0 };
    a.post(&write(Attempt { pd: pd(1), tid: 1, seq: 0, first_seq: 0 }, 1, BUFFERS, dst, 16));
    assert!(eventually(LONG, || !iommu.stalled().is_empty()));
    let stalled = iommu.stalled();
    assert_eq!(stalled.len(), 1);
    assert_eq!(a.event(WAIT), Some(Event::PfNack { node: 1, txn, index: 0, code: PfNackCode::Stalled, va: dst }));
    iommu.resume(stalled[0].0, StallOutcome::Terminate);
    assert_eq!(a.event(WAIT), Some(Event::PfNack { node: 1, txn, index: 0, code: PfNackCode::Destination, va: dst }));
    assert_eq!(drain_fifo(&rig, 1), [FaultEntry::new(FaultCode::DestinationFault, pd(1), 0, 1, 0, dst)]);
}

#[test]
fn a_stalled_source_read_continues_after_resume() {
    let (rig, iommu) = rig_with(0);
    let (mut a, _b) = (rig.r5(0), rig.r5(1));
    let (src, dst) = (BUFFERS, BUFFERS + 0x10_0000);
    rig.fill(0, src, &pattern(8, 12_000));
    iommu.mark(0, src + 8192, Page::Stall, Some(Access::Read));
    a.post(&write(Attempt { pd: pd(0), tid: 3, seq: 0, first_seq: 0 }, 1, src, dst, 12_000));
    assert!(eventually(LONG, || !iommu.stalled().is_empty()));
    assert_eq!(rig.counter(0, Counter::PacketsSent), 32, "the packets before the stalled page");
    let stalled = TxnRef { pd: pd(0), tid: 3, seq: 0 };
    let told = Event::PfNack { node: 0, txn: stalled, index: 32, code: PfNackCode::Stalled, va: src + 8192 };
    assert_eq!(a.event(WAIT), Some(told), "the owner (this node) is told the block stalls");
    iommu.map(0, src + 8192);
    for (id, ..) in iommu.stalled() {
        iommu.resume(id, StallOutcome::Retry);
    }
    let resumed = Event::PfNack { node: 0, txn: stalled, index: 32, code: PfNackCode::Resumed, va: src + 8192 };
    assert_eq!(a.event(WAIT), Some(resumed), "the owner takes the block off pause");
    assert!(matches!(a.event(WAIT), Some(Event::Ack { .. })));
    assert_eq!(rig.bytes(1, dst, 12_000), pattern(8, 12_000));
}

#[test]
fn bus_errors_are_nacked_and_logged() {
    let (rig, iommu) = rig_with(1);
    let (mut a, _b) = (rig.r5(0), rig.r5(1));
    let dst = BUFFERS + 0x10_0000;
    iommu.mark(3, dst, Page::Outside, None);
    a.post(&write(Attempt { pd: pd(3), tid: 4, seq: 2, first_seq: 2 }, 1, BUFFERS, dst, 300));
    let events = a.events(2, QUIET);
    let txn = TxnRef { pd: pd(3), tid: 4, seq: 2 };
    assert_eq!(
        events,
        [0, 1].map(|index| Event::Nack { node: 1, txn, index, code: NackCode::WriteError }),
        "both packets' page translates outside memory: a NACK each, no ACK"
    );
    let entries = drain_fifo(&rig, 1);
    assert_eq!(entries.len(), 1, "one entry for the page");
    assert_eq!(entries[0].code, FaultCode::DestinationBusError);
}

#[test]
fn a_full_fault_fifo_drops_and_flags() {
    let (rig, iommu) = rig_with(1);
    let (mut a, _b) = (rig.r5(0), rig.r5(1));
    let dst = BUFFERS + 0x10_0000;
    // 600 distinct faulting pages, one packet each.
    for i in 0..600u64 {
        iommu.mark(0, dst + i * 4096, Page::Fault, None);
    }
    for chunk in 0..3u64 {
        for i in chunk * 200..(chunk + 1) * 200 {
            let attempt = Attempt { pd: pd(0), tid: i as u16, seq: 0, first_seq: 0 };
            a.post(&write(attempt, 1, BUFFERS, dst + i * 4096, 16));
        }
        a.events(200, Duration::ZERO);
    }
    assert_eq!(rig.reg(1, FIFO_COUNT), 512);
    assert_eq!(rig.counter(1, Counter::FaultsLost), 88);
    assert_ne!(rig.reg(1, IRQ_STATUS) & FAULT_LOST, 0);
    rig.write(1, IRQ_STATUS, 4, u128::from(FAULT_LOST)).unwrap();
    assert_eq!(rig.reg(1, IRQ_STATUS) & FAULT_LOST, 0, "write 1 to clear");
    assert_eq!(drain_fifo(&rig, 1).len(), 512);
}

#[test]
fn the_fifo_pops_only_on_the_second_word_read_right_after_a_valid_first() {
    let (rig, iommu) = rig_with(1);
    let (mut a, _b) = (rig.r5(0), rig.r5(1));
    for (tid, page) in [(1u16, 0u64), (2, 1)] {
        iommu.mark(0, BUFFERS + page * 4096, Page::Fault, None);
        a.post(&write(Attempt { pd: pd(0), tid, seq: 0, first_seq: 0 }, 1, BUFFERS, BUFFERS + page * 4096, 8));
    }
    a.events(2, QUIET);
    let first = FaultEntry::new(FaultCode::DestinationFault, pd(0), 0, 1, 0, BUFFERS).encode();
    let count = |rig: &Rig| rig.reg(1, FIFO_COUNT);
    assert_eq!(count(&rig), 2);
    assert_eq!(rig.read(1, FIFO_HI, 8), Ok(u128::from(first[1])), "the second word alone...");
    assert_eq!(count(&rig), 2, "...pops nothing");
    assert_eq!(rig.read(1, FIFO_LO, 8), Ok(u128::from(first[0])));
    assert_eq!(count(&rig), 2, "another access between the words disarms");
    assert_eq!(rig.read(1, FIFO_HI, 8), Ok(u128::from(first[1])));
    assert_eq!(count(&rig), 2);
    rig.read(1, FIFO_LO, 8).unwrap();
    rig.read(1, FIFO_HI, 8).unwrap();
    assert_eq!(count(&rig), 1, "first then second pops");
    let second = FaultEntry::new(FaultCode::DestinationFault, pd(0), 0, 2, 0, BUFFERS + 4096).encode();
    assert_eq!(rig.read(1, FIFO_LO, 16), Ok(u128::from(second[0]) | u128::from(second[1]) << 64), "one 16-byte read");
    assert_eq!(count(&rig), 0);
}
