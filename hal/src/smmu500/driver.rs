//! The SMMU-500 driver: one owner, created once, every change through `&mut self`.

use super::config::{
    BankRegisters, ContextBank, FaultPolicy, Regime, Resume, StreamId, pa_bits, s2cr_fault, scr0_enabled,
    stream_mapping,
};
use super::error::{Missing, SmmuError};
use super::fault::{ContextFault, FSR_RECORD, GlobalFault};
use super::port::{MmioPort, Reg, RegisterPort};
use super::regs::{
    CONTEXT_BANKS, ContextBankRegisters, FSR, Gr0Registers, IDR0, IDR1, IDR2, RESUME, STREAM_MATCH_GROUPS, TLBGSTATUS,
    TLBIASID, TLBIVA, TLBSTATUS,
};
use core::mem::offset_of;
use tock_registers::LocalRegisterCopy;

/// Reads of TLBSTATUS / sTLBGSTATUS a sync may take before it counts as stuck.
pub const SYNC_POLLS: u32 = 100_000;

/// Above this many pages, [`Smmu500::invalidate_pages`] invalidates the whole ASID instead: one
/// register write instead of many (each is a forwarded access on QEMU).
pub const PAGES_BEFORE_ASID_INVALIDATION: usize = 16;

/// What the SMMU reports about itself (IDR0-2), once checked against what the driver needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// IDR1.NUMCB.
    pub context_banks: u8,
    /// IDR0.NUMSMRG.
    pub stream_match_groups: u8,
    /// IDR0.NUMSIDB.
    pub stream_id_bits: u8,
    /// IDR2.UBS: input (virtual) address bits the walker takes.
    pub input_bits: u8,
    /// IDR2.OAS: output (physical) address bits.
    pub output_bits: u8,
    /// IDR0.CTTW: table walks snoop the CPU caches. When clear, the kernel must clean the table
    /// lines it changed to the point of coherency before invalidating.
    pub coherent_walk: bool,
}

/// The ZynqMP's SMMU-500, owned by the A53 kernel (`docs/hw/smmu.md`, "Who may write what").
///
/// Protection domain n uses context bank n and stream match group n; group n matches only the
/// stream [`attach`](Self::attach) gave it and sends it to bank n.
pub struct Smmu500<P: RegisterPort = MmioPort> {
    port: P,
    /// ASID of each attached bank (what TLBIVA / TLBIASID need).
    asids: [Option<u16>; CONTEXT_BANKS],
    /// Stream of each attached bank (no stream may reach two banks).
    streams: [Option<StreamId>; CONTEXT_BANKS],
}

const SCR0: Reg = Reg::gr0(offset_of!(Gr0Registers, scr0));
const IDR0_REG: Reg = Reg::gr0(offset_of!(Gr0Registers, idr0));
const IDR1_REG: Reg = Reg::gr0(offset_of!(Gr0Registers, idr1));
const IDR2_REG: Reg = Reg::gr0(offset_of!(Gr0Registers, idr2));
const GFAR: Reg = Reg::gr0(offset_of!(Gr0Registers, gfar));
const GFSR: Reg = Reg::gr0(offset_of!(Gr0Registers, gfsr));
const GFSYNR0: Reg = Reg::gr0(offset_of!(Gr0Registers, gfsynr0));
const GFSYNR1: Reg = Reg::gr0(offset_of!(Gr0Registers, gfsynr1));
const TLBIALLNSNH: Reg = Reg::gr0(offset_of!(Gr0Registers, tlbiallnsnh));
const TLBGSYNC: Reg = Reg::gr0(offset_of!(Gr0Registers, tlbgsync));
const TLBGSTATUS_REG: Reg = Reg::gr0(offset_of!(Gr0Registers, tlbgstatus));

/// Register `$field` of context bank `$bank`.
macro_rules! cb {
    ($bank:expr, $field:ident) => {
        Reg::cb($bank, offset_of!(ContextBankRegisters, $field))
    };
}

