//! Robustness: `decode` never panics on any word, every accepted access
//! satisfies the documented invariants, and emulating it never panics and
//! either succeeds consistently or leaves the registers untouched.

mod common;

use common::{A32Regs, A64Regs};
use mmio_trap::{Addressing, Bus, BusError, Emulated, Kind, Size, Transfer, a32, a64};
use proptest::prelude::*;

/// xorshift64*: deterministic, dependency-free word source.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// A bus returning address-derived data, failing on some addresses.
struct HashBus {
    fail_mod: u64,
    accesses: usize,
}

impl Bus for HashBus {
    fn read(&mut self, addr: u64, size: Size) -> Result<u128, BusError> {
        if self.fail_mod != 0 && addr % self.fail_mod == 3 {
            return Err(BusError::Other(1));
        }
        self.accesses += 1;
        let h = addr.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        Ok((u128::from(h) << 64 | u128::from(!h)) & size.mask())
    }

    fn write(&mut self, addr: u64, size: Size, value: u128) -> Result<(), BusError> {
        assert_eq!(value & !size.mask(), 0);
        if self.fail_mod != 0 && addr % self.fail_mod == 3 {
            return Err(BusError::Other(2));
        }
        self.accesses += 1;
        Ok(())
    }
}

fn a64_regs(rng: &mut Rng) -> A64Regs {
    let mut r = A64Regs::new();
    for x in r.x.iter_mut() {
        *x = rng.next();
    }
    r.sp = rng.next();
    for v in r.v.iter_mut() {
        *v = u128::from(rng.next()) << 64 | u128::from(rng.next());
    }
    r
}

fn a32_regs(rng: &mut Rng) -> A32Regs {
    let mut r = A32Regs::new();
    for x in r.r.iter_mut() {
        *x = rng.next() as u32;
    }
    // Random flags, ARM state, little-endian.
    r.cpsr = (rng.next() as u32 & 0xf000_0000) | 0x13;
    r
}

fn check_emulated(done: &Emulated, transfer: Transfer, size: Size, kind: Kind, wrap32: bool) {
    assert_eq!(done.pc_advance, 4);
    if !done.executed {
        assert_eq!(done.accesses().len(), 0);
        return;
    }
    let acc = done.accesses();
    assert_eq!(acc.len(), transfer.count());
    for a in acc {
        assert_eq!((a.size, a.kind), (size, kind));
        assert_eq!(a.value & !size.mask(), 0);
    }
    if let [first, second] = acc {
        let next = first.addr.wrapping_add(size.bytes() as u64);
        let next = if wrap32 { next & 0xffff_ffff } else { next };
        assert_eq!(second.addr, next);
    }
}

fn check_a64(word: u32, rng: &mut Rng) {
    let Ok(access) = a64::decode(0x4000_0000, word) else {
        return;
    };
    // Invariants documented on `a64::Access`.
    let regs_used: Vec<u8> = access.transfer.iter().collect();
    assert_eq!(regs_used.len(), access.transfer.count());
    assert!(access.rn < 32 && regs_used.iter().all(|&r| r < 32), "{word:#x}");
    let is_gpr = matches!(access.class, a64::RegClass::Gpr { .. });
    if let Transfer::Pair { rt, rt2 } = access.transfer {
        assert!(access.kind == Kind::Store || rt != rt2, "{word:#x}");
    }
    if access.addressing.writeback() && is_gpr && access.rn != 31 {
        assert!(!regs_used.contains(&access.rn), "{word:#x}");
    }
    assert!(access.size != Size::B16 || !is_gpr, "{word:#x}");
    if let a64::Offset::Reg { rm, shift, .. } = access.offset {
        assert!(rm < 32 && (shift == 0 || u32::from(shift) == access.size.log2()));
    }
    assert!(!access.to_string().is_empty());

    let mut regs = a64_regs(rng);
    let before = regs.clone();
    let mut bus = HashBus { fail_mod: 1 + rng.next() % 32, accesses: 0 };
    match a64::emulate(&access, &mut regs, &mut bus) {
        Ok(done) => {
            check_emulated(&done, access.transfer, access.size, access.kind, false);
            if access.addressing == Addressing::Offset {
                assert_eq!(done.writeback, None);
            }
        }
        Err(_) => assert_eq!(regs, before, "{word:#x}"),
    }
}

