//! The checks an atomic service makes on a request before it looks at any state, in its order
//! (`docs/hw/gsas-packets.md`, "Opcodes" and "Error codes"): opcode and reserved byte; node;
//! alignment and page end (and the offset-0 rule of alloc/Notify); arguments (a 32-bit process
//! atomic's both at most `0xffff_ffff`). The service runs
//! them first; the user library runs the same function before sending, so a request that cannot
//! succeed never leaves the process, and a test knows which code each invalid request must get.
//!
//! What depends on the target's state (translation, rights, receivers, resources) is not here.

use super::{
    AddressUse, EMPTY_THREAD_ARGUMENT, ErrorCode, GlobalAddress, Notification, Opcode, PAGE_SIZE, RawRequest, Request,
    VaWidth,
};

/// Most pages one allocSharedPage may ask for on the reference service (its
/// `max_alloc_pages`; a service may be configured with fewer).
pub const MAX_ALLOC_PAGES: u64 = 256;

/// Who besides the owner may access a page: allocSharedPage's Argument 2
/// (`docs/hw/gsas-packets.md`, "Rights").
#[repr(u64)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sharing {
    /// Every domain may read and write (the seed's behaviour: all pages are "shared").
    Shared = 0,
    /// Other domains may read.
    ReadOnly = 1,
    /// Only the owner.
    Private = 2,
}

impl Sharing {
    #[inline]
    pub const fn bits(self) -> u64 {
        self as u64
    }

    #[inline]
    pub const fn from_bits(bits: u64) -> Option<Self> {
        match bits {
            0 => Some(Sharing::Shared),
            1 => Some(Sharing::ReadOnly),
            2 => Some(Sharing::Private),
            _ => None,
        }
    }
}

/// What [`static_check`] asks of an opcode byte, for every byte at once: one load from
/// [`RULES`] replaces a `match` per question (the atomic service checks every request). Built at
/// compile time from [`Opcode`]'s own methods, so the table and the opcodes cannot disagree.
#[derive(Clone, Copy, Debug)]
struct Rule {
    /// `None`: the byte names no operation.
    opcode: Option<Opcode>,
    address: AddressUse,
    uses_args: (bool, bool),
    /// The largest Argument 1 (a narrow write's value, a 32-bit process atomic's).
    arg1_max: u64,
    /// The largest Argument 2 (a 32-bit process compare-and-swap's new value).
    arg2_max: u64,
}

const RULES: [Rule; 256] = {
    let none =
        Rule { opcode: None, address: AddressUse::NodeOnly, uses_args: (false, false), arg1_max: 0, arg2_max: 0 };
    let mut rules = [none; 256];
    let mut i = 0;
    while i < Opcode::ALL.len() {
        let op = Opcode::ALL[i];
        let narrow = matches!(op.va_op(), Some((_, VaWidth::W32)));
        let arg1_max = match op {
            Opcode::Write8 => u8::MAX as u64,
            Opcode::Write32 => u32::MAX as u64,
            _ if narrow => u32::MAX as u64,
            _ => u64::MAX,
        };
        let arg2_max = if narrow { u32::MAX as u64 } else { u64::MAX };
        rules[op as usize] =
            Rule { opcode: Some(op), address: op.address_use(), uses_args: op.uses_args(), arg1_max, arg2_max };
        i += 1;
    }
    rules
};

