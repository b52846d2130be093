use super::*;
use crate::mm::test_frames::Arena;
use crate::socket::{Owner, Readable};
use alloc::boxed::Box;
use alloc::vec;
use core::sync::atomic::Ordering;

/// The devices as a test sees them: what was cleaned, which doorbells rang, and a counter the
/// test sets.
#[derive(Default)]
pub(crate) struct TestEngine {
    cleaned: usize,
    doorbells: Vec<u32>,
    now: u64,
}

impl Engine for TestEngine {
    fn clean_to_poc(&mut self, _at: *const u8, len: usize) {
        self.cleaned += len;
    }
    fn ring_doorbell(&mut self, head: u32) {
        self.doorbells.push(head);
    }
    fn now(&self) -> u64 {
        self.now
    }
}

pub(crate) type Node = SocketNode<&'static Arena, TestEngine>;

/// Frames for two slots' rings (256 pages each) and their tables.
pub(crate) const TWO_SLOTS: usize = 2 * 256 + 16;
const A: Owner = Owner { slot: 1, domain: 0x11 };
const B: Owner = Owner { slot: 2, domain: 0x22 };
const PORT: u16 = 7;

pub(crate) fn node(id: u16, frames: usize) -> Node {
    let arena: &'static Arena = Box::leak(Box::new(Arena::new(frames)));
    // SAFETY: zero bytes are a fresh queue set (atomics and plain integers).
    let queues: &'static QueueSet = Box::leak(Box::new(unsafe { core::mem::zeroed() }));
    SocketNode::new(Sockets::new(id), AddressSpace::new(1, arena), queues, TestEngine::default())
}

/// Delivers `from`'s outbox to `to` (each doorbell must be for `to`); returns whom `to` woke.
fn deliver(from: &mut Node, to: &mut Node) -> Vec<usize> {
    let mut woken = Vec::new();
    while let Some((node, doorbell)) = from.next_doorbell() {
        assert_eq!(node, to.logic.node(), "a doorbell for a third node");
        woken.extend_from_slice(to.doorbell(from.logic.node(), doorbell).slots());
    }
    woken
}

/// Plays the R5 and the engine for `from`'s work queue: each WQE's bytes land in `to`'s socket
/// space (`from`'s own for `None`: connections within one node) unless `status` says the write
/// failed, its completion is posted and the interrupt asked for is answered; returns the WQEs.
pub(crate) fn carry(from: &mut Node, mut to: Option<&mut Node>, status: CqeStatus) -> Vec<Wqe> {
    let target = to.as_ref().map_or(from.logic.node(), |t| t.logic.node());
    let mut done = Vec::new();
    // SAFETY: the test is the queue's only consumer, and the completion queue's only producer.
    let (mut wq, mut cq) = unsafe { (from.queues.wq.consumer(), from.queues.cq.producer()) };
    while let Some(raw) = wq.pop() {
        let w = Wqe::decode(&raw).expect("the node posts valid WQEs");
        assert_eq!((w.direction, w.node), (Direction::Write, target));
        let mut bytes = vec![0; w.len as usize];
        from.rings.0.read(w.local, &mut bytes).expect("a posted write reads mapped ring pages");
        if status == CqeStatus::Ok {
            let rings = match to.as_deref_mut() {
                Some(t) => &mut t.rings,
                None => &mut from.rings,
            };
            rings.0.write(w.remote, &bytes).expect("and lands in mapped ring pages");
        }
        let cqe = Cqe::Local { tag: w.tag, wq_index: 0, len: w.len, status, node: w.node };
        cq.push(cqe.encode()).expect("room for every completion");
        done.push(w);
    }
    // The R5 answers the armed queue with the interrupt (the test calls `completions`).
    let arm = from.queues.arm.load(Ordering::Acquire);
    from.queues.notified.store(arm, Ordering::Release);
    done
}

