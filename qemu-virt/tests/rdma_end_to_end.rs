//! User-level RDMA end to end on the host: processes post WQEs into their queue sets, the real
//! R5 scheduler (`r5_firmware::rdma`) of each node drives that node's engine model, packets cross
//! the emulated interconnect, and a stand-in for the kernel resolves faults the way
//! `docs/hw/pldma.md` ("Fault handling") asks. Every byte is checked, every transfer has exactly
//! one CQE. Some run again with the nodes spread over ranks (`qemu_virt::ranks`): the packets
//! then cross between ranks as messages.

mod common;

use common::iommu::{Page, TestIommu};
use common::node::{Node, PATIENT_TIMEOUT_US, Process};
use common::*;
use hal::pldma::codes::{FaultCode, RapfAction};
use hal::pldma::fault::FaultEntry;
use hal::pldma::geometry::Windows;
use hal::pldma::rapf::RapfRequest;
use hal::pldma::{BLOCK_BYTES, PAGE_BYTES};
use proto::rdma::ipc::{RdmaRequest, RdmaStatus};
use proto::rdma::queue::{Cqe, CqeStatus, Direction, Wqe};
use qemu_virt::interconnect::LinkConfig;
use qemu_virt::models::iommu::{Access, Bypass, IoTranslate, StallOutcome};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn clean() -> LinkConfig {
    LinkConfig { latency_us: 0.0, ..LinkConfig::default() }
}

/// Steps every node until `done` holds (fails after `LONG`).
fn run_until(nodes: &mut [Node<'_>], mut done: impl FnMut(&mut [Node<'_>]) -> bool) {
    let until = Instant::now() + LONG * 3;
    while !done(nodes) {
        assert!(Instant::now() < until, "the transfers did not finish");
        for n in nodes.iter_mut() {
            n.step();
        }
        std::thread::sleep(Duration::from_micros(50));
    }
}

fn wqe(direction: Direction, node: u16, len: u32, local: u64, remote: u64, tag: u64) -> Wqe {
    Wqe { direction, node, len, local, remote, tag, notify: None }
}

