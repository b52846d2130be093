//! SD card images: an MBR with one FAT32 partition (type 0x0C, LBA) starting at 1 MiB
//! that holds `BOOT.BIN`, which is what the ZynqMP boot ROM looks for in SD boot mode
//! (UG1085 chapter 11, "SD/eMMC boot": the ROM reads `BOOT.BIN` from a FAT partition).
//!
//! The filesystem is written by the `fatfs` crate; without its `chrono` feature all
//! timestamps are the FAT epoch, so the output is reproducible.

use std::fs::OpenOptions;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;

use fatfs::{FatType, FileSystem, FormatVolumeOptions, FsOptions};
use thiserror::Error;

/// Sector size used throughout.
pub const SECTOR_SIZE: u64 = 512;
/// First sector of the FAT partition (1 MiB alignment).
pub const PARTITION_START_LBA: u32 = 2048;
/// MBR partition type: FAT32 with LBA addressing.
pub const PARTITION_TYPE_FAT32_LBA: u8 = 0x0C;
/// File name the boot ROM looks for.
pub const BOOT_BIN_NAME: &str = "BOOT.BIN";
/// Smallest image size: FAT32 needs at least 65525 clusters (512-byte clusters here).
pub const MIN_SIZE_MIB: u32 = 34;
/// Largest image size (sector numbers are 32-bit in the MBR).
pub const MAX_SIZE_MIB: u32 = 2 * 1024 * 1024 - 1;
/// Volume label.
pub const VOLUME_LABEL: [u8; 11] = *b"BOOT       ";
/// Disk signature written at MBR offset 0x1B8 and volume ID of the FAT.
pub const DISK_SIGNATURE: u32 = 0x5A59_4E51;

const MIB: u64 = 1024 * 1024;

/// Errors writing or reading SD images.
#[derive(Debug, Error)]
pub enum SdImageError {
    /// The requested size is outside the supported range.
    #[error(
        "SD image size {size_mib} MiB is outside {MIN_SIZE_MIB}..={MAX_SIZE_MIB} MiB (FAT32 needs at least 65525 clusters)"
    )]
    BadSize {
        /// Requested size.
        size_mib: u32,
    },
    /// BOOT.BIN does not fit.
    #[error("BOOT.BIN ({len} bytes) does not fit in a {size_mib} MiB SD image")]
    TooLarge {
        /// BOOT.BIN length.
        len: usize,
        /// Image size.
        size_mib: u32,
    },
    /// I/O error, including filesystem errors from `fatfs`.
    #[error("SD image I/O: {0}")]
    Io(#[from] io::Error),
    /// The MBR is missing or malformed.
    #[error("bad MBR: {0}")]
    Mbr(String),
}

/// One MBR partition table entry (offset 0x1BE + 16 × n).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MbrPartition {
    /// Status byte (0x80 = active/bootable, 0x00 = inactive).
    pub status: u8,
    /// CHS address of the first sector (head, sector|cyl-high, cyl-low).
    pub chs_first: [u8; 3],
    /// Partition type.
    pub partition_type: u8,
    /// CHS address of the last sector.
    pub chs_last: [u8; 3],
    /// LBA of the first sector.
    pub start_lba: u32,
    /// Number of sectors.
    pub sector_count: u32,
}

impl MbrPartition {
    fn encode(&self) -> [u8; 16] {
        let mut e = [0u8; 16];
        e[0] = self.status;
        e[1..4].copy_from_slice(&self.chs_first);
        e[4] = self.partition_type;
        e[5..8].copy_from_slice(&self.chs_last);
        e[8..12].copy_from_slice(&self.start_lba.to_le_bytes());
        e[12..16].copy_from_slice(&self.sector_count.to_le_bytes());
        e
    }

    fn decode(e: &[u8; 16]) -> Self {
        MbrPartition {
            status: e[0],
            chs_first: [e[1], e[2], e[3]],
            partition_type: e[4],
            chs_last: [e[5], e[6], e[7]],
            start_lba: u32::from_le_bytes([e[8], e[9], e[10], e[11]]),
            sector_count: u32::from_le_bytes([e[12], e[13], e[14], e[15]]),
        }
    }
}

/// CHS encoding of `lba` for the conventional 255-head, 63-sector geometry, saturating
/// at cylinder 1023 (0xFE 0xFF 0xFF) as partitioning tools do.
pub fn chs(lba: u32) -> [u8; 3] {
    const HEADS: u32 = 255;
    const SECTORS: u32 = 63;
    let cylinder = lba / (HEADS * SECTORS);
    if cylinder > 1023 {
        return [0xFE, 0xFF, 0xFF];
    }
    let head = (lba / SECTORS) % HEADS;
    let sector = lba % SECTORS + 1;
    [head as u8, (sector as u8 & 0x3F) | (((cylinder >> 2) & 0xC0) as u8), (cylinder & 0xFF) as u8]
}

