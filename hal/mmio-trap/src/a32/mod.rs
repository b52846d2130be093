//! A32 (ARM state) loads and stores of an ARMv7-R core.
//!
//! Supported encodings (ARM DDI 0406C):
//!
//! * A5.3 "Load/store word and unsigned byte": LDR, STR, LDRB, STRB with
//!   immediate or (shifted) register offset.
//! * A5.2.8 "Extra load/store instructions": LDRH, STRH, LDRSB, LDRSH,
//!   LDRD, STRD with immediate or register offset.
//!
//! Each in offset, pre-indexed and post-indexed form, adding or subtracting
//! the offset (U bit), under any condition other than `0b1111`.

mod decode;
mod emulate;
mod fmt;

pub use decode::decode;
pub use emulate::{emulate, execute};

use crate::types::{Addressing, Kind, Size, Transfer};

/// Condition field (bits 31:28), ARM DDI 0406C A8.3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Condition {
    /// Z set.
    Eq = 0,
    /// Z clear.
    Ne,
    /// C set (HS).
    Cs,
    /// C clear (LO).
    Cc,
    /// N set.
    Mi,
    /// N clear.
    Pl,
    /// V set.
    Vs,
    /// V clear.
    Vc,
    /// C set and Z clear.
    Hi,
    /// C clear or Z set.
    Ls,
    /// N == V.
    Ge,
    /// N != V.
    Lt,
    /// Z clear and N == V.
    Gt,
    /// Z set or N != V.
    Le,
    /// Always.
    Al,
}

impl Condition {
    /// The condition for field value `cond` (`0..=14`); `None` for 15.
    pub const fn from_bits(cond: u32) -> Option<Condition> {
        use Condition::*;
        const ALL: [Condition; 15] = [Eq, Ne, Cs, Cc, Mi, Pl, Vs, Vc, Hi, Ls, Ge, Lt, Gt, Le, Al];
        if cond < 15 { Some(ALL[cond as usize]) } else { None }
    }

    /// `ConditionPassed()` for the N, Z, C, V flags in CPSR bits 31:28.
    pub const fn passed(self, cpsr: u32) -> bool {
        let n = cpsr & (1 << 31) != 0;
        let z = cpsr & (1 << 30) != 0;
        let c = cpsr & (1 << 29) != 0;
        let v = cpsr & (1 << 28) != 0;
        match self {
            Condition::Eq => z,
            Condition::Ne => !z,
            Condition::Cs => c,
            Condition::Cc => !c,
            Condition::Mi => n,
            Condition::Pl => !n,
            Condition::Vs => v,
            Condition::Vc => !v,
            Condition::Hi => c && !z,
            Condition::Ls => !c || z,
            Condition::Ge => n == v,
            Condition::Lt => n != v,
            Condition::Gt => !z && n == v,
            Condition::Le => z || n != v,
            Condition::Al => true,
        }
    }

    /// Assembler suffix (`""` for AL).
    pub const fn suffix(self) -> &'static str {
        const NAMES: [&str; 15] =
            ["eq", "ne", "hs", "lo", "mi", "pl", "vs", "vc", "hi", "ls", "ge", "lt", "gt", "le", ""];
        NAMES[self as usize]
    }
}

/// Shift applied to a register offset (`DecodeImmShift()`, A8.4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Shift {
    /// Logical shift left by 0..=31 (0 = unshifted).
    Lsl(u8),
    /// Logical shift right by 1..=32.
    Lsr(u8),
    /// Arithmetic shift right by 1..=32.
    Asr(u8),
    /// Rotate right by 1..=31.
    Ror(u8),
    /// Rotate right by one through the carry flag.
    Rrx,
}

impl Shift {
    /// `Shift(value, type, amount, carry_in)` (A8.4.3); `carry` is CPSR.C.
    pub const fn apply(self, value: u32, carry: bool) -> u32 {
        match self {
            Shift::Lsl(n) if n < 32 => value << n,
            Shift::Lsr(n) if n < 32 => value >> n,
            Shift::Asr(n) if n < 32 => ((value as i32) >> n) as u32,
            Shift::Asr(_) => ((value as i32) >> 31) as u32,
            Shift::Ror(n) => value.rotate_right(n as u32),
            Shift::Rrx => ((carry as u32) << 31) | (value >> 1),
            Shift::Lsl(_) | Shift::Lsr(_) => 0,
        }
    }
}

/// Offset magnitude; the direction is [`Access::add`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Offset {
    /// Immediate (imm12 for word/byte, imm8 for the extra load/stores).
    Imm(u32),
    /// Register `rm`, shifted (always `Shift::Lsl(0)` for the extra
    /// load/store instructions).
    Reg {
        /// Offset register, `0..=14`.
        rm: u8,
        /// Shift applied to `rm`.
        shift: Shift,
    },
}

/// A decoded A32 load or store.
///
/// Values returned by [`decode`] satisfy: every register number is
/// `0..=14`; pairs (LDRD/STRD) have an even `rt` and `rt2 == rt + 1`;
/// write-back never targets a transfer register; `size` is `B1`, `B2` or
/// `B4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Access {
    /// Condition under which the instruction executes.
    pub cond: Condition,
    /// Load or store.
    pub kind: Kind,
    /// Size of each register's memory access.
    pub size: Size,
    /// Loads sign-extend to 32 bits (LDRSB, LDRSH).
    pub signed: bool,
    /// Transfer register(s).
    pub transfer: Transfer,
    /// Base register, `0..=14`.
    pub rn: u8,
    /// The U bit: add (`true`) or subtract the offset.
    pub add: bool,
    /// Offset magnitude.
    pub offset: Offset,
    /// Offset, pre-index or post-index.
    pub addressing: Addressing,
}

/// The interrupted context's registers, as saved by the abort handler.
///
/// `r13` and `r14` are those of the interrupted mode (banked registers are
/// the implementor's business).
pub trait RegisterFile {
    /// Reads `Rn`, `n` in `0..=14`.
    fn r(&self, n: u8) -> u32;
    /// Writes `Rn`, `n` in `0..=14`.
    fn set_r(&mut self, n: u8, value: u32);
    /// The interrupted CPSR (SPSR_abt): N, Z, C, V flags in bits 31:28, E in
    /// bit 9, T in bit 5.
    fn cpsr(&self) -> u32;
}
