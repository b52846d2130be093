//! The link against a test that plays the R5 on an IPC area in heap memory.

use super::*;
use core::cell::Cell;
use proto::ipc::Producer;
use std::boxed::Box;
use std::vec::Vec;

/// The R5's ends of the rings and its sleep line, over the same area as the link.
struct R5<'a> {
    area: &'a IpcArea,
    requests: Consumer<'a, Message, RING_SLOTS>,
    replies: Producer<'a, Message, RING_SLOTS>,
}

impl<'a> R5<'a> {
    fn new(area: &'a IpcArea) -> Self {
        // SAFETY: the test's R5 is the rings' only other end.
        unsafe { Self { area, requests: area.to_r5.consumer(), replies: area.to_a53.producer() } }
    }

    /// Answers the next request (status 0, or `status` in `args[0]`), if there is one.
    fn answer(&mut self, status: u64) -> Option<Message> {
        let request = self.requests.pop()?;
        let reply = Message::new(request.op | op::REPLY, request.seq, [status, 0, 0, 0, 0, 0, 0]);
        self.replies.push(reply).unwrap();
        Some(reply)
    }
}

fn area() -> Box<IpcArea> {
    // SAFETY: all-zero bytes are an invalid (magic 0) area with empty rings and an awake R5.
    unsafe { Box::new(core::mem::zeroed()) }
}

/// A link over `area`, started for boot nonce 7.
fn link(area: &IpcArea) -> Link<'_> {
    // SAFETY: the test's link is the rings' only kernel end.
    let mut link = unsafe { Link::new(area) };
    link.restart(7, || {});
    link
}

fn no_unexpected(m: &Message) {
    panic!("unexpected reply {m:?}");
}

#[test]
fn a_reply_for_another_caller_is_parked_and_found_by_it() {
    let area = area();
    let (mut link, mut r5) = (link(&area), R5::new(&area));
    link.send(Message::new(op::PING, 5, [0; 7]), || {}).unwrap();
    link.post(op::RDMA_FAULT_RESOLVED, 6, [0; 7], || {}).unwrap();
    let call = r5.answer(0).unwrap();
    // The post's reply: refused by the R5 (Stale), dropped unread.
    r5.answer(5).unwrap();
    // A post drains the ring while the call has not looked yet.
    link.drain(no_unexpected);
    assert_eq!(link.post_counters(), (1, 0), "the refused post is counted, not parked");
    assert_eq!(link.look(reply_to(5), no_unexpected), Some(call), "the caller finds its parked reply");
    assert_eq!(link.look(reply_to(5), no_unexpected), None, "and takes it once");
}

#[test]
fn a_second_reply_nobody_took_replaces_the_parked_one_and_is_reported() {
    let area = area();
    let (mut link, mut r5) = (link(&area), R5::new(&area));
    for seq in [1, 2] {
        link.send(Message::new(op::ECHO, seq, [0; 7]), || {}).unwrap();
        r5.answer(0).unwrap();
    }
    let mut reported = Vec::new();
    link.drain(|m| reported.push(m.seq));
    assert_eq!(reported, [1], "the older parked reply is reported");
    assert_eq!(link.look(reply_to(2), no_unexpected).map(|m| m.seq), Some(2));
}

#[test]
fn a_look_drops_other_replies_on_the_way_to_its_own() {
    let area = area();
    let (mut link, mut r5) = (link(&area), R5::new(&area));
    for seq in [3, 4] {
        link.send(Message::new(op::ECHO, seq, [0; 7]), || {}).unwrap();
    }
    link.post(op::PING, 9, [0; 7], || {}).unwrap();
    link.send(Message::new(op::ECHO, 10, [0; 7]), || {}).unwrap();
    while r5.answer(0).is_some() {}
    let mut reported = Vec::new();
    assert_eq!(link.look(reply_to(4), |m| reported.push(m.seq)).map(|m| m.seq), Some(4));
    assert_eq!(reported, [3], "the stale reply is reported and gone");
    assert_eq!(link.look(reply_to(10), |m| reported.push(m.seq)).map(|m| m.seq), Some(10));
    assert_eq!(reported, [3], "the post's reply is dropped silently");
    assert_eq!(link.post_counters(), (0, 0), "the post was served");
}

