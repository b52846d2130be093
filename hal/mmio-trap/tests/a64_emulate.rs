//! A64 emulation against a fake register file and a fake bus.

mod common;

use common::{A64Regs, FakeBus};
use mmio_trap::a64::{self, RegisterFile};
use mmio_trap::{BusError, EmulateError, Emulated, Kind, Size};

const PC: u64 = 0xffff_ff80_0040_0000;
const DEV: u64 = 0xa000_0000; // an FPGA PL window

/// Decodes `word`, then emulates it.
fn run(word: u32, regs: &mut A64Regs, bus: &mut FakeBus) -> Result<Emulated, EmulateError> {
    let access = a64::decode(PC, word).expect("decodes");
    a64::emulate(&access, regs, bus)
}

fn setup(base_reg: usize, base: u64) -> (A64Regs, FakeBus) {
    let mut regs = A64Regs::new();
    if base_reg == 31 {
        regs.sp = base;
    } else {
        regs.x[base_reg] = base;
    }
    (regs, FakeBus::new())
}

#[test]
fn integer_loads_every_size_zero_extend() {
    // (word, asm, size)
    for (word, size, expected) in [
        (0x39400020u32, Size::B1, 0xf1u64),            // ldrb w0, [x1]
        (0x79400020, Size::B2, 0xf2f1),                // ldrh w0, [x1]
        (0xb9400020, Size::B4, 0xf4f3_f2f1),           // ldr w0, [x1]
        (0xf9400020, Size::B8, 0xf8f7_f6f5_f4f3_f2f1), // ldr x0, [x1]
    ] {
        let (mut regs, mut bus) = setup(1, DEV);
        bus.poke(DEV, Size::B8, 0xf8f7_f6f5_f4f3_f2f1);
        let before = regs.clone();
        let done = run(word, &mut regs, &mut bus).unwrap();
        // W destinations zero-extend into X: no 0xdead... garbage left.
        assert_eq!(regs.x[0], expected, "{word:#x}");
        assert_eq!(bus.log, vec![(Kind::Load, DEV, size, u128::from(expected))]);
        assert_eq!(done.pc_advance, 4);
        assert!(done.executed);
        assert_eq!(done.writeback, None);
        assert_eq!(done.accesses().len(), 1);
        assert_eq!(done.addr(), Some(DEV));
        // Nothing else changed.
        regs.x[0] = before.x[0];
        assert_eq!(regs, before);
    }
}

#[test]
fn integer_stores_every_size() {
    for (word, size) in [
        (0x39000020u32, Size::B1), // strb w0, [x1]
        (0x79000020, Size::B2),    // strh w0, [x1]
        (0xb9000020, Size::B4),    // str w0, [x1]
        (0xf9000020, Size::B8),    // str x0, [x1]
    ] {
        let (mut regs, mut bus) = setup(1, DEV);
        regs.x[0] = 0x8877_6655_4433_2211;
        let before = regs.clone();
        let done = run(word, &mut regs, &mut bus).unwrap();
        let value = 0x8877_6655_4433_2211u128 & size.mask();
        assert_eq!(bus.log, vec![(Kind::Store, DEV, size, value)]);
        assert_eq!(done.accesses()[0].value, value);
        assert_eq!(regs, before, "stores change no register");
        // Only `size` bytes reached memory.
        assert_eq!(bus.peek(DEV, Size::B16), value);
    }
}

#[test]
fn sign_extension() {
    // (word, memory value, expected X0)
    let cases = [
        (0x39c00020u32, 0x80u64, 0x0000_0000_ffff_ff80u64), // ldrsb w0, [x1]
        (0x39800020, 0x80, 0xffff_ffff_ffff_ff80),          // ldrsb x0, [x1]
        (0x39c00020, 0x7f, 0x7f),                           // ldrsb w0 positive
        (0x39800020, 0x7f, 0x7f),                           // ldrsb x0 positive
        (0x79c00020, 0x8000, 0x0000_0000_ffff_8000),        // ldrsh w0, [x1]
        (0x79800020, 0x8000, 0xffff_ffff_ffff_8000),        // ldrsh x0, [x1]
        (0x79800020, 0x7fff, 0x7fff),                       // ldrsh x0 positive
        (0xb9800020, 0x8000_0000, 0xffff_ffff_8000_0000),   // ldrsw x0, [x1]
        (0xb9800020, 0x7fff_ffff, 0x7fff_ffff),             // ldrsw x0 positive
        (0x38dff020, 0xff, 0xffff_ffff),                    // ldursb w0, [x1, #-1]
    ];
    for (word, mem, expected) in cases {
        let (mut regs, mut bus) = setup(1, DEV + 1);
        bus.poke(DEV + 1, Size::B8, u128::from(mem));
        bus.poke(DEV, Size::B1, u128::from(mem));
        run(word, &mut regs, &mut bus).unwrap();
        assert_eq!(regs.x[0], expected, "{word:#x} mem={mem:#x}");
    }
}

