//! The stage-1 table walk of a context bank: AArch64 descriptors, 4 KiB granule, starting at the
//! level T0SZ implies (ARM DDI 0487, D8.2-D8.3), reading the guest's own tables in its DDR.

use crate::shm::Ddr;

/// Physical memory the walker reads descriptors from.
pub trait GuestMemory: Send + Sync {
    /// The little-endian 64-bit word at `pa` (8-byte aligned), if `pa` is memory.
    fn read_u64(&self, pa: u64) -> Option<u64>;
}

impl GuestMemory for Ddr {
    fn read_u64(&self, pa: u64) -> Option<u64> {
        self.read(pa, 8).map(|v| v as u64)
    }
}

/// What the walk needs of a bank's registers.
#[derive(Clone, Copy, Debug)]
pub struct WalkRegime {
    /// TTBR0.BADDR.
    pub table: u64,
    /// TCR.T0SZ (16..=39, checked when the bank was enabled).
    pub t0sz: u8,
    /// Output address bits (TCR2.PASIZE).
    pub pa_bits: u32,
}

/// A valid leaf descriptor, with the table descriptors' restrictions folded in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Leaf {
    /// First input address the leaf maps.
    pub va_base: u64,
    /// Its output address.
    pub pa_base: u64,
    /// log2 of the size it maps: 12 (page), 21 or 30 (blocks).
    pub size_log2: u32,
    /// AP[1] = 1 and no APTable[0] above: EL0 may access it.
    pub el0: bool,
    /// AP[2] = 0 and no APTable[1] above.
    pub writable: bool,
    /// The access flag.
    pub af: bool,
    /// nG = 0: matches every ASID.
    pub global: bool,
    /// The level of the leaf.
    pub level: u8,
}

impl Leaf {
    /// The output address of `va` (inside the leaf).
    pub fn translate(&self, va: u64) -> u64 {
        self.pa_base | (va & ((1 << self.size_log2) - 1))
    }

    /// Whether the leaf covers `va`.
    pub fn covers(&self, va: u64) -> bool {
        va >> self.size_log2 == self.va_base >> self.size_log2
    }
}

/// Why a walk found no leaf, and at which level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WalkFault {
    /// An invalid or reserved descriptor, or an input address outside T0SZ's range.
    Translation(u8),
    /// A table or output address beyond the output size.
    AddressSize(u8),
    /// A descriptor could not be read (outside memory).
    External(u8),
}

const VALID: u64 = 1 << 0;
const TABLE_OR_PAGE: u64 = 1 << 1;
const AP1_EL0: u64 = 1 << 6;
const AP2_READ_ONLY: u64 = 1 << 7;
const AF: u64 = 1 << 10;
const NG: u64 = 1 << 11;
const APTABLE0_NO_EL0: u64 = 1 << 61;
const APTABLE1_READ_ONLY: u64 = 1 << 62;
/// Output address bits [47:12] of a descriptor.
const OA_MASK: u64 = ((1 << 48) - 1) & !0xfff;

/// The first level a 4 KiB-granule walk of a `va_bits` input space uses (each level resolves
/// 9 bits above the 12-bit page offset).
fn start_level(va_bits: u32) -> u8 {
    (4 - (va_bits - 12).div_ceil(9)) as u8
}

