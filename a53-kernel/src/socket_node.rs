//! Sockets over RDMA on the hardware (`docs/hw/sockets.md`): the node's socket space (the rings,
//! walked by context bank `SOCKET_PD`), the kernel's own PLDMA queue set for that PD, the
//! doorbells to and from other kernels, and the processes' socket calls.
//!
//! The protocol is `socket::Sockets`, and what carries it out on the rings and the queue set is
//! `socket::node::SocketNode`, both host-tested; this module keeps the node's one behind a lock,
//! sends its outbox to the other kernels and wakes the processes it names. Lock order: the
//! process table, then this module's lock. Nothing is sent and nobody is woken with either held:
//! doorbells for other nodes wait in an outbox, in the order the protocol produced them, and one
//! core at a time sends them ([`flush`]); doorbells for this node are applied at once, under the
//! lock.

use crate::arch::phys_to_virt;
use crate::gsas_node::{self, NotifyError, handlers, kernel_client::SendError};
use crate::mm::kernel_frames::KernelFrames;
use crate::mm::user_space::AddressSpace;
use crate::process::hooks::{ExitedProcess, Setup};
use crate::process::scheduler;
use crate::process::table::Wait;
use crate::rdma_node;
use crate::socket::node::{Engine, SocketNode, Wakes};
use crate::socket::{Counters, Owner, Sockets};
use crate::sync::IrqMutex;
use core::sync::atomic::{AtomicBool, Ordering};
use proto::gsas::{KERNEL_DOMAIN, MailboxOpcode, Message, Notification, Pid};
use proto::rdma::queue::QueueSet;
use proto::socket::{Doorbell, SOCKET_PD};

/// The socket space's ASID: after every process's (slot + 1, `process::table`). Only bank
/// `SOCKET_PD` uses it; no CPU ever runs on this space.
const SOCKET_ASID: u16 = crate::process::MAX_DOMAINS as u16 + 1;

/// The cores whose tick retries the doorbells ([`on_tick`], registered by `kernel::wire`).
pub const TICK_CORES: u8 = 0b0001;

/// The devices below the sockets: the caches, the socket PD's PD page, the counter.
pub struct Hardware;

impl Engine for Hardware {
    fn clean_to_poc(&mut self, at: *const u8, len: usize) {
        crate::arch::mmu::clean_to_poc(at, len);
    }

    fn ring_doorbell(&mut self, head: u32) {
        rdma_node::ring_doorbell(SOCKET_PD, head);
    }

    fn now(&self) -> u64 {
        crate::timer::now()
    }
}

static NODE: IrqMutex<Option<SocketNode<KernelFrames, Hardware>>> = IrqMutex::new(None);
/// A core is sending the outbox ([`flush`]).
static SENDING: AtomicBool = AtomicBool::new(false);
/// A doorbell waits for a peer's full request FIFO: the next tick tries again ([`on_tick`]).
static OUTBOX_WAITING: AtomicBool = AtomicBool::new(false);

crate::counter_set! {
    /// The doorbells between this node's kernel and the others'.
    pub struct DoorbellCounts / LiveDoorbellCounts {
        sent,
        received,
        /// Doorbells the peer's service did not take at once (its request FIFO stayed full):
        /// retried.
        deferred,
        /// Doorbells not from a kernel, or that do not decode; and doorbells with no route out.
        bad,
    }
}

static DOORBELLS: LiveDoorbellCounts = LiveDoorbellCounts::new();

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
    let (protocol, connections, writes) =
        NODE.lock().as_ref().map_or_else(Default::default, |n| (n.counters(), n.connections(), n.write_times()));
    let doorbells = DOORBELLS.snapshot();
    Stats {
        protocol,
        doorbells_sent: doorbells.sent,
        doorbells_received: doorbells.received,
        doorbells_deferred: doorbells.deferred,
        bad_doorbells: doorbells.bad,
        connections,
        writes_completed: writes.completed,
        write_us: writes.ticks * 1_000_000 / crate::timer::hz().max(1) / writes.completed.max(1),
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
    let logic = Sockets::new(crate::cluster::node_id());
    *NODE.lock() = Some(SocketNode::new(logic, space, queues, Hardware));
    handlers::register(MailboxOpcode::SOCKET_DOORBELL, on_doorbell).map_err(|_| StartError::Opcode)
}

