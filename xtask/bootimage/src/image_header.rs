//! The image header table and the image headers.
//!
//! * Image header table: UG1283 "Zynq UltraScale+ MPSoC Image Header Table" (bootgen
//!   `ZynqMpImageHeaderTableStructure`, FSBL `XFsblPs_ImageHeaderTable`), 64 bytes at the
//!   byte offset in boot header word 0x98.
//! * Image headers: UG1283 "Zynq UltraScale+ MPSoC Image Header", a linked list (word
//!   offsets) starting at image header table word 0x0C. One image header per input file;
//!   it points at the first of its partition headers.

use thiserror::Error;

use crate::checksum::{read_u32, word_checksum};

/// Image header table version written by bootgen for Zynq and ZynqMP
/// (`VERSION_ZYNQ_ZYNQMP`).
pub const IMAGE_HEADER_TABLE_VERSION: u32 = 0x0102_0000;
/// Length of the image header table in bytes.
pub const IMAGE_HEADER_TABLE_LEN: usize = 64;
/// Longest image name accepted (bootgen's reader uses a 256-byte buffer).
pub const MAX_IMAGE_NAME_LEN: usize = 255;

/// Byte offsets within the image header table.
pub mod iht_offsets {
    /// Version (0x01020000).
    pub const VERSION: usize = 0x00;
    /// Total count of partition headers (including the FSBL's).
    pub const PARTITION_COUNT: usize = 0x04;
    /// Word offset of the first partition header.
    pub const FIRST_PARTITION_HEADER: usize = 0x08;
    /// Word offset of the first image header.
    pub const FIRST_IMAGE_HEADER: usize = 0x0C;
    /// Word offset of the header authentication certificate (0 = none).
    pub const HEADER_AUTH_CERT: usize = 0x10;
    /// Boot device of the partitions ("partition present device").
    pub const BOOT_DEVICE: usize = 0x14;
    /// Nine reserved words, 0x18..=0x38.
    pub const RESERVED: usize = 0x18;
    /// Checksum over words 0x00..=0x38.
    pub const CHECKSUM: usize = 0x3C;
}

/// Byte offsets within an image header.
pub mod ih_offsets {
    /// Word offset of the next image header (0 = last).
    pub const NEXT_IMAGE_HEADER: usize = 0x00;
    /// Word offset of this image's first partition header.
    pub const PARTITION_HEADER: usize = 0x04;
    /// Reserved, always 0 (old bootgen releases stored the partition count here).
    pub const RESERVED: usize = 0x08;
    /// Number of partitions of this image.
    pub const PARTITION_COUNT: usize = 0x0C;
    /// Image name, packed 4 bytes at a time in reversed (big-endian) order.
    pub const NAME: usize = 0x10;
}

/// Errors decoding or encoding image headers.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ImageHeaderError {
    /// The structure does not fit in the file.
    #[error("truncated {what} at {offset:#x}: need {needed:#x} bytes, file has {available:#x}")]
    Truncated {
        /// Structure name.
        what: &'static str,
        /// Its byte offset.
        offset: usize,
        /// Bytes needed from `offset`.
        needed: usize,
        /// File length.
        available: usize,
    },
    /// Word 0x3C of the image header table is wrong.
    #[error(
        "bad image header table checksum at {offset:#x}: stored {stored:#010x}, computed \
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
    /// The packed image name has no terminating NUL within 256 bytes.
    #[error("image header at {offset:#x}: image name is not NUL terminated within 256 bytes")]
    NameTooLong {
        /// Byte offset of the image header.
        offset: usize,
    },
    /// A name given to the writer is empty, too long, or contains NUL.
    #[error("invalid image name {name:?}: {reason}")]
    InvalidName {
        /// The name.
        name: String,
        /// Why.
        reason: &'static str,
    },
}

