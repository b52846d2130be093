//! The boot header at offset 0 of the image, read by the CSU boot ROM.
//!
//! Layout: UG1283 "Zynq UltraScale+ MPSoC Boot Header" (Boot Image Format chapter) and
//! UG1085 chapter 11 "Boot and Configuration", table "Boot Header Format"; field names
//! follow bootgen's `ZynqMpBootHeaderStructure`. All words are little endian.
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0x00 | 8 words | Arm vector table (`b .` filler) |
//! | 0x20 | word | width detection word 0xAA995566 |
//! | 0x24 | word | header signature "XNLX" (0x584C4E58) |
//! | 0x28 | word | encryption key source |
//! | 0x2C | word | FSBL execution address |
//! | 0x30 | word | source offset (PMU FW if present, else FSBL) |
//! | 0x34 | word | PMU FW image length (bytes) |
//! | 0x38 | word | total PMU FW length (bytes) |
//! | 0x3C | word | FSBL image length (bytes) |
//! | 0x40 | word | total FSBL length (bytes) |
//! | 0x44 | word | image attributes |
//! | 0x48 | word | header checksum over 0x20..=0x44 |
//! | 0x4C | 8 words | obfuscated/black key |
//! | 0x6C | word | shutter value |
//! | 0x70 | 10 words | user defined |
//! | 0x98 | word | image header table byte offset |
//! | 0x9C | word | partition header table byte offset |
//! | 0xA0 | 3 words | secure header IV |
//! | 0xAC | 3 words | obfuscated/black key IV |
//! | 0xB8 | 256 × (address, value) | register initialization table |
//! | 0x8B8 | 1544 bytes | PUF helper data, only if attribute bits 7:6 = 0b11 |

use thiserror::Error;

use crate::attributes::{BootHeaderAttributes, KeySource};
use crate::checksum::{read_u32, word_checksum};

/// Byte offsets of the boot header fields (UG1283 "Zynq UltraScale+ MPSoC Boot Header").
pub mod offsets {
    /// Arm vector table, 8 words.
    pub const BOOT_VECTORS: usize = 0x00;
    /// Width detection word.
    pub const WIDTH_DETECTION: usize = 0x20;
    /// Header signature ("XNLX").
    pub const IDENTIFICATION: usize = 0x24;
    /// Encryption key source.
    pub const KEY_SOURCE: usize = 0x28;
    /// FSBL execution address.
    pub const FSBL_EXEC_ADDRESS: usize = 0x2C;
    /// Source offset of PMU FW / FSBL.
    pub const SOURCE_OFFSET: usize = 0x30;
    /// PMU FW image length.
    pub const PMU_FW_LEN: usize = 0x34;
    /// Total PMU FW length.
    pub const TOTAL_PMU_FW_LEN: usize = 0x38;
    /// FSBL image length.
    pub const FSBL_LEN: usize = 0x3C;
    /// Total FSBL length.
    pub const TOTAL_FSBL_LEN: usize = 0x40;
    /// Image attributes.
    pub const ATTRIBUTES: usize = 0x44;
    /// Header checksum.
    pub const CHECKSUM: usize = 0x48;
    /// Obfuscated/black key, 8 words.
    pub const GREY_BLACK_KEY: usize = 0x4C;
    /// Shutter value (PUF).
    pub const SHUTTER: usize = 0x6C;
    /// User defined fields, 10 words.
    pub const USER_DEFINED: usize = 0x70;
    /// Image header table offset (bytes).
    pub const IMAGE_HEADER_TABLE_OFFSET: usize = 0x98;
    /// Partition header table offset (bytes).
    pub const PARTITION_HEADER_TABLE_OFFSET: usize = 0x9C;
    /// Secure header IV, 3 words.
    pub const SECURE_HEADER_IV: usize = 0xA0;
    /// Obfuscated/black key IV, 3 words.
    pub const GREY_BLACK_IV: usize = 0xAC;
    /// Register initialization table.
    pub const REGISTER_INIT: usize = 0xB8;
    /// PUF helper data (only when present).
    pub const PUF_HELPER_DATA: usize = 0x8B8;
}