/// A window onto `[start, start + len)` of a stream, so that `fatfs` sees the partition
/// as a whole volume.
struct Slice<'a, D> {
    inner: &'a mut D,
    start: u64,
    len: u64,
    pos: u64,
}

impl<'a, D: Seek> Slice<'a, D> {
    fn new(inner: &'a mut D, start: u64, len: u64) -> io::Result<Self> {
        inner.seek(SeekFrom::Start(start))?;
        Ok(Slice { inner, start, len, pos: 0 })
    }
}

impl<D: Read + Seek> Read for Slice<'_, D> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.len.saturating_sub(self.pos);
        let n = usize::try_from(left).unwrap_or(usize::MAX).min(buf.len());
        if n == 0 {
            return Ok(0);
        }
        self.inner.seek(SeekFrom::Start(self.start + self.pos))?;
        let got = self.inner.read(&mut buf[..n])?;
        self.pos += got as u64;
        Ok(got)
    }
}

impl<D: Write + Seek> Write for Slice<'_, D> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let left = self.len.saturating_sub(self.pos);
        let n = usize::try_from(left).unwrap_or(usize::MAX).min(buf.len());
        if n == 0 && !buf.is_empty() {
            return Err(io::Error::new(io::ErrorKind::WriteZero, "write past end of partition"));
        }
        self.inner.seek(SeekFrom::Start(self.start + self.pos))?;
        let put = self.inner.write(&buf[..n])?;
        self.pos += put as u64;
        Ok(put)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl<D: Seek> Seek for Slice<'_, D> {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        let new = match pos {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::End(d) => self.len.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        match new {
            Some(p) if p <= self.len => {
                self.pos = p;
                Ok(p)
            }
            _ => Err(io::Error::new(io::ErrorKind::InvalidInput, "seek outside the partition")),
        }
    }
}

/// Writes a `size_mib` MiB disk image to `disk`: an MBR whose first entry is a bootable
/// FAT32 (0x0C) partition from LBA 2048 to the end, formatted, holding `BOOT.BIN`.
///
/// `disk` is written from offset 0; it is extended to the full size.
pub fn write_sd_image<D: Read + Write + Seek>(
    boot_bin: &[u8],
    disk: &mut D,
    size_mib: u32,
) -> Result<(), SdImageError> {
    if !(MIN_SIZE_MIB..=MAX_SIZE_MIB).contains(&size_mib) {
        return Err(SdImageError::BadSize { size_mib });
    }
    let total_bytes = u64::from(size_mib) * MIB;
    let total_sectors = u32::try_from(total_bytes / SECTOR_SIZE).map_err(|_| SdImageError::BadSize { size_mib })?;
    let part_sectors = total_sectors - PARTITION_START_LBA;
    let part_start = u64::from(PARTITION_START_LBA) * SECTOR_SIZE;
    let part_len = u64::from(part_sectors) * SECTOR_SIZE;
    // FAT structures take well under 2 MiB at these sizes.
    if boot_bin.len() as u64 + 2 * MIB > part_len {
        return Err(SdImageError::TooLarge { len: boot_bin.len(), size_mib });
    }

    // Extend to full size (sparse for files).
    disk.seek(SeekFrom::Start(total_bytes - 1))?;
    disk.write_all(&[0])?;

    // MBR.
    let mut mbr = [0u8; 512];
    mbr[0x1B8..0x1BC].copy_from_slice(&DISK_SIGNATURE.to_le_bytes());
    let entry = MbrPartition {
        status: 0x80,
        chs_first: chs(PARTITION_START_LBA),
        partition_type: PARTITION_TYPE_FAT32_LBA,
        chs_last: chs(total_sectors - 1),
        start_lba: PARTITION_START_LBA,
        sector_count: part_sectors,
    };
    mbr[0x1BE..0x1CE].copy_from_slice(&entry.encode());
    mbr[0x1FE] = 0x55;
    mbr[0x1FF] = 0xAA;
    disk.seek(SeekFrom::Start(0))?;
    disk.write_all(&mbr)?;
    // Zero the partition's first sectors so that no stale boot sector survives.
    disk.seek(SeekFrom::Start(part_start))?;
    disk.write_all(&[0u8; 4096])?;

    // Filesystem.
    {
        let slice = Slice::new(disk, part_start, part_len)?;
        fatfs::format_volume(
            slice,
            FormatVolumeOptions::new().fat_type(FatType::Fat32).volume_label(VOLUME_LABEL).volume_id(DISK_SIGNATURE),
        )?;
    }
    set_hidden_sectors(disk, part_start, PARTITION_START_LBA)?;
    {
        let slice = Slice::new(disk, part_start, part_len)?;
        let fs = FileSystem::new(slice, FsOptions::new())?;
        {
            let mut file = fs.root_dir().create_file(BOOT_BIN_NAME)?;
            file.truncate()?;
            file.write_all(boot_bin)?;
            file.flush()?;
        }
        fs.unmount()?;
    }
    disk.flush()?;
    Ok(())
}

