//! Sockets over RDMA on the hardware (`docs/hw/sockets.md`): the node's socket space (the rings,
//! walked by context bank `SOCKET_PD`), the kernel's own PLDMA queue set for that PD, the
//! doorbells to and from other kernels, and the processes' socket calls.
//!
//! The protocol is `socket::Sockets`, host-tested; this module carries out what it asks. Lock
//! order: the process table, then this module's lock. Nothing is sent and nobody is woken with
//! either held: doorbells for other nodes wait in an outbox, in the order the protocol produced
//! them, and one core at a time sends them ([`flush`]); doorbells for this node are applied at
//! once, under the lock.

use crate::arch::phys_to_virt;
use crate::elf::Permissions;
use crate::gsas_node::{self, NotifyError, handlers, kernel_client::SendError};
use crate::mm::kernel_frames::KernelFrames;
use crate::mm::user_space::{AddressSpace, FrameSource};
use crate::process::hooks::{ExitedProcess, Setup};
use crate::process::scheduler;
use crate::process::table::Wait;
use crate::rdma_node;
use crate::socket::{Action, Counters, Owner, Sockets};
use crate::sync::IrqMutex;
use alloc::collections::VecDeque;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use proto::gsas::{KERNEL_DOMAIN, MailboxOpcode, Message, Notification, Pid};
use proto::rdma::queue::{CQ_ENTRIES, Cqe, CqeStatus, Direction, QueueSet, WQ_ENTRIES, Wqe};
use proto::socket::{Doorbell, MAX_CONNECTIONS, RING_BYTES, SOCKET_PD, receive_ring, send_ring};

/// The socket space's ASID: after every process's (slot + 1, `process::table`). Only bank
/// `SOCKET_PD` uses it; no CPU ever runs on this space.
const SOCKET_ASID: u16 = crate::process::MAX_DOMAINS as u16 + 1;

// The protocol keeps at most a work queue's worth of writes in flight: the queue never fills.
const _: () = assert!(crate::socket::WRITES_MAX <= WQ_ENTRIES && crate::socket::WRITES_MAX <= CQ_ENTRIES);

struct SocketNode {
    logic: Sockets,
    /// The rings, which bank `SOCKET_PD` walks: a slot's pages are mapped the first time a
    /// connection needs the slot, and kept.
    rings: Rings,
    queues: &'static QueueSet,
    /// Doorbells for other nodes, in the order the protocol produced them.
    outbox: VecDeque<(u16, Doorbell)>,
    /// When each slot last posted a write (counter ticks), for [`Stats::write_us`].
    posted_at: [u64; MAX_CONNECTIONS],
}

static NODE: IrqMutex<Option<SocketNode>> = IrqMutex::new(None);
/// A core is sending the outbox ([`flush`]).
static SENDING: AtomicBool = AtomicBool::new(false);
/// A doorbell waits for a peer's full request FIFO: the next tick tries again ([`on_tick`]).
static OUTBOX_WAITING: AtomicBool = AtomicBool::new(false);
/// Doorbells the peer's service did not take at once (its request FIFO stayed full): retried.
static DOORBELLS_DEFERRED: AtomicU64 = AtomicU64::new(0);
static DOORBELLS_SENT: AtomicU64 = AtomicU64::new(0);
static DOORBELLS_RECEIVED: AtomicU64 = AtomicU64::new(0);
/// Doorbells not from a kernel, or that do not decode; and doorbells with no route out.
static BAD_DOORBELLS: AtomicU64 = AtomicU64::new(0);
/// RDMA writes completed, and the counter ticks from their post to their completion's reaping.
static WRITES_COMPLETED: AtomicU64 = AtomicU64::new(0);
static WRITE_TICKS: AtomicU64 = AtomicU64::new(0);

/// What the sockets of this node have counted (`cargo xtask bench sockets`, tests).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub protocol: Counters,
    pub doorbells_sent: u64,
    pub doorbells_received: u64,
    pub doorbells_deferred: u64,
    pub bad_doorbells: u64,
    pub connections: usize,
    /// RDMA writes completed, and their mean time from their connection's last post to their
    /// completion (µs; with several writes of a connection in flight, a lower bound).
    pub writes_completed: u64,
    pub write_us: u64,
}

