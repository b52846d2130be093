//! UAL assembly-syntax rendering of a decoded A32 access, for logs.

use core::fmt;

use super::{Access, Offset, Shift};
use crate::types::{Addressing, Kind, Size, Transfer};

struct Reg(u8);

impl fmt::Display for Reg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            13 => f.write_str("sp"),
            14 => f.write_str("lr"),
            15 => f.write_str("pc"),
            n => write!(f, "r{n}"),
        }
    }
}

impl fmt::Display for Shift {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Shift::Lsl(0) => Ok(()),
            Shift::Lsl(n) => write!(f, ", lsl #{n}"),
            Shift::Lsr(n) => write!(f, ", lsr #{n}"),
            Shift::Asr(n) => write!(f, ", asr #{n}"),
            Shift::Ror(n) => write!(f, ", ror #{n}"),
            Shift::Rrx => f.write_str(", rrx"),
        }
    }
}

struct Operand(bool, Offset);

impl fmt::Display for Operand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 { "" } else { "-" };
        match self.1 {
            Offset::Imm(imm) => write!(f, "#{sign}{imm}"),
            Offset::Reg { rm, shift } => write!(f, "{sign}{}{shift}", Reg(rm)),
        }
    }
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match self.kind {
            Kind::Load => "ldr",
            Kind::Store => "str",
        };
        let suffix = match (self.transfer, self.signed, self.size) {
            (Transfer::Pair { .. }, _, _) => "d",
            (_, true, Size::B1) => "sb",
            (_, true, _) => "sh",
            (_, false, Size::B1) => "b",
            (_, false, Size::B2) => "h",
            _ => "",
        };
        write!(f, "{op}{suffix}{} ", self.cond.suffix())?;
        match self.transfer {
            Transfer::Single { rt } => write!(f, "{}", Reg(rt))?,
            Transfer::Pair { rt, rt2 } => write!(f, "{}, {}", Reg(rt), Reg(rt2))?,
        }
        let rn = Reg(self.rn);
        let operand = Operand(self.add, self.offset);
        match (self.addressing, self.offset) {
            (Addressing::Offset, Offset::Imm(0)) if self.add => write!(f, ", [{rn}]"),
            (Addressing::Offset, _) => write!(f, ", [{rn}, {operand}]"),
            (Addressing::PreIndex, _) => write!(f, ", [{rn}, {operand}]!"),
            (Addressing::PostIndex, _) => write!(f, ", [{rn}], {operand}"),
        }
    }
}
