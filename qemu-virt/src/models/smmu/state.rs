//! The SMMU's state and what a transaction does to it: stream matching, the context bank's
//! TLB and walk, fault recording, and the transactions held by stalls (`docs/hw/smmu.md`,
//! "Faults").

use super::tlb::{Invalidation, Tlb};
use super::walk::{GuestMemory, WalkFault, WalkRegime, walk};
use crate::models::iommu::{Access, StallId, StallOutcome, Translation};
use hal::smmu500::config::pa_bits;
use hal::smmu500::fault::FSR_RECORD;
use hal::smmu500::regs::{
    CBA2R, CBAR, CONTEXT_BANKS, FSR, FSYNR0, GFSR, GFSYNR0, GFSYNR1, S2CR, SCR0, SCTLR, SMR, STREAM_MATCH_GROUPS, TCR,
    TCR2, TTBR,
};
use std::collections::HashMap;
use tock_registers::LocalRegisterCopy;
use tock_registers::fields::FieldValue;

type Reg32<R> = LocalRegisterCopy<u32, R>;

/// Counts of what the model did, for tests and reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Transactions presented.
    pub translations: u64,
    /// Table walks (TLB misses).
    pub walks: u64,
    /// Context faults (recorded or MULTI).
    pub faults: u64,
    /// Transactions that translated but were aborted because a fault was pending (HUPCF = 0).
    pub aborted_under_fault: u64,
    /// Transactions held (stalled, or queued behind a stall).
    pub held: u64,
    /// Global faults.
    pub global_faults: u64,
}

/// One context bank's registers and TLB.
#[derive(Debug, Default)]
pub(super) struct Bank {
    pub cbar: u32,
    pub cba2r: u32,
    pub cbfrsynra: u32,
    pub sctlr: u32,
    pub tcr2: u32,
    pub ttbr0: u64,
    pub tcr: u32,
    pub mair0: u32,
    pub mair1: u32,
    /// The record bits only; SS is derived from the held transactions.
    pub fsr: u32,
    pub far: u64,
    pub fsynr0: u32,
    pub tlb: Tlb,
    /// Invalidations written and not yet completed by a TLBSYNC.
    pub pending: Vec<Invalidation>,
    /// TLBSTATUS reads left that report the sync as running.
    pub sync_busy: u32,
}

impl Bank {
    fn sctlr(&self) -> Reg32<SCTLR::Register> {
        Reg32::new(self.sctlr)
    }

    /// The ASID the bank's TLB entries carry.
    fn asid(&self) -> u16 {
        let asid = LocalRegisterCopy::<u64, TTBR::Register>::new(self.ttbr0).read(TTBR::ASID) as u16;
        if Reg32::<TCR2::Register>::new(self.tcr2).is_set(TCR2::AS) { asid } else { asid & 0xff }
    }

    fn walk_regime(&self) -> WalkRegime {
        let tcr = Reg32::<TCR::Register>::new(self.tcr);
        let pasize = Reg32::<TCR2::Register>::new(self.tcr2).read(TCR2::PASIZE) as u8;
        WalkRegime {
            table: LocalRegisterCopy::<u64, TTBR::Register>::new(self.ttbr0).read(TTBR::BADDR),
            t0sz: tcr.read(TCR::T0SZ) as u8,
            pa_bits: pa_bits(pasize).unwrap_or(48),
        }
    }

    /// Whether the bank is set up the one way the model translates (`docs/hw/smmu.md`, "Model").
    pub fn supported(&self) -> bool {
        let cbar = Reg32::<CBAR::Register>::new(self.cbar);
        let tcr = Reg32::<TCR::Register>::new(self.tcr);
        cbar.read(CBAR::TYPE) == CBAR::TYPE::S1TranslateS2Bypass.value >> CBAR::TYPE.shift
            && Reg32::<CBA2R::Register>::new(self.cba2r).is_set(CBA2R::VA64)
            && tcr.read(TCR::TG0) == 0
            && (16..=39).contains(&tcr.read(TCR::T0SZ))
            && pa_bits(Reg32::<TCR2::Register>::new(self.tcr2).read(TCR2::PASIZE) as u8).is_some()
    }

