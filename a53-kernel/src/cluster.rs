//! This node among the others: ending a run together with them, and learning that one is gone
//! (`docs/hw/sysblock.md`, "Ending a run as a cluster, and losing a node").
//!
//! The kernel owns the system block's interrupt line. `PEER_LOST` refreshes the set of
//! reachable nodes and wakes every process waiting on its mailbox interface: a wait for an
//! answer from a node that is gone then ends with `Unreachable` (`process::syscall`).
//! `ALL_DONE` releases [`finish`].

use crate::arch::cpu;
use crate::irq::{self, IntId};
use crate::kernel::{self, Stop, sysblock};
use crate::process::scheduler;
use crate::process::table::{TABLE, Wait};
use board::pl::irq_line;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use hal::sysblock::NodeSet;

/// NODES_ALIVE as last read: bits 0..64 and 64..128.
static ALIVE: [AtomicU64; 2] = [const { AtomicU64::new(u64::MAX) }; 2];
static ALL_DONE: AtomicBool = AtomicBool::new(false);
static DOORBELLS: AtomicU32 = AtomicU32::new(0);

/// Reads who is reachable and takes the system block's interrupt (boot core).
pub fn init() {
    if sysblock().identity().is_err() {
        // No system block (reported at boot): every node counts as reachable.
        return;
    }
    store_alive(sysblock().nodes_alive());
    if let Err(e) = irq::register_pl(irq_line::SYSBLOCK, on_irq, 1 << cpu::core_id()) {
        defmt::error!("system block interrupt: {}", defmt::Debug2Format(&e));
        return;
    }
    sysblock().enable_cluster_irqs();
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
    let pending = sysblock().take_pending();
    if pending.is_set(hal::sysblock::regs::IRQ::DOORBELL) {
        DOORBELLS.fetch_add(1, Ordering::SeqCst);
    }
    if pending.is_set(hal::sysblock::regs::IRQ::PEER_LOST) {
        let before = alive();
        store_alive(sysblock().nodes_alive());
        for node in before.without(alive()).iter() {
            defmt::warn!("node {=u16} is unreachable", node);
        }
        wake_mailbox_waiters();
    }
    if pending.is_set(hal::sysblock::regs::IRQ::ALL_DONE) {
        ALL_DONE.store(true, Ordering::Release);
    }
}

/// Every process waiting for its mailbox interface looks again (and finds out whether the node
/// it waits for is gone).
fn wake_mailbox_waiters() {
    let occupied: heapless::Vec<usize, { crate::process::MAX_DOMAINS }> =
        TABLE.lock().slots.iter().enumerate().filter(|(_, p)| p.is_some()).map(|(i, _)| i).collect();
    for slot in occupied {
        scheduler::wake_waiter(slot, |w| matches!(w, Wait::Mif { .. }));
    }
}

/// Ends this node's run once every node's run has ended: says so (`RUN_DONE`), keeps serving
/// the others (the atomic service, the mailbox and the R5 run on) until `ALL_DONE`, then stops
/// with `reason`.
pub fn finish(reason: Stop) -> ! {
    if sysblock().identity().is_ok() {
        sysblock().report_done();
        cpu::idle_until(|| ALL_DONE.load(Ordering::Acquire));
    }
    kernel::stop(reason)
}
