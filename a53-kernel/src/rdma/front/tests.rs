//! The front end's interrupts against fakes of the engine, the SMMU and the kernel: what is
//! taken, answered, cleared, counted and woken, and that no page is resolved and no process
//! woken under a device's lock.

use super::*;
use core::cell::{Cell, RefCell};
use core::sync::atomic::AtomicUsize;
use hal::pldma::codes::{FaultCode, RapfAction};
use hal::smmu500::regs::{FSR, FSYNR0, GFSR};
use std::collections::VecDeque;
use std::vec::Vec;

/// The engine's kernel pages: the fault FIFO (each slot what a pop decodes), the sticky causes
/// and `cq_pending`, with `irq_status` made of them as the engine makes it (`FAULT` while the
/// FIFO holds an entry, `CQ` and the `CQ_PENDING` copy while `cq_pending` is not 0).
#[derive(Default)]
struct FakeEngine {
    fifo: VecDeque<Result<FaultEntry, FaultEntryError>>,
    sticky: u32,
    cq_pending: u16,
    /// PD pages whose RAPF writes the engine refuses.
    refusing: Vec<Pd>,
    status_reads: Cell<usize>,
    pops: usize,
    sticky_cleared: Vec<u32>,
    cq_cleared: Vec<u16>,
    rapfs: Vec<(Pd, RapfRequest)>,
    /// The Active Access page's `appended`, and how often it was taken.
    appended: u32,
    appended_takes: usize,
}

impl Engine for FakeEngine {
    fn irq_status(&self) -> LocalRegisterCopy<u32, IRQ::Register> {
        self.status_reads.set(self.status_reads.get() + 1);
        let mut status = self.sticky;
        if !self.fifo.is_empty() {
            status |= IRQ::FAULT::SET.value;
        }
        if self.cq_pending != 0 {
            status |= (IRQ::CQ::SET + IRQ::CQ_PENDING.val(u32::from(self.cq_pending))).value;
        }
        if self.appended != 0 {
            status |= IRQ::ACTIVE_LOG::SET.value;
        }
        LocalRegisterCopy::new(status)
    }

    fn pop_fault(&mut self) -> Result<Option<FaultEntry>, FaultEntryError> {
        self.pops += 1;
        self.fifo.pop_front().transpose()
    }

    fn clear_sticky(&mut self, causes: LocalRegisterCopy<u32, IRQ::Register>) {
        self.sticky_cleared.push(causes.get());
        self.sticky &= !causes.get();
    }

    fn clear_cq_pending(&mut self, pds: u16) {
        self.cq_cleared.push(pds);
        self.cq_pending &= !pds;
    }

    fn take_appended(&mut self) -> u32 {
        self.appended_takes += 1;
        core::mem::take(&mut self.appended)
    }

    fn rapf(&mut self, pd: Pd, rapf: &RapfRequest) -> Result<(), PdPageError> {
        self.rapfs.push((pd, *rapf));
        if self.refusing.contains(&pd) { Err(PdPageError::Refused) } else { Ok(()) }
    }
}

/// The SMMU: the banks' recorded faults (shown until cleared), the global fault, and the banks
/// that hold a stalled access with nothing recorded, which fault again when retried.
#[derive(Default)]
struct FakeSmmu {
    recorded: VecDeque<ContextFault>,
    /// Recorded again as soon as it is cleared, forever (a bank that keeps faulting).
    endless: Option<ContextFault>,
    global: Option<GlobalFault>,
    /// Banks holding an access with no record, and the fault it records when it is retried.
    unrecorded: Vec<(ContextBank, Option<ContextFault>)>,
    cleared: Vec<ContextFault>,
    globals_cleared: usize,
    resumes: Vec<(ContextBank, Resume)>,
    /// Looks that found no fault (`scan`): one per round.
    rounds: Cell<usize>,
    /// Looks for unrecorded stalls of their own (`unrecorded_stalls`): one per round that
    /// resumed stalled faults, whose quiet look is then out of date.
    second_looks: Cell<usize>,
    /// Reads of the global fault record.
    global_looks: Cell<usize>,
}

