//! Partition headers: UG1283 "Zynq UltraScale+ MPSoC Partition Header" (bootgen
//! `ZynqMpPartitionHeaderTableStructure`, FSBL `XFsblPs_PartitionHeader`).
//!
//! Each header is 64 bytes. The headers form a linked list through the word offset at
//! 0x0C; bootgen lays them out back to back and terminates the table with a NULL header
//! (all zero except its checksum, 0xFFFFFFFF).

use thiserror::Error;

use crate::attributes::{AttributeError, PartitionAttributes};
use crate::checksum::{read_u32, read_u64, word_checksum};

/// Length of a partition header.
pub const PARTITION_HEADER_LEN: usize = 64;

/// Byte offsets within a partition header.
pub mod offsets {
    /// Encrypted partition data word length.
    pub const ENCRYPTED_WORD_LEN: usize = 0x00;
    /// Unencrypted data word length.
    pub const UNENCRYPTED_WORD_LEN: usize = 0x04;
    /// Total partition word length (data + padding + expansion + authentication).
    pub const TOTAL_WORD_LEN: usize = 0x08;
    /// Word offset of the next partition header (0 = last).
    pub const NEXT_PARTITION_HEADER: usize = 0x0C;
    /// Destination execution address, 64 bits (low word first).
    pub const EXEC_ADDRESS: usize = 0x10;
    /// Destination load address, 64 bits (low word first).
    pub const LOAD_ADDRESS: usize = 0x18;
    /// Word offset of the partition data in the image.
    pub const DATA_WORD_OFFSET: usize = 0x20;
    /// Attribute bits.
    pub const ATTRIBUTES: usize = 0x24;
    /// Section count (number of partitions of the image, on its first partition).
    pub const SECTION_COUNT: usize = 0x28;
    /// Word offset of the checksum (0 = none).
    pub const CHECKSUM_WORD_OFFSET: usize = 0x2C;
    /// Word offset of the image header.
    pub const IMAGE_HEADER_WORD_OFFSET: usize = 0x30;
    /// Word offset of the authentication certificate (0 = none).
    pub const AUTH_CERT_WORD_OFFSET: usize = 0x34;
    /// Partition number (bootgen); the FSBL reads the low 8 bits as an IV extension.
    pub const PARTITION_NUMBER: usize = 0x38;
    /// Header checksum over words 0x00..=0x38.
    pub const CHECKSUM: usize = 0x3C;
}

/// Errors decoding a partition header.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PartitionHeaderError {
    /// The header does not fit in the file.
    #[error("truncated partition header at {offset:#x}: need 64 bytes, file has {available:#x}")]
    Truncated {
        /// Byte offset of the header.
        offset: usize,
        /// File length.
        available: usize,
    },
    /// Word 0x3C is wrong.
    #[error(
        "bad partition header checksum at {offset:#x}: stored {stored:#010x}, computed \
         {computed:#010x} (ones' complement of the sum of words 0x00..=0x38)"
    )]
    BadChecksum {
        /// Byte offset of the checksum word.
        offset: usize,
        /// Stored value.
        stored: u32,
        /// Computed value.
        computed: u32,
    },
    /// The attribute word holds a reserved value.
    #[error("partition header at {offset:#x}: attribute word {raw:#010x}: {source}")]
    Attributes {
        /// Byte offset of the header.
        offset: usize,
        /// Raw attribute word.
        raw: u32,
        /// The field in error.
        source: AttributeError,
    },
}

/// A decoded partition header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionHeader {
    /// 0x00: encrypted partition data length in words.
    pub encrypted_word_len: u32,
    /// 0x04: unencrypted data length in words.
    pub unencrypted_word_len: u32,
    /// 0x08: total partition length in words (includes AC, padding, expansion).
    pub total_word_len: u32,
    /// 0x0C: word offset of the next partition header (0 = last).
    pub next_partition_header_word_offset: u32,
    /// 0x10: destination execution address.
    pub exec_address: u64,
    /// 0x18: destination load address.
    pub load_address: u64,
    /// 0x20: word offset of the partition data.
    pub data_word_offset: u32,
    /// 0x24: attribute bits, decoded.
    pub attributes: PartitionAttributes,
    /// 0x28: section count.
    pub section_count: u32,
    /// 0x2C: word offset of the checksum (0 = none).
    pub checksum_word_offset: u32,
    /// 0x30: word offset of the image header.
    pub image_header_word_offset: u32,
    /// 0x34: word offset of the authentication certificate (0 = none).
    pub auth_cert_word_offset: u32,
    /// 0x38: partition number.
    pub partition_number: u32,
    /// 0x3C: header checksum as stored.
    pub checksum: u32,
}

