//! The boot image reader, [`parse`].
//!
//! It walks the structures the way the boot ROM and the FSBL do (boot header, then the
//! image header table, the image header list and the partition header list through their
//! next-offset links) and checks everything it can:
//!
//! * boot header magic words and checksum (UG1283 "Zynq UltraScale+ MPSoC Boot Header");
//! * image header table version and checksum, partition count 1..=32, boot device
//!   (FSBL `XFsbl_ValidateImageHeaderTable`);
//! * every partition header checksum and attribute word, and the length rules of FSBL
//!   `XFsbl_ValidatePartitionHeader` (plain partitions: encrypted = unencrypted = total;
//!   authenticated: total larger; encrypted: encrypted larger);
//! * zero-length partitions, data beyond the end of the file, overlapping structures,
//!   next-offset loops, and cross links between image and partition headers;
//! * SHA3 partition checksums when present.
//!
//! Any byte string is accepted as input: errors are returned, never panics.

use std::collections::HashSet;

use thiserror::Error;

use crate::attributes::{AttributeError, BootDevice, ChecksumType};
use crate::boot_header::{BootHeader, BootHeaderError};
use crate::checksum::{SHA3_DIGEST_LEN, hex, keccak_384, sha3_384};
use crate::image_header::{
    IMAGE_HEADER_TABLE_LEN, IMAGE_HEADER_TABLE_VERSION, ImageHeader, ImageHeaderError, ImageHeaderTable,
};
use crate::partition_header::{PARTITION_HEADER_LEN, PartitionHeader, PartitionHeaderError};
use crate::writer::MAX_PARTITIONS;

/// Errors found while parsing. Every message names the field and the values involved.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ParseError {
    /// Boot header problem (truncated, magic words, checksum).
    #[error(transparent)]
    BootHeader(#[from] BootHeaderError),
    /// The file is a Zynq-7000 boot image (different header layout).
    #[error(
        "this is a Zynq-7000 boot image (header version 0x01010000 at 0x2C, QSPI config word 1 \
         at 0x44), not a Zynq UltraScale+ MPSoC one"
    )]
    Zynq7000,
    /// Image header table or image header problem.
    #[error(transparent)]
    ImageHeader(#[from] ImageHeaderError),
    /// Partition header problem.
    #[error("partition {index}: {source}")]
    PartitionHeader {
        /// Partition index.
        index: usize,
        /// The problem.
        source: PartitionHeaderError,
    },
    /// An offset that must be word aligned is not.
    #[error("{what} {offset:#x} is not 4-byte aligned")]
    Misaligned {
        /// The field.
        what: &'static str,
        /// Its value.
        offset: u64,
    },
    /// Unknown image header table version.
    #[error("image header table version {found:#010x} is not supported (expected {expected:#010x})")]
    UnsupportedVersion {
        /// Version found.
        found: u32,
        /// Version expected.
        expected: u32,
    },
    /// Partition count outside 1..=32.
    #[error("image header table partition count (0x04) is {count}, valid values are 1..={max}")]
    PartitionCount {
        /// Count found.
        count: u32,
        /// Maximum.
        max: usize,
    },
    /// Reserved boot device value.
    #[error(transparent)]
    Attribute(#[from] AttributeError),
    /// A next-offset link leads back to a structure already visited.
    #[error("{what} list loops: next offset leads back to {offset:#x}")]
    Loop {
        /// "image header" or "partition header".
        what: &'static str,
        /// The repeated byte offset.
        offset: u64,
    },
    /// A list ends before the expected number of entries.
    #[error("{what} list ends after {found} entries (next offset 0 at {offset:#x}), expected {expected}")]
    ListTooShort {
        /// Which list.
        what: &'static str,
        /// Entries found.
        found: usize,
        /// Entries expected.
        expected: usize,
        /// Byte offset of the last entry.
        offset: u64,
    },
    /// Too many image headers.
    #[error("more than {max} image headers in the list")]
    TooManyImages {
        /// Maximum.
        max: usize,
    },
    /// Fields that must agree do not.
    #[error("inconsistent headers: {0}")]
    Inconsistent(String),
    /// A partition with no data.
    #[error(
        "partition {index} (header at {header_offset:#x}) has zero length: unencrypted data \
         word length (0x04) is 0"
    )]
    ZeroLength {
        /// Partition index.
        index: usize,
        /// Byte offset of its header.
        header_offset: u64,
    },
    /// Length words that break the FSBL's rules.
    #[error(
        "partition {index}: inconsistent lengths: encrypted {encrypted:#x} words (0x00), \
         unencrypted {unencrypted:#x} words (0x04), total {total:#x} words (0x08): {rule}"
    )]
    Lengths {
        /// Partition index.
        index: usize,
        /// Encrypted data word length.
        encrypted: u32,
        /// Unencrypted data word length.
        unencrypted: u32,
        /// Total partition word length.
        total: u32,
        /// The rule broken.
        rule: &'static str,
    },
    /// A region extends beyond the end of the file.
    #[error("truncated file: {what} spans {start:#x}..{end:#x} but the file is only {file_len:#x} bytes")]
    OutOfBounds {
        /// What the region is.
        what: String,
        /// Start offset.
        start: u64,
        /// End offset (exclusive).
        end: u64,
        /// File length.
        file_len: u64,
    },
    /// Two regions overlap in the file.
    #[error("{first} ({first_start:#x}..{first_end:#x}) overlaps {second} ({second_start:#x}..{second_end:#x})")]
    Overlap {
        /// First region.
        first: String,
        /// Its start.
        first_start: u64,
        /// Its end.
        first_end: u64,
        /// Second region.
        second: String,
        /// Its start.
        second_start: u64,
        /// Its end.
        second_end: u64,
    },
    /// A partition data checksum does not match.
    #[error("partition {index}: {kind} data checksum mismatch: stored {stored}, computed {computed}")]
    DataChecksum {
        /// Partition index.
        index: usize,
        /// Algorithm.
        kind: &'static str,
        /// Stored digest (hex).
        stored: String,
        /// Computed digest (hex).
        computed: String,
    },
}

