//! Shared test helpers: a tiny ELF writer, a deterministic PRNG and checksum fix-ups.
#![allow(dead_code)]

use bootimage::checksum::{read_u32, word_checksum};

pub const EM_ARM: u16 = 40;
pub const EM_AARCH64: u16 = 183;
pub const EM_MICROBLAZE: u16 = 189;
pub const PT_LOAD: u32 = 1;
pub const PT_NOTE: u32 = 4;

/// One program header of a test ELF.
#[derive(Clone, Debug)]
pub struct Seg {
    pub p_type: u32,
    pub paddr: u64,
    pub vaddr: u64,
    pub data: Vec<u8>,
    pub mem_size: u64,
}

impl Seg {
    pub fn load(paddr: u64, data: Vec<u8>) -> Self {
        let mem_size = data.len() as u64;
        Seg { p_type: PT_LOAD, paddr, vaddr: paddr, data, mem_size }
    }
}

/// Writes a minimal executable ELF (no section headers) with the given segments.
pub fn make_elf(is_64: bool, big_endian: bool, machine: u16, entry: u64, segs: &[Seg]) -> Vec<u8> {
    let mut out = Vec::new();
    let u16b = |v: u16| {
        if big_endian { v.to_be_bytes() } else { v.to_le_bytes() }
    };
    let u32b = |v: u32| {
        if big_endian { v.to_be_bytes() } else { v.to_le_bytes() }
    };
    let u64b = |v: u64| {
        if big_endian { v.to_be_bytes() } else { v.to_le_bytes() }
    };
    let (ehsize, phentsize) = if is_64 { (64u64, 56u64) } else { (52, 32) };
    let phoff = ehsize;
    let mut data_off = phoff + phentsize * segs.len() as u64;
    let mut offsets = Vec::new();
    for s in segs {
        data_off = data_off.next_multiple_of(16);
        offsets.push(data_off);
        data_off += s.data.len() as u64;
    }
    out.extend_from_slice(b"\x7fELF");
    out.push(if is_64 { 2 } else { 1 });
    out.push(if big_endian { 2 } else { 1 });
    out.push(1);
    out.extend_from_slice(&[0; 9]);
    out.extend_from_slice(&u16b(2)); // ET_EXEC
    out.extend_from_slice(&u16b(machine));
    out.extend_from_slice(&u32b(1));
    if is_64 {
        out.extend_from_slice(&u64b(entry));
        out.extend_from_slice(&u64b(phoff));
        out.extend_from_slice(&u64b(0));
    } else {
        out.extend_from_slice(&u32b(entry as u32));
        out.extend_from_slice(&u32b(phoff as u32));
        out.extend_from_slice(&u32b(0));
    }
    out.extend_from_slice(&u32b(0)); // flags
    out.extend_from_slice(&u16b(ehsize as u16));
    out.extend_from_slice(&u16b(phentsize as u16));
    out.extend_from_slice(&u16b(segs.len() as u16));
    out.extend_from_slice(&u16b(if is_64 { 64 } else { 40 }));
    out.extend_from_slice(&u16b(0));
    out.extend_from_slice(&u16b(0));
    assert_eq!(out.len() as u64, ehsize);
    for (s, &off) in segs.iter().zip(&offsets) {
        if is_64 {
            out.extend_from_slice(&u32b(s.p_type));
            out.extend_from_slice(&u32b(5));
            out.extend_from_slice(&u64b(off));
            out.extend_from_slice(&u64b(s.vaddr));
            out.extend_from_slice(&u64b(s.paddr));
            out.extend_from_slice(&u64b(s.data.len() as u64));
            out.extend_from_slice(&u64b(s.mem_size));
            out.extend_from_slice(&u64b(16));
        } else {
            out.extend_from_slice(&u32b(s.p_type));
            out.extend_from_slice(&u32b(off as u32));
            out.extend_from_slice(&u32b(s.vaddr as u32));
            out.extend_from_slice(&u32b(s.paddr as u32));
            out.extend_from_slice(&u32b(s.data.len() as u32));
            out.extend_from_slice(&u32b(s.mem_size as u32));
            out.extend_from_slice(&u32b(5));
            out.extend_from_slice(&u32b(16));
        }
    }
    for (s, &off) in segs.iter().zip(&offsets) {
        out.resize(off as usize, 0);
        out.extend_from_slice(&s.data);
    }
    out
}

/// xorshift64* PRNG, deterministic across runs.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// `min + below(extra)` random bytes.
    pub fn bytes_range(&mut self, min: usize, extra: u64) -> Vec<u8> {
        let n = min + self.below(extra) as usize;
        self.bytes(n)
    }

    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// Recomputes the checksum word at `at` over `range`.
pub fn fix_checksum(image: &mut [u8], range: std::ops::Range<usize>, at: usize) {
    if range.end > image.len() || at + 4 > image.len() {
        return;
    }
    let sum = word_checksum(&image[range]);
    image[at..at + 4].copy_from_slice(&sum.to_le_bytes());
}

/// Recomputes every header checksum of a (possibly mutated) image as far as the offsets
/// it contains allow, so that mutations reach the deeper checks.
pub fn fix_all_checksums(image: &mut [u8]) {
    fix_checksum(image, 0x20..0x48, 0x48);
    let Some(iht) = read_u32(image, 0x98).map(|v| v as usize) else {
        return;
    };
    fix_checksum(image, iht..iht.saturating_add(0x3C), iht.saturating_add(0x3C));
    let Some(count) = read_u32(image, iht.saturating_add(4)) else {
        return;
    };
    let Some(mut ph) = read_u32(image, iht.saturating_add(8)).map(|w| (w as usize).saturating_mul(4)) else {
        return;
    };
    for _ in 0..count.min(40) {
        fix_checksum(image, ph..ph.saturating_add(0x3C), ph.saturating_add(0x3C));
        match read_u32(image, ph.saturating_add(0xC)) {
            Some(0) | None => break,
            Some(next) => ph = (next as usize).saturating_mul(4),
        }
    }
}

pub fn put_u32(image: &mut [u8], at: usize, v: u32) {
    image[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

pub fn get_u32(image: &[u8], at: usize) -> u32 {
    read_u32(image, at).expect("in bounds")
}