/// A listening on `PORT` of node 1, A on node 0 connected to it and B's end accepted: the two
/// ends' handles.
fn connected(a: &mut Node, b: &mut Node) -> (u64, u64) {
    let listener = b.run(|s, _, _| s.listen(B, PORT)).0.unwrap();
    let (handle, wakes) = a.connect(A, 1, PORT);
    let handle = handle.unwrap();
    assert!(wakes.slots().is_empty());
    assert_eq!(deliver(b, a), vec![], "B had nothing to say yet");
    assert_eq!(deliver(a, b), vec![B.slot], "the Connect wakes the listener's owner");
    assert_eq!(deliver(b, a), vec![A.slot], "the Accept wakes the connecting process");
    assert_eq!(a.run(|s, _, out| s.connected(A, handle, out)).0, Ok(true));
    let (accepted, node) = b.run(|s, _, _| s.accept(B, listener)).0.unwrap().unwrap();
    assert_eq!(node, 0);
    (handle, accepted)
}

/// Copies `data` into A's send ring where the protocol says, and tells it.
fn write(a: &mut Node, handle: u64, data: &[u8]) -> Wakes {
    let ((), wakes) = a.run(|s, rings, out| {
        let w = s.writable(A, handle, data.len() as u32).unwrap();
        assert_eq!(w.len as usize, data.len(), "a fresh ring takes it whole");
        rings.send(w.index, w.offset, w.len).copy_from_slice(data);
        s.written(w.index, w.len, out);
    });
    wakes
}

#[test]
fn a_connection_maps_a_slots_rings_on_both_nodes_and_publishes_them() {
    let (mut a, mut b) = (node(0, TWO_SLOTS), node(1, TWO_SLOTS));
    let cleaned = a.engine.cleaned;
    connected(&mut a, &mut b);
    for n in [&a, &b] {
        for va in [receive_ring(0), send_ring(0) + u64::from(RING_BYTES) - PAGE_SIZE] {
            assert!(n.rings.0.page(va).is_some(), "{va:#x} mapped on node {}", n.logic.node());
        }
        assert!(n.rings.0.page(receive_ring(1)).is_none(), "one slot, no more");
    }
    assert!(a.engine.cleaned > cleaned && b.engine.cleaned > 0, "the new tables were cleaned for the walker");
    assert_eq!(a.connections(), 1);
}

#[test]
fn a_write_is_posted_rung_carried_and_its_completion_announces_the_data() {
    let (mut a, mut b) = (node(0, TWO_SLOTS), node(1, TWO_SLOTS));
    let (ha, hb) = connected(&mut a, &mut b);
    a.engine.now = 1_000;
    let wakes = write(&mut a, ha, b"over the fabric");
    assert!(wakes.slots().is_empty());
    assert_eq!(a.engine.doorbells, vec![1], "the R5 does not poll this queue: the doorbell rings with the new head");
    assert!(a.outbox_is_empty(), "no Data doorbell before the write completed");

    let wqes = carry(&mut a, Some(&mut b), CqeStatus::Ok);
    assert_eq!(wqes.len(), 1);
    assert_eq!(wqes[0].remote, receive_ring(0));
    a.engine.now = 1_250;
    let wakes = a.completions();
    assert!(wakes.slots().is_empty());
    assert_eq!(a.write_times(), WriteTimes { completed: 1, ticks: 250 });
    assert!(a.queues.is_armed(), "the completion queue is armed for the next one");

    assert_eq!(deliver(&mut a, &mut b), vec![B.slot], "the Data doorbell wakes the reader");
    let ((), _) = b.run(|s, rings, _| {
        let Ok(Readable::Bytes { index, offset, len }) = s.readable(B, hb, 64) else { panic!("bytes to read") };
        assert_eq!(rings.receive(index, offset, len), b"over the fabric");
    });
}

#[test]
fn a_polled_work_queue_rings_no_doorbell() {
    let (mut a, mut b) = (node(0, TWO_SLOTS), node(1, TWO_SLOTS));
    let (ha, _) = connected(&mut a, &mut b);
    a.queues.wq_polled.store(1, Ordering::Release);
    let _ = write(&mut a, ha, b"x");
    assert!(a.engine.doorbells.is_empty());
    assert_eq!(carry(&mut a, Some(&mut b), CqeStatus::Ok).len(), 1, "the WQE is there all the same");
}

#[test]
fn a_failed_write_resets_its_connection_and_is_counted() {
    let (mut a, mut b) = (node(0, TWO_SLOTS), node(1, TWO_SLOTS));
    let (ha, _) = connected(&mut a, &mut b);
    let _ = write(&mut a, ha, b"lost");
    carry(&mut a, Some(&mut b), CqeStatus::FaultRemote);
    let wakes = a.completions();
    assert_eq!(wakes.slots(), &[A.slot], "the writer learns of it");
    assert_eq!(a.counters().failed_writes, 1);
    assert_eq!(a.run(|s, _, _| s.writable(A, ha, 1)).0, Err(proto::syscall::Error::ConnectionReset));
}