impl Smmu for FakeSmmu {
    fn next_fault(&self) -> Option<ContextFault> {
        self.recorded.front().copied().or(self.endless)
    }

    fn clear_fault(&mut self, fault: &ContextFault) {
        self.cleared.push(*fault);
        if self.recorded.front() == Some(fault) {
            self.recorded.pop_front();
        }
    }

    fn global_fault(&self) -> Option<GlobalFault> {
        self.global_looks.set(self.global_looks.get() + 1);
        self.global
    }

    fn clear_global_fault(&mut self, _: &GlobalFault) {
        self.globals_cleared += 1;
        self.global = None;
    }

    fn resume(&mut self, bank: ContextBank, action: Resume) {
        self.resumes.push((bank, action));
        if action == Resume::Retry
            && let Some(at) = self.unrecorded.iter().position(|(b, _)| *b == bank)
        {
            let (_, again) = self.unrecorded.remove(at);
            self.recorded.extend(again);
        }
    }

    fn unrecorded_stalls(&self) -> impl Iterator<Item = ContextBank> + '_ {
        self.second_looks.set(self.second_looks.get() + 1);
        self.unrecorded.iter().map(|(bank, _)| *bank)
    }

    fn scan(&self) -> Scan {
        match self.next_fault() {
            Some(fault) => Scan::Fault(fault),
            None => {
                self.rounds.set(self.rounds.get() + 1);
                Scan::Quiet { unrecorded: self.unrecorded.iter().fold(0, |m, (b, _)| m | 1 << b.index()) }
            }
        }
    }
}

/// The kernel: the pages that can have a frame, what was posted to the R5 and drained, the PD
/// holders and who was woken, and an instruction count that only resolving pages advances.
struct Fake {
    me: u16,
    engine: RefCell<FakeEngine>,
    smmu: RefCell<FakeSmmu>,
    recent: RefCell<Recent>,
    /// (PD, page address) of the pages that get a frame.
    pages: Vec<(Pd, u64)>,
    resolved: RefCell<Vec<(Pd, u64, bool)>>,
    posted: RefCell<Vec<RdmaRequest>>,
    drains: Cell<usize>,
    completions: Vec<(Pd, fn())>,
    /// (PD, slot) of the processes holding a PD.
    holders: Vec<(Pd, usize)>,
    woken: RefCell<Vec<usize>>,
    /// The `appended` bits handed to the kernel, per interrupt.
    logs: RefCell<Vec<u32>>,
    instructions: Cell<u32>,
    reported: Cell<(usize, usize)>,
    counters: LiveCounters,
}

/// Instructions one page's resolution takes, in the fake.
const RESOLVE_COST: u32 = 1000;

impl Fake {
    fn new(me: u16) -> Self {
        Self {
            me,
            engine: RefCell::default(),
            smmu: RefCell::default(),
            recent: RefCell::new(Recent::new()),
            pages: Vec::new(),
            resolved: RefCell::default(),
            posted: RefCell::default(),
            drains: Cell::new(0),
            completions: Vec::new(),
            holders: Vec::new(),
            woken: RefCell::default(),
            logs: RefCell::default(),
            instructions: Cell::new(0),
            reported: Cell::new((0, 0)),
            counters: LiveCounters::new(),
        }
    }

    fn front(&self) -> Front<'_, Self> {
        Front { node: self, counters: &self.counters }
    }

    fn counted(&self) -> Counters {
        self.counters.snapshot()
    }

    /// Asserts that neither device's lock is held: the process table comes before them in lock
    /// order, and the handlers talk to the R5 only once the engine's registers are let go.
    fn assert_unlocked(&self, what: &str) {
        assert!(self.engine.try_borrow_mut().is_ok(), "{what} under the engine's lock");
        assert!(self.smmu.try_borrow_mut().is_ok(), "{what} under the SMMU's lock");
    }
}

impl Node for Fake {
    type Engine = FakeEngine;
    type Smmu = FakeSmmu;

