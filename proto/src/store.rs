//! The program store: every user program in one block outside the kernel image
//! (`docs/hw/program-store.md`). xtask writes it ([`write`]), the loader places it at the board's
//! `DDR_LAYOUT.program_store` (QEMU's `-device loader`, a data partition of BOOT.bin), and the
//! kernel finds programs in it by name ([`Store`]), so a program changes without a kernel build.
//!
//! ```text
//! +0            header  HEADER_SIZE bytes: magic, checksum, version, count, total length
//! +HEADER_SIZE  table   count entries of ENTRY_SIZE bytes: name (NUL-padded), offset, length
//!               files   each at an offset that is a multiple of ALIGN, in table order
//! ```
//!
//! Fields are little-endian. The checksum covers every byte after itself up to the total
//! length, so a corrupt or truncated store is refused whole rather than half read.

use crate::checksum::fnv1a;

/// "UPRG", little-endian: Unimem programs.
pub const MAGIC: u32 = u32::from_le_bytes(*b"UPRG");
/// The layout described here; a reader refuses any other.
pub const VERSION: u32 = 1;
pub const HEADER_SIZE: usize = 24;
pub const ENTRY_SIZE: usize = 64;
/// The longest name, in bytes: the entry's name field.
pub const NAME_SIZE: usize = 56;
/// Every file starts at a multiple of this: the kernel parses ELF headers in place, and their
/// widest fields are 8 bytes.
pub const ALIGN: usize = 8;
/// The most programs a store holds; bounds the kernel's work at boot (names are compared
/// pairwise for duplicates).
pub const MAX_PROGRAMS: usize = 256;

/// The header's fields: offsets from the store's start.
pub mod header {
    pub const MAGIC: usize = 0x00;
    /// FNV-1a (32-bit) of bytes `[CHECKSUM + 4, total length)`.
    pub const CHECKSUM: usize = 0x04;
    pub const VERSION: usize = 0x08;
    pub const COUNT: usize = 0x0c;
    /// Bytes of the whole store, header to the end of the last file's padding.
    pub const LENGTH: usize = 0x10;
    /// Written as 0; covered by the checksum, otherwise ignored.
    pub const RESERVED: usize = 0x14;
}

/// An entry's fields: offsets from the entry's start.
pub mod entry {
    /// The name, UTF-8, padded with NULs to `NAME_SIZE` bytes.
    pub const NAME: usize = 0x00;
    /// The file's offset from the store's start.
    pub const OFFSET: usize = 0x38;
    /// The file's length in bytes.
    pub const LENGTH: usize = 0x3c;
}

const _: () = assert!(header::RESERVED + 4 == HEADER_SIZE && HEADER_SIZE.is_multiple_of(ALIGN));
const _: () = assert!(entry::NAME + NAME_SIZE == entry::OFFSET && entry::LENGTH + 4 == ENTRY_SIZE);
const _: () = assert!(ENTRY_SIZE.is_multiple_of(ALIGN));

/// Why a block is not a store the kernel will use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Shorter than its header, than its table, or than the total length it gives.
    Truncated,
    /// The block does not start at a multiple of [`ALIGN`], so its files would not either.
    UnalignedBase,
    BadMagic(u32),
    BadVersion(u32),
    BadChecksum,
    TooManyPrograms(u32),
    /// Entry `index`'s file reaches past the total length, or into the header or the table.
    OutOfBounds {
        index: usize,
    },
    /// Entry `index`'s file does not start at a multiple of [`ALIGN`].
    Misaligned {
        index: usize,
    },
    /// Entry `index`'s name is empty, not UTF-8, or has a NUL before a byte that is not one.
    BadName {
        index: usize,
    },
    /// Entry `index` has the name of an earlier entry.
    DuplicateName {
        index: usize,
    },
}

/// Why [`write`] cannot make a store of the files given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BuildError {
    TooManyPrograms(usize),
    /// File `index`'s name is empty, longer than [`NAME_SIZE`] bytes, or holds a NUL.
    BadName {
        index: usize,
    },
    DuplicateName {
        index: usize,
    },
    /// The store takes `needed` bytes: more than the buffer, or than a `u32` counts.
    TooLarge {
        needed: usize,
    },
}