impl PartitionHeader {
    /// The terminating NULL header: all zero except the checksum.
    pub fn null_header_bytes() -> [u8; PARTITION_HEADER_LEN] {
        let mut b = [0u8; PARTITION_HEADER_LEN];
        let sum = word_checksum(&b[..offsets::CHECKSUM]);
        b[offsets::CHECKSUM..].copy_from_slice(&sum.to_le_bytes());
        b
    }

    /// Serializes the header (the stored checksum is written as is).
    pub fn encode(&self) -> [u8; PARTITION_HEADER_LEN] {
        use offsets::*;
        let mut b = [0u8; PARTITION_HEADER_LEN];
        let mut put32 = |o: usize, v: u32| b[o..o + 4].copy_from_slice(&v.to_le_bytes());
        put32(ENCRYPTED_WORD_LEN, self.encrypted_word_len);
        put32(UNENCRYPTED_WORD_LEN, self.unencrypted_word_len);
        put32(TOTAL_WORD_LEN, self.total_word_len);
        put32(NEXT_PARTITION_HEADER, self.next_partition_header_word_offset);
        put32(DATA_WORD_OFFSET, self.data_word_offset);
        put32(ATTRIBUTES, self.attributes.to_bits());
        put32(SECTION_COUNT, self.section_count);
        put32(CHECKSUM_WORD_OFFSET, self.checksum_word_offset);
        put32(IMAGE_HEADER_WORD_OFFSET, self.image_header_word_offset);
        put32(AUTH_CERT_WORD_OFFSET, self.auth_cert_word_offset);
        put32(PARTITION_NUMBER, self.partition_number);
        put32(CHECKSUM, self.checksum);
        b[EXEC_ADDRESS..EXEC_ADDRESS + 8].copy_from_slice(&self.exec_address.to_le_bytes());
        b[LOAD_ADDRESS..LOAD_ADDRESS + 8].copy_from_slice(&self.load_address.to_le_bytes());
        b
    }

    /// Checksum of words 0x00..=0x38 as they are now.
    pub fn compute_checksum(&self) -> u32 {
        word_checksum(&self.encode()[..offsets::CHECKSUM])
    }

    /// Sets the stored checksum to the computed one.
    pub fn update_checksum(&mut self) {
        self.checksum = self.compute_checksum();
    }

