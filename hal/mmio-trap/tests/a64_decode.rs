//! A64 decoding of known encodings, checking every decoded field.
//!
//! The words were produced with `llvm-mc -triple=aarch64 -mattr=+v8.3a,+rcpc
//! -show-encoding` from the assembly text next to them and cross-checked
//! against ARM DDI 0487 C4.1.4 field layouts; the test needs no assembler.

mod common;

use common::norm_asm;
use mmio_trap::a64::{Access, Extend, MemOrder, Offset, RegClass, Width, decode};
use mmio_trap::{Addressing, Kind, Size, Transfer};

const PC: u64 = 0xffff_ff80_0040_1234;

fn access(kind: Kind, class: RegClass, size: Size) -> Access {
    Access {
        kind,
        class,
        size,
        transfer: Transfer::Single { rt: 0 },
        rn: 1,
        offset: Offset::Imm(0),
        addressing: Addressing::Offset,
        order: MemOrder::Plain,
    }
}

/// Integer load of `size` into a `width` register.
fn ld(size: Size, width: Width) -> Access {
    access(Kind::Load, RegClass::Gpr { width, signed: false }, size)
}
/// Sign-extending integer load.
fn lds(size: Size, width: Width) -> Access {
    access(Kind::Load, RegClass::Gpr { width, signed: true }, size)
}
fn st(size: Size, width: Width) -> Access {
    access(Kind::Store, RegClass::Gpr { width, signed: false }, size)
}
fn ldv(size: Size) -> Access {
    access(Kind::Load, RegClass::Simd, size)
}
fn stv(size: Size) -> Access {
    access(Kind::Store, RegClass::Simd, size)
}

trait Build {
    fn rt(self, rt: u8) -> Self;
    fn pair(self, rt: u8, rt2: u8) -> Self;
    fn rn(self, rn: u8) -> Self;
    fn imm(self, imm: i64) -> Self;
    fn reg(self, rm: u8, extend: Extend, shift: u8) -> Self;
    fn pre(self) -> Self;
    fn post(self) -> Self;
    fn order(self, order: MemOrder) -> Self;
}

