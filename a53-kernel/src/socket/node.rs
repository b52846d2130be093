//! A node's sockets (`docs/hw/sockets.md`): the protocol ([`Sockets`]) with what it acts on, the
//! socket space whose rings bank `SOCKET_PD` walks, the kernel's own PLDMA queue set for that PD,
//! and the doorbells for other nodes waiting to be sent. Plain state and decisions, host-tested
//! (over a test arena and a queue set in heap memory); `socket_node` keeps one behind a lock,
//! sends the outbox and wakes the processes this hands back.

#[cfg(test)]
pub(crate) mod tests;

use super::{Action, Counters, Sockets};
use crate::elf::Permissions;
use crate::mm::PAGE_SIZE;
use crate::mm::user_space::{AddressSpace, FrameSource};
use crate::process::MAX_DOMAINS;
use alloc::collections::VecDeque;
use alloc::vec::Vec;
use proto::rdma::queue::{CQ_ENTRIES, Cqe, CqeStatus, Direction, QueueSet, WQ_ENTRIES, Wqe};
use proto::socket::{Doorbell, MAX_CONNECTIONS, RING_BYTES, receive_ring, send_ring};

// The protocol keeps at most a work queue's worth of writes in flight: the queue never fills.
const _: () = assert!(super::WRITES_MAX <= WQ_ENTRIES && super::WRITES_MAX <= CQ_ENTRIES);

/// What a node's sockets need from the devices below them.
pub trait Engine {
    /// Cleans `len` bytes at `at` (page-table lines) to the point of coherency, for the SMMU's
    /// walker, which does not snoop the A53s' caches (`docs/hw/smmu.md`, "TLB maintenance").
    fn clean_to_poc(&mut self, at: *const u8, len: usize);
    /// Rings the socket PD's doorbell with its work queue's new `head`.
    fn ring_doorbell(&mut self, head: u32);
    /// The counter's value now, in ticks.
    fn now(&self) -> u64;
}

/// Processes to wake (table slots, each once) once the caller has let go of its locks.
#[must_use]
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Wakes(heapless::Vec<usize, MAX_DOMAINS>);

impl Wakes {
    fn add(&mut self, slot: usize) {
        if !self.0.contains(&slot) {
            let _ = self.0.push(slot);
        }
    }

    pub fn slots(&self) -> &[usize] {
        &self.0
    }
}

/// The RDMA writes this node's sockets completed, and the counter ticks from each one's
/// connection's last post to its completion's reaping.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteTimes {
    pub completed: u64,
    pub ticks: u64,
}

/// The socket space: every connection slot's rings, which bank `SOCKET_PD` walks. A slot's
/// pages are mapped the first time a connection needs the slot, and kept.
pub struct Rings<F: FrameSource>(AddressSpace<F>);

impl<F: FrameSource> Rings<F> {
    /// The kernel's view of `len` bytes at socket-space address `va`, cut at the page's end.
    fn page_of(&self, va: u64, len: u32) -> (*mut u8, usize) {
        let page = self.0.page(va).expect("a slot in use has its rings mapped");
        let offset = (va - page.va) as usize;
        let len = (len as usize).min(PAGE_SIZE as usize - offset);
        (self.0.kernel_view(page.pa).wrapping_add(offset), len)
    }

    /// Connection `index`'s receive ring from `offset`: at most `len` bytes, as far as the end
    /// of the page they begin in.
    pub fn receive(&self, index: u8, offset: u32, len: u32) -> &[u8] {
        assert!(offset + len <= RING_BYTES);
        let (at, len) = self.page_of(receive_ring(index) + u64::from(offset), len);
        // SAFETY: a frame of the slot's receive ring, mapped for good; the engine writes only
        // positions beyond what the protocol gave the reader (`Sockets::readable`).
        unsafe { core::slice::from_raw_parts(at, len) }
    }

