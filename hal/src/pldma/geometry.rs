//! How transfers are cut into blocks and blocks into packets: on the windows of the
//! **destination** address (16 KiB for blocks, 256 B for packets; `docs/hw/pldma.md`,
//! "Identities and limits"). The R5 uses it to split transfers, the engine to split blocks.

use super::{BLOCK_BYTES, PACKET_BYTES};

/// A piece of a range: `len` bytes at `offset` from the range's start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    /// Bytes from the range's start to the piece's first byte.
    pub offset: u64,
    /// Bytes in the piece, at least 1.
    pub len: u64,
}

/// `[start, start + len)` cut at the multiples of `window` (a power of two).
///
/// The window is kept as its log2: the R5 cuts every block with these, and a 64-bit division
/// by a value the compiler cannot see is a library call of a hundred-odd instructions on a
/// 32-bit core; shifts and masks are one or two.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Windows {
    start: u64,
    len: u64,
    window_log2: u32,
}

impl Windows {
    /// `None` for an empty range or one that runs past 2^64.
    pub const fn new(start: u64, len: u64, window: u64) -> Option<Self> {
        match start.checked_add(len) {
            Some(_) if len > 0 && window.is_power_of_two() => {
                Some(Self { start, len, window_log2: window.trailing_zeros() })
            }
            _ => None,
        }
    }

    /// Blocks of a transfer whose destination is `dst`.
    pub const fn blocks(dst: u64, len: u64) -> Option<Self> {
        Self::new(dst, len, BLOCK_BYTES)
    }

    /// Packets of a block whose destination is `dst`.
    pub const fn packets(dst: u64, len: u64) -> Option<Self> {
        Self::new(dst, len, PACKET_BYTES)
    }

    /// Pieces in the range: windows it touches, at least 1.
    pub const fn count(&self) -> u64 {
        let first = self.start >> self.window_log2;
        let last = (self.start + self.len - 1) >> self.window_log2;
        last - first + 1
    }

    /// Piece `i` (0-based), if there is one.
    pub const fn piece(&self, i: u64) -> Option<Piece> {
        if i >= self.count() {
            return None;
        }
        let base = self.start >> self.window_log2 << self.window_log2;
        let begin = if i == 0 { self.start } else { base + (i << self.window_log2) };
        let window_end = base + ((i + 1) << self.window_log2);
        let end = self.start + self.len;
        let end = if end < window_end { end } else { window_end };
        Some(Piece { offset: begin - self.start, len: end - begin })
    }
}

/// `[dst, dst + len)` is a valid block: 1 to 16 KiB inside one 16 KiB window.
pub const fn is_block(dst: u64, len: u64) -> bool {
    len > 0 && len <= BLOCK_BYTES && dst % BLOCK_BYTES + len <= BLOCK_BYTES
}

/// `[dst, dst + len)` is a valid packet payload: 1 to 256 B inside one 256 B window.
pub const fn is_packet(dst: u64, len: u64) -> bool {
    len > 0 && len <= PACKET_BYTES && dst % PACKET_BYTES + len <= PACKET_BYTES
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    fn pieces(w: Windows) -> Vec<Piece> {
        (0..w.count()).map(|i| w.piece(i).unwrap()).collect()
    }

    #[test]
    fn pieces_tile_the_range_on_window_boundaries() {
        for start in [0u64, 1, 255, 256, 4095, 16383, 16384, 0x1234_5678] {
            for len in [1u64, 2, 255, 256, 257, 4096, 16383, 16384, 16385, 100_000] {
                for window in [PACKET_BYTES, BLOCK_BYTES] {
                    let w = Windows::new(start, len, window).unwrap();
                    let ps = pieces(w);
                    assert_eq!(ps.iter().map(|p| p.len).sum::<u64>(), len);
                    let mut at = 0;
                    for p in &ps {
                        assert_eq!(p.offset, at, "contiguous");
                        let a = start + p.offset;
                        assert!(a % window + p.len <= window, "inside one window");
                        at += p.len;
                    }
                    assert!(ps[1..].iter().all(|p| (start + p.offset).is_multiple_of(window)));
                    assert_eq!(w.piece(w.count()), None);
                }
            }
        }
    }

    #[test]
    fn counts() {
        assert_eq!(Windows::packets(0, 16384).unwrap().count(), 64);
        assert_eq!(Windows::packets(1, 256).unwrap().count(), 2);
        assert_eq!(Windows::blocks(16383, 2).unwrap().count(), 2);
        assert_eq!(Windows::blocks(0, 1 << 20).unwrap().count(), 64);
        assert_eq!(Windows::new(0, 0, 256), None);
        assert_eq!(Windows::new(u64::MAX, 2, 256), None);
        assert_eq!(Windows::new(0, 1, 100), None);
    }

    #[test]
    fn block_and_packet_rules() {
        assert!(is_block(0, BLOCK_BYTES));
        assert!(is_block(BLOCK_BYTES - 1, 1));
        assert!(!is_block(1, BLOCK_BYTES));
        assert!(!is_block(0, 0));
        assert!(is_packet(0x1f0, 16));
        assert!(!is_packet(0x1f0, 17));
    }
}
