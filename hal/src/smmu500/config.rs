//! The register values of a configured SMMU, computed without touching it: context bank and
//! stream indices, the stream mapping of a protection domain, and a context bank that shares a
//! process's stage-1 regime (`docs/hw/smmu.md`, "Programming a context bank").

use super::error::{RegimeError, SmmuError};
use super::regs::{CBA2R, CBAR, CONTEXT_BANKS, RESUME, S2CR, SCR0, SCTLR, SMR, STREAM_MATCH_GROUPS, TCR, TCR2, TTBR};
use tock_registers::LocalRegisterCopy;

/// Protection domains a node can have: one context bank each (seed 002 §1.3.2).
pub const PROTECTION_DOMAINS: usize = CONTEXT_BANKS;

/// Stream ID of the PLDMA's transactions for protection domain 0: TBU 3 (S_AXI_HP0_FPD, seed 002
/// Table A.2), master ID `1010` (S_AXI_HP0_FPD, UG1085 table 16-13), AXI ID 0. The engine puts
/// the PD in AXI ID[3:0], so PD n is stream `PLDMA_STREAM_BASE + n`.
pub const PLDMA_STREAM_BASE: u16 = 3 << 10 | 0b1010 << 6;

/// Stream IDs are 15 bits (IDR0.NUMSIDB = 15).
pub const STREAM_ID_BITS: u32 = 15;

const _: () = assert!(STREAM_MATCH_GROUPS >= CONTEXT_BANKS, "one SMR group per bank");

/// A context bank, `0..CONTEXT_BANKS`: checked once, so every register offset built from it is
/// inside the SMMU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ContextBank(u8);

impl ContextBank {
    /// Bank `index`, if the SMMU has it.
    pub const fn new(index: u8) -> Result<Self, SmmuError> {
        if (index as usize) < CONTEXT_BANKS { Ok(Self(index)) } else { Err(SmmuError::NoSuchBank(index)) }
    }

    /// The bank of protection domain `pd` (PD = context bank, `docs/hw/smmu.md`).
    pub const fn of_domain(pd: u8) -> Result<Self, SmmuError> {
        if (pd as usize) < PROTECTION_DOMAINS { Ok(Self(pd)) } else { Err(SmmuError::NoSuchDomain(pd)) }
    }

    /// The bank's index.
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    /// Every bank, in order.
    pub fn all() -> impl Iterator<Item = ContextBank> {
        (0..CONTEXT_BANKS as u8).map(ContextBank)
    }
}

/// A stream ID: TBU[14:10], master ID[9:6], AXI ID[5:0] (UG1085 table 16-13).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StreamId(u16);

impl StreamId {
    /// `id`, if it fits the 15 bits.
    pub const fn new(id: u16) -> Result<Self, SmmuError> {
        if id >> STREAM_ID_BITS == 0 { Ok(Self(id)) } else { Err(SmmuError::StreamIdTooWide(id)) }
    }

    /// The stream the PLDMA uses for protection domain `pd`.
    pub const fn pldma(pd: u8) -> Result<Self, SmmuError> {
        if (pd as usize) < PROTECTION_DOMAINS {
            Ok(Self(PLDMA_STREAM_BASE + pd as u16))
        } else {
            Err(SmmuError::NoSuchDomain(pd))
        }
    }

    /// The raw 15-bit value.
    pub const fn get(self) -> u16 {
        self.0
    }
}

/// SMR and S2CR values that send exactly `stream` to `bank`, translated as unprivileged
/// accesses (the engine acts for an EL0 process, so EL0 permissions apply).
pub fn stream_mapping(bank: ContextBank, stream: StreamId) -> (u32, u32) {
    let smr = SMR::VALID::SET + SMR::MASK.val(0) + SMR::ID.val(u32::from(stream.get()));
    let s2cr = S2CR::TYPE::Translate + S2CR::CBNDX.val(bank.0 as u32) + S2CR::PRIVCFG::Unprivileged;
    (smr.value, s2cr.value)
}

/// S2CR of a group that maps nothing: its streams fault instead of reaching memory.
pub fn s2cr_fault() -> u32 {
    S2CR::TYPE::Fault.value
}

/// sCR0 once the SMMU is in use: clients translated, unmatched streams fault, global faults
/// reported and interrupting, CPU TLB broadcasts ignored (the kernel invalidates explicitly).
pub fn scr0_enabled() -> u32 {
    (SCR0::CLIENTPD::CLEAR
        + SCR0::GFRE::SET
        + SCR0::GFIE::SET
        + SCR0::GCFGFRE::SET
        + SCR0::GCFGFIE::SET
        + SCR0::USFCFG::SET
        + SCR0::VMIDPNE::SET
        + SCR0::PTM::SET)
        .value
}