/// The located image header table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedImageHeaderTable {
    /// Byte offset.
    pub offset: u64,
    /// The table.
    pub table: ImageHeaderTable,
    /// Decoded boot device.
    pub boot_device: BootDevice,
}

/// One image header and the partitions it owns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedImage {
    /// Byte offset of the image header.
    pub offset: u64,
    /// Bytes the header occupies (without padding).
    pub len: u64,
    /// The header.
    pub header: ImageHeader,
    /// Indices into [`BootImage::partitions`].
    pub partitions: std::ops::Range<usize>,
}

/// Outcome of the partition data checksum check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataChecksum {
    /// The partition has no data checksum.
    None,
    /// Verified: the digest at `offset` matches.
    Verified {
        /// Algorithm.
        kind: ChecksumType,
        /// Byte offset of the stored digest.
        offset: u64,
    },
    /// Present but not verified (legacy MD5/SHA2, or encrypted data).
    NotVerified {
        /// Algorithm.
        kind: ChecksumType,
    },
}

/// One partition header and its data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedPartition {
    /// Byte offset of the header.
    pub header_offset: u64,
    /// The header (checksum verified).
    pub header: PartitionHeader,
    /// Index of the owning image in [`BootImage::images`].
    pub image_index: usize,
    /// True for the partition the boot ROM loads (data at the boot header source offset).
    pub is_boot_loader: bool,
    /// Byte offset of the data.
    pub data_offset: u64,
    /// The `total_word_len * 4` bytes at `data_offset` (for the boot loader: PMU
    /// firmware, FSBL and any appended digest).
    pub data: Vec<u8>,
    /// Data checksum result.
    pub data_checksum: DataChecksum,
}

/// A parsed and verified boot image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BootImage {
    /// Length of the parsed file.
    pub file_len: u64,
    /// The boot header (checksum verified).
    pub boot_header: BootHeader,
    /// The image header table, absent when boot header word 0x98 is 0 (e.g. images
    /// written by U-Boot's mkimage, which hold only PMU firmware and FSBL/SPL).
    pub image_header_table: Option<ParsedImageHeaderTable>,
    /// Image headers in list order.
    pub images: Vec<ParsedImage>,
    /// Partitions in list order.
    pub partitions: Vec<ParsedPartition>,
    /// PMU firmware bytes as described by the boot header (words 0x30, 0x34).
    pub pmu_firmware: Option<Vec<u8>>,
    /// FSBL bytes as described by the boot header (words 0x30, 0x38, 0x3C).
    pub fsbl: Option<Vec<u8>>,
}

impl BootImage {
    /// The image a partition belongs to.
    pub fn image_of(&self, partition: usize) -> Option<&ParsedImage> {
        self.partitions.get(partition).and_then(|p| self.images.get(p.image_index))
    }

