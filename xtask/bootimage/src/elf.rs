//! ELF input: the loadable segments that become partitions.
//!
//! bootgen's rules (`ImageHeader::ImportElf`, `GetElfSections`, `CombineElfSections`):
//! * only `PT_LOAD` program headers with a non-zero file size are used;
//! * the load address is the segment's physical address (`p_paddr`);
//! * the execution address is the ELF entry point (`e_entry`), written only on the first
//!   partition of the image;
//! * ordinary images get one partition per segment; the boot loader (and the PMU
//!   firmware the boot ROM loads) get all segments combined into one blob with the gaps
//!   zero filled;
//! * the A53 execution state is AArch64 for ELF64 and for non-ARM ELF32 (e.g. the
//!   MicroBlaze PMU firmware), AArch32 for ELF32 with `e_machine == EM_ARM`.

use object::read::elf::{FileHeader, ProgramHeader};
use thiserror::Error;

use crate::attributes::{Endianness, ExecState};

/// Largest zero-filled gap accepted when combining segments (guards against ELFs with
/// segments far apart, which would produce a huge boot loader partition).
pub const MAX_COMBINE_GAP: u64 = 16 * 1024 * 1024;

/// Errors reading an ELF file.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ElfError {
    /// The file is not an ELF or its headers are malformed.
    #[error("not a valid ELF file: {0}")]
    Malformed(String),
    /// No `PT_LOAD` segment with file contents.
    #[error("ELF has no loadable segment with a non-zero file size")]
    NoLoadableSegments,
    /// A segment's file range lies outside the file.
    #[error("ELF program header {index}: file range is outside the file")]
    SegmentOutOfFile {
        /// Program header index.
        index: usize,
    },
    /// Combining needs ascending, non-overlapping physical addresses.
    #[error(
        "cannot combine ELF segments: segment at {addr:#x} starts below the end of the \
         previous one ({prev_end:#x})"
    )]
    SegmentsOverlap {
        /// Physical address of the segment.
        addr: u64,
        /// End of the previous segment.
        prev_end: u64,
    },
    /// Combining would zero fill too much.
    #[error(
        "cannot combine ELF segments: gap of {gap:#x} bytes before {addr:#x} exceeds \
         {MAX_COMBINE_GAP:#x}"
    )]
    GapTooLarge {
        /// Physical address of the segment after the gap.
        addr: u64,
        /// Gap size in bytes.
        gap: u64,
    },
}

impl From<object::read::Error> for ElfError {
    fn from(e: object::read::Error) -> Self {
        ElfError::Malformed(e.to_string())
    }
}

/// One loadable segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElfSegment {
    /// Index of the program header.
    pub index: usize,
    /// Physical (load) address, `p_paddr`.
    pub paddr: u64,
    /// Virtual address, `p_vaddr`.
    pub vaddr: u64,
    /// Memory size, `p_memsz` (bytes beyond the file size are not stored, as in bootgen).
    pub mem_size: u64,
    /// The segment's file contents (`p_filesz` bytes).
    pub data: Vec<u8>,
}

/// The parts of an ELF file the boot image needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElfImage {
    /// True for ELFCLASS64.
    pub is_64: bool,
    /// `e_machine`.
    pub machine: u16,
    /// Data encoding.
    pub endianness: Endianness,
    /// `e_entry`.
    pub entry: u64,
    /// `PT_LOAD` segments with a non-zero file size, in program header order.
    pub segments: Vec<ElfSegment>,
}

/// True when `bytes` start with the ELF magic.
pub fn is_elf(bytes: &[u8]) -> bool {
    bytes.starts_with(b"\x7fELF")
}

