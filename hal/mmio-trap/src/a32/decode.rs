//! A32 load/store decoder (ARM DDI 0406C, A5.1 "ARM instruction set
//! encoding", A5.2 "Data-processing and miscellaneous instructions", A5.3
//! "Load/store word and unsigned byte").

use super::{Access, Condition, Offset, Shift};
use crate::error::{DecodeError, Isa, Reason};
use crate::types::{Addressing, Kind, Size, Transfer};

const PC: u8 = 15;
const LR: u8 = 14;

const fn bits(word: u32, hi: u32, lo: u32) -> u32 {
    (word >> lo) & ((1 << (hi - lo + 1)) - 1)
}

const fn bit(word: u32, n: u32) -> bool {
    (word >> n) & 1 != 0
}

/// Decodes the A32 instruction `word` found at `pc`.
///
/// The condition is decoded, not evaluated: [`emulate`](super::emulate)
/// checks it against the CPSR flags.
pub fn decode(pc: u32, word: u32) -> Result<Access, DecodeError> {
    decode_word(word).map_err(|reason| DecodeError { isa: Isa::A32, pc: u64::from(pc), word, reason })
}

fn decode_word(word: u32) -> Result<Access, Reason> {
    // A5.1: cond = 1111 is the unconditional space (A5.7). In A5.7.1
    // "Memory hints, Advanced SIMD instructions, and miscellaneous
    // instructions" (bits 27:26 = 01), op1 = 1xxxx01 are PLI/PLD/PLDW and
    // the unallocated memory hints; op1 = 100xxx0 is Advanced SIMD
    // element/structure load/store.
    let Some(cond) = Condition::from_bits(bits(word, 31, 28)) else {
        return Err(match (bits(word, 27, 24), bits(word, 21, 20)) {
            (0b0100..=0b0111, 0b01) => Reason::Prefetch,
            (0b0100, _) if !bit(word, 20) => Reason::SimdStructure,
            _ => Reason::Unconditional,
        });
    };
    // A5.1: op1 = bits 27:25, op = bit 4.
    match bits(word, 27, 25) {
        0b010 => word_byte(word, cond),
        0b011 if !bit(word, 4) => word_byte(word, cond),
        0b011 => Err(Reason::MediaOrMultiply),
        0b000 if bit(word, 7) && bit(word, 4) => {
            if bits(word, 6, 5) != 0 {
                extra(word, cond)
            } else if !bit(word, 24) {
                // A5.2.5 multiply and multiply-accumulate.
                Err(Reason::MediaOrMultiply)
            } else if !bit(word, 23) {
                // A5.2.10 synchronization primitives: SWP/SWPB.
                Err(Reason::Swap)
            } else if bit(word, 20) {
                // LDREX/LDREXD/LDREXB/LDREXH.
                Err(Reason::LoadExclusive)
            } else {
                Err(Reason::StoreExclusive)
            }
        }
        0b100 => Err(Reason::LoadStoreMultiple),
        0b110 | 0b111 => Err(Reason::Coprocessor),
        _ => Err(Reason::NotLoadStore),
    }
}

/// P and W bits to addressing mode. P = 0, W = 1 is the unprivileged
/// (LDRT/STRT family) form, rejected.
fn addressing(word: u32) -> Result<Addressing, Reason> {
    match (bit(word, 24), bit(word, 21)) {
        (true, false) => Ok(Addressing::Offset),
        (true, true) => Ok(Addressing::PreIndex),
        (false, false) => Ok(Addressing::PostIndex),
        (false, true) => Err(Reason::Unprivileged),
    }
}

/// A5.3 "Load/store word and unsigned byte":
/// `cond 01 I P U B W L Rn Rt (imm12 | imm5 type 0 Rm)`.
fn word_byte(word: u32, cond: Condition) -> Result<Access, Reason> {
    let addressing = addressing(word)?;
    let kind = if bit(word, 20) { Kind::Load } else { Kind::Store };
    let size = if bit(word, 22) { Size::B1 } else { Size::B4 };
    let rn = bits(word, 19, 16) as u8;
    let rt = bits(word, 15, 12) as u8;
    let offset = if bit(word, 25) {
        // DecodeImmShift(type, imm5).
        let imm5 = bits(word, 11, 7) as u8;
        let shift = match (bits(word, 6, 5), imm5) {
            (0b00, n) => Shift::Lsl(n),
            (0b01, 0) => Shift::Lsr(32),
            (0b01, n) => Shift::Lsr(n),
            (0b10, 0) => Shift::Asr(32),
            (0b10, n) => Shift::Asr(n),
            (_, 0) => Shift::Rrx,
            (_, n) => Shift::Ror(n),
        };
        Offset::Reg { rm: bits(word, 3, 0) as u8, shift }
    } else {
        Offset::Imm(bits(word, 11, 0))
    };
    single(word, cond, kind, size, false, rn, rt, offset, addressing)
}

