//! A64 load/store decoder (ARM DDI 0487, C4.1.4 "Loads and Stores" and the
//! per-instruction pages in C6/C7).

use super::{Access, Extend, MemOrder, Offset, RegClass, Width};
use crate::error::{DecodeError, Isa, Reason};
use crate::types::{Addressing, Kind, Size, Transfer};

/// Bits `hi..=lo` of `word`.
const fn bits(word: u32, hi: u32, lo: u32) -> u32 {
    (word >> lo) & ((1 << (hi - lo + 1)) - 1)
}

const fn bit(word: u32, n: u32) -> bool {
    (word >> n) & 1 != 0
}

/// Sign-extends the low `width` bits of `value`.
const fn sext(value: u32, width: u32) -> i64 {
    let shift = 64 - width;
    ((value as i64) << shift) >> shift
}

/// Decodes the A64 instruction `word` found at `pc`.
///
/// Returns the decoded access or a [`DecodeError`] naming `pc`, `word` and
/// the reason for anything that is not a supported load/store.
pub fn decode(pc: u64, word: u32) -> Result<Access, DecodeError> {
    decode_word(word).map_err(|reason| DecodeError { isa: Isa::A64, pc, word, reason })
}

fn decode_word(word: u32) -> Result<Access, Reason> {
    // C4.1 top-level table: op1 (bits 28:25) = x1x0 is "Loads and Stores".
    if !bit(word, 27) || bit(word, 25) {
        return Err(Reason::NotLoadStore);
    }
    // Within Loads and Stores, op0<1:0> (bits 29:28) splits the space.
    match bits(word, 29, 28) {
        0b00 => exclusive_ordered_structure(word),
        0b01 => literal_and_misc(word),
        0b10 => pair(word),
        _ => register(word),
    }
}

/// bits 29:28 = 00: load/store exclusive (register and pair), load/store
/// ordered, compare and swap (V = 0); Advanced SIMD structures (V = 1).
fn exclusive_ordered_structure(word: u32) -> Result<Access, Reason> {
    if bit(word, 26) {
        // "Advanced SIMD load/store multiple structures" (bits 29:23 =
        // 001100x) and "... single structure" (001101x), bit 31 = 0.
        return if !bit(word, 31) && bits(word, 29, 25) == 0b00110 {
            Err(Reason::SimdStructure)
        } else {
            Err(Reason::Unallocated)
        };
    }
    // size 001000 o2 L o1 Rs o0 Rt2 Rn Rt (bits 29:24 = 001000).
    if bit(word, 24) {
        return Err(Reason::Unallocated);
    }
    let size = bits(word, 31, 30);
    let o2 = bit(word, 23);
    let load = bit(word, 22);
    let o1 = bit(word, 21);
    let o0 = bit(word, 15);
    match (o2, o1) {
        // LDXR/STXR/LDAXR/STLXR (o1 = 0) and LDXP/STXP/... (o1 = 1, size 1x).
        (false, false) => Err(exclusive(load)),
        (false, true) if size >= 2 => Err(exclusive(load)),
        // CASP (size 0x), CAS/CASB/CASH (o2 = 1, o1 = 1).
        (false, true) | (true, true) => Err(Reason::CompareAndSwap),
        // "Load/store ordered": LDAR/STLR (o0 = 1), LDLAR/STLLR (o0 = 0).
        (true, false) => {
            if !o0 {
                return Err(Reason::LoRegion);
            }
            // Rs and Rt2 are (1)(1)(1)(1)(1) should-be-one fields.
            if bits(word, 20, 16) != 31 || bits(word, 14, 10) != 31 {
                return Err(Reason::ReservedFieldValue);
            }
            let (kind, order) = if load { (Kind::Load, MemOrder::Acquire) } else { (Kind::Store, MemOrder::Release) };
            Ok(base_only(word, kind, size, order))
        }
    }
}

const fn exclusive(load: bool) -> Reason {
    if load { Reason::LoadExclusive } else { Reason::StoreExclusive }
}

/// LDAR/STLR/LDAPR: `[Xn|SP]` with no offset, GPR transfer of `8 << size`.
fn base_only(word: u32, kind: Kind, size: u32, order: MemOrder) -> Access {
    let width = if size == 3 { Width::X } else { Width::W };
    Access {
        kind,
        class: RegClass::Gpr { width, signed: false },
        size: Size::from_log2(size).unwrap_or(Size::B8),
        transfer: Transfer::Single { rt: bits(word, 4, 0) as u8 },
        rn: bits(word, 9, 5) as u8,
        offset: Offset::Imm(0),
        addressing: Addressing::Offset,
        order,
    }
}

