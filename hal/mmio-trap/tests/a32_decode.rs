//! A32 decoding of known encodings, checking every decoded field.
//!
//! The words were produced with `llvm-mc -triple=armv7r-none-eabi
//! -mcpu=cortex-r5 -show-encoding` from the assembly text next to them and
//! cross-checked against ARM DDI 0406C A5.3 / A5.2.8; the test needs no
//! assembler.

mod common;

use mmio_trap::a32::{Access, Condition, Offset, Shift, decode};
use mmio_trap::{Addressing, Kind, Size, Transfer};

const PC: u32 = 0x0010_2000;

fn access(kind: Kind, size: Size, signed: bool) -> Access {
    Access {
        cond: Condition::Al,
        kind,
        size,
        signed,
        transfer: Transfer::Single { rt: 0 },
        rn: 1,
        add: true,
        offset: Offset::Imm(0),
        addressing: Addressing::Offset,
    }
}

fn ldr() -> Access {
    access(Kind::Load, Size::B4, false)
}
fn str_() -> Access {
    access(Kind::Store, Size::B4, false)
}
fn ldrb() -> Access {
    access(Kind::Load, Size::B1, false)
}
fn strb() -> Access {
    access(Kind::Store, Size::B1, false)
}
fn ldrh() -> Access {
    access(Kind::Load, Size::B2, false)
}
fn strh() -> Access {
    access(Kind::Store, Size::B2, false)
}
fn ldrsb() -> Access {
    access(Kind::Load, Size::B1, true)
}
fn ldrsh() -> Access {
    access(Kind::Load, Size::B2, true)
}
fn ldrd(rt: u8) -> Access {
    access(Kind::Load, Size::B4, false).pair(rt)
}
fn strd(rt: u8) -> Access {
    access(Kind::Store, Size::B4, false).pair(rt)
}

trait Build {
    fn rt(self, rt: u8) -> Self;
    fn pair(self, rt: u8) -> Self;
    fn rn(self, rn: u8) -> Self;
    fn imm(self, imm: i32) -> Self;
    fn reg(self, rm: u8, shift: Shift) -> Self;
    fn sub(self) -> Self;
    fn pre(self) -> Self;
    fn post(self) -> Self;
    fn cond(self, cond: Condition) -> Self;
}

impl Build for Access {
    fn rt(mut self, rt: u8) -> Self {
        self.transfer = Transfer::Single { rt };
        self
    }
    fn pair(mut self, rt: u8) -> Self {
        self.transfer = Transfer::Pair { rt, rt2: rt + 1 };
        self
    }
    fn rn(mut self, rn: u8) -> Self {
        self.rn = rn;
        self
    }
    fn imm(mut self, imm: i32) -> Self {
        self.offset = Offset::Imm(imm.unsigned_abs());
        self.add = imm >= 0;
        self
    }
    fn reg(mut self, rm: u8, shift: Shift) -> Self {
        self.offset = Offset::Reg { rm, shift };
        self
    }
    fn sub(mut self) -> Self {
        self.add = false;
        self
    }
    fn pre(mut self) -> Self {
        self.addressing = Addressing::PreIndex;
        self
    }
    fn post(mut self) -> Self {
        self.addressing = Addressing::PostIndex;
        self
    }
    fn cond(mut self, cond: Condition) -> Self {
        self.cond = cond;
        self
    }
}

use Shift::{Asr, Lsl, Lsr, Ror, Rrx};

fn check(cases: &[(u32, &str, Access)]) {
    for (word, asm, expected) in cases {
        let got = decode(PC, *word).unwrap_or_else(|e| panic!("{asm}: {e}"));
        assert_eq!(&got, expected, "{word:#010x} {asm}");
        assert_eq!(got.to_string(), *asm, "{word:#010x}");
    }
}

