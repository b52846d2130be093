//! Request opcodes (seed §2.2.3 lists 14 operations but says "12"; it gives no numbers) and the
//! alignment rules of seed §2.4.1 Table 1, corrected (`docs/hw/gsas-packets.md` "Opcodes").

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
    pub const ALL: [Opcode; 15] = [
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
    ];

    pub const fn as_u8(self) -> u8 {
        self as u8
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
        }
    }

    /// Whether Argument 1 / Argument 2 carry anything; unused arguments must be zero.
    pub const fn uses_args(self) -> (bool, bool) {
        match self {
            Opcode::Read8 | Opcode::Read32 | Opcode::Read64 | Opcode::Read4K | Opcode::FreeSharedPage => (false, false),
            Opcode::Write8 | Opcode::Write32 | Opcode::Write64 | Opcode::Fad | Opcode::Swap => (true, false),
            Opcode::RemoteSpawn | Opcode::Notify => (true, false),
            Opcode::Write128 | Opcode::Cas | Opcode::AllocSharedPage => (true, true),
        }
    }
}

impl TryFrom<u8> for Opcode {
    type Error = UnknownOpcode;

    /// A `match`, not a search of [`Opcode::ALL`]: the atomic service decodes every request
    /// with it (the test below checks the two agree).
    fn try_from(value: u8) -> Result<Self, Self::Error> {
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
    fn data_ops_never_cross_a_page_when_aligned_except_write128() {
        for op in Opcode::ALL {
            if let AddressUse::Data { align, width } = op.address_use() {
                assert!(align.is_power_of_two());
                assert_eq!(width == align, op != Opcode::Write128, "{op:?}");
            }
        }
    }
}
