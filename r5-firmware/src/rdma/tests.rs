//! The scheduler against a fake engine and queue sets in host memory.

use super::*;
use hal::pldma::codes::{NackCode, PfNackCode, RapfAction, RefusalCode};
use hal::pldma::descriptor::{Attempt, Descriptor, RawDescriptor, WriteKind};
use hal::pldma::event::{Event, TxnRef};
use hal::pldma::geometry::is_block;
use hal::pldma::{BLOCK_BYTES, Pd, seq_next};
use proto::ipc::{Message, op};
use proto::rdma::ipc::{RdmaConfig, RdmaRequest, RdmaStatus};
use proto::rdma::queue::{CQ_ENTRIES, Cqe, CqeStatus, Direction, QUEUE_SET_BYTES, QueueSet, RawWqe, Wqe};
use std::boxed::Box;
use std::vec::Vec;

const ME: u16 = 0;
const PEER: u16 = 1;
const NODES: u16 = 4;
/// 1 tick = 1 us, 1 ms timeouts.
const HZ: u64 = 1_000_000;
const TIMEOUT: u64 = 1000;
const QUEUES: u64 = 0x0510_0000;

#[derive(Default)]
struct FakeEngine {
    posted: Vec<Descriptor>,
    notified: Vec<Pd>,
    full: bool,
}

impl Engine for FakeEngine {
    fn post(&mut self, d: &RawDescriptor) -> bool {
        if self.full {
            return false;
        }
        self.posted.push(Descriptor::decode(d).expect("the scheduler posts well-formed descriptors"));
        true
    }

    fn notify_cq(&mut self, pd: Pd) {
        self.notified.push(pd);
    }
}

/// Eight queue sets at `QUEUES + i * 8 KiB`.
struct Memory {
    sets: Vec<&'static QueueSet>,
}

impl Memory {
    fn new() -> Self {
        let sets = (0..8)
            .map(|_| {
                // SAFETY: all-zero bytes are a fresh queue set (empty rings, nothing armed).
                let set: Box<QueueSet> = unsafe { Box::new(core::mem::zeroed()) };
                &*Box::leak(set)
            })
            .collect();
        Self { sets }
    }
}

impl QueueMemory<'static> for Memory {
    fn queue_set(&self, pa: u64) -> Option<&'static QueueSet> {
        let i = pa.checked_sub(QUEUES)?;
        (i % QUEUE_SET_BYTES == 0).then(|| self.sets.get((i / QUEUE_SET_BYTES) as usize).copied()).flatten()
    }
}

struct Rig {
    s: Scheduler<'static>,
    e: FakeEngine,
    mem: Memory,
    now: u64,
    seq: u32,
}

fn pd(n: u16) -> Pd {
    Pd::new(n).unwrap()
}

fn write(len: u32, remote: u64, tag: u64) -> Wqe {
    Wqe { direction: Direction::Write, node: PEER, len, local: 0x10_0000, remote, tag, notify: None }
}

impl Rig {
    fn new() -> Self {
        let mut s = Scheduler::new();
        s.start(ME, NODES, RdmaConfig::with_timeout_us(TIMEOUT), HZ);
        Self { s, e: FakeEngine::default(), mem: Memory::new(), now: 0, seq: 0 }
    }

    fn request(&mut self, r: RdmaRequest) -> Message {
        self.seq += 1;
        self.send(r.encode(self.seq))
    }

    fn send(&mut self, m: Message) -> Message {
        let reply = self.s.handle_request(&m, &self.mem, &mut self.e, self.now).expect("an RDMA request");
        assert_eq!((reply.op, reply.seq), (m.op | op::REPLY, m.seq));
        reply
    }

    fn status(&mut self, r: RdmaRequest) -> RdmaStatus {
        RdmaStatus::from_raw(self.request(r).args[0]).unwrap()
    }

    /// Registers PD `p` with queue set `p`.
    fn register(&mut self, p: u16) -> &'static QueueSet {
        let pa = QUEUES + u64::from(p) * QUEUE_SET_BYTES;
        assert_eq!(self.status(RdmaRequest::Register { pd: pd(p), queue_set: pa }), RdmaStatus::Ok);
        self.mem.sets[usize::from(p)]
    }

    fn queues(&self, p: u16) -> &'static QueueSet {
        self.mem.sets[usize::from(p)]
    }

    /// The process's side: a WQE, then the doorbell.
    fn submit(&mut self, p: u16, w: Wqe) {
        self.submit_raw(p, w.encode());
    }

    fn submit_raw(&mut self, p: u16, raw: RawWqe) {
        // SAFETY: the test is the process: the WQ's only producer.
        unsafe { self.queues(p).wq.producer() }.push(raw).expect("room in the WQ");
        self.event(Event::Doorbell { pd: pd(p), value: 0 });
    }

    fn event(&mut self, e: Event) {
        self.s.on_event(&e.encode(), &mut self.e, self.now);
        self.s.poll(&mut self.e, self.now);
    }

    fn after(&mut self, ticks: u64) {
        self.now += ticks;
        self.s.poll(&mut self.e, self.now);
    }

    fn posted(&mut self) -> Vec<Descriptor> {
        std::mem::take(&mut self.e.posted)
    }

    /// The CQEs PD `p`'s process reads.
    fn cqes(&self, p: u16) -> Vec<Cqe> {
        // SAFETY: the test is the process: the CQ's only consumer.
        let mut c = unsafe { self.queues(p).cq.consumer() };
        core::iter::from_fn(|| c.pop()).map(|raw| Cqe::decode(&raw).unwrap()).collect()
    }
}