    fn stalls(&self) -> bool {
        self.sctlr().read(SCTLR::CFCFG) == 1
    }
}

/// A transaction the SMMU holds.
#[derive(Clone, Copy, Debug)]
struct Held {
    bank: usize,
    /// It faulted (FSR.SS); otherwise it only waits behind a fault (HUPCF = 0).
    faulted: bool,
    /// Its fault is the one FSR and FAR record (not MULTI alone): RESUME terminate aborts it.
    recorded: bool,
    outcome: StallOutcome,
}

/// How a stream reaches memory.
enum Route {
    Bypass,
    Aborted,
    Bank { index: usize, privileged: bool },
}

/// Why a transaction failed in its bank: the FSR bit, the level, whether a walk read failed.
struct ContextFault {
    fsr: FieldValue<u32, FSR::Register>,
    level: u8,
    walk_read: bool,
}

/// GR0 invalidations waiting for a global sync.
#[derive(Clone, Copy, Debug)]
pub(super) enum GlobalInvalidation {
    All,
    Vmid(u16),
}

#[derive(Debug)]
pub(super) struct State {
    pub scr0: u32,
    pub gfar: u64,
    pub gfsr: u32,
    pub gfsynr0: u32,
    pub gfsynr1: u32,
    pub smr: [u32; STREAM_MATCH_GROUPS],
    pub s2cr: [u32; STREAM_MATCH_GROUPS],
    pub banks: Vec<Bank>,
    pub global_pending: Vec<GlobalInvalidation>,
    pub gsync_busy: u32,
    /// What a sync's status reports as busy, in reads.
    pub sync_busy_reads: u32,
    held: HashMap<u64, Held>,
    next_stall: u64,
    pub stats: Stats,
}

impl State {
    pub fn new() -> Self {
        Self {
            // The silicon's reset: clients bypass the SMMU.
            scr0: SCR0::CLIENTPD::SET.value,
            gfar: 0,
            gfsr: 0,
            gfsynr0: 0,
            gfsynr1: 0,
            smr: [0; STREAM_MATCH_GROUPS],
            s2cr: [0; STREAM_MATCH_GROUPS],
            banks: (0..CONTEXT_BANKS).map(|_| Bank::default()).collect(),
            global_pending: Vec::new(),
            gsync_busy: 0,
            sync_busy_reads: 0,
            held: HashMap::new(),
            next_stall: 1,
            stats: Stats::default(),
        }
    }

    /// FSR as software reads it: the record, and SS while the bank holds a faulted transaction.
    pub fn fsr(&self, bank: usize) -> u32 {
        let stalled = self.held.values().any(|h| h.bank == bank && h.faulted && h.outcome == StallOutcome::Pending);
        self.banks[bank].fsr | if stalled { FSR::SS::SET.value } else { 0 }
    }

    /// The interrupt output: a bank's recorded fault with CFIE, or a global fault with GFIE.
    pub fn irq(&self) -> bool {
        let context = self.banks.iter().any(|b| b.fsr & FSR_RECORD != 0 && b.sctlr().is_set(SCTLR::CFIE));
        context || (self.gfsr != 0 && Reg32::<SCR0::Register>::new(self.scr0).is_set(SCR0::GFIE))
    }

    pub fn translate(&mut self, stream: u16, iova: u64, access: Access, memory: &dyn GuestMemory) -> Translation {
        self.stats.translations += 1;
        let (index, privileged) = match self.route(stream, iova, access) {
            Route::Bypass => return Translation::Ok(iova),
            Route::Aborted => return Translation::Fault,
            Route::Bank { index, privileged } => (index, privileged),
        };
        let bank = &self.banks[index];
        if !bank.sctlr().is_set(SCTLR::M) {
            // A disabled bank bypasses translation (the driver never lets a stream reach one).
            return Translation::Ok(iova);
        }
        let pending = self.fsr(index) != 0;
        let (stalls, hit_under_fault) = (bank.stalls(), bank.sctlr().is_set(SCTLR::HUPCF));
        if pending && !hit_under_fault && stalls {
            return self.hold(index, false, false);
        }
        match self.lookup(index, iova, access, privileged, memory) {
            Ok(_) if pending && !hit_under_fault => {
                self.stats.aborted_under_fault += 1;
                Translation::Fault
            }
            Ok(pa) => Translation::Ok(pa),
            Err(fault) => {
                let recorded = self.record(index, &fault, iova, access, stream);
                if stalls { self.hold(index, true, recorded) } else { Translation::Fault }
            }
        }
    }