#[test]
fn simd_loads_clear_upper_bits() {
    let pattern = 0x1f1e_1d1c_1b1a_1918_1716_1514_1312_1110u128;
    for (word, size) in [
        (0x3d400020u32, Size::B1), // ldr b0, [x1]
        (0x7d400020, Size::B2),    // ldr h0, [x1]
        (0xbd400020, Size::B4),    // ldr s0, [x1]
        (0xfd400020, Size::B8),    // ldr d0, [x1]
        (0x3dc00020, Size::B16),   // ldr q0, [x1]
    ] {
        let (mut regs, mut bus) = setup(1, DEV);
        regs.v[0] = u128::MAX;
        bus.poke(DEV, Size::B16, pattern);
        let before = regs.clone();
        run(word, &mut regs, &mut bus).unwrap();
        assert_eq!(regs.v[0], pattern & size.mask(), "{size:?}");
        assert_eq!(bus.log, vec![(Kind::Load, DEV, size, pattern & size.mask())]);
        regs.v[0] = before.v[0];
        assert_eq!(regs, before);
    }
}

#[test]
fn simd_stores_every_size() {
    let pattern = 0x1f1e_1d1c_1b1a_1918_1716_1514_1312_1110u128;
    for (word, size) in [
        (0x3d000022u32, Size::B1), // str b2, [x1]
        (0x7d000022, Size::B2),    // str h2, [x1]
        (0xbd000022, Size::B4),    // str s2, [x1]
        (0xfd000022, Size::B8),    // str d2, [x1]
        (0x3d800022, Size::B16),   // str q2, [x1]
    ] {
        let (mut regs, mut bus) = setup(1, DEV);
        regs.v[2] = pattern;
        let before = regs.clone();
        run(word, &mut regs, &mut bus).unwrap();
        assert_eq!(bus.log, vec![(Kind::Store, DEV, size, pattern & size.mask())]);
        assert_eq!(regs, before);
    }
}

#[test]
fn set_v_scalar_default_method() {
    let mut regs = A64Regs::new();
    regs.v[5] = u128::MAX;
    regs.set_v_scalar(5, Size::B4, 0xdead_beef_1234_5678);
    assert_eq!(regs.v[5], 0x1234_5678);
}