    /// The boot loader partition, if any.
    pub fn boot_loader(&self) -> Option<&ParsedPartition> {
        self.partitions.iter().find(|p| p.is_boot_loader)
    }
}

fn region(file_len: u64, what: impl FnOnce() -> String, start: u64, len: u64) -> Result<(u64, u64), ParseError> {
    let end = start.saturating_add(len);
    if end > file_len {
        return Err(ParseError::OutOfBounds { what: what(), start, end, file_len });
    }
    Ok((start, end))
}

fn slice(bytes: &[u8], start: u64, end: u64) -> &[u8] {
    let s = usize::try_from(start).unwrap_or(usize::MAX);
    let e = usize::try_from(end).unwrap_or(usize::MAX);
    bytes.get(s..e).unwrap_or(&[])
}

fn usize_of(v: u64) -> usize {
    usize::try_from(v).unwrap_or(usize::MAX)
}

/// Applies FSBL `XFsbl_ValidatePartitionHeader`'s length rules.
fn check_lengths(index: usize, ph: &PartitionHeader, is_boot_loader: bool) -> Result<(), ParseError> {
    let (e, u, t) = (ph.encrypted_word_len, ph.unencrypted_word_len, ph.total_word_len);
    let auth = ph.attributes.rsa_auth_cert;
    let enc = ph.attributes.encrypted;
    let err = |rule| ParseError::Lengths { index, encrypted: e, unencrypted: u, total: t, rule };
    if is_boot_loader {
        // Loaded by the boot ROM from the boot header fields; bootgen appends the
        // integrity digest to the total length only, so only require it to be largest.
        if u > t || e > t {
            return Err(err("the boot loader's total length must be the largest"));
        }
        return Ok(());
    }
    match (auth, enc) {
        (false, false) if !(u == e && e == t) => Err(err("a plain partition needs encrypted = unencrypted = total")),
        (true, false) if !(u == e && e < t) => {
            Err(err("an authenticated partition needs encrypted = unencrypted < total"))
        }
        (false, true) if !(u < e && e == t) => Err(err("an encrypted partition needs unencrypted < encrypted = total")),
        (true, true) if !(u < e && e < t) => {
            Err(err("an encrypted, authenticated partition needs unencrypted < encrypted < total"))
        }
        _ => Ok(()),
    }
}

/// PMU firmware and FSBL bytes, each optional.
type RomPayloads = (Option<Vec<u8>>, Option<Vec<u8>>);

/// The PMU firmware and FSBL the boot ROM loads, from boot header words 0x30..0x40.
fn boot_rom_payloads(bytes: &[u8], bh: &BootHeader) -> Result<RomPayloads, ParseError> {
    let file_len = bytes.len() as u64;
    if bh.fsbl_len == 0 {
        return Ok((None, None));
    }
    if bh.pmu_fw_len > bh.total_pmu_fw_len {
        return Err(ParseError::Inconsistent(format!(
            "boot header PMU FW length (0x34) {:#x} exceeds total PMU FW length (0x38) {:#x}",
            bh.pmu_fw_len, bh.total_pmu_fw_len
        )));
    }
    if bh.fsbl_len > bh.total_fsbl_len {
        return Err(ParseError::Inconsistent(format!(
            "boot header FSBL length (0x3C) {:#x} exceeds total FSBL length (0x40) {:#x}",
            bh.fsbl_len, bh.total_fsbl_len
        )));
    }
    let src = u64::from(bh.source_offset);
    let (ps, pe) = region(file_len, || "PMU firmware (boot header 0x30/0x34)".into(), src, bh.pmu_fw_len.into())?;
    region(
        file_len,
        || "PMU firmware + FSBL (boot header 0x30/0x38/0x40)".into(),
        src,
        u64::from(bh.total_pmu_fw_len) + u64::from(bh.total_fsbl_len),
    )?;
    let fsbl_start = src + u64::from(bh.total_pmu_fw_len);
    let (fs, fe) = region(file_len, || "FSBL (boot header 0x30/0x38/0x3C)".into(), fsbl_start, bh.fsbl_len.into())?;
    let pmu = (bh.pmu_fw_len != 0).then(|| slice(bytes, ps, pe).to_vec());
    Ok((pmu, Some(slice(bytes, fs, fe).to_vec())))
}

/// Where the structures parsed so far lie: (what, offset, length), checked for overlaps last.
type Regions = Vec<(String, u64, u64)>;