/// bits 29:28 = 01: "Load register (literal)" (bit 24 = 0); with bit 24 = 1:
/// memory tagging, LDAPUR/STLUR (FEAT_LRCPC2), CPY/SET (FEAT_MOPS).
fn literal_and_misc(word: u32) -> Result<Access, Reason> {
    if !bit(word, 24) {
        // LDR/LDRSW/LDR (SIMD&FP) (literal); PRFM (literal) is opc = 11, V = 0.
        return if bits(word, 31, 30) == 0b11 && !bit(word, 26) {
            Err(Reason::Prefetch)
        } else {
            Err(Reason::PcRelative)
        };
    }
    if bits(word, 31, 24) == 0b1101_1001 && bit(word, 21) {
        return Err(Reason::MemoryTag);
    }
    match (bit(word, 21), bits(word, 11, 10)) {
        (false, 0b00) => Err(Reason::RcpcUnscaled),
        (false, 0b01) => Err(Reason::MemoryCopySet),
        _ => Err(Reason::Unallocated),
    }
}

/// bits 29:28 = 10: "Load/store no-allocate pair (offset)" and "Load/store
/// register pair (post-indexed / offset / pre-indexed)":
/// `opc 101 V 0 mode(2) L imm7 Rt2 Rn Rt`.
fn pair(word: u32) -> Result<Access, Reason> {
    let opc = bits(word, 31, 30);
    let simd = bit(word, 26);
    let load = bit(word, 22);
    let (addressing, order) = match bits(word, 24, 23) {
        0b00 => (Addressing::Offset, MemOrder::NonTemporal),
        0b01 => (Addressing::PostIndex, MemOrder::Plain),
        0b10 => (Addressing::Offset, MemOrder::Plain),
        _ => (Addressing::PreIndex, MemOrder::Plain),
    };
    let non_temporal = order == MemOrder::NonTemporal;
    let (class, size) = if simd {
        // STP/LDP (SIMD&FP): opc 00 = S, 01 = D, 10 = Q.
        let size = match opc {
            0b00 => Size::B4,
            0b01 => Size::B8,
            0b10 => Size::B16,
            _ => return Err(Reason::Unallocated),
        };
        (RegClass::Simd, size)
    } else {
        match (opc, load) {
            (0b00, _) => (gpr(Width::W, false), Size::B4),
            (0b10, _) => (gpr(Width::X, false), Size::B8),
            // LDPSW; there is no LDNPSW.
            (0b01, true) if !non_temporal => (gpr(Width::X, true), Size::B4),
            // STGP (FEAT_MTE).
            (0b01, false) if !non_temporal => return Err(Reason::MemoryTag),
            _ => return Err(Reason::Unallocated),
        }
    };
    let rt = bits(word, 4, 0) as u8;
    let rt2 = bits(word, 14, 10) as u8;
    let rn = bits(word, 9, 5) as u8;
    // LDP/LDNP: "if L == '1' && t == t2 then CONSTRAINED UNPREDICTABLE".
    if load && rt == rt2 {
        return Err(Reason::PairSameRegister);
    }
    // "if wback && (t == n || t2 == n) && n != 31 then CONSTRAINED
    // UNPREDICTABLE" (integer forms only; SIMD&FP registers cannot alias).
    if addressing.writeback() && !simd && rn != 31 && (rt == rn || rt2 == rn) {
        return Err(Reason::WritebackOverlap);
    }
    Ok(Access {
        kind: if load { Kind::Load } else { Kind::Store },
        class,
        size,
        transfer: Transfer::Pair { rt, rt2 },
        rn,
        offset: Offset::Imm(sext(bits(word, 21, 15), 7) << size.log2()),
        addressing,
        order,
    })
}

const fn gpr(width: Width, signed: bool) -> RegClass {
    RegClass::Gpr { width, signed }
}

/// Which "Load/store register" form is being decoded; PRFM/PRFUM only exist
/// in some of them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    UnsignedImm,
    Unscaled,
    Indexed,
    RegOffset,
}