/// What a context fault does to the transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultMode {
    /// SCTLR.CFCFG = 0: the transaction is aborted (the PLDMA gets SLVERR and NACKs).
    Terminate,
    /// SCTLR.CFCFG = 1: the transaction is held until the kernel writes RESUME.
    Stall,
}

/// How a context bank reports and handles faults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultPolicy {
    /// Terminate or stall.
    pub mode: FaultMode,
    /// SCTLR.HUPCF: translations that hit keep going while a fault is pending. Without it, every
    /// later transaction of the bank is terminated (terminate mode) or held (stall mode).
    pub hit_under_fault: bool,
}

impl FaultPolicy {
    /// The seed's configuration (seed 002 §3.2.1): terminate, hit under fault.
    pub const TERMINATE: Self = Self { mode: FaultMode::Terminate, hit_under_fault: true };
    /// Stall and resume, hit under fault.
    pub const STALL: Self = Self { mode: FaultMode::Stall, hit_under_fault: true };
}

/// What RESUME does with the bank's stalled transactions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resume {
    /// Translate them again (the kernel has mapped the page).
    Retry,
    /// Abort them (the address is invalid).
    Terminate,
}

impl Resume {
    /// The RESUME register value.
    pub fn value(self) -> u32 {
        match self {
            Resume::Retry => RESUME::TNR::Retry.value,
            Resume::Terminate => RESUME::TNR::Terminate.value,
        }
    }
}

/// A process's stage-1 translation regime, as the CPU runs it: its TTBR0_EL1 (root table and
/// ASID), and the kernel's TCR_EL1 and MAIR_EL1. A context bank built from it walks the very
/// same tables with the same attributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Regime {
    /// TTBR0_EL1 of the process: root table PA in [47:1], ASID in [63:48].
    pub ttbr0: u64,
    /// TCR_EL1; only the TTBR0 half, IPS and AS are used.
    pub tcr: u64,
    /// MAIR_EL1.
    pub mair: u64,
}

// TCR_EL1 fields outside the 32 bits the SMMU's TCR mirrors (ARM DDI 0487, D13.2.131).
const TCR_EL1_IPS_SHIFT: u32 = 32;
const TCR_EL1_AS: u64 = 1 << 36;
/// TTBR0_EL1.CnP: not an address bit.
const TTBR_CNP: u64 = 1;

/// The physical address width TCR.IPS / TCR2.PASIZE encodes.
pub fn pa_bits(ips: u8) -> Option<u32> {
    Some(match ips {
        0 => 32,
        1 => 36,
        2 => 40,
        3 => 42,
        4 => 44,
        5 => 48,
        _ => return None,
    })
}

/// Every register value of a context bank that shares a process's regime.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BankRegisters {
    /// GR1 CBA2R: AArch64 regime.
    pub cba2r: u32,
    /// GR1 CBAR: stage 1 with stage 2 bypassed; VMID = bank index.
    pub cbar: u32,
    /// TCR2: output size and ASID width of the CPU's regime.
    pub tcr2: u32,
    /// TCR: the TTBR0 half of TCR_EL1; TTBR1 walks disabled.
    pub tcr: u32,
    /// TTBR0: root table and ASID.
    pub ttbr0: u64,
    /// MAIR_EL1[31:0].
    pub mair0: u32,
    /// MAIR_EL1[63:32].
    pub mair1: u32,
    /// SCTLR, written last: it enables the bank.
    pub sctlr: u32,
}