/// Width detection word at 0x20.
pub const WIDTH_DETECTION_WORD: u32 = 0xAA99_5566;
/// Header signature at 0x24: bytes 'X','N','L','X'.
pub const IDENTIFICATION_WORD: u32 = 0x584C_4E58;
/// Number of (address, value) pairs in the register initialization table.
pub const REGISTER_INIT_ENTRIES: usize = 256;
/// Address marking an unused register initialization entry.
pub const REGISTER_INIT_UNUSED: u32 = 0xFFFF_FFFF;
/// Length of the boot header without PUF helper data (0xB8 + 256 × 8).
pub const BOOT_HEADER_LEN: usize = 0x8B8;
/// Length of the PUF helper data block.
pub const PUF_HELPER_DATA_LEN: usize = 1544;
/// Length of the boot header with PUF helper data (the FSBL's `XIH_BH_MAX_SIZE`).
pub const BOOT_HEADER_WITH_PUF_LEN: usize = BOOT_HEADER_LEN + PUF_HELPER_DATA_LEN;
/// bootgen's default PUF shutter value (`SHUTTER_VAL`).
pub const DEFAULT_SHUTTER: u32 = 0x0100_0020;
/// Byte range covered by the header checksum: words 0x20..=0x44 (10 words).
pub const CHECKSUM_RANGE: std::ops::Range<usize> = 0x20..0x48;

/// Errors decoding a boot header.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BootHeaderError {
    /// Fewer bytes than the header needs.
    #[error("truncated boot header: need {needed:#x} bytes, file has {available:#x}")]
    Truncated {
        /// Bytes needed.
        needed: usize,
        /// Bytes available.
        available: usize,
    },
    /// Word 0x20 is not 0xAA995566.
    #[error("bad width detection word at 0x20: found {found:#010x}, expected 0xaa995566")]
    BadWidthDetection {
        /// Value found.
        found: u32,
    },
    /// Word 0x24 is not "XNLX".
    #[error("bad header signature at 0x24: found {found:#010x}, expected 0x584c4e58 (\"XNLX\")")]
    BadIdentification {
        /// Value found.
        found: u32,
    },
    /// Word 0x48 does not match the checksum of 0x20..=0x44.
    #[error(
        "bad boot header checksum at 0x48: stored {stored:#010x}, computed {computed:#010x} \
         (ones' complement of the sum of words 0x20..=0x44)"
    )]
    BadChecksum {
        /// Stored value.
        stored: u32,
        /// Computed value.
        computed: u32,
    },
}

/// One register initialization pair (UG1283 "Zynq UltraScale+ MPSoC Register
/// Initialization Table"). The boot ROM writes `value` to `address` before loading the
/// FSBL; unused entries have address 0xFFFF_FFFF.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RegisterInit {
    /// Register address.
    pub address: u32,
    /// Value to write.
    pub value: u32,
}

impl RegisterInit {
    /// The filler for unused entries (address 0xFFFF_FFFF, value 0), as bootgen writes.
    pub const UNUSED: RegisterInit = RegisterInit { address: REGISTER_INIT_UNUSED, value: 0 };
}

/// A decoded boot header. Every field is kept so that encode(decode(x)) == x.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BootHeader {
    /// 0x00..0x1F: Arm vector table.
    pub boot_vectors: [u32; 8],
    /// 0x20: width detection word.
    pub width_detection: u32,
    /// 0x24: header signature.
    pub identification: u32,
    /// 0x28: encryption key source.
    pub key_source: KeySource,
    /// 0x2C: FSBL execution address.
    pub fsbl_exec_address: u32,
    /// 0x30: byte offset of the PMU FW (when present) or the FSBL.
    pub source_offset: u32,
    /// 0x34: PMU FW length in bytes.
    pub pmu_fw_len: u32,
    /// 0x38: total PMU FW length in bytes (including encryption overhead).
    pub total_pmu_fw_len: u32,
    /// 0x3C: FSBL length in bytes.
    pub fsbl_len: u32,
    /// 0x40: total FSBL length in bytes (including checksum, AC and encryption overhead).
    pub total_fsbl_len: u32,
    /// 0x44: image attributes.
    pub attributes: BootHeaderAttributes,
    /// 0x48: header checksum as stored.
    pub checksum: u32,
    /// 0x4C..0x6B: obfuscated or black key.
    pub grey_black_key: [u32; 8],
    /// 0x6C: shutter value.
    pub shutter: u32,
    /// 0x70..0x97: user defined fields.
    pub user_defined: [u32; 10],
    /// 0x98: image header table byte offset (0 = none).
    pub image_header_table_offset: u32,
    /// 0x9C: partition header table byte offset (0 = none).
    pub partition_header_table_offset: u32,
    /// 0xA0..0xAB: secure header IV.
    pub secure_header_iv: [u32; 3],
    /// 0xAC..0xB7: obfuscated/black key IV.
    pub grey_black_iv: [u32; 3],
    /// 0xB8..0x8B7: all 256 register initialization entries, used or not.
    pub register_init: Vec<RegisterInit>,
    /// 0x8B8..0xEBF: PUF helper data, present when attribute bits 7:6 are 0b11.
    pub puf_helper_data: Option<Vec<u8>>,
}