#[test]
fn word_and_byte_immediate() {
    check(&[
        (0xe5910000, "ldr r0, [r1]", ldr()),
        (0xe5910fff, "ldr r0, [r1, #4095]", ldr().imm(4095)),
        (0xe5110fff, "ldr r0, [r1, #-4095]", ldr().imm(-4095)),
        (0xe5832004, "str r2, [r3, #4]", str_().rt(2).rn(3).imm(4)),
        (0xe5232004, "str r2, [r3, #-4]!", str_().rt(2).rn(3).imm(-4).pre()),
        (0xe4954008, "ldr r4, [r5], #8", ldr().rt(4).rn(5).imm(8).post()),
        (0xe4154008, "ldr r4, [r5], #-8", ldr().rt(4).rn(5).imm(-8).post()),
        (0xe5d76001, "ldrb r6, [r7, #1]", ldrb().rt(6).rn(7).imm(1)),
        (0xe5476001, "strb r6, [r7, #-1]", strb().rt(6).rn(7).imm(-1)),
        (0xe5f760ff, "ldrb r6, [r7, #255]!", ldrb().rt(6).rn(7).imm(255).pre()),
        (0xe4c76003, "strb r6, [r7], #3", strb().rt(6).rn(7).imm(3).post()),
        // U = 0 with a zero offset ("#-0") is its own encoding.
        (0xe5110000, "ldr r0, [r1, #-0]", ldr().sub()),
        (0xe580d000, "str sp, [r0]", str_().rt(13).rn(0)),
        // LLVM prints these as the aliases `pop {lr}` / `push {lr}`.
        (0xe49de004, "ldr lr, [sp], #4", ldr().rt(14).rn(13).imm(4).post()),
        (0xe52de004, "str lr, [sp, #-4]!", str_().rt(14).rn(13).imm(-4).pre()),
    ]);
}

#[test]
fn word_and_byte_register() {
    check(&[
        (0xe7910002, "ldr r0, [r1, r2]", ldr().reg(2, Lsl(0))),
        (0xe7110002, "ldr r0, [r1, -r2]", ldr().reg(2, Lsl(0)).sub()),
        (0xe7910102, "ldr r0, [r1, r2, lsl #2]", ldr().reg(2, Lsl(2))),
        (0xe7910022, "ldr r0, [r1, r2, lsr #32]", ldr().reg(2, Lsr(32))),
        (0xe79100c2, "ldr r0, [r1, r2, asr #1]", ldr().reg(2, Asr(1))),
        (0xe7910042, "ldr r0, [r1, r2, asr #32]", ldr().reg(2, Asr(32))),
        (0xe7910462, "ldr r0, [r1, r2, ror #8]", ldr().reg(2, Ror(8))),
        (0xe7910062, "ldr r0, [r1, r2, rrx]", ldr().reg(2, Rrx)),
        (0xe7210f82, "str r0, [r1, -r2, lsl #31]!", str_().reg(2, Lsl(31)).sub().pre()),
        (0xe6910182, "ldr r0, [r1], r2, lsl #3", ldr().reg(2, Lsl(3)).post()),
        (0xe6410002, "strb r0, [r1], -r2", strb().reg(2, Lsl(0)).sub().post()),
        (0xe7f100a2, "ldrb r0, [r1, r2, lsr #1]!", ldrb().reg(2, Lsr(1)).pre()),
    ]);
}

#[test]
fn halfword_and_signed() {
    check(&[
        (0xe1d100b0, "ldrh r0, [r1]", ldrh()),
        (0xe1d10fbf, "ldrh r0, [r1, #255]", ldrh().imm(255)),
        (0xe14100b2, "strh r0, [r1, #-2]", strh().imm(-2)),
        (0xe1f100b2, "ldrh r0, [r1, #2]!", ldrh().imm(2).pre()),
        (0xe0410fbf, "strh r0, [r1], #-255", strh().imm(-255).post()),
        (0xe19100b2, "ldrh r0, [r1, r2]", ldrh().reg(2, Lsl(0))),
        (0xe12100b2, "strh r0, [r1, -r2]!", strh().reg(2, Lsl(0)).sub().pre()),
        (0xe09100b2, "ldrh r0, [r1], r2", ldrh().reg(2, Lsl(0)).post()),
        (0xe1d100d1, "ldrsb r0, [r1, #1]", ldrsb().imm(1)),
        (0xe17100d1, "ldrsb r0, [r1, #-1]!", ldrsb().imm(-1).pre()),
        (0xe0d100d1, "ldrsb r0, [r1], #1", ldrsb().imm(1).post()),
        (0xe11100d2, "ldrsb r0, [r1, -r2]", ldrsb().reg(2, Lsl(0)).sub()),
        (0xe1d100f2, "ldrsh r0, [r1, #2]", ldrsh().imm(2)),
        (0xe05100f2, "ldrsh r0, [r1], #-2", ldrsh().imm(-2).post()),
        (0xe1b100f2, "ldrsh r0, [r1, r2]!", ldrsh().reg(2, Lsl(0)).pre()),
    ]);
}