/// Decoded image header table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageHeaderTable {
    /// 0x00.
    pub version: u32,
    /// 0x04: total number of partitions.
    pub partition_count: u32,
    /// 0x08: word offset of the first partition header.
    pub first_partition_header_word_offset: u32,
    /// 0x0C: word offset of the first image header.
    pub first_image_header_word_offset: u32,
    /// 0x10: word offset of the header authentication certificate (0 = none).
    pub header_auth_cert_word_offset: u32,
    /// 0x14: raw boot device word (see [`crate::attributes::BootDevice`]).
    pub boot_device: u32,
    /// 0x18..=0x38: reserved words.
    pub reserved: [u32; 9],
    /// 0x3C: checksum as stored.
    pub checksum: u32,
}

impl ImageHeaderTable {
    /// Serializes the table (the stored checksum is written as is).
    pub fn encode(&self) -> [u8; IMAGE_HEADER_TABLE_LEN] {
        use iht_offsets::*;
        let mut b = [0u8; IMAGE_HEADER_TABLE_LEN];
        let mut put = |o: usize, v: u32| b[o..o + 4].copy_from_slice(&v.to_le_bytes());
        put(VERSION, self.version);
        put(PARTITION_COUNT, self.partition_count);
        put(FIRST_PARTITION_HEADER, self.first_partition_header_word_offset);
        put(FIRST_IMAGE_HEADER, self.first_image_header_word_offset);
        put(HEADER_AUTH_CERT, self.header_auth_cert_word_offset);
        put(BOOT_DEVICE, self.boot_device);
        for (i, r) in self.reserved.iter().enumerate() {
            put(RESERVED + 4 * i, *r);
        }
        put(CHECKSUM, self.checksum);
        b
    }

    /// Checksum of words 0x00..=0x38 as they are now.
    pub fn compute_checksum(&self) -> u32 {
        word_checksum(&self.encode()[..iht_offsets::CHECKSUM])
    }

    /// Sets the stored checksum to the computed one.
    pub fn update_checksum(&mut self) {
        self.checksum = self.compute_checksum();
    }

    /// Decodes the table at byte `offset` of `file` and verifies its checksum.
    pub fn decode(file: &[u8], offset: usize) -> Result<Self, ImageHeaderError> {
        use iht_offsets::*;
        let bytes = offset.checked_add(IMAGE_HEADER_TABLE_LEN).and_then(|end| file.get(offset..end)).ok_or(
            ImageHeaderError::Truncated {
                what: "image header table",
                offset,
                needed: IMAGE_HEADER_TABLE_LEN,
                available: file.len(),
            },
        )?;
        let w = |o: usize| read_u32(bytes, o).unwrap_or(0);
        let mut reserved = [0u32; 9];
        for (i, r) in reserved.iter_mut().enumerate() {
            *r = w(RESERVED + 4 * i);
        }
        let stored = w(CHECKSUM);
        let computed = word_checksum(&bytes[..CHECKSUM]);
        if stored != computed {
            return Err(ImageHeaderError::BadChecksum { offset: offset + CHECKSUM, stored, computed });
        }
        Ok(ImageHeaderTable {
            version: w(VERSION),
            partition_count: w(PARTITION_COUNT),
            first_partition_header_word_offset: w(FIRST_PARTITION_HEADER),
            first_image_header_word_offset: w(FIRST_IMAGE_HEADER),
            header_auth_cert_word_offset: w(HEADER_AUTH_CERT),
            boot_device: w(BOOT_DEVICE),
            reserved,
            checksum: stored,
        })
    }
}

/// Decoded image header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageHeader {
    /// 0x00: word offset of the next image header, 0 for the last.
    pub next_image_header_word_offset: u32,
    /// 0x04: word offset of this image's first partition header.
    pub partition_header_word_offset: u32,
    /// 0x08: reserved (0). Old bootgen releases stored the partition count here.
    pub reserved: u32,
    /// 0x0C: number of partitions of this image.
    pub partition_count: u32,
    /// 0x10..: image name (usually the input file's base name).
    pub name: String,
}

