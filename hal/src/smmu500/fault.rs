//! Context and global faults, decoded from the raw registers (`docs/hw/smmu.md`, "Faults").

use super::config::ContextBank;
use super::regs::{FSR, FSYNR0, GFSR, GFSYNR0, GFSYNR1};
use tock_registers::LocalRegisterCopy;

/// Read or write, as FSYNR0.WNR / sGFSYNR0.WNR report it. For the PLDMA a read is the source
/// buffer of a transfer, a write its destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// A read (WNR = 0).
    Read,
    /// A write (WNR = 1).
    Write,
}

/// The fault FSR records, in the architecture's priority order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// FSR.TF: no valid descriptor (the page is not mapped).
    Translation,
    /// FSR.ASF: a table or output address beyond TCR2.PASIZE.
    AddressSize,
    /// FSR.AFF: the descriptor's access flag is clear.
    AccessFlag,
    /// FSR.PF: the page does not allow this access to EL0 (or is read-only).
    Permission,
    /// FSR.EF: a table walk read failed.
    External,
    /// FSR.TLBMCF / TLBLKF / UUT: an SMMU-internal fault the kernel can only report.
    Other,
    /// Only FSR.MULTI: faults happened while the record was being cleared; none was recorded.
    Unrecorded,
}

/// FSR bits that record a fault (everything but SS); writing them back clears them.
pub const FSR_RECORD: u32 = FSR::TF::SET.value
    | FSR::AFF::SET.value
    | FSR::PF::SET.value
    | FSR::EF::SET.value
    | FSR::TLBMCF::SET.value
    | FSR::TLBLKF::SET.value
    | FSR::ASF::SET.value
    | FSR::UUT::SET.value
    | FSR::MULTI::SET.value;

impl FaultKind {
    /// The fault an FSR value records, if any.
    pub fn from_fsr(fsr: u32) -> Option<Self> {
        let f = LocalRegisterCopy::<u32, FSR::Register>::new(fsr);
        Some(if f.is_set(FSR::TF) {
            FaultKind::Translation
        } else if f.is_set(FSR::ASF) {
            FaultKind::AddressSize
        } else if f.is_set(FSR::AFF) {
            FaultKind::AccessFlag
        } else if f.is_set(FSR::PF) {
            FaultKind::Permission
        } else if f.is_set(FSR::EF) {
            FaultKind::External
        } else if f.is_set(FSR::TLBMCF) || f.is_set(FSR::TLBLKF) || f.is_set(FSR::UUT) {
            FaultKind::Other
        } else if f.is_set(FSR::MULTI) {
            FaultKind::Unrecorded
        } else {
            return None;
        })
    }
}

/// A context fault, as the kernel's handler needs it (seed 002 §3.2.1: FSR, FAR, FSYNR0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContextFault {
    /// The bank, hence the protection domain.
    pub bank: ContextBank,
    /// What went wrong.
    pub kind: FaultKind,
    /// FAR: the input (virtual) address of the faulting access.
    pub address: u64,
    /// FSYNR0.WNR: source (read) or destination (write) of a transfer.
    pub access: Access,
    /// FSYNR0.PLVL: the table level where the walk stopped.
    pub level: u8,
    /// FSR.MULTI: more faults happened after this one and were not recorded.
    pub multiple: bool,
    /// FSR.SS: the transaction is stalled until [`Smmu500::resume`](super::Smmu500::resume).
    pub stalled: bool,
    /// CBFRSYNRA: the stream of the faulting transaction.
    pub stream: u16,
    /// The FSR bits to write back to clear exactly this record.
    pub(crate) fsr: u32,
}

impl ContextFault {
    /// Whether FAR is this fault's address: not for MULTI alone, whose FAR is an older
    /// fault's (the kernel answers such a stall with RESUME retry, never from FAR).
    pub fn has_address(&self) -> bool {
        self.kind != FaultKind::Unrecorded
    }

    /// Decodes bank `bank`'s fault registers; `None` when FSR records nothing (a bank that is
    /// only stalled, its record already cleared, is not a new fault).
    pub fn decode(bank: ContextBank, fsr: u32, far: u64, fsynr0: u32, stream: u32) -> Option<Self> {
        let kind = FaultKind::from_fsr(fsr & FSR_RECORD)?;
        let f = LocalRegisterCopy::<u32, FSR::Register>::new(fsr);
        let s = LocalRegisterCopy::<u32, FSYNR0::Register>::new(fsynr0);
        Some(Self {
            bank,
            kind,
            address: far,
            access: if s.is_set(FSYNR0::WNR) { Access::Write } else { Access::Read },
            level: s.read(FSYNR0::PLVL) as u8,
            multiple: f.is_set(FSR::MULTI),
            stalled: f.is_set(FSR::SS),
            stream: stream as u16,
            fsr: fsr & FSR_RECORD,
        })
    }

    /// The FSR value that clears this record (write 1 to clear).
    pub fn clear_value(&self) -> u32 {
        self.fsr
    }
}

/// A global fault: a transaction that no context bank could take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GlobalFault {
    /// Why.
    pub kind: GlobalFaultKind,
    /// sGFSYNR1: the offending stream.
    pub stream: u16,
    /// sGFAR: its address.
    pub address: u64,
    /// sGFSYNR0.WNR.
    pub access: Access,
    /// sGFSR.MULTI.
    pub multiple: bool,
    pub(crate) gfsr: u32,
}