/// The image header table the boot header points at, checked; returns it with its offset, the
/// boot device and the offset of the first partition header.
fn image_header_table(
    bytes: &[u8],
    bh: &BootHeader,
    regions: &mut Regions,
) -> Result<(u64, ImageHeaderTable, BootDevice, u64), ParseError> {
    let iht_offset = u64::from(bh.image_header_table_offset);
    if iht_offset % 4 != 0 {
        return Err(ParseError::Misaligned {
            what: "image header table offset (boot header 0x98)",
            offset: iht_offset,
        });
    }
    let table = ImageHeaderTable::decode(bytes, usize_of(iht_offset))?;
    if table.version != IMAGE_HEADER_TABLE_VERSION {
        return Err(ParseError::UnsupportedVersion { found: table.version, expected: IMAGE_HEADER_TABLE_VERSION });
    }
    let count = table.partition_count;
    if count == 0 || count as usize > MAX_PARTITIONS {
        return Err(ParseError::PartitionCount { count, max: MAX_PARTITIONS });
    }
    let boot_device = BootDevice::from_word(table.boot_device)?;
    let first_ph = u64::from(table.first_partition_header_word_offset) * 4;
    if bh.partition_header_table_offset != 0 && u64::from(bh.partition_header_table_offset) != first_ph {
        return Err(ParseError::Inconsistent(format!(
            "boot header partition header offset (0x9C) {:#x} differs from the image header \
             table's first partition header {:#x} (word offset {:#x} at 0x08)",
            bh.partition_header_table_offset, first_ph, table.first_partition_header_word_offset
        )));
    }
    regions.push(("image header table".into(), iht_offset, IMAGE_HEADER_TABLE_LEN as u64));

    Ok((iht_offset, table, boot_device, first_ph))
}

/// The image header list, from the table's first image header to the last, checked against the
/// table's partition count.
fn image_headers(
    bytes: &[u8],
    table: &ImageHeaderTable,
    regions: &mut Regions,
) -> Result<Vec<(u64, u64, ImageHeader)>, ParseError> {
    let count = table.partition_count;
    let mut images = Vec::new();
    let mut visited = HashSet::new();
    let mut ih_offset = u64::from(table.first_image_header_word_offset) * 4;
    if ih_offset == 0 {
        return Err(ParseError::Inconsistent("image header table first image header offset (0x0C) is 0".into()));
    }
    loop {
        if !visited.insert(ih_offset) {
            return Err(ParseError::Loop { what: "image header", offset: ih_offset });
        }
        if images.len() >= MAX_PARTITIONS {
            return Err(ParseError::TooManyImages { max: MAX_PARTITIONS });
        }
        let (header, len) = ImageHeader::decode(bytes, usize_of(ih_offset))?;
        regions.push((format!("image header {} ({})", images.len(), header.name), ih_offset, len as u64));
        let next = u64::from(header.next_image_header_word_offset) * 4;
        images.push((ih_offset, len as u64, header));
        if next == 0 {
            break;
        }
        ih_offset = next;
    }
    let declared: u64 = images.iter().map(|(_, _, h)| u64::from(h.effective_partition_count())).sum();
    if declared != u64::from(count) {
        return Err(ParseError::Inconsistent(format!(
            "the image headers declare {declared} partitions in total (0x0C of each), the image \
             header table says {count} (0x04)"
        )));
    }

    Ok(images)
}

/// The `count` partition headers, following their list from `first_ph`.
fn partition_headers(
    bytes: &[u8],
    first_ph: u64,
    count: u32,
    regions: &mut Regions,
) -> Result<Vec<(u64, PartitionHeader)>, ParseError> {
    let mut headers: Vec<(u64, PartitionHeader)> = Vec::new();
    let mut visited = HashSet::new();
    let mut ph_offset = first_ph;
    for index in 0..count as usize {
        if !visited.insert(ph_offset) {
            return Err(ParseError::Loop { what: "partition header", offset: ph_offset });
        }
        let ph = PartitionHeader::decode(bytes, usize_of(ph_offset))
            .map_err(|source| ParseError::PartitionHeader { index, source })?;
        let next = u64::from(ph.next_partition_header_word_offset) * 4;
        regions.push((format!("partition header {index}"), ph_offset, PARTITION_HEADER_LEN as u64));
        headers.push((ph_offset, ph));
        if index + 1 < count as usize {
            if next == 0 {
                return Err(ParseError::ListTooShort {
                    what: "partition header",
                    found: index + 1,
                    expected: count as usize,
                    offset: ph_offset,
                });
            }
            ph_offset = next;
        }
    }

    Ok(headers)
}