pub fn stats() -> Stats {
    let (protocol, connections) =
        NODE.lock().as_ref().map_or_else(Default::default, |n| (n.logic.counters(), n.logic.connections()));
    Stats {
        protocol,
        doorbells_sent: DOORBELLS_SENT.load(Ordering::Relaxed),
        doorbells_received: DOORBELLS_RECEIVED.load(Ordering::Relaxed),
        doorbells_deferred: DOORBELLS_DEFERRED.load(Ordering::Relaxed),
        bad_doorbells: BAD_DOORBELLS.load(Ordering::Relaxed),
        connections,
        writes_completed: WRITES_COMPLETED.load(Ordering::Relaxed),
        write_us: WRITE_TICKS.load(Ordering::Relaxed) * 1_000_000
            / crate::timer::hz().max(1)
            / WRITES_COMPLETED.load(Ordering::Relaxed).max(1),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartError {
    /// The node has no RDMA.
    NoRdma,
    Rdma(rdma_node::RdmaError),
    /// The doorbell opcode has a receiver already.
    Opcode,
}

/// Brings sockets up once RDMA runs (boot core): the empty socket space on bank `SOCKET_PD`,
/// the kernel's queue set registered with the R5, its completion queue armed, and the doorbell
/// opcode taken.
pub fn start() -> Result<(), StartError> {
    if !rdma_node::available() {
        return Err(StartError::NoRdma);
    }
    let mut space = AddressSpace::new(SOCKET_ASID, KernelFrames);
    rdma_node::publish_tables(&mut space);
    let queue_pa = rdma_node::queue_set_pa(SOCKET_PD);
    rdma_node::attach(&Setup { pd: SOCKET_PD, ttbr0: space.dma_ttbr0(), queue_pa }).map_err(StartError::Rdma)?;
    // SAFETY: the PD's queue-set slot, mapped uncached in the kernel's linear map for good;
    // this module is its only user on the A53 side (no process holds `SOCKET_PD`).
    let queues = unsafe { &*(phys_to_virt(queue_pa) as *const QueueSet) };
    queues.arm_once();
    *NODE.lock() = Some(SocketNode {
        logic: Sockets::new(crate::cluster::node_id()),
        rings: Rings(space),
        queues,
        outbox: VecDeque::new(),
        posted_at: [0; MAX_CONNECTIONS],
    });
    handlers::register(MailboxOpcode::SOCKET_DOORBELL, on_doorbell).map_err(|_| StartError::Opcode)
}

/// Connects, as [`with_sockets`] with `Sockets::connect`, a slot with rings made ready first.
pub fn connect(owner: Owner, node: u16, port: u16) -> Option<(Result<u64, proto::syscall::Error>, Deferred)> {
    let mut guard = NODE.lock();
    let n = guard.as_mut()?;
    n.prepare();
    let mut out = Vec::new();
    let result = n.logic.connect(owner, node, port, &mut out);
    let deferred = n.apply(out);
    Some((result, deferred))
}

/// Whether processes can have sockets on this node.
pub fn available() -> bool {
    NODE.lock().is_some()
}

/// What must happen once the locks are let go: processes to wake, the outbox to send.
#[must_use]
pub struct Deferred {
    wakes: heapless::Vec<usize, { crate::process::MAX_DOMAINS }>,
}

impl Deferred {
    pub fn run(self) {
        flush();
        for slot in self.wakes {
            scheduler::wake_waiter(slot, |w| matches!(w, Wait::Socket | Wait::Connect));
        }
    }
}

/// Runs `f` on the node's sockets and carries out what it asked, under the lock; returns its
/// result and what is left for after the lock (`None` without sockets).
pub fn with_sockets<R>(f: impl FnOnce(&mut Sockets, &mut Vec<Action>) -> R) -> Option<(R, Deferred)> {
    let mut guard = NODE.lock();
    let node = guard.as_mut()?;
    let mut out = Vec::new();
    let result = f(&mut node.logic, &mut out);
    let deferred = node.apply(out);
    Some((result, deferred))
}

/// Like [`with_sockets`], with the ring memory at hand: `f` gets each connection slot's rings
/// (receive ring, then send ring), which the read and write calls copy to and from.
pub fn with_rings<R>(f: impl FnOnce(&mut Sockets, &Rings, &mut Vec<Action>) -> R) -> Option<(R, Deferred)> {
    let mut guard = NODE.lock();
    let node = guard.as_mut()?;
    let mut out = Vec::new();
    let result = f(&mut node.logic, &node.rings, &mut out);
    let deferred = node.apply(out);
    Some((result, deferred))
}

/// The socket space: every connection slot's rings (see [`with_rings`]).
pub struct Rings(AddressSpace<KernelFrames>);

impl Rings {
    /// The kernel's view of `len` bytes at socket-space address `va`, cut at the page's end.
    fn page_of(&self, va: u64, len: u32) -> (*mut u8, usize) {
        let page = self.0.page(va).expect("a slot in use has its rings mapped");
        let offset = (va - page.va) as usize;
        let len = (len as usize).min(crate::mm::PAGE_SIZE as usize - offset);
        (KernelFrames.virt(page.pa).wrapping_add(offset), len)
    }

    /// Connection `index`'s receive ring from `offset`: at most `len` bytes, as far as the end
    /// of the page they begin in.
    pub fn receive(&self, index: u8, offset: u32, len: u32) -> &[u8] {
        assert!(offset + len <= RING_BYTES);
        let (at, len) = self.page_of(receive_ring(index) + u64::from(offset), len);
        // SAFETY: a frame of the slot's receive ring, mapped for good; the engine writes only
        // positions beyond what the protocol gave the reader (`socket::Sockets::readable`).
        unsafe { core::slice::from_raw_parts(at, len) }
    }

    /// Connection `index`'s send ring from `offset`, as [`receive`](Self::receive).
    #[allow(clippy::mut_from_ref)]
    pub fn send(&self, index: u8, offset: u32, len: u32) -> &mut [u8] {
        assert!(offset + len <= RING_BYTES);
        let (at, len) = self.page_of(send_ring(index) + u64::from(offset), len);
        // SAFETY: a frame of the slot's send ring; the engine reads only posted positions, and
        // the protocol hands the writer only room that is not posted (`Sockets::writable`);
        // one caller at a time, under `NODE`.
        unsafe { core::slice::from_raw_parts_mut(at, len) }
    }

    /// Maps slot `index`'s rings (what is not mapped yet) and publishes the tables; false when
    /// frames ran out.
    fn map_slot(&mut self, index: usize) -> bool {
        let permissions = Permissions { read: true, write: true, execute: false };
        let start = receive_ring(index as u8);
        let mut mapped = true;
        for va in (start..start + 2 * u64::from(RING_BYTES)).step_by(crate::mm::PAGE_SIZE as usize) {
            if self.0.page(va).is_none() && self.0.map_page(va, permissions).is_err() {
                mapped = false;
                break;
            }
        }
        rdma_node::publish_tables(&mut self.0);
        mapped
    }
}

impl SocketNode {
    /// Before a connection may take a slot (a connect, a Connect doorbell): a free slot with
    /// its rings mapped, if frames allow (else the protocol finds none, and refuses).
    fn prepare(&mut self) {
        if let Some(index) = self.logic.slot_to_prepare()
            && self.rings.map_slot(index)
        {
            self.logic.rings_ready(index);
        }
    }

    /// Carries out `out` (and what that causes here): local doorbells applied, remote ones
    /// queued, writes posted; the wake-ups are left for after the lock.
    fn apply(&mut self, mut out: Vec<Action>) -> Deferred {
        let me = self.logic.node();
        let mut deferred = Deferred { wakes: heapless::Vec::new() };
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
                Action::Wake(slot) => {
                    if !deferred.wakes.contains(&slot) {
                        let _ = deferred.wakes.push(slot);
                    }
                }
            }
            i += 1;
        }
        deferred
    }

    fn prepare_for(&mut self, doorbell: &Doorbell) {
        if matches!(doorbell, Doorbell::Connect { .. }) {
            self.prepare();
        }
    }

    /// Posts one WQE on the kernel's work queue; false when it cannot (never: the protocol
    /// keeps at most `WRITES_MAX` writes in flight).
    fn post(&mut self, node: u16, local: u64, remote: u64, len: u32, tag: u64) -> bool {
        let wqe = Wqe { direction: Direction::Write, node, len, local, remote, tag, notify: None };
        // SAFETY: this module is the only producer of the socket PD's work queue, under `NODE`.
        let mut wq = unsafe { self.queues.wq.producer() };
        if wq.push(wqe.encode()).is_err() {
            return false;
        }
        if self.queues.doorbell_needed() {
            rdma_node::ring_doorbell(SOCKET_PD, self.queues.wq.produced());
        }
        self.posted_at[(tag >> 48) as usize % MAX_CONNECTIONS] = crate::timer::now();
        true
    }

    /// Takes every completion, then re-arms the queue for the next one.
    fn reap(&mut self, out: &mut Vec<Action>) {
        loop {
            // SAFETY: the only consumer of the socket PD's completion queue, under `NODE`.
            let mut cq = unsafe { self.queues.cq.consumer() };
            while let Some(raw) = cq.pop() {
                if let Ok(Cqe::Local { tag, status, .. }) = Cqe::decode(&raw) {
                    let posted = self.posted_at[(tag >> 48) as usize % MAX_CONNECTIONS];
                    WRITE_TICKS.fetch_add(crate::timer::now().saturating_sub(posted), Ordering::Relaxed);
                    WRITES_COMPLETED.fetch_add(1, Ordering::Relaxed);
                    self.logic.completed(tag, status == CqeStatus::Ok, out);
                }
            }
            self.queues.arm_once();
            if self.queues.cq.is_empty() {
                return;
            }
        }
    }
}