    fn with_engine<R>(&self, f: impl FnOnce(&mut FakeEngine) -> R) -> Option<R> {
        assert!(self.smmu.try_borrow_mut().is_ok(), "the engine's lock taken under the SMMU's");
        Some(f(&mut self.engine.borrow_mut()))
    }

    fn with_smmu<R>(&self, f: impl FnOnce(&mut FakeSmmu) -> R) -> Option<R> {
        assert!(self.engine.try_borrow_mut().is_ok(), "the SMMU's lock taken under the engine's");
        Some(f(&mut self.smmu.borrow_mut()))
    }

    fn with_recent<R>(&self, f: impl FnOnce(&mut Recent) -> R) -> R {
        f(&mut self.recent.borrow_mut())
    }

    fn node_id(&self) -> u16 {
        self.me
    }

    fn resolve_page(&self, pd: Pd, va: u64, write: bool) -> Option<Range<u64>> {
        self.assert_unlocked("a page resolved");
        self.resolved.borrow_mut().push((pd, va, write));
        self.instructions.set(self.instructions.get() + RESOLVE_COST);
        // As touch-ahead: the page's whole block is resident.
        let block = va & !(hal::pldma::BLOCK_BYTES - 1);
        self.pages.contains(&(pd, va)).then_some(block..block + hal::pldma::BLOCK_BYTES)
    }

    fn post(&self, request: &RdmaRequest) {
        self.assert_unlocked("an answer posted");
        self.posted.borrow_mut().push(*request);
    }

    fn drain(&self) {
        self.assert_unlocked("the IPC ring drained");
        self.drains.set(self.drains.get() + 1);
    }

    fn kernel_completions(&self) -> impl Iterator<Item = (Pd, fn())> {
        self.completions.iter().copied()
    }

    fn cq_holders(&self, pending: u16) -> heapless::Vec<usize, { hal::pldma::PDS }> {
        self.assert_unlocked("the process table taken");
        self.holders.iter().filter(|(pd, _)| pending & (1 << pd.raw()) != 0).map(|&(_, slot)| slot).collect()
    }

    fn wake_cq_waiter(&self, slot: usize) {
        self.assert_unlocked("a process woken");
        self.woken.borrow_mut().push(slot);
    }

    fn logs_appended(&self, logs: u32) {
        self.assert_unlocked("log owners told");
        self.logs.borrow_mut().push(logs);
    }

    fn instructions(&self) -> u32 {
        self.instructions.get()
    }

    fn forwarding_instructions(&self) -> u64 {
        0
    }

    fn report_context_fault(&self, _: &ContextFault) {
        let (context, global) = self.reported.get();
        self.reported.set((context + 1, global));
    }

    fn report_global_fault(&self, _: &GlobalFault) {
        let (context, global) = self.reported.get();
        self.reported.set((context, global + 1));
    }
}

fn pd(raw: u16) -> Pd {
    Pd::new(raw).unwrap()
}

fn bank(index: u8) -> ContextBank {
    ContextBank::new(index).unwrap()
}

/// A context fault of bank `index` at `va` with FSR `fsr`.
fn context_fault(index: u8, fsr: u32, va: u64, access: Access) -> ContextFault {
    let fsynr0 = if access == Access::Write { FSYNR0::WNR::SET.value } else { 0 };
    ContextFault::decode(bank(index), fsr, va, fsynr0, u32::from(index)).unwrap()
}

/// A translation fault of bank `index` at `va` whose access the bank holds.
fn stalled(index: u8, va: u64, access: Access) -> ContextFault {
    context_fault(index, (FSR::TF::SET + FSR::SS::SET).value, va, access)
}

fn local(pd: Pd, tid: u16, seq: u16, action: RapfAction) -> RdmaRequest {
    RdmaRequest::FaultResolved { pd, tid, seq, action }
}

