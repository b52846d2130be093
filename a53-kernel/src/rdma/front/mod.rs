//! The RDMA front end's two interrupts, as logic (`docs/hw/pldma.md`, "Fault handling" and "How
//! a completion wakes a process"; `docs/hw/smmu.md`, "Faults"): what the engine's interrupt (PL
//! line 3) and the SMMU's context-fault interrupt (PL line 4) read, clear, answer, wake and count.
//! What they need from below is a trait: the engine's kernel pages ([`Engine`]), the SMMU
//! ([`Smmu`], implemented here for `hal::smmu500::Smmu500`), and the rest of the kernel with the
//! devices' locks ([`Node`]). `rdma_node` implements them on the hardware and registers the
//! handlers; the host tests implement them with fakes.
//!
//! Locks: [`Node::with_engine`] and [`Node::with_smmu`] run a closure under the device's lock,
//! and the handlers put nothing in it but register accesses. A page gets its frame
//! ([`Node::resolve_page`], which takes the process table) and a process is woken with neither
//! held: the process table comes first in lock order.

use super::answer::{Answer, Recent, action, answer, page_access};
use core::ops::Range;
use core::sync::atomic::{AtomicU64, Ordering};
use hal::pldma::Pd;
use hal::pldma::driver::PdPageError;
use hal::pldma::fault::{FaultEntry, FaultEntryError};
use hal::pldma::rapf::RapfRequest;
use hal::pldma::regs::IRQ;
use hal::smmu500::regs::CONTEXT_BANKS;
use hal::smmu500::{Access, ContextBank, ContextFault, GlobalFault, RegisterPort, Resume, Scan, Smmu500};
use proto::rdma::ipc::RdmaRequest;
use tock_registers::LocalRegisterCopy;

/// At most this many fault entries per interrupt: the FIFO holds 512, and a flood must not keep
/// the core in the handler (the line stays up and it comes back).
pub const FAULTS_PER_IRQ: usize = 64;

/// Handler rounds per SMMU interrupt at most: faults that keep coming are left to the next one.
pub const STALL_ROUNDS: usize = 8;

/// Recorded context faults taken per round at most (a round's stalled faults wait, in a
/// fixed-size list, for the SMMU lock to be let go before their pages are resolved).
pub const FAULTS_PER_ROUND: usize = 16;

crate::counter_set! {
    /// What the front end has seen so far (for tests and benches: `rdma_node::counters`).
    pub struct Counters / LiveCounters {
        /// Receiver fault FIFO entries answered.
        fault_entries,
        /// FIFO entries that did not decode.
        bad_fault_entries,
        /// SMMU context faults decoded and cleared.
        context_faults,
        /// SMMU global faults decoded and cleared.
        global_faults,
        /// Completion-queue wake-ups (one per PD per interrupt).
        cq_wakeups,
        /// Sticky causes seen (FAULT_LOST, EVENTS_LOST, DESC_REFUSED).
        sticky,
        /// RAPF writes the engine refused.
        rapf_refused,
        /// Fault entries of an attempt answered lately (skipped).
        duplicate_fault_entries,
        /// Fault entries and stalled accesses whose page got a frame (answered Retry, or resumed).
        faults_resolved,
        /// Engine interrupts that found fault entries.
        fault_irqs,
        /// Stalled accesses resumed with retry after their page got a frame (stall policy).
        stalls_resumed,
        /// Stalled accesses with no recorded fault (their fault got only MULTI), resumed with
        /// retry so that they fault again in full.
        unrecorded_stalls,
        /// Instructions those interrupts took, from the handler's start to the last answer sent
        /// (this core's PMU counter 0, when it counts instructions: under QEMU's `-icount`, after
        /// `arch::pmu::count_instructions`; else 0).
        fault_irq_instructions,
        /// Of those, the instructions of the forwarded accesses the handlers made (QEMU's
        /// emulation, `exception::forward::forwarding_instructions`; 0 unless timed).
        fault_irq_forwarding,
        /// Interrupts that found Active Access logs with new entries (`ACTIVE_LOG`).
        active_log_irqs,
        /// SMMU interrupts that resumed stalled accesses (stall policy).
        stall_irqs,
        /// Instructions those took, from the handler's start to the last RESUME (as above).
        stall_irq_instructions,
        /// Of those, the forwarded accesses' (as above).
        stall_irq_forwarding,
        /// Instructions both handlers spent giving pages their frames (`resolve_rdma_fault`: the
        /// region lookup, frames zeroed, descriptors written and cleaned), as above.
        resolve_instructions,
    }
}