#[test]
fn pre_and_post_index_writeback() {
    // ldr x0, [x1, #8]!  -> access base+8, x1 = base+8
    let (mut regs, mut bus) = setup(1, DEV);
    bus.poke(DEV + 8, Size::B8, 0x1234);
    let done = run(0xf8408c20, &mut regs, &mut bus).unwrap();
    assert_eq!((regs.x[0], regs.x[1]), (0x1234, DEV + 8));
    assert_eq!((done.addr(), done.writeback), (Some(DEV + 8), Some(DEV + 8)));

    // ldr x0, [x1], #-8  -> access base, x1 = base-8
    let (mut regs, mut bus) = setup(1, DEV);
    bus.poke(DEV, Size::B8, 0x5678);
    let done = run(0xf85f8420, &mut regs, &mut bus).unwrap();
    assert_eq!((regs.x[0], regs.x[1]), (0x5678, DEV - 8));
    assert_eq!((done.addr(), done.writeback), (Some(DEV), Some(DEV - 8)));

    // str w2, [x3], #255
    let (mut regs, mut bus) = setup(3, DEV);
    regs.x[2] = 0xaaaa_bbbb_cccc_dddd;
    run(0xb80ff462, &mut regs, &mut bus).unwrap();
    assert_eq!(bus.log, vec![(Kind::Store, DEV, Size::B4, 0xcccc_dddd)]);
    assert_eq!(regs.x[3], DEV + 255);

    // strh w6, [x7, #-2]!
    let (mut regs, mut bus) = setup(7, DEV);
    regs.x[6] = 0xbeef;
    run(0x781fece6, &mut regs, &mut bus).unwrap();
    assert_eq!(bus.log, vec![(Kind::Store, DEV - 2, Size::B2, 0xbeef)]);
    assert_eq!(regs.x[7], DEV - 2);

    // ldr q4, [x5, #-256]!
    let (mut regs, mut bus) = setup(5, DEV);
    bus.poke(DEV - 256, Size::B16, u128::MAX - 1);
    run(0x3cd00ca4, &mut regs, &mut bus).unwrap();
    assert_eq!((regs.v[4], regs.x[5]), (u128::MAX - 1, DEV - 256));

    // Unsigned-offset and unscaled forms never write back.
    let (mut regs, mut bus) = setup(1, DEV);
    run(0xf85f8020, &mut regs, &mut bus).unwrap(); // ldur x0, [x1, #-8]
    assert_eq!(regs.x[1], DEV);
    assert_eq!(bus.log[0].1, DEV - 8);
}

#[test]
fn register_offsets() {
    // (word, asm, x2 value, expected address offset)
    let cases: [(u32, &str, u64, u64); 8] = [
        (0xf8626820, "ldr x0, [x1, x2]", 0x10, 0x10),
        (0xf8627820, "ldr x0, [x1, x2, lsl #3]", 0x10, 0x80),
        // UXTW uses only W2, zero-extended.
        (0xb8624820, "ldr w0, [x1, w2, uxtw]", 0xffff_ffff_0000_0010, 0x10),
        (0xb8625820, "ldr w0, [x1, w2, uxtw #2]", 0x1234_5678_8000_0000, 0x2_0000_0000),
        // SXTW sign-extends W2: -16 << 3.
        (0xf862d820, "ldr x0, [x1, w2, sxtw #3]", 0xaaaa_aaaa_ffff_fff0, (-128i64) as u64),
        (0xf862e820, "ldr x0, [x1, x2, sxtx]", (-8i64) as u64, (-8i64) as u64),
        (0xf862f820, "ldr x0, [x1, x2, sxtx #3]", (-1i64) as u64, (-8i64) as u64),
        (0x3ce27820, "ldr q0, [x1, x2, lsl #4]", 3, 0x30),
    ];
    for (word, asm, x2, off) in cases {
        let (mut regs, mut bus) = setup(1, DEV);
        regs.x[2] = x2;
        let done = run(word, &mut regs, &mut bus).unwrap();
        assert_eq!(done.addr(), Some(DEV.wrapping_add(off)), "{asm}");
        assert_eq!((regs.x[1], regs.x[2]), (DEV, x2), "{asm}: base/offset untouched");
    }
}

#[test]
fn sp_base_and_zero_register() {
    // str x13, [sp, #8]
    let (mut regs, mut bus) = setup(31, DEV);
    regs.x[13] = 0x1313;
    run(0xf90007ed, &mut regs, &mut bus).unwrap();
    assert_eq!(bus.log, vec![(Kind::Store, DEV + 8, Size::B8, 0x1313)]);

    // str xzr, [x1, #8] stores zero (not SP, not X31 garbage).
    let (mut regs, mut bus) = setup(1, DEV);
    regs.sp = 0x5555;
    run(0xf900043f, &mut regs, &mut bus).unwrap();
    assert_eq!(bus.log, vec![(Kind::Store, DEV + 8, Size::B8, 0)]);

    // ldr xzr, [x1]: the value is read and discarded.
    let (mut regs, mut bus) = setup(1, DEV);
    bus.poke(DEV, Size::B8, 0x77);
    let before = regs.clone();
    let done = run(0xf940003f, &mut regs, &mut bus).unwrap();
    assert_eq!(regs, before);
    assert_eq!(done.accesses()[0].value, 0x77);

    // ldr wzr, [sp, #4]!: discard, SP written back.
    let (mut regs, mut bus) = setup(31, DEV);
    let before = regs.clone();
    run(0xb8404fff, &mut regs, &mut bus).unwrap();
    assert_eq!(regs.sp, DEV + 4);
    regs.sp = before.sp;
    assert_eq!(regs, before);

    // str x0, [sp, xzr]: SP base, XZR offset.
    let (mut regs, mut bus) = setup(31, DEV);
    run(0xf83f6be0, &mut regs, &mut bus).unwrap();
    assert_eq!(bus.log[0].1, DEV);

    // ldar w0, [sp]
    let (mut regs, mut bus) = setup(31, DEV);
    bus.poke(DEV, Size::B4, 0xcafe_f00d);
    run(0x88dfffe0, &mut regs, &mut bus).unwrap();
    assert_eq!(regs.x[0], 0xcafe_f00d);
}