/// The attempt of a posted WriteBlock or ReadRequest.
fn attempt_of(d: &Descriptor) -> Attempt {
    match *d {
        Descriptor::WriteBlock { attempt, .. } | Descriptor::ReadRequest { attempt, .. } => attempt,
        Descriptor::Nack { .. } => panic!("a block's descriptor: {d:?}"),
    }
}

fn txn(a: Attempt) -> TxnRef {
    TxnRef { pd: a.pd, tid: a.tid, seq: a.seq }
}

fn ack(r: &mut Rig, node: u16, a: Attempt) {
    r.event(Event::Ack { node, txn: txn(a) });
}

fn ok_cqe(tag: u64, wq_index: u32, len: u32) -> Cqe {
    Cqe::Local { tag, wq_index, len, status: CqeStatus::Ok, node: PEER }
}

#[test]
fn a_write_is_cut_into_blocks_with_at_most_two_in_flight() {
    let mut r = Rig::new();
    r.register(2);
    r.submit(2, write(5 * 16384 - 100, 100, 77));
    let mut pending = r.posted();
    assert_eq!(pending.len(), 2, "the window: 2 blocks (seed 002 §1.3.2)");
    let mut all = Vec::new();
    while !pending.is_empty() {
        let d = pending.remove(0);
        all.push(d);
        ack(&mut r, PEER, attempt_of(&d));
        let more = r.posted();
        assert!(more.len() <= 1, "one block out for each one in");
        pending.extend(more);
        assert!(pending.len() <= 2);
    }
    assert_eq!(all.len(), 5, "every block once");
    let tids: std::collections::HashSet<u16> = all.iter().map(|d| attempt_of(d).tid).collect();
    assert!(tids.len() >= 2, "blocks in flight together have distinct tids");
    assert_eq!(r.cqes(2), [ok_cqe(77, 0, 5 * 16384 - 100)], "one CQE, success");
    let s = r.s.stats();
    assert_eq!((s.transfers_started, s.transfers_completed, s.blocks_sent, s.blocks_acked), (1, 1, 5, 5));
    assert_eq!(s.timeout_retransmits, 0);
}

#[test]
fn transfers_of_every_size_and_alignment_are_cut_on_destination_windows() {
    for len in [1u32, 255, 256, 16383, 16384, 16385, 40_000, 1 << 20] {
        for remote_off in [0u64, 1, 4095, 16383] {
            let mut r = Rig::new();
            r.register(0);
            let remote = 0x2000_0000 + remote_off;
            r.submit(0, Wqe { direction: Direction::Write, node: 3, len, local: 0x77, remote, tag: 1, notify: None });
            let mut total = 0u64;
            let mut blocks = 0;
            loop {
                let posted = r.posted();
                if posted.is_empty() {
                    break;
                }
                for d in posted {
                    let Descriptor::WriteBlock { src, dst, len: n, node, kind, .. } = d else { panic!() };
                    assert_eq!((node, kind), (3, WriteKind::Write));
                    assert!(is_block(dst, u64::from(n)), "{dst:#x}+{n}");
                    assert_eq!(dst - remote, src - 0x77, "source and destination at the same offset");
                    assert_eq!(dst - remote, total, "in order");
                    total += u64::from(n);
                    blocks += 1;
                    ack(&mut r, 3, attempt_of(&d));
                }
            }
            assert_eq!(total, u64::from(len));
            assert_eq!(blocks, (remote + u64::from(len)).div_ceil(BLOCK_BYTES) - remote / BLOCK_BYTES);
            assert_eq!(r.cqes(0).len(), 1);
        }
    }
}