/// Gives each image its run of partitions and checks the links between them both ways.
fn assign_partitions(
    images: Vec<(u64, u64, ImageHeader)>,
    headers: &[(u64, PartitionHeader)],
) -> Result<Vec<ParsedImage>, ParseError> {
    let mut parsed = Vec::new();
    let mut next_partition = 0usize;
    for (i, (offset, len, header)) in images.into_iter().enumerate() {
        let n = header.effective_partition_count() as usize;
        if n == 0 {
            return Err(ParseError::Inconsistent(format!(
                "image header {i} ({}) at {offset:#x} declares 0 partitions",
                header.name
            )));
        }
        let range = next_partition..next_partition + n;
        next_partition += n;
        let first_offset = headers.get(range.start).map_or(0, |h| h.0);
        if u64::from(header.partition_header_word_offset) * 4 != first_offset {
            return Err(ParseError::Inconsistent(format!(
                "image header {i} ({}) points at partition header {:#x} (word offset {:#x} at \
                 0x04), but its first partition header in the list is at {first_offset:#x}",
                header.name,
                u64::from(header.partition_header_word_offset) * 4,
                header.partition_header_word_offset
            )));
        }
        for k in range.clone() {
            let ph = &headers[k].1;
            if u64::from(ph.image_header_word_offset) * 4 != offset {
                return Err(ParseError::Inconsistent(format!(
                    "partition {k} points at image header {:#x} (word offset {:#x} at 0x30), \
                     but it belongs to image header {i} at {offset:#x}",
                    u64::from(ph.image_header_word_offset) * 4,
                    ph.image_header_word_offset
                )));
            }
        }
        parsed.push(ParsedImage { offset, len, header, partitions: range });
    }

    Ok(parsed)
}

/// The partition's data checksum, verified where this reader can (SHA3: stored after the data
/// of the boot loader, elsewhere at the checksum word offset).
fn data_checksum(
    bytes: &[u8],
    index: usize,
    ph: &PartitionHeader,
    is_boot_loader: bool,
    data: &[u8],
    (start, total): (u64, u64),
    regions: &mut Regions,
) -> Result<DataChecksum, ParseError> {
    let file_len = bytes.len() as u64;
    Ok(match ph.attributes.checksum {
        ChecksumType::None => DataChecksum::None,
        kind @ (ChecksumType::Md5 | ChecksumType::Sha2) => DataChecksum::NotVerified { kind },
        kind @ ChecksumType::Sha3 if ph.attributes.encrypted => DataChecksum::NotVerified { kind },
        ChecksumType::Sha3 if is_boot_loader => {
            // bootgen appends Keccak-384 of the PMU FW + FSBL to the partition.
            let digest = SHA3_DIGEST_LEN as u64;
            if total < digest {
                return Err(ParseError::Inconsistent(format!(
                    "boot loader partition {index} has a SHA3 checksum but is only {total:#x} bytes"
                )));
            }
            let stored = &data[usize_of(total - digest)..];
            let computed = keccak_384(&data[..usize_of(total - digest)]);
            if stored != computed {
                return Err(ParseError::DataChecksum {
                    index,
                    kind: "Keccak-384",
                    stored: hex(stored),
                    computed: hex(&computed),
                });
            }
            DataChecksum::Verified { kind: ChecksumType::Sha3, offset: start + total - digest }
        }
        ChecksumType::Sha3 => {
            let at = u64::from(ph.checksum_word_offset) * 4;
            if at == 0 {
                return Err(ParseError::Inconsistent(format!(
                    "partition {index} has checksum type SHA3 but checksum word offset (0x2C) is 0"
                )));
            }
            let (cs, ce) = region(file_len, || format!("partition {index} checksum"), at, SHA3_DIGEST_LEN as u64)?;
            regions.push((format!("partition {index} checksum"), cs, SHA3_DIGEST_LEN as u64));
            let stored = slice(bytes, cs, ce);
            let computed = sha3_384(data);
            if stored != computed {
                return Err(ParseError::DataChecksum {
                    index,
                    kind: "SHA3-384",
                    stored: hex(stored),
                    computed: hex(&computed),
                });
            }
            DataChecksum::Verified { kind: ChecksumType::Sha3, offset: cs }
        }
    })
}