    /// SMR/S2CR: which bank a stream reaches, or a global fault.
    fn route(&mut self, stream: u16, iova: u64, access: Access) -> Route {
        let scr0 = Reg32::<SCR0::Register>::new(self.scr0);
        if scr0.is_set(SCR0::CLIENTPD) {
            return Route::Bypass;
        }
        let mut matching = self.smr.iter().enumerate().filter(|&(_, &smr)| {
            let smr = Reg32::<SMR::Register>::new(smr);
            smr.is_set(SMR::VALID) && (u32::from(stream) ^ smr.read(SMR::ID)) & !smr.read(SMR::MASK) & 0x7fff == 0
        });
        let (group, conflict) = (matching.next().map(|(g, _)| g), matching.next().is_some());
        let fault = match (group, conflict) {
            (None, _) if !scr0.is_set(SCR0::USFCFG) => return Route::Bypass,
            (None, _) => GFSR::USF::SET,
            (Some(_), true) => GFSR::SMCF::SET,
            (Some(group), false) => {
                let s2cr = Reg32::<S2CR::Register>::new(self.s2cr[group]);
                match s2cr.read_as_enum(S2CR::TYPE) {
                    Some(S2CR::TYPE::Value::Bypass) => return Route::Bypass,
                    Some(S2CR::TYPE::Value::Translate) if (s2cr.read(S2CR::CBNDX) as usize) < CONTEXT_BANKS => {
                        let privileged = s2cr.read(S2CR::PRIVCFG) == 3;
                        return Route::Bank { index: s2cr.read(S2CR::CBNDX) as usize, privileged };
                    }
                    Some(S2CR::TYPE::Value::Translate) => GFSR::UCBF::SET,
                    _ => GFSR::ICF::SET,
                }
            }
        };
        self.stats.global_faults += 1;
        if self.gfsr == 0 {
            self.gfsr = fault.value;
            self.gfar = iova;
            self.gfsynr0 = GFSYNR0::WNR.val(u32::from(access == Access::Write)).value;
            self.gfsynr1 = GFSYNR1::STREAMID.val(u32::from(stream)).value;
        } else {
            self.gfsr |= GFSR::MULTI::SET.value;
        }
        Route::Aborted
    }

    /// The bank's translation of `iova`: from its TLB, or walked (and then cached).
    fn lookup(
        &mut self,
        index: usize,
        iova: u64,
        access: Access,
        privileged: bool,
        memory: &dyn GuestMemory,
    ) -> Result<u64, ContextFault> {
        let bank = &mut self.banks[index];
        let asid = bank.asid();
        let leaf = match bank.tlb.lookup(asid, iova) {
            Some(leaf) => leaf,
            None => {
                self.stats.walks += 1;
                let leaf = walk(memory, &bank.walk_regime(), iova).map_err(|f| match f {
                    WalkFault::Translation(level) => ContextFault { fsr: FSR::TF::SET, level, walk_read: false },
                    WalkFault::AddressSize(level) => ContextFault { fsr: FSR::ASF::SET, level, walk_read: false },
                    WalkFault::External(level) => ContextFault { fsr: FSR::EF::SET, level, walk_read: true },
                })?;
                let sctlr = bank.sctlr();
                if !leaf.af && sctlr.is_set(SCTLR::AFE) && !sctlr.is_set(SCTLR::AFFD) {
                    return Err(ContextFault { fsr: FSR::AFF::SET, level: leaf.level, walk_read: false });
                }
                bank.tlb.insert(asid, leaf);
                leaf
            }
        };
        if (!privileged && !leaf.el0) || (access == Access::Write && !leaf.writable) {
            return Err(ContextFault { fsr: FSR::PF::SET, level: leaf.level, walk_read: false });
        }
        Ok(leaf.translate(iova))
    }

