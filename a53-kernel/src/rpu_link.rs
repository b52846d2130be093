//! The A53's side of the IPC rings with the R5 (`docs/hw/ipc.md`), as plain state over the shared
//! area: requests go out on `to_r5` followed by a look at the R5's sleep line, replies come in on
//! `to_a53` and are matched to the caller waiting for them, parked for it, or dropped (replies to
//! posts, counted when the R5 refused). Host-tested with the area in heap memory and the test
//! playing the R5; `rpu` keeps one [`Link`] behind its lock, rings the APU's IPI and waits on the
//! counter.

use crate::time::{self, Instant};
use core::sync::atomic::{AtomicU32, Ordering};
use proto::ipc::{Consumer, Full, IpcArea, Message, POSTED, Producer, RING_SLOTS, op};
use proto::r5_sleep::Waker as _;

/// The kernel's ends of both rings, and what it remembers between two looks at the replies.
pub struct Link<'a> {
    area: &'a IpcArea,
    requests: Producer<'a, Message, RING_SLOTS>,
    replies: Consumer<'a, Message, RING_SLOTS>,
    /// A reply [`drain`](Self::drain) read while a call waits for it: one at most, since calls
    /// go one at a time.
    parked: Option<Message>,
    /// Replies to posts whose status was not 0 (the R5 found the request stale or foreign).
    posts_refused: u64,
    /// Posts that found the request ring full (their requests were not sent).
    posts_lost: u64,
}

impl<'a> Link<'a> {
    /// # Safety
    ///
    /// The link is the only producer of `area.to_r5` and the only consumer of `area.to_a53`, on
    /// either processor, for as long as it lives (`proto::ipc::Ring::producer`).
    pub unsafe fn new(area: &'a IpcArea) -> Self {
        // SAFETY: forwarded from the caller.
        let (requests, replies) = unsafe { (area.to_r5.producer(), area.to_a53.consumer()) };
        Self { area, requests, replies, parked: None, posts_refused: 0, posts_lost: 0 }
    }

    /// Starts boot `nonce` (`docs/hw/ipc.md`, "Start-up"): drops the replies of an earlier
    /// boot, marks the area valid, and wakes the R5, which may sleep waiting for a nonce.
    pub fn restart(&mut self, nonce: u32, ring_doorbell: impl FnOnce()) {
        self.area.init(nonce, &mut self.replies);
        self.wake(ring_doorbell);
    }

    /// After work for the R5 was published: `ring_doorbell` if the R5 sleeps in a sleep the
    /// kernel has not rung for yet (`docs/hw/ipi.md`, "The rule that loses no wake-up"). The
    /// link is the `a53_wake` line's one writer: `&mut self` serialises its callers.
    fn wake(&mut self, ring_doorbell: impl FnOnce()) {
        if self.area.a53_wake.claim(&self.area.r5_sleep).is_some() {
            ring_doorbell();
        }
    }

    /// Queues `msg` and wakes the R5 if it sleeps; `Full` leaves the ring as it was (nothing
    /// is overwritten, and the R5 is not woken for it).
    pub fn send(&mut self, msg: Message, ring_doorbell: impl FnOnce()) -> Result<(), Full> {
        self.requests.push(msg)?;
        self.wake(ring_doorbell);
        Ok(())
    }

    /// Queues request `op` as a post: `seq` with [`POSTED`] set, so that whoever reads its
    /// reply drops it. A post that finds the ring full is counted lost.
    pub fn post(&mut self, op: u32, seq: u32, args: [u64; 7], ring_doorbell: impl FnOnce()) -> Result<(), Full> {
        let sent = self.send(Message::new(op, seq | POSTED, args), ring_doorbell);
        if sent.is_err() {
            self.posts_lost += 1;
        }
        sent
    }

    /// The next reply, unfiltered (for tests that drive the ring themselves).
    pub fn pop(&mut self) -> Option<Message> {
        self.replies.pop()
    }

    /// Reads every reply that has arrived: replies to posts are dropped, any other is parked for
    /// the call waiting for it. A parked reply that nobody took is replaced and handed to
    /// `unexpected` (to be reported).
    pub fn drain(&mut self, mut unexpected: impl FnMut(&Message)) {
        while let Some(m) = self.replies.pop() {
            if !self.is_posted_reply(&m)
                && let Some(old) = self.parked.replace(m)
            {
                unexpected(&old);
            }
        }
    }

    /// One look for the reply `wanted` accepts: the parked reply first, then the ring up to the
    /// one wanted. Replies to posts are dropped; any other reply on the way is dropped and
    /// handed to `unexpected` (its caller gave up on it, or it belongs to an earlier boot).
    pub fn look(&mut self, wanted: impl Fn(&Message) -> bool, mut unexpected: impl FnMut(&Message)) -> Option<Message> {
        let mut parked = self.parked.take();
        while let Some(m) = parked.take().or_else(|| self.replies.pop()) {
            if wanted(&m) {
                return Some(m);
            }
            if !self.is_posted_reply(&m) {
                unexpected(&m);
            }
        }
        None
    }

    /// Whether `m` is a reply to a post (counted if the R5 refused it: status, `args[0]`, not 0).
    fn is_posted_reply(&mut self, m: &Message) -> bool {
        if m.seq & POSTED == 0 || m.op & op::REPLY == 0 {
            return false;
        }
        if m.args[0] != 0 {
            self.posts_refused += 1;
        }
        true
    }

    /// (posts the R5 refused, posts lost to a full ring) so far.
    pub fn post_counters(&self) -> (u64, u64) {
        (self.posts_refused, self.posts_lost)
    }
}

/// Sequence numbers for requests: never with [`POSTED`] set, so a call's reply is never taken
/// for a post's.
pub struct Sequence(AtomicU32);

impl Sequence {
    pub const fn new() -> Self {
        Self(AtomicU32::new(1))
    }

    pub fn next(&self) -> u32 {
        self.0.fetch_add(1, Ordering::Relaxed) & !POSTED
    }
}

impl Default for Sequence {
    fn default() -> Self {
        Self::new()
    }
}

/// Whether a message is the reply to request `seq`.
pub fn reply_to(seq: u32) -> impl Fn(&Message) -> bool {
    move |m| m.seq == seq && m.op & op::REPLY != 0
}

/// Whether a message is the firmware's READY for boot `nonce` (a READY for an earlier nonce is
/// stale DDR or a late answer, `docs/hw/ipc.md`, "Start-up").
pub fn ready_for(nonce: u32) -> impl Fn(&Message) -> bool {
    move |m| m.op == op::READY && m.args[1] == u64::from(nonce)
}

/// Looks for a reply with `look` (one look: the caller's lock on the link is held for it alone,
/// so posts and drains from interrupt handlers go on meanwhile) until one comes or the clock
/// `now` is past `deadline`, calling `pause` between two looks.
pub fn wait_for_reply(
    deadline: Instant,
    now: impl Fn() -> Instant,
    mut look: impl FnMut() -> Option<Message>,
    pause: impl FnMut(),
) -> Option<Message> {
    let mut found = None;
    let ready = || {
        found = look();
        found.is_some()
    };
    time::wait_until(deadline, now, ready, pause).ok()?;
    found
}

#[cfg(test)]
mod tests;