/// The PLDMA's completion interrupt found `SOCKET_PD`'s bit (`rdma_node`).
pub fn on_completions() {
    let deferred = {
        let mut guard = NODE.lock();
        let Some(node) = guard.as_mut() else { return };
        let mut out = Vec::new();
        node.reap(&mut out);
        node.apply(out)
    };
    deferred.run();
}

/// The kernel handler of `SOCKET_DOORBELL`: only another kernel (domain 0) may ring it; the
/// protocol checks that it comes from the connection's peer node.
fn on_doorbell(n: Notification, from: Pid) {
    let decoded = match Message::decode(n) {
        Ok(Message::SocketDoorbell { payload }) => Doorbell::decode(payload).ok(),
        _ => None,
    };
    let Some(doorbell) = decoded.filter(|_| from.domain() == KERNEL_DOMAIN) else {
        BAD_DOORBELLS.fetch_add(1, Ordering::Relaxed);
        return;
    };
    DOORBELLS_RECEIVED.fetch_add(1, Ordering::Relaxed);
    let deferred = {
        let mut guard = NODE.lock();
        let Some(node) = guard.as_mut() else { return };
        node.prepare_for(&doorbell);
        let mut out = Vec::new();
        node.logic.doorbell(from.node(), doorbell, &mut out);
        node.apply(out)
    };
    deferred.run();
}

