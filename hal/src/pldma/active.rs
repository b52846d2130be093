//! Active Access in the PLDMA (`docs/hw/active-access.md`): the active page table (APT), the
//! access-log table, the log header in memory and the log entry the engine appends. The
//! engine's model and the kernel's driver both take every offset and field from here.

use tock_registers::{
    LocalRegisterCopy, register_structs,
    registers::{ReadOnly, ReadWrite},
};

use super::Pd;

/// IUIDs per node: logs 0..16.
pub const IUIDS: usize = 16;
/// Entries of the access-log table: the 16 IUID logs, then the kernel fault log.
pub const LOGS: usize = IUIDS + 1;
/// The kernel fault log's index in the table.
pub const KERNEL_LOG: usize = IUIDS;
/// APT sets; set = VA[17:12].
pub const APT_SETS: usize = 64;
/// APT ways per set.
pub const APT_WAYS: usize = 4;
/// APT entries.
pub const APT_ENTRIES: usize = APT_SETS * APT_WAYS;
/// A log granule: 32 bytes.
pub const GRANULE: u64 = 32;
/// Largest SIZE_LOG2 of a ring: 512 granules, 16 KiB.
pub const MAX_SIZE_LOG2: u32 = 9;
/// Largest entry: the header and 256 bytes of data.
pub const MAX_ENTRY_GRANULES: u32 = 9;

pub use fields::*;

#[allow(missing_docs)]
mod fields {
    use tock_registers::register_bitfields;

    register_bitfields! [u32,
        /// A log's `ctrl`.
        pub LOG_CTRL [
            /// 1: the log takes entries.
            VALID OFFSET(0) NUMBITS(1) [],
            /// 1: an entry appended sets the log's bit of `appended` (the `ACTIVE_LOG` cause).
            NOTIFY OFFSET(1) NUMBITS(1) [],
            /// The owner's PD: only APT entries of this PD log here.
            PD OFFSET(4) NUMBITS(4) [],
            /// The ring holds 2^SIZE_LOG2 granules (1..=9).
            SIZE_LOG2 OFFSET(8) NUMBITS(5) []
        ],
        /// An APT entry's `attr`.
        pub APT_ATTR [
            /// A remote put is written to memory (0: an active put).
            W OFFSET(0) NUMBITS(1) [],
            /// A remote put is logged.
            WL OFFSET(1) NUMBITS(1) [],
            /// A remote put is logged with its data.
            WLD OFFSET(2) NUMBITS(1) [],
            /// A remote get is logged.
            RL OFFSET(3) NUMBITS(1) [],
            /// A remote get is logged with the data served.
            RLD OFFSET(4) NUMBITS(1) [],
            /// 1: entries go to log IUID; 0: to the kernel fault log.
            E OFFSET(5) NUMBITS(1) [],
            /// The page is IUID's flushing page.
            FLUSH OFFSET(6) NUMBITS(1) [],
            /// The log.
            IUID OFFSET(8) NUMBITS(4) []
        ]
    ];

    register_bitfields! [u64,
        /// An APT entry's `tag`.
        pub APT_TAG [
            /// 1: the entry is in use.
            VALID OFFSET(0) NUMBITS(1) [],
            /// The PD whose page it is.
            PD OFFSET(4) NUMBITS(4) [],
            /// VA[47:12] of the page.
            PAGE OFFSET(12) NUMBITS(36) []
        ]
    ];
}

register_structs! {
    /// One entry of the access-log table.
    pub LogRegisters {
        /// VALID, PD, SIZE_LOG2; VALID = 1 resets `produced`.
        (0x00 => pub ctrl: ReadWrite<u32, LOG_CTRL::Register>),
        /// Granules ever produced (wraps).
        (0x04 => pub produced: ReadOnly<u32>),
        /// PA of the ring; ignored while VALID.
        (0x08 => pub base: ReadWrite<u64>),
        /// PA of the header; ignored while VALID.
        (0x10 => pub header: ReadWrite<u64>),
        /// Entries appended (wraps).
        (0x18 => pub entries: ReadOnly<u32>),
        /// Accesses refused for want of room (wraps).
        (0x1c => pub full: ReadOnly<u32>),
        (0x20 => @END),
    }
}

register_structs! {
    /// The `active` page: the access-log table.
    pub ActiveRegisters {
        /// Logs 0..16 (IUIDs), then the kernel fault log.
        (0x000 => pub logs: [LogRegisters; LOGS]),
        (0x220 => _reserved0),
        /// Accesses to marked pages not served for want of log room (wraps).
        (0x300 => pub apt_refused: ReadOnly<u32>),
        /// Bit `i`: an entry was appended to log `i` while its `ctrl.NOTIFY` was set; W1C.
        (0x304 => pub appended: ReadWrite<u32>),
        (0x308 => _reserved1),
        (0x1000 => @END),
    }
}