    /// Connection `index`'s send ring from `offset`, as [`receive`](Self::receive).
    #[allow(clippy::mut_from_ref)]
    pub fn send(&self, index: u8, offset: u32, len: u32) -> &mut [u8] {
        assert!(offset + len <= RING_BYTES);
        let (at, len) = self.page_of(send_ring(index) + u64::from(offset), len);
        // SAFETY: a frame of the slot's send ring; the engine reads only posted positions, and
        // the protocol hands the writer only room that is not posted (`Sockets::writable`);
        // one caller at a time, under the node's lock.
        unsafe { core::slice::from_raw_parts_mut(at, len) }
    }

    /// Maps slot `index`'s rings (what is not mapped yet) and publishes the tables with
    /// `clean`; false when frames ran out.
    fn map_slot(&mut self, index: usize, clean: impl FnMut(*const u8, usize)) -> bool {
        let permissions = Permissions { read: true, write: true, execute: false };
        let start = receive_ring(index as u8);
        let mut mapped = true;
        for va in (start..start + 2 * u64::from(RING_BYTES)).step_by(PAGE_SIZE as usize) {
            if self.0.page(va).is_none() && self.0.map_page(va, permissions).is_err() {
                mapped = false;
                break;
            }
        }
        self.0.publish(clean);
        mapped
    }
}

/// The sockets of one node and what they act on (see the module's text).
pub struct SocketNode<F: FrameSource, E: Engine> {
    logic: Sockets,
    rings: Rings<F>,
    queues: &'static QueueSet,
    engine: E,
    /// Doorbells for other nodes, in the order the protocol produced them.
    outbox: VecDeque<(u16, Doorbell)>,
    /// When each slot last posted a write (counter ticks), for [`WriteTimes`].
    posted_at: [u64; MAX_CONNECTIONS],
    write_times: WriteTimes,
}

impl<F: FrameSource, E: Engine> SocketNode<F, E> {
    /// The sockets of node `logic.node()` on the socket space `space` (published, and attached
    /// to bank `SOCKET_PD`) and the PD's registered queue set `queues`, whose completion queue
    /// is armed here.
    pub fn new(logic: Sockets, space: AddressSpace<F>, queues: &'static QueueSet, engine: E) -> Self {
        queues.arm_once();
        Self {
            logic,
            rings: Rings(space),
            queues,
            engine,
            outbox: VecDeque::new(),
            posted_at: [0; MAX_CONNECTIONS],
            write_times: WriteTimes::default(),
        }
    }

    pub fn counters(&self) -> Counters {
        self.logic.counters()
    }

    pub fn connections(&self) -> usize {
        self.logic.connections()
    }

    pub fn write_times(&self) -> WriteTimes {
        self.write_times
    }

    /// Runs `f` on the protocol, with the rings at hand (each connection slot's receive ring,
    /// then send ring, which the read and write calls copy from and to), and carries out what
    /// it asked; returns its result and whom to wake.
    pub fn run<R>(&mut self, f: impl FnOnce(&mut Sockets, &Rings<F>, &mut Vec<Action>) -> R) -> (R, Wakes) {
        let mut out = Vec::new();
        let result = f(&mut self.logic, &self.rings, &mut out);
        (result, self.apply(out))
    }

    /// `Sockets::connect`, with a slot's rings made ready first.
    pub fn connect(
        &mut self,
        owner: super::Owner,
        node: u16,
        port: u16,
    ) -> (Result<u64, proto::syscall::Error>, Wakes) {
        self.prepare();
        self.run(|s, _, out| s.connect(owner, node, port, out))
    }

    /// A doorbell from node `from`'s kernel.
    pub fn doorbell(&mut self, from: u16, doorbell: Doorbell) -> Wakes {
        self.prepare_for(&doorbell);
        let mut out = Vec::new();
        self.logic.doorbell(from, doorbell, &mut out);
        self.apply(out)
    }

    /// The engine said the socket PD has completions: takes every one, then re-arms the queue.
    pub fn completions(&mut self) -> Wakes {
        let mut out = Vec::new();
        loop {
            // SAFETY: the only consumer of the socket PD's completion queue, under the node's
            // lock.
            let mut cq = unsafe { self.queues.cq.consumer() };
            while let Some(raw) = cq.pop() {
                if let Ok(Cqe::Local { tag, status, .. }) = Cqe::decode(&raw) {
                    let posted = self.posted_at[slot_of(tag)];
                    self.write_times.ticks += self.engine.now().saturating_sub(posted);
                    self.write_times.completed += 1;
                    self.logic.completed(tag, status == CqeStatus::Ok, &mut out);
                }
            }
            self.queues.arm_once();
            if self.queues.cq.is_empty() {
                break;
            }
        }
        self.apply(out)
    }

