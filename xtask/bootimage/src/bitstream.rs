//! PL bitstreams (destination device PL).
//!
//! bootgen (`BitFile::ParseBit`, `ReadBITHeader_x4k`, `ZynqMpBitFile`) strips the `.bit`
//! file header and, for unencrypted ZynqMP images, writes the configuration data as
//! little-endian 32-bit words (`OutputStream_LE`), i.e. every big-endian word of the
//! `.bit` payload byte swapped. It sets the load address to 0xFFFF_FFFF and the
//! execution address to 0; the FSBL accepts that "dummy" PL address
//! (`XFsbl_CheckValidMemoryAddress`).
//!
//! This module accepts a `.bit` file or a raw `.bin` in either byte order: the byte
//! order is detected from the position of the sync word 0xAA995566.

use thiserror::Error;

/// Load address bootgen writes for PL partitions without an explicit load address.
pub const PL_LOAD_ADDRESS: u64 = 0xFFFF_FFFF;
/// Configuration sync word.
pub const SYNC_WORD: u32 = 0xAA99_5566;

const BIT_MAGIC: [u8; 11] = [0x00, 0x09, 0x0F, 0xF0, 0x0F, 0xF0, 0x0F, 0xF0, 0x0F, 0xF0, 0x00];

/// Errors reading a bitstream.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BitstreamError {
    /// The `.bit` header is malformed.
    #[error("malformed .bit header: {0}")]
    BadHeader(String),
    /// The configuration data is not a whole number of words.
    #[error("bitstream length {0} bytes is not a multiple of 4")]
    NotWordAligned(usize),
    /// No sync word found.
    #[error("no sync word 0xAA995566 found in the bitstream data")]
    NoSyncWord,
}

/// The text fields of a `.bit` header.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BitHeader {
    /// Field 'a': design name.
    pub design_name: String,
    /// Field 'b': part name, e.g. "xczu9eg-ffvb1156-2-e".
    pub part_name: String,
    /// Field 'c': date.
    pub date: String,
    /// Field 'd': time.
    pub time: String,
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], BitstreamError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or_else(|| BitstreamError::BadHeader(format!("truncated at byte {}", self.pos)))?;
        let s = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn u16(&mut self) -> Result<usize, BitstreamError> {
        let b = self.take(2)?;
        Ok(usize::from(u16::from_be_bytes([b[0], b[1]])))
    }

    fn field(&mut self, key: u8) -> Result<String, BitstreamError> {
        let k = self.take(1)?[0];
        if k != key {
            return Err(BitstreamError::BadHeader(format!(
                "expected field '{}' at byte {}, found {k:#04x}",
                key as char,
                self.pos - 1
            )));
        }
        let len = self.u16()?;
        let s = self.take(len)?;
        let s = s.strip_suffix(&[0]).unwrap_or(s);
        Ok(String::from_utf8_lossy(s).into_owned())
    }
}

/// True when `bytes` start like a Xilinx `.bit` file.
pub fn is_bit_file(bytes: &[u8]) -> bool {
    bytes.starts_with(&BIT_MAGIC)
}

/// Splits a `.bit` file into its header and configuration data.
pub fn parse_bit(bytes: &[u8]) -> Result<(BitHeader, &[u8]), BitstreamError> {
    if !is_bit_file(bytes) {
        return Err(BitstreamError::BadHeader("missing .bit magic".into()));
    }
    let mut r = Reader { bytes, pos: 0 };
    let magic_len = r.u16()?;
    r.take(magic_len)?;
    let _unknown = r.u16()?;
    let header = BitHeader {
        design_name: r.field(b'a')?,
        part_name: r.field(b'b')?,
        date: r.field(b'c')?,
        time: r.field(b'd')?,
    };
    if r.take(1)?[0] != b'e' {
        return Err(BitstreamError::BadHeader("expected field 'e'".into()));
    }
    let len = r.take(4)?;
    let len = u32::from_be_bytes([len[0], len[1], len[2], len[3]]) as usize;
    let data = r.take(len)?;
    Ok((header, data))
}

/// Returns the partition bytes for a bitstream given as `.bit` or raw `.bin`: the
/// configuration data as little-endian words, as bootgen writes for ZynqMP.
pub fn partition_data(bytes: &[u8]) -> Result<Vec<u8>, BitstreamError> {
    let data = if is_bit_file(bytes) { parse_bit(bytes)?.1 } else { bytes };
    if data.len() % 4 != 0 {
        return Err(BitstreamError::NotWordAligned(data.len()));
    }
    let big = SYNC_WORD.to_be_bytes();
    let little = SYNC_WORD.to_le_bytes();
    let order = data.chunks_exact(4).find_map(|w| {
        if w == big {
            Some(true)
        } else if w == little {
            Some(false)
        } else {
            None
        }
    });
    match order {
        Some(true) => Ok(data.chunks_exact(4).flat_map(|w| [w[3], w[2], w[1], w[0]]).collect()),
        Some(false) => Ok(data.to_vec()),
        None => Err(BitstreamError::NoSyncWord),
    }
}

/// Builds a minimal `.bit` file around big-endian configuration `data` (used by tests
/// and examples).
pub fn make_bit_file(header: &BitHeader, data: &[u8]) -> Vec<u8> {
    let mut out = BIT_MAGIC.to_vec();
    out.extend_from_slice(&1u16.to_be_bytes());
    for (key, text) in
        [(b'a', &header.design_name), (b'b', &header.part_name), (b'c', &header.date), (b'd', &header.time)]
    {
        out.push(key);
        let len = u16::try_from(text.len() + 1).unwrap_or(u16::MAX);
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(&text.as_bytes()[..usize::from(len) - 1]);
        out.push(0);
    }
    out.push(b'e');
    out.extend_from_slice(&u32::try_from(data.len()).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(data);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn be_config() -> Vec<u8> {
        [0xFFFF_FFFFu32, 0x0000_00BB, 0x1122_0044, 0xFFFF_FFFF, SYNC_WORD, 0x2000_0000]
            .iter()
            .flat_map(|w| w.to_be_bytes())
            .collect()
    }

    #[test]
    fn bit_file_is_stripped_and_swapped() {
        let header = BitHeader {
            design_name: "top;UserID=0XFFFFFFFF".into(),
            part_name: "xczu9eg-ffvb1156-2-e".into(),
            date: "2024/01/01".into(),
            time: "12:00:00".into(),
        };
        let bit = make_bit_file(&header, &be_config());
        let (h, data) = parse_bit(&bit).unwrap();
        assert_eq!(h, header);
        assert_eq!(data, &be_config()[..]);
        let out = partition_data(&bit).unwrap();
        assert_eq!(&out[16..20], &SYNC_WORD.to_le_bytes());
        assert_eq!(out.len(), be_config().len());
    }

    #[test]
    fn raw_bin_in_either_order() {
        let be = be_config();
        let le: Vec<u8> = be.chunks(4).flat_map(|w| [w[3], w[2], w[1], w[0]]).collect();
        assert_eq!(partition_data(&be).unwrap(), le);
        assert_eq!(partition_data(&le).unwrap(), le);
    }

    #[test]
    fn errors() {
        assert_eq!(partition_data(&[0; 5]), Err(BitstreamError::NotWordAligned(5)));
        assert_eq!(partition_data(&[0; 8]), Err(BitstreamError::NoSyncWord));
        let bit = make_bit_file(&BitHeader::default(), &be_config());
        assert!(parse_bit(&bit[..bit.len() - 1]).is_err());
        assert!(parse_bit(&bit[..20]).is_err());
    }
}