/// The engine's kernel pages as the interrupt uses them (`docs/hw/pldma.md`, "Control page
/// registers", "Fault page registers", "PD page registers"): each method is one short access,
/// made under the engine's lock ([`Node::with_engine`]).
pub trait Engine {
    /// `irq_status`: every pending cause, and the `CQ_PENDING` copy, in one read.
    fn irq_status(&self) -> LocalRegisterCopy<u32, IRQ::Register>;
    /// The fault FIFO's head entry, popped (`FaultFifo::pop`); `Ok(None)` when it is empty.
    fn pop_fault(&mut self) -> Result<Option<FaultEntry>, FaultEntryError>;
    /// Clears the sticky `causes` (write 1 to clear).
    fn clear_sticky(&mut self, causes: LocalRegisterCopy<u32, IRQ::Register>);
    /// Clears bits `pds` of `cq_pending` (bit `p` for PD `p`).
    fn clear_cq_pending(&mut self, pds: u16);
    /// Takes the Active Access page's `appended` bits (read, then cleared by writing them back).
    fn take_appended(&mut self) -> u32;
    /// Writes `rapf` to PD page `pd`'s `rapf` register and reads back whether the engine
    /// refused it (`PdPage::rapf`).
    fn rapf(&mut self, pd: Pd, rapf: &RapfRequest) -> Result<(), PdPageError>;
}

/// The SMMU as its context-fault interrupt uses it (`docs/hw/smmu.md`, "Faults"): each method is
/// a short access, made under the SMMU's lock ([`Node::with_smmu`]).
pub trait Smmu {
    /// A bank's recorded fault, if one records one.
    fn next_fault(&self) -> Option<ContextFault>;
    /// Clears `fault`'s record (write-back of the bits read).
    fn clear_fault(&mut self, fault: &ContextFault);
    /// The recorded global fault, if any.
    fn global_fault(&self) -> Option<GlobalFault>;
    /// Clears `fault`'s record.
    fn clear_global_fault(&mut self, fault: &GlobalFault);
    /// RESUME of every access `bank` holds: retry, or terminate the recorded one.
    fn resume(&mut self, bank: ContextBank, action: Resume);
    /// The banks that hold a stalled access with nothing recorded (`docs/hw/smmu.md`, "MULTI in
    /// stall mode").
    fn unrecorded_stalls(&self) -> impl Iterator<Item = ContextBank> + '_;
    /// One look at the banks: [`next_fault`](Self::next_fault)'s answer, and when there is no
    /// fault, [`unrecorded_stalls`](Self::unrecorded_stalls)' (`Smmu500::scan`: one register
    /// read per bank for both).
    fn scan(&self) -> Scan {
        match self.next_fault() {
            Some(fault) => Scan::Fault(fault),
            None => Scan::Quiet { unrecorded: self.unrecorded_stalls().fold(0, |m, b| m | 1 << b.index()) },
        }
    }
}

impl<P: RegisterPort> Smmu for Smmu500<P> {
    fn next_fault(&self) -> Option<ContextFault> {
        Smmu500::next_fault(self)
    }

    fn clear_fault(&mut self, fault: &ContextFault) {
        Smmu500::clear_fault(self, fault)
    }

    fn global_fault(&self) -> Option<GlobalFault> {
        Smmu500::global_fault(self)
    }

    fn clear_global_fault(&mut self, fault: &GlobalFault) {
        Smmu500::clear_global_fault(self, fault)
    }

    fn resume(&mut self, bank: ContextBank, action: Resume) {
        Smmu500::resume(self, bank, action)
    }

    fn unrecorded_stalls(&self) -> impl Iterator<Item = ContextBank> + '_ {
        Smmu500::unrecorded_stalls(self)
    }

    fn scan(&self) -> Scan {
        Smmu500::scan(self)
    }
}