#[test]
fn a_timeout_retransmits_with_a_new_seq_and_is_counted_then_the_transfer_fails() {
    let mut r = Rig::new();
    r.register(1);
    r.submit(1, write(100, 0, 5));
    let [d] = r.posted()[..] else { panic!() };
    let a = attempt_of(&d);
    r.after(TIMEOUT - 1);
    assert!(r.posted().is_empty(), "not yet");
    r.after(1);
    let [d2] = r.posted()[..] else { panic!("retransmitted at the timeout") };
    let a2 = attempt_of(&d2);
    assert_eq!((a2.tid, a2.first_seq, a2.seq), (a.tid, a.first_seq, seq_next(a.seq)));
    assert_eq!(r.s.stats().timeout_retransmits, 1);
    let max = r.s.config().max_timeouts;
    for _ in 1..max {
        r.after(TIMEOUT);
    }
    assert_eq!(r.posted().len(), usize::from(max) - 1);
    assert_eq!(r.s.stats().timeout_retransmits, u64::from(max));
    assert!(r.cqes(1).is_empty());
    r.after(TIMEOUT);
    assert!(r.posted().is_empty());
    assert_eq!(r.cqes(1), [Cqe::Local { tag: 5, wq_index: 0, len: 0, status: CqeStatus::Timeout, node: PEER }]);
    assert_eq!(r.s.next_deadline(), None, "nothing armed any more");
}

#[test]
fn an_ack_of_any_attempt_of_the_block_completes_it() {
    let mut r = Rig::new();
    r.register(1);
    r.submit(1, write(100, 0, 5));
    let a = attempt_of(&r.posted()[0]);
    r.after(TIMEOUT);
    r.posted();
    ack(&mut r, PEER, a);
    assert_eq!(r.cqes(1).len(), 1, "the first attempt's ACK: its packets completed the block");
    ack(&mut r, PEER, Attempt { seq: seq_next(a.seq), ..a });
    assert_eq!(r.s.stats().stale_messages, 1, "the second ACK finds the transaction gone");
    assert!(r.cqes(1).is_empty(), "exactly one CQE");
}

#[test]
fn a_pf_nack_pauses_the_block_and_a_rapf_retransmits_at_once() {
    let mut r = Rig::new();
    r.register(3);
    r.submit(3, write(16384, 0, 9));
    let a = attempt_of(&r.posted()[0]);
    for index in 0..16 {
        let e = Event::PfNack { node: PEER, txn: txn(a), index, code: PfNackCode::Destination, va: 0x3000 };
        r.event(e);
    }
    assert_eq!(r.s.stats().pf_nacks, 16, "one per packet; all but the first change nothing");
    r.after(TIMEOUT / 2);
    assert!(r.posted().is_empty(), "paused: no retransmission");
    r.event(Event::Rapf { node: PEER, txn: txn(a), claimed: 3, action: RapfAction::Retry });
    let [d] = r.posted()[..] else { panic!("the RAPF retransmits at once") };
    let a2 = attempt_of(&d);
    assert_eq!(a2.seq, seq_next(a.seq));
    assert_eq!(r.s.stats().rapf_retransmits, 1);
    // A second RAPF for the same (old) attempt, e.g. for another page: stale.
    r.event(Event::Rapf { node: PEER, txn: txn(a), claimed: 3, action: RapfAction::Retry });
    assert!(r.posted().is_empty());
    assert_eq!(r.s.stats().stale_messages, 1);
    ack(&mut r, PEER, a2);
    assert_eq!(r.cqes(3), [ok_cqe(9, 0, 16384)]);
    assert_eq!(r.s.stats().timeout_retransmits, 0, "no timeout fired");
}

#[test]
fn a_paused_block_keeps_its_timeout_as_a_safety_net() {
    let mut r = Rig::new();
    r.register(3);
    r.submit(3, write(64, 0, 9));
    let a = attempt_of(&r.posted()[0]);
    r.event(Event::PfNack { node: PEER, txn: txn(a), index: 0, code: PfNackCode::Destination, va: 0 });
    r.after(TIMEOUT);
    assert!(r.posted().is_empty(), "paused: the kernel is resolving the fault, one timeout is not enough");
    r.after(super::events::PAUSED_TIMEOUTS * TIMEOUT);
    assert_eq!(r.posted().len(), 1, "the RAPF was lost: the paused timeout resends");
    assert_eq!((r.s.stats().timeout_retransmits, r.s.stats().paused_timeouts), (1, 1));
}

#[test]
fn a_resumed_stall_puts_the_block_back_under_its_ordinary_timeout() {
    let mut r = Rig::new();
    r.register(3);
    r.submit(3, write(64, 0, 9));
    let a = attempt_of(&r.posted()[0]);
    let pf = |code| Event::PfNack { node: PEER, txn: txn(a), index: 0, code, va: 0 };
    r.event(pf(PfNackCode::Stalled));
    r.after(TIMEOUT);
    assert!(r.posted().is_empty(), "stalled: paused");
    r.event(pf(PfNackCode::Resumed));
    assert!(r.posted().is_empty(), "resumed: nothing is resent");
    assert_eq!(r.s.stats().stalls_resumed, 1);
    r.event(pf(PfNackCode::Resumed));
    assert_eq!(r.s.stats().stalls_resumed, 1, "not paused: a second Resumed changes nothing");
    r.after(TIMEOUT);
    assert_eq!(r.posted().len(), 1, "the ACK was lost: one ordinary timeout resends, not the paused one");
    assert_eq!((r.s.stats().timeout_retransmits, r.s.stats().paused_timeouts), (1, 0));
    // A Resumed about the old attempt is stale.
    r.event(pf(PfNackCode::Resumed));
    assert_eq!(r.s.stats().stale_messages, 1);
}

