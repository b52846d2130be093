//! Rejection of unsupported instructions, with error text naming the PC and
//! the word.
//!
//! Words marked "hand" were encoded by hand from the ARM ARM field tables
//! because the assembler refuses to emit these (CONSTRAINED) UNPREDICTABLE
//! forms; the rest come from `llvm-mc -show-encoding`.

use mmio_trap::{DecodeError, Isa, Reason, a32, a64};

const PC64: u64 = 0xffff_ff80_0040_1234;
const PC32: u32 = 0x0000_1000;

fn check64(cases: &[(u32, &str, Reason)]) {
    for &(word, asm, reason) in cases {
        let err = a64::decode(PC64, word).expect_err(asm);
        assert_eq!(err, DecodeError { isa: Isa::A64, pc: PC64, word, reason }, "{asm}");
        let text = err.to_string();
        assert!(text.contains(&format!("{word:#010x}")), "{text}");
        assert!(text.contains("0xffffff8000401234"), "{text}");
        assert!(text.ends_with(reason.as_str()), "{text}");
    }
}

fn check32(cases: &[(u32, &str, Reason)]) {
    for &(word, asm, reason) in cases {
        let err = a32::decode(PC32, word).expect_err(asm);
        assert_eq!(err, DecodeError { isa: Isa::A32, pc: u64::from(PC32), word, reason }, "{asm}");
        let text = err.to_string();
        assert!(text.contains(&format!("{word:#010x}")), "{text}");
        assert!(text.contains("at pc 0x00001000"), "{text}");
        assert!(text.ends_with(reason.as_str()), "{text}");
    }
}

#[test]
fn a64_error_text() {
    let err = a64::decode(PC64, 0xc85f7c20).unwrap_err();
    assert_eq!(err.to_string(), "unsupported instruction 0xc85f7c20 at pc 0xffffff8000401234: load-exclusive");
    let err = a64::decode(0x1000, 0x0000_0001).unwrap_err();
    assert_eq!(err.to_string(), "unsupported instruction 0x00000001 at pc 0x1000: not a load/store instruction");
}

#[test]
fn a32_error_text() {
    let err = a32::decode(0x8000_0040, 0xe1910f9f).unwrap_err();
    assert_eq!(err.to_string(), "unsupported A32 instruction 0xe1910f9f at pc 0x80000040: load-exclusive");
}

#[test]
fn a64_exclusive_atomic_ordered() {
    use Reason::*;
    check64(&[
        (0xc85f7c20, "ldxr x0, [x1]", LoadExclusive),
        (0xc8027c20, "stxr w2, x0, [x1]", StoreExclusive),
        (0x885ffc20, "ldaxr w0, [x1]", LoadExclusive),
        (0x8802fc20, "stlxr w2, w0, [x1]", StoreExclusive),
        (0xc87f0440, "ldxp x0, x1, [x2]", LoadExclusive),
        (0xc8230440, "stxp w3, x0, x1, [x2]", StoreExclusive),
        (0xc8a07c41, "cas x0, x1, [x2]", CompareAndSwap),
        (0x48207c82, "casp x0, x1, x2, x3, [x4]", CompareAndSwap),
        (0x08a07c41, "casb w0, w1, [x2]", CompareAndSwap),
        (0xf8200041, "ldadd x0, x1, [x2]", AtomicMemoryOp),
        (0xf8208041, "swp x0, x1, [x2]", AtomicMemoryOp),
        (0xb820003f, "stadd w0, [x1]", AtomicMemoryOp),
        (0xf83fd020, "ld64b x0, [x1]", Unallocated),
        (0xc8df7c20, "ldlar x0, [x1]", LoRegion),
        (0x889f7c20, "stllr w0, [x1]", LoRegion),
        (0xd95f8020, "ldapur x0, [x1, #-8]", RcpcUnscaled),
        (0x99004020, "stlur w0, [x1, #4]", RcpcUnscaled),
        // hand: LDAR with Rs = 0 instead of the should-be-one 11111.
        (0xc8c0fc20, "ldar x0, [x1] (Rs = 0)", ReservedFieldValue),
        // hand: LDAPR with Rs = 0.
        (0xf8a0c020, "ldapr x0, [x1] (Rs = 0)", ReservedFieldValue),
    ]);
}