/// Partition `index`'s data, checked against its header and the boot header.
fn partition_data(
    bytes: &[u8],
    bh: &BootHeader,
    (index, header_offset, ph): (usize, u64, PartitionHeader),
    image_index: usize,
    regions: &mut Regions,
) -> Result<ParsedPartition, ParseError> {
    let file_len = bytes.len() as u64;
    if ph.unencrypted_word_len == 0 || ph.total_word_len == 0 {
        return Err(ParseError::ZeroLength { index, header_offset });
    }
    let data_offset = u64::from(ph.data_word_offset) * 4;
    let is_boot_loader = bh.fsbl_len != 0 && data_offset == u64::from(bh.source_offset);
    check_lengths(index, &ph, is_boot_loader)?;
    let total = u64::from(ph.total_word_len) * 4;
    let (start, end) = region(file_len, || format!("partition {index} data"), data_offset, total)?;
    regions.push((format!("partition {index} data"), start, total));
    let data = slice(bytes, start, end).to_vec();
    if is_boot_loader
        && !ph.attributes.encrypted
        && !ph.attributes.rsa_auth_cert
        && u64::from(bh.total_pmu_fw_len) + u64::from(bh.total_fsbl_len) > total
    {
        return Err(ParseError::Inconsistent(format!(
            "boot header total PMU FW + FSBL length {:#x} exceeds the boot loader partition \
             length {total:#x}",
            u64::from(bh.total_pmu_fw_len) + u64::from(bh.total_fsbl_len)
        )));
    }
    let data_checksum = data_checksum(bytes, index, &ph, is_boot_loader, &data, (start, total), regions)?;
    Ok(ParsedPartition { header_offset, header: ph, image_index, is_boot_loader, data_offset, data, data_checksum })
}

/// No two structures may share bytes.
fn check_no_overlap(mut regions: Regions) -> Result<(), ParseError> {
    regions.sort_by_key(|r| (r.1, r.2));
    let mut widest: Option<&(String, u64, u64)> = None;
    for r in &regions {
        if let Some(w) = widest
            && r.1 < w.1 + w.2
        {
            return Err(ParseError::Overlap {
                first: w.0.clone(),
                first_start: w.1,
                first_end: w.1 + w.2,
                second: r.0.clone(),
                second_start: r.1,
                second_end: r.1 + r.2,
            });
        }
        if widest.is_none_or(|w| r.1 + r.2 > w.1 + w.2) {
            widest = Some(r);
        }
    }

    Ok(())
}

/// Parses and verifies a ZynqMP boot image.
pub fn parse(bytes: &[u8]) -> Result<BootImage, ParseError> {
    let file_len = bytes.len() as u64;
    let boot_header = BootHeader::decode(bytes)?;
    let bh = &boot_header;
    // Zynq-7000 shares the magic words and checksum rule but has its header version at
    // 0x2C (where ZynqMP has the FSBL execution address, always in OCM/TCM/QSPI) and the
    // QSPI configuration word 1 at 0x44 (reserved bits 1:0 of the ZynqMP attributes).
    if bh.fsbl_exec_address == 0x0101_0000 && bh.attributes.0 == 1 {
        return Err(ParseError::Zynq7000);
    }
    let mut regions: Regions = vec![("boot header".into(), 0, boot_header.encoded_len() as u64)];

    let mut image = BootImage {
        file_len,
        image_header_table: None,
        images: Vec::new(),
        partitions: Vec::new(),
        pmu_firmware: None,
        fsbl: None,
        boot_header: boot_header.clone(),
    };
    if bh.image_header_table_offset == 0 {
        (image.pmu_firmware, image.fsbl) = boot_rom_payloads(bytes, bh)?;
        return Ok(image);
    }

    let (iht_offset, table, boot_device, first_ph) = image_header_table(bytes, bh, &mut regions)?;
    let count = table.partition_count;
    let images = image_headers(bytes, &table, &mut regions)?;
    let headers = partition_headers(bytes, first_ph, count, &mut regions)?;
    image.images = assign_partitions(images, &headers)?;
    for (index, (header_offset, ph)) in headers.into_iter().enumerate() {
        let image_index = image.images.iter().position(|im| im.partitions.contains(&index)).unwrap_or(0);
        image.partitions.push(partition_data(bytes, bh, (index, header_offset, ph), image_index, &mut regions)?);
    }

    // The boot ROM's view (checked after the headers so that truncated headers are
    // reported as such).
    (image.pmu_firmware, image.fsbl) = boot_rom_payloads(bytes, bh)?;
    check_no_overlap(regions)?;
    image.image_header_table = Some(ParsedImageHeaderTable { offset: iht_offset, table, boot_device });
    Ok(image)
}
