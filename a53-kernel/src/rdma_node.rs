//! The kernel's RDMA front end on the hardware (`docs/hw/pldma.md`, "What the kernel and the user
//! library do"; `docs/hw/smmu.md`): it owns the PLDMA's kernel pages, programs one SMMU context
//! bank per protection domain held on this node, registers each holder's queue set with the R5,
//! and takes the engine's and the SMMU's interrupts.
//!
//! The decisions are host-tested elsewhere: the interrupts' logic (which fault entries are
//! taken and how each is answered, what is cleared and counted, whom a completion wakes, how a
//! stalled access is resumed) in `rdma::front`, over the devices and the kernel as traits that
//! this module implements (`Hardware`); the answers in `rdma::answer`; the PD holders in
//! `process::pds` and `process::state::Rdma`. This module applies them to the devices. Lock
//! order: the process table, then this module's engine lock or the SMMU's (never both at once),
//! then the IPC ring's; nothing here is called with the engine lock held except the PD page
//! writes of the fault answers.

use crate::arch::phys_to_virt;
use crate::devices::Pldma;
use crate::hooks::{AlreadySet, Full, Hook, Hooks};
use crate::irq::{self, IntId};
use crate::mm::kernel_frames::KernelFrames;
use crate::mm::smmu::with_smmu;
use crate::mm::user_space::{AddressSpace, FrameSource};
use crate::process::lifecycle::TABLE;
use crate::process::scheduler;
use crate::process::table::Wait;
use crate::rdma::answer::Recent;
use crate::rdma::front::{self, Front, LiveCounters};
use crate::rpu::{self, RpuError};
use crate::sync::IrqMutex;
use crate::{arch, timer};
use board::layout::PLDMA_QUEUES;
use board::pl::irq_line;
use core::ops::Range;
use core::sync::atomic::{AtomicBool, Ordering};
use hal::pldma::Pd;
use hal::pldma::driver::PdPageError;
use hal::pldma::fault::{FaultEntry, FaultEntryError};
use hal::pldma::rapf::RapfRequest;
use hal::pldma::regs::IRQ;
use hal::smmu500::{ContextBank, ContextFault, FaultPolicy, GlobalFault, Regime, Smmu500, SmmuError, StreamId};
use proto::ipc::op;
use proto::rdma::ipc::{RdmaRequest, RdmaStatus};
use proto::rdma::queue::QUEUE_SET_BYTES;
use tock_registers::LocalRegisterCopy;

use crate::process::hooks::{ExitedProcess, PdResources, Setup, Teardown};
use crate::rdma::active::{ActiveHw, ActiveTable, LogNotice};
pub use crate::rdma::front::Counters;
use hal::pldma::active::LogCtrl;

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

/// What the interrupts count (`rdma::front::Counters`), for the node's run.
static COUNTERS: LiveCounters = LiveCounters::new();

/// The front end's counters so far.
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

/// Active Access's IUIDs and marked pages (`rdma::active`); a leaf lock taken inside the
/// engine's.
static ACTIVE: IrqMutex<ActiveTable> = IrqMutex::new(ActiveTable::new());

/// The engine's Active Access pages, as `rdma::active` writes them.
pub struct EngineActive<'a>(&'a mut Pldma);

impl ActiveHw for EngineActive<'_> {
    fn open_log(&mut self, log: usize, ctrl: LogCtrl, base: u64, header: u64) {
        self.0.active.close_log(log);
        // SAFETY: the log's header page, in the PLDMA area (`board::layout::ACTIVE_LOGS`), mapped
        // uncached in the kernel's linear map; the engine writes it only while the log is valid,
        // and it is not (closed above). Its owner may map it, but gets it only after this.
        unsafe { core::ptr::write_bytes(phys_to_virt(header) as *mut u8, 0, 0x1000) };
        core::sync::atomic::fence(Ordering::SeqCst);
        self.0.active.open_log(log, ctrl, base, header);
    }

    fn close_log(&mut self, log: usize) {
        self.0.active.close_log(log);
    }

    fn set_ctrl(&mut self, log: usize, ctrl: LogCtrl) {
        self.0.active.set_ctrl(log, ctrl);
    }

    fn write_apt(&mut self, index: usize, tag: u64, attr: u32) {
        self.0.active.write_apt(index, tag, attr);
    }
}