impl BankRegisters {
    /// The values for `bank` running `regime` with `faults`, or why the regime cannot be shared.
    pub fn new(bank: ContextBank, regime: &Regime, faults: FaultPolicy) -> Result<Self, SmmuError> {
        let cpu_tcr = LocalRegisterCopy::<u32, TCR::Register>::new(regime.tcr as u32);
        let granule = cpu_tcr.read(TCR::TG0) as u8;
        if granule != TCR::TG0::Granule4K.value as u8 {
            return Err(RegimeError::Granule(granule).into());
        }
        let t0sz = cpu_tcr.read(TCR::T0SZ) as u8;
        if !(16..=39).contains(&t0sz) {
            return Err(RegimeError::InputSize(t0sz).into());
        }
        let ips = ((regime.tcr >> TCR_EL1_IPS_SHIFT) & 0b111) as u8;
        let pa = pa_bits(ips).ok_or(RegimeError::OutputSize(ips))?;
        let ttbr = LocalRegisterCopy::<u64, TTBR::Register>::new(regime.ttbr0);
        let root = ttbr.read(TTBR::BADDR) & !TTBR_CNP;
        if !root.is_multiple_of(0x1000) || root >> pa != 0 {
            return Err(RegimeError::TableAddress(root).into());
        }
        let wide_asids = regime.tcr & TCR_EL1_AS != 0;

        let tcr = TCR::T0SZ.val(u32::from(t0sz))
            + TCR::IRGN0.val(cpu_tcr.read(TCR::IRGN0))
            + TCR::ORGN0.val(cpu_tcr.read(TCR::ORGN0))
            + TCR::SH0.val(cpu_tcr.read(TCR::SH0))
            + TCR::TG0::Granule4K
            + TCR::EPD1::SET;
        let tcr2 = TCR2::PASIZE.val(u32::from(ips)) + TCR2::AS.val(u32::from(wide_asids)) + TCR2::SEP::Upstream;
        let cbar = CBAR::TYPE::S1TranslateS2Bypass + CBAR::VMID.val(bank.0 as u32);
        let mut sctlr = SCTLR::M::SET
            + SCTLR::AFE::SET
            + SCTLR::CFRE::SET
            + SCTLR::CFIE::SET
            + SCTLR::ASIDPNE::SET
            + SCTLR::HUPCF.val(u32::from(faults.hit_under_fault));
        sctlr += match faults.mode {
            FaultMode::Terminate => SCTLR::CFCFG::Terminate,
            FaultMode::Stall => SCTLR::CFCFG::Stall,
        };
        Ok(Self {
            cba2r: CBA2R::VA64::SET.value,
            cbar: cbar.value,
            tcr2: tcr2.value,
            tcr: tcr.value,
            ttbr0: (TTBR::BADDR.val(root) + TTBR::ASID.val(ttbr.read(TTBR::ASID))).value,
            mair0: regime.mair as u32,
            mair1: (regime.mair >> 32) as u32,
            sctlr: sctlr.value,
        })
    }