#[test]
fn stale_and_foreign_messages_are_ignored_and_counted() {
    let mut r = Rig::new();
    r.register(3);
    r.register(4);
    r.submit(3, write(64, 0, 9));
    let a = attempt_of(&r.posted()[0]);
    let t = txn(a);
    let other_pd = TxnRef { pd: pd(4), ..t };
    let old = TxnRef { seq: a.seq.wrapping_sub(1) & 0x3fff, ..t };
    let idle_tid = TxnRef { tid: (a.tid + 1) % 256, ..t };
    let rapf = |node, txn, claimed| Event::Rapf { node, txn, claimed, action: RapfAction::Retry };
    let foreign = [
        // The wired PD is not the claimed one (a process lying about its PD).
        rapf(PEER, t, 4),
        // Another PD's page (wired = claimed = 4) about PD 3's transaction.
        rapf(PEER, other_pd, 4),
        // From a node that has no say in this transfer.
        rapf(2, t, 3),
        Event::Ack { node: 2, txn: t },
        Event::Ack { node: ME, txn: t },
        Event::Ack { node: PEER, txn: other_pd },
        Event::Nack { node: 2, txn: t, index: 0, code: NackCode::WriteError },
    ];
    let stale = [
        rapf(PEER, old, 3),
        rapf(PEER, idle_tid, 3),
        Event::Ack { node: PEER, txn: old },
        Event::Nack { node: PEER, txn: old, index: 0, code: NackCode::WriteError },
        Event::PfNack { node: PEER, txn: old, index: 0, code: PfNackCode::Destination, va: 0 },
        Event::DescRefused { code: RefusalCode::Malformed, position: 0, pd: 3, tid: a.tid, seq: old.seq },
    ];
    for e in foreign.iter().chain(&stale) {
        r.event(*e);
    }
    assert!(r.posted().is_empty(), "no retransmission");
    assert!(r.cqes(3).is_empty(), "no completion, no failure");
    assert_eq!(r.s.stats().foreign_messages, foreign.len() as u64);
    assert_eq!(r.s.stats().stale_messages, stale.len() as u64);
    let mut raw = Event::Ack { node: PEER, txn: t }.encode();
    raw.kind = 0x42;
    r.s.on_event(&raw, &mut r.e, r.now);
    assert_eq!(r.s.stats().malformed_events, 1);
    // The real ACK still completes it.
    ack(&mut r, PEER, a);
    assert_eq!(r.cqes(3).len(), 1);
}

#[test]
fn the_local_fault_message_retransmits_and_abort_fails_with_the_side_that_faulted() {
    let mut r = Rig::new();
    r.register(5);
    r.submit(5, write(64, 0, 1));
    r.submit(5, write(64, 0x10_0000, 2));
    let posted = r.posted();
    let (a, b) = (attempt_of(&posted[0]), attempt_of(&posted[1]));
    // A source fault at this node: the engine's local PF-NACK, then the kernel's message.
    r.event(Event::PfNack { node: ME, txn: txn(a), index: 0, code: PfNackCode::Source, va: 0x10_0000 });
    let resolved = |a: Attempt, action| RdmaRequest::FaultResolved { pd: a.pd, tid: a.tid, seq: a.seq, action };
    assert_eq!(r.status(resolved(a, RapfAction::Retry)), RdmaStatus::Ok);
    let [d] = r.posted()[..] else { panic!("retransmitted at once") };
    assert_eq!(attempt_of(&d).seq, seq_next(a.seq));
    assert_eq!(r.s.stats().local_retransmits, 1);
    assert_eq!(r.status(resolved(a, RapfAction::Retry)), RdmaStatus::Stale, "the old seq again");
    let other = Attempt { pd: pd(6), ..a };
    assert_eq!(r.status(resolved(Attempt { seq: seq_next(a.seq), ..other }, RapfAction::Retry)), RdmaStatus::Foreign);
    // The kernel found no region: the transfer fails, this side's fault.
    assert_eq!(r.status(resolved(attempt_of(&d), RapfAction::Abort)), RdmaStatus::Ok);
    // The peer's kernel aborts the other one: the remote side's fault.
    r.event(Event::Rapf { node: PEER, txn: txn(b), claimed: 5, action: RapfAction::Abort });
    let mut cqes = r.cqes(5);
    cqes.sort_by_key(|c| match c {
        Cqe::Local { tag, .. } => *tag,
        Cqe::RemoteWrite { .. } => 0,
    });
    let status = |c: &Cqe| match c {
        Cqe::Local { status, .. } => *status,
        Cqe::RemoteWrite { .. } => panic!(),
    };
    assert_eq!(cqes.iter().map(status).collect::<Vec<_>>(), [CqeStatus::FaultLocal, CqeStatus::FaultRemote]);
    // Late messages of the failed transfers are stale.
    ack(&mut r, PEER, b);
    assert!(r.cqes(5).is_empty());
}