impl Build for Access {
    fn rt(mut self, rt: u8) -> Self {
        self.transfer = Transfer::Single { rt };
        self
    }
    fn pair(mut self, rt: u8, rt2: u8) -> Self {
        self.transfer = Transfer::Pair { rt, rt2 };
        self
    }
    fn rn(mut self, rn: u8) -> Self {
        self.rn = rn;
        self
    }
    fn imm(mut self, imm: i64) -> Self {
        self.offset = Offset::Imm(imm);
        self
    }
    fn reg(mut self, rm: u8, extend: Extend, shift: u8) -> Self {
        self.offset = Offset::Reg { rm, extend, shift };
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
    fn order(mut self, order: MemOrder) -> Self {
        self.order = order;
        self
    }
}

use Extend::{Lsl, Sxtw, Sxtx, Uxtw};
use Size::{B1, B2, B4, B8, B16};
use Width::{W, X};

fn check(cases: &[(u32, &str, Access)]) {
    for (word, asm, expected) in cases {
        let got = decode(PC, *word).unwrap_or_else(|e| panic!("{asm}: {e}"));
        assert_eq!(&got, expected, "{word:#010x} {asm}");
        assert_eq!(norm_asm(&got.to_string()), norm_asm(asm), "{word:#010x}");
    }
}

#[test]
fn unsigned_immediate() {
    check(&[
        (0x397ffc20, "ldrb w0, [x1, #4095]", ld(B1, W).imm(4095)),
        (0x390003e2, "strb w2, [sp]", st(B1, W).rt(2).rn(31)),
        (0x797ffc83, "ldrh w3, [x4, #8190]", ld(B2, W).rt(3).rn(4).imm(8190)),
        (0x790004c5, "strh w5, [x6, #2]", st(B2, W).rt(5).rn(6).imm(2)),
        (0xb97ffd07, "ldr w7, [x8, #16380]", ld(B4, W).rt(7).rn(8).imm(16380)),
        (0xb9000549, "str w9, [x10, #4]", st(B4, W).rt(9).rn(10).imm(4)),
        (0xf97ffd8b, "ldr x11, [x12, #32760]", ld(B8, X).rt(11).rn(12).imm(32760)),
        (0xf90007ed, "str x13, [sp, #8]", st(B8, X).rt(13).rn(31).imm(8)),
        (0x39c005ee, "ldrsb w14, [x15, #1]", lds(B1, W).rt(14).rn(15).imm(1)),
        (0x39800a30, "ldrsb x16, [x17, #2]", lds(B1, X).rt(16).rn(17).imm(2)),
        (0x79c00672, "ldrsh w18, [x19, #2]", lds(B2, W).rt(18).rn(19).imm(2)),
        (0x79800ab4, "ldrsh x20, [x21, #4]", lds(B2, X).rt(20).rn(21).imm(4)),
        (0xb9800af6, "ldrsw x22, [x23, #8]", lds(B4, X).rt(22).rn(23).imm(8)),
        (0xf940003f, "ldr xzr, [x1]", ld(B8, X).rt(31)),
        (0xf900043f, "str xzr, [x1, #8]", st(B8, X).rt(31).imm(8)),
    ]);
}

#[test]
fn unscaled_immediate() {
    check(&[
        (0x385ff020, "ldurb w0, [x1, #-1]", ld(B1, W).imm(-1)),
        (0x380ff020, "sturb w0, [x1, #255]", st(B1, W).imm(255)),
        (0x78500020, "ldurh w0, [x1, #-256]", ld(B2, W).imm(-256)),
        (0x78003020, "sturh w0, [x1, #3]", st(B2, W).imm(3)),
        (0xb85fc020, "ldur w0, [x1, #-4]", ld(B4, W).imm(-4)),
        (0xb8001020, "stur w0, [x1, #1]", st(B4, W).imm(1)),
        (0xf85f8020, "ldur x0, [x1, #-8]", ld(B8, X).imm(-8)),
        (0xf81f03e0, "stur x0, [sp, #-16]", st(B8, X).rn(31).imm(-16)),
        (0x38dff020, "ldursb w0, [x1, #-1]", lds(B1, W).imm(-1)),
        (0x389ff020, "ldursb x0, [x1, #-1]", lds(B1, X).imm(-1)),
        (0x78dfe020, "ldursh w0, [x1, #-2]", lds(B2, W).imm(-2)),
        (0x789fe020, "ldursh x0, [x1, #-2]", lds(B2, X).imm(-2)),
        (0xb89fc020, "ldursw x0, [x1, #-4]", lds(B4, X).imm(-4)),
    ]);
}

#[test]
fn pre_and_post_index() {
    check(&[
        (0xf8408c20, "ldr x0, [x1, #8]!", ld(B8, X).imm(8).pre()),
        (0xf85f8420, "ldr x0, [x1], #-8", ld(B8, X).imm(-8).post()),
        (0xb81f0fe2, "str w2, [sp, #-16]!", st(B4, W).rt(2).rn(31).imm(-16).pre()),
        (0xb80ff462, "str w2, [x3], #255", st(B4, W).rt(2).rn(3).imm(255).post()),
        (0x38401ca4, "ldrb w4, [x5, #1]!", ld(B1, W).rt(4).rn(5).imm(1).pre()),
        (0x381004a4, "strb w4, [x5], #-256", st(B1, W).rt(4).rn(5).imm(-256).post()),
        (0x784024e6, "ldrh w6, [x7], #2", ld(B2, W).rt(6).rn(7).imm(2).post()),
        (0x781fece6, "strh w6, [x7, #-2]!", st(B2, W).rt(6).rn(7).imm(-2).pre()),
        (0x38c01528, "ldrsb w8, [x9], #1", lds(B1, W).rt(8).rn(9).imm(1).post()),
        (0x389ffd28, "ldrsb x8, [x9, #-1]!", lds(B1, X).rt(8).rn(9).imm(-1).pre()),
        (0x78c02d6a, "ldrsh w10, [x11, #2]!", lds(B2, W).rt(10).rn(11).imm(2).pre()),
        (0x789fe56a, "ldrsh x10, [x11], #-2", lds(B2, X).rt(10).rn(11).imm(-2).post()),
        (0xb88045ac, "ldrsw x12, [x13], #4", lds(B4, X).rt(12).rn(13).imm(4).post()),
        (0xb89fcdac, "ldrsw x12, [x13, #-4]!", lds(B4, X).rt(12).rn(13).imm(-4).pre()),
        // Rt = 31 is WZR, Rn = 31 is SP: no overlap.
        (0xb8404fff, "ldr wzr, [sp, #4]!", ld(B4, W).rt(31).rn(31).imm(4).pre()),
    ]);
}

#[test]
fn register_offset() {
    check(&[
        (0xf8626820, "ldr x0, [x1, x2]", ld(B8, X).reg(2, Lsl, 0)),
        (0xf8627820, "ldr x0, [x1, x2, lsl #3]", ld(B8, X).reg(2, Lsl, 3)),
        (0xb8624820, "ldr w0, [x1, w2, uxtw]", ld(B4, W).reg(2, Uxtw, 0)),
        (0xb8625820, "ldr w0, [x1, w2, uxtw #2]", ld(B4, W).reg(2, Uxtw, 2)),
        (0xf862d820, "ldr x0, [x1, w2, sxtw #3]", ld(B8, X).reg(2, Sxtw, 3)),
        (0xf862e820, "ldr x0, [x1, x2, sxtx]", ld(B8, X).reg(2, Sxtx, 0)),
        (0xf862f820, "ldr x0, [x1, x2, sxtx #3]", ld(B8, X).reg(2, Sxtx, 3)),
        (0x38626820, "ldrb w0, [x1, x2]", ld(B1, W).reg(2, Lsl, 0)),
        // S = 1 for a byte access still shifts by 0.
        (0x38627820, "ldrb w0, [x1, x2, lsl #0]", ld(B1, W).reg(2, Lsl, 0)),
        (0x3862c820, "ldrb w0, [x1, w2, sxtw]", ld(B1, W).reg(2, Sxtw, 0)),
        (0x78227820, "strh w0, [x1, x2, lsl #1]", st(B2, W).reg(2, Lsl, 1)),
        (0x78a25820, "ldrsh x0, [x1, w2, uxtw #1]", lds(B2, X).reg(2, Uxtw, 1)),
        (0x38e26820, "ldrsb w0, [x1, x2]", lds(B1, W).reg(2, Lsl, 0)),
        (0xb8a27820, "ldrsw x0, [x1, x2, lsl #2]", lds(B4, X).reg(2, Lsl, 2)),
        // Rn = 31 is SP, Rm = 31 is XZR.
        (0xf83f6be0, "str x0, [sp, xzr]", st(B8, X).rn(31).reg(31, Lsl, 0)),
        (0xf87f7be0, "ldr x0, [sp, xzr, lsl #3]", ld(B8, X).rn(31).reg(31, Lsl, 3)),
        (0xb822d820, "str w0, [x1, w2, sxtw #2]", st(B4, W).reg(2, Sxtw, 2)),
    ]);
}

#[test]
fn integer_pairs() {
    check(&[
        (0x29400440, "ldp w0, w1, [x2]", ld(B4, W).pair(0, 1).rn(2)),
        (0x295f8440, "ldp w0, w1, [x2, #252]", ld(B4, W).pair(0, 1).rn(2).imm(252)),
        (0x29200440, "stp w0, w1, [x2, #-256]", st(B4, W).pair(0, 1).rn(2).imm(-256)),
        (0xa94107e0, "ldp x0, x1, [sp, #16]", ld(B8, X).pair(0, 1).rn(31).imm(16)),
        (0xa9bf7bfd, "stp x29, x30, [sp, #-16]!", st(B8, X).pair(29, 30).rn(31).imm(-16).pre()),
        (0xa8c17bfd, "ldp x29, x30, [sp], #16", ld(B8, X).pair(29, 30).rn(31).imm(16).post()),
        (0xa9df90a3, "ldp x3, x4, [x5, #504]!", ld(B8, X).pair(3, 4).rn(5).imm(504).pre()),
        (0xa8a010a3, "stp x3, x4, [x5], #-512", st(B8, X).pair(3, 4).rn(5).imm(-512).post()),
        (0x697f8440, "ldpsw x0, x1, [x2, #-4]", lds(B4, X).pair(0, 1).rn(2).imm(-4)),
        (0x68c08440, "ldpsw x0, x1, [x2], #4", lds(B4, X).pair(0, 1).rn(2).imm(4).post()),
        (0x69c10440, "ldpsw x0, x1, [x2, #8]!", lds(B4, X).pair(0, 1).rn(2).imm(8).pre()),
        (0xa940045f, "ldp xzr, x1, [x2]", ld(B8, X).pair(31, 1).rn(2)),
        (0xa8410440, "ldnp x0, x1, [x2, #16]", ld(B8, X).pair(0, 1).rn(2).imm(16).order(MemOrder::NonTemporal)),
        (0x283f0440, "stnp w0, w1, [x2, #-8]", st(B4, W).pair(0, 1).rn(2).imm(-8).order(MemOrder::NonTemporal)),
    ]);
}

#[test]
fn simd_single() {
    check(&[
        (0x3d7ffc20, "ldr b0, [x1, #4095]", ldv(B1).imm(4095)),
        (0x3d000020, "str b0, [x1]", stv(B1)),
        (0x7d400441, "ldr h1, [x2, #2]", ldv(B2).rt(1).rn(2).imm(2)),
        (0x7d3ffc41, "str h1, [x2, #8190]", stv(B2).rt(1).rn(2).imm(8190)),
        (0xbd400462, "ldr s2, [x3, #4]", ldv(B4).rt(2).rn(3).imm(4)),
        (0xbd3fffe2, "str s2, [sp, #16380]", stv(B4).rt(2).rn(31).imm(16380)),
        (0xfd400483, "ldr d3, [x4, #8]", ldv(B8).rt(3).rn(4).imm(8)),
        (0xfd3ffc83, "str d3, [x4, #32760]", stv(B8).rt(3).rn(4).imm(32760)),
        (0x3dc004a4, "ldr q4, [x5, #16]", ldv(B16).rt(4).rn(5).imm(16)),
        (0x3dbffca4, "str q4, [x5, #65520]", stv(B16).rt(4).rn(5).imm(65520)),
        (0x3c5ff020, "ldur b0, [x1, #-1]", ldv(B1).imm(-1)),
        (0x7c1fe041, "stur h1, [x2, #-2]", stv(B2).rt(1).rn(2).imm(-2)),
        (0xbc401062, "ldur s2, [x3, #1]", ldv(B4).rt(2).rn(3).imm(1)),
        (0xfc1f8083, "stur d3, [x4, #-8]", stv(B8).rt(3).rn(4).imm(-8)),
        (0x3cdf00a4, "ldur q4, [x5, #-16]", ldv(B16).rt(4).rn(5).imm(-16)),
        (0x3c401420, "ldr b0, [x1], #1", ldv(B1).imm(1).post()),
        (0x7c1fec41, "str h1, [x2, #-2]!", stv(B2).rt(1).rn(2).imm(-2).pre()),
        (0xbc404c62, "ldr s2, [x3, #4]!", ldv(B4).rt(2).rn(3).imm(4).pre()),
        (0xfc1f8483, "str d3, [x4], #-8", stv(B8).rt(3).rn(4).imm(-8).post()),
        (0x3cd00ca4, "ldr q4, [x5, #-256]!", ldv(B16).rt(4).rn(5).imm(-256).pre()),
        (0x3c8ff4a4, "str q4, [x5], #255", stv(B16).rt(4).rn(5).imm(255).post()),
        (0x3c626820, "ldr b0, [x1, x2]", ldv(B1).reg(2, Lsl, 0)),
        (0x3c627820, "ldr b0, [x1, x2, lsl #0]", ldv(B1).reg(2, Lsl, 0)),
        (0x7c625820, "ldr h0, [x1, w2, uxtw #1]", ldv(B2).reg(2, Uxtw, 1)),
        (0xbc227820, "str s0, [x1, x2, lsl #2]", stv(B4).reg(2, Lsl, 2)),
        (0xfc62d820, "ldr d0, [x1, w2, sxtw #3]", ldv(B8).reg(2, Sxtw, 3)),
        (0x3ce27820, "ldr q0, [x1, x2, lsl #4]", ldv(B16).reg(2, Lsl, 4)),
        (0x3ca2e820, "str q0, [x1, x2, sxtx]", stv(B16).reg(2, Sxtx, 0)),
    ]);
}

#[test]
fn simd_pairs() {
    check(&[
        (0x2d600440, "ldp s0, s1, [x2, #-256]", ldv(B4).pair(0, 1).rn(2).imm(-256)),
        (0x2d9f8440, "stp s0, s1, [x2, #252]!", stv(B4).pair(0, 1).rn(2).imm(252).pre()),
        (0x6cc08440, "ldp d0, d1, [x2], #8", ldv(B8).pair(0, 1).rn(2).imm(8).post()),
        (0x6d1f87e0, "stp d0, d1, [sp, #504]", stv(B8).pair(0, 1).rn(31).imm(504)),
        (0xad410440, "ldp q0, q1, [x2, #32]", ldv(B16).pair(0, 1).rn(2).imm(32)),
        (0xada00440, "stp q0, q1, [x2, #-1024]!", stv(B16).pair(0, 1).rn(2).imm(-1024).pre()),
        (0xacdffffe, "ldp q30, q31, [sp], #1008", ldv(B16).pair(30, 31).rn(31).imm(1008).post()),
        (0xac408440, "ldnp q0, q1, [x2, #16]", ldv(B16).pair(0, 1).rn(2).imm(16).order(MemOrder::NonTemporal)),
        (0x6c000440, "stnp d0, d1, [x2]", stv(B8).pair(0, 1).rn(2).order(MemOrder::NonTemporal)),
    ]);
}

#[test]
fn acquire_release() {
    use MemOrder::{Acquire, AcquirePc, Release};
    check(&[
        (0xc8dffc20, "ldar x0, [x1]", ld(B8, X).order(Acquire)),
        (0x88dfffe0, "ldar w0, [sp]", ld(B4, W).rn(31).order(Acquire)),
        (0x08dffc20, "ldarb w0, [x1]", ld(B1, W).order(Acquire)),
        (0x48dffc20, "ldarh w0, [x1]", ld(B2, W).order(Acquire)),
        (0xc89ffc20, "stlr x0, [x1]", st(B8, X).order(Release)),
        (0x889ffc20, "stlr w0, [x1]", st(B4, W).order(Release)),
        (0x089ffc20, "stlrb w0, [x1]", st(B1, W).order(Release)),
        (0x489ffc20, "stlrh w0, [x1]", st(B2, W).order(Release)),
        (0xf8bfc020, "ldapr x0, [x1]", ld(B8, X).order(AcquirePc)),
        (0xb8bfc020, "ldapr w0, [x1]", ld(B4, W).order(AcquirePc)),
        (0x38bfc020, "ldaprb w0, [x1]", ld(B1, W).order(AcquirePc)),
        (0x78bfc020, "ldaprh w0, [x1]", ld(B2, W).order(AcquirePc)),
    ]);
}

/// Exhaustive over the imm7 field: the pair offset is sign-extended and
/// scaled by the access size (`imm7 << scale`, scale 2/3/4).
#[test]
fn pair_offset_scaling() {
    for imm7 in 0u32..128 {
        let signed = if imm7 >= 64 { imm7 as i64 - 128 } else { imm7 as i64 };
        for (opc_v, size) in [(0x2900_0000u32, 4), (0xa900_0000, 8), (0xad00_0000, 16)] {
            // Rt = 0, Rt2 = 1, Rn = 2, signed offset, store.
            let word = opc_v | imm7 << 15 | 1 << 10 | 2 << 5;
            let a = decode(PC, word).unwrap();
            assert_eq!(a.offset, Offset::Imm(signed * size), "{word:#x}");
        }
    }
}

/// Exhaustive over imm9 (unscaled and indexed forms are never scaled) and
/// spot checks of imm12 scaling for every size.
#[test]
fn immediate_scaling() {
    for imm9 in 0u32..512 {
        let signed = if imm9 >= 256 { imm9 as i64 - 512 } else { imm9 as i64 };
        for (base, addressing) in [
            (0xf840_0020u32, Addressing::Offset),
            (0xf840_0420, Addressing::PostIndex),
            (0xf840_0c20, Addressing::PreIndex),
        ] {
            let a = decode(PC, base | imm9 << 12).unwrap();
            assert_eq!((a.offset, a.addressing), (Offset::Imm(signed), addressing));
        }
    }
    for (word, scale) in [(0x3940_0420u32, 1), (0x7940_0420, 2), (0xb940_0420, 4), (0xf940_0420, 8), (0x3dc0_0420, 16)]
    {
        assert_eq!(decode(PC, word).unwrap().offset, Offset::Imm(scale));
    }
}