/// Waits for `n` CQEs of `p`, stepping the nodes.
fn cqes(nodes: &mut [Node<'_>], p: &Process<'_>, n: usize) -> Vec<Cqe> {
    let mut got = Vec::new();
    run_until(nodes, |_| {
        got.extend(p.completions());
        got.len() >= n
    });
    assert_eq!(got.len(), n, "exactly one CQE per WQE");
    got
}

fn ok(tag: u64, wq_index: u32, len: u32, node: u16) -> Cqe {
    Cqe::Local { tag, wq_index, len, status: CqeStatus::Ok, node }
}

fn bypass(nodes: usize) -> Vec<Arc<dyn IoTranslate>> {
    (0..nodes).map(|_| Arc::new(Bypass) as Arc<dyn IoTranslate>).collect()
}

#[test]
fn writes_and_reads_of_many_sizes_between_two_nodes() {
    writes_and_reads_of_many_sizes(&Rig::clean(2));
}

#[test]
fn writes_and_reads_of_many_sizes_between_two_nodes_on_two_ranks() {
    writes_and_reads_of_many_sizes(&Rig::over_ranks(2, clean(), bypass(2)));
}

fn writes_and_reads_of_many_sizes(rig: &Rig) {
    let mut nodes = patient_nodes(rig);
    let p0 = nodes[0].register(3);
    let _p1 = nodes[1].register(3);
    let sizes = [1u32, 16, 255, 256, 1000, 4096, 16383, 16384, 16385, 65536 + 7, 1 << 20];
    let mut tag = 0u64;
    for &len in &sizes {
        for (direction, local_off, remote_off) in [
            (Direction::Write, 0u64, 0u64),
            (Direction::Write, 3, 4095),
            (Direction::Read, 17, 0),
            (Direction::Read, 0, 255),
        ] {
            let (local, remote) = (nodes[0].buffer(0) + local_off, nodes[1].buffer(2) + remote_off);
            let data = pattern(tag, len as usize);
            let (from, at) = if direction == Direction::Write { (0, local) } else { (1, remote) };
            rig.fill(from, at, &data);
            assert!(p0.submit(&wqe(direction, 1, len, local, remote, tag)));
            let cqe = cqes(&mut nodes, &p0, 1);
            assert_eq!(cqe, [ok(tag, tag as u32, len, 1)], "{direction:?} of {len} bytes");
            let (to, at) = if direction == Direction::Write { (1, remote) } else { (0, local) };
            assert_eq!(rig.bytes(to, at, len as usize), data, "{direction:?} of {len} bytes");
            tag += 1;
        }
    }
    let stats = nodes[0].scheduler.stats();
    assert_eq!((stats.transfers_completed, stats.timeout_retransmits), (tag, 0));
    // The target's R5 served each block of the reads (destination windows of the local buffer).
    let read_blocks: u64 = sizes
        .iter()
        .flat_map(|&len| {
            [17u64, 0].map(|off| Windows::blocks(nodes[0].buffer(0) + off, u64::from(len)).unwrap().count())
        })
        .sum();
    assert_eq!(nodes[1].scheduler.stats().read_requests_served, read_blocks);
}

fn lossy() -> LinkConfig {
    LinkConfig { latency_us: 0.0, loss: 0.01, duplicate: 0.01, reorder: 0.01, seed: 5, lose_first: 0 }
}

#[test]
fn concurrent_transfers_of_four_nodes_survive_loss_duplication_and_reordering() {
    concurrent_transfers_survive_loss_duplication_and_reordering(&Rig::new(4, lossy()));
}

#[test]
fn concurrent_transfers_of_four_nodes_on_four_ranks_survive_loss_duplication_and_reordering() {
    concurrent_transfers_survive_loss_duplication_and_reordering(&Rig::over_ranks(4, lossy(), bypass(4)));
}

fn concurrent_transfers_survive_loss_duplication_and_reordering(rig: &Rig) {
    // A timeout well above a block's round trip even on a loaded machine: then only lost packets
    // make timeouts fire.
    let mut nodes: Vec<Node<'_>> = (0..4).map(|n| Node::with_timeout(rig, n, 250_000)).collect();
    let procs: Vec<Process<'_>> = (0..4).map(|n| nodes[n].register(7)).collect();
    // Each node writes to or reads from every other node; sizes vary.
    let mut expected: HashMap<(usize, u64), (usize, u64, Vec<u8>)> = HashMap::new();
    let mut tag = 0u64;
    for from in 0..4usize {
        for k in 0..8u64 {
            let to = (from + 1 + (k as usize % 3)) % 4;
            let len = [100u32, 5000, 16384, 40_000, 70_000, 200_000][(k % 6) as usize];
            let direction = if k % 2 == 0 { Direction::Write } else { Direction::Read };
            // Disjoint buffers of 256 KiB: locally the k-th of the first 2 MiB; remotely the k-th
            // of the 2 MiB that node `from` has at every other node.
            let local = nodes[from].buffer(0) + k * 0x4_0000;
            let remote = nodes[to].buffer(4 + 2 * from as u64) + k * 0x4_0000;
            let data = pattern(tag, len as usize);
            let (src_node, src, dst_node, dst) =
                if direction == Direction::Write { (from, local, to, remote) } else { (to, remote, from, local) };
            rig.fill(src_node, src, &data);
            assert!(procs[from].submit(&wqe(direction, to as u16, len, local, remote, tag)));
            expected.insert((from, tag), (dst_node, dst, data));
            tag += 1;
        }
    }
    let mut done: HashMap<(usize, u64), Cqe> = HashMap::new();
    run_until(&mut nodes, |_| {
        for (n, p) in procs.iter().enumerate() {
            for c in p.completions() {
                let Cqe::Local { tag, .. } = c else { panic!("{c:?}") };
                assert!(done.insert((n, tag), c).is_none(), "one CQE per transfer");
            }
        }
        done.len() == expected.len()
    });
    for ((n, tag), (dst_node, dst, data)) in &expected {
        let Cqe::Local { status, len, .. } = done[&(*n, *tag)] else { panic!() };
        assert_eq!(status, CqeStatus::Ok, "transfer {tag}");
        assert_eq!(len as usize, data.len());
        assert_eq!(&rig.bytes(*dst_node, *dst, data.len()), data, "transfer {tag}'s bytes");
    }
    let timeouts: u64 = nodes.iter().map(|n| n.scheduler.stats().timeout_retransmits).sum();
    let dropped = rig.links_dropped();
    assert!(dropped > 0, "the links lost packets");
    assert!(timeouts > 0 && timeouts <= dropped, "timeouts ({timeouts}) only for lost packets ({dropped})");
}

/// What the kernel's fault handler does with each fault entry: maps the faulting page and the
/// rest of its 16 KiB window (touch-ahead), then tells the owner's R5.
fn kernel_resolves(node: &mut Node<'_>, iommu: &TestIommu, action: RapfAction) -> Vec<FaultEntry> {
    let rig = node.rig;
    let me = node.node as u16;
    let mut handled = Vec::new();
    loop {
        // As `hal::pldma::driver::FaultFifo::pop`: the second word only after a valid first.
        let lo = rig.read(node.node, FIFO_LO, 8).unwrap() as u64;
        if lo & 1 == 0 {
            return handled;
        }
        let hi = rig.read(node.node, FIFO_HI, 8).unwrap() as u64;
        let Some(e) = FaultEntry::decode(lo, hi).unwrap() else { return handled };
        let window = e.page_va() & !(BLOCK_BYTES - 1);
        if action == RapfAction::Retry {
            for page in 0..BLOCK_BYTES / PAGE_BYTES {
                iommu.map(e.pd.raw(), window + page * PAGE_BYTES);
            }
        }
        if e.node == me {
            let status = node.request(RdmaRequest::FaultResolved { pd: e.pd, tid: e.tid, seq: e.seq, action });
            assert!(matches!(status, RdmaStatus::Ok | RdmaStatus::Stale), "{status:?}");
        } else {
            let rapf = RapfRequest { node: e.node, tid: e.tid, seq: e.seq, action, claimed_pd: e.pd.raw() };
            rig.write(node.node, pd_page(e.pd.raw(), PD_RAPF), 8, u128::from(rapf.encode().unwrap())).unwrap();
        }
        handled.push(e);
    }
}

/// Two nodes whose timeouts cannot fire before a fault is resolved.
fn patient_nodes(rig: &Rig) -> Vec<Node<'_>> {
    vec![Node::with_timeout(rig, 0, PATIENT_TIMEOUT_US), Node::with_timeout(rig, 1, PATIENT_TIMEOUT_US)]
}