fn word(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

fn put(out: &mut [u8], at: usize, value: u32) {
    out[at..at + 4].copy_from_slice(&value.to_le_bytes());
}

/// Where the table ends and the first file may start.
const fn table_end(count: usize) -> usize {
    HEADER_SIZE + count * ENTRY_SIZE
}

/// The checksum of a store whose total length is `bytes.len()`.
fn checksum(bytes: &[u8]) -> u32 {
    fnv1a(&bytes[header::CHECKSUM + 4..])
}

/// The bytes a store of `files` (name, contents) takes.
pub fn size(files: &[(&str, &[u8])]) -> usize {
    files.iter().fold(table_end(files.len()), |at, (_, file)| (at + file.len()).next_multiple_of(ALIGN))
}

/// Writes the store of `files` (name, contents), in the order given, into `out`; returns its
/// length. Refuses what a reader would refuse, so a store written here is one [`Store::parse`]
/// accepts.
pub fn write(files: &[(&str, &[u8])], out: &mut [u8]) -> Result<usize, BuildError> {
    if files.len() > MAX_PROGRAMS {
        return Err(BuildError::TooManyPrograms(files.len()));
    }
    for (index, (name, _)) in files.iter().enumerate() {
        if name.is_empty() || name.len() > NAME_SIZE || name.contains('\0') {
            return Err(BuildError::BadName { index });
        }
        if files[..index].iter().any(|(earlier, _)| earlier == name) {
            return Err(BuildError::DuplicateName { index });
        }
    }
    let len = size(files);
    if len > out.len() || u32::try_from(len).is_err() {
        return Err(BuildError::TooLarge { needed: len });
    }
    let out = &mut out[..len];
    out.fill(0);
    put(out, header::MAGIC, MAGIC);
    put(out, header::VERSION, VERSION);
    put(out, header::COUNT, files.len() as u32);
    put(out, header::LENGTH, len as u32);
    let mut at = table_end(files.len());
    for (index, (name, file)) in files.iter().enumerate() {
        let entry = HEADER_SIZE + index * ENTRY_SIZE;
        out[entry + entry::NAME..][..name.len()].copy_from_slice(name.as_bytes());
        put(out, entry + entry::OFFSET, at as u32);
        put(out, entry + entry::LENGTH, file.len() as u32);
        out[at..at + file.len()].copy_from_slice(file);
        at = (at + file.len()).next_multiple_of(ALIGN);
    }
    let sum = checksum(out);
    put(out, header::CHECKSUM, sum);
    Ok(len)
}

/// A validated store, borrowed from the block it was read from.
#[derive(Clone, Copy, Debug)]
pub struct Store<'a> {
    /// The store's bytes, exactly its total length.
    bytes: &'a [u8],
    count: usize,
}

impl<'a> Store<'a> {
    /// Reads the store at the start of `block` (the whole region it may fill) and checks all of
    /// it: header, checksum, and every entry's bounds, alignment and name.
    pub fn parse(block: &'a [u8]) -> Result<Self, Refusal> {
        if !(block.as_ptr() as usize).is_multiple_of(ALIGN) {
            return Err(Refusal::UnalignedBase);
        }
        let field = |at| word(block, at).ok_or(Refusal::Truncated);
        let magic = field(header::MAGIC)?;
        if magic != MAGIC {
            return Err(Refusal::BadMagic(magic));
        }
        let version = field(header::VERSION)?;
        if version != VERSION {
            return Err(Refusal::BadVersion(version));
        }
        // The checksum first: any damage to the bytes it covers is refused as such.
        let len = field(header::LENGTH)? as usize;
        if len < HEADER_SIZE || len > block.len() {
            return Err(Refusal::Truncated);
        }
        let bytes = &block[..len];
        if checksum(bytes) != field(header::CHECKSUM)? {
            return Err(Refusal::BadChecksum);
        }
        let count = field(header::COUNT)?;
        if count as usize > MAX_PROGRAMS {
            return Err(Refusal::TooManyPrograms(count));
        }
        let count = count as usize;
        if len < table_end(count) {
            return Err(Refusal::Truncated);
        }
        let store = Self { bytes, count };
        for index in 0..count {
            let (name, _) = store.entry(index)?;
            if (0..index).any(|earlier| store.entry(earlier).is_ok_and(|(n, _)| n == name)) {
                return Err(Refusal::DuplicateName { index });
            }
        }
        Ok(store)
    }