impl Default for BootHeader {
    /// An empty header as bootgen starts it: magic words set, register table unused,
    /// default shutter, everything else zero.
    fn default() -> Self {
        BootHeader {
            boot_vectors: [0xEAFF_FFFE; 8],
            width_detection: WIDTH_DETECTION_WORD,
            identification: IDENTIFICATION_WORD,
            key_source: KeySource::None,
            fsbl_exec_address: 0,
            source_offset: 0,
            pmu_fw_len: 0,
            total_pmu_fw_len: 0,
            fsbl_len: 0,
            total_fsbl_len: 0,
            attributes: BootHeaderAttributes(0),
            checksum: 0,
            grey_black_key: [0; 8],
            shutter: DEFAULT_SHUTTER,
            user_defined: [0; 10],
            image_header_table_offset: 0,
            partition_header_table_offset: 0,
            secure_header_iv: [0; 3],
            grey_black_iv: [0; 3],
            register_init: vec![RegisterInit::UNUSED; REGISTER_INIT_ENTRIES],
            puf_helper_data: None,
        }
    }
}

fn put(buf: &mut [u8], offset: usize, value: u32) {
    buf[offset..offset + 4].copy_from_slice(&value.to_le_bytes());
}

fn words<const N: usize>(bytes: &[u8], offset: usize) -> [u32; N] {
    let mut out = [0u32; N];
    for (i, w) in out.iter_mut().enumerate() {
        *w = read_u32(bytes, offset + 4 * i).unwrap_or(0);
    }
    out
}

impl BootHeader {
    /// Encoded length: 0x8B8, or 0xEC0 with PUF helper data.
    pub fn encoded_len(&self) -> usize {
        if self.puf_helper_data.is_some() { BOOT_HEADER_WITH_PUF_LEN } else { BOOT_HEADER_LEN }
    }

    /// Register initialization entries in use (those before the first unused address).
    pub fn used_register_inits(&self) -> impl Iterator<Item = &RegisterInit> {
        self.register_init.iter().take_while(|r| r.address != REGISTER_INIT_UNUSED)
    }

    /// The checksum of the fields 0x20..=0x44 as they are now.
    pub fn compute_checksum(&self) -> u32 {
        let bytes = self.encode();
        word_checksum(&bytes[CHECKSUM_RANGE])
    }

    /// Sets [`BootHeader::checksum`] to [`BootHeader::compute_checksum`].
    pub fn update_checksum(&mut self) {
        self.checksum = self.compute_checksum();
    }

    /// Serializes the header (the stored checksum is written as is).
    ///
    /// Register entries beyond 256 are ignored; missing ones are written as unused.
    pub fn encode(&self) -> Vec<u8> {
        use offsets::*;
        let mut buf = vec![0u8; self.encoded_len()];
        for (i, v) in self.boot_vectors.iter().enumerate() {
            put(&mut buf, BOOT_VECTORS + 4 * i, *v);
        }
        put(&mut buf, WIDTH_DETECTION, self.width_detection);
        put(&mut buf, IDENTIFICATION, self.identification);
        put(&mut buf, KEY_SOURCE, self.key_source.word());
        put(&mut buf, FSBL_EXEC_ADDRESS, self.fsbl_exec_address);
        put(&mut buf, SOURCE_OFFSET, self.source_offset);
        put(&mut buf, PMU_FW_LEN, self.pmu_fw_len);
        put(&mut buf, TOTAL_PMU_FW_LEN, self.total_pmu_fw_len);
        put(&mut buf, FSBL_LEN, self.fsbl_len);
        put(&mut buf, TOTAL_FSBL_LEN, self.total_fsbl_len);
        put(&mut buf, ATTRIBUTES, self.attributes.0);
        put(&mut buf, CHECKSUM, self.checksum);
        for (i, v) in self.grey_black_key.iter().enumerate() {
            put(&mut buf, GREY_BLACK_KEY + 4 * i, *v);
        }
        put(&mut buf, SHUTTER, self.shutter);
        for (i, v) in self.user_defined.iter().enumerate() {
            put(&mut buf, USER_DEFINED + 4 * i, *v);
        }
        put(&mut buf, IMAGE_HEADER_TABLE_OFFSET, self.image_header_table_offset);
        put(&mut buf, PARTITION_HEADER_TABLE_OFFSET, self.partition_header_table_offset);
        for (i, v) in self.secure_header_iv.iter().enumerate() {
            put(&mut buf, SECURE_HEADER_IV + 4 * i, *v);
        }
        for (i, v) in self.grey_black_iv.iter().enumerate() {
            put(&mut buf, GREY_BLACK_IV + 4 * i, *v);
        }
        for i in 0..REGISTER_INIT_ENTRIES {
            let r = self.register_init.get(i).copied().unwrap_or(RegisterInit::UNUSED);
            put(&mut buf, REGISTER_INIT + 8 * i, r.address);
            put(&mut buf, REGISTER_INIT + 8 * i + 4, r.value);
        }
        if let Some(puf) = &self.puf_helper_data {
            let n = puf.len().min(PUF_HELPER_DATA_LEN);
            buf[PUF_HELPER_DATA..PUF_HELPER_DATA + n].copy_from_slice(&puf[..n]);
        }
        buf
    }