/// The devices, behind their locks, and what the handlers need of the rest of the kernel.
pub trait Node {
    /// The engine's kernel pages.
    type Engine: Engine;
    /// The SMMU.
    type Smmu: Smmu;
    /// Runs `f` on the engine under its lock; `None` without an engine.
    fn with_engine<R>(&self, f: impl FnOnce(&mut Self::Engine) -> R) -> Option<R>;
    /// Runs `f` on the SMMU under its lock; `None` without one.
    fn with_smmu<R>(&self, f: impl FnOnce(&mut Self::Smmu) -> R) -> Option<R>;
    /// Runs `f` on the faults answered lately, kept across interrupts (under their own lock).
    fn with_recent<R>(&self, f: impl FnOnce(&mut Recent) -> R) -> R;
    /// This node's id: a fault entry that names it is answered to this node's R5.
    fn node_id(&self) -> u16;
    /// Gives the page at `va` of `pd`'s holder its frame (and touch-ahead's) for a write or a
    /// read (`process::paging::resolve_rdma_fault`): the addresses whose pages are resident now
    /// (for such an access), `None` when it cannot have one. Takes the process table.
    fn resolve_page(&self, pd: Pd, va: u64, write: bool) -> Option<Range<u64>>;
    /// Posts `request` to this node's R5 over the IPC ring (its reply is dropped when read).
    fn post(&self, request: &RdmaRequest);
    /// Reads what the R5 sent (the replies to the posts).
    fn drain(&self);
    /// The PDs no process holds whose completions a kernel subsystem takes, and what it runs
    /// when they have some (`rdma_node::on_kernel_completions`).
    fn kernel_completions(&self) -> impl Iterator<Item = (Pd, fn())>;
    /// The slots of the processes holding the PDs of `pending` (bit `p` for PD `p`). Takes the
    /// process table.
    fn cq_holders(&self, pending: u16) -> heapless::Vec<usize, { hal::pldma::PDS }>;
    /// Wakes process `slot` if it waits on its completion queue.
    fn wake_cq_waiter(&self, slot: usize);
    /// Active Access logs took entries (bit `i`: log `i`, the kernel's fault log included):
    /// the kernel takes its own, and tells the owners who asked (`rdma::active::LogNotice`).
    fn logs_appended(&self, logs: u32);
    /// This core's instruction count (PMU counter 0, when it counts; wraps).
    fn instructions(&self) -> u32;
    /// The instructions of this core's forwarded accesses so far.
    fn forwarding_instructions(&self) -> u64;
    /// Reports a context fault the handler cleared.
    fn report_context_fault(&self, fault: &ContextFault);
    /// Reports a global fault the handler cleared.
    fn report_global_fault(&self, fault: &GlobalFault);
}

/// The front end's interrupt handlers over `node`, counting in `counters`.
pub struct Front<'a, N> {
    /// The devices and the kernel.
    pub node: &'a N,
    /// Where the handlers count (`rdma_node`'s, kept for the node's run).
    pub counters: &'a LiveCounters,
}