#[test]
fn an_interrupt_takes_at_most_its_share_of_the_fifo_and_leaves_the_rest() {
    let fake = Fake::new(0);
    let entries = 100;
    fake.engine.borrow_mut().fifo =
        (0..entries).map(|i| Ok(FaultEntry::new(FaultCode::SourceFault, pd(2), 0, i, 0, 0x1000))).collect();
    fake.front().on_engine_irq();
    assert_eq!(fake.counted().fault_entries, FAULTS_PER_IRQ as u64);
    assert_eq!(fake.engine.borrow().pops, FAULTS_PER_IRQ, "the rest is not read");
    assert_eq!(fake.engine.borrow().fifo.len(), usize::from(entries) - FAULTS_PER_IRQ);
    assert_eq!(fake.posted.borrow().len(), FAULTS_PER_IRQ);
    fake.front().on_engine_irq();
    assert_eq!(fake.counted().fault_entries, u64::from(entries), "the next interrupt takes the rest");
    assert!(fake.engine.borrow().fifo.is_empty());
    assert_eq!(fake.counted().fault_irqs, 2);
    assert_eq!(fake.drains.get(), 2, "one drain per interrupt");
}

#[test]
fn logs_that_took_entries_are_handed_to_the_kernel_once_and_only_when_the_cause_says_so() {
    let fake = Fake::new(0);
    fake.engine.borrow_mut().cq_pending = 1 << 2;
    fake.front().on_engine_irq();
    assert_eq!(fake.engine.borrow().appended_takes, 0, "no ACTIVE_LOG: `appended` is not read");
    assert!(fake.logs.borrow().is_empty());
    fake.engine.borrow_mut().appended = 1 << 3 | 1 << 16;
    fake.front().on_engine_irq();
    assert_eq!(*fake.logs.borrow(), [1 << 3 | 1 << 16], "the bits, outside the engine's lock");
    assert_eq!((fake.engine.borrow().appended, fake.engine.borrow().appended_takes), (0, 1), "taken once");
    assert_eq!(fake.counted().active_log_irqs, 1);
}

#[test]
fn entries_that_do_not_decode_are_counted_and_skipped() {
    let fake = Fake::new(0);
    let first = FaultEntry::new(FaultCode::SourceFault, pd(2), 0, 1, 1, 0x1000);
    let second = FaultEntry::new(FaultCode::SourceFault, pd(2), 0, 2, 1, 0x2000);
    fake.engine.borrow_mut().fifo =
        [Err(FaultEntryError::BadCode(9)), Ok(first), Err(FaultEntryError::HalfValid), Ok(second)].into();
    fake.front().on_engine_irq();
    let counted = fake.counted();
    assert_eq!((counted.bad_fault_entries, counted.fault_entries), (2, 2));
    let aborted = [local(pd(2), 1, 1, RapfAction::Abort), local(pd(2), 2, 1, RapfAction::Abort)];
    assert_eq!(*fake.posted.borrow(), aborted);
}

#[test]
fn entries_of_an_attempt_answered_lately_are_skipped_and_counted() {
    let fake = Fake::new(0);
    let packet = |va| Ok(FaultEntry::new(FaultCode::DestinationFault, pd(3), 1, 5, 9, va));
    fake.engine.borrow_mut().fifo = [packet(0x1000), packet(0x2000)].into();
    fake.front().on_engine_irq();
    fake.engine.borrow_mut().fifo = [packet(0x3000)].into();
    fake.front().on_engine_irq();
    let counted = fake.counted();
    assert_eq!((counted.fault_entries, counted.duplicate_fault_entries), (3, 2), "across interrupts too");
    assert_eq!(*fake.resolved.borrow(), [(pd(3), 0x1000, true)], "only the first is resolved");
    assert_eq!(fake.engine.borrow().rapfs.len(), 1, "and answered");
}