/// Runs `f` on the node's Active Access table and the engine's pages, under the engine's lock
/// and then the table's; `None` on a node without RDMA.
pub fn with_active<R>(f: impl FnOnce(&mut ActiveTable, &mut EngineActive<'_>) -> R) -> Option<R> {
    if !available() {
        return None;
    }
    let mut guard = ENGINE.lock();
    let engine = guard.as_mut()?;
    let result = {
        let mut table = ACTIVE.lock();
        f(&mut table, &mut EngineActive(engine))
    };
    drop(guard);
    drain_kernel_log();
    Some(result)
}

/// Tells a log's owner that its log took entries: a notification from the kernel on the
/// opcode it gave `ACTIVE_NOTIFY`, payload the IUID, in whatever mode it receives that opcode
/// (`docs/hw/active-access.md`, "Notification"). A full queue already holds a notice the owner
/// has not read, and the log keeps the entries: nothing is lost by refusing another. An owner
/// that no longer holds the opcode gets nothing (nor does whoever holds it now).
fn tell_log_owner(n: LogNotice) {
    let Some(deliver) = LOG_NOTICE.get() else { return };
    let Some(domain) = TABLE.lock().slot_domain(n.slot) else { return };
    let Ok(notice) = proto::gsas::Notification::new(n.opcode, u64::from(n.iuid)) else { return };
    if deliver(domain, notice) {
        LOG_NOTICES.fetch_add(1, Ordering::Relaxed);
    }
}

/// How a log's notice reaches its owner: delivers a notification from this node's kernel to
/// process `domain` only, true if it was taken (the mailbox's subsystem, wired at boot).
static LOG_NOTICE: Hook<fn(u16, proto::gsas::Notification) -> bool> = Hook::new();

/// Sets how Active Access notices are delivered (`kernel::wire`).
pub fn on_log_notice(deliver: fn(u16, proto::gsas::Notification) -> bool) -> Result<(), AlreadySet> {
    LOG_NOTICE.set(deliver)
}

/// Notices delivered to log owners since boot.
static LOG_NOTICES: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// Notices delivered to log owners since boot ([`tell_log_owner`]).
pub fn log_notices() -> u64 {
    LOG_NOTICES.load(Ordering::Relaxed)
}

/// Entries the kernel has taken from its fault log (E = 0 pages) since boot.
static KERNEL_LOG_ENTRIES: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// Takes every entry of the kernel's fault log (`docs/hw/active-access.md`, "The kernel fault
/// log"): each is counted ([`kernel_log_entries`]) and logged, and its room given back. Returns
/// how many. Called by the Active Access calls and the engine's interrupt; a log the engine
/// wrote wrongly is emptied whole.
pub fn drain_kernel_log() -> u32 {
    use hal::pldma::active::{KERNEL_LOG, Reader, header};
    if !available() {
        return 0;
    }
    let (ring, hdr) = crate::rdma::active::log_pa(KERNEL_LOG);
    let hdr = phys_to_virt(hdr);
    // SAFETY: the kernel log's header and ring, in the PLDMA area (uncached in the linear map),
    // the kernel's alone besides the engine; `produced` is read before the entries it covers.
    let (produced, consumed) = unsafe {
        (
            core::ptr::read_volatile((hdr + header::PRODUCED as usize) as *const u32),
            core::ptr::read_volatile((hdr + header::CONSUMED as usize) as *const u32),
        )
    };
    if produced == consumed {
        return 0;
    }
    core::sync::atomic::fence(Ordering::Acquire);
    // SAFETY: as above; the engine writes only past `produced`.
    let ring = unsafe {
        core::slice::from_raw_parts(phys_to_virt(ring) as *const u8, board::layout::ACTIVE_LOG_RING as usize)
    };
    let mut reader = Reader::new(ring, produced, consumed);
    let mut n = 0;
    while let Ok(Some(e)) = reader.next_entry() {
        n += 1;
        defmt::info!(
            "active: kernel fault log: {=u8} from node {=u16} at {=u64:#x} ({=u16} B), PD {=u16} IUID {=u8}",
            e.header.kind as u8,
            e.header.node,
            e.header.va,
            e.header.len,
            e.header.pd,
            e.header.iuid
        );
    }
    // Everything up to `produced` is given back (a corrupt ring, not the engine's doing, whole).
    // SAFETY: the header's `consumed`, the kernel's to write.
    unsafe { core::ptr::write_volatile((hdr + header::CONSUMED as usize) as *mut u32, produced) };
    KERNEL_LOG_ENTRIES.fetch_add(u64::from(n), Ordering::Relaxed);
    n
}

/// Entries taken from the kernel's fault log since boot.
pub fn kernel_log_entries() -> u64 {
    KERNEL_LOG_ENTRIES.load(Ordering::Relaxed)
}

/// A process ended (`process::hooks::on_exit`): its IUIDs' pages are unmarked and their logs
/// invalidated, before its memory and PD can go to another process.
pub fn active_exited(process: ExitedProcess) {
    with_active(|t, hw| t.release(hw, process.slot));
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
        causes.modify(IRQ::DESC_REFUSED::SET + IRQ::ACTIVE_LOG::SET);
        engine.admin.clear_sticky(causes);
        engine.admin.set_irq_enable(causes);
        // Active Access: no page marked, no log but the kernel's fault log (E = 0).
        for index in 0..hal::pldma::active::APT_ENTRIES {
            engine.active.write_apt(index, 0, 0);
        }
        for log in 0..hal::pldma::active::IUIDS {
            engine.active.close_log(log);
        }
        ActiveTable::open_kernel_log(&mut EngineActive(engine));
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

/// PL line 3: the engine's interrupt (`rdma::front`, `Front::on_engine_irq`).
fn on_engine_irq(_: IntId) {
    Front { node: &Hardware, counters: &COUNTERS }.on_engine_irq();
}

/// PL line 4 (SPI 155 on the board): the SMMU's context-fault interrupt (`rdma::front`,
/// `Front::on_smmu_irq`).
fn on_smmu_irq(_: IntId) {
    Front { node: &Hardware, counters: &COUNTERS }.on_smmu_irq();
}

/// Faults answered lately (`rdma::answer::Recent`), across interrupts.
static RECENT: IrqMutex<Recent> = IrqMutex::new(Recent::new());

/// This node's devices and kernel, as the interrupts' logic needs them (`rdma::front::Node`):
/// each device behind its lock, taken per call.
struct Hardware;

/// The engine's pages as `rdma::front` uses them: one access each, under `ENGINE`'s lock
/// (`Node::with_engine`).
impl front::Engine for Pldma {
    fn irq_status(&self) -> LocalRegisterCopy<u32, IRQ::Register> {
        self.admin.irq_status()
    }

    fn pop_fault(&mut self) -> Result<Option<FaultEntry>, FaultEntryError> {
        self.fault.pop()
    }

    fn clear_sticky(&mut self, causes: LocalRegisterCopy<u32, IRQ::Register>) {
        self.admin.clear_sticky(causes);
    }

    fn clear_cq_pending(&mut self, pds: u16) {
        self.admin.clear_cq_pending(pds);
    }

    fn take_appended(&mut self) -> u32 {
        self.active.take_appended()
    }

    fn rapf(&mut self, pd: Pd, rapf: &RapfRequest) -> Result<(), PdPageError> {
        self.pd_pages[pd.index()].rapf(rapf)
    }
}

impl front::Node for Hardware {
    type Engine = Pldma;
    type Smmu = Smmu500;

    fn with_engine<R>(&self, f: impl FnOnce(&mut Pldma) -> R) -> Option<R> {
        with_engine(f)
    }

    fn with_smmu<R>(&self, f: impl FnOnce(&mut Smmu500) -> R) -> Option<R> {
        with_smmu(f)
    }

    fn with_recent<R>(&self, f: impl FnOnce(&mut Recent) -> R) -> R {
        f(&mut RECENT.lock())
    }

    fn node_id(&self) -> u16 {
        crate::cluster::node_id()
    }

    fn resolve_page(&self, pd: Pd, va: u64, write: bool) -> Option<Range<u64>> {
        crate::process::paging::resolve_rdma_fault(pd, va, write).ok().map(|t| t.first..t.end)
    }

    fn post(&self, request: &RdmaRequest) {
        let m = request.encode(0);
        let _ = rpu::post(m.op, m.args);
    }

    fn drain(&self) {
        rpu::drain();
    }

    fn kernel_completions(&self) -> impl Iterator<Item = (Pd, fn())> {
        KERNEL_COMPLETIONS.iter().copied()
    }

    fn cq_holders(&self, pending: u16) -> heapless::Vec<usize, { hal::pldma::PDS }> {
        TABLE.lock().cq_holders(pending).map(|(_, slot)| slot).collect()
    }

    fn wake_cq_waiter(&self, slot: usize) {
        scheduler::wake_waiter(slot, |w| w == Wait::Cq);
    }

    fn logs_appended(&self, logs: u32) {
        if logs & (1 << hal::pldma::active::KERNEL_LOG) != 0 {
            drain_kernel_log();
        }
        let notices: heapless::Vec<LogNotice, { hal::pldma::active::IUIDS }> = ACTIVE.lock().notices(logs).collect();
        for n in notices {
            tell_log_owner(n);
        }
    }

    fn instructions(&self) -> u32 {
        arch::pmu::instructions()
    }

    fn forwarding_instructions(&self) -> u64 {
        crate::exception::forward::forwarding_instructions()
    }

    fn report_context_fault(&self, fault: &ContextFault) {
        defmt::debug!("smmu: {}", defmt::Debug2Format(fault));
    }

    fn report_global_fault(&self, fault: &GlobalFault) {
        defmt::warn!("smmu: global fault {}", defmt::Debug2Format(fault));
    }
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