register_structs! {
    /// One APT entry.
    pub AptEntry {
        /// VALID, PD, PAGE.
        (0x0 => pub tag: ReadWrite<u64, APT_TAG::Register>),
        /// What the engine does on an access.
        (0x8 => pub attr: ReadWrite<u32, APT_ATTR::Register>),
        /// 0.
        (0xc => pub reserved: ReadOnly<u32>),
        (0x10 => @END),
    }
}

register_structs! {
    /// The `apt` page: entry `set * 4 + way`.
    pub AptRegisters {
        /// The entries.
        (0x000 => pub entries: [AptEntry; APT_ENTRIES]),
        (0x1000 => @END),
    }
}

/// The APT set of `va`: VA[17:12].
pub const fn apt_set(va: u64) -> usize {
    ((va >> 12) as usize) % APT_SETS
}

/// The `tag` value of `pd`'s page at `va` (valid).
pub const fn apt_tag(pd: Pd, va: u64) -> u64 {
    (va & 0x0000_ffff_ffff_f000) | (pd.raw() as u64) << 4 | 1
}

/// What an APT entry asks of the engine (`attr`), decoded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Attr {
    /// A remote put reaches memory.
    pub w: bool,
    /// Puts are logged.
    pub wl: bool,
    /// Puts are logged with their data.
    pub wld: bool,
    /// Gets are logged.
    pub rl: bool,
    /// Gets are logged with the data served.
    pub rld: bool,
    /// Entries go to the IUID's log (else the kernel's).
    pub e: bool,
    /// The IUID's flushing page.
    pub flush: bool,
    /// The log.
    pub iuid: u8,
}

impl Attr {
    /// Decodes an `attr` register value.
    pub fn decode(raw: u32) -> Self {
        let r = LocalRegisterCopy::<u32, APT_ATTR::Register>::new(raw);
        Self {
            w: r.is_set(APT_ATTR::W),
            wl: r.is_set(APT_ATTR::WL),
            wld: r.is_set(APT_ATTR::WLD),
            rl: r.is_set(APT_ATTR::RL),
            rld: r.is_set(APT_ATTR::RLD),
            e: r.is_set(APT_ATTR::E),
            flush: r.is_set(APT_ATTR::FLUSH),
            iuid: r.read(APT_ATTR::IUID) as u8,
        }
    }

    /// The `attr` register value.
    pub fn encode(self) -> u32 {
        let mut r = LocalRegisterCopy::<u32, APT_ATTR::Register>::new(0);
        r.modify(
            APT_ATTR::W.val(self.w.into())
                + APT_ATTR::WL.val(self.wl.into())
                + APT_ATTR::WLD.val(self.wld.into())
                + APT_ATTR::RL.val(self.rl.into())
                + APT_ATTR::RLD.val(self.rld.into())
                + APT_ATTR::E.val(self.e.into())
                + APT_ATTR::FLUSH.val(self.flush.into())
                + APT_ATTR::IUID.val(u32::from(self.iuid) & 0xf),
        );
        r.get()
    }

    /// A put is logged: WL, WLD, or W = 0 (a write not done is always logged).
    pub fn logs_put(self) -> bool {
        self.wl || self.wld || !self.w
    }

    /// A put's entry carries its data.
    pub fn put_data(self) -> bool {
        self.wld
    }

    /// A get is logged.
    pub fn logs_get(self) -> bool {
        self.rl || self.rld
    }
}

/// A log's `ctrl`, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogCtrl {
    /// The log takes entries.
    pub valid: bool,
    /// Appends set the log's bit of `appended`, which raises the `ACTIVE_LOG` interrupt.
    pub notify: bool,
    /// The owner's PD.
    pub pd: u8,
    /// log2 of the ring's granules.
    pub size_log2: u32,
}

impl LogCtrl {
    /// Decodes; a SIZE_LOG2 outside 1..=9 makes the log invalid.
    pub fn decode(raw: u32) -> Self {
        let r = LocalRegisterCopy::<u32, LOG_CTRL::Register>::new(raw);
        let size_log2 = r.read(LOG_CTRL::SIZE_LOG2);
        let valid = r.is_set(LOG_CTRL::VALID) && (1..=MAX_SIZE_LOG2).contains(&size_log2);
        Self { valid, notify: r.is_set(LOG_CTRL::NOTIFY), pd: r.read(LOG_CTRL::PD) as u8, size_log2 }
    }

    /// The register value.
    pub fn encode(self) -> u32 {
        let mut r = LocalRegisterCopy::<u32, LOG_CTRL::Register>::new(0);
        r.modify(
            LOG_CTRL::VALID.val(self.valid.into())
                + LOG_CTRL::NOTIFY.val(self.notify.into())
                + LOG_CTRL::PD.val(u32::from(self.pd) & 0xf)
                + LOG_CTRL::SIZE_LOG2.val(self.size_log2 & 0x1f),
        );
        r.get()
    }