#[test]
fn attempts_that_fault_where_the_last_resolve_made_pages_resident_are_retried_at_once() {
    let mut fake = Fake::new(0);
    fake.pages = Vec::from([(pd(3), 0x1000)]);
    let entry = |seq, va| Ok(FaultEntry::new(FaultCode::DestinationFault, pd(3), 1, 5, seq, va));
    let source = Ok(FaultEntry::new(FaultCode::SourceFault, pd(3), 1, 5, 12, 0x1000));
    fake.engine.borrow_mut().fifo = [entry(9, 0x1000), entry(10, 0x3000), entry(11, 0x5000), source].into();
    fake.front().on_engine_irq();
    assert_eq!(
        *fake.resolved.borrow(),
        [(pd(3), 0x1000, true), (pd(3), 0x5000, true), (pd(3), 0x1000, false)],
        "the second attempt's page was made resident by the first's resolve; another block, or a read, is looked at"
    );
    let rapfs = &fake.engine.borrow().rapfs;
    let actions: Vec<RapfAction> = rapfs.iter().map(|(_, r)| r.action).collect();
    assert_eq!(actions, [RapfAction::Retry, RapfAction::Retry, RapfAction::Abort, RapfAction::Retry]);
    let counted = fake.counted();
    assert_eq!((counted.fault_entries, counted.faults_resolved), (4, 3), "the answer taken counts as resolved");
}

#[test]
fn a_page_fault_whose_page_gets_a_frame_is_retried_and_any_other_aborted() {
    let mut fake = Fake::new(4);
    fake.pages = Vec::from([(pd(2), 0x1000), (pd(2), 0x3000)]);
    let entry = |code, tid, va| Ok(FaultEntry::new(code, pd(2), 4, tid, 7, va));
    fake.engine.borrow_mut().fifo = [
        entry(FaultCode::DestinationFault, 1, 0x1000),
        entry(FaultCode::SourceFault, 2, 0x2000),
        entry(FaultCode::DestinationBusError, 3, 0x3000),
    ]
    .into();
    fake.front().on_engine_irq();
    assert_eq!(
        *fake.resolved.borrow(),
        [(pd(2), 0x1000, true), (pd(2), 0x2000, false)],
        "a destination needs a write, a source a read; a bus error no page"
    );
    assert_eq!(
        *fake.posted.borrow(),
        [
            local(pd(2), 1, 7, RapfAction::Retry),
            local(pd(2), 2, 7, RapfAction::Abort),
            local(pd(2), 3, 7, RapfAction::Abort)
        ],
        "owned here: answered to this node's R5"
    );
    assert_eq!(fake.drains.get(), 1, "its replies read once, after every post");
    assert!(fake.engine.borrow().rapfs.is_empty());
    let counted = fake.counted();
    assert_eq!(counted.faults_resolved, 1);
    assert_eq!(counted.fault_irqs, 1);
    assert_eq!(counted.resolve_instructions, 2 * u64::from(RESOLVE_COST));
    assert_eq!(counted.fault_irq_instructions, 2 * u64::from(RESOLVE_COST), "the handler's cost includes them");
}

#[test]
fn remote_answers_are_written_to_the_pd_page_and_a_refusal_is_counted() {
    let mut fake = Fake::new(0);
    fake.pages = Vec::from([(pd(3), 0x1000)]);
    fake.engine.borrow_mut().refusing = Vec::from([pd(4)]);
    fake.engine.borrow_mut().fifo = [
        Ok(FaultEntry::new(FaultCode::SourceFault, pd(3), 1, 10, 20, 0x1000)),
        Ok(FaultEntry::new(FaultCode::SourceFault, pd(4), 2, 11, 21, 0x1000)),
    ]
    .into();
    fake.front().on_engine_irq();
    let rapf = |node, tid, seq, action, claimed_pd| RapfRequest { node, tid, seq, action, claimed_pd };
    assert_eq!(
        fake.engine.borrow().rapfs,
        [(pd(3), rapf(1, 10, 20, RapfAction::Retry, 3)), (pd(4), rapf(2, 11, 21, RapfAction::Abort, 4))]
    );
    assert_eq!(fake.counted().rapf_refused, 1);
    assert!(fake.posted.borrow().is_empty());
    assert_eq!(fake.drains.get(), 0, "nothing posted, nothing to drain");
}

