//! The kernel's RDMA front end on the hardware (`docs/hw/pldma.md`, "What the kernel and the user
//! library do"; `docs/hw/smmu.md`): it owns the PLDMA's kernel pages, programs one SMMU context
//! bank per protection domain held on this node, registers each holder's queue set with the R5,
//! answers the engine's fault entries and wakes the processes waiting on their completion queue.
//!
//! The decisions are host-tested elsewhere (`process::pds`, `process::state::Rdma`,
//! `rdma::answer`); this module applies them to the devices. Lock order: the process table, then
//! this module's engine lock or the SMMU's (never both at once), then the IPC ring's; nothing
//! here is called with the engine lock held except the PD page writes of the fault answers.

use crate::arch::phys_to_virt;
use crate::devices::Pldma;
use crate::hooks::{Full, Hooks};
use crate::irq::{self, IntId};
use crate::mm::kernel_frames::KernelFrames;
use crate::mm::smmu::with_smmu;
use crate::mm::user_space::{AddressSpace, FrameSource};
use crate::process::lifecycle::TABLE;
use crate::process::scheduler;
use crate::process::table::Wait;
use crate::rdma::answer::{Answer, Recent, action, answer, page_access};
use crate::rpu::{self, RpuError};
use crate::sync::IrqMutex;
use crate::{arch, timer};
use board::layout::PLDMA_QUEUES;
use board::pl::irq_line;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use hal::pldma::Pd;
use hal::pldma::fault::FaultEntry;
use hal::pldma::regs::IRQ;
use hal::smmu500::{Access, ContextBank, ContextFault, FaultPolicy, Regime, Resume, SmmuError, StreamId};
use proto::ipc::op;
use proto::rdma::ipc::{RdmaRequest, RdmaStatus};
use proto::rdma::queue::QUEUE_SET_BYTES;
use tock_registers::LocalRegisterCopy;

use crate::process::hooks::{PdResources, Setup, Teardown};

/// What this subsystem sets up for a process that holds its PD, for the process table
/// (`process::hooks::set_pd_resources`, wired by `kernel`).
pub fn pd_resources() -> PdResources<KernelFrames> {
    PdResources {
        available,
        queue_set_pa,
        publish_tables: publish_tables::<KernelFrames>,
        attach: |setup| match attach(setup) {
            Ok(()) => true,
            Err(e) => {
                defmt::warn!("PD {=u16}: no RDMA: {}", setup.pd.raw(), defmt::Debug2Format(&e));
                false
            }
        },
        detach,
        invalidate,
    }
}

/// The kernel's own PDs whose completions a kernel subsystem takes (the sockets'), and what it
/// runs when the engine says they have some.
static KERNEL_COMPLETIONS: Hooks<(Pd, fn()), 2> = Hooks::new();