#[test]
fn doubleword() {
    check(&[
        (0xe1c200d0, "ldrd r0, r1, [r2]", ldrd(0).rn(2)),
        (0xe1c200d8, "ldrd r0, r1, [r2, #8]", ldrd(0).rn(2).imm(8)),
        (0xe16640d8, "ldrd r4, r5, [r6, #-8]!", ldrd(4).rn(6).imm(-8).pre()),
        (0xe0c641d0, "ldrd r4, r5, [r6], #16", ldrd(4).rn(6).imm(16).post()),
        (0xe18200d3, "ldrd r0, r1, [r2, r3]", ldrd(0).rn(2).reg(3, Lsl(0))),
        (0xe12200d3, "ldrd r0, r1, [r2, -r3]!", ldrd(0).rn(2).reg(3, Lsl(0)).sub().pre()),
        (0xe1c200f8, "strd r0, r1, [r2, #8]", strd(0).rn(2).imm(8)),
        (0xe042c0f8, "strd r12, sp, [r2], #-8", strd(12).rn(2).imm(-8).post()),
        (0xe18200f3, "strd r0, r1, [r2, r3]", strd(0).rn(2).reg(3, Lsl(0))),
        (0xe10200f3, "strd r0, r1, [r2, -r3]", strd(0).rn(2).reg(3, Lsl(0)).sub()),
        // Rn may equal Rt without write-back.
        (0xe1c220f0, "strd r2, r3, [r2]", strd(2).rn(2)),
    ]);
}

#[test]
fn conditions() {
    use Condition::*;
    let conds = [Eq, Ne, Cs, Cc, Mi, Pl, Vs, Vc, Hi, Ls, Ge, Lt, Gt, Le];
    let names = ["eq", "ne", "hs", "lo", "mi", "pl", "vs", "vc", "hi", "ls", "ge", "lt", "gt", "le"];
    for (i, (cond, name)) in conds.into_iter().zip(names).enumerate() {
        let word = (i as u32) << 28 | 0x0591_0000;
        let asm = format!("ldr{name} r0, [r1]");
        check(&[(word, &asm, ldr().cond(cond))]);
    }
    check(&[
        (0x15dd0004, "ldrbne r0, [sp, #4]", ldrb().rn(13).imm(4).cond(Ne)),
        (0xc16de0b2, "strhgt lr, [sp, #-2]!", strh().rt(14).rn(13).imm(-2).pre().cond(Gt)),
        (0xb1cd00d0, "ldrdlt r0, r1, [sp]", ldrd(0).rn(13).cond(Lt)),
    ]);
}

/// The extra load/store immediate is split as imm4H (bits 11:8) : imm4L
/// (bits 3:0); exhaustive over both halves.
#[test]
fn split_imm8() {
    for imm8 in 0u32..256 {
        let word = 0xe1d1_00b0 | (imm8 >> 4) << 8 | (imm8 & 0xf);
        assert_eq!(decode(PC, word).unwrap(), ldrh().imm(imm8 as i32));
    }
}

#[test]
fn shift_decoding_is_exhaustive() {
    for ty in 0u32..4 {
        for imm5 in 0u32..32 {
            let word = 0xe791_0002 | imm5 << 7 | ty << 5;
            let expected = match (ty, imm5) {
                (0, n) => Lsl(n as u8),
                (1, 0) => Lsr(32),
                (1, n) => Lsr(n as u8),
                (2, 0) => Asr(32),
                (2, n) => Asr(n as u8),
                (_, 0) => Rrx,
                (_, n) => Ror(n as u8),
            };
            assert_eq!(decode(PC, word).unwrap(), ldr().reg(2, expected));
        }
    }
}
