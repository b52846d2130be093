//! A32 emulation against a fake register file and a fake bus.

mod common;

use common::{A32Regs, C, CPSR_USR, FakeBus, N, V, Z};
use mmio_trap::a32::{self, Condition, Shift};
use mmio_trap::{BusError, EmulateError, Emulated, Kind, Size};

const PC: u32 = 0x0000_2000;
const DEV: u32 = 0x8000_0000; // an FPGA PL window as seen from the R5
const D: u64 = DEV as u64;

fn run(word: u32, regs: &mut A32Regs, bus: &mut FakeBus) -> Result<Emulated, EmulateError> {
    let access = a32::decode(PC, word).expect("decodes");
    a32::emulate(&access, regs, bus)
}

fn setup(rn: usize, base: u32) -> (A32Regs, FakeBus) {
    let mut regs = A32Regs::new();
    regs.r[rn] = base;
    (regs, FakeBus::new())
}

#[test]
fn loads_and_stores_every_size() {
    // (word, asm, kind, size, expected r0 after load)
    let cases = [
        (0xe5910000u32, "ldr r0, [r1]", Kind::Load, Size::B4, 0xf4f3_f2f1u32),
        (0xe5d10000, "ldrb r0, [r1]", Kind::Load, Size::B1, 0xf1),
        (0xe1d100b0, "ldrh r0, [r1]", Kind::Load, Size::B2, 0xf2f1),
        (0xe1d100d0, "ldrsb r0, [r1]", Kind::Load, Size::B1, 0xffff_fff1),
        (0xe1d100f0, "ldrsh r0, [r1]", Kind::Load, Size::B2, 0xffff_f2f1),
    ];
    for (word, asm, kind, size, expected) in cases {
        let (mut regs, mut bus) = setup(1, DEV);
        bus.poke(D, Size::B4, 0xf4f3_f2f1);
        let before = regs.clone();
        let done = run(word, &mut regs, &mut bus).unwrap();
        assert_eq!(regs.r[0], expected, "{asm}");
        assert_eq!(bus.log.len(), 1);
        assert_eq!((bus.log[0].0, bus.log[0].1, bus.log[0].2), (kind, D, size), "{asm}");
        assert!(done.executed);
        assert_eq!(done.pc_advance, 4);
        regs.r[0] = before.r[0];
        assert_eq!(regs, before, "{asm}");
    }
    for (word, asm, size) in [
        (0xe5810000u32, "str r0, [r1]", Size::B4),
        (0xe5c10000, "strb r0, [r1]", Size::B1),
        (0xe1c100b0, "strh r0, [r1]", Size::B2),
    ] {
        let (mut regs, mut bus) = setup(1, DEV);
        regs.r[0] = 0x4433_2211;
        let before = regs.clone();
        run(word, &mut regs, &mut bus).unwrap();
        let value = 0x4433_2211u128 & size.mask();
        assert_eq!(bus.log, vec![(Kind::Store, D, size, value)], "{asm}");
        assert_eq!(bus.peek(D, Size::B8), value, "{asm}: only {size:?} written");
        assert_eq!(regs, before);
    }
}

#[test]
fn sign_extension() {
    for (word, mem, expected) in [
        (0xe1d100d0u32, 0x80u32, 0xffff_ff80u32), // ldrsb r0, [r1]
        (0xe1d100d0, 0x7f, 0x7f),
        (0xe5d10000, 0x80, 0x80),          // ldrb zero-extends
        (0xe1d100f0, 0x8000, 0xffff_8000), // ldrsh r0, [r1]
        (0xe1d100f0, 0x7fff, 0x7fff),
        (0xe1d100b0, 0x8000, 0x8000), // ldrh zero-extends
    ] {
        let (mut regs, mut bus) = setup(1, DEV);
        bus.poke(D, Size::B2, u128::from(mem));
        run(word, &mut regs, &mut bus).unwrap();
        assert_eq!(regs.r[0], expected, "{word:#x}");
    }
}

#[test]
fn up_down_and_indexing() {
    // (word, asm, expected address, expected r1 afterwards)
    let cases = [
        (0xe5110fff_u32, "ldr r0, [r1, #-4095]", DEV - 4095, DEV),
        (0xe5110000, "ldr r0, [r1, #-0]", DEV, DEV),
        (0xe5b10004, "ldr r0, [r1, #4]!", DEV + 4, DEV + 4),
        (0xe4110008, "ldr r0, [r1], #-8", DEV, DEV - 8),
        (0xe14100b2, "strh r0, [r1, #-2]", DEV - 2, DEV),
        (0xe0410fbf, "strh r0, [r1], #-255", DEV, DEV - 255),
        (0xe17100d1, "ldrsb r0, [r1, #-1]!", DEV - 1, DEV - 1),
        (0xe7110002, "ldr r0, [r1, -r2]", DEV - 0x40, DEV),
        (0xe7210f82, "str r0, [r1, -r2, lsl #31]!", DEV, DEV), // 0x40 << 31 == 0
        (0xe6410002, "strb r0, [r1], -r2", DEV, DEV - 0x40),
        (0xe12100b2, "strh r0, [r1, -r2]!", DEV - 0x40, DEV - 0x40),
        (0xe09100b2, "ldrh r0, [r1], r2", DEV, DEV + 0x40),
    ];
    for (word, asm, addr, rn_after) in cases {
        let (mut regs, mut bus) = setup(1, DEV);
        regs.r[2] = 0x40;
        let done = run(word, &mut regs, &mut bus).unwrap();
        assert_eq!(done.addr(), Some(u64::from(addr)), "{asm}");
        assert_eq!(regs.r[1], rn_after, "{asm}");
        let wb = a32::decode(PC, word).unwrap().addressing.writeback();
        assert_eq!(done.writeback, wb.then_some(u64::from(rn_after)), "{asm}");
    }
}