/// bits 29:28 = 11: the "Load/store register (...)" classes:
/// `size 111 V 0 1 opc imm12 Rn Rt` (unsigned immediate, bit 24 = 1) or
/// `size 111 V 0 0 opc ...` with bit 21 and bits 11:10 selecting unscaled /
/// post-indexed / unprivileged / pre-indexed / atomic / register offset /
/// pointer-authenticated.
fn register(word: u32) -> Result<Access, Reason> {
    let rt = bits(word, 4, 0) as u8;
    let rn = bits(word, 9, 5) as u8;
    let (form, addressing, offset_imm) = if bit(word, 24) {
        (Form::UnsignedImm, Addressing::Offset, None)
    } else if !bit(word, 21) {
        let imm9 = Some(sext(bits(word, 20, 12), 9));
        match bits(word, 11, 10) {
            0b00 => (Form::Unscaled, Addressing::Offset, imm9),
            0b01 => (Form::Indexed, Addressing::PostIndex, imm9),
            0b11 => (Form::Indexed, Addressing::PreIndex, imm9),
            _ => {
                // "Load/store register (unprivileged)": LDTR/STTR family.
                return Err(if bit(word, 26) { Reason::Unallocated } else { Reason::Unprivileged });
            }
        }
    } else {
        match bits(word, 11, 10) {
            0b10 => (Form::RegOffset, Addressing::Offset, None),
            0b00 => return atomic(word),
            // "Load/store register (pac)": LDRAA/LDRAB, size = 11, V = 0.
            _ if bits(word, 31, 30) == 0b11 && !bit(word, 26) => {
                return Err(Reason::PointerAuth);
            }
            _ => return Err(Reason::Unallocated),
        }
    };
    let (kind, class, size) = register_type(word, form)?;
    let offset = match form {
        Form::UnsignedImm => Offset::Imm(i64::from(bits(word, 21, 10)) << size.log2()),
        Form::RegOffset => {
            // option<1> == 0 is reserved.
            let extend = match bits(word, 15, 13) {
                0b010 => Extend::Uxtw,
                0b011 => Extend::Lsl,
                0b110 => Extend::Sxtw,
                0b111 => Extend::Sxtx,
                _ => return Err(Reason::Unallocated),
            };
            let shift = if bit(word, 12) { size.log2() as u8 } else { 0 };
            Offset::Reg { rm: bits(word, 20, 16) as u8, extend, shift }
        }
        Form::Unscaled | Form::Indexed => Offset::Imm(offset_imm.unwrap_or(0)),
    };
    // "if wback && n == t && n != 31 then CONSTRAINED UNPREDICTABLE" (loads
    // and stores, integer forms only).
    if addressing.writeback() && matches!(class, RegClass::Gpr { .. }) && rn != 31 && rn == rt {
        return Err(Reason::WritebackOverlap);
    }
    Ok(Access { kind, class, size, transfer: Transfer::Single { rt }, rn, offset, addressing, order: MemOrder::Plain })
}

/// The `size:V:opc` table shared by the "Load/store register" classes.
fn register_type(word: u32, form: Form) -> Result<(Kind, RegClass, Size), Reason> {
    let size = bits(word, 31, 30);
    let opc = bits(word, 23, 22);
    if bit(word, 26) {
        // SIMD&FP: size 00 opc 1x is the 128-bit Q form; otherwise opc 1x is
        // unallocated.
        let (kind_bit, log2) = match (size, opc) {
            (0b00, 0b10 | 0b11) => (opc & 1, 4),
            (_, 0b00 | 0b01) => (opc, size),
            _ => return Err(Reason::Unallocated),
        };
        let kind = if kind_bit == 1 { Kind::Load } else { Kind::Store };
        let size = Size::from_log2(log2).ok_or(Reason::Unallocated)?;
        return Ok((kind, RegClass::Simd, size));
    }
    let width = if size == 3 { Width::X } else { Width::W };
    let access_size = Size::from_log2(size).ok_or(Reason::Unallocated)?;
    match (size, opc) {
        (_, 0b00) => Ok((Kind::Store, gpr(width, false), access_size)),
        (_, 0b01) => Ok((Kind::Load, gpr(width, false), access_size)),
        // LDRSB/LDRSH (64-bit) and LDRSW.
        (0b00..=0b10, 0b10) => Ok((Kind::Load, gpr(Width::X, true), access_size)),
        // LDRSB/LDRSH (32-bit).
        (0b00 | 0b01, 0b11) => Ok((Kind::Load, gpr(Width::W, true), access_size)),
        // PRFM (immediate / register), PRFUM; unallocated when indexed.
        (0b11, 0b10) if form != Form::Indexed => Err(Reason::Prefetch),
        _ => Err(Reason::Unallocated),
    }
}

/// "Atomic memory operations" class (bit 21 = 1, bits 11:10 = 00):
/// `size 111 V 00 A R 1 Rs o3 opc 00 Rn Rt`. Only LDAPR is supported.
fn atomic(word: u32) -> Result<Access, Reason> {
    if bit(word, 26) {
        return Err(Reason::Unallocated);
    }
    let a = bit(word, 23);
    let r = bit(word, 22);
    let o3 = bit(word, 15);
    let opc = bits(word, 14, 12);
    match (o3, opc) {
        // LDADD..LDUMIN (o3 = 0) and SWP (o3 = 1, opc = 000).
        (false, _) | (true, 0b000) => Err(Reason::AtomicMemoryOp),
        // LDAPR/LDAPRB/LDAPRH (FEAT_LRCPC): A = 1, R = 0, Rs = (1)(1)(1)(1)(1).
        (true, 0b100) if a && !r => {
            if bits(word, 20, 16) != 31 {
                return Err(Reason::ReservedFieldValue);
            }
            Ok(base_only(word, Kind::Load, bits(word, 31, 30), MemOrder::AcquirePc))
        }
        // LD64B/ST64B* (FEAT_LS64) and unallocated encodings.
        _ => Err(Reason::Unallocated),
    }
}