impl<N: Node> Front<'_, N> {
    /// PL line 3: one read of `irq_status` says what is pending; then the fault entries are
    /// taken (only if the FIFO holds some), the sticky causes cleared and counted, the
    /// processes whose CQ the R5 marked woken, and the owners of logs that took entries told
    /// (only if `ACTIVE_LOG` is set). A completion alone costs two accesses: the read and
    /// the write that clears its `cq_pending` bits (`docs/hw/pldma.md`, "How a completion wakes a
    /// process"). Each fault entry is answered after its page got a frame, if it can
    /// (`process::paging`, outside the engine lock: the process table comes first in lock order).
    pub fn on_engine_irq(&self) {
        let start = Cost::start(self.node);
        let me = self.node.node_id();
        let mut entries = heapless::Vec::<FaultEntry, FAULTS_PER_IRQ>::new();
        let taken = self.node.with_engine(|engine| {
            let status = engine.irq_status();
            if status.is_set(IRQ::FAULT) {
                while !entries.is_full() {
                    match engine.pop_fault() {
                        Ok(Some(entry)) => {
                            let _ = entries.push(entry);
                        }
                        Ok(None) => break,
                        Err(_) => {
                            self.counters.bad_fault_entries.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            }
            let sticky = status.get() & (IRQ::FAULT_LOST::SET + IRQ::EVENTS_LOST::SET + IRQ::DESC_REFUSED::SET).value;
            if sticky != 0 {
                self.counters.sticky.fetch_add(1, Ordering::Relaxed);
                engine.clear_sticky(LocalRegisterCopy::new(sticky));
            }
            let pending = status.read(IRQ::CQ_PENDING) as u16;
            if pending != 0 {
                engine.clear_cq_pending(pending);
            }
            let appended = if status.is_set(IRQ::ACTIVE_LOG) { engine.take_appended() } else { 0 };
            (pending, appended)
        });
        let Some((pending, appended)) = taken else { return };
        if appended != 0 {
            self.counters.active_log_irqs.fetch_add(1, Ordering::Relaxed);
            self.node.logs_appended(appended);
        }
        if !entries.is_empty() {
            self.answer_faults(&entries, me);
            let c = self.counters;
            start.add_to(self.node, &c.fault_irqs, &c.fault_irq_instructions, &c.fault_irq_forwarding);
        }
        self.wake_cq_waiters(pending);
    }

    /// Gives each entry's page a frame where it can, then answers: Retry or Abort, to this node's
    /// R5 over the IPC ring (then one drain of its replies) or to the owner's through the PD page.
    /// The faults answered lately are looked up once for all the entries; an entry whose page
    /// the previous resolve made resident, for the same access (another attempt of the same
    /// block: with touch-ahead the block is resident) is answered Retry without a second look
    /// at the process.
    fn answer_faults(&self, entries: &[FaultEntry], me: u16) {
        let mut answers = heapless::Vec::<Answer, FAULTS_PER_IRQ>::new();
        let seen: heapless::Vec<bool, FAULTS_PER_IRQ> =
            self.node.with_recent(|recent| entries.iter().map(|entry| recent.seen(entry)).collect());
        let mut resident: Option<(Pd, bool, Range<u64>)> = None;
        for (entry, seen) in entries.iter().zip(seen) {
            self.counters.fault_entries.fetch_add(1, Ordering::Relaxed);
            if seen {
                self.counters.duplicate_fault_entries.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            let resolved = page_access(entry).is_some_and(|write| {
                let va = entry.va();
                let known =
                    resident.as_ref().is_some_and(|(pd, w, span)| *pd == entry.pd && *w == write && span.contains(&va));
                if known {
                    self.counters.faults_resolved.fetch_add(1, Ordering::Relaxed);
                    return true;
                }
                let span = self.resolve(entry.pd, va, write);
                let resolved = span.is_some();
                resident = span.map(|span| (entry.pd, write, span));
                resolved
            });
            let _ = answers.push(answer(entry, me, action(entry, resolved)));
        }
        let mut posted = false;
        for a in &answers {
            match a {
                Answer::Local(request) => {
                    self.node.post(request);
                    posted = true;
                }
                Answer::Remote { pd, rapf } => {
                    let refused = self.node.with_engine(|e| e.rapf(*pd, rapf).is_err()).unwrap_or(true);
                    if refused {
                        self.counters.rapf_refused.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }
        if posted {
            self.node.drain();
        }
    }

    /// Wakes the holders of the PDs in `pending` that wait on their completion queue; a kernel
    /// PD's completions are the kernel's own (the sockets').
    fn wake_cq_waiters(&self, pending: u16) {
        if pending == 0 {
            return;
        }
        for (pd, f) in self.node.kernel_completions() {
            if pending & (1 << pd.raw()) != 0 {
                f();
            }
        }
        for slot in self.node.cq_holders(pending) {
            self.counters.cq_wakeups.fetch_add(1, Ordering::Relaxed);
            self.node.wake_cq_waiter(slot);
        }
    }

    /// PL line 4 (SPI 155 on the board): every bank's recorded fault and the global fault (looked
    /// at in the first round only), decoded and cleared. With the terminate policy the engine has already NACKed the access
    /// and pushed a fault entry, which the engine's interrupt answers. A stalled access (stall
    /// policy) is resolved here: the page gets its frame in the bank's PD holder, then RESUME
    /// retries the bank's stalled accesses (or terminates them when the address cannot have a
    /// page). The SMMU lock is let go while the process table is used (the table comes first in
    /// lock order).
    ///
    /// A stalled access whose fault got only MULTI has no address and no interrupt of its own: it
    /// is resumed with retry, so that it faults again and is recorded in full (`docs/hw/smmu.md`,
    /// "MULTI in stall mode"). Rounds go on until no bank records a fault or holds such an
    /// access, [`STALL_ROUNDS`] at most. The look that ends a round's faults ([`Smmu::scan`])
    /// also says which banks hold such an access; it serves unless the round resumed stalled
    /// faults since, which may stall again (then the banks are looked at again).
    pub fn on_smmu_irq(&self) {
        let start = Cost::start(self.node);
        let mut resumed = false;
        for round in 0..STALL_ROUNDS {
            let mut stalled = heapless::Vec::<ContextFault, FAULTS_PER_ROUND>::new();
            let mut quiet = None;
            self.node.with_smmu(|s| {
                for _ in 0..stalled.capacity() {
                    let fault = match s.scan() {
                        Scan::Fault(fault) => fault,
                        Scan::Quiet { unrecorded } => {
                            quiet = Some(unrecorded);
                            break;
                        }
                    };
                    s.clear_fault(&fault);
                    self.counters.context_faults.fetch_add(1, Ordering::Relaxed);
                    self.node.report_context_fault(&fault);
                    if fault.stalled {
                        let _ = stalled.push(fault);
                    }
                }
                // Once per interrupt: a global fault recorded later keeps the line up.
                if round > 0 {
                    return;
                }
                if let Some(fault) = s.global_fault() {
                    s.clear_global_fault(&fault);
                    self.counters.global_faults.fetch_add(1, Ordering::Relaxed);
                    self.node.report_global_fault(&fault);
                }
            });
            for fault in &stalled {
                // Decided before the SMMU lock is taken: the answer uses the process table.
                let answer = self.stall_answer(fault);
                self.node.with_smmu(|s| s.resume(fault.bank, answer));
                resumed = true;
            }
            let unrecorded = self
                .node
                .with_smmu(|s| {
                    let banks: heapless::Vec<ContextBank, CONTEXT_BANKS> = match quiet.filter(|_| stalled.is_empty()) {
                        Some(unrecorded) => Scan::unrecorded(unrecorded).collect(),
                        None => s.unrecorded_stalls().collect(),
                    };
                    for &bank in &banks {
                        s.resume(bank, Resume::Retry);
                    }
                    banks.len()
                })
                .unwrap_or(0);
            self.counters.unrecorded_stalls.fetch_add(unrecorded as u64, Ordering::Relaxed);
            if stalled.is_empty() && unrecorded == 0 {
                break;
            }
        }
        if resumed {
            let c = self.counters;
            start.add_to(self.node, &c.stall_irqs, &c.stall_irq_instructions, &c.stall_irq_forwarding);
        }
    }

    /// RESUME for a stalled access: retry once its page has a frame, terminate when its address
    /// cannot have one; retry at once when the fault has no address (MULTI alone).
    fn stall_answer(&self, fault: &ContextFault) -> Resume {
        if !fault.has_address() {
            return Resume::Retry;
        }
        let Some(pd) = Pd::new(fault.bank.index() as u16) else { return Resume::Terminate };
        if self.resolve(pd, fault.address, fault.access == Access::Write).is_none() {
            return Resume::Terminate;
        }
        self.counters.stalls_resumed.fetch_add(1, Ordering::Relaxed);
        Resume::Retry
    }

    /// Gives the page at `va` of `pd`'s holder its frame (and touch-ahead's), for a fault entry
    /// or a stalled access, counting what it cost: the addresses now resident, `None` when it
    /// cannot have one.
    fn resolve(&self, pd: Pd, va: u64, write: bool) -> Option<Range<u64>> {
        let start = self.node.instructions();
        let resolved = self.node.resolve_page(pd, va, write);
        let spent = self.node.instructions().wrapping_sub(start);
        self.counters.resolve_instructions.fetch_add(u64::from(spent), Ordering::Relaxed);
        if resolved.is_some() {
            self.counters.faults_resolved.fetch_add(1, Ordering::Relaxed);
        }
        resolved
    }
}

/// What a fault interrupt's handler costs this core (`cargo xtask bench pagefault`): its
/// instructions (PMU counter 0, when it counts) and, of those, its forwarded accesses'.
#[derive(Clone, Copy)]
struct Cost {
    instructions: u32,
    forwarding: u64,
}

impl Cost {
    fn start(node: &impl Node) -> Self {
        Self { instructions: node.instructions(), forwarding: node.forwarding_instructions() }
    }

    /// Counts one interrupt, its instructions since [`start`](Self::start) and its forwarding.
    fn add_to(self, node: &impl Node, irqs: &AtomicU64, instructions: &AtomicU64, forwarding: &AtomicU64) {
        let spent = node.instructions().wrapping_sub(self.instructions);
        let forwarded = node.forwarding_instructions().wrapping_sub(self.forwarding);
        irqs.fetch_add(1, Ordering::Relaxed);
        instructions.fetch_add(u64::from(spent), Ordering::Relaxed);
        forwarding.fetch_add(forwarded, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests;
