//! This node among the others: ending a run together with them, and learning that one is gone
//! (`docs/hw/sysblock.md`, "Ending a run as a cluster, and losing a node").
//!
//! This module owns the system block (`devices`) and its interrupt line. `PEER_LOST` refreshes
//! the set of reachable nodes and tells the subsystems that registered with [`on_node_lost`]
//! (the processes waiting on their mailbox interface look again, and a wait for an answer from
//! a node that is gone ends with `Unreachable`; the sockets to it are reset). `ALL_DONE`
//! releases [`finish`]. Who this node is, is read once, at [`init`].

use crate::arch::cpu;
use crate::hooks::{Full, Hooks};
use crate::irq::{self, IntId};
use crate::stop::{Stop, stop};
use crate::sync::IrqMutex;
use board::pl::irq_line;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use hal::sysblock::{Identity, NodeSet, Sysblock, SysblockError};

/// The system block; its interrupt handler takes it too.
static SYSBLOCK: IrqMutex<Option<Sysblock>> = IrqMutex::new(None);
/// What the block said at [`init`]: the identity registers never change.
static IDENTITY: spin::Once<Result<Identity, SysblockError>> = spin::Once::new();

/// NODES_ALIVE as last read: bits 0..64 and 64..128.
static ALIVE: [AtomicU64; 2] = [const { AtomicU64::new(u64::MAX) }; 2];
static ALL_DONE: AtomicBool = AtomicBool::new(false);
static DOORBELLS: AtomicU32 = AtomicU32::new(0);
/// Who is told that a node became unreachable.
static NODE_LOST: Hooks<fn(u16), 4> = Hooks::new();
/// Who finishes what reached this node before the run ended, before it stops.
static BEFORE_STOP: Hooks<fn(), 2> = Hooks::new();

/// Registers `f` to run (in the system block's interrupt) for each node that becomes
/// unreachable.
pub fn on_node_lost(f: fn(node: u16)) -> Result<(), Full> {
    NODE_LOST.register(f)
}

/// Registers `f` to run once every node's run has ended (`ALL_DONE`), before this node stops:
/// what other nodes sent before they ended (a job's exit, say) must not be lost with the node.
pub fn before_stop(f: fn()) -> Result<(), Full> {
    BEFORE_STOP.register(f)
}

/// Takes the system block and reads who this node is (boot core, once forwarding works).
pub fn init(sysblock: Sysblock) {
    IDENTITY.call_once(|| sysblock.identity());
    *SYSBLOCK.lock() = Some(sysblock);
}

/// This node's identity, as the system block gave it at [`init`].
pub fn identity() -> Result<Identity, SysblockError> {
    *IDENTITY.get().unwrap_or(&Err(SysblockError::BadId(0)))
}

/// This node's number and the cluster's node count; (0, 1) without a system block (alone).
pub fn node_and_count() -> (u16, u16) {
    identity().map_or((0, 1), |id| (id.node, id.node_count))
}

/// This node's number (0 without a system block).
pub fn node_id() -> u16 {
    node_and_count().0
}

/// Runs `f` on the system block, under its lock (`None` before [`init`]). Keep `f` short: the
/// interrupt handler waits for it.
pub fn with_sysblock<R>(f: impl FnOnce(&mut Sysblock) -> R) -> Option<R> {
    SYSBLOCK.lock().as_mut().map(f)
}

/// Reads who is reachable and takes the system block's interrupt (boot core).
pub fn enable_interrupts() {
    if identity().is_err() {
        // No system block (reported at boot): every node counts as reachable.
        return;
    }
    if let Some(alive) = with_sysblock(|s| s.nodes_alive()) {
        store_alive(alive);
    }
    if let Err(e) = irq::register_pl(irq_line::SYSBLOCK, on_irq, 1 << cpu::core_id()) {
        defmt::error!("system block interrupt: {}", defmt::Debug2Format(&e));
        return;
    }
    with_sysblock(Sysblock::enable_cluster_irqs);
}

fn store_alive(set: NodeSet) {
    ALIVE[0].store(set.0 as u64, Ordering::Release);
    ALIVE[1].store((set.0 >> 64) as u64, Ordering::Release);
}

fn alive() -> NodeSet {
    NodeSet(u128::from(ALIVE[0].load(Ordering::Acquire)) | u128::from(ALIVE[1].load(Ordering::Acquire)) << 64)
}

/// Whether node `node` is reachable (as of the last `PEER_LOST`). Nodes beyond the bitmaps
/// never are.
pub fn is_alive(node: u64) -> bool {
    u16::try_from(node).is_ok_and(|n| alive().contains(n))
}

/// Doorbell interrupts taken since boot (the platform tests ring it).
pub fn doorbells() -> u32 {
    DOORBELLS.load(Ordering::SeqCst)
}

fn on_irq(_: IntId) {
    let Some(pending) = with_sysblock(Sysblock::take_pending) else { return };
    if pending.is_set(hal::sysblock::regs::IRQ::DOORBELL) {
        DOORBELLS.fetch_add(1, Ordering::SeqCst);
    }
    if pending.is_set(hal::sysblock::regs::IRQ::PEER_LOST) {
        let before = alive();
        if let Some(now) = with_sysblock(|s| s.nodes_alive()) {
            store_alive(now);
        }
        for node in before.without(alive()).iter() {
            defmt::warn!("node {=u16} is unreachable", node);
            for f in NODE_LOST.iter() {
                f(node);
            }
        }
    }
    if pending.is_set(hal::sysblock::regs::IRQ::ALL_DONE) {
        ALL_DONE.store(true, Ordering::Release);
    }
}

/// Ends this node's run once every node's run has ended: says so (`RUN_DONE`), keeps serving
/// the others (the atomic service, the mailbox and the R5 run on) until `ALL_DONE`, lets those
/// registered with [`before_stop`] finish what reached the node, then stops with `reason`.
pub fn finish(reason: Stop) -> ! {
    if identity().is_ok() {
        with_sysblock(Sysblock::report_done);
        crate::timer::idle_until(|| ALL_DONE.load(Ordering::Acquire));
        for f in BEFORE_STOP.iter() {
            f();
        }
    }
    stop(reason)
}