/// Checks a name given to the writer.
pub fn validate_name(name: &str) -> Result<(), ImageHeaderError> {
    let reason = if name.is_empty() {
        "the name is empty"
    } else if name.len() > MAX_IMAGE_NAME_LEN {
        "the name is longer than 255 bytes"
    } else if name.bytes().any(|b| b == 0) {
        "the name contains a NUL byte"
    } else {
        return Ok(());
    };
    Err(ImageHeaderError::InvalidName { name: name.to_string(), reason })
}

impl ImageHeader {
    /// Encoded length: 16 bytes of fields, the name plus NUL rounded up to a word, and a
    /// zero terminator word (bootgen's `ZynqMpImageHeader` section size).
    pub fn encoded_len(&self) -> usize {
        16 + (self.name.len() + 1).next_multiple_of(4) + 4
    }

    /// The partition count, accounting for old bootgen releases that stored it in the
    /// reserved word 0x08 (bootgen's importer uses 0x08 when non-zero, else 0x0C).
    pub fn effective_partition_count(&self) -> u32 {
        if self.reserved != 0 { self.reserved } else { self.partition_count }
    }

    /// Serializes the header. The name is packed as UG1283 describes: each group of four
    /// bytes is stored reversed, so "FSBL10.ELF" becomes "LBSF", "E.01", "\0\0FL".
    pub fn encode(&self) -> Vec<u8> {
        use ih_offsets::*;
        let mut b = vec![0u8; self.encoded_len()];
        let mut put = |o: usize, v: u32| b[o..o + 4].copy_from_slice(&v.to_le_bytes());
        put(NEXT_IMAGE_HEADER, self.next_image_header_word_offset);
        put(PARTITION_HEADER, self.partition_header_word_offset);
        put(RESERVED, self.reserved);
        put(PARTITION_COUNT, self.partition_count);
        for (i, c) in self.name.bytes().enumerate() {
            b[NAME + (i & !3) + (3 - (i & 3))] = c;
        }
        b
    }