#[test]
fn a_connection_to_its_own_node_opens_within_the_call() {
    let mut a = node(0, TWO_SLOTS);
    a.run(|s, _, _| s.listen(B, PORT)).0.unwrap();
    let (handle, wakes) = a.connect(A, 0, PORT);
    assert_eq!(wakes.slots(), &[B.slot, A.slot], "both ends' owners, each once");
    assert!(a.outbox_is_empty(), "local doorbells are applied at once, never queued");
    assert_eq!(a.run(|s, _, out| s.connected(A, handle.unwrap(), out)).0, Ok(true));
    assert!(a.rings.0.page(receive_ring(1)).is_some(), "each end has its slot's rings");
}

#[test]
fn without_frames_for_its_rings_a_connect_is_refused_on_either_side() {
    let mut a = node(0, 64);
    let (result, _) = a.connect(A, 1, PORT);
    assert_eq!(result, Err(proto::syscall::Error::Busy));
    assert!(a.outbox_is_empty());
    // The other side: a Connect it cannot give rings to is refused, not left unanswered.
    let mut b = node(1, 64);
    b.run(|s, _, _| s.listen(B, PORT)).0.unwrap();
    let mut full = node(0, TWO_SLOTS);
    let (handle, _) = full.connect(A, 1, PORT);
    deliver(&mut full, &mut b);
    assert_eq!(deliver(&mut b, &mut full), vec![A.slot]);
    let refused = full.run(|s, _, out| s.connected(A, handle.unwrap(), out)).0;
    assert_eq!(refused, Err(proto::syscall::Error::ConnectionRefused));
}

#[test]
fn a_lost_node_takes_its_doorbells_out_of_the_outbox_and_resets_its_connections() {
    let mut a = node(0, 4 * 256 + 16);
    let (to_1, _) = a.connect(A, 1, PORT);
    let (to_2, _) = a.connect(A, 2, PORT);
    let wakes = a.node_lost(1);
    assert_eq!(wakes.slots(), &[A.slot]);
    assert_eq!(a.next_doorbell().map(|(n, _)| n), Some(2), "only node 2's Connect is left");
    assert!(a.outbox_is_empty());
    let lost = a.run(|s, _, out| s.connected(A, to_1.unwrap(), out)).0;
    assert_eq!(lost, Err(proto::syscall::Error::Unreachable));
    assert_eq!(a.run(|s, _, out| s.connected(A, to_2.unwrap(), out)).0, Ok(false));
}

#[test]
fn a_doorbell_put_back_goes_out_first() {
    let mut a = node(0, 4 * 256 + 16);
    a.connect(A, 1, PORT).0.unwrap();
    a.connect(A, 2, PORT).0.unwrap();
    let first = a.next_doorbell().unwrap();
    a.put_back(first.0, first.1);
    assert_eq!(a.next_doorbell(), Some(first));
    assert_eq!(a.next_doorbell().map(|(n, _)| n), Some(2));
}

#[test]
fn lost_registrations_reset_the_connections_with_writes_in_flight_and_register_again() {
    let (mut a, mut b) = (node(0, TWO_SLOTS), node(1, TWO_SLOTS));
    let (ha, _) = connected(&mut a, &mut b);
    let _ = write(&mut a, ha, b"in flight");
    // The R5 forgot the queue set: whatever it held is gone, and so is the interrupt asked for.
    // SAFETY: the test is the queue's only consumer.
    while unsafe { a.queues.wq.consumer() }.pop().is_some() {}
    let arm = a.queues.arm.load(Ordering::Relaxed);
    a.queues.notified.store(arm, Ordering::Release);
    let mut registered = false;
    let wakes = a.writes_lost(|| registered = true);
    assert!(registered);
    assert!(a.queues.is_armed(), "armed afresh for the new registration");
    assert_eq!(wakes.slots(), &[A.slot]);
    assert_eq!(a.run(|s, _, _| s.writable(A, ha, 1)).0, Err(proto::syscall::Error::ConnectionReset));
}