/// Checks shared by all single-register forms and builds the access:
/// "if n == 15" is the literal / PC-relative form; "if t == 15" loads into
/// (or stores) the PC; "if m == 15 then UNPREDICTABLE"; "if wback && (n ==
/// 15 || n == t) then UNPREDICTABLE".
#[allow(clippy::too_many_arguments)]
fn single(
    word: u32,
    cond: Condition,
    kind: Kind,
    size: Size,
    signed: bool,
    rn: u8,
    rt: u8,
    offset: Offset,
    addressing: Addressing,
) -> Result<Access, Reason> {
    if rn == PC {
        return Err(Reason::PcRelative);
    }
    if rt == PC {
        return Err(match kind {
            Kind::Load => Reason::LoadIntoPc,
            Kind::Store => Reason::StoreOfPc,
        });
    }
    if matches!(offset, Offset::Reg { rm: PC, .. }) {
        return Err(Reason::PcOffsetRegister);
    }
    if addressing.writeback() && rn == rt {
        return Err(Reason::WritebackOverlap);
    }
    Ok(Access {
        cond,
        kind,
        size,
        signed,
        transfer: Transfer::Single { rt },
        rn,
        add: bit(word, 23),
        offset,
        addressing,
    })
}

/// A5.2.8 "Extra load/store instructions":
/// `cond 000 P U I W L Rn Rt (imm4H | 0000) 1 op2 1 (imm4L | Rm)`, op2 != 00.
fn extra(word: u32, cond: Condition) -> Result<Access, Reason> {
    let addressing = addressing(word)?;
    let load_bit = bit(word, 20);
    let rn = bits(word, 19, 16) as u8;
    let rt = bits(word, 15, 12) as u8;
    let offset = if bit(word, 22) {
        Offset::Imm((bits(word, 11, 8) << 4) | bits(word, 3, 0))
    } else {
        // Register form: bits 11:8 are (0)(0)(0)(0).
        if bits(word, 11, 8) != 0 {
            return Err(Reason::ReservedFieldValue);
        }
        Offset::Reg { rm: bits(word, 3, 0) as u8, shift: Shift::Lsl(0) }
    };
    let (kind, size, signed) = match (bits(word, 6, 5), load_bit) {
        (0b01, false) => (Kind::Store, Size::B2, false), // STRH
        (0b01, true) => (Kind::Load, Size::B2, false),   // LDRH
        (0b10, true) => (Kind::Load, Size::B1, true),    // LDRSB
        (0b11, true) => (Kind::Load, Size::B2, true),    // LDRSH
        (0b10, false) => return dual(word, cond, Kind::Load, rn, rt, offset, addressing),
        _ => return dual(word, cond, Kind::Store, rn, rt, offset, addressing),
    };
    single(word, cond, kind, size, signed, rn, rt, offset, addressing)
}

/// LDRD/STRD (A8.8.72-74, A8.8.210-211): `if Rt<0> == '1' then
/// UNPREDICTABLE; t2 = t + 1; if t2 == 15 ... UNPREDICTABLE; if wback && (n
/// == t || n == t2) then UNPREDICTABLE`; LDRD (register) additionally `if m
/// == t || m == t2 then UNPREDICTABLE`.
fn dual(
    word: u32,
    cond: Condition,
    kind: Kind,
    rn: u8,
    rt: u8,
    offset: Offset,
    addressing: Addressing,
) -> Result<Access, Reason> {
    if rn == PC {
        return Err(Reason::PcRelative);
    }
    if rt & 1 != 0 {
        return Err(Reason::PairOddRegister);
    }
    if rt == LR {
        return Err(Reason::PairIntoPc);
    }
    let rt2 = rt + 1;
    if let Offset::Reg { rm, .. } = offset {
        if rm == PC {
            return Err(Reason::PcOffsetRegister);
        }
        if kind == Kind::Load && (rm == rt || rm == rt2) {
            return Err(Reason::OffsetOverlap);
        }
    }
    if addressing.writeback() && (rn == rt || rn == rt2) {
        return Err(Reason::WritebackOverlap);
    }
    Ok(Access {
        cond,
        kind,
        size: Size::B4,
        signed: false,
        transfer: Transfer::Pair { rt, rt2 },
        rn,
        add: bit(word, 23),
        offset,
        addressing,
    })
}
