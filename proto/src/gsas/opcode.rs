//! Request opcodes (seed §2.2.3 lists 14 operations but says "12"; it gives no numbers) and the
//! alignment rules of seed §2.4.1 Table 1, corrected (`docs/hw/gsas-packets.md` "Opcodes").

#[cfg(target_has_atomic = "64")]
use core::sync::atomic::AtomicU64;
use core::sync::atomic::{AtomicU32, Ordering};

/// An 8-bit request opcode. Values are grouped by kind in the high nibble; 0x00 is never valid so
/// that an all-zero packet is refused.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Opcode {
    Read8 = 0x01,
    Read32 = 0x02,
    Read64 = 0x03,
    Read4K = 0x04,
    Write8 = 0x11,
    Write32 = 0x12,
    Write64 = 0x13,
    Write128 = 0x14,
    /// CAS64 (seed §2.3.4).
    Cas = 0x21,
    /// FAD64 (seed §2.3.4).
    Fad = 0x22,
    /// SWAP64 (seed §2.3.4).
    Swap = 0x23,
    AllocSharedPage = 0x31,
    FreeSharedPage = 0x32,
    /// "remoteFork" / "Remote Spawn" (seed §2.2.3, §2.2.8, §2.3.5).
    RemoteSpawn = 0x33,
    /// Not in the seed: carries a 64-bit mailbox notification (seed §3.2) over the packetizer and
    /// vmbox of seed §5, so that notifications are authenticated by the PID prefix.
    Notify = 0x40,
    /// Process atomics (not in the seed; for OpenSHMEM, `docs/hw/gsas-packets.md` "Process
    /// atomics"): the address is a virtual address in the process of the sender's protection
    /// domain on the target node. 64-bit forms 0x50..=0x57, 32-bit forms 0x58..=0x5F, in
    /// [`VaOp`] order; each returns the old value.
    VaFetch64 = 0x50,
    VaSet64 = 0x51,
    VaCompareSwap64 = 0x52,
    VaSwap64 = 0x53,
    VaFetchAdd64 = 0x54,
    VaFetchAnd64 = 0x55,
    VaFetchOr64 = 0x56,
    VaFetchXor64 = 0x57,
    VaFetch32 = 0x58,
    VaSet32 = 0x59,
    VaCompareSwap32 = 0x5A,
    VaSwap32 = 0x5B,
    VaFetchAdd32 = 0x5C,
    VaFetchAnd32 = 0x5D,
    VaFetchOr32 = 0x5E,
    VaFetchXor32 = 0x5F,
}

/// What a process atomic does to the value at its address (opcode = base + the op's index).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VaOp {
    Fetch,
    Set,
    /// Argument 1 = expected, argument 2 = new: swapped iff the old value is the expected one.
    CompareSwap,
    Swap,
    FetchAdd,
    FetchAnd,
    FetchOr,
    FetchXor,
}

/// The width of a process atomic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VaWidth {
    W32,
    W64,
}

impl VaOp {
    pub const ALL: [VaOp; 8] = [
        VaOp::Fetch,
        VaOp::Set,
        VaOp::CompareSwap,
        VaOp::Swap,
        VaOp::FetchAdd,
        VaOp::FetchAnd,
        VaOp::FetchOr,
        VaOp::FetchXor,
    ];

    /// Applies the operation to `old` (already cut to the width); the new value, or `None` when
    /// the memory keeps `old` (a fetch, or a compare-and-swap that did not match).
    pub const fn apply(self, old: u64, arg1: u64, arg2: u64, width: VaWidth) -> Option<u64> {
        let new = match self {
            VaOp::Fetch => return None,
            VaOp::Set | VaOp::Swap => arg1,
            VaOp::CompareSwap => {
                if old != arg1 {
                    return None;
                }
                arg2
            }
            VaOp::FetchAdd => old.wrapping_add(arg1),
            VaOp::FetchAnd => old & arg1,
            VaOp::FetchOr => old | arg1,
            VaOp::FetchXor => old ^ arg1,
        };
        Some(match width {
            VaWidth::W32 => new & 0xffff_ffff,
            VaWidth::W64 => new,
        })
    }
}