    /// Granules of the ring.
    pub fn granules(self) -> u32 {
        1 << self.size_log2
    }
}

/// Offsets of the log header's fields (in the header page).
pub mod header {
    /// `produced`: the engine's.
    pub const PRODUCED: u64 = 0x00;
    /// `consumed`: the owner's.
    pub const CONSUMED: u64 = 0x40;
    /// `full`: the engine's copy of the register.
    pub const FULL: u64 = 0x80;
}

/// Where an entry of `granules` goes when `produced` granules were produced and `consumed`
/// consumed, in a ring of `size` granules: the pad before it (granules to the ring's end, 0 if
/// it fits), or `None` if there is no room, or `consumed` is one no correct consumer writes.
pub fn place(produced: u32, consumed: u32, size: u32, granules: u32) -> Option<u32> {
    let used = produced.wrapping_sub(consumed);
    if used > size || granules == 0 || granules > size {
        return None;
    }
    let pos = produced % size;
    let pad = if pos + granules > size { size - pos } else { 0 };
    (used + pad + granules <= size).then_some(pad)
}

/// Who asks for a flush: the requesting node and the name of its read's block, (tid,
/// first_seq), which every attempt of that read carries and a new read does not
/// (`docs/hw/pldma.md`, the block table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flusher {
    /// The node that reads the flushing page.
    pub node: u16,
    /// The read's transaction id.
    pub tid: u16,
    /// The seq of the read's first attempt.
    pub first_seq: u16,
}

/// A log's flush slot (`docs/hw/active-access.md`, "Flush"): the flush that holds it with its
/// point (`produced` when it took the slot), and the holder a takeover released, whose point
/// had been consumed. The engine keeps one per log.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlushSlot {
    holder: Option<(Flusher, u32)>,
    released: Option<Flusher>,
}

impl FlushSlot {
    /// An attempt of `who`'s flush read reaches a log of `size` granules that has produced
    /// `produced`, of which its header says `consumed`: whether the read is served now (else it
    /// is refused, and its initiator asks again). Served only once every entry appended before
    /// the flush first arrived has been consumed:
    ///
    /// - `consumed` more than `produced` or more than a ring behind (no correct consumer's):
    ///   refused, the slot unchanged;
    /// - the released holder: served (its point was consumed when it was released);
    /// - the holder: served once `consumed` has reached its point, which frees the slot;
    /// - anyone, when the log is drained: served;
    /// - the slot empty, or its holder's point consumed (served, or gone): the flush takes it
    ///   with `produced` as its point (a holder taken over is released) and waits;
    /// - else (another's point not yet consumed): refused, nothing recorded.
    pub fn ask(&mut self, who: Flusher, produced: u32, consumed: u32, size: u32) -> bool {
        let behind = produced.wrapping_sub(consumed);
        if behind > size {
            return false;
        }
        // `consumed` lies in [point, produced] (wrapping): everything before the point is taken.
        let reached = |point: u32| consumed.wrapping_sub(point) <= produced.wrapping_sub(point);
        if self.released == Some(who) {
            self.released = None;
            return true;
        }
        match self.holder {
            Some((holder, point)) if holder == who => {
                let served = reached(point);
                if served {
                    self.holder = None;
                }
                return served;
            }
            _ if behind == 0 => return true,
            Some((_, point)) if !reached(point) => return false,
            Some((holder, _)) => self.released = Some(holder),
            None => {}
        }
        self.holder = Some((who, produced));
        false
    }
}

/// Granules of an entry carrying `data` bytes (0: metadata only).
pub const fn entry_granules(data: usize) -> u32 {
    1 + data.div_ceil(GRANULE as usize) as u32
}

/// Entry kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    /// A remote put.
    Put = 1,
    /// A remote get.
    Get = 2,
    /// Skip `granules` (to the ring's end).
    Pad = 3,
}

/// `flags` bit: the data follows the header.
pub const FLAG_DATA: u8 = 1;
/// `flags` bit: the put reached memory.
pub const FLAG_WRITTEN: u8 = 2;

/// A log entry's 32-byte header (`docs/hw/active-access.md`, "Log entry header").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogEntry {
    /// What it records.
    pub kind: EntryKind,
    /// `FLAG_DATA`, `FLAG_WRITTEN`.
    pub flags: u8,
    /// The remote node.
    pub node: u16,
    /// The access's PD.
    pub pd: u16,
    /// The page's IUID.
    pub iuid: u8,
    /// Granules, this one included.
    pub granules: u8,
    /// Bytes accessed.
    pub len: u16,
    /// The block's tid.
    pub tid: u16,
    /// The block's first seq.
    pub first_seq: u16,
    /// The packet's index in its block.
    pub index: u8,
    /// The VA of the first byte, at the log's node.
    pub va: u64,
    /// The log's `entries` count when appended.
    pub serial: u32,
}

