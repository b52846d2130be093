//! RAPF, "retransmit after page fault" (seed 002 §3.2.3.3): the value of a PD page's `rapf`
//! register, and the seed's 64-bit mailbox word for comparison with the GSAS notifications
//! (`docs/hw/pldma.md`, "RAPF and the seed's mailbox opcodes").

use super::codes::RapfAction;
use super::regs::RAPF;
use super::{SEQ_MASK, TID_LIMIT};
use tock_registers::LocalRegisterCopy;

/// What the kernel (or a process) asks of the owner's R5 for one faulted attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RapfRequest {
    /// The transaction's owner (the fault entry's node).
    pub node: u16,
    /// The transaction id (14 bits).
    pub tid: u16,
    /// The sequence number of the faulted attempt (14 bits).
    pub seq: u16,
    /// Retry, or Abort the transfer.
    pub action: RapfAction,
    /// Must equal the PD of the page it is written to, or the R5 ignores it.
    pub claimed_pd: u16,
}

/// Why a RAPF value does not encode or decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RapfError {
    /// `tid` does not fit in 14 bits.
    BadTid(u16),
    /// `seq` does not fit in 14 bits.
    BadSeq(u16),
    /// `ACTION` is 2 or 3.
    BadAction(u8),
    /// Bits [47:46] are not 0.
    ReservedNotZero,
}

/// RAPF bits [47:46] are not a field.
const RESERVED: u64 = 0b11 << 46;

impl RapfRequest {
    /// The `rapf` register value; refuses a tid or seq wider than 14 bits.
    pub fn encode(&self) -> Result<u64, RapfError> {
        if self.tid >= TID_LIMIT {
            return Err(RapfError::BadTid(self.tid));
        }
        if self.seq > SEQ_MASK {
            return Err(RapfError::BadSeq(self.seq));
        }
        Ok((RAPF::NODE.val(u64::from(self.node))
            + RAPF::TID.val(u64::from(self.tid))
            + RAPF::ACTION.val(u64::from(self.action.raw()))
            + RAPF::SEQ.val(u64::from(self.seq))
            + RAPF::CLAIMED_PD.val(u64::from(self.claimed_pd)))
        .value)
    }

    /// Reads a `rapf` register value; refuses nonzero bits [47:46] and actions 2 and 3.
    pub fn decode(raw: u64) -> Result<Self, RapfError> {
        if raw & RESERVED != 0 {
            return Err(RapfError::ReservedNotZero);
        }
        let r = LocalRegisterCopy::<u64, RAPF::Register>::new(raw);
        let action = r.read(RAPF::ACTION) as u8;
        Ok(Self {
            node: r.read(RAPF::NODE) as u16,
            tid: r.read(RAPF::TID) as u16,
            seq: r.read(RAPF::SEQ) as u16,
            action: RapfAction::from_raw(action).ok_or(RapfError::BadAction(action))?,
            claimed_pd: r.read(RAPF::CLAIMED_PD) as u16,
        })
    }
}

/// The seed's RAPF as one 64-bit mailbox value (word0 in bits [31:0], word1 in [63:32]):
/// word0 [1:0] opcode 2, [17:2] wired PDID, [31:18] tid; word1 [11:0] seq (12 bits), [27:12]
/// the user's PDID, [31:28] unused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeedRapfWord {
    /// The PD wired by the page written (word0 [17:2]).
    pub wired_pd: u16,
    /// The transaction id (word0 [31:18], 14 bits).
    pub tid: u16,
    /// 12 bits in the seed's format.
    pub seq: u16,
    /// The PD the user claims (word1 [27:12]).
    pub user_pd: u16,
}

/// The seed's mailbox opcode of a RAPF (bits [1:0]).
pub const SEED_RAPF_OPCODE: u64 = 2;

impl SeedRapfWord {
    /// The 64-bit mailbox value; `None` for a tid wider than 14 bits or a seq wider than 12.
    pub fn encode(&self) -> Option<u64> {
        if self.tid >= TID_LIMIT || self.seq >= 1 << 12 {
            return None;
        }
        let word0 = SEED_RAPF_OPCODE | u64::from(self.wired_pd) << 2 | u64::from(self.tid) << 18;
        let word1 = u64::from(self.seq) | u64::from(self.user_pd) << 12;
        Some(word0 | word1 << 32)
    }

    /// Refuses any other opcode and a nonzero top nibble (bits [63:60], where every GSAS
    /// notification has its nonzero opcode).
    pub fn decode(raw: u64) -> Option<Self> {
        if raw & 0b11 != SEED_RAPF_OPCODE || raw >> 60 != 0 {
            return None;
        }
        let (word0, word1) = (raw & 0xffff_ffff, raw >> 32);
        Some(Self {
            wired_pd: (word0 >> 2 & 0xffff) as u16,
            tid: (word0 >> 18 & 0x3fff) as u16,
            seq: (word1 & 0xfff) as u16,
            user_pd: (word1 >> 12 & 0xffff) as u16,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn register_values_round_trip() {
        let r = RapfRequest { node: 0xbeef, tid: 0x3fff, seq: 0x3ffe, action: RapfAction::Abort, claimed_pd: 15 };
        let raw = r.encode().unwrap();
        assert_eq!(raw, 0x000f_3ffe_7fff_beef);
        assert_eq!(RapfRequest::decode(raw), Ok(r));
        assert_eq!(RapfRequest::decode(raw | 1 << 46), Err(RapfError::ReservedNotZero));
        assert_eq!(RapfRequest::decode(raw | 1 << 31), Err(RapfError::BadAction(3)));
        assert_eq!(RapfRequest { tid: 0x4000, ..r }.encode(), Err(RapfError::BadTid(0x4000)));
        assert_eq!(RapfRequest { seq: 0x4000, ..r }.encode(), Err(RapfError::BadSeq(0x4000)));
    }

    #[test]
    fn the_seed_word_keeps_its_layout() {
        let w = SeedRapfWord { wired_pd: 0xabcd, tid: 0x1234, seq: 0xfff, user_pd: 0xabcd };
        let raw = w.encode().unwrap();
        assert_eq!(raw & 3, 2);
        assert_eq!(raw >> 2 & 0xffff, 0xabcd);
        assert_eq!(raw >> 18 & 0x3fff, 0x1234);
        assert_eq!(raw >> 32 & 0xfff, 0xfff);
        assert_eq!(SeedRapfWord::decode(raw), Some(w));
        assert_eq!(SeedRapfWord { seq: 0x1000, ..w }.encode(), None, "the seed's seq is 12 bits");
    }
}
