//! A receiver fault FIFO entry (seed 002 Tab 3.2; `docs/hw/pldma.md`, "Fault entry"): two
//! 64-bit words, each with a VALID bit.

use super::codes::FaultCode;
use super::regs::{FAULT_HI, FAULT_LO};
use super::{PAGE_BYTES, Pd, SEQ_MASK, TID_LIMIT};
use tock_registers::LocalRegisterCopy;

/// A decoded fault FIFO entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FaultEntry {
    /// What kind of access was refused, and how.
    pub code: FaultCode,
    /// The PD of the refused access (its SMMU stream: `stream_id`).
    pub pd: Pd,
    /// The node whose R5 owns the transaction: where the RAPF goes.
    pub node: u16,
    /// The transaction id (14 bits).
    pub tid: u16,
    /// The sequence number of the refused attempt (14 bits).
    pub seq: u16,
    /// The faulting VA >> 12.
    pub page: u64,
}

/// Why a pair of FIFO words is not an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultEntryError {
    /// One word says VALID and the other does not (a torn read).
    HalfValid,
    /// `CODE` is not a fault code.
    BadCode(u8),
    /// `PD` is not below 16.
    BadPd(u16),
    /// A bit outside every field is set.
    ReservedNotZero,
}

const LO_FIELDS: u64 = (FAULT_LO::VALID.mask << FAULT_LO::VALID.shift)
    | (FAULT_LO::CODE.mask << FAULT_LO::CODE.shift)
    | (FAULT_LO::PD.mask << FAULT_LO::PD.shift)
    | (FAULT_LO::NODE.mask << FAULT_LO::NODE.shift)
    | (FAULT_LO::TID.mask << FAULT_LO::TID.shift);
const HI_FIELDS: u64 = (FAULT_HI::VALID.mask << FAULT_HI::VALID.shift)
    | (FAULT_HI::SEQ.mask << FAULT_HI::SEQ.shift)
    | (FAULT_HI::PAGE.mask << FAULT_HI::PAGE.shift);

impl FaultEntry {
    /// The entry for an access at `va`.
    pub fn new(code: FaultCode, pd: Pd, node: u16, tid: u16, seq: u16, va: u64) -> Self {
        Self { code, pd, node, tid: tid % TID_LIMIT, seq: seq & SEQ_MASK, page: va / PAGE_BYTES }
    }

    /// The first address of the faulting page.
    pub const fn va(&self) -> u64 {
        self.page * PAGE_BYTES
    }

    /// The first byte of the faulting page.
    pub fn page_va(&self) -> u64 {
        self.page * PAGE_BYTES
    }

    /// `[fifo_lo, fifo_hi]`.
    pub fn encode(&self) -> [u64; 2] {
        let lo = FAULT_LO::VALID::SET
            + FAULT_LO::CODE.val(u64::from(self.code.raw()))
            + FAULT_LO::PD.val(u64::from(self.pd.raw()))
            + FAULT_LO::NODE.val(u64::from(self.node))
            + FAULT_LO::TID.val(u64::from(self.tid));
        let hi = FAULT_HI::VALID::SET + FAULT_HI::SEQ.val(u64::from(self.seq)) + FAULT_HI::PAGE.val(self.page);
        [lo.value, hi.value]
    }

    /// `Ok(None)` for the empty FIFO's words (VALID clear in both).
    pub fn decode(lo: u64, hi: u64) -> Result<Option<Self>, FaultEntryError> {
        let l = LocalRegisterCopy::<u64, FAULT_LO::Register>::new(lo);
        let h = LocalRegisterCopy::<u64, FAULT_HI::Register>::new(hi);
        match (l.is_set(FAULT_LO::VALID), h.is_set(FAULT_HI::VALID)) {
            (false, false) => return Ok(None),
            (true, true) => {}
            _ => return Err(FaultEntryError::HalfValid),
        }
        if lo & !LO_FIELDS != 0 || hi & !HI_FIELDS != 0 {
            return Err(FaultEntryError::ReservedNotZero);
        }
        let raw_code = l.read(FAULT_LO::CODE) as u8;
        let raw_pd = l.read(FAULT_LO::PD) as u16;
        Ok(Some(Self {
            code: FaultCode::from_raw(raw_code).ok_or(FaultEntryError::BadCode(raw_code))?,
            pd: Pd::new(raw_pd).ok_or(FaultEntryError::BadPd(raw_pd))?,
            node: l.read(FAULT_LO::NODE) as u16,
            tid: l.read(FAULT_LO::TID) as u16,
            seq: h.read(FAULT_HI::SEQ) as u16,
            page: h.read(FAULT_HI::PAGE),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_read_well_in_hex() {
        let e = FaultEntry::new(
            FaultCode::DestinationFault,
            Pd::new(0xa).unwrap(),
            0x1234,
            0x3fff,
            0x2abc,
            0x7f12_3456_7fff,
        );
        let [lo, hi] = e.encode();
        assert_eq!(lo, 0x3fff_1234_000a_0011);
        assert_eq!(hi, (0x0007_f123_4567_u64 << 16) | (0x2abc << 2) | 1);
        assert_eq!(FaultEntry::decode(lo, hi), Ok(Some(e)));
        assert_eq!(e.page_va(), 0x7f12_3456_7000);
    }

    #[test]
    fn empty_torn_and_corrupt_words() {
        assert_eq!(FaultEntry::decode(0, 0), Ok(None));
        let [lo, hi] = FaultEntry::new(FaultCode::SourceFault, Pd::new(1).unwrap(), 0, 0, 0, 0).encode();
        assert_eq!(FaultEntry::decode(lo, 0), Err(FaultEntryError::HalfValid));
        assert_eq!(FaultEntry::decode(0, hi), Err(FaultEntryError::HalfValid));
        assert_eq!(FaultEntry::decode(lo | 1 << 2, hi), Err(FaultEntryError::ReservedNotZero));
        assert_eq!(FaultEntry::decode(lo & !0xf0, hi), Err(FaultEntryError::BadCode(0)));
        assert_eq!(FaultEntry::decode(lo | 0x10 << 16, hi), Err(FaultEntryError::BadPd(0x11)));
    }
}