impl Smmu500<MmioPort> {
    /// The driver of the SMMU mapped at `base`.
    ///
    /// # Safety
    ///
    /// `base` must map the whole SMMU register block (`board::SMMU_SIZE` bytes at the board's
    /// SMMU address) as device memory for the rest of the program, and this driver must be its
    /// only user: create it once, at boot, and pass it down.
    pub const unsafe fn new(base: usize) -> Self {
        // SAFETY: forwarded from the caller.
        Self::with_port(unsafe { MmioPort::new(base) })
    }
}

impl<P: RegisterPort> Smmu500<P> {
    /// A driver over `port` (host tests run it against the `qemu-virt` model).
    pub const fn with_port(port: P) -> Self {
        Self { port, asids: [None; CONTEXT_BANKS], streams: [None; CONTEXT_BANKS] }
    }

    /// Reads IDR0-2 and checks that the SMMU has what the driver and the register layout
    /// assume.
    pub fn probe(&self) -> Result<Geometry, SmmuError> {
        let id0 = LocalRegisterCopy::<u32, IDR0::Register>::new(self.port.read32(IDR0_REG));
        let id1 = LocalRegisterCopy::<u32, IDR1::Register>::new(self.port.read32(IDR1_REG));
        let id2 = LocalRegisterCopy::<u32, IDR2::Register>::new(self.port.read32(IDR2_REG));
        if !id0.is_set(IDR0::S1TS) {
            return Err(SmmuError::Unsupported(Missing::Stage1));
        }
        if !id0.is_set(IDR0::SMS) || (id0.read(IDR0::NUMSMRG) as usize) < CONTEXT_BANKS {
            return Err(SmmuError::Unsupported(Missing::StreamMatching));
        }
        if id1.is_set(IDR1::PAGESIZE) || id1.read(IDR1::NUMPAGENDXB) != 3 {
            return Err(SmmuError::Unsupported(Missing::RegisterLayout));
        }
        if (id1.read(IDR1::NUMCB) as usize) < CONTEXT_BANKS {
            return Err(SmmuError::Unsupported(Missing::ContextBanks));
        }
        if !id2.is_set(IDR2::PTFS_4K) {
            return Err(SmmuError::Unsupported(Missing::Granule4K));
        }
        let ubs = match id2.read(IDR2::UBS) {
            0 => 32,
            1 => 36,
            2 => 40,
            3 => 42,
            4 => 44,
            5 => 49,
            _ => 64,
        };
        Ok(Geometry {
            context_banks: id1.read(IDR1::NUMCB) as u8,
            stream_match_groups: id0.read(IDR0::NUMSMRG) as u8,
            stream_id_bits: id0.read(IDR0::NUMSIDB) as u8,
            input_bits: ubs,
            output_bits: pa_bits(id2.read(IDR2::OAS) as u8).unwrap_or(48) as u8,
            coherent_walk: id0.is_set(IDR0::CTTW),
        })
    }

    /// Puts the SMMU in a known state and turns it on: no stream matches (every transaction
    /// faults), every bank disabled with no fault pending, the TLBs empty; then clients are
    /// translated, unmatched streams fault, and faults interrupt (`docs/hw/smmu.md`, "Reset").
    pub fn reset(&mut self) -> Result<Geometry, SmmuError> {
        let geometry = self.probe()?;
        let gfsr = self.port.read32(GFSR);
        self.port.write32(GFSR, gfsr);
        for group in 0..STREAM_MATCH_GROUPS {
            self.port.write32(Reg::smr(group), 0);
            self.port.write32(Reg::s2cr(group), s2cr_fault());
        }
        for bank in ContextBank::all() {
            self.quiesce(bank);
        }
        self.port.write32(TLBIALLNSNH, 0);
        self.sync_global()?;
        self.port.write32(SCR0, scr0_enabled());
        Ok(geometry)
    }