    /// Records a context fault in full if FSR (SS included) is clear, else sets MULTI; true
    /// when recorded in full.
    fn record(&mut self, index: usize, fault: &ContextFault, iova: u64, access: Access, stream: u16) -> bool {
        self.stats.faults += 1;
        let clear = self.fsr(index) == 0;
        let bank = &mut self.banks[index];
        if !clear {
            bank.fsr |= FSR::MULTI::SET.value;
            return false;
        }
        bank.fsr = fault.fsr.value;
        bank.far = iova;
        bank.fsynr0 = (FSYNR0::PLVL.val(u32::from(fault.level))
            + FSYNR0::WNR.val(u32::from(access == Access::Write))
            + FSYNR0::PTWF.val(u32::from(fault.walk_read)))
        .value;
        bank.cbfrsynra = u32::from(stream);
        true
    }

    fn hold(&mut self, bank: usize, faulted: bool, recorded: bool) -> Translation {
        self.stats.held += 1;
        let id = self.next_stall;
        self.next_stall += 1;
        self.held.insert(id, Held { bank, faulted, recorded, outcome: StallOutcome::Pending });
        Translation::Stalled(StallId(id))
    }

    /// RESUME: every transaction the bank holds is decided. Terminate aborts the one whose
    /// fault is recorded (the kernel judged FAR); every other is retried, and faults again,
    /// recorded in full, if it must.
    pub fn resume(&mut self, bank: usize, retry: bool) {
        for h in self.held.values_mut().filter(|h| h.bank == bank && h.outcome == StallOutcome::Pending) {
            h.outcome = if h.recorded && !retry { StallOutcome::Terminate } else { StallOutcome::Retry };
        }
    }

    /// Lets the transactions waiting behind a fault go once no fault is pending.
    pub fn release_if_clear(&mut self, bank: usize) {
        if self.fsr(bank) != 0 {
            return;
        }
        for h in self.held.values_mut().filter(|h| h.bank == bank && h.outcome == StallOutcome::Pending) {
            h.outcome = StallOutcome::Retry;
        }
    }

    /// Terminates what `bank` holds (every bank's with `None`).
    pub fn terminate_held(&mut self, bank: Option<usize>) {
        for h in self.held.values_mut().filter(|h| bank.is_none_or(|b| h.bank == b)) {
            if h.outcome == StallOutcome::Pending {
                h.outcome = StallOutcome::Terminate;
            }
        }
    }

    pub fn tlb_entries(&self, bank: usize) -> usize {
        self.banks.get(bank).map_or(0, |b| b.tlb.len())
    }

    pub fn holds(&self, bank: usize) -> bool {
        self.held.values().any(|h| h.bank == bank && h.outcome == StallOutcome::Pending)
    }

    /// A held transaction's fate, reported once.
    pub fn stall_outcome(&mut self, id: StallId) -> StallOutcome {
        match self.held.get(&id.0).map(|h| h.outcome) {
            None => StallOutcome::Terminate,
            Some(StallOutcome::Pending) => StallOutcome::Pending,
            Some(outcome) => {
                self.held.remove(&id.0);
                outcome
            }
        }
    }

    /// TLBSYNC of `bank`: its written invalidations take effect.
    pub fn sync_bank(&mut self, bank: usize) {
        let b = &mut self.banks[bank];
        for op in std::mem::take(&mut b.pending) {
            b.tlb.invalidate(op);
        }
        b.sync_busy = self.sync_busy_reads;
    }

    /// sTLBGSYNC: GR0's invalidations take effect.
    pub fn sync_global(&mut self) {
        for op in std::mem::take(&mut self.global_pending) {
            for b in &mut self.banks {
                let vmid = Reg32::<CBAR::Register>::new(b.cbar).read(CBAR::VMID) as u16;
                if matches!(op, GlobalInvalidation::All) || matches!(op, GlobalInvalidation::Vmid(v) if v == vmid) {
                    b.tlb.invalidate(Invalidation::All);
                }
            }
        }
        self.gsync_busy = self.sync_busy_reads;
    }
}
