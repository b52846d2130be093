//! Operand types shared by the A64 and A32 decoders.

/// Direction of a memory access.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Memory to register.
    Load,
    /// Register to memory.
    Store,
}

/// Size of one bus access (one register's worth of data).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Size {
    /// 1 byte.
    B1,
    /// 2 bytes (halfword).
    B2,
    /// 4 bytes (word).
    B4,
    /// 8 bytes (doubleword).
    B8,
    /// 16 bytes (SIMD&FP Q register).
    B16,
}

impl Size {
    /// Size in bytes: 1, 2, 4, 8 or 16.
    pub const fn bytes(self) -> usize {
        1 << self.log2()
    }

    /// log2 of the size in bytes (the `scale` of the ARM ARM pseudocode).
    pub const fn log2(self) -> u32 {
        match self {
            Size::B1 => 0,
            Size::B2 => 1,
            Size::B4 => 2,
            Size::B8 => 3,
            Size::B16 => 4,
        }
    }

    /// Size in bits.
    pub const fn bits(self) -> u32 {
        8 << self.log2()
    }

    /// Mask selecting the low `bytes()` bytes of a value.
    pub const fn mask(self) -> u128 {
        match self {
            Size::B16 => u128::MAX,
            _ => (1u128 << self.bits()) - 1,
        }
    }

    /// The size whose `log2()` is `log2`, if any.
    pub const fn from_log2(log2: u32) -> Option<Size> {
        match log2 {
            0 => Some(Size::B1),
            1 => Some(Size::B2),
            2 => Some(Size::B4),
            3 => Some(Size::B8),
            4 => Some(Size::B16),
            _ => None,
        }
    }

    /// Sign-extends the low `bits()` bits of `value` to 64 bits.
    ///
    /// Only meaningful for sizes up to [`Size::B8`]; a 16-byte value is
    /// truncated to its low 64 bits.
    pub const fn sign_extend(self, value: u128) -> u64 {
        let shift = match self {
            Size::B16 => 0,
            _ => 64 - self.bits(),
        };
        (((value as u64) << shift) as i64 >> shift) as u64
    }
}

/// The registers a single instruction transfers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transfer {
    /// One register, `rt`.
    Single {
        /// Transfer register number.
        rt: u8,
    },
    /// Two registers: `rt` at the effective address, `rt2` at the effective
    /// address plus the access size (A64 LDP/STP, A32 LDRD/STRD).
    Pair {
        /// First transfer register (lower address).
        rt: u8,
        /// Second transfer register (higher address).
        rt2: u8,
    },
}

impl Transfer {
    /// Number of registers (and bus accesses): 1 or 2.
    pub const fn count(self) -> usize {
        match self {
            Transfer::Single { .. } => 1,
            Transfer::Pair { .. } => 2,
        }
    }

    /// The transfer registers, lowest address first.
    pub fn iter(self) -> impl ExactSizeIterator<Item = u8> {
        let (regs, count) = self.registers();
        regs.into_iter().take(count)
    }

    /// The transfer registers as an array and the number of valid entries.
    pub(crate) const fn registers(self) -> ([u8; 2], usize) {
        match self {
            Transfer::Single { rt } => ([rt, rt], 1),
            Transfer::Pair { rt, rt2 } => ([rt, rt2], 2),
        }
    }

    /// The first transfer register.
    pub const fn rt(self) -> u8 {
        match self {
            Transfer::Single { rt } | Transfer::Pair { rt, .. } => rt,
        }
    }
}

/// Indexing mode (ARM ARM "offset", "pre-indexed", "post-indexed").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Addressing {
    /// Address = base + offset; base unchanged.
    Offset,
    /// Address = base + offset; base := address afterwards.
    PreIndex,
    /// Address = base; base := base + offset afterwards.
    PostIndex,
}

impl Addressing {
    /// Whether the base register is written back.
    pub const fn writeback(self) -> bool {
        !matches!(self, Addressing::Offset)
    }

    /// Whether the offset is applied before the access.
    pub const fn index(self) -> bool {
        !matches!(self, Addressing::PostIndex)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_helpers() {
        assert_eq!(Size::B1.bytes(), 1);
        assert_eq!(Size::B16.bytes(), 16);
        assert_eq!(Size::B4.mask(), 0xffff_ffff);
        assert_eq!(Size::B16.mask(), u128::MAX);
        assert_eq!(Size::B1.sign_extend(0x80), 0xffff_ffff_ffff_ff80);
        assert_eq!(Size::B2.sign_extend(0x7fff), 0x7fff);
        assert_eq!(Size::B4.sign_extend(0x8000_0000), 0xffff_ffff_8000_0000);
        assert_eq!(Size::B8.sign_extend(0x8000_0000_0000_0000), 1 << 63);
        for l in 0..5 {
            assert_eq!(Size::from_log2(l).unwrap().log2(), l);
        }
        assert_eq!(Size::from_log2(5), None);
    }
}
