//! Loading programs: the PT_LOAD segments of an AArch64 ELF executable, checked against the
//! user address-space layout (`proto::syscall::layout`) before anything is mapped.

use object::elf::{EM_AARCH64, ET_EXEC, PF_R, PF_W, PF_X, PT_LOAD};
use object::read::elf::{ElfFile64, FileHeader, ProgramHeader};
use object::{Endianness, Object};
use proto::syscall::layout::{IMAGE_BASE, IMAGE_END};

pub const MAX_SEGMENTS: usize = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Permissions {
    pub read: bool,
    pub write: bool,
    pub execute: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment<'a> {
    pub vaddr: u64,
    pub mem_size: u64,
    /// The bytes from the file; the rest of `mem_size` is zero.
    pub data: &'a [u8],
    pub permissions: Permissions,
}

#[derive(Clone, Debug)]
pub struct Program<'a> {
    pub entry: u64,
    pub segments: heapless::Vec<Segment<'a>, MAX_SEGMENTS>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElfError {
    Malformed,
    NotAarch64,
    NotAnExecutable,
    TooManySegments,
    /// A segment does not fit between `IMAGE_BASE` and `IMAGE_END`.
    SegmentOutsideImage {
        vaddr: u64,
    },
    /// File size larger than memory size, or data beyond the end of the file.
    BadSegmentSize {
        vaddr: u64,
    },
    /// Two segments share a page.
    Overlap {
        vaddr: u64,
    },
    /// A segment both writable and executable.
    WritableAndExecutable {
        vaddr: u64,
    },
    EntryNotExecutable(u64),
}

const PAGE: u64 = 4096;