    /// The R5 forgot its registrations: the connections with writes in flight are reset (their
    /// completions will never come), `register` registers the queue set afresh, and its
    /// completion queue is armed again.
    pub fn writes_lost(&mut self, register: impl FnOnce()) -> Wakes {
        let mut out = Vec::new();
        self.logic.writes_lost(&mut out);
        register();
        self.queues.arm_once();
        self.apply(out)
    }

    /// Node `node` became unreachable: the doorbells for it are dropped and its connections
    /// reset.
    pub fn node_lost(&mut self, node: u16) -> Wakes {
        self.outbox.retain(|&(to, _)| to != node);
        let mut out = Vec::new();
        self.logic.node_lost(node, &mut out);
        self.apply(out)
    }

    /// The next doorbell to send, off the front of the outbox.
    pub fn next_doorbell(&mut self) -> Option<(u16, Doorbell)> {
        self.outbox.pop_front()
    }

    /// A doorbell that could not go yet goes back to the front: the order must hold.
    pub fn put_back(&mut self, node: u16, doorbell: Doorbell) {
        self.outbox.push_front((node, doorbell));
    }

    pub fn outbox_is_empty(&self) -> bool {
        self.outbox.is_empty()
    }

    /// Before a connection may take a slot (a connect, a Connect doorbell): a free slot with
    /// its rings mapped, if frames allow (else the protocol finds none, and refuses).
    fn prepare(&mut self) {
        let engine = &mut self.engine;
        if let Some(index) = self.logic.slot_to_prepare()
            && self.rings.map_slot(index, |at, len| engine.clean_to_poc(at, len))
        {
            self.logic.rings_ready(index);
        }
    }

    fn prepare_for(&mut self, doorbell: &Doorbell) {
        if matches!(doorbell, Doorbell::Connect { .. }) {
            self.prepare();
        }
    }

    /// Carries out `out` (and what that causes here): local doorbells applied, remote ones
    /// queued, writes posted; the wake-ups are handed back.
    fn apply(&mut self, mut out: Vec<Action>) -> Wakes {
        let me = self.logic.node();
        let mut wakes = Wakes::default();
        let mut i = 0;
        while i < out.len() {
            match out[i] {
                Action::Notify { node, doorbell } if node == me => {
                    self.prepare_for(&doorbell);
                    self.logic.doorbell(me, doorbell, &mut out);
                }
                Action::Notify { node, doorbell } => self.outbox.push_back((node, doorbell)),
                Action::Write { node, local, remote, len, tag } => {
                    if !self.post(node, local, remote, len, tag) {
                        self.logic.completed(tag, false, &mut out);
                    }
                }
                Action::Wake(slot) => wakes.add(slot),
            }
            i += 1;
        }
        wakes
    }

    /// Posts one WQE on the kernel's work queue, ringing the doorbell if the R5 does not poll
    /// it; false when the queue is full (never: the protocol keeps at most `WRITES_MAX` writes
    /// in flight).
    fn post(&mut self, node: u16, local: u64, remote: u64, len: u32, tag: u64) -> bool {
        let wqe = Wqe { direction: Direction::Write, node, len, local, remote, tag, notify: None };
        // SAFETY: the only producer of the socket PD's work queue, under the node's lock.
        let mut wq = unsafe { self.queues.wq.producer() };
        if wq.push(wqe.encode()).is_err() {
            return false;
        }
        if self.queues.doorbell_needed() {
            self.engine.ring_doorbell(self.queues.wq.produced());
        }
        self.posted_at[slot_of(tag)] = self.engine.now();
        true
    }
}

/// The connection slot a write's tag names.
fn slot_of(tag: u64) -> usize {
    usize::from(super::split_tag(tag).0.index) % MAX_CONNECTIONS
}