#[test]
fn sticky_causes_are_cleared_and_counted() {
    let fake = Fake::new(0);
    let causes = (IRQ::FAULT_LOST::SET + IRQ::DESC_REFUSED::SET).value;
    fake.engine.borrow_mut().sticky = causes;
    fake.front().on_engine_irq();
    assert_eq!(fake.engine.borrow().sticky_cleared, [causes]);
    assert_eq!(fake.engine.borrow().sticky, 0);
    fake.front().on_engine_irq();
    assert_eq!(fake.engine.borrow().sticky_cleared.len(), 1, "none left: nothing written");
    assert_eq!(fake.counted().sticky, 1);
}

#[test]
fn a_completion_wakes_its_holder_and_a_kernel_pds_hook_for_one_read_and_one_write() {
    static SOCKETS: AtomicUsize = AtomicUsize::new(0);
    static OTHER: AtomicUsize = AtomicUsize::new(0);
    fn sockets() {
        SOCKETS.fetch_add(1, Ordering::Relaxed);
    }
    fn other() {
        OTHER.fetch_add(1, Ordering::Relaxed);
    }
    let mut fake = Fake::new(0);
    fake.completions = Vec::from([(pd(15), sockets as fn()), (pd(14), other as fn())]);
    fake.holders = Vec::from([(pd(3), 5), (pd(9), 6)]);
    let pending = (1 << 3) | (1 << 7) | (1 << 15);
    fake.engine.borrow_mut().cq_pending = pending;
    fake.front().on_engine_irq();
    let engine = fake.engine.borrow();
    assert_eq!((engine.status_reads.get(), engine.cq_cleared.as_slice()), (1, &[pending][..]));
    assert_eq!(engine.pops, 0, "the fault FIFO is read only when FAULT says it holds an entry");
    assert!(engine.sticky_cleared.is_empty());
    assert_eq!(*fake.woken.borrow(), [5], "the holder of PD 3; PD 7 has none, PD 9 had nothing");
    assert_eq!(fake.counted().cq_wakeups, 1);
    assert_eq!(SOCKETS.load(Ordering::Relaxed), 1, "PD 15's completions are the kernel's");
    assert_eq!(OTHER.load(Ordering::Relaxed), 0);
    assert_eq!(fake.counted().fault_irqs, 0);
}

#[test]
fn a_stalled_fault_whose_page_gets_a_frame_is_resumed_with_retry() {
    let mut fake = Fake::new(0);
    fake.pages = Vec::from([(pd(4), 0x5000)]);
    let fault = stalled(4, 0x5000, Access::Write);
    fake.smmu.borrow_mut().recorded = [fault].into();
    fake.front().on_smmu_irq();
    assert_eq!(*fake.resolved.borrow(), [(pd(4), 0x5000, true)], "the bank's PD, FAR, WNR");
    let smmu = fake.smmu.borrow();
    assert_eq!(smmu.cleared, [fault]);
    assert_eq!(smmu.resumes, [(bank(4), Resume::Retry)]);
    assert_eq!(smmu.rounds.get(), 2, "the second round found nothing and ended it");
    assert_eq!(smmu.second_looks.get(), 1, "the first round resumed: its quiet look was out of date");
    let counted = fake.counted();
    assert_eq!((counted.context_faults, counted.stalls_resumed, counted.faults_resolved), (1, 1, 1));
    assert_eq!((counted.stall_irqs, counted.stall_irq_instructions), (1, u64::from(RESOLVE_COST)));
    assert_eq!(fake.reported.get(), (1, 0));
}

#[test]
fn a_stalled_fault_whose_address_cannot_have_a_page_is_terminated() {
    let fake = Fake::new(0);
    fake.smmu.borrow_mut().recorded = [stalled(4, 0x5000, Access::Read)].into();
    fake.front().on_smmu_irq();
    assert_eq!(*fake.resolved.borrow(), [(pd(4), 0x5000, false)]);
    assert_eq!(fake.smmu.borrow().resumes, [(bank(4), Resume::Terminate)]);
    let counted = fake.counted();
    assert_eq!((counted.stalls_resumed, counted.faults_resolved, counted.stall_irqs), (0, 0, 1));
}