#[test]
fn a_call_gives_up_after_its_bound() {
    let area = area();
    let (mut link, mut r5) = (link(&area), R5::new(&area));
    let clock = Cell::new(0u64);
    let now = || Instant::from_ticks(clock.get());
    link.send(Message::new(op::ECHO, 8, [0; 7]), || {}).unwrap();
    // The R5 never answers this one: a reply for another seq comes instead.
    let mut reported = Vec::new();
    r5.replies.push(Message::new(op::ECHO | op::REPLY, 99, [0; 7])).unwrap();
    let look = || link.look(reply_to(8), |m| reported.push(m.seq));
    let tick = || clock.set(clock.get() + 1);
    assert_eq!(wait_for_reply(Instant::from_ticks(10), now, look, tick), None);
    assert_eq!(clock.get(), 11, "it looked until the clock was past its deadline");
    assert_eq!(reported, [99]);
    // The answer comes during a pause: found before the deadline.
    clock.set(0);
    let answered = Cell::new(None);
    let look = || link.look(reply_to(8), no_unexpected);
    let pause = || {
        clock.set(clock.get() + 1);
        if clock.get() == 3 {
            answered.set(r5.answer(0));
        }
    };
    let found = wait_for_reply(Instant::from_ticks(10), now, look, pause);
    assert_eq!((found, clock.get()), (answered.get(), 3));
}

#[test]
fn a_full_request_ring_refuses_and_loses_nothing() {
    let area = area();
    let (mut link, mut r5) = (link(&area), R5::new(&area));
    for seq in 0..RING_SLOTS as u32 {
        link.send(Message::new(op::ECHO, seq, [0; 7]), || {}).unwrap();
    }
    let rang = Cell::new(0);
    let ring = || rang.set(rang.get() + 1);
    assert_eq!(link.send(Message::new(op::ECHO, 100, [0; 7]), ring), Err(Full));
    assert_eq!(link.post(op::RDMA_FAULT_RESOLVED, 101, [0; 7], ring), Err(Full));
    assert_eq!(link.post_counters(), (0, 1), "the post is counted lost");
    let seqs: Vec<u32> = core::iter::from_fn(|| r5.requests.pop()).map(|m| m.seq).collect();
    assert_eq!(seqs, (0..RING_SLOTS as u32).collect::<Vec<_>>(), "every request that fitted, in order");
    link.send(Message::new(op::ECHO, 102, [0; 7]), || {}).unwrap();
    assert_eq!(r5.requests.pop().map(|m| m.seq), Some(102), "room again once the R5 took them");
}

#[test]
fn the_doorbell_rings_once_per_sleep_and_for_a_new_nonce() {
    let area = area();
    let (mut link, r5) = (link(&area), R5::new(&area));
    let rang = Cell::new(0);
    let ring = || rang.set(rang.get() + 1);
    link.send(Message::new(op::PING, 1, [0; 7]), ring).unwrap();
    assert_eq!(rang.get(), 0, "an awake R5 is not rung");
    r5.area.r5_sleep.begin(proto::r5_sleep::NO_TIMEOUT);
    link.send(Message::new(op::PING, 2, [0; 7]), ring).unwrap();
    link.post(op::PING, 3, [0; 7], ring).unwrap();
    assert_eq!(rang.get(), 1, "one ring per sleep");
    r5.area.r5_sleep.end();
    r5.area.r5_sleep.begin(proto::r5_sleep::NO_TIMEOUT);
    link.restart(8, ring);
    assert_eq!((rang.get(), area.nonce()), (2, Some(8)), "a new nonce wakes the sleeping firmware");
}

#[test]
fn a_restart_drops_the_replies_of_the_earlier_boot_and_waits_for_its_own_ready() {
    let area = area();
    let (mut link, mut r5) = (link(&area), R5::new(&area));
    let ready = |nonce: u64| Message::new(op::READY, 0, [3, nonce, 0, 0, 0, 0, 0]);
    r5.replies.push(ready(7)).unwrap();
    link.restart(8, || {});
    assert_eq!(link.pop(), None, "the earlier boot's READY is gone");
    r5.replies.push(ready(7)).unwrap();
    r5.replies.push(ready(8)).unwrap();
    let mut reported = Vec::new();
    assert_eq!(link.look(ready_for(8), |m| reported.push(m.args[1])), Some(ready(8)));
    assert_eq!(reported, [7], "a late READY for the old nonce is not taken for the new one");
}

#[test]
fn sequence_numbers_never_carry_the_post_bit() {
    let seq = Sequence(AtomicU32::new(POSTED - 1));
    assert_eq!(seq.next(), POSTED - 1);
    assert_eq!(seq.next() & POSTED, 0);
    assert!(!reply_to(5)(&Message::new(op::ECHO, 5, [0; 7])), "a request is not its own reply");
}