/// The R5 forgot its registrations (`rpu::reconnect`): the socket PD's queue set is registered
/// afresh, and the connections that had writes in flight are reset (their completions will
/// never come).
pub fn registrations_lost() {
    let deferred = {
        let mut guard = NODE.lock();
        let Some(n) = guard.as_mut() else { return };
        let mut out = Vec::new();
        n.logic.writes_lost(&mut out);
        if let Err(e) = rdma_node::register_queues(SOCKET_PD, rdma_node::queue_set_pa(SOCKET_PD)) {
            defmt::error!("sockets: the R5 refused the socket PD again: {}", defmt::Debug2Format(&e));
        }
        n.queues.arm_once();
        n.apply(out)
    };
    deferred.run();
}

/// Node `node` became unreachable (`cluster`, or a doorbell that could not be sent): its
/// connections are reset and the doorbells for it dropped.
pub fn node_lost(node: u16) {
    let deferred = {
        let mut guard = NODE.lock();
        let Some(n) = guard.as_mut() else { return };
        n.outbox.retain(|&(to, _)| to != node);
        let mut out = Vec::new();
        n.logic.node_lost(node, &mut out);
        n.apply(out)
    };
    deferred.run();
}

/// A process ended (`process::hooks::on_exit`): its sockets are closed.
pub fn process_exited(process: ExitedProcess) {
    let owner = Owner { slot: process.slot, domain: process.domain };
    if let Some(((), deferred)) = with_sockets(|s, out| s.exited(owner, out)) {
        deferred.run();
    }
}