/// Whether processes can have sockets on this node.
pub fn available() -> bool {
    NODE.lock().is_some()
}

/// Runs `f` on the node's sockets, under the lock (`None` without sockets); what it hands back
/// to wake goes to [`after`] once every lock is let go.
pub fn with_node<R>(f: impl FnOnce(&mut SocketNode<KernelFrames, Hardware>) -> R) -> Option<R> {
    NODE.lock().as_mut().map(f)
}

/// What must happen once the locks are let go: the outbox sent, the processes in `wakes` woken.
pub fn after(wakes: Wakes) {
    flush();
    for &slot in wakes.slots() {
        scheduler::wake_waiter(slot, |w| matches!(w, Wait::Socket | Wait::Connect));
    }
}

/// Runs `f` on the node's sockets under the lock, then what it left for after the lock.
fn apply(f: impl FnOnce(&mut SocketNode<KernelFrames, Hardware>) -> Wakes) {
    if let Some(wakes) = with_node(f) {
        after(wakes);
    }
}

/// The PLDMA's completion interrupt found `SOCKET_PD`'s bit (`rdma_node`).
pub fn on_completions() {
    apply(SocketNode::completions);
}

/// The kernel handler of `SOCKET_DOORBELL`: only another kernel (domain 0) may ring it; the
/// protocol checks that it comes from the connection's peer node.
fn on_doorbell(n: Notification, from: Pid) {
    let decoded = match Message::decode(n) {
        Ok(Message::SocketDoorbell { payload }) => Doorbell::decode(payload).ok(),
        _ => None,
    };
    let Some(doorbell) = decoded.filter(|_| from.domain() == KERNEL_DOMAIN) else {
        DOORBELLS.bad.fetch_add(1, Ordering::Relaxed);
        return;
    };
    DOORBELLS.received.fetch_add(1, Ordering::Relaxed);
    apply(|node| node.doorbell(from.node(), doorbell));
}

/// The R5 forgot its registrations (`rpu::reconnect`): the socket PD's queue set is registered
/// afresh, and the connections that had writes in flight are reset (their completions will
/// never come).
pub fn registrations_lost() {
    apply(|node| {
        node.writes_lost(|| {
            if let Err(e) = rdma_node::register_queues(SOCKET_PD, rdma_node::queue_set_pa(SOCKET_PD)) {
                defmt::error!("sockets: the R5 refused the socket PD again: {}", defmt::Debug2Format(&e));
            }
        })
    });
}

/// Node `node` became unreachable (`cluster`, or a doorbell that could not be sent): its
/// connections are reset and the doorbells for it dropped.
pub fn node_lost(node: u16) {
    apply(|n| n.node_lost(node));
}

/// A process ended (`process::hooks::on_exit`): its sockets are closed.
pub fn process_exited(process: ExitedProcess) {
    let owner = Owner { slot: process.slot, domain: process.domain };
    apply(|node| node.run(|s, _, out| s.exited(owner, out)).1);
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
            node.as_ref().is_some_and(|n| !n.outbox_is_empty())
        };
        match turn {
            Turn::Lost(node) => {
                // Its connections are reset (which queues nothing for it); then the rest.
                node_lost(node);
                continue;
            }
            Turn::Busy => {
                OUTBOX_WAITING.store(true, Ordering::Release);
                crate::timer::needs_changed(TICK_CORES, crate::timer::Need::Tick(0));
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
        let next = NODE.lock().as_mut().and_then(SocketNode::next_doorbell);
        let Some((node, doorbell)) = next else { return Turn::Empty };
        match send(node, doorbell) {
            Ok(()) => {
                DOORBELLS.sent.fetch_add(1, Ordering::Relaxed);
            }
            Err(NotifyError::NotSent(SendError::Busy)) => {
                // The order must hold: it goes back first.
                DOORBELLS.deferred.fetch_add(1, Ordering::Relaxed);
                if let Some(n) = NODE.lock().as_mut() {
                    n.put_back(node, doorbell);
                }
                return Turn::Busy;
            }
            Err(NotifyError::NotSent(SendError::Unreachable)) => return Turn::Lost(node),
            Err(_) => {
                // No route to it (no such node): nothing to connect to there.
                DOORBELLS.bad.fetch_add(1, Ordering::Relaxed);
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