/// `VaOp::on_u64` and `VaOp::on_u32`: one definition for both widths.
macro_rules! read_modify_write {
    ($(#[$attr:meta])* $name:ident, $atomic:ty, $int:ty) => {
        $(#[$attr])*
        pub fn $name(self, word: &$atomic, arg1: $int, arg2: $int) -> $int {
            const O: Ordering = Ordering::SeqCst;
            match self {
                VaOp::Fetch => word.load(O),
                VaOp::Set | VaOp::Swap => word.swap(arg1, O),
                VaOp::CompareSwap => word.compare_exchange(arg1, arg2, O, O).unwrap_or_else(|old| old),
                VaOp::FetchAdd => word.fetch_add(arg1, O),
                VaOp::FetchAnd => word.fetch_and(arg1, O),
                VaOp::FetchOr => word.fetch_or(arg1, O),
                VaOp::FetchXor => word.fetch_xor(arg1, O),
            }
        }
    };
}

impl VaOp {
    read_modify_write!(
        /// The operation as one atomic instruction (or exclusive loop) on `word`, sequentially
        /// consistent; the old value. The target node's atomic service and a PE's own atomics
        /// on its memory both use it, so that the two are atomic with each other.
        #[cfg(target_has_atomic = "64")]
        on_u64,
        AtomicU64,
        u64
    );
    read_modify_write!(
        /// [`VaOp::on_u64`] on a 32-bit word.
        on_u32,
        AtomicU32,
        u32
    );
}

impl VaWidth {
    pub const fn bytes(self) -> u64 {
        match self {
            VaWidth::W32 => 4,
            VaWidth::W64 => 8,
        }
    }
}

/// The opcode of a process atomic.
pub const fn va_opcode(op: VaOp, width: VaWidth) -> Opcode {
    let base: u8 = match width {
        VaWidth::W64 => 0x50,
        VaWidth::W32 => 0x58,
    };
    match Opcode::decode(base + op as u8) {
        Ok(opcode) => opcode,
        Err(_) => panic!("0x50..=0x5F are all process atomics"),
    }
}

/// An opcode byte that names no operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnknownOpcode(pub u8);

/// What an operation does with the address field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddressUse {
    /// Accesses `width` bytes at the address, which must be a multiple of `align` and must not
    /// cross the end of its page.
    Data { align: u64, width: u64 },
    /// Names a whole page: the address must be a multiple of 4096.
    Page,
    /// Only routes the request: the address must be the target node's offset 0.
    NodeOnly,
}

impl Opcode {
    pub const ALL: [Opcode; 31] = [
        Opcode::Read8,
        Opcode::Read32,
        Opcode::Read64,
        Opcode::Read4K,
        Opcode::Write8,
        Opcode::Write32,
        Opcode::Write64,
        Opcode::Write128,
        Opcode::Cas,
        Opcode::Fad,
        Opcode::Swap,
        Opcode::AllocSharedPage,
        Opcode::FreeSharedPage,
        Opcode::RemoteSpawn,
        Opcode::Notify,
        Opcode::VaFetch64,
        Opcode::VaSet64,
        Opcode::VaCompareSwap64,
        Opcode::VaSwap64,
        Opcode::VaFetchAdd64,
        Opcode::VaFetchAnd64,
        Opcode::VaFetchOr64,
        Opcode::VaFetchXor64,
        Opcode::VaFetch32,
        Opcode::VaSet32,
        Opcode::VaCompareSwap32,
        Opcode::VaSwap32,
        Opcode::VaFetchAdd32,
        Opcode::VaFetchAnd32,
        Opcode::VaFetchOr32,
        Opcode::VaFetchXor32,
    ];

    pub const fn as_u8(self) -> u8 {
        self as u8
    }

    /// The operation and width of a process atomic; `None` for the other opcodes.
    pub const fn va_op(self) -> Option<(VaOp, VaWidth)> {
        let byte = self as u8;
        if byte < 0x50 || byte > 0x5F {
            return None;
        }
        let width = if byte < 0x58 { VaWidth::W64 } else { VaWidth::W32 };
        Some((VaOp::ALL[(byte & 7) as usize], width))
    }

    /// Seed §2.4.1 Table 1, with its typos corrected: WRITE8 aligns to 1 (table: "2 bits
    /// ignored"), WRITE32 to 4 (table: "3"), READ4K to 4096 (text: "three bits"), FAD64 (absent
    /// from the table) to 8 like the other 64-bit atomics. Write128 keeps the table's 8.
    pub const fn address_use(self) -> AddressUse {
        const fn data(align: u64, width: u64) -> AddressUse {
            AddressUse::Data { align, width }
        }
        match self {
            Opcode::Read8 | Opcode::Write8 => data(1, 1),
            Opcode::Read32 | Opcode::Write32 => data(4, 4),
            Opcode::Read64 | Opcode::Write64 | Opcode::Cas | Opcode::Fad | Opcode::Swap => data(8, 8),
            Opcode::Write128 => data(8, 16),
            Opcode::Read4K | Opcode::FreeSharedPage | Opcode::RemoteSpawn => AddressUse::Page,
            Opcode::AllocSharedPage | Opcode::Notify => AddressUse::NodeOnly,
            Opcode::VaFetch64 | Opcode::VaSet64 | Opcode::VaCompareSwap64 | Opcode::VaSwap64 => data(8, 8),
            Opcode::VaFetchAdd64 | Opcode::VaFetchAnd64 | Opcode::VaFetchOr64 | Opcode::VaFetchXor64 => data(8, 8),
            Opcode::VaFetch32 | Opcode::VaSet32 | Opcode::VaCompareSwap32 | Opcode::VaSwap32 => data(4, 4),
            Opcode::VaFetchAdd32 | Opcode::VaFetchAnd32 | Opcode::VaFetchOr32 | Opcode::VaFetchXor32 => data(4, 4),
        }
    }

    /// Whether Argument 1 / Argument 2 carry anything; unused arguments must be zero.
    pub const fn uses_args(self) -> (bool, bool) {
        match self {
            Opcode::Read8 | Opcode::Read32 | Opcode::Read64 | Opcode::Read4K | Opcode::FreeSharedPage => (false, false),
            Opcode::Write8 | Opcode::Write32 | Opcode::Write64 | Opcode::Fad | Opcode::Swap => (true, false),
            Opcode::RemoteSpawn | Opcode::Notify => (true, false),
            Opcode::Write128 | Opcode::Cas | Opcode::AllocSharedPage => (true, true),
            Opcode::VaFetch64 | Opcode::VaFetch32 => (false, false),
            Opcode::VaCompareSwap64 | Opcode::VaCompareSwap32 => (true, true),
            Opcode::VaSet64 | Opcode::VaSwap64 | Opcode::VaFetchAdd64 | Opcode::VaFetchAnd64 => (true, false),
            Opcode::VaFetchOr64 | Opcode::VaFetchXor64 => (true, false),
            Opcode::VaSet32 | Opcode::VaSwap32 | Opcode::VaFetchAdd32 | Opcode::VaFetchAnd32 => (true, false),
            Opcode::VaFetchOr32 | Opcode::VaFetchXor32 => (true, false),
        }
    }
}

impl TryFrom<u8> for Opcode {
    type Error = UnknownOpcode;

    /// A `match`, not a search of [`Opcode::ALL`]: the atomic service decodes every request
    /// with it (the test below checks the two agree).
    fn try_from(value: u8) -> Result<Self, Self::Error> {
        Opcode::decode(value)
    }
}

impl Opcode {
    /// [`TryFrom<u8>`], usable in `const` code.
    pub const fn decode(value: u8) -> Result<Self, UnknownOpcode> {
        Ok(match value {
            0x01 => Opcode::Read8,
            0x02 => Opcode::Read32,
            0x03 => Opcode::Read64,
            0x04 => Opcode::Read4K,
            0x11 => Opcode::Write8,
            0x12 => Opcode::Write32,
            0x13 => Opcode::Write64,
            0x14 => Opcode::Write128,
            0x21 => Opcode::Cas,
            0x22 => Opcode::Fad,
            0x23 => Opcode::Swap,
            0x31 => Opcode::AllocSharedPage,
            0x32 => Opcode::FreeSharedPage,
            0x33 => Opcode::RemoteSpawn,
            0x40 => Opcode::Notify,
            0x50 => Opcode::VaFetch64,
            0x51 => Opcode::VaSet64,
            0x52 => Opcode::VaCompareSwap64,
            0x53 => Opcode::VaSwap64,
            0x54 => Opcode::VaFetchAdd64,
            0x55 => Opcode::VaFetchAnd64,
            0x56 => Opcode::VaFetchOr64,
            0x57 => Opcode::VaFetchXor64,
            0x58 => Opcode::VaFetch32,
            0x59 => Opcode::VaSet32,
            0x5A => Opcode::VaCompareSwap32,
            0x5B => Opcode::VaSwap32,
            0x5C => Opcode::VaFetchAdd32,
            0x5D => Opcode::VaFetchAnd32,
            0x5E => Opcode::VaFetchOr32,
            0x5F => Opcode::VaFetchXor32,
            _ => return Err(UnknownOpcode(value)),
        })
    }
}

impl From<Opcode> for u8 {
    fn from(op: Opcode) -> u8 {
        op.as_u8()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_decodes_to_its_opcode_or_an_error() {
        let mut known = 0;
        for byte in 0..=u8::MAX {
            match Opcode::try_from(byte) {
                Ok(op) => {
                    assert_eq!(op.as_u8(), byte);
                    known += 1;
                }
                Err(e) => {
                    assert_eq!(e, UnknownOpcode(byte));
                    assert!(!Opcode::ALL.iter().any(|op| op.as_u8() == byte));
                }
            }
        }
        assert_eq!(known, Opcode::ALL.len());
        assert_eq!(Opcode::try_from(0), Err(UnknownOpcode(0)));
    }

    #[test]
    fn process_atomics_are_their_op_and_width() {
        for width in [VaWidth::W32, VaWidth::W64] {
            for op in VaOp::ALL {
                let opcode = va_opcode(op, width);
                assert_eq!(opcode.va_op(), Some((op, width)));
                assert_eq!(opcode.address_use(), AddressUse::Data { align: width.bytes(), width: width.bytes() });
                assert_eq!(opcode.uses_args(), (op != VaOp::Fetch, op == VaOp::CompareSwap));
            }
        }
        assert_eq!(Opcode::ALL.iter().filter(|op| op.va_op().is_some()).count(), 16);
        assert_eq!(Opcode::Cas.va_op(), None);
    }

    #[test]
    fn process_atomics_compute_the_new_value_at_their_width() {
        use VaWidth::*;
        assert_eq!(VaOp::Fetch.apply(5, 0, 0, W64), None);
        assert_eq!(VaOp::FetchAdd.apply(0xffff_ffff, 1, 0, W32), Some(0));
        assert_eq!(VaOp::FetchAdd.apply(0xffff_ffff, 1, 0, W64), Some(1 << 32));
        assert_eq!(VaOp::CompareSwap.apply(3, 3, 9, W64), Some(9));
        assert_eq!(VaOp::CompareSwap.apply(3, 4, 9, W64), None);
        assert_eq!(VaOp::FetchAnd.apply(0b1100, 0b1010, 0, W32), Some(0b1000));
        assert_eq!(VaOp::FetchOr.apply(0b1100, 0b1010, 0, W32), Some(0b1110));
        assert_eq!(VaOp::FetchXor.apply(0b1100, 0b1010, 0, W32), Some(0b0110));
        assert_eq!(VaOp::Set.apply(1, 7, 0, W64), Some(7));
        assert_eq!(VaOp::Swap.apply(1, 7, 0, W64), Some(7));
    }

    #[test]
    fn the_atomic_instructions_agree_with_the_values_apply_computes() {
        use core::sync::atomic::{AtomicU32, AtomicU64};
        for op in VaOp::ALL {
            for (old, arg1, arg2) in [(5u64, 5, 9), (0xffff_ffff, 1, 0), (0b1100, 0b1010, 3), (7, 8, 1)] {
                let word = AtomicU64::new(old);
                assert_eq!(op.on_u64(&word, arg1, arg2), old, "{op:?}");
                assert_eq!(word.into_inner(), op.apply(old, arg1, arg2, VaWidth::W64).unwrap_or(old), "{op:?}");
                let word = AtomicU32::new(old as u32);
                assert_eq!(op.on_u32(&word, arg1 as u32, arg2 as u32), old as u32, "{op:?}");
                let want = op.apply(old, arg1, arg2, VaWidth::W32).unwrap_or(old);
                assert_eq!(u64::from(word.into_inner()), want, "{op:?} at 32 bits");
            }
        }
    }

    #[test]
    fn data_ops_never_cross_a_page_when_aligned_except_write128() {
        for op in Opcode::ALL {
            if let AddressUse::Data { align, width } = op.address_use() {
                assert!(align.is_power_of_two());
                assert_eq!(width == align, op != Opcode::Write128, "{op:?}");
            }
        }
    }
}
