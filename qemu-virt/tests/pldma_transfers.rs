//! Blocks between the PLDMA models of two nodes, driven through the rings in DDR as the R5 drives
//! them (`docs/hw/pldma.md`): sizes and alignments, a lossy interconnect with retransmission by
//! the test, remote reads served by the target's R5, notifications, and the receiver's block
//! table (lost ACKs, stale packets).

mod common;

use common::{BUFFERS, LONG, R5, Rig, eventually, pattern};
use hal::pldma::descriptor::{Attempt, Descriptor, WriteKind};
use hal::pldma::event::{Event, TxnRef};
use hal::pldma::regs::Counter;
use hal::pldma::{BLOCK_BYTES, Pd, seq_next, seq_within};
use qemu_virt::interconnect::LinkConfig;
use std::collections::HashMap;
use std::time::{Duration, Instant};

const WAIT: Duration = LONG;

fn pd(n: u16) -> Pd {
    Pd::new(n).unwrap()
}

fn write_block(attempt: Attempt, node: u16, src: u64, dst: u64, len: u32) -> Descriptor {
    Descriptor::WriteBlock { vc: 0, attempt, node, src, dst, len, kind: WriteKind::Write }
}

/// Waits for the ACK of every tid in `tids` at `r5`, failing on anything else.
fn acks(r5: &mut R5<'_>, from: u16, tids: impl IntoIterator<Item = (u16, u16)>) {
    let mut want: HashMap<u16, u16> = tids.into_iter().collect();
    while !want.is_empty() {
        match r5.event(WAIT) {
            Some(Event::Ack { node, txn }) => {
                assert_eq!(node, from, "ACK from the writer");
                assert_eq!(want.remove(&txn.tid), Some(txn.seq), "one ACK per block, for its seq");
            }
            other => panic!("expected ACKs for {want:?}, got {other:?}"),
        }
    }
}

#[test]
fn blocks_of_every_size_and_alignment_arrive_intact() {
    let rig = Rig::clean(2);
    let (mut a, _b) = (rig.r5(0), rig.r5(1));
    rig.r5_sleeps(0);
    let sizes = [1u32, 2, 3, 15, 16, 17, 255, 256, 257, 511, 4095, 4096, 4097, 8192, 12345, 16383, 16384];
    let mut cases = Vec::new();
    for &len in &sizes {
        for src_off in [0u64, 1, 255, 4095] {
            for dst_off in [0u64, 7, 256, BLOCK_BYTES - u64::from(len)] {
                if dst_off + u64::from(len) <= BLOCK_BYTES {
                    cases.push((len, src_off, dst_off));
                }
            }
        }
    }
    let slot = 0x8000u64;
    for (batch_start, batch) in cases.chunks(128).enumerate().map(|(i, c)| (i * 128, c)) {
        for (k, &(len, src_off, dst_off)) in batch.iter().enumerate() {
            let i = (batch_start + k) as u64;
            let src = BUFFERS + i * slot + src_off;
            // Destination windows start on 16 KiB boundaries; guards on both sides.
            let dst = BUFFERS + i * 2 * BLOCK_BYTES + dst_off;
            rig.fill(0, src, &pattern(i, len as usize));
            rig.fill(1, dst - 8, &[0xee; 8]);
            rig.fill(1, dst + u64::from(len), &[0xee; 8]);
            let attempt = Attempt { pd: pd(3), tid: i as u16, seq: 0, first_seq: 0 };
            a.post(&write_block(attempt, 1, src, dst, len));
        }
        acks(&mut a, 1, batch.iter().enumerate().map(|(k, _)| ((batch_start + k) as u16, 0)));
        for (k, &(len, _, dst_off)) in batch.iter().enumerate() {
            let i = (batch_start + k) as u64;
            let dst = BUFFERS + i * 2 * BLOCK_BYTES + dst_off;
            assert_eq!(rig.bytes(1, dst, len as usize), pattern(i, len as usize), "case {:?}", batch[k]);
            assert_eq!(rig.bytes(1, dst - 8, 8), [0xee; 8], "nothing before the block");
            assert_eq!(rig.bytes(1, dst + u64::from(len), 8), [0xee; 8], "nothing after the block");
        }
    }
    let packets: u64 = cases.iter().map(|&(len, _, dst)| (dst + u64::from(len)).div_ceil(256) - dst / 256).sum();
    assert_eq!(rig.counter(0, Counter::BlocksSent), cases.len() as u64);
    assert_eq!(rig.counter(1, Counter::AcksSent), cases.len() as u64);
    assert_eq!(rig.counter(1, Counter::PacketsReceived), packets);
    assert_eq!(rig.counter(0, Counter::PacketsReceived), cases.len() as u64, "the ACKs");
    assert_eq!(rig.r5_woken_by_engine(0), 1, "the first ACK woke the sleeping R5, once for its sleep");
}