    /// Gives protection domain `bank` the address space `regime` and lets `stream` into it:
    /// the bank walks the process's own tables (same root, ASID, granule and attributes), with
    /// `faults` deciding what a fault does. Attaching an attached bank replaces its address space
    /// (for example on exec); the stream is cut off while the bank is reprogrammed, and the
    /// bank's TLB is emptied, so nothing of the old space survives.
    pub fn attach(
        &mut self,
        bank: ContextBank,
        stream: StreamId,
        regime: &Regime,
        faults: FaultPolicy,
    ) -> Result<(), SmmuError> {
        let regs = BankRegisters::new(bank, regime, faults)?;
        if let Some(other) = ContextBank::all().find(|&b| b != bank && self.streams[b.index()] == Some(stream)) {
            return Err(SmmuError::StreamInUse { stream, bank: other });
        }
        self.unmap_stream(bank);
        self.quiesce(bank);
        self.port.write32(Reg::cba2r(bank), regs.cba2r);
        self.port.write32(Reg::cbar(bank), regs.cbar);
        // TCR2 and TCR before TTBR0: they decide how the ASID bits are taken.
        self.port.write32(cb!(bank, tcr2), regs.tcr2);
        self.port.write32(cb!(bank, tcr), regs.tcr);
        self.port.write64(cb!(bank, ttbr0), regs.ttbr0);
        self.port.write32(cb!(bank, mair0), regs.mair0);
        self.port.write32(cb!(bank, mair1), regs.mair1);
        self.port.write32(cb!(bank, tlbiall), 0);
        self.sync_bank(bank)?;
        self.port.publish_tables();
        self.port.write32(cb!(bank, sctlr), regs.sctlr);
        self.asids[bank.index()] = Some(regs.asid());
        let (smr, s2cr) = stream_mapping(bank, stream);
        // S2CR first: the SMR makes the group match, and then it must already say where to.
        self.port.write32(Reg::s2cr(bank.index()), s2cr);
        self.port.write32(Reg::smr(bank.index()), smr);
        self.streams[bank.index()] = Some(stream);
        Ok(())
    }

    /// Takes protection domain `bank` down: its stream faults from now on, a stalled
    /// transaction of it is terminated, the bank is disabled and its TLB emptied.
    pub fn detach(&mut self, bank: ContextBank) -> Result<(), SmmuError> {
        self.unmap_stream(bank);
        self.quiesce(bank);
        self.asids[bank.index()] = None;
        self.port.write32(cb!(bank, tlbiall), 0);
        self.sync_bank(bank)
    }

    /// The ASID bank `bank` runs, if attached.
    pub fn asid(&self, bank: ContextBank) -> Option<u16> {
        self.asids[bank.index()]
    }

    /// The stream bank `bank` serves, if attached.
    pub fn stream(&self, bank: ContextBank) -> Option<StreamId> {
        self.streams[bank.index()]
    }

    /// Group `bank` matches nothing, and says "fault" should it match again.
    fn unmap_stream(&mut self, bank: ContextBank) {
        self.port.write32(Reg::smr(bank.index()), 0);
        self.port.write32(Reg::s2cr(bank.index()), s2cr_fault());
        self.streams[bank.index()] = None;
    }

    /// Disables `bank`: a stalled transaction is terminated, translation is off, no fault is
    /// recorded. Only for a bank no stream reaches: a disabled bank lets its streams bypass.
    fn quiesce(&mut self, bank: ContextBank) {
        self.port.write32(cb!(bank, resume), RESUME::TNR::Terminate.value);
        self.port.write32(cb!(bank, sctlr), 0);
        self.port.write32(cb!(bank, fsr), FSR_RECORD);
    }

    /// Invalidates bank `bank`'s translation of the page holding `va`, after the kernel changed
    /// or removed its descriptor, and waits until the SMMU no longer uses it.
    pub fn invalidate_page(&mut self, bank: ContextBank, va: u64) -> Result<(), SmmuError> {
        self.invalidate_pages(bank, va, 1)
    }