#[test]
fn integer_pairs() {
    // stp x29, x30, [sp, #-16]!
    let (mut regs, mut bus) = setup(31, DEV + 16);
    regs.x[29] = 0x2929;
    regs.x[30] = 0x3030;
    let done = run(0xa9bf7bfd, &mut regs, &mut bus).unwrap();
    assert_eq!(bus.log, vec![(Kind::Store, DEV, Size::B8, 0x2929), (Kind::Store, DEV + 8, Size::B8, 0x3030)]);
    assert_eq!(regs.sp, DEV);
    assert_eq!(done.accesses().len(), 2);
    assert_eq!(done.accesses()[1].addr, DEV + 8);

    // ldp x29, x30, [sp], #16
    let (mut regs, _) = setup(31, DEV);
    let done = run(0xa8c17bfd, &mut regs, &mut bus).unwrap();
    assert_eq!((regs.x[29], regs.x[30], regs.sp), (0x2929, 0x3030, DEV + 16));
    assert_eq!(done.writeback, Some(DEV + 16));

    // ldp w0, w1, [x2, #252]: each W zero-extended.
    let (mut regs, mut bus) = setup(2, DEV);
    bus.poke(DEV + 252, Size::B8, 0x8000_0001_ffff_fffe);
    run(0x295f8440, &mut regs, &mut bus).unwrap();
    assert_eq!((regs.x[0], regs.x[1]), (0xffff_fffe, 0x8000_0001));
    assert_eq!(bus.log[1].1, DEV + 256);

    // ldpsw x0, x1, [x2, #-4]: each sign-extended.
    let (mut regs, mut bus) = setup(2, DEV);
    bus.poke(DEV - 4, Size::B8, 0x7fff_ffff_8000_0000);
    run(0x697f8440, &mut regs, &mut bus).unwrap();
    assert_eq!((regs.x[0], regs.x[1]), (0xffff_ffff_8000_0000, 0x7fff_ffff));

    // stnp w0, w1, [x2, #-8]
    let (mut regs, mut bus) = setup(2, DEV);
    regs.x[0] = 0x1111_2222_3333_4444;
    regs.x[1] = 0x5555_6666_7777_8888;
    run(0x283f0440, &mut regs, &mut bus).unwrap();
    assert_eq!(
        bus.log,
        vec![(Kind::Store, DEV - 8, Size::B4, 0x3333_4444), (Kind::Store, DEV - 4, Size::B4, 0x7777_8888)]
    );

    // ldp xzr, x1, [x2]: first value discarded.
    let (mut regs, mut bus) = setup(2, DEV);
    bus.poke(DEV, Size::B16, 0x0101_0101_0101_0101_0202_0202_0202_0202);
    run(0xa940045f, &mut regs, &mut bus).unwrap();
    assert_eq!(regs.x[1], 0x0101_0101_0101_0101);
    assert_eq!(bus.log.len(), 2);
}