#[test]
fn a_node_writes_to_itself_through_its_own_engine() {
    let rig = Rig::clean(1);
    let mut a = rig.r5(0);
    let data = pattern(7, 10_000);
    rig.fill(0, BUFFERS + 3, &data);
    let dst = BUFFERS + 0x10_0000 + 100;
    a.post(&write_block(Attempt { pd: pd(0), tid: 9, seq: 4, first_seq: 4 }, 0, BUFFERS + 3, dst, 10_000));
    assert_eq!(a.event(WAIT), Some(Event::Ack { node: 0, txn: TxnRef { pd: pd(0), tid: 9, seq: 4 } }));
    assert_eq!(rig.bytes(0, dst, 10_000), data);
}

/// The test's retransmission: what the R5 does with timeouts, reduced to blocks.
struct Pending {
    attempt: Attempt,
    src: u64,
    dst: u64,
    sent_at: Instant,
}

#[test]
fn loss_duplication_and_reordering_are_repaired_by_retransmission() {
    let link = LinkConfig { latency_us: 0.0, loss: 0.03, duplicate: 0.05, reorder: 0.05, seed: 11, lose_first: 0 };
    let rig = Rig::new(4, link);
    let (mut a, _b, _c, _d) = (rig.r5(0), rig.r5(1), rig.r5(2), rig.r5(3));
    const BLOCKS: u16 = 48;
    let timeout = Duration::from_millis(100);
    let mut pending: HashMap<u16, Pending> = HashMap::new();
    for tid in 0..BLOCKS {
        let src = BUFFERS + u64::from(tid) * BLOCK_BYTES;
        let dst = BUFFERS + u64::from(tid) * BLOCK_BYTES;
        rig.fill(0, src, &pattern(u64::from(tid), BLOCK_BYTES as usize));
        let attempt = Attempt { pd: pd(1), tid, seq: 100, first_seq: 100 };
        // Three hops away: node 3.
        assert!(a.try_post(&write_block(attempt, 3, src, dst, BLOCK_BYTES as u32)));
        pending.insert(tid, Pending { attempt, src, dst, sent_at: Instant::now() });
    }
    let (mut retransmissions, mut stale) = (0, 0);
    let give_up = Instant::now() + Duration::from_secs(120);
    while !pending.is_empty() {
        assert!(Instant::now() < give_up, "{} blocks never completed", pending.len());
        match a.event(Duration::from_millis(5)) {
            Some(Event::Ack { node: 3, txn }) => match pending.get(&txn.tid) {
                // Any attempt of the block completes it.
                Some(p) if seq_within(txn.seq, p.attempt.first_seq, p.attempt.seq) => {
                    let p = pending.remove(&txn.tid).unwrap();
                    assert_eq!(
                        rig.bytes(3, p.dst, BLOCK_BYTES as usize),
                        pattern(u64::from(txn.tid), BLOCK_BYTES as usize)
                    );
                }
                _ => stale += 1,
            },
            Some(other) => panic!("unexpected {other:?}"),
            None => {}
        }
        for p in pending.values_mut() {
            if p.sent_at.elapsed() > timeout {
                p.attempt.seq = seq_next(p.attempt.seq);
                p.sent_at = Instant::now();
                retransmissions += 1;
                // A full ring counts as a loss: the next timeout sends again.
                let _ = a.try_post(&write_block(p.attempt, 3, p.src, p.dst, BLOCK_BYTES as u32));
            }
        }
    }
    let links = rig.fabric.interconnect.link_counters();
    let dropped: u64 = links.iter().map(|(_, c)| c.dropped.load(std::sync::atomic::Ordering::Relaxed)).sum();
    assert!(dropped > 0 && retransmissions > 0, "the links lost packets ({dropped}) and blocks were resent");
    assert!(rig.counter(3, Counter::Duplicates) > 0, "duplicated packets were recognised");
    // Late ACKs of blocks already complete are the only thing the test could see twice.
    assert!(stale <= retransmissions, "{stale} stale ACKs for {retransmissions} retransmissions");
}