#[test]
fn shifted_register_offsets() {
    // base r1 = DEV, offset register r2; (word, asm, r2, carry, expected offset)
    let cases = [
        (0xe7910102u32, "ldr r0, [r1, r2, lsl #2]", 0x10u32, false, 0x40u32),
        (0xe7910022, "ldr r0, [r1, r2, lsr #32]", 0xffff_ffff, false, 0),
        (0xe79100c2, "ldr r0, [r1, r2, asr #1]", 0x20, false, 0x10),
        (0xe7910042, "ldr r0, [r1, r2, asr #32]", 0x8000_0000, false, 0xffff_ffff),
        (0xe7910042, "ldr r0, [r1, r2, asr #32]", 0x7fff_ffff, false, 0),
        (0xe7910462, "ldr r0, [r1, r2, ror #8]", 0x0000_0110, false, 0x1000_0001),
        (0xe7910062, "ldr r0, [r1, r2, rrx]", 0x20, true, 0x8000_0010),
        (0xe7910062, "ldr r0, [r1, r2, rrx]", 0x21, false, 0x10),
    ];
    for (word, asm, r2, carry, off) in cases {
        let (mut regs, mut bus) = setup(1, DEV);
        regs.r[2] = r2;
        if carry {
            regs.cpsr |= C;
        }
        let done = run(word, &mut regs, &mut bus).unwrap();
        assert_eq!(done.addr(), Some(u64::from(DEV.wrapping_add(off))), "{asm}");
    }
    assert_eq!(Shift::Lsr(32).apply(u32::MAX, false), 0);
    assert_eq!(Shift::Lsl(0).apply(7, true), 7);
}

#[test]
fn doubleword() {
    // ldrd r4, r5, [r6], #16
    let (mut regs, mut bus) = setup(6, DEV);
    bus.poke(D, Size::B8, 0x5555_5555_4444_4444);
    let done = run(0xe0c641d0, &mut regs, &mut bus).unwrap();
    assert_eq!((regs.r[4], regs.r[5], regs.r[6]), (0x4444_4444, 0x5555_5555, DEV + 16));
    assert_eq!(bus.log, vec![(Kind::Load, D, Size::B4, 0x4444_4444), (Kind::Load, D + 4, Size::B4, 0x5555_5555)]);
    assert_eq!(done.accesses().len(), 2);

    // ldrd r0, r1, [r2, -r3]!
    let (mut regs, mut bus) = setup(2, DEV);
    regs.r[3] = 8;
    bus.poke(D - 8, Size::B8, 0x1111_1111_0000_0000);
    run(0xe12200d3, &mut regs, &mut bus).unwrap();
    assert_eq!((regs.r[0], regs.r[1], regs.r[2]), (0, 0x1111_1111, DEV - 8));

    // strd r12, sp, [r2], #-8
    let (mut regs, mut bus) = setup(2, DEV);
    regs.r[12] = 0xcccc;
    regs.r[13] = 0xdddd;
    run(0xe042c0f8, &mut regs, &mut bus).unwrap();
    assert_eq!(bus.log, vec![(Kind::Store, D, Size::B4, 0xcccc), (Kind::Store, D + 4, Size::B4, 0xdddd)]);
    assert_eq!(regs.r[2], DEV - 8);

    // strd r2, r3, [r2]: base equal to Rt, no write-back.
    let (mut regs, mut bus) = setup(2, DEV);
    regs.r[3] = 3;
    run(0xe1c220f0, &mut regs, &mut bus).unwrap();
    assert_eq!(bus.peek(D, Size::B8), u128::from(DEV) | 3 << 32);
}

