//! Header checksums and partition data digests.
//!
//! Every header in a ZynqMP boot image carries the same kind of checksum: the ones'
//! complement of the 32-bit wrapping sum of the little-endian words it covers
//! (UG1283, "Zynq UltraScale+ MPSoC Boot Header": "Header Checksum"; "Image Header
//! Table": "Checksum"; "Partition Header": "Header Checksum"). The FSBL checks the image
//! header table and the partition headers with exactly this rule
//! (`XFsbl_ValidateChecksum`: `Checksum = ~(X1 + X2 + ... + Xn)`).
//!
//! Partition *data* checksums are optional digests selected by the partition attribute
//! bits 14:12 (UG1283, "Zynq UltraScale+ MPSoC Partition Attribute Bits"); only SHA3 (3)
//! is accepted by the ZynqMP FSBL. bootgen writes NIST SHA3-384 for ordinary partitions
//! and Keccak-384 (the original 0x01 padding) for the digest it appends to the boot
//! loader partition.

use sha3::{Digest, Keccak384, Sha3_384};

/// Length in bytes of a SHA3-384 / Keccak-384 digest.
pub const SHA3_DIGEST_LEN: usize = 48;

/// Reads the little-endian 32-bit word at `offset` of `bytes`.
///
/// Returns `None` instead of panicking when the word does not fit.
pub fn read_u32(bytes: &[u8], offset: usize) -> Option<u32> {
    let end = offset.checked_add(4)?;
    let word: [u8; 4] = bytes.get(offset..end)?.try_into().ok()?;
    Some(u32::from_le_bytes(word))
}

/// Reads the little-endian 64-bit value at `offset` of `bytes`.
pub fn read_u64(bytes: &[u8], offset: usize) -> Option<u64> {
    let end = offset.checked_add(8)?;
    let word: [u8; 8] = bytes.get(offset..end)?.try_into().ok()?;
    Some(u64::from_le_bytes(word))
}

/// Ones' complement of the wrapping sum of the little-endian words in `bytes`.
///
/// A trailing partial word (fewer than 4 bytes) is ignored, exactly like bootgen's
/// `ComputeWordChecksum`, which sums `length / 4` words.
pub fn word_checksum(bytes: &[u8]) -> u32 {
    !bytes.chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).fold(0u32, u32::wrapping_add)
}

/// NIST SHA3-384 of `data` (bootgen's partition checksum for non-boot-loader partitions).
pub fn sha3_384(data: &[u8]) -> [u8; SHA3_DIGEST_LEN] {
    Sha3_384::digest(data).into()
}

/// Keccak-384 with the original (pre-NIST, 0x01) padding of `data` (bootgen's digest
/// appended to the boot loader partition when it carries a SHA3 checksum).
pub fn keccak_384(data: &[u8]) -> [u8; SHA3_DIGEST_LEN] {
    Keccak384::digest(data).into()
}

/// Formats a digest as lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_of_zeros_is_all_ones() {
        // The NULL partition header that terminates the table: all zero words, so the
        // checksum is 0xFFFF_FFFF (UG1283, "Partition Header": last structure is NULL
        // except for the checksum).
        assert_eq!(word_checksum(&[0u8; 60]), 0xFFFF_FFFF);
    }

    #[test]
    fn checksum_wraps() {
        let words = [0xFFFF_FFFFu32, 2];
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        assert_eq!(word_checksum(&bytes), !1u32);
    }

    #[test]
    fn partial_trailing_word_is_ignored() {
        assert_eq!(word_checksum(&[1, 0, 0, 0, 0xAA]), !1u32);
    }

    #[test]
    fn reads_are_bounds_checked() {
        assert_eq!(read_u32(&[1, 2, 3], 0), None);
        assert_eq!(read_u32(&[1, 0, 0, 0], 0), Some(1));
        assert_eq!(read_u32(&[1, 0, 0, 0], usize::MAX), None);
        assert_eq!(read_u64(&[0; 7], 0), None);
    }

    #[test]
    fn digests_match_known_vectors() {
        // Empty-message vectors for SHA3-384 (FIPS 202) and Keccak-384.
        assert_eq!(
            hex(&sha3_384(b"")),
            "0c63a75b845e4f7d01107d852e4c2485c51a50aaaa94fc61995e71bbee983a2a\
             c3713831264adb47fb6bd1e058d5f004"
        );
        assert_eq!(
            hex(&keccak_384(b"")),
            "2c23146a63a29acf99e73b88f8c24eaa7dc60aa771780ccc006afbfa8fe2479b\
             2dd2b21362337441ac12b515911957ff"
        );
    }
}