/// Registers `f` to run (in the engine's interrupt) when `pd`, a PD no process holds, has
/// completions.
pub fn on_kernel_completions(pd: Pd, f: fn()) -> Result<(), Full> {
    KERNEL_COMPLETIONS.register((pd, f))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RdmaError {
    /// The node has no RDMA: no R5 firmware, or the SMMU did not come up.
    Unavailable,
    Smmu(SmmuError),
    Rpu(RpuError),
    /// The R5 refused the registration.
    Refused(Option<RdmaStatus>),
}

static ENGINE: IrqMutex<Option<Pldma>> = IrqMutex::new(None);
static READY: AtomicBool = AtomicBool::new(false);
/// Banks attached from now on stall faulting accesses (SCTLR.CFCFG = 1) instead of terminating
/// them: the kernel maps the page and RESUMEs with retry, and the transfer never retransmits.
static STALL: AtomicBool = AtomicBool::new(false);

/// How banks attached from now on handle a fault (`docs/hw/pldma.md`, "Fault handling"):
/// terminate (the default; a fault entry, a NACK and a retransmission) or stall (boot argument
/// `smmu-stall`). Returns the mode it replaces.
pub fn set_stall_mode(stall: bool) -> bool {
    STALL.swap(stall, Ordering::Relaxed)
}

/// Whether banks attached from now on stall (see [`set_stall_mode`]).
pub fn stall_mode() -> bool {
    STALL.load(Ordering::Relaxed)
}

crate::counter_set! {
    /// What the front end has seen so far (for tests and benches: [`counters`]).
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

static COUNTERS: LiveCounters = LiveCounters::new();

pub fn counters() -> Counters {
    COUNTERS.snapshot()
}

/// Engine counter `c` (`docs/hw/pldma.md`, "Counters"; one forwarded read on QEMU), or `None`
/// without an engine.
pub fn engine_counter(c: hal::pldma::regs::Counter) -> Option<u64> {
    ENGINE.lock().as_ref().map(|e| e.admin.counter(c))
}

/// What the engine refused or lost of PD `pd` (its PD page's counters): (events lost, RAPFs
/// refused); `None` without an engine.
pub fn pd_counters(pd: Pd) -> Option<(u32, u32)> {
    ENGINE.lock().as_ref().map(|e| {
        let page = &e.pd_pages[pd.index()];
        (page.events_lost(), page.rapf_refused())
    })
}

/// Keeps the engine's kernel pages (boot core, once). Nothing is programmed until [`start`].
pub fn init(pldma: Pldma) {
    *ENGINE.lock() = Some(pldma);
}

/// Brings RDMA up once the R5 runs: resets the SMMU (every stream faults until a bank is
/// attached), enables the engine's interrupts, and takes PL lines 3 (PLDMA) and 4 (SMMU context
/// fault, SPI 155 on the board). Without the R5 the node has no RDMA and processes run without
/// queues.
pub fn start() -> Result<(), RdmaError> {
    if !rpu::is_started() {
        return Err(RdmaError::Unavailable);
    }
    with_smmu(|s| s.reset()).ok_or(RdmaError::Unavailable)?.map_err(RdmaError::Smmu)?;
    {
        let mut engine = ENGINE.lock();
        let engine = engine.as_mut().ok_or(RdmaError::Unavailable)?;
        for pd in (0..hal::pldma::PDS as u16).filter_map(Pd::new) {
            engine.admin.set_pd_enabled(pd, false);
        }
        let mut causes = LocalRegisterCopy::<u32, IRQ::Register>::new(0);
        causes.modify(IRQ::FAULT::SET + IRQ::FAULT_LOST::SET + IRQ::CQ::SET + IRQ::EVENTS_LOST::SET);
        causes.modify(IRQ::DESC_REFUSED::SET);
        engine.admin.clear_sticky(causes);
        engine.admin.set_irq_enable(causes);
    }
    let core = 1 << arch::cpu::core_id();
    irq::register_pl(irq_line::PLDMA, on_engine_irq, core).map_err(|_| RdmaError::Unavailable)?;
    irq::register_pl(irq_line::SMMU_CONTEXT, on_smmu_irq, core).map_err(|_| RdmaError::Unavailable)?;
    READY.store(true, Ordering::Release);
    Ok(())
}

/// Whether processes get RDMA resources on this node.
pub fn available() -> bool {
    READY.load(Ordering::Acquire)
}

/// The queue-set slot of PD `pd`: one fixed 8 KiB slot per PD in `PLDMA_QUEUES`, since at most
/// one process per node holds a PD.
pub fn queue_set_pa(pd: Pd) -> u64 {
    PLDMA_QUEUES + u64::from(pd.raw()) * QUEUE_SET_BYTES
}

/// Cleans what changed in `space`'s tables since they were last published to the point of
/// coherency (every page of them the first time): the SMMU's walker does not snoop the A53s'
/// caches (`docs/hw/smmu.md`, "TLB maintenance").
pub fn publish_tables<F: FrameSource>(space: &mut AddressSpace<F>) {
    space.publish(arch::mmu::clean_to_poc);
}

fn bank_of(pd: Pd) -> Result<(ContextBank, StreamId), RdmaError> {
    let bank = ContextBank::of_domain(pd.raw() as u8).map_err(RdmaError::Smmu)?;
    let stream = StreamId::pldma(pd.raw() as u8).map_err(RdmaError::Smmu)?;
    Ok((bank, stream))
}

/// The registration of "Registering a PD's queues": context bank `pd` on the process's tables,
/// a zeroed queue set, the PD enabled on the engine, the queue set registered with the R5. On
/// any failure what was done is undone.
pub fn attach(setup: &Setup) -> Result<(), RdmaError> {
    if !available() {
        return Err(RdmaError::Unavailable);
    }
    let (bank, stream) = bank_of(setup.pd)?;
    let regime = Regime { ttbr0: setup.ttbr0, tcr: boot::a53::BOOT_TCR_EL1, mair: boot::a53::MAIR_EL1 };
    let policy = if STALL.load(Ordering::Relaxed) { FaultPolicy::STALL } else { FaultPolicy::TERMINATE };
    with_smmu(|s| s.attach(bank, stream, &regime, policy)).ok_or(RdmaError::Unavailable)?.map_err(RdmaError::Smmu)?;
    with_engine(|e| e.admin.set_pd_enabled(setup.pd, true));
    register_queues(setup.pd, setup.queue_pa).inspect_err(|_| release_engine_and_bank(setup.pd, bank))
}

/// Zeroes PD `pd`'s queue set at `queue_pa` and registers it with the R5 (the last step of
/// [`attach`]; alone, after the R5 forgot its registrations: `rpu::reconnect`).
pub fn register_queues(pd: Pd, queue_pa: u64) -> Result<(), RdmaError> {
    // SAFETY: the PD's slot of the PLDMA area, mapped uncached in the kernel's linear map; no
    // process uses it yet (the holder has not run, or it is the kernel's own) and the R5 has no
    // registration for it.
    unsafe { core::ptr::write_bytes(phys_to_virt(queue_pa) as *mut u8, 0, QUEUE_SET_BYTES as usize) };
    let request = RdmaRequest::Register { pd, queue_set: queue_pa }.encode(0);
    let status = match rpu::call(request.op, request.args) {
        Ok(reply) if reply.op == op::REPLY | op::RDMA_REGISTER => RdmaStatus::from_raw(reply.args[0]),
        Ok(_) => None,
        Err(e) => return Err(RdmaError::Rpu(e)),
    };
    if status != Some(RdmaStatus::Ok) {
        return Err(RdmaError::Refused(status));
    }
    Ok(())
}

/// The tear-down of "Registering a PD's queues": the R5 forgets the PD, the engine refuses it
/// and finishes what it held, and only then the bank goes (its TLB emptied), so the process's
/// memory can be freed.
pub fn detach(t: &Teardown) {
    let Ok((bank, _)) = bank_of(t.pd) else { return };
    let request = RdmaRequest::Unregister { pd: t.pd }.encode(0);
    match rpu::call(request.op, request.args) {
        Ok(reply) if RdmaStatus::from_raw(reply.args[0]) == Some(RdmaStatus::Ok) => {}
        Ok(reply) => defmt::warn!("rdma: unregister PD {=u16}: status {=u64}", t.pd.raw(), reply.args[0]),
        Err(e) => defmt::warn!("rdma: unregister PD {=u16}: {}", t.pd.raw(), defmt::Debug2Format(&e)),
    }
    release_engine_and_bank(t.pd, bank);
}

/// Clears the PD's `pd_enable` bit, waits (bounded) for `pd_busy` to clear, detaches the bank.
fn release_engine_and_bank(pd: Pd, bank: ContextBank) {
    with_engine(|e| e.admin.set_pd_enabled(pd, false));
    let idle = || !with_engine(|e| e.admin.pd_busy(pd)).unwrap_or(false);
    if timer::wait_for(core::time::Duration::from_secs(1), idle, core::hint::spin_loop).is_err() {
        defmt::warn!("rdma: PD {=u16} still busy after a second; detaching its bank anyway", pd.raw());
    }
    if let Some(Err(e)) = with_smmu(|s| s.detach(bank)) {
        defmt::warn!("rdma: detach bank {=u16}: {}", pd.raw(), defmt::Debug2Format(&e));
    }
}

/// Invalidates bank `pd`'s translations of `pages` pages from `va` after the kernel changed or
/// removed their descriptors (and did its own TLBI). A PD without a bank has nothing cached.
pub fn invalidate(pd: Pd, va: u64, pages: usize) {
    let Ok((bank, _)) = bank_of(pd) else { return };
    let result = with_smmu(|s| {
        if s.asid(bank).is_none() {
            return Ok(());
        }
        if pages > 16 { s.invalidate_asid(bank) } else { s.invalidate_pages(bank, va, pages) }
    });
    if let Some(Err(e)) = result {
        defmt::error!("rdma: SMMU invalidation of bank {=u16}: {}", pd.raw(), defmt::Debug2Format(&e));
    }
}

/// Rings PD `pd`'s doorbell with its work queue's new `head`, for a queue set the kernel itself
/// fills (`socket_node`).
pub fn ring_doorbell(pd: Pd, head: u32) {
    with_engine(|e| e.pd_pages[pd.index()].ring(head));
}

fn with_engine<R>(f: impl FnOnce(&mut Pldma) -> R) -> Option<R> {
    ENGINE.lock().as_mut().map(f)
}

/// At most this many fault entries per interrupt: the FIFO holds 512, and a flood must not keep
/// the core in the handler (the line stays up and it comes back).
const FAULTS_PER_IRQ: usize = 64;

/// PL line 3: one read of `irq_status` says what is pending; then the fault entries are
/// taken (only if the FIFO holds some), the sticky causes cleared and counted, and the
/// processes whose CQ the R5 marked woken. A completion alone costs two accesses: the read and
/// the write that clears its `cq_pending` bits (`docs/hw/pldma.md`, "How a completion wakes a
/// process"). Each fault entry is answered after its page got a frame, if it can
/// (`process::paging`, outside the engine lock: the process table comes first in lock order).
fn on_engine_irq(_: IntId) {
    let start = Cost::start();
    let me = crate::cluster::node_id();
    let mut entries = heapless::Vec::<FaultEntry, FAULTS_PER_IRQ>::new();
    let pending = {
        let mut engine = ENGINE.lock();
        let Some(engine) = engine.as_mut() else { return };
        let status = engine.admin.irq_status();
        if status.is_set(IRQ::FAULT) {
            while !entries.is_full() {
                match engine.fault.pop() {
                    Ok(Some(entry)) => {
                        let _ = entries.push(entry);
                    }
                    Ok(None) => break,
                    Err(_) => {
                        COUNTERS.bad_fault_entries.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }
        let sticky = status.get() & (IRQ::FAULT_LOST::SET + IRQ::EVENTS_LOST::SET + IRQ::DESC_REFUSED::SET).value;
        if sticky != 0 {
            COUNTERS.sticky.fetch_add(1, Ordering::Relaxed);
            engine.admin.clear_sticky(LocalRegisterCopy::new(sticky));
        }
        let pending = status.read(IRQ::CQ_PENDING) as u16;
        if pending != 0 {
            engine.admin.clear_cq_pending(pending);
        }
        pending
    };
    if !entries.is_empty() {
        answer_faults(&entries, me);
        start.add_to(&COUNTERS.fault_irqs, &COUNTERS.fault_irq_instructions, &COUNTERS.fault_irq_forwarding);
    }
    wake_cq_waiters(pending);
}

/// Faults answered lately (`rdma::answer::Recent`), across interrupts.
static RECENT: IrqMutex<Recent> = IrqMutex::new(Recent::new());

/// Gives each entry's page a frame where it can, then answers: Retry or Abort, to this node's
/// R5 over the IPC ring or to the owner's through the PD page.
fn answer_faults(entries: &[FaultEntry], me: u16) {
    let mut answers = heapless::Vec::<Answer, FAULTS_PER_IRQ>::new();
    for entry in entries {
        COUNTERS.fault_entries.fetch_add(1, Ordering::Relaxed);
        if RECENT.lock().seen(entry) {
            COUNTERS.duplicate_fault_entries.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        let resolved = page_access(entry).is_some_and(|write| resolve(entry.pd, entry.va(), write));
        let _ = answers.push(answer(entry, me, action(entry, resolved)));
    }
    let mut posted = false;
    for a in &answers {
        match a {
            Answer::Local(request) => {
                let m = request.encode(0);
                let _ = rpu::post(m.op, m.args);
                posted = true;
            }
            Answer::Remote { pd, rapf } => {
                let refused = with_engine(|e| e.pd_pages[pd.index()].rapf(rapf).is_err()).unwrap_or(true);
                if refused {
                    COUNTERS.rapf_refused.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }
    if posted {
        rpu::drain();
    }
}

/// Wakes the holders of the PDs in `pending` that wait on their completion queue; the socket
/// PD's completions are the kernel's own (`socket_node`).
fn wake_cq_waiters(pending: u16) {
    if pending == 0 {
        return;
    }
    for (pd, f) in KERNEL_COMPLETIONS.iter() {
        if pending & (1 << pd.raw()) != 0 {
            f();
        }
    }
    let slots: heapless::Vec<usize, { hal::pldma::PDS }> =
        TABLE.lock().cq_holders(pending).map(|(_, slot)| slot).collect();
    for slot in slots {
        COUNTERS.cq_wakeups.fetch_add(1, Ordering::Relaxed);
        scheduler::wake_waiter(slot, |w| w == Wait::Cq);
    }
}

/// PL line 4 (SPI 155 on the board): every bank's recorded fault and the global fault, decoded
/// and cleared. With the terminate policy the engine has already NACKed the access and pushed a
/// fault entry, which the engine's interrupt answers. A stalled access (stall policy) is
/// resolved here: the page gets its frame in the bank's PD holder, then RESUME retries the
/// bank's stalled accesses (or terminates them when the address cannot have a page). The SMMU
/// lock is let go while the process table is used (the table comes first in lock order).
///
/// A stalled access whose fault got only MULTI has no address and no interrupt of its own: it
/// is resumed with retry, so that it faults again and is recorded in full (`docs/hw/smmu.md`,
/// "MULTI in stall mode"). Rounds go on until no bank records a fault or holds such an access.
fn on_smmu_irq(_: IntId) {
    let start = Cost::start();
    let mut resumed = false;
    for _ in 0..STALL_ROUNDS {
        let mut stalled = heapless::Vec::<ContextFault, 16>::new();
        with_smmu(|s| {
            for _ in 0..stalled.capacity() {
                let Some(fault) = s.next_fault() else { break };
                s.clear_fault(&fault);
                COUNTERS.context_faults.fetch_add(1, Ordering::Relaxed);
                defmt::debug!("smmu: {}", defmt::Debug2Format(&fault));
                if fault.stalled {
                    let _ = stalled.push(fault);
                }
            }
            if let Some(fault) = s.global_fault() {
                s.clear_global_fault(&fault);
                COUNTERS.global_faults.fetch_add(1, Ordering::Relaxed);
                defmt::warn!("smmu: global fault {}", defmt::Debug2Format(&fault));
            }
        });
        for fault in &stalled {
            // Decided before the SMMU lock is taken: the answer uses the process table.
            let answer = stall_answer(fault);
            with_smmu(|s| s.resume(fault.bank, answer));
            resumed = true;
        }
        let unrecorded = with_smmu(|s| {
            let banks: heapless::Vec<ContextBank, { hal::smmu500::regs::CONTEXT_BANKS }> =
                s.unrecorded_stalls().collect();
            for &bank in &banks {
                s.resume(bank, Resume::Retry);
            }
            banks.len()
        })
        .unwrap_or(0);
        COUNTERS.unrecorded_stalls.fetch_add(unrecorded as u64, Ordering::Relaxed);
        if stalled.is_empty() && unrecorded == 0 {
            break;
        }
    }
    if resumed {
        start.add_to(&COUNTERS.stall_irqs, &COUNTERS.stall_irq_instructions, &COUNTERS.stall_irq_forwarding);
    }
}

/// Gives the page at `va` of `pd`'s holder its frame (and touch-ahead's), for a fault entry or
/// a stalled access; false when it cannot have one.
fn resolve(pd: Pd, va: u64, write: bool) -> bool {
    let start = arch::pmu::instructions();
    let resolved = crate::process::paging::resolve_rdma_fault(pd, va, write).is_ok();
    let spent = arch::pmu::instructions().wrapping_sub(start);
    COUNTERS.resolve_instructions.fetch_add(u64::from(spent), Ordering::Relaxed);
    if resolved {
        COUNTERS.faults_resolved.fetch_add(1, Ordering::Relaxed);
    }
    resolved
}

/// What a fault interrupt's handler costs this core (`cargo xtask bench pagefault`): its
/// instructions (PMU counter 0, when it counts) and, of those, its forwarded accesses'.
#[derive(Clone, Copy)]
struct Cost {
    instructions: u32,
    forwarding: u64,
}

impl Cost {
    fn start() -> Self {
        Self {
            instructions: arch::pmu::instructions(),
            forwarding: crate::exception::forward::forwarding_instructions(),
        }
    }

    /// Counts one interrupt, its instructions since [`start`](Self::start) and its forwarding.
    fn add_to(self, irqs: &AtomicU64, instructions: &AtomicU64, forwarding: &AtomicU64) {
        let spent = arch::pmu::instructions().wrapping_sub(self.instructions);
        let forwarded = crate::exception::forward::forwarding_instructions().wrapping_sub(self.forwarding);
        irqs.fetch_add(1, Ordering::Relaxed);
        instructions.fetch_add(u64::from(spent), Ordering::Relaxed);
        forwarding.fetch_add(forwarded, Ordering::Relaxed);
    }
}

/// Handler rounds per interrupt at most: faults that keep coming are left to the next one.
const STALL_ROUNDS: usize = 8;

/// RESUME for a stalled access: retry once its page has a frame, terminate when its address
/// cannot have one; retry at once when the fault has no address (MULTI alone).
fn stall_answer(fault: &ContextFault) -> Resume {
    if !fault.has_address() {
        return Resume::Retry;
    }
    let Some(pd) = Pd::new(fault.bank.index() as u16) else { return Resume::Terminate };
    if !resolve(pd, fault.address, fault.access == Access::Write) {
        return Resume::Terminate;
    }
    COUNTERS.stalls_resumed.fetch_add(1, Ordering::Relaxed);
    Resume::Retry
}

/// The CQ of `pd`'s holder: arms it for one interrupt and says whether it holds an entry
/// already (`docs/hw/pldma.md`, "Using the queues", step 4, done by the kernel for `RDMA_WAIT`).
pub fn arm_and_peek(pd: Pd) -> bool {
    // SAFETY: the PD's queue-set slot, mapped uncached for good; the kernel reads the CQ's
    // indices and writes `arm` only, which the contract lets the process (whose call this is)
    // write; the R5 reads them with the same ring discipline.
    let set = unsafe { &*(phys_to_virt(queue_set_pa(pd)) as *const proto::rdma::queue::QueueSet) };
    if !set.cq.is_empty() {
        return true;
    }
    set.arm_once();
    !set.cq.is_empty()
}