    /// Decodes the image header at byte `offset` of `file`. Returns the header and the
    /// number of bytes it occupies.
    pub fn decode(file: &[u8], offset: usize) -> Result<(Self, usize), ImageHeaderError> {
        use ih_offsets::*;
        let truncated =
            |needed: usize| ImageHeaderError::Truncated { what: "image header", offset, needed, available: file.len() };
        let w = |o: usize| offset.checked_add(o).and_then(|at| read_u32(file, at)).ok_or(truncated(o + 4));
        let next = w(NEXT_IMAGE_HEADER)?;
        let ph = w(PARTITION_HEADER)?;
        let reserved = w(RESERVED)?;
        let count = w(PARTITION_COUNT)?;
        // Read groups of four bytes until one contains a NUL (bootgen's reader loop).
        let mut name = Vec::new();
        let mut pos = NAME;
        loop {
            if name.len() > MAX_IMAGE_NAME_LEN {
                return Err(ImageHeaderError::NameTooLong { offset });
            }
            let group = w(pos)?.to_be_bytes();
            pos += 4;
            name.extend_from_slice(&group);
            if group.contains(&0) {
                break;
            }
        }
        if let Some(nul) = name.iter().position(|&c| c == 0) {
            name.truncate(nul);
        }
        let header = ImageHeader {
            next_image_header_word_offset: next,
            partition_header_word_offset: ph,
            reserved,
            partition_count: count,
            name: String::from_utf8_lossy(&name).into_owned(),
        };
        // Name groups plus the terminator word.
        let len = pos + 4;
        Ok((header, len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_packing_follows_ug1283_example() {
        let ih = ImageHeader {
            next_image_header_word_offset: 0,
            partition_header_word_offset: 0x440,
            reserved: 0,
            partition_count: 1,
            name: "FSBL10.ELF".into(),
        };
        let b = ih.encode();
        assert_eq!(&b[0x10..0x14], b"LBSF");
        assert_eq!(&b[0x14..0x18], b"E.01");
        assert_eq!(&b[0x18..0x1C], b"\0\0FL");
        assert_eq!(&b[0x1C..0x20], &[0, 0, 0, 0]);
        assert_eq!(b.len(), 32);
        let (back, len) = ImageHeader::decode(&b, 0).unwrap();
        assert_eq!(back, ih);
        assert_eq!(len, 32);
    }

    #[test]
    fn name_lengths_round_trip() {
        for n in 1..=40 {
            let name: String = (0..n).map(|i| (b'a' + (i % 26) as u8) as char).collect();
            let ih = ImageHeader {
                next_image_header_word_offset: 7,
                partition_header_word_offset: 9,
                reserved: 0,
                partition_count: 3,
                name,
            };
            let b = ih.encode();
            let (back, len) = ImageHeader::decode(&b, 0).unwrap();
            assert_eq!(back, ih);
            assert_eq!(len, ih.encoded_len());
        }
    }

    #[test]
    fn image_header_field_offsets() {
        let ih = ImageHeader {
            next_image_header_word_offset: 0x250,
            partition_header_word_offset: 0x440,
            reserved: 0,
            partition_count: 5,
            name: "x".into(),
        };
        let b = ih.encode();
        assert_eq!(read_u32(&b, 0x00), Some(0x250));
        assert_eq!(read_u32(&b, 0x04), Some(0x440));
        assert_eq!(read_u32(&b, 0x08), Some(0));
        assert_eq!(read_u32(&b, 0x0C), Some(5));
    }

    #[test]
    fn table_field_offsets_and_checksum() {
        let mut t = ImageHeaderTable {
            version: IMAGE_HEADER_TABLE_VERSION,
            partition_count: 3,
            first_partition_header_word_offset: 0x440,
            first_image_header_word_offset: 0x240,
            header_auth_cert_word_offset: 0,
            boot_device: 0,
            reserved: [0; 9],
            checksum: 0,
        };
        t.update_checksum();
        // Value from a bootgen-generated image with exactly these fields.
        assert_eq!(t.checksum, 0xFEFD_F97C);
        let b = t.encode();
        assert_eq!(read_u32(&b, 0x00), Some(0x0102_0000));
        assert_eq!(read_u32(&b, 0x04), Some(3));
        assert_eq!(read_u32(&b, 0x08), Some(0x440));
        assert_eq!(read_u32(&b, 0x0C), Some(0x240));
        assert_eq!(read_u32(&b, 0x10), Some(0));
        assert_eq!(read_u32(&b, 0x14), Some(0));
        assert_eq!(read_u32(&b, 0x3C), Some(0xFEFD_F97C));
        assert_eq!(ImageHeaderTable::decode(&b, 0), Ok(t));
        let mut bad = b;
        bad[4] = 4;
        assert!(matches!(ImageHeaderTable::decode(&bad, 0), Err(ImageHeaderError::BadChecksum { offset: 0x3C, .. })));
        assert!(matches!(ImageHeaderTable::decode(&b[..63], 0), Err(ImageHeaderError::Truncated { .. })));
    }

    #[test]
    fn unterminated_names_are_rejected() {
        let mut b = vec![0u8; 16];
        b.extend(std::iter::repeat_n(b'a', 400));
        assert!(matches!(ImageHeader::decode(&b, 0), Err(ImageHeaderError::NameTooLong { .. })));
        assert!(matches!(ImageHeader::decode(&b[..100], 0), Err(ImageHeaderError::Truncated { .. })));
    }

    #[test]
    fn names_are_validated() {
        assert!(validate_name("fsbl.elf").is_ok());
        assert!(validate_name("").is_err());
        assert!(validate_name("a\0b").is_err());
        assert!(validate_name(&"x".repeat(256)).is_err());
    }

    #[test]
    fn legacy_count_field() {
        let ih = ImageHeader {
            next_image_header_word_offset: 0,
            partition_header_word_offset: 0,
            reserved: 2,
            partition_count: 0,
            name: "a".into(),
        };
        assert_eq!(ih.effective_partition_count(), 2);
    }
}