#[test]
fn simd_pairs_including_q() {
    let lo = 0x0f0e_0d0c_0b0a_0908_0706_0504_0302_0100u128;
    let hi = 0x1f1e_1d1c_1b1a_1918_1716_1514_1312_1110u128;
    // ldp q0, q1, [x2, #32]: two 16-byte accesses.
    let (mut regs, mut bus) = setup(2, DEV);
    bus.poke(DEV + 32, Size::B16, lo);
    bus.poke(DEV + 48, Size::B16, hi);
    run(0xad410440, &mut regs, &mut bus).unwrap();
    assert_eq!((regs.v[0], regs.v[1]), (lo, hi));
    assert_eq!(bus.log, vec![(Kind::Load, DEV + 32, Size::B16, lo), (Kind::Load, DEV + 48, Size::B16, hi)]);

    // stp q0, q1, [x2, #-1024]!
    let (mut regs, mut bus) = setup(2, DEV);
    regs.v[0] = lo;
    regs.v[1] = hi;
    run(0xada00440, &mut regs, &mut bus).unwrap();
    assert_eq!(bus.peek(DEV - 1024, Size::B16), lo);
    assert_eq!(bus.peek(DEV - 1008, Size::B16), hi);
    assert_eq!(regs.x[2], DEV - 1024);

    // ldp q30, q31, [sp], #1008
    let (mut regs, mut bus) = setup(31, DEV);
    bus.poke(DEV, Size::B16, hi);
    bus.poke(DEV + 16, Size::B16, lo);
    run(0xacdffffe, &mut regs, &mut bus).unwrap();
    assert_eq!((regs.v[30], regs.v[31], regs.sp), (hi, lo, DEV + 1008));

    // ldp s0, s1, [x2, #-256]: scalar writes clear the upper 96 bits.
    let (mut regs, mut bus) = setup(2, DEV);
    regs.v[0] = u128::MAX;
    regs.v[1] = u128::MAX;
    bus.poke(DEV - 256, Size::B8, 0x4444_3333_2222_1111);
    run(0x2d600440, &mut regs, &mut bus).unwrap();
    assert_eq!((regs.v[0], regs.v[1]), (0x2222_1111, 0x4444_3333));

    // stp d0, d1, [sp, #504]
    let (mut regs, mut bus) = setup(31, DEV);
    regs.v[0] = lo;
    regs.v[1] = hi;
    run(0x6d1f87e0, &mut regs, &mut bus).unwrap();
    assert_eq!(
        bus.log,
        vec![
            (Kind::Store, DEV + 504, Size::B8, lo & Size::B8.mask()),
            (Kind::Store, DEV + 512, Size::B8, hi & Size::B8.mask())
        ]
    );
}

#[test]
fn acquire_release_forms() {
    let (mut regs, mut bus) = setup(1, DEV);
    regs.x[0] = 0xffff_0000_1234_5678;
    run(0x489ffc20, &mut regs, &mut bus).unwrap(); // stlrh w0, [x1]
    run(0xc8dffc23, &mut regs, &mut bus).unwrap(); // ldar x3, [x1]
    run(0x38bfc024, &mut regs, &mut bus).unwrap(); // ldaprb w4, [x1]
    assert_eq!(regs.x[3], 0x5678);
    assert_eq!(regs.x[4], 0x78);
}

#[test]
fn failing_bus_leaves_registers_untouched() {
    let words = [
        0xf9400020u32, // ldr x0, [x1]
        0xf8408c20,    // ldr x0, [x1, #8]! (pre-index: base must not move)
        0xf85f8420,    // ldr x0, [x1], #-8
        0xb80ff420,    // str w0, [x1], #255
        0x3dc00020,    // ldr q0, [x1]
    ];
    for word in &words {
        for fail_at in [DEV, DEV + 8] {
            let (mut regs, _) = setup(1, DEV);
            let mut bus = FakeBus::new().failing_at(fail_at);
            let before = regs.clone();
            let access = a64::decode(PC, *word).unwrap();
            match a64::emulate(&access, &mut regs, &mut bus) {
                Ok(_) => assert_ne!(bus.log.len(), 0),
                Err(e) => {
                    assert!(matches!(e, EmulateError::Bus { addr, .. } if addr == fail_at));
                    assert_eq!(regs, before, "{word:#x}");
                }
            }
        }
    }

    // Pair load whose second access fails: neither register nor base changes.
    // ldp x3, x4, [x5, #504]!
    let (mut regs, _) = setup(5, DEV);
    let mut bus = FakeBus::new().failing_at(DEV + 512);
    let before = regs.clone();
    let err = run(0xa9df90a3, &mut regs, &mut bus).unwrap_err();
    assert_eq!(err, EmulateError::Bus { addr: DEV + 512, size: Size::B8, kind: Kind::Load, error: BusError::Timeout });
    assert_eq!(regs, before);
    assert_eq!(bus.log.len(), 1, "first read happened");

    // Store pair whose second write fails: registers (incl. SP) untouched.
    let (mut regs, _) = setup(31, DEV + 16);
    let mut bus = FakeBus::new().failing_at(DEV + 8);
    let before = regs.clone();
    let err = run(0xa9bf7bfd, &mut regs, &mut bus).unwrap_err(); // stp x29, x30, [sp, #-16]!
    assert!(matches!(err, EmulateError::Bus { kind: Kind::Store, .. }));
    assert_eq!(regs, before);
    assert_eq!(err.to_string(), "bus write of 8 bytes at 0xa0000008 failed: no device at address");

    // Q pair load failing on the first access.
    let (mut regs, _) = setup(2, DEV);
    let mut bus = FakeBus::new().failing_at(DEV + 32);
    let before = regs.clone();
    run(0xad410440, &mut regs, &mut bus).unwrap_err();
    assert_eq!(regs, before);
    assert!(bus.log.is_empty());
}