    /// The ASID the bank's TLB entries carry (TCR2.AS = 0 keeps only its low 8 bits).
    pub fn asid(&self) -> u16 {
        let asid = LocalRegisterCopy::<u64, TTBR::Register>::new(self.ttbr0).read(TTBR::ASID) as u16;
        if LocalRegisterCopy::<u32, TCR2::Register>::new(self.tcr2).is_set(TCR2::AS) { asid } else { asid & 0xff }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel's regime (`boot::a53::BOOT_TCR_EL1`, `MAIR_EL1`): 39-bit VA, 4 KiB granule,
    /// inner-shareable write-back walks, 40-bit PA, 8-bit ASIDs. Written out here so that a
    /// change there is a visible decision here.
    const KERNEL_TCR: u64 = 25 | 0b01 << 8 | 0b01 << 10 | 0b11 << 12 | 25 << 16 | 0b10 << 30 | 0b010 << 32;
    const KERNEL_MAIR: u64 = 0x44_ff_04;

    fn regime(root: u64, asid: u16) -> Regime {
        Regime { ttbr0: root | u64::from(asid) << 48, tcr: KERNEL_TCR, mair: KERNEL_MAIR }
    }

    #[test]
    fn a_bank_mirrors_the_kernel_regime() {
        let bank = ContextBank::new(5).unwrap();
        let r = BankRegisters::new(bank, &regime(0x7654_3000, 6), FaultPolicy::TERMINATE).unwrap();
        // T0SZ 25, IRGN0/ORGN0 write-back, SH0 inner, TG0 4K, EPD1: nothing of TTBR1/T1SZ.
        assert_eq!(r.tcr, 25 | 1 << 8 | 1 << 10 | 3 << 12 | 1 << 23);
        assert_eq!(r.tcr2, 0b010 | 0b111 << 15, "40-bit PA, 8-bit ASIDs");
        assert_eq!(r.ttbr0, 0x0006_0000_7654_3000);
        assert_eq!(r.asid(), 6);
        assert_eq!((r.mair0, r.mair1), (0x44_ff_04, 0));
        assert_eq!(r.cbar, 1 << 16 | 5);
        assert_eq!(r.cba2r, 1);
        // M, AFE, CFRE, CFIE, HUPCF, ASIDPNE; CFCFG = 0.
        assert_eq!(r.sctlr, 1 | 1 << 2 | 1 << 5 | 1 << 6 | 1 << 8 | 1 << 12);
        let stall = FaultPolicy { mode: FaultMode::Stall, hit_under_fault: false };
        let s = BankRegisters::new(bank, &regime(0x7654_3000, 6), stall).unwrap();
        assert_eq!(s.sctlr, 1 | 1 << 2 | 1 << 5 | 1 << 6 | 1 << 7 | 1 << 12);
    }

    #[test]
    fn epd0_and_ttbr1_fields_of_the_cpu_do_not_leak_into_the_bank() {
        // The kernel sets EPD0 while no process runs; the bank always walks TTBR0.
        let mut r = regime(0x1000, 1);
        r.tcr |= 1 << 7 | 0b11 << 28 | 1 << 22;
        let b = BankRegisters::new(ContextBank::new(0).unwrap(), &r, FaultPolicy::STALL).unwrap();
        assert_eq!(b.tcr & (1 << 7 | 0b11 << 28 | 1 << 22), 0);
    }

    #[test]
    fn sixteen_bit_asids_follow_tcr_as() {
        let mut r = regime(0x1000, 0x1234);
        let bank = ContextBank::new(0).unwrap();
        assert_eq!(BankRegisters::new(bank, &r, FaultPolicy::TERMINATE).unwrap().asid(), 0x34);
        r.tcr |= TCR_EL1_AS;
        let b = BankRegisters::new(bank, &r, FaultPolicy::TERMINATE).unwrap();
        assert_eq!((b.asid(), b.tcr2 & 1 << 4), (0x1234, 1 << 4));
    }

    #[test]
    fn unusable_regimes_are_refused() {
        let bank = ContextBank::new(0).unwrap();
        let p = FaultPolicy::TERMINATE;
        let mut r = regime(0x1000, 1);
        r.tcr = (r.tcr & !(0b11 << 14)) | 0b01 << 14;
        assert_eq!(BankRegisters::new(bank, &r, p), Err(SmmuError::Regime(RegimeError::Granule(1))));
        let mut r = regime(0x1000, 1);
        r.tcr = (r.tcr & !0x3f) | 40;
        assert_eq!(BankRegisters::new(bank, &r, p), Err(SmmuError::Regime(RegimeError::InputSize(40))));
        let mut r = regime(0x1000, 1);
        r.tcr = (r.tcr & !0x3f) | 15;
        assert_eq!(BankRegisters::new(bank, &r, p), Err(SmmuError::Regime(RegimeError::InputSize(15))));
        let mut r = regime(0x1000, 1);
        r.tcr |= 0b110 << 32;
        assert_eq!(BankRegisters::new(bank, &r, p), Err(SmmuError::Regime(RegimeError::OutputSize(6))));
        let unaligned = regime(0x1800, 1);
        assert_eq!(BankRegisters::new(bank, &unaligned, p), Err(SmmuError::Regime(RegimeError::TableAddress(0x1800))));
        let too_high = regime(1 << 40, 1);
        assert_eq!(BankRegisters::new(bank, &too_high, p), Err(SmmuError::Regime(RegimeError::TableAddress(1 << 40))));
        assert!(BankRegisters::new(bank, &regime(((1 << 40) - 0x1000) | 1, 1), p).is_ok(), "CnP is not an address");
    }

    #[test]
    fn indices_and_streams_are_checked() {
        assert_eq!(ContextBank::new(15).map(ContextBank::index), Ok(15));
        assert_eq!(ContextBank::new(16), Err(SmmuError::NoSuchBank(16)));
        assert_eq!(ContextBank::of_domain(16), Err(SmmuError::NoSuchDomain(16)));
        assert_eq!(ContextBank::all().count(), 16);
        assert_eq!(StreamId::new(0x7fff).map(StreamId::get), Ok(0x7fff));
        assert_eq!(StreamId::new(0x8000), Err(SmmuError::StreamIdTooWide(0x8000)));
        assert_eq!(StreamId::pldma(0).map(StreamId::get), Ok(0x0e80));
        assert_eq!(StreamId::pldma(15).map(StreamId::get), Ok(0x0e8f));
        assert_eq!(StreamId::pldma(16), Err(SmmuError::NoSuchDomain(16)));
    }

    #[test]
    fn stream_mapping_values() {
        let (smr, s2cr) = stream_mapping(ContextBank::new(3).unwrap(), StreamId::pldma(3).unwrap());
        assert_eq!(smr, 1 << 31 | 0x0e83, "valid, exact match");
        assert_eq!(s2cr, 2 << 24 | 3, "translate, unprivileged, bank 3");
        assert_eq!(s2cr_fault(), 2 << 16);
        assert_eq!(scr0_enabled(), 0b11 << 1 | 0b11 << 4 | 0b111 << 10);
        assert_eq!((Resume::Retry.value(), Resume::Terminate.value()), (0, 1));
    }
}