    /// Invalidates `pages` consecutive pages from the one holding `va` (the whole ASID when
    /// there are more than [`PAGES_BEFORE_ASID_INVALIDATION`]), then syncs once.
    pub fn invalidate_pages(&mut self, bank: ContextBank, va: u64, pages: usize) -> Result<(), SmmuError> {
        let asid = self.asids[bank.index()].ok_or(SmmuError::BankNotConfigured(bank))?;
        if pages > PAGES_BEFORE_ASID_INVALIDATION {
            return self.invalidate_asid(bank);
        }
        self.port.publish_tables();
        let first = va >> 12;
        for page in (0..pages as u64).map(|i| first.wrapping_add(i)) {
            let value = TLBIVA::PAGE.val(page & TLBIVA::PAGE.mask) + TLBIVA::ASID.val(u64::from(asid));
            self.port.write64(cb!(bank, tlbiva), value.value);
        }
        self.sync_bank(bank)
    }

    /// Invalidates everything bank `bank` cached for its ASID, then syncs.
    pub fn invalidate_asid(&mut self, bank: ContextBank) -> Result<(), SmmuError> {
        let asid = self.asids[bank.index()].ok_or(SmmuError::BankNotConfigured(bank))?;
        self.port.publish_tables();
        self.port.write32(cb!(bank, tlbiasid), TLBIASID::ASID.val(u32::from(asid)).value);
        self.sync_bank(bank)
    }

    /// Invalidates every entry of bank `bank` (TLBIALL), then syncs.
    pub fn invalidate_bank(&mut self, bank: ContextBank) -> Result<(), SmmuError> {
        self.port.publish_tables();
        self.port.write32(cb!(bank, tlbiall), 0);
        self.sync_bank(bank)
    }

    /// Invalidates every entry of every bank (TLBIALLNSNH), then syncs globally.
    pub fn invalidate_all(&mut self) -> Result<(), SmmuError> {
        self.port.publish_tables();
        self.port.write32(TLBIALLNSNH, 0);
        self.sync_global()
    }

    fn sync_bank(&mut self, bank: ContextBank) -> Result<(), SmmuError> {
        self.port.write32(cb!(bank, tlbsync), 0);
        for _ in 0..SYNC_POLLS {
            let status = LocalRegisterCopy::<u32, TLBSTATUS::Register>::new(self.port.read32(cb!(bank, tlbstatus)));
            if !status.is_set(TLBSTATUS::SACTIVE) {
                return Ok(());
            }
        }
        Err(SmmuError::SyncTimeout(Some(bank)))
    }

    fn sync_global(&mut self) -> Result<(), SmmuError> {
        self.port.write32(TLBGSYNC, 0);
        for _ in 0..SYNC_POLLS {
            let status = LocalRegisterCopy::<u32, TLBGSTATUS::Register>::new(self.port.read32(TLBGSTATUS_REG));
            if !status.is_set(TLBGSTATUS::GSACTIVE) {
                return Ok(());
            }
        }
        Err(SmmuError::SyncTimeout(None))
    }

    /// The fault bank `bank` records, if any. A bank that is stalled but whose record was
    /// already cleared has none.
    pub fn fault(&self, bank: ContextBank) -> Option<ContextFault> {
        self.record(bank, self.port.read32(cb!(bank, fsr)))
    }

    /// The fault bank `bank` records, its FSR read as `fsr`.
    fn record(&self, bank: ContextBank, fsr: u32) -> Option<ContextFault> {
        if fsr & FSR_RECORD == 0 {
            return None;
        }
        let far = self.port.read64(cb!(bank, far));
        let fsynr0 = self.port.read32(cb!(bank, fsynr0));
        let stream = self.port.read32(Reg::cbfrsynra(bank));
        ContextFault::decode(bank, fsr, far, fsynr0, stream)
    }