#[test]
fn a64_other_classes() {
    use Reason::*;
    check64(&[
        (0x58000080, "ldr x0, #16", PcRelative),
        (0x9cffff80, "ldr q0, #-16", PcRelative),
        (0x98000040, "ldrsw x0, #8", PcRelative),
        (0xf9800400, "prfm pldl1keep, [x0, #8]", Prefetch),
        (0xf8a16800, "prfm pldl1keep, [x0, x1]", Prefetch),
        (0xf89ff000, "prfum pldl1keep, [x0, #-1]", Prefetch),
        (0xd8000080, "prfm pldl1keep, #16", Prefetch),
        (0x4c407000, "ld1 {v0.16b}, [x0]", SimdStructure),
        (0x4c9fa800, "st1 {v0.4s, v1.4s}, [x0], #32", SimdStructure),
        (0x0d409000, "ld1 {v0.s}[1], [x0]", SimdStructure),
        (0x4d40c800, "ld1r {v0.4s}, [x0]", SimdStructure),
        (0xd9600020, "ldg x0, [x1]", MemoryTag),
        (0xd9201820, "stg x0, [x1, #16]", MemoryTag),
        (0x69000440, "stgp x0, x1, [x2]", MemoryTag),
        (0xd9bfec20, "st2g x0, [x1, #-32]!", MemoryTag),
        (0xf8200420, "ldraa x0, [x1]", PointerAuth),
        (0xf8a01c20, "ldrab x0, [x1, #8]!", PointerAuth),
        (0xf8400820, "ldtr x0, [x1]", Unprivileged),
        (0x38001820, "sttrb w0, [x1, #1]", Unprivileged),
        (0xb89fc820, "ldtrsw x0, [x1, #-4]", Unprivileged),
        (0x19010440, "cpyfp [x0]!, [x1]!, x2!", MemoryCopySet),
        (0x19c20420, "setp [x0]!, x1!, x2", MemoryCopySet),
        (0x8b020020, "add x0, x1, x2", NotLoadStore),
        (0xd503201f, "nop", NotLoadStore),
        (0x14000001, "b #4", NotLoadStore),
        (0xd4000001, "svc #0", NotLoadStore),
        (0xd5380000, "mrs x0, midr_el1", NotLoadStore),
        (0xd50b7e20, "dc civac, x0", NotLoadStore),
        (0x00000000, "udf #0", NotLoadStore),
        // hand: size = 10, opc = 11 (no LDRSW into W).
        (0xb9c00020, "size=10 opc=11 unsigned imm", Unallocated),
        // hand: SIMD&FP H register with opc = 1x.
        (0x7dc00020, "SIMD size=01 opc=11", Unallocated),
        // hand: LDP with opc = 11.
        (0xe9400440, "ldp opc=11", Unallocated),
        // hand: PRFM slot (size = 11, opc = 10) in the pre-indexed class.
        (0xf8800c20, "pre-indexed size=11 opc=10", Unallocated),
        // hand: register offset with option = 000.
        (0xf8620820, "register offset option=000", Unallocated),
        // hand: LDTR-position (bits 11:10 = 10) with V = 1.
        (0x3c400820, "unprivileged SIMD", Unallocated),
        // hand: LDNP with opc = 01 (there is no LDNPSW).
        (0x68400440, "ldnp opc=01", Unallocated),
    ]);
}