#[test]
fn the_last_block_of_a_notify_write_waits_and_notifies_again_when_resent() {
    let mut r = Rig::new();
    r.register(1);
    r.submit(1, Wqe { notify: Some(0xabc), ..write(3 * 16384, 0, 4) });
    let first = r.posted();
    assert_eq!(first.len(), 2);
    ack(&mut r, PEER, attempt_of(&first[0]));
    assert!(r.posted().is_empty(), "the last block waits for every other ACK");
    ack(&mut r, PEER, attempt_of(&first[1]));
    let [last] = r.posted()[..] else { panic!() };
    let Descriptor::WriteBlock { kind: WriteKind::Notify { imm: 0xabc }, attempt: a, .. } = last else {
        panic!("{last:?}")
    };
    assert!(matches!(first[0], Descriptor::WriteBlock { kind: WriteKind::Write, .. }));
    // The target faults on it; after the RAPF the resent block carries the notification again.
    r.event(Event::PfNack { node: PEER, txn: txn(a), index: 0, code: PfNackCode::Destination, va: 0 });
    r.event(Event::Rapf { node: PEER, txn: txn(a), claimed: 1, action: RapfAction::Retry });
    let [again] = r.posted()[..] else { panic!() };
    assert!(matches!(again, Descriptor::WriteBlock { kind: WriteKind::Notify { imm: 0xabc }, .. }));
    ack(&mut r, PEER, attempt_of(&again));
    assert_eq!(r.cqes(1), [ok_cqe(4, 0, 3 * 16384)]);
}

#[test]
fn nacks_retransmit_at_once_a_bounded_number_of_times() {
    let mut r = Rig::new();
    r.register(0);
    r.submit(0, write(64, 0, 1));
    let mut a = attempt_of(&r.posted()[0]);
    let max = r.s.config().max_nack_retries;
    for _ in 0..max {
        r.event(Event::Nack { node: PEER, txn: txn(a), index: 0, code: NackCode::WriteError });
        let [d] = r.posted()[..] else { panic!("resent at once") };
        a = attempt_of(&d);
    }
    r.event(Event::Nack { node: PEER, txn: txn(a), index: 0, code: NackCode::WriteError });
    assert!(r.posted().is_empty());
    assert_eq!(r.cqes(0), [Cqe::Local { tag: 1, wq_index: 0, len: 0, status: CqeStatus::RemoteError, node: PEER }]);
    assert_eq!(r.s.stats().nack_retransmits, u64::from(max));
    // A target without a process of the PD: final at once.
    r.submit(0, write(64, 0, 2));
    let a = attempt_of(&r.posted()[0]);
    r.event(Event::Nack { node: PEER, txn: txn(a), index: 0, code: NackCode::NoPd });
    assert_eq!(r.cqes(0), [Cqe::Local { tag: 2, wq_index: 1, len: 0, status: CqeStatus::NoRemotePd, node: PEER }]);
}

#[test]
fn a_read_is_requested_per_block_and_acknowledged_by_this_node() {
    let mut r = Rig::new();
    r.register(2);
    r.submit(
        2,
        Wqe { direction: Direction::Read, node: 3, len: 20_000, local: 0x8000, remote: 0x5, tag: 8, notify: None },
    );
    let posted = r.posted();
    assert_eq!(posted.len(), 2);
    let Descriptor::ReadRequest { node: 3, src, dst, len, .. } = posted[0] else { panic!() };
    assert_eq!((src, dst, len), (0x5, 0x8000, 16384), "cut on the local (destination) windows");
    // The data comes from node 3 but this node's engine acknowledges the block.
    r.event(Event::Ack { node: 3, txn: txn(attempt_of(&posted[0])) });
    assert_eq!(r.s.stats().foreign_messages, 1);
    for d in &posted {
        ack(&mut r, ME, attempt_of(d));
    }
    assert_eq!(r.cqes(2), [Cqe::Local { tag: 8, wq_index: 0, len: 20_000, status: CqeStatus::Ok, node: 3 }]);
}

