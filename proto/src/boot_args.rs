//! Boot arguments: a short text placed in DDR by the loader (QEMU's `-device loader`, or a data
//! partition of BOOT.bin) and read by the image at start (`docs/hw/boot-args.md`).
//!
//! ```text
//! +0  magic     u32  "BARG" (0x4752_4142, little-endian)
//! +4  length    u32  bytes of text, at most MAX_TEXT
//! +8  checksum  u32  FNV-1a of the text
//! +12 text      UTF-8, space-separated words: `key=value` or `flag`
//! ```
//!
//! The checksum keeps stale DDR contents from being taken for arguments on hardware.

use crate::checksum::fnv1a;

pub const MAGIC: u32 = 0x4752_4142;
pub const HEADER_SIZE: usize = 12;
pub const MAX_TEXT: usize = 4096 - HEADER_SIZE;

/// Encodes `text` into the block the loader places (host side).
pub fn encode(text: &str, out: &mut [u8]) -> Option<usize> {
    let len = HEADER_SIZE + text.len();
    if text.len() > MAX_TEXT || out.len() < len {
        return None;
    }
    out[0..4].copy_from_slice(&MAGIC.to_le_bytes());
    out[4..8].copy_from_slice(&(text.len() as u32).to_le_bytes());
    out[8..12].copy_from_slice(&fnv1a(text.as_bytes()).to_le_bytes());
    out[HEADER_SIZE..len].copy_from_slice(text.as_bytes());
    Some(len)
}

/// Parsed boot arguments; borrowed from the block.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BootArgs<'a> {
    text: &'a str,
}

impl<'a> BootArgs<'a> {
    /// Reads a block; `None` when there is no valid block (the image then runs with defaults).
    pub fn decode(block: &'a [u8]) -> Option<Self> {
        let word = |i: usize| block.get(i..i + 4).map(|b| u32::from_le_bytes(b.try_into().unwrap()));
        if word(0)? != MAGIC {
            return None;
        }
        let len = word(4)? as usize;
        if len > MAX_TEXT {
            return None;
        }
        let text = block.get(HEADER_SIZE..HEADER_SIZE + len)?;
        if fnv1a(text) != word(8)? {
            return None;
        }
        Some(Self { text: core::str::from_utf8(text).ok()? })
    }

    pub fn text(&self) -> &'a str {
        self.text
    }

    /// The value of the first `key=value`, if present.
    pub fn value(&self, key: &str) -> Option<&'a str> {
        self.values(key).next()
    }

    /// Every value of `key=value`, in order (a key may repeat).
    pub fn values<'k>(&self, key: &'k str) -> impl Iterator<Item = &'a str> + 'k
    where
        'a: 'k,
    {
        self.text.split_ascii_whitespace().filter_map(move |w| w.strip_prefix(key)?.strip_prefix('='))
    }

    /// Whether the bare word `flag` is present.
    pub fn flag(&self, flag: &str) -> bool {
        self.text.split_ascii_whitespace().any(|w| w == flag)
    }
}

/// Whether `byte` stands for itself inside an escaped value.
fn is_plain(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"-_.,:/+@".contains(&byte)
}

/// `value` as one word of the text: every byte that is not a letter, a digit or one of
/// `-_.,:/+@` becomes `%XX` (two upper-case hex digits), so that values may hold spaces, `=`
/// or any byte.
pub fn escaped(value: &[u8]) -> impl Iterator<Item = u8> + '_ {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    value.iter().flat_map(|&b| {
        let (len, bytes) =
            if is_plain(b) { (1, [b, 0, 0]) } else { (3, [b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]) };
        bytes.into_iter().take(len)
    })
}

/// The bytes an [`escaped`] word stands for, into `out`; `None` if a `%` is not followed by two
/// hex digits or `out` is too small.
pub fn unescape(word: &str, out: &mut [u8]) -> Option<usize> {
    let bytes = word.as_bytes();
    let (mut i, mut n) = (0, 0);
    while i < bytes.len() {
        let byte = if bytes[i] == b'%' {
            let hex = core::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            i += 3;
            u8::from_str_radix(hex, 16).ok()?
        } else {
            i += 1;
            bytes[i - 1]
        };
        *out.get_mut(n)? = byte;
        n += 1;
    }
    Some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_values_are_one_word_and_come_back_whole() {
        for value in ["plain-value_1.2", "two words", "a=b%c", "", "\u{e9}t\u{e9}\n"] {
            let word: std::vec::Vec<u8> = escaped(value.as_bytes()).collect();
            let word = std::string::String::from_utf8(word).unwrap();
            assert!(!word.contains(' ') && !word.contains('=') && word.is_ascii(), "{word}");
            let mut out = [0u8; 64];
            let n = unescape(&word, &mut out).unwrap();
            assert_eq!(&out[..n], value.as_bytes());
        }
        assert_eq!(std::string::String::from_utf8(escaped(b"a b").collect()).unwrap(), "a%20b");
        let mut out = [0u8; 4];
        assert_eq!(unescape("%2", &mut out), None, "cut short");
        assert_eq!(unescape("%zz", &mut out), None, "not hex");
        assert_eq!(unescape("abcde", &mut out), None, "does not fit");
    }

    #[test]
    fn round_trip() {
        let mut block = [0u8; 128];
        let n = encode("filter=smp::sgi list filter=matrix", &mut block).unwrap();
        let args = BootArgs::decode(&block[..n]).unwrap();
        assert_eq!(args.value("filter"), Some("smp::sgi"));
        assert_eq!(args.values("filter").collect::<std::vec::Vec<_>>(), ["smp::sgi", "matrix"]);
        assert!(args.flag("list"));
        assert!(!args.flag("filter"));
        assert_eq!(args.value("list"), None);
    }

    #[test]
    fn rejects_garbage_and_corruption() {
        assert_eq!(BootArgs::decode(&[0u8; 64]), None);
        assert_eq!(BootArgs::decode(&[]), None);
        let mut block = [0u8; 64];
        let n = encode("list", &mut block).unwrap();
        block[HEADER_SIZE] ^= 1;
        assert_eq!(BootArgs::decode(&block[..n]), None);
        let n = encode("list", &mut block).unwrap();
        assert_eq!(BootArgs::decode(&block[..n - 1]), None, "truncated");
        block[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(BootArgs::decode(&block), None, "absurd length");
    }
}