#[test]
fn a64_constrained_unpredictable() {
    use Reason::*;
    check64(&[
        (0xa8400822, "ldnp x2, x2, [x1]", PairSameRegister),
        // hand: ldp x0, x0, [x1]
        (0xa9400020, "ldp x0, x0, [x1]", PairSameRegister),
        // hand: ldp q1, q1, [x1]
        (0xad400421, "ldp q1, q1, [x1]", PairSameRegister),
        // hand: ldp xzr, xzr, [x1] (t == t2 even for the zero register)
        (0xa9407c3f, "ldp xzr, xzr, [x1]", PairSameRegister),
        // hand: ldp x1, x2, [x1], #16
        (0xa8c10821, "ldp x1, x2, [x1], #16", WritebackOverlap),
        // hand: stp x1, x2, [x2, #-16]!
        (0xa9bf0841, "stp x1, x2, [x2, #-16]!", WritebackOverlap),
        // hand: ldr x1, [x1, #8]!
        (0xf8408c21, "ldr x1, [x1, #8]!", WritebackOverlap),
        // hand: str x1, [x1], #8
        (0xf8008421, "str x1, [x1], #8", WritebackOverlap),
        // hand: strb w3, [x3, #1]!
        (0x38001c63, "strb w3, [x3, #1]!", WritebackOverlap),
    ]);
    // Not overlaps: SIMD&FP registers and register 31 (SP vs XZR).
    assert!(a64::decode(PC64, 0x3c401421).is_ok()); // ldr b1, [x1], #1
    assert!(a64::decode(PC64, 0xacc10821).is_ok()); // ldp q1, q2, [x1], #32
    assert!(a64::decode(PC64, 0xb8404fff).is_ok()); // ldr wzr, [sp, #4]!
    assert!(a64::decode(PC64, 0xa9407c20).is_ok()); // ldp x0, xzr, [x1]
}

#[test]
fn a32_classes() {
    use Reason::*;
    check32(&[
        (0xe92d4ff0, "push {r4-r11, lr}", LoadStoreMultiple),
        (0xe8bd8ff0, "pop {r4-r11, pc}", LoadStoreMultiple),
        (0xe8b00006, "ldm r0!, {r1, r2}", LoadStoreMultiple),
        (0xe9000006, "stmdb r0, {r1, r2}", LoadStoreMultiple),
        (0xe1910f9f, "ldrex r0, [r1]", LoadExclusive),
        (0xe1812f90, "strex r2, r0, [r1]", StoreExclusive),
        (0xe1b20f9f, "ldrexd r0, r1, [r2]", LoadExclusive),
        (0xe1c12f90, "strexb r2, r0, [r1]", StoreExclusive),
        (0xe1f10f9f, "ldrexh r0, [r1]", LoadExclusive),
        (0xe1020091, "swp r0, r1, [r2]", Swap),
        (0xe1420091, "swpb r0, r1, [r2]", Swap),
        (0xed915e01, "ldc p14, c5, [r1, #4]", Coprocessor),
        (0xed815e00, "stc p14, c5, [r1]", Coprocessor),
        (0xee070f15, "mcr p15, 0, r0, c7, c5, 0", Coprocessor),
        (0xee100f10, "mrc p15, 0, r0, c0, c0, 0", Coprocessor),
        (0xef000000, "svc #0", Coprocessor),
        (0xf5d0f004, "pld [r0, #4]", Prefetch),
        (0xf4d0f000, "pli [r0]", Prefetch),
        (0xf7d0f001, "pld [r0, r1]", Prefetch),
        (0xf4200a0f, "vld1.8 {d0}, [r0]", SimdStructure),
        (0xf8bd0a00, "rfeia sp!", Unconditional),
        (0xf96d0513, "srsdb sp!, #19", Unconditional),
        (0xf57ff01f, "clrex", Unconditional),
        (0xe6ef0071, "uxtb r0, r1", MediaOrMultiply),
        (0xe7803211, "usada8 r0, r1, r2, r3", MediaOrMultiply),
        (0xe0000291, "mul r0, r1, r2", MediaOrMultiply),
        (0xe0810392, "umull r0, r1, r2, r3", MediaOrMultiply),
        (0xe0810002, "add r0, r1, r2", NotLoadStore),
        (0xe3a00001, "mov r0, #1", NotLoadStore),
        (0xea000002, "b #8", NotLoadStore),
        (0xe12fff1e, "bx lr", NotLoadStore),
    ]);
}