    /// The first attached bank with a recorded fault. All banks share one interrupt (SPI 155),
    /// so the handler calls this, handles and clears, until it returns `None`.
    pub fn next_fault(&self) -> Option<ContextFault> {
        self.attached().find_map(|b| self.fault(b))
    }

    /// The banks a regime is attached to.
    fn attached(&self) -> impl Iterator<Item = ContextBank> + '_ {
        ContextBank::all().filter(|b| self.asids[b.index()].is_some())
    }

    /// Clears the record of `fault` (write 1 to clear). A stalled transaction stays stalled
    /// until [`resume`](Self::resume); clearing first lets the next fault be recorded in full.
    pub fn clear_fault(&mut self, fault: &ContextFault) {
        self.port.write32(cb!(fault.bank, fsr), fault.clear_value());
    }

    /// Whether bank `bank` holds a stalled transaction (FSR.SS).
    pub fn is_stalled(&self, bank: ContextBank) -> bool {
        LocalRegisterCopy::<u32, FSR::Register>::new(self.port.read32(cb!(bank, fsr))).is_set(FSR::SS)
    }

    /// The attached banks that hold a stalled transaction but record no fault with an address:
    /// a transaction that faulted while the bank already held a fault got only MULTI, and that
    /// MULTI was cleared with the record it came after (or is all FSR records). Nothing will
    /// interrupt for it; RESUME retry makes it fault again, recorded in full this time.
    pub fn unrecorded_stalls(&self) -> impl Iterator<Item = ContextBank> + '_ {
        self.attached().filter(|&b| is_unrecorded_stall(self.port.read32(cb!(b, fsr))))
    }

    /// One look at every attached bank, one FSR read each: [`next_fault`](Self::next_fault)'s
    /// answer, and when it is `None`, [`unrecorded_stalls`](Self::unrecorded_stalls)' from the
    /// same reads (the fault handler's round that finds no fault needs no second look).
    pub fn scan(&self) -> Scan {
        let mut unrecorded = 0;
        for b in self.attached() {
            let fsr = self.port.read32(cb!(b, fsr));
            if let Some(fault) = self.record(b, fsr) {
                return Scan::Fault(fault);
            }
            if is_unrecorded_stall(fsr) {
                unrecorded |= 1 << b.index();
            }
        }
        Scan::Quiet { unrecorded }
    }

    /// Retries or terminates bank `bank`'s stalled transactions (ignored when none is stalled).
    pub fn resume(&mut self, bank: ContextBank, action: Resume) {
        self.port.write32(cb!(bank, resume), action.value());
    }

    /// The global fault sGFSR records, if any (unmatched or conflicting streams).
    pub fn global_fault(&self) -> Option<GlobalFault> {
        let gfsr = self.port.read32(GFSR);
        if gfsr == 0 {
            return None;
        }
        let (s0, s1, far) = (self.port.read32(GFSYNR0), self.port.read32(GFSYNR1), self.port.read64(GFAR));
        GlobalFault::decode(gfsr, s0, s1, far)
    }

    /// Clears the record of `fault`.
    pub fn clear_global_fault(&mut self, fault: &GlobalFault) {
        self.port.write32(GFSR, fault.clear_value());
    }
}

/// What one look at every attached bank finds ([`Smmu500::scan`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scan {
    /// The first attached bank that records a fault: its record.
    Fault(ContextFault),
    /// No bank records one.
    Quiet {
        /// Bit `i` set: bank `i` holds a stalled transaction with nothing recorded
        /// ([`Smmu500::unrecorded_stalls`]).
        unrecorded: u16,
    },
}

impl Scan {
    /// The banks a quiet look found holding an unrecorded stall.
    pub fn unrecorded(unrecorded: u16) -> impl Iterator<Item = ContextBank> {
        ContextBank::all().filter(move |b| unrecorded & 1 << b.index() != 0)
    }
}