/// Field offsets of [`LogEntry`].
pub mod entry {
    /// `kind`, u8.
    pub const KIND: usize = 0x00;
    /// `flags`, u8.
    pub const FLAGS: usize = 0x01;
    /// `node`, u16.
    pub const NODE: usize = 0x02;
    /// `pd`, u16.
    pub const PD: usize = 0x04;
    /// `iuid`, u8.
    pub const IUID: usize = 0x06;
    /// `granules`, u8.
    pub const GRANULES: usize = 0x07;
    /// `len`, u16.
    pub const LEN: usize = 0x08;
    /// `tid`, u16.
    pub const TID: usize = 0x0a;
    /// `first_seq`, u16.
    pub const FIRST_SEQ: usize = 0x0c;
    /// `index`, u8.
    pub const INDEX: usize = 0x0e;
    /// `reserved0`, u8.
    pub const RESERVED0: usize = 0x0f;
    /// `va`, u64.
    pub const VA: usize = 0x10;
    /// `serial`, u32.
    pub const SERIAL: usize = 0x18;
    /// `reserved1`, u32.
    pub const RESERVED1: usize = 0x1c;
}

/// Why a header does not decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryError {
    /// `kind` is not 1, 2 or 3.
    Kind(u8),
    /// `granules` is 0, or does not fit `len` and `flags`.
    Granules,
    /// A reserved byte is not 0, or `len` is not 1..=256.
    Field,
}

impl LogEntry {
    /// A pad of `granules`.
    pub const fn pad(granules: u8) -> Self {
        Self {
            kind: EntryKind::Pad,
            flags: 0,
            node: 0,
            pd: 0,
            iuid: 0,
            granules,
            len: 0,
            tid: 0,
            first_seq: 0,
            index: 0,
            va: 0,
            serial: 0,
        }
    }

    /// The 32 bytes.
    pub fn encode(&self) -> [u8; 32] {
        let mut b = [0u8; 32];
        b[entry::KIND] = self.kind as u8;
        b[entry::FLAGS] = self.flags;
        b[entry::NODE..entry::NODE + 2].copy_from_slice(&self.node.to_le_bytes());
        b[entry::PD..entry::PD + 2].copy_from_slice(&self.pd.to_le_bytes());
        b[entry::IUID] = self.iuid;
        b[entry::GRANULES] = self.granules;
        b[entry::LEN..entry::LEN + 2].copy_from_slice(&self.len.to_le_bytes());
        b[entry::TID..entry::TID + 2].copy_from_slice(&self.tid.to_le_bytes());
        b[entry::FIRST_SEQ..entry::FIRST_SEQ + 2].copy_from_slice(&self.first_seq.to_le_bytes());
        b[entry::INDEX] = self.index;
        b[entry::VA..entry::VA + 8].copy_from_slice(&self.va.to_le_bytes());
        b[entry::SERIAL..entry::SERIAL + 4].copy_from_slice(&self.serial.to_le_bytes());
        b
    }

    /// Decodes and checks a header (a consumer reads memory the engine wrote, but checks anyway:
    /// a bad entry must not make it read past the ring).
    pub fn decode(b: &[u8; 32]) -> Result<Self, EntryError> {
        let u16_at = |at: usize| u16::from_le_bytes([b[at], b[at + 1]]);
        let kind = match b[entry::KIND] {
            1 => EntryKind::Put,
            2 => EntryKind::Get,
            3 => EntryKind::Pad,
            k => return Err(EntryError::Kind(k)),
        };
        let mut va = [0u8; 8];
        va.copy_from_slice(&b[entry::VA..entry::VA + 8]);
        let mut serial = [0u8; 4];
        serial.copy_from_slice(&b[entry::SERIAL..entry::SERIAL + 4]);
        let e = Self {
            kind,
            flags: b[entry::FLAGS],
            node: u16_at(entry::NODE),
            pd: u16_at(entry::PD),
            iuid: b[entry::IUID],
            granules: b[entry::GRANULES],
            len: u16_at(entry::LEN),
            tid: u16_at(entry::TID),
            first_seq: u16_at(entry::FIRST_SEQ),
            index: b[entry::INDEX],
            va: u64::from_le_bytes(va),
            serial: u32::from_le_bytes(serial),
        };
        if e.granules == 0 {
            return Err(EntryError::Granules);
        }
        if kind == EntryKind::Pad {
            return Ok(e);
        }
        if b[entry::RESERVED0] != 0 || b[entry::RESERVED1..].iter().any(|&x| x != 0) || !(1..=256).contains(&e.len) {
            return Err(EntryError::Field);
        }
        let data = if e.flags & FLAG_DATA != 0 { usize::from(e.len) } else { 0 };
        if u32::from(e.granules) != entry_granules(data) {
            return Err(EntryError::Granules);
        }
        Ok(e)
    }

    /// Bytes of data after the header.
    pub fn data_len(&self) -> usize {
        if self.flags & FLAG_DATA != 0 { usize::from(self.len) } else { 0 }
    }
}