#[test]
fn a_read_request_is_served_by_the_target_r5_as_a_write_back() {
    let rig = Rig::clean(2);
    let (mut a, mut b) = (rig.r5(0), rig.r5(1));
    let data = pattern(3, 5000);
    let (remote, local) = (BUFFERS + 0x123, BUFFERS + 0x8000 + 16);
    rig.fill(1, remote, &data);
    let attempt = Attempt { pd: pd(2), tid: 77, seq: 5, first_seq: 5 };
    a.post(&Descriptor::ReadRequest { vc: 1, attempt, node: 1, src: remote, dst: local, len: 5000 });
    // The target's R5 sees the request; its A53 is not involved.
    let Some(Event::ReadRequest { node: 0, attempt: got, src, dst, len }) = b.event(WAIT) else {
        panic!("the target's R5 gets the read request")
    };
    assert_eq!((got, src, dst, len), (attempt, remote, local, 5000));
    b.post(&Descriptor::WriteBlock { vc: 0, attempt, node: 0, src, dst, len, kind: WriteKind::ReadResponse });
    // The requester's own engine reports the block complete: no ACK crosses the links.
    assert_eq!(a.event(WAIT), Some(Event::Ack { node: 0, txn: TxnRef { pd: pd(2), tid: 77, seq: 5 } }));
    assert_eq!(rig.bytes(0, local, 5000), data);
    assert_eq!(b.event(Duration::from_millis(50)), None, "the target learns nothing more");
    assert_eq!(rig.counter(0, Counter::AcksSent), 1);
    assert_eq!(rig.counter(1, Counter::AcksSent), 0);
}

#[test]
fn a_notify_block_notifies_once_and_a_lost_ack_is_repaired_without_rewriting() {
    let rig = Rig::clean(2);
    let (mut a, mut b) = (rig.r5(0), rig.r5(1));
    let (src, dst) = (BUFFERS, BUFFERS + 0x10_0000);
    rig.fill(0, src, &pattern(1, 300));
    let attempt = Attempt { pd: pd(4), tid: 1, seq: 10, first_seq: 10 };
    let notify = |attempt| Descriptor::WriteBlock {
        vc: 3,
        attempt,
        node: 1,
        src,
        dst,
        len: 300,
        kind: WriteKind::Notify { imm: 0xcafe },
    };
    a.post(&notify(attempt));
    assert_eq!(a.event(WAIT), Some(Event::Ack { node: 1, txn: TxnRef { pd: pd(4), tid: 1, seq: 10 } }));
    assert_eq!(b.event(WAIT), Some(Event::RemoteNotify { node: 0, pd: pd(4), imm: 0xcafe }));
    // As if that ACK had been lost: the initiator sends the block again, with new data in the
    // source to show the target does not write again.
    rig.fill(0, src, &pattern(2, 300));
    a.post(&notify(Attempt { seq: 11, ..attempt }));
    assert_eq!(a.event(WAIT), Some(Event::Ack { node: 1, txn: TxnRef { pd: pd(4), tid: 1, seq: 11 } }));
    assert_eq!(rig.bytes(1, dst, 300), pattern(1, 300), "the complete block was not written again");
    assert_eq!(b.event(Duration::from_millis(100)), None, "and not notified again");
    // The same attempt once more: a duplicate, no ACK.
    a.post(&notify(Attempt { seq: 11, ..attempt }));
    assert_eq!(a.event(Duration::from_millis(100)), None);
    assert!(
        eventually(LONG, || rig.counter(1, Counter::Duplicates) == 3),
        "the last packet of the second, both of the third"
    );
}

#[test]
fn packets_of_an_older_block_on_the_same_tid_are_dropped() {
    let rig = Rig::clean(2);
    let (mut a, _b) = (rig.r5(0), rig.r5(1));
    let dst = BUFFERS + 0x4000;
    rig.fill(0, BUFFERS, &pattern(5, 64));
    a.post(&write_block(Attempt { pd: pd(0), tid: 3, seq: 20, first_seq: 20 }, 1, BUFFERS, dst, 64));
    assert!(matches!(a.event(WAIT), Some(Event::Ack { .. })));
    // A straggler of the tid's previous block (first_seq 19) must not overwrite the new one.
    rig.fill(0, BUFFERS + 0x100, &[0xff; 64]);
    a.post(&write_block(Attempt { pd: pd(0), tid: 3, seq: 19, first_seq: 19 }, 1, BUFFERS + 0x100, dst, 64));
    assert_eq!(a.event(Duration::from_millis(100)), None, "no ACK for it");
    assert_eq!(rig.bytes(1, dst, 64), pattern(5, 64));
    // The next block on the tid starts afresh.
    a.post(&write_block(Attempt { pd: pd(0), tid: 3, seq: 21, first_seq: 21 }, 1, BUFFERS + 0x100, dst, 64));
    assert!(matches!(a.event(WAIT), Some(Event::Ack { txn: TxnRef { seq: 21, .. }, .. })));
    assert_eq!(rig.bytes(1, dst, 64), [0xff; 64]);
}