#[test]
fn remote_reads_are_served_as_write_backs_without_state() {
    let mut r = Rig::new();
    r.register(6);
    let attempt = Attempt { pd: pd(6), tid: 900, seq: 12, first_seq: 11 };
    r.event(Event::ReadRequest { node: 2, attempt, src: 0x1000, dst: 0x4000, len: 300 });
    assert_eq!(
        r.posted(),
        [Descriptor::WriteBlock {
            vc: 0,
            attempt,
            node: 2,
            src: 0x1000,
            dst: 0x4000,
            len: 300,
            kind: WriteKind::ReadResponse
        }]
    );
    // No process of PD 7 here: refused.
    let attempt7 = Attempt { pd: pd(7), ..attempt };
    r.event(Event::ReadRequest { node: 2, attempt: attempt7, src: 0, dst: 0, len: 1 });
    assert_eq!(r.posted(), [Descriptor::Nack { vc: 0, pd: pd(7), tid: 900, seq: 12, node: 2, code: NackCode::NoPd }]);
    let s = r.s.stats();
    assert_eq!((s.read_requests_served, s.read_requests_refused), (1, 1));
    assert_eq!(r.s.next_deadline(), None, "nothing to time out: the requester owns it");
}

#[test]
fn malformed_wqes_get_a_bad_request_cqe() {
    let mut r = Rig::new();
    r.register(1);
    let mut bad_op = write(8, 0, 11).encode();
    bad_op.op = 7;
    let bad_node = Wqe { node: NODES, ..write(8, 0, 12) }.encode();
    let mut zero = write(8, 0, 13).encode();
    zero.len = 0;
    let mut past_user_half = write(8, 0, 14).encode();
    past_user_half.remote = 1 << 48;
    for raw in [bad_op, bad_node, zero, past_user_half] {
        r.submit_raw(1, raw);
    }
    r.submit(1, write(8, 0, 15));
    let cqes = r.cqes(1);
    let bad = |tag, wq_index, node| Cqe::Local { tag, wq_index, len: 0, status: CqeStatus::BadRequest, node };
    assert_eq!(cqes, [bad(11, 0, PEER), bad(12, 1, NODES), bad(13, 2, PEER), bad(14, 3, PEER)]);
    assert_eq!(r.s.stats().bad_wqes, 4);
    assert_eq!(r.queues(1).bad_wqes.load(core::sync::atomic::Ordering::Acquire), 4, "the process sees its count");
    assert_eq!(r.posted().len(), 1, "the good one went");
}

#[test]
fn the_cq_always_has_room_for_the_transfers_taken() {
    let mut r = Rig::new();
    r.register(0);
    let q = r.queues(0);
    let mut posted = Vec::new();
    // The process keeps its WQ full and never reads its CQ.
    let mut submitted = 0;
    for _ in 0..200 {
        // SAFETY: the test is the process.
        while unsafe { q.wq.producer() }.push(write(8, 0, submitted).encode()).is_ok() {
            submitted += 1;
        }
        r.event(Event::Doorbell { pd: pd(0), value: 0 });
        for d in r.posted() {
            posted.push(d);
            ack(&mut r, PEER, attempt_of(&d));
        }
    }
    assert_eq!(q.cq.len(), CQ_ENTRIES, "the CQ filled up");
    assert_eq!(r.s.stats().transfers_started, CQ_ENTRIES as u64, "and no more was taken");
    assert_eq!(posted.len(), CQ_ENTRIES);
    // Reading CQEs makes room.
    assert_eq!(r.cqes(0).len(), CQ_ENTRIES);
    r.after(1);
    assert_eq!(r.posted().len(), CQ_ENTRIES, "taking again: a one-block transfer per free slot");
}

#[test]
fn registration_is_checked_and_unregistering_forgets_everything() {
    let mut r = Rig::new();
    let pa = |i: u64| QUEUES + i * QUEUE_SET_BYTES;
    assert_eq!(r.status(RdmaRequest::Register { pd: pd(1), queue_set: pa(1) + 8 }), RdmaStatus::BadQueueAddress);
    assert_eq!(r.status(RdmaRequest::Register { pd: pd(1), queue_set: 0x1000 }), RdmaStatus::BadQueueAddress);
    r.register(1);
    assert_eq!(r.status(RdmaRequest::Register { pd: pd(1), queue_set: pa(2) }), RdmaStatus::AlreadyRegistered);
    assert_eq!(r.status(RdmaRequest::Register { pd: pd(2), queue_set: pa(1) }), RdmaStatus::BadQueueAddress, "overlap");
    let bad_pd = Message::new(op::RDMA_REGISTER, 1, [16, pa(2), 0, 0, 0, 0, 0]);
    let reply = r.s.handle_request(&bad_pd, &r.mem, &mut r.e, 0).unwrap();
    assert_eq!(reply.args[0], RdmaStatus::BadPd as u64);
    assert!(r.s.handle_request(&Message::new(op::PING, 1, [0; 7]), &r.mem, &mut r.e, 0).is_none(), "not ours");
    // A transfer in flight, then the PD goes away: no CQE, its messages are stale.
    r.submit(1, write(64, 0, 3));
    let a = attempt_of(&r.posted()[0]);
    assert_eq!(r.status(RdmaRequest::Unregister { pd: pd(1) }), RdmaStatus::Ok);
    assert_eq!(r.status(RdmaRequest::Unregister { pd: pd(1) }), RdmaStatus::NotRegistered);
    ack(&mut r, PEER, a);
    assert!(r.cqes(1).is_empty());
    assert_eq!(r.s.stats().stale_messages, 1);
    assert_eq!(r.s.next_deadline(), None);
    // A doorbell of an unregistered PD does nothing.
    r.event(Event::Doorbell { pd: pd(1), value: 0 });
    assert!(r.posted().is_empty());
    // Re-registered and reset by a kernel reboot.
    r.register(1);
    r.submit(1, write(64, 0, 4));
    assert_eq!(r.posted().len(), 1);
    r.s.reset();
    r.after(10 * TIMEOUT);
    assert!(r.posted().is_empty(), "forgotten");
    assert_eq!(r.status(RdmaRequest::Unregister { pd: pd(1) }), RdmaStatus::NotRegistered);
}