/// Core 0's tick: doorbells the peer's service could not take yet are tried again.
pub fn on_tick() {
    if OUTBOX_WAITING.swap(false, Ordering::AcqRel) {
        flush();
    }
}

/// When core 0's tick must run [`on_tick`]: at the next tick while doorbells wait, else never.
pub fn tick_due() -> Option<u64> {
    OUTBOX_WAITING.load(Ordering::Acquire).then_some(0)
}

/// How one core's turn at the outbox ended.
enum Turn {
    /// Nothing left.
    Empty,
    /// The peer's request FIFO stayed full: the doorbell went back to the front.
    Busy,
    /// The node is unreachable.
    Lost(u16),
}

/// Sends the outbox in order, one core at a time. A core that finds another sending leaves its
/// doorbells to it: that core looks at the outbox again after it stops sending, so a doorbell
/// queued meanwhile is never left behind.
pub fn flush() {
    loop {
        if SENDING.swap(true, Ordering::Acquire) {
            return;
        }
        let turn = send_outbox();
        // Let go and look again under the outbox's lock: a core that queued a doorbell before
        // this look is seen here; one that queues after it finds no core sending.
        let more = {
            let node = NODE.lock();
            SENDING.store(false, Ordering::Release);
            node.as_ref().is_some_and(|n| !n.outbox.is_empty())
        };
        match turn {
            Turn::Lost(node) => {
                // Its connections are reset (which queues nothing for it); then the rest.
                node_lost(node);
                continue;
            }
            Turn::Busy => {
                OUTBOX_WAITING.store(true, Ordering::Release);
                crate::timer::needs_changed();
                return;
            }
            Turn::Empty if more => {}
            Turn::Empty => return,
        }
    }
}

/// Sends doorbells off the front of the outbox until it is empty or one cannot go.
fn send_outbox() -> Turn {
    loop {
        let next = NODE.lock().as_mut().and_then(|n| n.outbox.pop_front());
        let Some((node, doorbell)) = next else { return Turn::Empty };
        match send(node, doorbell) {
            Ok(()) => {
                DOORBELLS_SENT.fetch_add(1, Ordering::Relaxed);
            }
            Err(NotifyError::NotSent(SendError::Busy)) => {
                // The order must hold: it goes back first.
                DOORBELLS_DEFERRED.fetch_add(1, Ordering::Relaxed);
                if let Some(n) = NODE.lock().as_mut() {
                    n.outbox.push_front((node, doorbell));
                }
                return Turn::Busy;
            }
            Err(NotifyError::NotSent(SendError::Unreachable)) => return Turn::Lost(node),
            Err(_) => {
                // No route to it (no such node): nothing to connect to there.
                BAD_DOORBELLS.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

fn send(node: u16, doorbell: Doorbell) -> Result<(), NotifyError> {
    let notification = Message::SocketDoorbell { payload: doorbell.encode() }
        .encode()
        .map_err(|_| NotifyError::NotSent(SendError::NoRoute))?;
    gsas_node::notify(node, notification)
}