#[test]
fn address_arithmetic_wraps() {
    let (mut regs, mut bus) = setup(1, u64::MAX - 3);
    run(0xf8408c20, &mut regs, &mut bus).unwrap(); // ldr x0, [x1, #8]!
    assert_eq!(regs.x[1], 4);
    assert_eq!(bus.log[0].1, 4);
}

/// A bus that makes a pair in one transaction (the QEMU board's forwarding slot does): it sees
/// one call with both addresses, and a failure names the access that failed.
#[test]
fn a_pair_reaches_a_burst_bus_as_one_transaction() {
    use mmio_trap::Bus;
    #[derive(Default)]
    struct BurstBus {
        bursts: Vec<(Kind, [u64; 2], Size, [u128; 2])>,
        fail_second: bool,
    }
    impl Bus for BurstBus {
        fn read(&mut self, _: u64, _: Size) -> Result<u128, BusError> {
            panic!("a pair is one burst")
        }
        fn write(&mut self, _: u64, _: Size, _: u128) -> Result<(), BusError> {
            panic!("a pair is one burst")
        }
        fn read_pair(&mut self, addrs: [u64; 2], size: Size) -> Result<[u128; 2], (u64, BusError)> {
            if self.fail_second {
                return Err((addrs[1], BusError::Unmapped));
            }
            self.bursts.push((Kind::Load, addrs, size, [0x11, 0x22]));
            Ok([0x11, 0x22])
        }
        fn write_pair(&mut self, addrs: [u64; 2], size: Size, values: [u128; 2]) -> Result<(), (u64, BusError)> {
            self.bursts.push((Kind::Store, addrs, size, values));
            Ok(())
        }
    }
    let mut regs = A64Regs::new();
    regs.x[2] = DEV;
    regs.v[0] = 0xaaaa;
    regs.v[1] = 0xbbbb;
    let mut bus = BurstBus::default();
    let stp = a64::decode(PC, 0xad000440).unwrap(); // stp q0, q1, [x2]
    a64::emulate(&stp, &mut regs, &mut bus).unwrap();
    let ldp = a64::decode(PC, 0xad400c42).unwrap(); // ldp q2, q3, [x2]
    a64::emulate(&ldp, &mut regs, &mut bus).unwrap();
    assert_eq!(
        bus.bursts,
        vec![
            (Kind::Store, [DEV, DEV + 16], Size::B16, [0xaaaa, 0xbbbb]),
            (Kind::Load, [DEV, DEV + 16], Size::B16, [0x11, 0x22])
        ]
    );
    assert_eq!((regs.v[2], regs.v[3]), (0x11, 0x22));
    bus.fail_second = true;
    let before = regs.clone();
    let e = a64::emulate(&ldp, &mut regs, &mut bus).unwrap_err();
    assert_eq!(e, EmulateError::Bus { addr: DEV + 16, size: Size::B16, kind: Kind::Load, error: BusError::Unmapped });
    assert_eq!(regs, before, "a failed pair writes no register");
}