    /// Entry `index`, checked.
    fn entry(&self, index: usize) -> Result<(&'a str, &'a [u8]), Refusal> {
        let bytes: &'a [u8] = self.bytes;
        let at = HEADER_SIZE + index * ENTRY_SIZE;
        let field = &bytes[at + entry::NAME..at + entry::NAME + NAME_SIZE];
        let end = field.iter().position(|&b| b == 0).unwrap_or(NAME_SIZE);
        let name = core::str::from_utf8(&field[..end]).map_err(|_| Refusal::BadName { index })?;
        if name.is_empty() || field[end..].iter().any(|&b| b != 0) {
            return Err(Refusal::BadName { index });
        }
        let offset = word(bytes, at + entry::OFFSET).ok_or(Refusal::Truncated)? as usize;
        let length = word(bytes, at + entry::LENGTH).ok_or(Refusal::Truncated)? as usize;
        if offset < table_end(self.count) || offset.checked_add(length).is_none_or(|end| end > bytes.len()) {
            return Err(Refusal::OutOfBounds { index });
        }
        if !offset.is_multiple_of(ALIGN) {
            return Err(Refusal::Misaligned { index });
        }
        Ok((name, &bytes[offset..offset + length]))
    }

    /// How many programs it holds.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Its total length in bytes.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether it holds no program.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Every program, (name, file), in table order.
    pub fn programs(&self) -> impl Iterator<Item = (&'a str, &'a [u8])> + use<'a> {
        let store = *self;
        // `parse` checked every entry: none is skipped here.
        (0..self.count).filter_map(move |index| store.entry(index).ok())
    }

    /// The file of the program called `name`.
    pub fn find(&self, name: &str) -> Option<&'a [u8]> {
        self.programs().find(|(n, _)| *n == name).map(|(_, file)| file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::String;
    use std::vec;
    use std::vec::Vec;

    /// A buffer whose usable part starts at a multiple of [`ALIGN`], as the store's region does.
    struct Aligned {
        buf: Vec<u8>,
        start: usize,
    }

    impl Aligned {
        fn new(len: usize) -> Self {
            let buf = vec![0u8; len + ALIGN];
            let start = buf.as_ptr().align_offset(ALIGN);
            Self { buf, start }
        }

        fn bytes(&mut self) -> &mut [u8] {
            let len = self.buf.len() - ALIGN;
            &mut self.buf[self.start..self.start + len]
        }
    }

    const FILES: [(&str, &[u8]); 3] = [("hello", b"\x7fELF hello"), ("a", b""), ("alloc-free", &[0xa5; 100])];

    fn built(files: &[(&str, &[u8])]) -> Aligned {
        let mut block = Aligned::new(size(files));
        let len = write(files, block.bytes()).unwrap();
        assert_eq!(len, size(files));
        block
    }

    /// Recomputes the checksum after a test changed a field, so the check under test is the one
    /// that refuses.
    fn reseal(bytes: &mut [u8]) {
        let len = word(bytes, header::LENGTH).unwrap() as usize;
        let sum = checksum(&bytes[..len]);
        put(bytes, header::CHECKSUM, sum);
    }

    fn entry_at(index: usize) -> usize {
        HEADER_SIZE + index * ENTRY_SIZE
    }

    #[test]
    fn round_trip() {
        let mut block = built(&FILES);
        let store = Store::parse(block.bytes()).unwrap();
        assert_eq!(store.count(), 3);
        assert_eq!(store.len(), size(&FILES));
        assert_eq!(store.programs().map(|(n, _)| n).collect::<Vec<_>>(), ["hello", "a", "alloc-free"]);
        for (name, file) in FILES {
            assert_eq!(store.find(name), Some(file), "{name}");
            assert!((store.find(name).unwrap().as_ptr() as usize).is_multiple_of(ALIGN), "{name} is aligned");
        }
        assert_eq!(store.find("hell"), None);
        assert_eq!(store.find(""), None);
    }

    #[test]
    fn round_trip_at_the_limits() {
        let long = "x".repeat(NAME_SIZE);
        let names: Vec<String> = (0..MAX_PROGRAMS).map(|i| format!("p{i}")).collect();
        let mut files: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), &b"12345"[..])).collect();
        files[0].0 = &long;
        let mut block = built(&files);
        let store = Store::parse(block.bytes()).unwrap();
        assert_eq!(store.count(), MAX_PROGRAMS);
        assert_eq!(store.find(&long), Some(&b"12345"[..]));
        assert_eq!(store.find("p255"), Some(&b"12345"[..]));
        let mut empty = built(&[]);
        let store = Store::parse(empty.bytes()).unwrap();
        assert!(store.is_empty() && store.len() == HEADER_SIZE && store.programs().next().is_none());
    }

    #[test]
    fn a_store_is_read_from_the_start_of_a_larger_region() {
        let mut region = Aligned::new(size(&FILES) + 4096);
        write(&FILES, region.bytes()).unwrap();
        region.bytes()[size(&FILES)..].fill(0xee);
        assert_eq!(Store::parse(region.bytes()).unwrap().find("hello"), Some(FILES[0].1));
    }

    #[test]
    fn refuses_a_foreign_block() {
        let mut block = built(&FILES);
        let bytes = block.bytes();
        assert_eq!(Store::parse(&bytes[..3]).unwrap_err(), Refusal::Truncated);
        bytes[0] ^= 1;
        assert_eq!(Store::parse(bytes).unwrap_err(), Refusal::BadMagic(MAGIC ^ 1));
        bytes[0] ^= 1;
        put(bytes, header::VERSION, 2);
        reseal(bytes);
        assert_eq!(Store::parse(bytes).unwrap_err(), Refusal::BadVersion(2));
    }

    #[test]
    fn refuses_a_truncated_store() {
        let mut block = built(&FILES);
        let bytes = block.bytes();
        for cut in 0..bytes.len() {
            assert_eq!(Store::parse(&bytes[..cut]).unwrap_err(), Refusal::Truncated, "cut at {cut}");
        }
        // A total length that ends inside the table, resealed: still truncated.
        put(bytes, header::LENGTH, (HEADER_SIZE + ENTRY_SIZE) as u32);
        reseal(bytes);
        assert_eq!(Store::parse(bytes).unwrap_err(), Refusal::Truncated);
    }

    #[test]
    fn refuses_a_corrupt_store() {
        let mut block = built(&FILES);
        let bytes = block.bytes();
        for at in [header::COUNT, header::RESERVED, entry_at(1) + entry::LENGTH, bytes.len() - 1] {
            bytes[at] ^= 0x10;
            assert_eq!(Store::parse(bytes).unwrap_err(), Refusal::BadChecksum, "byte {at}");
            bytes[at] ^= 0x10;
        }
        assert!(Store::parse(bytes).is_ok());
    }

    #[test]
    fn refuses_too_many_programs() {
        let mut block = built(&FILES);
        let bytes = block.bytes();
        put(bytes, header::COUNT, MAX_PROGRAMS as u32 + 1);
        reseal(bytes);
        assert_eq!(Store::parse(bytes).unwrap_err(), Refusal::TooManyPrograms(MAX_PROGRAMS as u32 + 1));
    }

    #[test]
    fn refuses_an_entry_out_of_bounds_or_over_the_table() {
        let mut block = built(&FILES);
        let bytes = block.bytes();
        let len = bytes.len() as u32;
        let at = entry_at(2);
        for (offset, length) in [(len - 96, 100), (len, 1), (u32::MAX - 7, 16), (entry_at(2) as u32, 8), (0, 8)] {
            let mut copy = bytes.to_vec();
            put(&mut copy, at + entry::OFFSET, offset);
            put(&mut copy, at + entry::LENGTH, length);
            let mut region = Aligned::new(copy.len());
            region.bytes().copy_from_slice(&copy);
            reseal(region.bytes());
            assert_eq!(
                Store::parse(region.bytes()).unwrap_err(),
                Refusal::OutOfBounds { index: 2 },
                "{offset}+{length}"
            );
        }
        put(bytes, at + entry::OFFSET, word(bytes, at + entry::OFFSET).unwrap() + 4);
        put(bytes, at + entry::LENGTH, 4);
        reseal(bytes);
        assert_eq!(Store::parse(bytes).unwrap_err(), Refusal::Misaligned { index: 2 });
    }

    #[test]
    fn refuses_bad_and_duplicate_names() {
        let cases: [(&[u8], Refusal); 4] = [
            (b"\xffbad", Refusal::BadName { index: 1 }),
            (b"a\0b", Refusal::BadName { index: 1 }),
            (b"", Refusal::BadName { index: 1 }),
            (b"hello", Refusal::DuplicateName { index: 1 }),
        ];
        for (name, refusal) in cases {
            let mut block = built(&FILES);
            let bytes = block.bytes();
            let field = entry_at(1) + entry::NAME;
            bytes[field..field + NAME_SIZE].fill(0);
            bytes[field..field + name.len()].copy_from_slice(name);
            reseal(bytes);
            assert_eq!(Store::parse(bytes).unwrap_err(), refusal, "{name:?}");
        }
    }

    #[test]
    fn refuses_a_misplaced_block() {
        let mut region = Aligned::new(size(&FILES) + ALIGN);
        let bytes = region.bytes();
        write(&FILES, &mut bytes[1..]).unwrap();
        assert_eq!(Store::parse(&bytes[1..]).unwrap_err(), Refusal::UnalignedBase);
    }

    #[test]
    fn the_writer_refuses_what_a_reader_would() {
        let mut out = vec![0u8; 4096];
        let long = "x".repeat(NAME_SIZE + 1);
        for (files, error) in [
            (vec![("ok", &b""[..]), ("", &b""[..])], BuildError::BadName { index: 1 }),
            (vec![(long.as_str(), &b""[..])], BuildError::BadName { index: 0 }),
            (vec![("a\0b", &b""[..])], BuildError::BadName { index: 0 }),
            (vec![("a", &b""[..]), ("b", &b""[..]), ("a", &b""[..])], BuildError::DuplicateName { index: 2 }),
            (vec![("big", &[0u8; 4096][..])], BuildError::TooLarge { needed: table_end(1) + 4096 }),
        ] {
            assert_eq!(write(&files, &mut out), Err(error), "{files:?}");
        }
        let many = vec![("p", &b""[..]); MAX_PROGRAMS + 1];
        assert_eq!(write(&many, &mut out), Err(BuildError::TooManyPrograms(MAX_PROGRAMS + 1)));
    }

    #[test]
    fn the_doc_tables_are_the_layout() {
        const DOC: &str = include_str!("../../docs/hw/program-store.md");
        let rows = |rows: &[(&str, usize)]| rows.iter().map(|(n, o)| (String::from(*n), *o)).collect::<Vec<_>>();
        let header = [
            ("magic", header::MAGIC),
            ("checksum", header::CHECKSUM),
            ("version", header::VERSION),
            ("count", header::COUNT),
            ("length", header::LENGTH),
            ("reserved", header::RESERVED),
        ];
        assert_eq!(hal::doc_table(DOC, "Header"), rows(&header));
        let entry = [("name", entry::NAME), ("offset", entry::OFFSET), ("length", entry::LENGTH)];
        assert_eq!(hal::doc_table(DOC, "Entry"), rows(&entry));
        for fact in [
            format!("magic `{MAGIC:#010x}`"),
            format!("version {VERSION}"),
            format!("{HEADER_SIZE} bytes"),
            format!("{ENTRY_SIZE} bytes"),
            format!("at most {NAME_SIZE} bytes"),
            format!("multiple of {ALIGN}"),
            format!("at most {MAX_PROGRAMS} programs"),
        ] {
            assert!(DOC.contains(&fact), "docs/hw/program-store.md does not say {fact:?}");
        }
    }
}