#[test]
fn a_stalled_fault_without_an_address_is_retried_at_once() {
    let mut fake = Fake::new(0);
    fake.pages = Vec::from([(pd(4), 0x5000)]);
    let multi_alone = context_fault(4, (FSR::MULTI::SET + FSR::SS::SET).value, 0x5000, Access::Read);
    assert!(!multi_alone.has_address());
    fake.smmu.borrow_mut().recorded = [multi_alone].into();
    fake.front().on_smmu_irq();
    assert!(fake.resolved.borrow().is_empty(), "FAR is an older fault's");
    assert_eq!(fake.smmu.borrow().resumes, [(bank(4), Resume::Retry)]);
    assert_eq!(fake.counted().stalls_resumed, 0);
}

#[test]
fn a_fault_that_did_not_stall_is_only_cleared_and_counted() {
    let fake = Fake::new(0);
    let terminated = context_fault(4, FSR::TF::SET.value, 0x5000, Access::Read);
    fake.smmu.borrow_mut().recorded = [terminated].into();
    fake.front().on_smmu_irq();
    let smmu = fake.smmu.borrow();
    assert_eq!(smmu.cleared, [terminated]);
    assert!(smmu.resumes.is_empty(), "the engine's fault entry answers it");
    assert_eq!(smmu.rounds.get(), 1);
    assert_eq!(smmu.second_looks.get(), 0, "nothing resumed: the quiet look serves");
    assert!(fake.resolved.borrow().is_empty());
    assert_eq!((fake.counted().context_faults, fake.counted().stall_irqs), (1, 0));
}

#[test]
fn an_unrecorded_stall_is_retried_and_answered_once_it_faults_again() {
    let mut fake = Fake::new(0);
    fake.pages = Vec::from([(pd(6), 0x7000)]);
    let again = stalled(6, 0x7000, Access::Read);
    fake.smmu.borrow_mut().unrecorded = Vec::from([(bank(6), Some(again))]);
    fake.front().on_smmu_irq();
    let smmu = fake.smmu.borrow();
    assert_eq!(smmu.resumes, [(bank(6), Resume::Retry), (bank(6), Resume::Retry)], "once held, once resolved");
    assert_eq!(smmu.cleared, [again]);
    assert_eq!(smmu.rounds.get(), 3, "the third round found nothing");
    assert_eq!(smmu.global_looks.get(), 1, "the global fault is looked at in the first round only");
    assert_eq!(smmu.second_looks.get(), 1, "only the round that resolved looked twice");
    assert_eq!(*fake.resolved.borrow(), [(pd(6), 0x7000, false)]);
    let counted = fake.counted();
    assert_eq!((counted.unrecorded_stalls, counted.context_faults, counted.stalls_resumed), (1, 1, 1));
}

#[test]
fn rounds_end_at_their_bound_when_faults_keep_coming() {
    let fake = Fake::new(0);
    fake.smmu.borrow_mut().endless = Some(stalled(2, 0x1000, Access::Read));
    fake.front().on_smmu_irq();
    let smmu = fake.smmu.borrow();
    assert_eq!(smmu.rounds.get(), 0, "no look found no fault");
    assert_eq!(smmu.second_looks.get(), STALL_ROUNDS, "each round looked for unrecorded stalls");
    assert_eq!(smmu.resumes.len(), STALL_ROUNDS * FAULTS_PER_ROUND);
    assert!(smmu.resumes.iter().all(|&r| r == (bank(2), Resume::Terminate)));
    assert_eq!(fake.counted().context_faults, (STALL_ROUNDS * FAULTS_PER_ROUND) as u64);
    assert_eq!(fake.counted().stall_irqs, 1);
}

#[test]
fn the_global_fault_is_cleared_and_counted() {
    let fake = Fake::new(0);
    fake.smmu.borrow_mut().global = GlobalFault::decode(GFSR::USF::SET.value, 0, 0x21, 0x8000);
    assert!(fake.smmu.borrow().global.is_some());
    fake.front().on_smmu_irq();
    assert_eq!(fake.smmu.borrow().globals_cleared, 1);
    assert!(fake.smmu.borrow().resumes.is_empty());
    assert_eq!(fake.counted().global_faults, 1);
    assert_eq!(fake.reported.get(), (0, 1));
}