/// The global fault sGFSR records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GlobalFaultKind {
    /// USF: no SMR matched the stream.
    UnidentifiedStream,
    /// SMCF: several SMRs matched it.
    StreamMatchConflict,
    /// ICF / UCBF: its S2CR faults or names no context bank.
    InvalidContext,
    /// Any other sGFSR bit.
    Other,
}

impl GlobalFault {
    /// Decodes sGFSR and its syndromes; `None` when sGFSR is clear.
    pub fn decode(gfsr: u32, gfsynr0: u32, gfsynr1: u32, gfar: u64) -> Option<Self> {
        if gfsr == 0 {
            return None;
        }
        let g = LocalRegisterCopy::<u32, GFSR::Register>::new(gfsr);
        let kind = if g.is_set(GFSR::USF) {
            GlobalFaultKind::UnidentifiedStream
        } else if g.is_set(GFSR::SMCF) {
            GlobalFaultKind::StreamMatchConflict
        } else if g.is_set(GFSR::ICF) || g.is_set(GFSR::UCBF) {
            GlobalFaultKind::InvalidContext
        } else {
            GlobalFaultKind::Other
        };
        let s0 = LocalRegisterCopy::<u32, GFSYNR0::Register>::new(gfsynr0);
        Some(Self {
            kind,
            stream: LocalRegisterCopy::<u32, GFSYNR1::Register>::new(gfsynr1).read(GFSYNR1::STREAMID) as u16,
            address: gfar,
            access: if s0.is_set(GFSYNR0::WNR) { Access::Write } else { Access::Read },
            multiple: g.is_set(GFSR::MULTI),
            gfsr,
        })
    }

    /// The sGFSR value that clears this record.
    pub fn clear_value(&self) -> u32 {
        self.gfsr
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bank(n: u8) -> ContextBank {
        ContextBank::new(n).unwrap()
    }

    #[test]
    fn decodes_a_destination_translation_fault() {
        // TF, WNR, level 3, stream 0x0e82.
        let f = ContextFault::decode(bank(2), 1 << 1, 0x40_1234, 1 << 4 | 3, 0x0e82).unwrap();
        assert_eq!(f.kind, FaultKind::Translation);
        assert_eq!((f.address, f.access, f.level, f.stream), (0x40_1234, Access::Write, 3, 0x0e82));
        assert!(!f.multiple && !f.stalled);
        assert_eq!(f.clear_value(), 1 << 1);
    }

    #[test]
    fn multi_and_stall_are_reported_and_ss_is_not_cleared_by_the_record() {
        let fsr = 1 << 31 | 1 << 30 | 1 << 3;
        let f = ContextFault::decode(bank(0), fsr, 0x1000, 0, 0).unwrap();
        assert_eq!((f.kind, f.access, f.multiple, f.stalled), (FaultKind::Permission, Access::Read, true, true));
        assert_eq!(f.clear_value(), 1 << 31 | 1 << 3, "SS goes with RESUME, not with the record");
        assert_eq!(ContextFault::decode(bank(0), 1 << 30, 0, 0, 0), None, "stalled, record cleared");
        assert_eq!(ContextFault::decode(bank(0), 0, 0, 0, 0), None);
        assert_eq!(ContextFault::decode(bank(0), 1 << 31, 0, 0, 0).map(|f| f.kind), Some(FaultKind::Unrecorded));
    }

    #[test]
    fn fault_kinds_follow_the_priority_order() {
        assert_eq!(FaultKind::from_fsr(1 << 1 | 1 << 3), Some(FaultKind::Translation));
        assert_eq!(FaultKind::from_fsr(1 << 7 | 1 << 2), Some(FaultKind::AddressSize));
        assert_eq!(FaultKind::from_fsr(1 << 2 | 1 << 3), Some(FaultKind::AccessFlag));
        assert_eq!(FaultKind::from_fsr(1 << 4), Some(FaultKind::External));
        for other in [5, 6, 8] {
            assert_eq!(FaultKind::from_fsr(1 << other), Some(FaultKind::Other));
        }
        assert_eq!(FaultKind::from_fsr(1 << 30), None, "SS alone records nothing");
        assert_eq!(FaultKind::from_fsr(0x3000_0000 & !(1 << 30)), None, "reserved bits");
    }

    #[test]
    fn decodes_global_faults() {
        assert_eq!(GlobalFault::decode(0, 0, 0, 0), None);
        let g = GlobalFault::decode(1 << 1, 1 << 1, 0x0e85, 0x2000).unwrap();
        assert_eq!(
            (g.kind, g.stream, g.address, g.access, g.multiple),
            (GlobalFaultKind::UnidentifiedStream, 0x0e85, 0x2000, Access::Write, false)
        );
        assert_eq!(g.clear_value(), 1 << 1);
        assert_eq!(
            GlobalFault::decode(1 << 2 | 1 << 31, 0, 0, 0).map(|g| (g.kind, g.multiple)),
            Some((GlobalFaultKind::StreamMatchConflict, true))
        );
        assert_eq!(GlobalFault::decode(1 << 3, 0, 0, 0).map(|g| g.kind), Some(GlobalFaultKind::InvalidContext));
        assert_eq!(GlobalFault::decode(1 << 0, 0, 0, 0).map(|g| g.kind), Some(GlobalFaultKind::InvalidContext));
        assert_eq!(GlobalFault::decode(1 << 8, 0, 0, 0).map(|g| g.kind), Some(GlobalFaultKind::Other));
    }
}
