//! Assembly-syntax rendering of a decoded A64 access, for logs.
//!
//! Immediate-offset forms are printed as `LDR` when the offset fits the
//! scaled unsigned-immediate encoding and as `LDUR` otherwise (the decoded
//! [`Access`] does not record which of the two encodings was used).

use core::fmt;

use super::{Access, Extend, MemOrder, Offset, RegClass, Width};
use crate::types::{Addressing, Kind, Size, Transfer};

struct Reg(RegClass, Size, u8);

impl fmt::Display for Reg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Reg(class, size, n) = *self;
        match class {
            RegClass::Gpr { width, .. } => {
                let prefix = match width {
                    Width::W => 'w',
                    Width::X => 'x',
                };
                if n == 31 { write!(f, "{prefix}zr") } else { write!(f, "{prefix}{n}") }
            }
            RegClass::Simd => {
                let prefix = match size {
                    Size::B1 => 'b',
                    Size::B2 => 'h',
                    Size::B4 => 's',
                    Size::B8 => 'd',
                    Size::B16 => 'q',
                };
                write!(f, "{prefix}{n}")
            }
        }
    }
}

fn mnemonic(a: &Access) -> (&'static str, &'static str) {
    let load = a.kind == Kind::Load;
    let signed = matches!(a.class, RegClass::Gpr { signed: true, .. });
    let gpr = matches!(a.class, RegClass::Gpr { .. });
    let base = match (a.transfer, a.order) {
        (Transfer::Pair { .. }, MemOrder::NonTemporal) => return (pick(load, "ldnp", "stnp"), ""),
        (Transfer::Pair { .. }, _) if signed => return ("ldpsw", ""),
        (Transfer::Pair { .. }, _) => return (pick(load, "ldp", "stp"), ""),
        (_, MemOrder::Acquire) => "ldar",
        (_, MemOrder::AcquirePc) => "ldapr",
        (_, MemOrder::Release) => "stlr",
        _ if unscaled(a) => pick(load, "ldur", "stur"),
        _ => pick(load, "ldr", "str"),
    };
    let suffix = match (gpr, signed, a.size) {
        (false, _, _) => "",
        (true, true, Size::B1) => "sb",
        (true, true, Size::B2) => "sh",
        (true, true, _) => "sw",
        (true, false, Size::B1) => "b",
        (true, false, Size::B2) => "h",
        _ => "",
    };
    (base, suffix)
}

const fn pick(load: bool, l: &'static str, s: &'static str) -> &'static str {
    if load { l } else { s }
}

/// Whether an offset-mode immediate needs the unscaled (LDUR) encoding.
fn unscaled(a: &Access) -> bool {
    match (a.addressing, a.offset) {
        (Addressing::Offset, Offset::Imm(imm)) => {
            let scale = a.size.bytes() as i64;
            imm < 0 || imm % scale != 0 || imm / scale > 4095
        }
        _ => false,
    }
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (base, suffix) = mnemonic(self);
        write!(f, "{base}{suffix} ")?;
        let (regs, count) = self.transfer.registers();
        for (i, &n) in regs[..count].iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{}", Reg(self.class, self.size, n))?;
        }
        if self.rn == 31 {
            f.write_str(", [sp")?;
        } else {
            write!(f, ", [x{}", self.rn)?;
        }
        match (self.addressing, self.offset) {
            (Addressing::Offset, Offset::Imm(0)) => f.write_str("]"),
            (Addressing::Offset, Offset::Imm(imm)) => write!(f, ", #{imm}]"),
            (Addressing::PreIndex, Offset::Imm(imm)) => write!(f, ", #{imm}]!"),
            (Addressing::PostIndex, Offset::Imm(imm)) => write!(f, "], #{imm}"),
            (_, Offset::Reg { rm, extend, shift }) => {
                let (width, name) = match extend {
                    Extend::Uxtw => (Width::W, "uxtw"),
                    Extend::Sxtw => (Width::W, "sxtw"),
                    Extend::Lsl => (Width::X, "lsl"),
                    Extend::Sxtx => (Width::X, "sxtx"),
                };
                let rm = Reg(RegClass::Gpr { width, signed: false }, Size::B8, rm);
                match (extend, shift) {
                    (Extend::Lsl, 0) => write!(f, ", {rm}]"),
                    (_, 0) => write!(f, ", {rm}, {name}]"),
                    _ => write!(f, ", {rm}, {name} #{shift}]"),
                }
            }
        }
    }
}