    /// Decodes the header at byte `offset` of `file`, verifying its checksum and
    /// attribute word. Never panics.
    pub fn decode(file: &[u8], offset: usize) -> Result<Self, PartitionHeaderError> {
        use offsets::*;
        let b = offset
            .checked_add(PARTITION_HEADER_LEN)
            .and_then(|end| file.get(offset..end))
            .ok_or(PartitionHeaderError::Truncated { offset, available: file.len() })?;
        let w = |o: usize| read_u32(b, o).unwrap_or(0);
        let d = |o: usize| read_u64(b, o).unwrap_or(0);
        let stored = w(CHECKSUM);
        let computed = word_checksum(&b[..CHECKSUM]);
        if stored != computed {
            return Err(PartitionHeaderError::BadChecksum { offset: offset + CHECKSUM, stored, computed });
        }
        let raw = w(ATTRIBUTES);
        let attributes = PartitionAttributes::from_bits(raw).map_err(|source| PartitionHeaderError::Attributes {
            offset,
            raw,
            source,
        })?;
        Ok(PartitionHeader {
            encrypted_word_len: w(ENCRYPTED_WORD_LEN),
            unencrypted_word_len: w(UNENCRYPTED_WORD_LEN),
            total_word_len: w(TOTAL_WORD_LEN),
            next_partition_header_word_offset: w(NEXT_PARTITION_HEADER),
            exec_address: d(EXEC_ADDRESS),
            load_address: d(LOAD_ADDRESS),
            data_word_offset: w(DATA_WORD_OFFSET),
            attributes,
            section_count: w(SECTION_COUNT),
            checksum_word_offset: w(CHECKSUM_WORD_OFFSET),
            image_header_word_offset: w(IMAGE_HEADER_WORD_OFFSET),
            auth_cert_word_offset: w(AUTH_CERT_WORD_OFFSET),
            partition_number: w(PARTITION_NUMBER),
            checksum: stored,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attributes::{DestCpu, ExceptionLevel, TrustZone};

    fn sample() -> PartitionHeader {
        // Field values of the ATF partition header of a bootgen-generated BOOT.BIN.
        let mut ph = PartitionHeader {
            encrypted_word_len: 0x31DE,
            unencrypted_word_len: 0x31DE,
            total_word_len: 0x31DE,
            next_partition_header_word_offset: 0x460,
            exec_address: 0xFFFE_A000,
            load_address: 0xFFFE_A000,
            data_word_offset: 0xEDB0,
            attributes: PartitionAttributes::from_bits(0x117).unwrap(),
            section_count: 1,
            checksum_word_offset: 0,
            image_header_word_offset: 0x250,
            auth_cert_word_offset: 0,
            partition_number: 1,
            checksum: 0,
        };
        ph.update_checksum();
        ph
    }

    #[test]
    fn checksum_matches_bootgen() {
        assert_eq!(sample().checksum, 0x0001_34EC);
        let a = sample().attributes;
        assert_eq!(a.dest_cpu, DestCpu::A53_0);
        assert_eq!(a.exception_level, ExceptionLevel::El3);
        assert_eq!(a.trustzone, TrustZone::Secure);
    }

    #[test]
    fn field_offsets_follow_ug1283() {
        let mut ph = sample();
        ph.exec_address = 0x0000_0008_1234_5678;
        ph.load_address = 0x0000_0009_8765_4320;
        ph.checksum_word_offset = 0x1234;
        ph.auth_cert_word_offset = 0x5678;
        ph.update_checksum();
        let b = ph.encode();
        let w = |o| read_u32(&b, o).unwrap();
        assert_eq!(w(0x00), 0x31DE);
        assert_eq!(w(0x04), 0x31DE);
        assert_eq!(w(0x08), 0x31DE);
        assert_eq!(w(0x0C), 0x460);
        assert_eq!(w(0x10), 0x1234_5678);
        assert_eq!(w(0x14), 0x8);
        assert_eq!(w(0x18), 0x8765_4320);
        assert_eq!(w(0x1C), 0x9);
        assert_eq!(w(0x20), 0xEDB0);
        assert_eq!(w(0x24), 0x117);
        assert_eq!(w(0x28), 1);
        assert_eq!(w(0x2C), 0x1234);
        assert_eq!(w(0x30), 0x250);
        assert_eq!(w(0x34), 0x5678);
        assert_eq!(w(0x38), 1);
        assert_eq!(w(0x3C), ph.checksum);
        assert_eq!(PartitionHeader::decode(&b, 0), Ok(ph));
    }

    #[test]
    fn decode_errors() {
        let b = sample().encode();
        assert!(matches!(PartitionHeader::decode(&b, 1), Err(PartitionHeaderError::Truncated { offset: 1, .. })));
        let mut bad = b;
        bad[0x20] ^= 1;
        assert!(matches!(
            PartitionHeader::decode(&bad, 0),
            Err(PartitionHeaderError::BadChecksum { offset: 0x3C, .. })
        ));
        let mut ph = sample();
        ph.attributes.dest_cpu = DestCpu::Pmu;
        let mut raw = ph.encode();
        raw[0x25] = 0x0F; // destination cpu 15
        let sum = word_checksum(&raw[..0x3C]);
        raw[0x3C..].copy_from_slice(&sum.to_le_bytes());
        assert!(matches!(PartitionHeader::decode(&raw, 0), Err(PartitionHeaderError::Attributes { .. })));
    }

    #[test]
    fn null_header() {
        let b = PartitionHeader::null_header_bytes();
        assert!(b[..0x3C].iter().all(|&x| x == 0));
        assert_eq!(read_u32(&b, 0x3C), Some(0xFFFF_FFFF));
    }
}