    /// Decodes and validates the boot header at the start of `bytes`: length, both magic
    /// words and the header checksum. Never panics.
    pub fn decode(bytes: &[u8]) -> Result<BootHeader, BootHeaderError> {
        use offsets::*;
        if bytes.len() < BOOT_HEADER_LEN {
            return Err(BootHeaderError::Truncated { needed: BOOT_HEADER_LEN, available: bytes.len() });
        }
        let w = |o: usize| read_u32(bytes, o).unwrap_or(0);
        let width_detection = w(WIDTH_DETECTION);
        if width_detection != WIDTH_DETECTION_WORD {
            return Err(BootHeaderError::BadWidthDetection { found: width_detection });
        }
        let identification = w(IDENTIFICATION);
        if identification != IDENTIFICATION_WORD {
            return Err(BootHeaderError::BadIdentification { found: identification });
        }
        let stored = w(CHECKSUM);
        let computed = word_checksum(&bytes[CHECKSUM_RANGE]);
        if stored != computed {
            return Err(BootHeaderError::BadChecksum { stored, computed });
        }
        let attributes = BootHeaderAttributes(w(ATTRIBUTES));
        let puf_helper_data = if attributes.puf_helper_data_in_boot_header() {
            let data = bytes
                .get(PUF_HELPER_DATA..PUF_HELPER_DATA + PUF_HELPER_DATA_LEN)
                .ok_or(BootHeaderError::Truncated { needed: BOOT_HEADER_WITH_PUF_LEN, available: bytes.len() })?;
            Some(data.to_vec())
        } else {
            None
        };
        let register_init = (0..REGISTER_INIT_ENTRIES)
            .map(|i| RegisterInit { address: w(REGISTER_INIT + 8 * i), value: w(REGISTER_INIT + 8 * i + 4) })
            .collect();
        Ok(BootHeader {
            boot_vectors: words(bytes, BOOT_VECTORS),
            width_detection,
            identification,
            key_source: KeySource::from_word(w(KEY_SOURCE)),
            fsbl_exec_address: w(FSBL_EXEC_ADDRESS),
            source_offset: w(SOURCE_OFFSET),
            pmu_fw_len: w(PMU_FW_LEN),
            total_pmu_fw_len: w(TOTAL_PMU_FW_LEN),
            fsbl_len: w(FSBL_LEN),
            total_fsbl_len: w(TOTAL_FSBL_LEN),
            attributes,
            checksum: stored,
            grey_black_key: words(bytes, GREY_BLACK_KEY),
            shutter: w(SHUTTER),
            user_defined: words(bytes, USER_DEFINED),
            image_header_table_offset: w(IMAGE_HEADER_TABLE_OFFSET),
            partition_header_table_offset: w(PARTITION_HEADER_TABLE_OFFSET),
            secure_header_iv: words(bytes, SECURE_HEADER_IV),
            grey_black_iv: words(bytes, GREY_BLACK_IV),
            register_init,
            puf_helper_data,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attributes::FsblCpu;

    fn sample() -> BootHeader {
        let mut bh = BootHeader {
            boot_vectors: [0x1400_0000; 8],
            fsbl_exec_address: 0xFFFC_0000,
            source_offset: 0x2800,
            pmu_fw_len: 0x1_FAE0,
            total_pmu_fw_len: 0x1_FAE0,
            fsbl_len: 0x1_93C0,
            total_fsbl_len: 0x1_93C0,
            attributes: BootHeaderAttributes::for_cpu(FsblCpu::A53Single64),
            image_header_table_offset: 0x8C0,
            partition_header_table_offset: 0x1100,
            ..Default::default()
        };
        bh.update_checksum();
        bh
    }

    #[test]
    fn checksum_matches_a_bootgen_header() {
        // These field values (and the resulting checksum 0xFD170F01) were read from a
        // bootgen-generated ZynqMP BOOT.BIN (FSBL + PMU FW, A53 64-bit).
        assert_eq!(sample().checksum, 0xFD17_0F01);
    }

    #[test]
    fn field_offsets_follow_ug1283() {
        let mut bh = sample();
        bh.key_source = KeySource::BbramRed;
        bh.shutter = 0x1111_2222;
        bh.user_defined[0] = 0x3333_4444;
        bh.secure_header_iv[0] = 0x5555_6666;
        bh.grey_black_iv[2] = 0x7777_8888;
        bh.grey_black_key[7] = 0x9999_AAAA;
        bh.register_init[0] = RegisterInit { address: 0xFF18_0000, value: 0xABCD };
        bh.update_checksum();
        let b = bh.encode();
        let w = |o| read_u32(&b, o).unwrap();
        assert_eq!(b.len(), 0x8B8);
        assert_eq!(w(0x00), 0x1400_0000);
        assert_eq!(w(0x1C), 0x1400_0000);
        assert_eq!(w(0x20), 0xAA99_5566);
        assert_eq!(&b[0x24..0x28], b"XNLX");
        assert_eq!(w(0x28), 0x3A5C_3C5A);
        assert_eq!(w(0x2C), 0xFFFC_0000);
        assert_eq!(w(0x30), 0x2800);
        assert_eq!(w(0x34), 0x1_FAE0);
        assert_eq!(w(0x38), 0x1_FAE0);
        assert_eq!(w(0x3C), 0x1_93C0);
        assert_eq!(w(0x40), 0x1_93C0);
        assert_eq!(w(0x44), 0x800);
        assert_eq!(w(0x48), bh.checksum);
        assert_eq!(w(0x68), 0x9999_AAAA);
        assert_eq!(w(0x6C), 0x1111_2222);
        assert_eq!(w(0x70), 0x3333_4444);
        assert_eq!(w(0x98), 0x8C0);
        assert_eq!(w(0x9C), 0x1100);
        assert_eq!(w(0xA0), 0x5555_6666);
        assert_eq!(w(0xB4), 0x7777_8888);
        assert_eq!(w(0xB8), 0xFF18_0000);
        assert_eq!(w(0xBC), 0xABCD);
        assert_eq!(w(0xC0), 0xFFFF_FFFF);
        assert_eq!(w(0xC4), 0);
        assert_eq!(w(0x8B0), 0xFFFF_FFFF);
        assert_eq!(w(0x8B4), 0);
        assert_eq!(BootHeader::decode(&b), Ok(bh));
    }

    #[test]
    fn decode_rejects_bad_input() {
        let good = sample().encode();
        assert!(matches!(BootHeader::decode(&good[..0x8B7]), Err(BootHeaderError::Truncated { needed: 0x8B8, .. })));
        let mut bad = good.clone();
        bad[0x20] ^= 1;
        assert!(matches!(BootHeader::decode(&bad), Err(BootHeaderError::BadWidthDetection { .. })));
        let mut bad = good.clone();
        bad[0x24] = b'Y';
        assert!(matches!(BootHeader::decode(&bad), Err(BootHeaderError::BadIdentification { .. })));
        let mut bad = good.clone();
        bad[0x2C] ^= 0x10;
        assert!(matches!(BootHeader::decode(&bad), Err(BootHeaderError::BadChecksum { .. })));
        // Fields outside 0x20..=0x44 are not covered by the checksum.
        let mut ok = good;
        ok[0x70] ^= 0xFF;
        assert!(BootHeader::decode(&ok).is_ok());
    }

    #[test]
    fn puf_helper_data_extends_the_header() {
        let mut bh = sample();
        bh.attributes = BootHeaderAttributes(bh.attributes.0 | (3 << 6));
        bh.puf_helper_data = Some(vec![0x5A; PUF_HELPER_DATA_LEN]);
        bh.update_checksum();
        let b = bh.encode();
        assert_eq!(b.len(), 0xEC0);
        assert_eq!(BootHeader::decode(&b), Ok(bh));
        assert!(matches!(BootHeader::decode(&b[..0xEBF]), Err(BootHeaderError::Truncated { needed: 0xEC0, .. })));
    }
}