fn load<Elf: FileHeader<Endian = object::Endianness>>(data: &[u8]) -> Result<ElfImage, ElfError> {
    let header = Elf::parse(data)?;
    let endian = header.endian()?;
    let mut segments = Vec::new();
    for (index, ph) in header.program_headers(endian, data)?.iter().enumerate() {
        if ph.p_type(endian) != object::elf::PT_LOAD {
            continue;
        }
        let filesz: u64 = ph.p_filesz(endian).into();
        if filesz == 0 {
            continue;
        }
        let bytes = ph.data(endian, data).map_err(|()| ElfError::SegmentOutOfFile { index })?;
        segments.push(ElfSegment {
            index,
            paddr: ph.p_paddr(endian).into(),
            vaddr: ph.p_vaddr(endian).into(),
            mem_size: ph.p_memsz(endian).into(),
            data: bytes.to_vec(),
        });
    }
    if segments.is_empty() {
        return Err(ElfError::NoLoadableSegments);
    }
    Ok(ElfImage {
        is_64: header.is_class_64(),
        machine: header.e_machine(endian),
        endianness: if endian == object::Endianness::Big { Endianness::Big } else { Endianness::Little },
        entry: header.e_entry(endian).into(),
        segments,
    })
}

impl ElfImage {
    /// Parses a 32- or 64-bit ELF of either byte order. Never panics.
    pub fn parse(data: &[u8]) -> Result<Self, ElfError> {
        if !is_elf(data) {
            return Err(ElfError::Malformed("missing \\x7fELF magic".into()));
        }
        match data.get(4) {
            Some(1) => load::<object::elf::FileHeader32<object::Endianness>>(data),
            Some(2) => load::<object::elf::FileHeader64<object::Endianness>>(data),
            other => Err(ElfError::Malformed(format!("unsupported ELF class byte {other:?}"))),
        }
    }

    /// The A53 execution state bootgen derives from the ELF header.
    pub fn exec_state(&self) -> ExecState {
        if !self.is_64 && self.machine == object::elf::EM_ARM { ExecState::AArch32 } else { ExecState::AArch64 }
    }

    /// All segments combined into one blob starting at the first segment's physical
    /// address, gaps zero filled (bootgen's `CombineElfSections`). Returns the load
    /// address and the bytes.
    pub fn combined(&self) -> Result<(u64, Vec<u8>), ElfError> {
        let first = self.segments.first().ok_or(ElfError::NoLoadableSegments)?;
        let base = first.paddr;
        let mut out: Vec<u8> = Vec::new();
        let mut prev_end = base;
        for seg in &self.segments {
            if seg.paddr < prev_end {
                return Err(ElfError::SegmentsOverlap { addr: seg.paddr, prev_end });
            }
            let gap = seg.paddr - prev_end;
            if gap > MAX_COMBINE_GAP {
                return Err(ElfError::GapTooLarge { addr: seg.paddr, gap });
            }
            // `gap` is bounded above, so the cast cannot truncate.
            out.resize(out.len() + gap as usize, 0);
            out.extend_from_slice(&seg.data);
            prev_end = seg.paddr.saturating_add(seg.data.len() as u64);
        }
        Ok((base, out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_non_elf() {
        assert!(matches!(ElfImage::parse(b"hello"), Err(ElfError::Malformed(_))));
        assert!(matches!(ElfImage::parse(b"\x7fELF\x07"), Err(ElfError::Malformed(_))));
        assert!(matches!(ElfImage::parse(b"\x7fELF\x02\x01\x01"), Err(ElfError::Malformed(_))));
    }

    #[test]
    fn combine_fills_gaps_and_rejects_overlap() {
        let seg = |paddr, data: &[u8]| ElfSegment {
            index: 0,
            paddr,
            vaddr: paddr,
            mem_size: data.len() as u64,
            data: data.to_vec(),
        };
        let mut img = ElfImage {
            is_64: true,
            machine: object::elf::EM_AARCH64,
            endianness: Endianness::Little,
            entry: 0x100,
            segments: vec![seg(0x100, &[1, 2]), seg(0x104, &[3])],
        };
        assert_eq!(img.combined(), Ok((0x100, vec![1, 2, 0, 0, 3])));
        img.segments.push(seg(0x101, &[9]));
        assert!(matches!(img.combined(), Err(ElfError::SegmentsOverlap { .. })));
        img.segments.pop();
        img.segments.push(seg(0x1000_0000, &[9]));
        assert!(matches!(img.combined(), Err(ElfError::GapTooLarge { .. })));
    }
}