/// Two nodes (on one rank each, or both on one); the returned stand-in translates for node
/// `faulty`.
fn faulty_rig(faulty: usize, ranks: usize) -> (Rig, Arc<TestIommu>) {
    let iommu = Arc::new(TestIommu::new());
    let iommus: Vec<Arc<dyn IoTranslate>> =
        (0..2).map(|n| if n == faulty { iommu.clone() as Arc<dyn IoTranslate> } else { Arc::new(Bypass) }).collect();
    (Rig::over_ranks(ranks, clean(), iommus), iommu)
}

#[test]
fn destination_faults_are_resolved_by_rapf_without_a_timeout() {
    destination_faults_are_resolved_by_rapf(1);
}

#[test]
fn destination_faults_are_resolved_by_rapf_without_a_timeout_on_two_ranks() {
    destination_faults_are_resolved_by_rapf(2);
}

fn destination_faults_are_resolved_by_rapf(ranks: usize) {
    let (rig, iommu) = faulty_rig(1, ranks);
    let mut nodes = patient_nodes(&rig);
    let p0 = nodes[0].register(2);
    nodes[1].register(2);
    let len = 64 * 1024u32;
    let (local, remote) = (nodes[0].buffer(0), nodes[1].buffer(1));
    // Nothing of the destination is mapped.
    for page in 0..u64::from(len) / PAGE_BYTES {
        iommu.mark(2, remote + page * PAGE_BYTES, Page::Fault, Some(Access::Write));
    }
    let data = pattern(1, len as usize);
    rig.fill(0, local, &data);
    assert!(p0.submit(&wqe(Direction::Write, 1, len, local, remote, 99)));
    let mut faults = Vec::new();
    let mut got = Vec::new();
    run_until(&mut nodes, |nodes| {
        faults.extend(kernel_resolves(&mut nodes[1], &iommu, RapfAction::Retry));
        got.extend(p0.completions());
        !got.is_empty()
    });
    assert_eq!(got, [ok(99, 0, len, 1)]);
    assert_eq!(rig.bytes(1, remote, len as usize), data);
    assert!(faults.iter().all(|f| f.code == FaultCode::DestinationFault && f.node == 0));
    // Each block faults on its first page at least; its pages that fault before the kernel's
    // touch-ahead maps the whole window are logged too. The first entry's RAPF retransmits the
    // block; the engine lets one RAPF through per faulted attempt, so the others' are refused
    // at node 1's engine, or (an attempt that faulted again) stale at the R5.
    assert!((4..=16).contains(&faults.len()), "{} faults", faults.len());
    let s = nodes[0].scheduler.stats();
    assert_eq!(s.timeout_retransmits, 0, "no timeout fired ({PATIENT_TIMEOUT_US} us)");
    assert_eq!(s.rapf_retransmits, 4);
    let refused = u64::from(rig.reg(1, pd_page(2, PD_RAPF_REFUSED)));
    assert!(s.stale_messages + refused >= faults.len() as u64 - 4, "{} stale, {refused} refused", s.stale_messages);
}