fn check_a32(word: u32, rng: &mut Rng) {
    let Ok(access) = a32::decode(0x1000, word) else {
        return;
    };
    let regs_used: Vec<u8> = access.transfer.iter().collect();
    assert!(access.rn < 15 && regs_used.iter().all(|&r| r < 15));
    if let Transfer::Pair { rt, rt2 } = access.transfer {
        assert!(rt % 2 == 0 && rt2 == rt + 1 && access.size == Size::B4);
    }
    if access.addressing.writeback() {
        assert!(!regs_used.contains(&access.rn), "{word:#x}");
    }
    if let a32::Offset::Reg { rm, .. } = access.offset {
        assert!(rm < 15);
    }
    assert!(matches!(access.size, Size::B1 | Size::B2 | Size::B4));
    assert!(!access.to_string().is_empty());

    let mut regs = a32_regs(rng);
    let before = regs.clone();
    let mut bus = HashBus { fail_mod: 1 + rng.next() % 32, accesses: 0 };
    match a32::emulate(&access, &mut regs, &mut bus) {
        Ok(done) => {
            check_emulated(&done, access.transfer, access.size, access.kind, true);
            assert_eq!(done.executed, access.cond.passed(before.cpsr));
            if !done.executed {
                assert_eq!(regs, before);
                assert_eq!(bus.accesses, 0);
            }
        }
        Err(_) => assert_eq!(regs, before, "{word:#x}"),
    }
}

#[test]
fn random_words_a64() {
    let mut rng = Rng(0x0123_4567_89ab_cdef);
    for _ in 0..300_000 {
        let word = rng.next() as u32;
        check_a64(word, &mut rng);
        // Same word forced into the load/store space (op1 = x1x0).
        check_a64((word | 1 << 27) & !(1 << 25), &mut rng);
    }
}

#[test]
fn random_words_a32() {
    let mut rng = Rng(0xfedc_ba98_7654_3210);
    for _ in 0..300_000 {
        let word = rng.next() as u32;
        check_a32(word, &mut rng);
        // Forced into the load/store classes: op1 = 01x or 000 with bits 7, 4.
        check_a32(word & !(0b111 << 25) | 0b010 << 25, &mut rng);
        check_a32(word & !(0b111 << 25) | 1 << 7 | 1 << 4, &mut rng);
    }
}

/// Every value of the A64 opcode bits 31:21 and 15:10 in the load/store
/// space, with register fields chosen to hit the overlap rules.
#[test]
fn sweep_a64_load_store_space() {
    let mut rng = Rng(42);
    let mut accepted = 0usize;
    for hi in 0u32..1 << 11 {
        let hi_bits = hi << 21;
        if hi_bits & (1 << 27) == 0 || hi_bits & (1 << 25) != 0 {
            continue;
        }
        for mid in 0u32..1 << 6 {
            // (Rm/Rs, Rn, Rt) patterns; Rt2 / imm bits come from `mid`.
            for (rm, rn, rt) in [(2, 1, 0), (31, 31, 31), (0, 5, 5), (31, 3, 4)] {
                let word = hi_bits | rm << 16 | mid << 10 | rn << 5 | rt;
                if a64::decode(0, word).is_ok() {
                    accepted += 1;
                }
                check_a64(word, &mut rng);
            }
        }
    }
    assert!(accepted > 30_000, "{accepted}");
}

/// Every value of the A32 bits 31:20 and 7:4, with several register and
/// bits 11:8 patterns.
#[test]
fn sweep_a32_encoding_space() {
    let mut rng = Rng(43);
    let mut accepted = 0usize;
    for top in 0u32..1 << 12 {
        for low in 0u32..1 << 4 {
            for (rn, rt, mid, rm) in [(1, 2, 0, 3), (2, 2, 0, 2), (15, 15, 0xf, 15), (4, 0, 5, 1)] {
                let word = top << 20 | rn << 16 | rt << 12 | mid << 8 | low << 4 | rm;
                if a32::decode(0, word).is_ok() {
                    accepted += 1;
                }
                check_a32(word, &mut rng);
            }
        }
    }
    assert!(accepted > 20_000, "{accepted}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20_000))]

    #[test]
    fn prop_a64_decode_total(word in any::<u32>(), seed in 1u64..) {
        check_a64(word, &mut Rng(seed));
        check_a64((word | 1 << 27) & !(1 << 25), &mut Rng(seed));
    }

    #[test]
    fn prop_a32_decode_total(word in any::<u32>(), seed in 1u64..) {
        check_a32(word, &mut Rng(seed));
    }

    /// Decoding is a pure function of the word; the PC only appears in the
    /// error.
    #[test]
    fn prop_pc_only_in_error(word in any::<u32>(), pc1 in any::<u64>(), pc2 in any::<u64>()) {
        match (a64::decode(pc1, word), a64::decode(pc2, word)) {
            (Ok(a), Ok(b)) => prop_assert_eq!(a, b),
            (Err(a), Err(b)) => {
                prop_assert_eq!((a.reason, a.word, a.pc, b.pc), (b.reason, b.word, pc1, pc2));
                let text = a.to_string();
                let word_hex = format!("{word:#010x}");
                let pc_hex = format!("{pc1:#x}");
                prop_assert!(text.contains(&word_hex));
                prop_assert!(text.contains(&pc_hex));
            }
            _ => prop_assert!(false, "decode depends on pc"),
        }
    }
}