/// Walks `va` through `regime`'s tables in `memory`.
pub fn walk(memory: &dyn GuestMemory, regime: &WalkRegime, va: u64) -> Result<Leaf, WalkFault> {
    let va_bits = 64 - u32::from(regime.t0sz);
    if va >> va_bits != 0 {
        return Err(WalkFault::Translation(0));
    }
    let start = start_level(va_bits);
    let start_shift = 12 + 9 * u32::from(3 - start);
    let root_bytes = 8u64 << (va_bits - start_shift);
    let mut table = regime.table & ((1 << 48) - 1) & !(root_bytes.max(8) - 1);
    let (mut el0, mut writable) = (true, true);
    for level in start..=3 {
        if table >> regime.pa_bits != 0 {
            return Err(WalkFault::AddressSize(level));
        }
        let shift = 12 + 9 * u32::from(3 - level);
        let index = (va >> shift) & if level == start { (1 << (va_bits - shift)) - 1 } else { 0x1ff };
        let desc = memory.read_u64(table + 8 * index).ok_or(WalkFault::External(level))?;
        if desc & VALID == 0 {
            return Err(WalkFault::Translation(level));
        }
        let is_table_or_page = desc & TABLE_OR_PAGE != 0;
        if level < 3 && is_table_or_page {
            el0 &= desc & APTABLE0_NO_EL0 == 0;
            writable &= desc & APTABLE1_READ_ONLY == 0;
            table = desc & OA_MASK;
            continue;
        }
        // A leaf: a page at level 3, a block at levels 1 and 2 (none at level 0 with 4 KiB).
        if (level == 3 && !is_table_or_page) || level == 0 {
            return Err(WalkFault::Translation(level));
        }
        let pa_base = desc & OA_MASK & !((1 << shift) - 1);
        if pa_base >> regime.pa_bits != 0 {
            return Err(WalkFault::AddressSize(level));
        }
        return Ok(Leaf {
            va_base: va & !((1 << shift) - 1),
            pa_base,
            size_log2: shift,
            el0: el0 && desc & AP1_EL0 != 0,
            writable: writable && desc & AP2_READ_ONLY == 0,
            af: desc & AF != 0,
            global: desc & NG == 0,
            level,
        });
    }
    unreachable!("level 3 always returns")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    struct Words(HashMap<u64, u64>);

    impl GuestMemory for Words {
        fn read_u64(&self, pa: u64) -> Option<u64> {
            (pa < 0x1000_0000).then(|| self.0.get(&pa).copied().unwrap_or(0))
        }
    }

    const REGIME: WalkRegime = WalkRegime { table: 0x1000, t0sz: 25, pa_bits: 40 };
    const USER_RW: u64 = 0b11 | AP1_EL0 | AF | NG | 0b11 << 8;

    /// Tables at 0x1000 (L1), 0x2000 (L2), 0x3000 (L3) mapping `va` to `leaf`.
    fn tables(va: u64, leaf: u64) -> Words {
        let mut m = HashMap::new();
        m.insert(0x1000 + 8 * ((va >> 30) & 0x1ff), 0x2000 | 0b11);
        m.insert(0x2000 + 8 * ((va >> 21) & 0x1ff), 0x3000 | 0b11);
        m.insert(0x3000 + 8 * ((va >> 12) & 0x1ff), leaf);
        Words(m)
    }

    #[test]
    fn a_39_bit_space_starts_at_level_1() {
        assert_eq!(start_level(39), 1);
        assert_eq!(start_level(48), 0);
        assert_eq!(start_level(30), 2);
        assert_eq!(start_level(25), 2);
        assert_eq!(start_level(31), 1);
    }

    #[test]
    fn walks_three_levels_to_a_user_page() {
        let va = 0x40_1234_5678;
        let mem = tables(va, 0x8_7654_3000 | USER_RW);
        let leaf = walk(&mem, &REGIME, va).unwrap();
        assert_eq!(leaf.translate(va), 0x8_7654_3678);
        assert_eq!(
            (leaf.level, leaf.size_log2, leaf.el0, leaf.writable, leaf.af, leaf.global),
            (3, 12, true, true, true, false)
        );
        assert!(leaf.covers(va & !0xfff) && !leaf.covers(va + 0x1000));
    }

    #[test]
    fn read_only_kernel_only_and_aptable_restrictions() {
        let va = 0x1000;
        let ro = walk(&tables(va, 0x5000 | USER_RW | AP2_READ_ONLY), &REGIME, va).unwrap();
        assert!(ro.el0 && !ro.writable);
        let kernel = walk(&tables(va, 0x5000 | (USER_RW & !AP1_EL0)), &REGIME, va).unwrap();
        assert!(!kernel.el0 && kernel.writable);
        let mut m = tables(va, 0x5000 | USER_RW);
        m.0.insert(0x1000, 0x2000 | 0b11 | APTABLE0_NO_EL0);
        assert!(!walk(&m, &REGIME, va).unwrap().el0);
        m.0.insert(0x1000, 0x2000 | 0b11 | APTABLE1_READ_ONLY);
        let l = walk(&m, &REGIME, va).unwrap();
        assert!(l.el0 && !l.writable);
    }

    #[test]
    fn blocks_at_levels_1_and_2() {
        let mut m = HashMap::new();
        m.insert(0x1000 + 8, 0x4000_0000 | 0b01 | AF | AP1_EL0);
        let l = walk(&Words(m), &REGIME, 0x4123_4567).unwrap();
        assert_eq!((l.level, l.size_log2, l.translate(0x4123_4567), l.global), (1, 30, 0x4123_4567, true));
        let mut m = HashMap::new();
        m.insert(0x1000, 0x2000 | 0b11);
        m.insert(0x2000 + 8 * 3, 0x20_0000 | 0b01 | AF);
        let l = walk(&Words(m), &REGIME, 0x61_2345).unwrap();
        assert_eq!((l.level, l.translate(0x61_2345), l.el0), (2, 0x21_2345, false));
    }

    #[test]
    fn faults_name_their_level() {
        assert_eq!(walk(&Words(HashMap::new()), &REGIME, 0x1000), Err(WalkFault::Translation(1)));
        let mut m = tables(0x1000, 0);
        assert_eq!(walk(&m, &REGIME, 0x1000), Err(WalkFault::Translation(3)));
        m.0.insert(0x3008, 0x5000 | 0b01 | AF);
        assert_eq!(walk(&m, &REGIME, 0x1000), Err(WalkFault::Translation(3)), "0b01 is reserved at level 3");
        assert_eq!(walk(&m, &REGIME, 1 << 39), Err(WalkFault::Translation(0)), "beyond T0SZ");
        m.0.insert(0x3008, (1 << 40) | USER_RW);
        assert_eq!(walk(&m, &REGIME, 0x1000), Err(WalkFault::AddressSize(3)));
        m.0.insert(0x2000, 0x2000_0000 | 0b11);
        assert_eq!(walk(&m, &REGIME, 0x1000), Err(WalkFault::External(3)), "table outside memory");
        let high = WalkRegime { table: 1 << 41, ..REGIME };
        assert_eq!(walk(&m, &high, 0x1000), Err(WalkFault::AddressSize(1)));
    }
}