pub fn parse(bytes: &[u8]) -> Result<Program<'_>, ElfError> {
    let elf = ElfFile64::<Endianness>::parse(bytes).map_err(|_| ElfError::Malformed)?;
    let endian = elf.endian();
    let header = elf.elf_header();
    if header.e_machine(endian) != EM_AARCH64 {
        return Err(ElfError::NotAarch64);
    }
    if header.e_type(endian) != ET_EXEC {
        return Err(ElfError::NotAnExecutable);
    }
    let mut segments: heapless::Vec<Segment<'_>, MAX_SEGMENTS> = heapless::Vec::new();
    for ph in elf.elf_program_headers().iter().filter(|ph| ph.p_type(endian) == PT_LOAD) {
        let vaddr = ph.p_vaddr(endian);
        let (mem_size, file_size) = (ph.p_memsz(endian), ph.p_filesz(endian));
        if mem_size == 0 {
            continue;
        }
        let end = vaddr.checked_add(mem_size).ok_or(ElfError::SegmentOutsideImage { vaddr })?;
        if vaddr < IMAGE_BASE || end > IMAGE_END {
            return Err(ElfError::SegmentOutsideImage { vaddr });
        }
        if file_size > mem_size {
            return Err(ElfError::BadSegmentSize { vaddr });
        }
        let data = ph.data(endian, bytes).map_err(|_| ElfError::BadSegmentSize { vaddr })?;
        let flags = ph.p_flags(endian);
        let permissions = Permissions { read: flags & PF_R != 0, write: flags & PF_W != 0, execute: flags & PF_X != 0 };
        if permissions.write && permissions.execute {
            return Err(ElfError::WritableAndExecutable { vaddr });
        }
        let first_page = vaddr / PAGE;
        for other in &segments {
            let other_last_page = (other.vaddr + other.mem_size - 1) / PAGE;
            let other_first_page = other.vaddr / PAGE;
            if first_page <= other_last_page && (end - 1) / PAGE >= other_first_page {
                return Err(ElfError::Overlap { vaddr });
            }
        }
        segments.push(Segment { vaddr, mem_size, data, permissions }).map_err(|_| ElfError::TooManySegments)?;
    }
    let entry = elf.entry();
    let executable = segments.iter().any(|s| s.permissions.execute && entry >= s.vaddr && entry < s.vaddr + s.mem_size);
    if !executable {
        return Err(ElfError::EntryNotExecutable(entry));
    }
    Ok(Program { entry, segments })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::vec::Vec;

    /// A minimal ELF64 executable with the given (vaddr, file bytes, mem size, flags) segments.
    pub fn elf(machine: u16, entry: u64, segments: &[(u64, &[u8], u64, u32)]) -> Vec<u8> {
        let phoff = 64u64;
        let data_start = phoff + 56 * segments.len() as u64;
        let mut out = Vec::new();
        out.extend_from_slice(b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0");
        out.extend_from_slice(&ET_EXEC.to_le_bytes());
        out.extend_from_slice(&machine.to_le_bytes());
        out.extend_from_slice(&1u32.to_le_bytes());
        out.extend_from_slice(&entry.to_le_bytes());
        out.extend_from_slice(&phoff.to_le_bytes());
        out.extend_from_slice(&0u64.to_le_bytes()); // shoff
        out.extend_from_slice(&0u32.to_le_bytes()); // flags
        out.extend_from_slice(&64u16.to_le_bytes()); // ehsize
        out.extend_from_slice(&56u16.to_le_bytes()); // phentsize
        out.extend_from_slice(&(segments.len() as u16).to_le_bytes());
        out.extend_from_slice(&[0u8; 6]); // shentsize, shnum, shstrndx
        let mut offset = data_start;
        for &(vaddr, bytes, mem, flags) in segments {
            out.extend_from_slice(&PT_LOAD.to_le_bytes());
            out.extend_from_slice(&flags.to_le_bytes());
            out.extend_from_slice(&offset.to_le_bytes());
            out.extend_from_slice(&vaddr.to_le_bytes());
            out.extend_from_slice(&vaddr.to_le_bytes());
            out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
            out.extend_from_slice(&mem.to_le_bytes());
            out.extend_from_slice(&PAGE.to_le_bytes());
            offset += bytes.len() as u64;
        }
        for &(_, bytes, _, _) in segments {
            out.extend_from_slice(bytes);
        }
        out
    }

    const RX: u32 = PF_R | PF_X;
    const RW: u32 = PF_R | PF_W;

    #[test]
    fn loads_text_and_data_with_their_permissions() {
        let bytes = elf(
            EM_AARCH64,
            IMAGE_BASE + 8,
            &[(IMAGE_BASE, &[1, 2, 3, 4], 16, RX), (IMAGE_BASE + 0x1000, &[9], 0x2000, RW)],
        );
        let p = parse(&bytes).unwrap();
        assert_eq!(p.entry, IMAGE_BASE + 8);
        assert_eq!(p.segments.len(), 2);
        assert_eq!(p.segments[0].data, &[1, 2, 3, 4]);
        assert!(p.segments[0].permissions.execute && !p.segments[0].permissions.write);
        assert_eq!(p.segments[1].mem_size, 0x2000);
        assert!(p.segments[1].permissions.write);
    }

    #[test]
    fn refuses_what_a_process_must_not_get() {
        let bad = |segments: &[(u64, &[u8], u64, u32)], entry| parse(&elf(EM_AARCH64, entry, segments)).err();
        assert_eq!(bad(&[(0x1000, &[0], 8, RX)], 0x1000), Some(ElfError::SegmentOutsideImage { vaddr: 0x1000 }));
        assert_eq!(
            bad(&[(IMAGE_END - 4, &[0], 8, RX)], IMAGE_END - 4),
            Some(ElfError::SegmentOutsideImage { vaddr: IMAGE_END - 4 })
        );
        assert_eq!(
            bad(&[(IMAGE_BASE, &[0], 8, PF_R | PF_W | PF_X)], IMAGE_BASE),
            Some(ElfError::WritableAndExecutable { vaddr: IMAGE_BASE })
        );
        assert_eq!(
            bad(&[(IMAGE_BASE, &[0; 8], 4, RX)], IMAGE_BASE),
            Some(ElfError::BadSegmentSize { vaddr: IMAGE_BASE })
        );
        assert_eq!(
            bad(&[(IMAGE_BASE, &[0], 8, RX), (IMAGE_BASE + 0x800, &[0], 8, RW)], IMAGE_BASE),
            Some(ElfError::Overlap { vaddr: IMAGE_BASE + 0x800 })
        );
        assert_eq!(bad(&[(IMAGE_BASE, &[0], 8, RW)], IMAGE_BASE), Some(ElfError::EntryNotExecutable(IMAGE_BASE)));
        assert_eq!(parse(&elf(62, IMAGE_BASE, &[(IMAGE_BASE, &[0], 8, RX)])).err(), Some(ElfError::NotAarch64));
        assert_eq!(parse(b"not an elf").err(), Some(ElfError::Malformed));
        let mut truncated = elf(EM_AARCH64, IMAGE_BASE, &[(IMAGE_BASE, &[0; 64], 64, RX)]);
        truncated.truncate(truncated.len() - 10);
        assert!(parse(&truncated).is_err());
    }

    #[test]
    fn never_panics_on_garbage() {
        let good = elf(EM_AARCH64, IMAGE_BASE, &[(IMAGE_BASE, &[0; 32], 32, RX)]);
        let mut x = 0x1234_5678u32;
        for _ in 0..20_000 {
            let mut bytes = good.clone();
            for _ in 0..4 {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                let i = x as usize % bytes.len();
                bytes[i] = (x >> 8) as u8;
            }
            let _ = parse(&bytes);
        }
    }
}