/// Whether FSR value `fsr` shows a stalled transaction (SS) with no fault recorded (MULTI
/// alone, or nothing): see [`Smmu500::unrecorded_stalls`].
fn is_unrecorded_stall(fsr: u32) -> bool {
    let f = LocalRegisterCopy::<u32, FSR::Register>::new(fsr);
    f.is_set(FSR::SS) && fsr & FSR_RECORD & !FSR::MULTI::SET.value == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::smmu500::config::FaultMode;
    use std::cell::RefCell;
    use std::vec::Vec;

    /// Registers as plain memory, every write logged: shows the sequences the driver issues.
    /// Its semantics (W1C, sync, translation) are the `qemu-virt` model's; these tests only pin
    /// down orders and values.
    struct Recorder {
        regs: RefCell<std::collections::HashMap<usize, u64>>,
        writes: Vec<(usize, u64)>,
        reads: RefCell<Vec<usize>>,
    }

    impl Recorder {
        fn new() -> Self {
            let mut regs = std::collections::HashMap::new();
            regs.insert(0x20, 0xfc01_3e30); // ZynqMP IDR0
            regs.insert(0x24, 0x3000_0f10); // IDR1
            regs.insert(0x28, 0x5555); // IDR2
            Self { regs: RefCell::new(regs), writes: Vec::new(), reads: RefCell::default() }
        }
    }

    impl RegisterPort for Recorder {
        fn read32(&self, reg: Reg) -> u32 {
            self.read64(reg) as u32
        }
        fn write32(&mut self, reg: Reg, value: u32) {
            self.write64(reg, u64::from(value));
        }
        fn read64(&self, reg: Reg) -> u64 {
            self.reads.borrow_mut().push(reg.offset());
            self.regs.borrow().get(&reg.offset()).copied().unwrap_or(0)
        }
        fn write64(&mut self, reg: Reg, value: u64) {
            self.regs.borrow_mut().insert(reg.offset(), value);
            self.writes.push((reg.offset(), value));
        }
    }

    const KERNEL_TCR: u64 = 25 | 0b01 << 8 | 0b01 << 10 | 0b11 << 12 | 0b010 << 32;

    fn bank(n: u8) -> ContextBank {
        ContextBank::new(n).unwrap()
    }

    #[test]
    fn probe_reads_the_zynqmp_geometry_and_refuses_other_layouts() {
        let smmu = Smmu500::with_port(Recorder::new());
        let g = smmu.probe().unwrap();
        assert_eq!((g.context_banks, g.stream_match_groups, g.stream_id_bits), (16, 48, 15));
        assert_eq!((g.input_bits, g.output_bits, g.coherent_walk), (49, 48, false));
        for (offset, value, missing) in [
            (0x20, 0xbc01_3e30, Missing::Stage1),
            (0x20, 0xf401_3e30, Missing::StreamMatching),
            (0x20, 0xfc01_3e0f, Missing::StreamMatching),
            (0x24, 0xb000_0f10, Missing::RegisterLayout),
            (0x24, 0x2000_0f10, Missing::RegisterLayout),
            (0x24, 0x3000_0f08, Missing::ContextBanks),
            (0x28, 0x4555, Missing::Granule4K),
        ] {
            let smmu = Smmu500::with_port(Recorder::new());
            smmu.port.regs.borrow_mut().insert(offset, value);
            assert_eq!(smmu.probe(), Err(SmmuError::Unsupported(missing)), "{offset:#x} = {value:#x}");
        }
    }

    #[test]
    fn reset_enables_the_smmu_last() {
        let mut smmu = Smmu500::with_port(Recorder::new());
        smmu.reset().unwrap();
        let w = &smmu.port.writes;
        assert_eq!(w.last(), Some(&(0x000, u64::from(scr0_enabled()))));
        assert_eq!(w.iter().filter(|(o, _)| (0x800..0x8c0).contains(o)).count(), 48, "every SMR");
        assert!(w.iter().filter(|(o, _)| (0xc00..0xcc0).contains(o)).all(|&(_, v)| v == 2 << 16), "S2CRs fault");
        let sctlrs: Vec<_> = w.iter().filter(|(o, _)| *o >= 0x10000 && o % 0x1000 == 0).collect();
        assert_eq!(sctlrs.len(), 16);
        assert!(sctlrs.iter().all(|(_, v)| *v == 0));
        let tlbi = w.iter().position(|&(o, _)| o == 0x68).unwrap();
        assert_eq!(w[tlbi + 1].0, 0x70, "TLBIALLNSNH then sTLBGSYNC");
    }

    #[test]
    fn one_look_reads_each_attached_banks_fsr_once_for_faults_and_unrecorded_stalls() {
        let mut smmu = Smmu500::with_port(Recorder::new());
        let regime = Regime { ttbr0: 0x4000_0000 | 7 << 48, tcr: KERNEL_TCR, mair: 0x44_ff_04 };
        for b in [3, 5, 7] {
            smmu.attach(bank(b), StreamId::pldma(b).unwrap(), &regime, FaultPolicy::STALL).unwrap();
        }
        let fsr = |b: u8| cb!(bank(b), fsr).offset();
        let set = |smmu: &Smmu500<Recorder>, b: u8, value: u32| {
            smmu.port.regs.borrow_mut().insert(fsr(b), u64::from(value));
        };
        // Plain memory keeps attach's write-1-to-clear of every record: clear it.
        for (b, value) in [(3, FSR::SS::SET.value), (5, 0), (7, 0), (1, FSR::SS::SET.value)] {
            set(&smmu, b, value);
        }
        smmu.port.reads.borrow_mut().clear();
        assert_eq!(smmu.scan(), Scan::Quiet { unrecorded: 1 << 3 }, "bank 1 is not attached");
        assert_eq!(*smmu.port.reads.borrow(), [fsr(3), fsr(5), fsr(7)], "one read of each attached bank");
        assert_eq!(smmu.unrecorded_stalls().collect::<Vec<_>>(), [bank(3)], "as the look of its own says");
        for (b, value) in [(7, (FSR::SS::SET + FSR::TF::SET).value), (5, (FSR::SS::SET + FSR::MULTI::SET).value)] {
            set(&smmu, b, value);
            let Scan::Fault(fault) = smmu.scan() else { panic!("bank {b} records a fault") };
            assert_eq!(Some(fault), smmu.next_fault(), "the first bank's, as next_fault's");
            assert_eq!(fault.bank, bank(b));
        }
    }

    #[test]
    fn attach_programs_the_bank_then_the_stream() {
        let mut smmu = Smmu500::with_port(Recorder::new());
        let regime = Regime { ttbr0: 0x4000_0000 | 7 << 48, tcr: KERNEL_TCR, mair: 0x44_ff_04 };
        smmu.attach(bank(7), StreamId::pldma(7).unwrap(), &regime, FaultPolicy::STALL).unwrap();
        let order: Vec<usize> = smmu.port.writes.iter().map(|(o, _)| *o).collect();
        let cb = 0x17000;
        let pos = |offset: usize| order.iter().rposition(|&o| o == offset).unwrap();
        let first = |offset: usize| order.iter().position(|&o| o == offset).unwrap();
        assert!(first(0x81c) < first(cb + 0x10), "stream cut off before the bank changes");
        assert_eq!(smmu.port.writes[first(0x81c)].1, 0);
        assert!(pos(cb + 0x30) < pos(cb + 0x20), "TCR before TTBR0");
        assert!(pos(cb + 0x618) < pos(cb + 0x7f0) && pos(cb + 0x7f0) < pos(cb), "TLBIALL, sync, then SCTLR");
        assert!(pos(cb) < pos(0xc1c) && pos(0xc1c) < pos(0x81c), "bank, S2CR, then SMR");
        let regs = smmu.port.regs.borrow();
        assert_eq!(regs[&(cb + 0x20)], 0x0007_0000_4000_0000);
        assert_eq!(regs[&0x81c], 1 << 31 | 0x0e87);
        assert_eq!(regs[&0xc1c], 2 << 24 | 7);
        assert_eq!(regs[&(cb)] & (1 << 7 | 1), 1 << 7 | 1, "enabled, stall mode");
        drop(regs);
        assert_eq!((smmu.asid(bank(7)), smmu.stream(bank(7))), (Some(7), StreamId::pldma(7).ok()));
    }

    #[test]
    fn bad_input_is_refused_before_any_write() {
        let mut smmu = Smmu500::with_port(Recorder::new());
        let regime = Regime { ttbr0: 0x1000, tcr: KERNEL_TCR, mair: 0 };
        let stream = StreamId::new(0x123).unwrap();
        smmu.attach(bank(1), stream, &regime, FaultPolicy::TERMINATE).unwrap();
        let before = smmu.port.writes.len();
        assert_eq!(
            smmu.attach(bank(2), stream, &regime, FaultPolicy::TERMINATE),
            Err(SmmuError::StreamInUse { stream, bank: bank(1) })
        );
        let bad = Regime { ttbr0: 0x1234, ..regime };
        assert!(matches!(
            smmu.attach(bank(2), StreamId::new(1).unwrap(), &bad, FaultPolicy::TERMINATE),
            Err(SmmuError::Regime(_))
        ));
        assert_eq!(smmu.invalidate_page(bank(3), 0x1000), Err(SmmuError::BankNotConfigured(bank(3))));
        assert_eq!(smmu.invalidate_asid(bank(3)), Err(SmmuError::BankNotConfigured(bank(3))));
        assert_eq!(smmu.port.writes.len(), before);
        // Re-attaching the same bank to the same stream is a change of address space.
        smmu.attach(bank(1), stream, &regime, FaultPolicy { mode: FaultMode::Stall, hit_under_fault: false }).unwrap();
    }

    #[test]
    fn tlbiva_carries_the_page_number_and_asid_and_many_pages_become_one_asid() {
        let mut smmu = Smmu500::with_port(Recorder::new());
        let regime = Regime { ttbr0: 0x1000 | 9 << 48, tcr: KERNEL_TCR, mair: 0 };
        smmu.attach(bank(0), StreamId::pldma(0).unwrap(), &regime, FaultPolicy::TERMINATE).unwrap();
        smmu.port.writes.clear();
        smmu.invalidate_pages(bank(0), 0x40_2345, 2).unwrap();
        assert_eq!(
            smmu.port.writes,
            [(0x10600, 9 << 48 | 0x402), (0x10600, 9 << 48 | 0x403), (0x107f0, 0)],
            "TLBIVA x2, one TLBSYNC"
        );
        smmu.port.writes.clear();
        smmu.invalidate_pages(bank(0), 0, PAGES_BEFORE_ASID_INVALIDATION + 1).unwrap();
        assert_eq!(smmu.port.writes, [(0x10610, 9), (0x107f0, 0)]);
        smmu.port.writes.clear();
        smmu.invalidate_pages(bank(0), 0, 0).unwrap();
        assert_eq!(smmu.port.writes, [(0x107f0, 0)], "nothing to invalidate, still ordered by a sync");
    }

    #[test]
    fn a_sync_that_never_completes_is_an_error() {
        let mut smmu = Smmu500::with_port(Recorder::new());
        smmu.port.regs.borrow_mut().insert(0x127f4, 1);
        assert_eq!(smmu.invalidate_bank(bank(2)), Err(SmmuError::SyncTimeout(Some(bank(2)))));
        smmu.port.regs.borrow_mut().insert(0x74, 1);
        assert_eq!(smmu.invalidate_all(), Err(SmmuError::SyncTimeout(None)));
        assert_eq!(smmu.reset(), Err(SmmuError::SyncTimeout(None)));
    }
}