/// One logged access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry<'a> {
    /// The header (kind, node, VA, length, ...).
    pub header: LogEntry,
    /// The data, if the page logs it (`WLD`, `RLD`).
    pub data: &'a [u8],
}

impl Entry<'_> {
    /// A remote put.
    pub fn is_put(&self) -> bool {
        self.header.kind == EntryKind::Put
    }
    /// A remote get.
    pub fn is_get(&self) -> bool {
        self.header.kind == EntryKind::Get
    }
}

/// Why the ring cannot be read on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogError {
    /// An entry header does not decode, or does not fit the ring: the ring is not one the
    /// engine wrote (the process scribbled on it).
    Corrupt,
}

/// Reads entries between `consumed` and `produced` of a ring of `ring.len() / 32` granules.
pub struct Reader<'a> {
    ring: &'a [u8],
    produced: u32,
    consumed: u32,
}

impl<'a> Reader<'a> {
    /// Over `ring` (a power of two of granules) with the counts given.
    pub fn new(ring: &'a [u8], produced: u32, consumed: u32) -> Self {
        Self { ring, produced, consumed }
    }

    /// Granules consumed so far (to publish as the header's `consumed`).
    pub fn consumed(&self) -> u32 {
        self.consumed
    }

    /// The next entry (pads are skipped), or `None` when every produced entry was read.
    pub fn next_entry(&mut self) -> Result<Option<Entry<'a>>, LogError> {
        let size = (self.ring.len() as u64 / GRANULE) as u32;
        if size == 0 || !size.is_power_of_two() || self.produced.wrapping_sub(self.consumed) > size {
            return Err(LogError::Corrupt);
        }
        while self.consumed != self.produced {
            let at = (self.consumed % size) as usize * GRANULE as usize;
            let raw: &[u8; 32] = self.ring[at..at + 32].try_into().map_err(|_| LogError::Corrupt)?;
            let e = LogEntry::decode(raw).map_err(|_| LogError::Corrupt)?;
            let g = u32::from(e.granules);
            let to_end = size - self.consumed % size;
            if g > to_end || g > self.produced.wrapping_sub(self.consumed) {
                return Err(LogError::Corrupt);
            }
            self.consumed = self.consumed.wrapping_add(g);
            if e.kind == EntryKind::Pad {
                continue;
            }
            let data = &self.ring[at + 32..at + 32 + e.data_len()];
            return Ok(Some(Entry { header: e, data }));
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{doc_bits, doc_table};
    use core::mem::{offset_of, size_of};
    use std::string::String;
    use std::vec::Vec;

    const DOC: &str = include_str!("../../../docs/hw/active-access.md");

    fn named(rows: &[(&str, usize)]) -> Vec<(String, usize)> {
        rows.iter().map(|(n, o)| ((*n).into(), *o)).collect()
    }

    fn bits32<R: tock_registers::RegisterLongName>(f: tock_registers::fields::Field<u32, R>) -> (u32, u32) {
        (f.shift as u32 + f.mask.count_ones() - 1, f.shift as u32)
    }

    fn bits64<R: tock_registers::RegisterLongName>(f: tock_registers::fields::Field<u64, R>) -> (u32, u32) {
        (f.shift as u32 + f.mask.count_ones() - 1, f.shift as u32)
    }

    fn owned(rows: &[(&str, (u32, u32))]) -> Vec<(String, (u32, u32))> {
        rows.iter().map(|(n, b)| ((*n).into(), *b)).collect()
    }

    #[test]
    fn the_pages_match_the_doc() {
        use super::super::regs::PldmaRegisters;
        let block = [("active", offset_of!(PldmaRegisters, active)), ("apt", offset_of!(PldmaRegisters, apt))];
        assert_eq!(doc_table(DOC, "Block map additions"), named(&block));
        let active = [
            ("logs", offset_of!(ActiveRegisters, logs)),
            ("apt_refused", offset_of!(ActiveRegisters, apt_refused)),
            ("appended", offset_of!(ActiveRegisters, appended)),
        ];
        assert_eq!(doc_table(DOC, "Active page registers"), named(&active));
        let log = [
            ("ctrl", offset_of!(LogRegisters, ctrl)),
            ("produced", offset_of!(LogRegisters, produced)),
            ("base", offset_of!(LogRegisters, base)),
            ("header", offset_of!(LogRegisters, header)),
            ("entries", offset_of!(LogRegisters, entries)),
            ("full", offset_of!(LogRegisters, full)),
        ];
        assert_eq!(doc_table(DOC, "### Log registers"), named(&log));
        let apt = [
            ("tag", offset_of!(AptEntry, tag)),
            ("attr", offset_of!(AptEntry, attr)),
            ("reserved", offset_of!(AptEntry, reserved)),
        ];
        assert_eq!(doc_table(DOC, "The active page table"), named(&apt));
        assert_eq!(size_of::<LogRegisters>(), 0x20);
        assert_eq!(size_of::<AptEntry>(), 0x10);
        assert_eq!(size_of::<ActiveRegisters>(), 0x1000);
        assert_eq!(size_of::<AptRegisters>(), 0x1000);
        assert_eq!(offset_of!(ActiveRegisters, logs) + KERNEL_LOG * 0x20, 0x200);
    }

    #[test]
    fn bit_layouts_match_the_doc() {
        let ctrl = [
            ("VALID", bits32(LOG_CTRL::VALID)),
            ("NOTIFY", bits32(LOG_CTRL::NOTIFY)),
            ("PD", bits32(LOG_CTRL::PD)),
            ("SIZE_LOG2", bits32(LOG_CTRL::SIZE_LOG2)),
        ];
        assert_eq!(doc_bits(DOC, "Log `ctrl`"), owned(&ctrl));
        let tag = [("VALID", bits64(APT_TAG::VALID)), ("PD", bits64(APT_TAG::PD)), ("PAGE", bits64(APT_TAG::PAGE))];
        assert_eq!(doc_bits(DOC, "APT `tag`"), owned(&tag));
        let attr = [
            ("W", bits32(APT_ATTR::W)),
            ("WL", bits32(APT_ATTR::WL)),
            ("WLD", bits32(APT_ATTR::WLD)),
            ("RL", bits32(APT_ATTR::RL)),
            ("RLD", bits32(APT_ATTR::RLD)),
            ("E", bits32(APT_ATTR::E)),
            ("FLUSH", bits32(APT_ATTR::FLUSH)),
            ("IUID", bits32(APT_ATTR::IUID)),
        ];
        assert_eq!(doc_bits(DOC, "APT `attr`"), owned(&attr));
    }

    #[test]
    fn the_memory_layouts_match_the_doc() {
        let hdr = [
            ("produced", header::PRODUCED as usize),
            ("consumed", header::CONSUMED as usize),
            ("full", header::FULL as usize),
        ];
        assert_eq!(doc_table(DOC, "Log header"), named(&hdr));
        let e = [
            ("kind", entry::KIND),
            ("flags", entry::FLAGS),
            ("node", entry::NODE),
            ("pd", entry::PD),
            ("iuid", entry::IUID),
            ("granules", entry::GRANULES),
            ("len", entry::LEN),
            ("tid", entry::TID),
            ("first_seq", entry::FIRST_SEQ),
            ("index", entry::INDEX),
            ("reserved0", entry::RESERVED0),
            ("va", entry::VA),
            ("serial", entry::SERIAL),
            ("reserved1", entry::RESERVED1),
        ];
        assert_eq!(doc_table(DOC, "Log entry header"), named(&e));
    }

    #[test]
    fn attrs_and_ctrl_round_trip() {
        let a = Attr { w: false, wl: true, wld: true, rl: false, rld: true, e: true, flush: false, iuid: 9 };
        assert_eq!(Attr::decode(a.encode()), a);
        assert!(a.logs_put() && a.put_data() && a.logs_get());
        // W = 0 alone is still logged: a write that is not done is never lost silently.
        assert!(Attr { w: false, ..Attr::default() }.logs_put());
        assert!(!Attr { w: true, ..Attr::default() }.logs_put());
        let c = LogCtrl { valid: true, notify: true, pd: 3, size_log2: 9 };
        assert_eq!(LogCtrl::decode(c.encode()), c);
        assert!(!LogCtrl::decode(LogCtrl { size_log2: 10, ..c }.encode()).valid);
        assert!(!LogCtrl::decode(LogCtrl { size_log2: 0, ..c }.encode()).valid);
        let pd = Pd::new(5).unwrap();
        let t = tock_registers::LocalRegisterCopy::<u64, APT_TAG::Register>::new(apt_tag(pd, 0x1234_5678_9abc));
        assert_eq!((t.read(APT_TAG::VALID), t.read(APT_TAG::PD), t.read(APT_TAG::PAGE)), (1, 5, 0x0001_2345_6789));
        assert_eq!(apt_set(0x4_1000), 1);
        assert_eq!(apt_set(0x40_1000), 1);
        assert_eq!(apt_set(0x3f000), 63);
    }

    #[test]
    fn place_refuses_what_does_not_fit_and_forged_indices() {
        // Empty ring of 8: fits at 0.
        assert_eq!(place(0, 0, 8, 3), Some(0));
        // Position 6 of 8: a 3-granule entry needs a 2-granule pad first.
        assert_eq!(place(6, 6, 8, 3), Some(2));
        assert_eq!(place(6, 3, 8, 3), Some(2), "used 3 + pad 2 + 3 = 8");
        assert_eq!(place(6, 2, 8, 3), None, "used 4 + pad 2 + 3 > 8");
        assert_eq!(place(8, 0, 8, 1), None, "full");
        assert_eq!(place(7, 0, 8, 1), Some(0));
        // A consumed ahead of produced, or far behind: no correct consumer writes it: full.
        assert_eq!(place(4, 5, 8, 1), None);
        assert_eq!(place(100, 0, 8, 1), None);
        // Wrapping counters.
        assert_eq!(place(2, u32::MAX - 1, 8, 2), Some(0));
        assert_eq!(place(0, 0, 8, 9), None, "larger than the ring");
    }

    #[test]
    fn entries_round_trip_and_bad_ones_are_refused() {
        let e = LogEntry {
            kind: EntryKind::Put,
            flags: FLAG_DATA | FLAG_WRITTEN,
            node: 3,
            pd: 2,
            iuid: 7,
            granules: entry_granules(40) as u8,
            len: 40,
            tid: 0x3fff,
            first_seq: 12,
            index: 63,
            va: 0x12_3456_7000,
            serial: 99,
        };
        assert_eq!(e.granules, 3);
        assert_eq!(LogEntry::decode(&e.encode()), Ok(e));
        let mut bad = e.encode();
        bad[entry::KIND] = 9;
        assert_eq!(LogEntry::decode(&bad), Err(EntryError::Kind(9)));
        let mut bad = e.encode();
        bad[entry::GRANULES] = 2;
        assert_eq!(LogEntry::decode(&bad), Err(EntryError::Granules));
        let mut bad = e.encode();
        bad[entry::RESERVED1] = 1;
        assert_eq!(LogEntry::decode(&bad), Err(EntryError::Field));
        let pad = LogEntry::pad(5);
        assert_eq!(LogEntry::decode(&pad.encode()), Ok(pad));
        assert_eq!(LogEntry::decode(&[0; 32]), Err(EntryError::Kind(0)));
    }

    mod flush {
        use super::super::*;
        use std::vec::Vec;

        const A: Flusher = Flusher { node: 0, tid: 5, first_seq: 100 };
        const B: Flusher = Flusher { node: 2, tid: 5, first_seq: 100 };

        #[test]
        fn a_flush_is_served_once_its_point_is_consumed_though_the_log_never_drains() {
            let mut slot = FlushSlot::default();
            // Produced 10, consumed 4: A takes the slot at point 10 and waits.
            assert!(!slot.ask(A, 10, 4, 512));
            // Others keep appending; the owner consumes, one granule short of the point.
            assert!(!slot.ask(A, 30, 9, 512), "entry 9 was appended before the flush: not taken yet");
            assert!(slot.ask(A, 50, 10, 512), "everything before the point is taken");
            assert_eq!(slot, FlushSlot::default(), "served: the slot is free");
            // A new read of the same node (a new first_seq) is a new flush with a new point.
            let again = Flusher { first_seq: 101, ..A };
            assert!(!slot.ask(again, 50, 10, 512));
            assert!(!slot.ask(again, 60, 49, 512));
            assert!(slot.ask(again, 60, 50, 512));
        }

        #[test]
        fn a_second_flusher_waits_for_the_holder_s_point_then_takes_the_slot_over() {
            let mut slot = FlushSlot::default();
            assert!(!slot.ask(A, 10, 0, 512));
            assert!(!slot.ask(B, 20, 0, 512), "A's point is not consumed: B waits, unrecorded");
            assert!(!slot.ask(B, 20, 9, 512));
            // A's point consumed before A asks again: B takes the slot at point 20, A is released.
            assert!(!slot.ask(B, 20, 10, 512));
            assert!(slot.ask(A, 25, 10, 512), "the released holder is served");
            assert!(!slot.ask(A, 25, 10, 512), "once: asking again is a new flush, which waits for B");
            assert!(!slot.ask(B, 30, 19, 512));
            assert!(slot.ask(B, 30, 20, 512));
        }

        #[test]
        fn a_drained_log_serves_anyone_and_a_forged_consumed_no_one() {
            let mut slot = FlushSlot::default();
            assert!(!slot.ask(A, 10, 0, 512));
            assert!(slot.ask(B, 10, 10, 512), "drained");
            let held = slot;
            assert!(!slot.ask(B, 10, 11, 512), "consumed past produced");
            assert!(!slot.ask(B, 600, 10, 512), "consumed more than a ring behind");
            assert_eq!(slot, held, "a forged consumed changes nothing");
            assert!(slot.ask(A, 10, 10, 512));
            // Wrapping counters: the point just below the wrap, consumed past it.
            let mut slot = FlushSlot::default();
            assert!(!slot.ask(A, u32::MAX - 1, u32::MAX - 9, 512));
            assert!(!slot.ask(A, 20, u32::MAX - 2, 512));
            assert!(slot.ask(A, 20, u32::MAX - 1, 512));
            assert!(!slot.ask(B, 20, 3, 512));
            assert!(slot.ask(B, 40, 20, 512));
        }

        /// Random schedules of appends, consumption and flush attempts from four flushers:
        /// a flush is never served before the owner consumed every granule produced when it
        /// first asked, and each of them is served.
        #[test]
        fn no_flush_is_served_early_and_each_is_served() {
            let mut rng = 0x2545_f491_4f6c_dd1du64;
            let mut next = move || {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                rng
            };
            let size = 64u32;
            for round in 0..200u32 {
                let mut slot = FlushSlot::default();
                // Absolute counts, and their wrapped values as the engine keeps them.
                let start = u64::from(next() as u32);
                let (mut produced, mut consumed) = (start, start);
                let who: Vec<Flusher> = (0..4).map(|n| Flusher { node: n, tid: n, first_seq: round as u16 }).collect();
                let mut first_ask: [Option<u64>; 4] = [None; 4];
                let mut served = [false; 4];
                for _ in 0..4000 {
                    match next() % 4 {
                        0 if produced - consumed < u64::from(size) => produced += 1 + next() % 3,
                        1 if consumed < produced => consumed += 1 + next() % (produced - consumed).min(2),
                        _ => {
                            let i = (next() % 4) as usize;
                            if served[i] {
                                continue;
                            }
                            let at = *first_ask[i].get_or_insert(produced);
                            if slot.ask(who[i], produced as u32, consumed as u32, size) {
                                assert!(consumed >= at, "flusher {i} served at {consumed}, asked at {at}");
                                served[i] = true;
                            }
                        }
                    }
                    produced = produced.min(consumed + u64::from(size));
                }
                assert!(served.iter().all(|&s| s), "round {round}: every flusher was served: {served:?}");
            }
        }
    }

    mod reader {
        use super::super::*;
        use std::vec;
        use std::vec::Vec;

        fn put(ring: &mut [u8], at: u32, va: u64, data: &[u8]) -> u32 {
            let size = (ring.len() / 32) as u32;
            let g = entry_granules(data.len());
            let e = LogEntry {
                kind: EntryKind::Put,
                flags: if data.is_empty() { 0 } else { FLAG_DATA },
                node: 1,
                pd: 2,
                iuid: 0,
                granules: g as u8,
                len: if data.is_empty() { 8 } else { data.len() as u16 },
                tid: 0,
                first_seq: 0,
                index: 0,
                va,
                serial: 0,
            };
            let off = (at % size) as usize * 32;
            ring[off..off + 32].copy_from_slice(&e.encode());
            let end = (off + 32 + data.len()).min(ring.len());
            ring[off + 32..end].copy_from_slice(&data[..end - off - 32]);
            at + g
        }

        #[test]
        fn the_reader_takes_entries_skips_pads_and_stops_at_produced() {
            let mut ring = vec![0u8; 8 * 32];
            let mut p = put(&mut ring, 0, 0x1000, &[1; 40]);
            p = put(&mut ring, p, 0x2000, &[]);
            // A pad from granule 4 to the end, then an entry at the start (wrapped).
            let pad = LogEntry::pad(4).encode();
            ring[4 * 32..5 * 32].copy_from_slice(&pad);
            let mut r = Reader::new(&ring, p, 0);
            let got: Vec<_> =
                core::iter::from_fn(|| r.next_entry().unwrap()).map(|e| (e.header.va, e.data.len())).collect();
            assert_eq!(got, [(0x1000, 40), (0x2000, 0)]);
            assert_eq!(r.consumed(), 4);
            let end = put(&mut ring, 8, 0x3000, &[2; 8]);
            let mut r = Reader::new(&ring, end, 4);
            assert_eq!(r.next_entry().unwrap().map(|e| (e.header.va, e.data)), Some((0x3000, &[2u8; 8][..])));
            assert_eq!(r.next_entry(), Ok(None));
            assert_eq!(r.consumed(), end);
        }

        #[test]
        fn a_scribbled_ring_is_corrupt_not_a_panic() {
            let mut ring = vec![0u8; 8 * 32];
            put(&mut ring, 0, 0x1000, &[1; 40]);
            assert_eq!(Reader::new(&ring, 9, 0).next_entry(), Err(LogError::Corrupt), "more than the ring");
            assert_eq!(Reader::new(&ring, 3, 5).next_entry(), Err(LogError::Corrupt), "consumed past produced");
            assert_eq!(Reader::new(&ring, 2, 0).next_entry(), Err(LogError::Corrupt), "an entry past produced");
            ring[0] = 9;
            assert_eq!(Reader::new(&ring, 3, 0).next_entry(), Err(LogError::Corrupt), "not an entry");
            // An entry that would run past the ring's end.
            let mut ring = vec![0u8; 8 * 32];
            put(&mut ring, 6, 0x1000, &[1; 40]);
            assert_eq!(Reader::new(&ring, 9, 6).next_entry(), Err(LogError::Corrupt));
            assert_eq!(Reader::new(&ring[..100], 1, 0).next_entry(), Err(LogError::Corrupt), "not a power of two");
        }
    }
}