#[test]
fn a32_unprivileged_and_pc() {
    use Reason::*;
    check32(&[
        (0xe4b10004, "ldrt r0, [r1], #4", Unprivileged),
        (0xe4a10000, "strt r0, [r1], #0", Unprivileged),
        (0xe6f10002, "ldrbt r0, [r1], r2", Unprivileged),
        (0xe4610001, "strbt r0, [r1], #-1", Unprivileged),
        (0xe0f100b2, "ldrht r0, [r1], #2", Unprivileged),
        (0xe0f100d1, "ldrsbt r0, [r1], #1", Unprivileged),
        (0xe0b100f2, "ldrsht r0, [r1], r2", Unprivileged),
        (0xe590f000, "ldr pc, [r0]", LoadIntoPc),
        (0xe49df004, "pop {pc} (ldr pc, [sp], #4)", LoadIntoPc),
        (0xe59f0008, "ldr r0, [pc, #8]", PcRelative),
        (0xe51f0008, "ldr r0, [pc, #-8]", PcRelative),
        (0xe1df00b2, "ldrh r0, [pc, #2]", PcRelative),
        (0xe1cf00d8, "ldrd r0, r1, [pc, #8]", PcRelative),
        (0xe5df0000, "ldrb r0, [pc]", PcRelative),
        (0xe580f000, "str pc, [r0]", StoreOfPc),
        (0xe58f0004, "str r0, [pc, #4]", PcRelative),
        (0xe791000f, "ldr r0, [r1, pc]", PcOffsetRegister),
        (0xe19100bf, "ldrh r0, [r1, pc]", PcOffsetRegister),
    ]);
}

#[test]
fn a32_unpredictable() {
    use Reason::*;
    check32(&[
        // hand: ldrd r1, r2, [r3] (odd Rt)
        (0xe1c310d0, "ldrd r1, r2, [r3]", PairOddRegister),
        // hand: strd r3, r4, [r0, #8]
        (0xe1c030f8, "strd r3, r4, [r0, #8]", PairOddRegister),
        // hand: ldrd r14, pc, [r0]
        (0xe1c0e0d0, "ldrd lr, pc, [r0]", PairIntoPc),
        // hand: strd r14, pc, [r0]
        (0xe1c0e0f0, "strd lr, pc, [r0]", PairIntoPc),
        // hand: ldrd r0, r1, [r2, r0] / [r2, r1]
        (0xe18200d0, "ldrd r0, r1, [r2, r0]", OffsetOverlap),
        (0xe18200d1, "ldrd r0, r1, [r2, r1]", OffsetOverlap),
        // hand: ldrd r0, r1, [r2, pc]
        (0xe18200df, "ldrd r0, r1, [r2, pc]", PcOffsetRegister),
        // hand: ldrd r0, r1, [r1, #8]! / ldrd r0, r1, [r0], #8
        (0xe1e100d8, "ldrd r0, r1, [r1, #8]!", WritebackOverlap),
        (0xe0c000d8, "ldrd r0, r1, [r0], #8", WritebackOverlap),
        // hand: strd r0, r1, [r0, #-8]!
        (0xe16000f8, "strd r0, r1, [r0, #-8]!", WritebackOverlap),
        // hand: ldr r1, [r1, #4]! / str r2, [r2], #4 / ldrh r3, [r3], r4
        (0xe5b11004, "ldr r1, [r1, #4]!", WritebackOverlap),
        (0xe4822004, "str r2, [r2], #4", WritebackOverlap),
        (0xe09330b4, "ldrh r3, [r3], r4", WritebackOverlap),
        // hand: ldrh r0, [r1, r2] with bits 11:8 = 0101 (should be zero)
        (0xe19105b2, "ldrh r0, [r1, r2] (SBZ = 5)", ReservedFieldValue),
        // hand: LDRD with P = 0, W = 1
        (0xe0e200d8, "ldrd r0, r1, [r2], #8 with W = 1", Unprivileged),
    ]);
    // Rn == Rt without write-back and LDRD offset register equal to Rn are
    // fine; STRD may use Rt as offset register.
    assert!(a32::decode(PC32, 0xe5911000).is_ok()); // ldr r1, [r1]
    assert!(a32::decode(PC32, 0xe18200d2).is_ok()); // ldrd r0, r1, [r2, r2]
    assert!(a32::decode(PC32, 0xe18200f0).is_ok()); // strd r0, r1, [r2, r0]
}