#[test]
fn condition_truth_table() {
    use Condition::*;
    // (condition, flags that pass, flags that fail)
    let cases = [
        (Eq, Z, 0),
        (Ne, 0, Z),
        (Cs, C, 0),
        (Cc, 0, C),
        (Mi, N, 0),
        (Pl, 0, N),
        (Vs, V, 0),
        (Vc, 0, V),
        (Hi, C, C | Z),
        (Ls, Z, C),
        (Ge, N | V, N),
        (Lt, N, 0),
        (Gt, 0, Z),
        (Le, Z, N | V),
    ];
    for (cond, pass, fail) in cases {
        assert!(cond.passed(pass), "{cond:?} {pass:#x}");
        assert!(!cond.passed(fail), "{cond:?} {fail:#x}");
    }
    // Exhaustive: each condition and its inverse (cond ^ 1) disagree on all
    // 16 flag combinations; AL always passes.
    for flags in 0u32..16 {
        let cpsr = flags << 28;
        for c in (0..14).step_by(2) {
            let a = Condition::from_bits(c).unwrap();
            let b = Condition::from_bits(c + 1).unwrap();
            assert_ne!(a.passed(cpsr), b.passed(cpsr), "{a:?}/{b:?} {cpsr:#x}");
        }
        assert!(Al.passed(cpsr));
    }
    assert_eq!(Condition::from_bits(15), None);
}

#[test]
fn conditional_execution() {
    // ldrne r0, [r1]: executed with Z clear, skipped with Z set.
    let (mut regs, mut bus) = setup(1, DEV);
    bus.poke(D, Size::B4, 0x1234);
    let done = run(0x15910000, &mut regs, &mut bus).unwrap();
    assert!(done.executed);
    assert_eq!(regs.r[0], 0x1234);

    let (mut regs, mut bus) = setup(1, DEV);
    regs.cpsr |= Z;
    let before = regs.clone();
    let done = run(0x15910000, &mut regs, &mut bus).unwrap();
    assert!(!done.executed);
    assert_eq!(done.pc_advance, 4);
    assert_eq!(done.accesses().len(), 0);
    assert_eq!(done.writeback, None);
    assert_eq!(regs, before);
    assert!(bus.log.is_empty());

    // strhgt lr, [sp, #-2]!: skipped means no write-back either.
    let (mut regs, mut bus) = setup(13, DEV);
    regs.cpsr |= N; // N != V: GT fails
    let before = regs.clone();
    let done = run(0xc16de0b2, &mut regs, &mut bus).unwrap();
    assert!(!done.executed);
    assert_eq!(regs, before);
    regs.cpsr = CPSR_USR | N | V; // N == V, Z clear: GT passes
    run(0xc16de0b2, &mut regs, &mut bus).unwrap();
    assert_eq!(regs.r[13], DEV - 2);
    assert_eq!(bus.log, vec![(Kind::Store, D - 2, Size::B2, u128::from(regs.r[14] & 0xffff))]);

    // ldrdlt r0, r1, [sp]
    let (mut regs, mut bus) = setup(13, DEV);
    regs.cpsr |= V;
    run(0xb1cd00d0, &mut regs, &mut bus).unwrap();
    assert_eq!(bus.log.len(), 2);
}

#[test]
fn failing_bus_leaves_registers_untouched() {
    // ldr r0, [r1, #4]!
    let (mut regs, _) = setup(1, DEV);
    let mut bus = FakeBus::new().failing_at(D + 4);
    let before = regs.clone();
    let err = run(0xe5b10004, &mut regs, &mut bus).unwrap_err();
    assert_eq!(err, EmulateError::Bus { addr: D + 4, size: Size::B4, kind: Kind::Load, error: BusError::Timeout });
    assert_eq!(regs, before);

    // ldrd r4, r5, [r6], #16 failing on the second word.
    let (mut regs, _) = setup(6, DEV);
    let mut bus = FakeBus::new().failing_at(D + 4);
    let before = regs.clone();
    run(0xe0c641d0, &mut regs, &mut bus).unwrap_err();
    assert_eq!(regs, before);

    // strb r0, [r1], -r2
    let (mut regs, _) = setup(1, DEV);
    let mut bus = FakeBus::new().failing_at(D);
    let before = regs.clone();
    run(0xe6410002, &mut regs, &mut bus).unwrap_err();
    assert_eq!(regs, before);
}

#[test]
fn rejects_big_endian_and_thumb_state() {
    let (mut regs, mut bus) = setup(1, DEV);
    regs.cpsr |= 1 << 9;
    assert_eq!(run(0xe5910000, &mut regs, &mut bus), Err(EmulateError::BigEndian));
    let (mut regs, mut bus) = setup(1, DEV);
    regs.cpsr |= 1 << 5;
    assert_eq!(run(0xe5910000, &mut regs, &mut bus), Err(EmulateError::ThumbState));
    assert!(bus.log.is_empty());
}

#[test]
fn address_arithmetic_wraps_at_32_bits() {
    let (mut regs, mut bus) = setup(1, 0xffff_fffc);
    run(0xe5b10008, &mut regs, &mut bus).unwrap(); // ldr r0, [r1, #8]!
    assert_eq!(regs.r[1], 4);
    assert_eq!(bus.log[0].1, 4);

    // ldrd at 0xfffffffc: second word wraps to 0.
    let (mut regs, mut bus) = setup(2, 0xffff_fffc);
    run(0xe1c200d0, &mut regs, &mut bus).unwrap(); // ldrd r0, r1, [r2]
    assert_eq!(bus.log[1].1, 0);
}