/// `raw` as a [`Request`], or the code the service on node `target` (allowing at most
/// `max_alloc_pages` per allocation) must answer whatever its state.
#[inline]
pub fn static_check(raw: &RawRequest, target: u16, max_alloc_pages: u64) -> Result<Request, ErrorCode> {
    let rule = &RULES[usize::from(raw.opcode)];
    let opcode = rule.opcode.ok_or(ErrorCode::BadOpcode)?;
    if raw.reserved != 0 {
        return Err(ErrorCode::BadArgument);
    }
    let address = GlobalAddress::from_raw(raw.address);
    if address.node() != target {
        return Err(ErrorCode::WrongNode);
    }
    match rule.address {
        AddressUse::Data { align, width } => {
            if !address.is_aligned(align) || address.page_offset() + width > PAGE_SIZE {
                return Err(ErrorCode::Unaligned);
            }
        }
        AddressUse::Page if !address.is_aligned(PAGE_SIZE) => return Err(ErrorCode::Unaligned),
        AddressUse::NodeOnly if address.offset() != 0 => return Err(ErrorCode::BadArgument),
        AddressUse::Page | AddressUse::NodeOnly => {}
    }
    let (uses1, uses2) = rule.uses_args;
    let fits = raw.arg1 <= rule.arg1_max
        && raw.arg2 <= rule.arg2_max
        && match opcode {
            Opcode::AllocSharedPage => {
                Sharing::from_bits(raw.arg2).is_some() && (1..=max_alloc_pages).contains(&raw.arg1)
            }
            Opcode::RemoteSpawn => raw.arg1 != EMPTY_THREAD_ARGUMENT,
            Opcode::Notify => Notification::from_raw(raw.arg1).is_ok(),
            _ => true,
        };
    if (!uses1 && raw.arg1 != 0) || (!uses2 && raw.arg2 != 0) || !fits {
        return Err(ErrorCode::BadArgument);
    }
    Ok(Request { sender: raw.sender, opcode, address, arg1: raw.arg1, arg2: raw.arg2 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gsas::Pid;

    fn raw(opcode: u8, address: u64, arg1: u64, arg2: u64) -> RawRequest {
        RawRequest { sender: Pid::default(), reserved: 0, opcode, address, arg1, arg2 }
    }

    const N1: u64 = 1 << 48;

    #[test]
    fn every_rule_of_the_doc_in_its_order() {
        use ErrorCode::*;
        let cases: &[(RawRequest, Result<(), ErrorCode>)] = &[
            (raw(0x00, N1, 0, 0), Err(BadOpcode)),
            (raw(0x05, N1 + 1, 9, 9), Err(BadOpcode)),
            (RawRequest { reserved: 1, ..raw(0x03, 2 << 48, 0, 0) }, Err(BadArgument)),
            (raw(0x03, 2 << 48, 0, 0), Err(WrongNode)),
            (raw(0x03, N1 + 4, 1, 0), Err(Unaligned)),
            (raw(0x03, N1 + 8, 1, 0), Err(BadArgument)),
            (raw(0x03, N1 + 8, 0, 0), Ok(())),
            (raw(0x01, N1 + 0xfff, 0, 0), Ok(())),
            (raw(0x02, N1 + 0xffe, 0, 0), Err(Unaligned)),
            (raw(0x04, N1 + 0x10, 0, 0), Err(Unaligned)),
            (raw(0x11, N1 + 3, 0x100, 0), Err(BadArgument)),
            (raw(0x11, N1 + 3, 0xff, 0), Ok(())),
            (raw(0x12, N1 + 4, 1 << 32, 0), Err(BadArgument)),
            (raw(0x14, N1 + 0xff8, 1, 2), Err(Unaligned)),
            (raw(0x14, N1 + 0xff0, 1, 2), Ok(())),
            (raw(0x21, N1 + 8, 1, 2), Ok(())),
            (raw(0x22, N1 + 8, 1, 2), Err(BadArgument)),
            (raw(0x31, N1 + 0x1000, 1, 0), Err(BadArgument)),
            (raw(0x31, N1, 0, 0), Err(BadArgument)),
            (raw(0x31, N1, 257, 0), Err(BadArgument)),
            (raw(0x31, N1, 256, 3), Err(BadArgument)),
            (raw(0x31, N1, 256, 2), Ok(())),
            (raw(0x32, N1 + 0x2000, 0, 0), Ok(())),
            (raw(0x32, N1 + 0x2008, 0, 0), Err(Unaligned)),
            (raw(0x33, N1 + 0x2000, EMPTY_THREAD_ARGUMENT, 0), Err(BadArgument)),
            (raw(0x33, N1 + 0x2000, 7, 0), Ok(())),
            (raw(0x40, N1, 0x0fff_ffff_ffff_ffff, 0), Err(BadArgument)),
            (raw(0x40, N1, 0x8000_0000_0000_0001, 1), Err(BadArgument)),
            (raw(0x40, N1, 0x8000_0000_0000_0001, 0), Ok(())),
            // Process atomics: aligned to their width, 32-bit forms' arguments 32 bits wide.
            (raw(0x54, N1 + 0x20_0000_0004, 1, 0), Err(Unaligned)),
            (raw(0x54, N1 + 0x20_0000_0008, u64::MAX, 0), Ok(())),
            (raw(0x5C, N1 + 0x20_0000_0004, 1 << 32, 0), Err(BadArgument)),
            (raw(0x5C, N1 + 0x20_0000_0004, 0xffff_ffff, 0), Ok(())),
            (raw(0x5A, N1 + 0x20_0000_0004, 1, 1 << 32), Err(BadArgument)),
            (raw(0x5A, N1 + 0x20_0000_0004, 0xffff_ffff, 0xffff_ffff), Ok(())),
            (raw(0x50, N1 + 0x20_0000_0008, 0, 1), Err(BadArgument)),
        ];
        for (i, (r, want)) in cases.iter().enumerate() {
            assert_eq!(static_check(r, 1, MAX_ALLOC_PAGES).map(drop), *want, "case {i}: {r:?}");
        }
        assert_eq!(static_check(&raw(0x31, N1, 9, 0), 1, 8), Err(BadArgument), "a smaller configured maximum");
    }

    #[test]
    fn a_request_that_passes_is_the_raw_one_typed() {
        let r = raw(0x21, N1 + 8, 3, 4);
        let request = static_check(&r, 1, MAX_ALLOC_PAGES).unwrap();
        assert_eq!(request, Request::try_from(r).unwrap());
    }

    #[test]
    fn the_rule_table_names_exactly_the_opcodes() {
        for byte in 0..=u8::MAX {
            assert_eq!(RULES[usize::from(byte)].opcode, Opcode::try_from(byte).ok(), "{byte:#04x}");
        }
    }

    #[test]
    fn sharing_bits_round_trip() {
        for s in [Sharing::Shared, Sharing::ReadOnly, Sharing::Private] {
            assert_eq!(Sharing::from_bits(s.bits()), Some(s));
        }
        assert_eq!(Sharing::from_bits(3), None);
    }
}
