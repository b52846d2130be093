//! The checksum of the blocks a loader places in DDR (boot arguments, the program store): they
//! keep stale or damaged memory from being taken for a block.

/// FNV-1a (32-bit) of `bytes`.
pub fn fnv1a(bytes: &[u8]) -> u32 {
    fnv1a_continue(0x811c_9dc5, bytes)
}

/// FNV-1a carried on from `hash` (an earlier [`fnv1a`] or `fnv1a_continue`) over `bytes`, for
/// a block whose covered bytes are not contiguous.
pub fn fnv1a_continue(hash: u32, bytes: &[u8]) -> u32 {
    bytes.iter().fold(hash, |h, &b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values_and_continuation() {
        // The reference values of the FNV-1a specification (32-bit).
        assert_eq!(fnv1a(b""), 0x811c_9dc5);
        assert_eq!(fnv1a(b"a"), 0xe40c_292c);
        assert_eq!(fnv1a(b"foobar"), 0xbf9c_f968);
        assert_eq!(fnv1a_continue(fnv1a(b"foo"), b"bar"), fnv1a(b"foobar"));
    }
}