#[test]
fn registered_wqs_are_polled_so_a_wqe_needs_no_doorbell() {
    let mut r = Rig::new();
    let set = r.register(3);
    assert!(!set.doorbell_needed(), "registration tells the process the WQ is polled");
    // SAFETY: the test is the process: the WQ's only producer.
    unsafe { set.wq.producer() }.push(write(64, 0, 9).encode()).expect("room in the WQ");
    r.after(1);
    assert_eq!(r.posted().len(), 1, "taken at the next round, without a doorbell");
    assert_eq!(r.status(RdmaRequest::Unregister { pd: pd(3) }), RdmaStatus::Ok);
    assert!(set.doorbell_needed(), "an R5 that no longer polls the WQ says so");
}

#[test]
fn an_armed_cq_gets_one_interrupt() {
    let mut r = Rig::new();
    let q = r.register(4);
    r.submit(4, write(8, 0, 1));
    let a = attempt_of(&r.posted()[0]);
    ack(&mut r, PEER, a);
    assert!(r.e.notified.is_empty(), "not armed: the process polls");
    q.arm.store(q.notified.load(core::sync::atomic::Ordering::Relaxed) + 1, core::sync::atomic::Ordering::Relaxed);
    r.submit(4, write(8, 0, 2));
    r.submit(4, write(8, 0, 3));
    for d in r.posted() {
        ack(&mut r, PEER, attempt_of(&d));
    }
    assert_eq!(r.e.notified, [pd(4)], "one interrupt per arming");
    assert_eq!(
        q.notified.load(core::sync::atomic::Ordering::Relaxed),
        q.arm.load(core::sync::atomic::Ordering::Relaxed)
    );
    assert_eq!(r.s.stats().cq_interrupts, 1);
}

#[test]
fn a_remote_notification_takes_only_a_spare_cq_slot() {
    let mut r = Rig::new();
    let q = r.register(2);
    r.event(Event::RemoteNotify { node: 3, pd: pd(2), imm: 0x55 });
    assert_eq!(r.cqes(2), [Cqe::RemoteWrite { node: 3, imm: 0x55 }]);
    // Fill the CQ with 64 completions the process does not read.
    for i in 0..64 {
        r.submit(2, write(8, 0, i));
        for d in r.posted() {
            ack(&mut r, PEER, attempt_of(&d));
        }
    }
    assert_eq!(q.cq.len(), 64);
    r.event(Event::RemoteNotify { node: 3, pd: pd(2), imm: 0x56 });
    assert_eq!(q.notify_lost.load(core::sync::atomic::Ordering::Relaxed), 1);
    r.event(Event::RemoteNotify { node: 3, pd: pd(9), imm: 1 });
    assert_eq!(r.s.stats().notifies_lost, 2, "a full CQ, an unregistered PD");
    assert_eq!(r.s.stats().remote_notifies, 1);
}

#[test]
fn a_full_descriptor_ring_counts_as_a_loss_and_the_timeout_recovers() {
    let mut r = Rig::new();
    r.register(0);
    r.e.full = true;
    r.submit(0, write(8, 0, 1));
    assert_eq!(r.s.stats().descriptors_dropped, 1);
    r.e.full = false;
    r.after(TIMEOUT);
    let [d] = r.posted()[..] else { panic!() };
    ack(&mut r, PEER, attempt_of(&d));
    assert_eq!(r.cqes(0).len(), 1);
}

#[test]
fn a_refused_descriptor_fails_its_transfer() {
    let mut r = Rig::new();
    r.register(0);
    r.submit(0, write(8, 0, 1));
    let a = attempt_of(&r.posted()[0]);
    r.event(Event::DescRefused { code: RefusalCode::PdDisabled, position: 0, pd: 0, tid: a.tid, seq: a.seq });
    assert_eq!(r.cqes(0), [Cqe::Local { tag: 1, wq_index: 0, len: 0, status: CqeStatus::EngineRefused, node: PEER }]);
    assert_eq!(r.s.stats().descriptors_refused, 1);
}