#[test]
fn source_faults_are_resolved_by_the_local_message_without_a_timeout() {
    let (rig, iommu) = faulty_rig(0, 1);
    let mut nodes = patient_nodes(&rig);
    let p0 = nodes[0].register(4);
    nodes[1].register(4);
    let len = 40_000u32;
    let (local, remote) = (nodes[0].buffer(0) + 0x800, nodes[1].buffer(1));
    for page in 0..12 {
        iommu.mark(4, local + page * PAGE_BYTES, Page::Fault, Some(Access::Read));
    }
    let data = pattern(2, len as usize);
    rig.fill(0, local, &data);
    assert!(p0.submit(&wqe(Direction::Write, 1, len, local, remote, 5)));
    let mut got = Vec::new();
    let mut faults = Vec::new();
    run_until(&mut nodes, |nodes| {
        faults.extend(kernel_resolves(&mut nodes[0], &iommu, RapfAction::Retry));
        got.extend(p0.completions());
        !got.is_empty()
    });
    assert_eq!(got, [ok(5, 0, len, 1)]);
    assert_eq!(rig.bytes(1, remote, len as usize), data);
    assert!(faults.iter().all(|f| f.code == FaultCode::SourceFault && f.node == 0));
    let s = nodes[0].scheduler.stats();
    assert_eq!(s.timeout_retransmits, 0);
    assert!(s.local_retransmits >= 1);
}

