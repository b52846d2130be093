//! The arguments a process was started with, as strings (`cargo xtask run PROGRAM -- ARGS`, the
//! console's `r` command). The kernel keeps them as zero-terminated strings (`ARGS` system call).

use crate::error::Error;
use crate::sys;
use proto::syscall::ARGS_MAX;

/// A copy of the process's arguments.
pub struct Arguments {
    bytes: [u8; ARGS_MAX],
    len: usize,
}

impl Arguments {
    /// From the bytes the kernel keeps: each argument followed by a zero byte.
    pub fn from_bytes(raw: &[u8]) -> Self {
        let len = raw.len().min(ARGS_MAX);
        let mut bytes = [0; ARGS_MAX];
        bytes[..len].copy_from_slice(&raw[..len]);
        Self { bytes, len }
    }

    /// Every argument in order; one that is not UTF-8 reads as `""`.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        let used = self.bytes[..self.len].strip_suffix(&[0]).unwrap_or(&self.bytes[..self.len]);
        used.split(|&b| b == 0).filter(move |_| self.len > 0).map(|a| core::str::from_utf8(a).unwrap_or(""))
    }

    /// Argument `index`.
    pub fn get(&self, index: usize) -> Option<&str> {
        self.iter().nth(index)
    }

    pub fn count(&self) -> usize {
        self.iter().count()
    }

    /// Argument `index` as a number (decimal, or hexadecimal with `0x`), or `NoArgument`.
    pub fn number(&self, index: usize) -> Result<u64, Error> {
        let text = self.get(index).ok_or(Error::NoArgument)?;
        let parsed = match text.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16),
            None => text.parse(),
        };
        parsed.map_err(|_| Error::NoArgument)
    }
}

/// The process's arguments.
pub fn arguments() -> Result<Arguments, Error> {
    let mut bytes = [0; ARGS_MAX];
    let len = sys::args(&mut bytes)?.min(ARGS_MAX);
    Ok(Arguments::from_bytes(&bytes[..len]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_split_at_the_zero_bytes() {
        let a = Arguments::from_bytes(b"one\0two words\0\0x10\0");
        assert_eq!(a.iter().collect::<Vec<_>>(), ["one", "two words", "", "x10"]);
        assert_eq!((a.count(), a.get(1), a.get(4)), (4, Some("two words"), None));
        let n = Arguments::from_bytes(b"42\0x2a\x000x2a\0");
        assert_eq!(
            (n.number(0), n.number(1), n.number(2), n.number(3)),
            (Ok(42), Err(Error::NoArgument), Ok(42), Err(Error::NoArgument))
        );
        assert_eq!(Arguments::from_bytes(b"").count(), 0);
        assert_eq!(Arguments::from_bytes(&[0xff, 0]).get(0), Some(""));
    }
}