#[test]
fn when_tids_run_out_blocks_wait_and_every_transfer_completes() {
    let mut r = Rig::new();
    let cfg = RdmaConfig { window: 4, ..r.s.config() };
    assert_eq!(r.send(cfg.request(1)).args[..5], [0, TIMEOUT, 4, 32, 4]);
    let mut total = 0;
    for p in 0..8 {
        r.register(p);
        for i in 0..16 {
            r.submit(p, write(8 * 16384, 0, i));
            total += 1;
        }
    }
    let first = r.posted();
    assert_eq!(first.len(), MAX_TIDS, "every tid in use, the rest wait");
    let mut pending = first;
    let mut done = 0;
    while let Some(d) = pending.pop() {
        ack(&mut r, PEER, attempt_of(&d));
        pending.extend(r.posted());
    }
    for p in 0..8 {
        done += r.cqes(p).len();
    }
    assert_eq!(done, total);
    assert_eq!(r.s.stats().blocks_acked, total as u64 * 8);
}

#[test]
fn config_and_stats_requests() {
    let mut r = Rig::new();
    let bad = RdmaConfig { window: 5, ..r.s.config() };
    assert_eq!(r.send(bad.request(1)).args[0], RdmaStatus::BadArgument as u64);
    let c = RdmaConfig { timeout_us: 5, ..r.s.config() };
    r.send(c.request(1));
    r.register(0);
    r.submit(0, write(8, 0, 1));
    r.posted();
    r.after(5);
    assert_eq!(r.posted().len(), 1, "the new timeout (5 us) applies");
    let stats = r.request(RdmaRequest::Stats { page: 0 });
    assert_eq!(stats.args[0], 1, "page 0 starts with the timeout retransmissions");
    let page1 = r.request(RdmaRequest::Stats { page: 1 });
    assert_eq!(page1.args[0], 1, "transfers started");
    let m = RdmaRequest::Stats { page: proto::rdma::ipc::STATS_PAGES }.encode(9);
    assert_eq!(r.s.handle_request(&m, &r.mem, &mut r.e, 0).unwrap().op, op::UNKNOWN);
}

/// Before a sleep the scheduler hands the WQs back to the doorbell and says whether a round
/// would still find work: a WQE it can take, or a deadline that passed. Blocks waiting for
/// their ACK are not work (their events wake the R5).
#[test]
fn a_scheduler_about_to_sleep_reports_takeable_wqes_and_passed_deadlines_only() {
    let mut r = Rig::new();
    let q = r.register(1);
    assert_eq!(q.wq_polled.load(core::sync::atomic::Ordering::Acquire), 1, "registered: polled");
    assert!(!r.s.has_work(r.now), "nothing to do");
    r.s.stop_polling();
    assert_eq!(q.wq_polled.load(core::sync::atomic::Ordering::Acquire), 0, "the process rings from now on");
    // SAFETY: the test is the process: the WQ's only producer.
    unsafe { q.wq.producer() }.push(write(100, 0x1000, 5).encode()).unwrap();
    assert!(r.s.has_work(r.now), "a WQE published after the flag was cleared is seen");
    r.s.resume_polling();
    assert_eq!(q.wq_polled.load(core::sync::atomic::Ordering::Acquire), 1);
    r.after(0);
    let sent = r.posted();
    assert_eq!(sent.len(), 1, "taken and sent");
    assert!(!r.s.has_work(r.now), "waiting for the ACK is not work");
    let deadline = r.s.next_deadline().expect("the block's timeout");
    assert!(!r.s.has_work(deadline - 1));
    assert!(r.s.has_work(deadline), "a timeout that passed is work");
    ack(&mut r, PEER, attempt_of(&sent[0]));
    assert_eq!(r.cqes(1), [ok_cqe(5, 0, 100)]);
    assert_eq!(r.s.next_deadline(), None);
}

/// A WQE that must wait for CQ room (a process that does not read its CQ) is not work: the
/// R5 would otherwise never sleep. It is taken at the next round once there is room.
#[test]
fn a_wqe_waiting_for_cq_room_does_not_keep_the_scheduler_awake() {
    let mut r = Rig::new();
    let q = r.register(3);
    for i in 0..CQ_ENTRIES as u64 {
        r.submit(3, write(16, 0x1000 * (i + 1), i));
        for d in r.posted() {
            ack(&mut r, PEER, attempt_of(&d));
        }
    }
    assert_eq!(q.cq.len(), CQ_ENTRIES, "the process read none of its CQEs");
    // SAFETY: the test is the process: the WQ's only producer.
    unsafe { q.wq.producer() }.push(write(16, 0x9000, 99).encode()).unwrap();
    assert!(!r.s.has_work(r.now), "no room: not work");
    assert_eq!(r.cqes(3).len(), CQ_ENTRIES);
    assert!(r.s.has_work(r.now), "room again: work");
    r.after(0);
    assert_eq!(r.posted().len(), 1);
}