#[test]
fn a_stalled_source_needs_no_retransmission_at_all() {
    let (rig, iommu) = faulty_rig(0, 1);
    let mut nodes = patient_nodes(&rig);
    let p0 = nodes[0].register(1);
    nodes[1].register(1);
    let (local, remote) = (nodes[0].buffer(0), nodes[1].buffer(0));
    iommu.mark(1, local + PAGE_BYTES, Page::Stall, Some(Access::Read));
    let data = pattern(3, 20_000);
    rig.fill(0, local, &data);
    assert!(p0.submit(&wqe(Direction::Write, 1, 20_000, local, remote, 1)));
    let mut got = Vec::new();
    run_until(&mut nodes, |_| {
        // The kernel: stall mode, map and RESUME with retry.
        for (id, stream, va) in iommu.stalled() {
            iommu.map(stream, va);
            iommu.resume(id, StallOutcome::Retry);
        }
        got.extend(p0.completions());
        !got.is_empty()
    });
    assert_eq!(got, [ok(1, 0, 20_000, 1)]);
    assert_eq!(rig.bytes(1, remote, 20_000), data);
    let s = nodes[0].scheduler.stats();
    assert_eq!((s.timeout_retransmits, s.rapf_retransmits, s.local_retransmits), (0, 0, 0));
}

#[test]
fn an_address_outside_every_region_ends_in_an_error_completion() {
    let (rig, iommu) = faulty_rig(1, 1);
    let mut nodes = vec![Node::start(&rig, 0), Node::start(&rig, 1)];
    let p0 = nodes[0].register(2);
    nodes[1].register(2);
    let remote = nodes[1].buffer(3);
    iommu.mark(2, remote, Page::Fault, None);
    assert!(p0.submit(&wqe(Direction::Write, 1, 100, nodes[0].buffer(0), remote, 7)));
    let mut got = Vec::new();
    run_until(&mut nodes, |nodes| {
        kernel_resolves(&mut nodes[1], &iommu, RapfAction::Abort);
        got.extend(p0.completions());
        !got.is_empty()
    });
    assert_eq!(got, [Cqe::Local { tag: 7, wq_index: 0, len: 0, status: CqeStatus::FaultRemote, node: 1 }]);
    // The node keeps working.
    iommu.map(2, remote);
    assert!(p0.submit(&wqe(Direction::Write, 1, 100, nodes[0].buffer(0), remote, 8)));
    assert_eq!(cqes(&mut nodes, &p0, 1), [ok(8, 1, 100, 1)]);
}

#[test]
fn a_notify_write_posts_one_remote_completion_at_the_target() {
    let rig = Rig::clean(2);
    let mut nodes = vec![Node::start(&rig, 0), Node::start(&rig, 1)];
    let p0 = nodes[0].register(6);
    let p1 = nodes[1].register(6);
    let w = Wqe { notify: Some(0x1234), ..wqe(Direction::Write, 1, 50_000, nodes[0].buffer(0), nodes[1].buffer(0), 3) };
    assert!(p0.submit(&w));
    assert_eq!(cqes(&mut nodes, &p0, 1), [ok(3, 0, 50_000, 1)]);
    assert_eq!(cqes(&mut nodes, &p1, 1), [Cqe::RemoteWrite { node: 0, imm: 0x1234 }]);
}

#[test]
fn an_armed_queue_raises_the_completion_interrupt() {
    let rig = Rig::clean(2);
    let mut nodes = vec![Node::start(&rig, 0), Node::start(&rig, 1)];
    rig.write(0, IRQ_ENABLE, 4, 1 << 2).unwrap();
    let p0 = nodes[0].register(5);
    nodes[1].register(5);
    let notified = p0.queues.notified.load(std::sync::atomic::Ordering::Relaxed);
    p0.queues.arm.store(notified + 1, std::sync::atomic::Ordering::Relaxed);
    assert!(p0.submit(&wqe(Direction::Write, 1, 8, nodes[0].buffer(0), nodes[1].buffer(0), 1)));
    cqes(&mut nodes, &p0, 1);
    assert!(rig.line_raised(0, board::pl::irq_line::PLDMA), "the kernel is interrupted");
    assert_eq!(rig.reg(0, CQ_PENDING), 1 << 5, "for PD 5");
}