/// Writes the BPB "hidden sectors" field (offset 0x1C: sectors preceding the volume) in
/// the FAT32 boot sector and its backup, which `fatfs` leaves at 0.
fn set_hidden_sectors<D: Read + Write + Seek>(disk: &mut D, part_start: u64, lba: u32) -> io::Result<()> {
    let mut sector = [0u8; 512];
    disk.seek(SeekFrom::Start(part_start))?;
    disk.read_exact(&mut sector)?;
    let backup = u64::from(u16::from_le_bytes([sector[0x32], sector[0x33]]));
    for at in [0, backup] {
        disk.seek(SeekFrom::Start(part_start + at * SECTOR_SIZE + 0x1C))?;
        disk.write_all(&lba.to_le_bytes())?;
    }
    Ok(())
}

/// Creates (or truncates) the file at `path` and writes the SD image into it.
pub fn write_sd_image_file(boot_bin: &[u8], path: &Path, size_mib: u32) -> Result<(), SdImageError> {
    let mut file = OpenOptions::new().read(true).write(true).create(true).truncate(true).open(path)?;
    write_sd_image(boot_bin, &mut file, size_mib)
}

/// Reads the four MBR partition entries of `disk`.
pub fn read_mbr<D: Read + Seek>(disk: &mut D) -> Result<[MbrPartition; 4], SdImageError> {
    let mut mbr = [0u8; 512];
    disk.seek(SeekFrom::Start(0))?;
    disk.read_exact(&mut mbr)?;
    if mbr[0x1FE..] != [0x55, 0xAA] {
        return Err(SdImageError::Mbr(format!(
            "boot signature is {:02x} {:02x}, expected 55 aa",
            mbr[0x1FE], mbr[0x1FF]
        )));
    }
    let entry = |n: usize| {
        let mut e = [0u8; 16];
        e.copy_from_slice(&mbr[0x1BE + 16 * n..0x1CE + 16 * n]);
        MbrPartition::decode(&e)
    };
    Ok([entry(0), entry(1), entry(2), entry(3)])
}

/// Reads `BOOT.BIN` back from the first FAT partition of an SD image, through the FAT
/// driver.
pub fn read_boot_bin<D: Read + Write + Seek>(disk: &mut D) -> Result<Vec<u8>, SdImageError> {
    let entries = read_mbr(disk)?;
    let part = entries
        .iter()
        .find(|e| matches!(e.partition_type, 0x01 | 0x04 | 0x06 | 0x0B | 0x0C | 0x0E))
        .ok_or_else(|| SdImageError::Mbr("no FAT partition in the partition table".into()))?;
    let start = u64::from(part.start_lba) * SECTOR_SIZE;
    let len = u64::from(part.sector_count) * SECTOR_SIZE;
    let slice = Slice::new(disk, start, len)?;
    let fs = FileSystem::new(slice, FsOptions::new())?;
    let mut out = Vec::new();
    fs.root_dir().open_file(BOOT_BIN_NAME)?.read_to_end(&mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chs_encoding() {
        assert_eq!(chs(0), [0, 1, 0]);
        // LBA 2048 = cylinder 0, head 32, sector 33.
        assert_eq!(chs(2048), [32, 33, 0]);
        assert_eq!(chs(u32::MAX), [0xFE, 0xFF, 0xFF]);
    }

    #[test]
    fn size_limits() {
        let mut c = io::Cursor::new(Vec::new());
        assert!(matches!(write_sd_image(b"x", &mut c, MIN_SIZE_MIB - 1), Err(SdImageError::BadSize { .. })));
        assert!(matches!(
            write_sd_image(&vec![0u8; 40 * 1024 * 1024], &mut c, MIN_SIZE_MIB),
            Err(SdImageError::TooLarge { .. })
        ));
    }

    #[test]
    fn smallest_image_formats() {
        let mut c = io::Cursor::new(Vec::new());
        write_sd_image(b"hello", &mut c, MIN_SIZE_MIB).unwrap();
        assert_eq!(read_boot_bin(&mut c).unwrap(), b"hello");
    }
}
