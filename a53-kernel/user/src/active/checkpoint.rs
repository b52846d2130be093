//! Incremental checkpointing with put logging (W=1, WL=1: the seed's dirty tracking), the plan
//! and checks of `active-checkpoint`: an owner's buffer of [`PAGES`] pages, written over
//! rounds by its team's members; after each round the owner takes the dirty pages from its log
//! ([`RoundLog`]), which must be exactly the pages the round wrote, and copies them into its
//! checkpoint. The owner and every writer derive a round's writes ([`Round`]) from the run's
//! seed and the round's number.

use super::{Entry, FLAG_WRITTEN, pattern};
use hal::pldma::PACKET_BYTES;

/// Pages of the owner's buffer.
pub const PAGES: usize = 32;
pub const PAGE: usize = 4096;
/// A page's writes go to its slots, at most one write each: writes never overlap, so the
/// order in which the writers' puts land does not change the bytes.
pub const SLOTS: usize = 3;
const SLOT_BYTES: usize = PAGE / SLOTS;
/// The longest write.
pub const MAX_WRITE: usize = 700;
/// Writes in a round at most.
pub const MAX_WRITES: usize = PAGES * SLOTS;
/// A put is logged once per packet: per 256 B window of its destination.
const WINDOW: usize = PACKET_BYTES as usize;
/// Windows a write touches at most.
const MAX_WINDOWS: usize = MAX_WRITE / WINDOW + 2;
/// A round's entries (one granule each) fit the log's ring (512 granules), so the owner may
/// leave them all there until the round ends.
const _: () = assert!(MAX_WRITES * MAX_WINDOWS <= 512 && MAX_WINDOWS <= 8);

/// A set of pages of the buffer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageSet(u64);

impl PageSet {
    pub const fn new() -> Self {
        Self(0)
    }

    /// Adds `page` (below 64; others are not kept, and false is returned).
    pub fn insert(&mut self, page: usize) -> bool {
        if page >= 64 {
            return false;
        }
        self.0 |= 1 << page;
        true
    }

    pub fn contains(&self, page: usize) -> bool {
        page < 64 && self.0 & 1 << page != 0
    }

    pub fn len(&self) -> usize {
        self.0.count_ones() as usize
    }

    pub fn is_empty(&self) -> bool {
        self.0 == 0
    }

    /// One bit per page.
    pub fn bits(&self) -> u64 {
        self.0
    }

    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        (0..64).filter(|&p| self.contains(p))
    }
}

/// One write of a round: `len` bytes at `offset` of page `page`, by writer `writer`; byte `i`
/// of it is `pattern(seed, i)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Write {
    pub page: u8,
    pub offset: u16,
    pub len: u16,
    pub writer: u8,
    pub seed: u64,
}

impl Write {
    /// Its first byte's offset in the buffer.
    pub fn start(&self) -> usize {
        usize::from(self.page) * PAGE + usize::from(self.offset)
    }

    /// The offset in the buffer after its last byte.
    pub fn end(&self) -> usize {
        self.start() + usize::from(self.len)
    }

    /// Byte `i` of its data.
    pub fn byte(&self, i: usize) -> u8 {
        pattern(self.seed, i)
    }

    /// The log entries it makes: one per 256 B window of its destination.
    pub fn packets(&self) -> usize {
        (self.end() - 1) / WINDOW - self.start() / WINDOW + 1
    }

    /// Which of its packets an entry of `len` bytes at `offset` of the buffer is, if it is one
    /// exactly (its whole window's share of the write).
    fn packet_at(&self, offset: usize, len: usize) -> Option<usize> {
        if offset < self.start() || offset >= self.end() {
            return None;
        }
        let window = offset / WINDOW;
        let from = self.start().max(window * WINDOW);
        let to = self.end().min((window + 1) * WINDOW);
        (offset == from && offset + len == to).then(|| window - self.start() / WINDOW)
    }
}

const NO_WRITE: Write = Write { page: 0, offset: 0, len: 0, writer: 0, seed: 0 };

/// The writes of one round.
#[derive(Clone)]
pub struct Round {
    writes: [Write; MAX_WRITES],
    len: usize,
}

impl Round {
    /// Round `round` of the run `seed`, for `writers` writers: each page is dirty with
    /// probability 1/3 (page `round % PAGES` always, so no round is empty); a dirty page's
    /// first slot is written, each other slot with probability 1/2, each write 1..=700 bytes
    /// at a random place in its slot, by a writer drawn at random (two writers may share a
    /// page).
    pub fn new(seed: u64, round: u32, writers: u8) -> Self {
        let mut rng = proto::rand::XorShift64::new(seed ^ (u64::from(round) + 1).wrapping_mul(0x2545_f491_4f6c_dd1d));
        let mut r = Self { writes: [NO_WRITE; MAX_WRITES], len: 0 };
        for page in 0..PAGES {
            let dirty = rng.below(3) == 0 || page == round as usize % PAGES;
            if !dirty {
                continue;
            }
            for slot in 0..SLOTS {
                if slot > 0 && rng.below(2) == 0 {
                    continue;
                }
                let at = rng.below(SLOT_BYTES as u64 - 1) as usize;
                let room = (SLOT_BYTES - at).min(MAX_WRITE);
                let len = 1 + rng.below(room as u64) as usize;
                r.writes[r.len] = Write {
                    page: page as u8,
                    offset: (slot * SLOT_BYTES + at) as u16,
                    len: len as u16,
                    writer: rng.below(u64::from(writers.max(1))) as u8,
                    seed: rng.next_u64(),
                };
                r.len += 1;
            }
        }
        r
    }

    pub fn writes(&self) -> &[Write] {
        &self.writes[..self.len]
    }

    /// The pages it writes.
    pub fn dirty(&self) -> PageSet {
        let mut set = PageSet::new();
        for w in self.writes() {
            set.insert(usize::from(w.page));
        }
        set
    }

    /// The log entries it makes.
    pub fn packets(&self) -> usize {
        self.writes().iter().map(Write::packets).sum()
    }

    /// Writes its bytes into `image`, a copy of the buffer: what the buffer holds after it.
    pub fn apply(&self, image: &mut [u8]) {
        for w in self.writes() {
            for (i, b) in image[w.start()..w.end()].iter_mut().enumerate() {
                *b = w.byte(i);
            }
        }
    }
}

/// How a round's log differed from the round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mismatch {
    /// An entry that is not one packet of one of the round's writes, or not a written put
    /// (a get, a put that did not reach memory, data logged).
    Stray { va: u64, len: u16 },
    /// A packet logged twice.
    Twice { va: u64, len: u16 },
    /// The dirty pages from the log are not the pages written (bits).
    Dirty { logged: u64, written: u64 },
    /// Packets of the round that were never logged.
    Missing { logged: usize, packets: usize },
}

/// What the owner's handler takes from its log during a round: the dirty pages, and which
/// packet of which write each entry was, so the check is exact.
pub struct RoundLog<'r> {
    round: &'r Round,
    base: u64,
    dirty: PageSet,
    /// Per write, the packets logged (bit k: its packet k).
    seen: [u8; MAX_WRITES],
    entries: usize,
    mismatch: Option<Mismatch>,
}

impl<'r> RoundLog<'r> {
    /// For `round` over the buffer at `base`.
    pub fn new(round: &'r Round, base: u64) -> Self {
        Self { round, base, dirty: PageSet::new(), seen: [0; MAX_WRITES], entries: 0, mismatch: None }
    }

    /// The handler: takes one entry.
    pub fn take(&mut self, e: &Entry<'_>) {
        let h = &e.header;
        self.entries += 1;
        let offset = h.va.wrapping_sub(self.base);
        let page = (offset / PAGE as u64) as usize;
        self.dirty.insert(page);
        let written = e.is_put() && h.flags & FLAG_WRITTEN != 0 && e.data.is_empty();
        let packet = (offset < (PAGES * PAGE) as u64)
            .then(|| {
                self.round
                    .writes()
                    .iter()
                    .enumerate()
                    .find_map(|(k, w)| w.packet_at(offset as usize, usize::from(h.len)).map(|p| (k, p)))
            })
            .flatten();
        match packet {
            Some((k, p)) if written => {
                if self.seen[k] & 1 << p != 0 {
                    self.mismatch.get_or_insert(Mismatch::Twice { va: h.va, len: h.len });
                }
                self.seen[k] |= 1 << p;
            }
            _ => {
                self.mismatch.get_or_insert(Mismatch::Stray { va: h.va, len: h.len });
            }
        }
    }

    /// The dirty pages the log named.
    pub fn dirty(&self) -> PageSet {
        self.dirty
    }

    /// Entries taken.
    pub fn entries(&self) -> usize {
        self.entries
    }

    /// Whether the log was exactly the round: every packet of every write once, nothing
    /// else, so the dirty pages are exactly the pages written.
    pub fn check(&self) -> Result<(), Mismatch> {
        if let Some(m) = self.mismatch {
            return Err(m);
        }
        let written = self.round.dirty();
        if self.dirty != written {
            return Err(Mismatch::Dirty { logged: self.dirty.bits(), written: written.bits() });
        }
        let complete = self.round.writes().iter().zip(&self.seen).all(|(w, &s)| s == ((1u16 << w.packets()) - 1) as u8);
        if !complete {
            return Err(Mismatch::Missing { logged: self.entries, packets: self.round.packets() });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hal::pldma::active::{EntryKind, LogEntry};
    use std::vec::Vec;

    const BASE: u64 = 0x10_0000_0000;

    /// The entries the engine logs for `round`: one per packet of every write.
    fn entries(round: &Round) -> Vec<LogEntry> {
        let mut out = Vec::new();
        for w in round.writes() {
            let mut at = w.start();
            while at < w.end() {
                let to = w.end().min((at / WINDOW + 1) * WINDOW);
                let mut h = LogEntry::pad(1);
                h.kind = EntryKind::Put;
                h.flags = FLAG_WRITTEN;
                h.va = BASE + at as u64;
                h.len = (to - at) as u16;
                out.push(h);
                at = to;
            }
        }
        out
    }

    fn log_of(round: &Round, hs: &[LogEntry]) -> Result<PageSet, Mismatch> {
        let mut log = RoundLog::new(round, BASE);
        for h in hs {
            log.take(&Entry { header: *h, data: &[] });
        }
        log.check().map(|()| log.dirty())
    }

    #[test]
    fn rounds_are_the_same_everywhere_never_empty_and_fit_the_ring() {
        for round in 0..200 {
            let r = Round::new(9, round, 3);
            assert_eq!(r.writes(), Round::new(9, round, 3).writes(), "the owner and the writers agree");
            assert!(!r.dirty().is_empty() && r.packets() <= 512);
            assert!(r.writes().iter().all(|w| w.len >= 1 && usize::from(w.len) <= MAX_WRITE && w.writer < 3));
            // No two writes overlap.
            let mut ws: Vec<_> = r.writes().to_vec();
            ws.sort_by_key(Write::start);
            assert!(ws.windows(2).all(|p| p[0].end() <= p[1].start()));
        }
        assert_ne!(Round::new(9, 0, 3).writes(), Round::new(9, 1, 3).writes());
        let sizes: Vec<usize> = (0..50).map(|k| Round::new(1, k, 2).dirty().len()).collect();
        assert!(sizes.iter().any(|&s| s > 4) && sizes.iter().any(|&s| s < PAGES), "{sizes:?}");
    }

    #[test]
    fn the_log_of_a_round_gives_exactly_its_pages_in_any_order() {
        let r = Round::new(5, 2, 3);
        let mut hs = entries(&r);
        assert_eq!(hs.len(), r.packets());
        hs.reverse();
        assert_eq!(log_of(&r, &hs), Ok(r.dirty()));
    }

    #[test]
    fn a_missing_twice_or_stray_entry_is_found() {
        let r = Round::new(5, 3, 2);
        let hs = entries(&r);
        let written = r.dirty().bits();
        // A write's last packet missing: its page may still be dirty, the check is not.
        assert!(matches!(log_of(&r, &hs[..hs.len() - 1]), Err(Mismatch::Missing { .. } | Mismatch::Dirty { .. })));
        let mut twice = hs.clone();
        twice.push(hs[0]);
        assert!(matches!(log_of(&r, &twice), Err(Mismatch::Twice { .. })));
        // A put to a page the round did not write.
        let clean = (0..PAGES).find(|&p| !r.dirty().contains(p)).unwrap();
        let mut stray = hs.clone();
        stray[0].va = BASE + (clean * PAGE) as u64;
        assert!(matches!(log_of(&r, &stray), Err(Mismatch::Stray { .. })));
        // A packet split otherwise, a get, a put that was not written.
        let mut split = hs.clone();
        split[0].len -= 1;
        if split[0].len > 0 {
            assert!(matches!(log_of(&r, &split), Err(Mismatch::Stray { .. })));
        }
        let mut get = hs.clone();
        get[0].kind = EntryKind::Get;
        assert!(matches!(log_of(&r, &get), Err(Mismatch::Stray { .. })));
        let mut unwritten = hs.clone();
        unwritten[0].flags = 0;
        assert!(matches!(log_of(&r, &unwritten), Err(Mismatch::Stray { .. })));
        assert_eq!(log_of(&r, &hs).map(|d| d.bits()), Ok(written));
    }

    #[test]
    fn applying_a_round_writes_its_bytes_and_nothing_else() {
        let r = Round::new(11, 0, 1);
        let mut image = std::vec![0u8; PAGES * PAGE];
        r.apply(&mut image);
        for w in r.writes() {
            assert!((0..usize::from(w.len)).all(|i| image[w.start() + i] == w.byte(i)));
        }
        for p in (0..PAGES).filter(|&p| !r.dirty().contains(p)) {
            assert!(image[p * PAGE..(p + 1) * PAGE].iter().all(|&b| b == 0));
        }
    }

    #[test]
    fn page_sets() {
        let mut s = PageSet::new();
        assert!(s.insert(0) && s.insert(63) && !s.insert(64));
        assert_eq!((s.len(), s.iter().collect::<Vec<_>>()), (2, std::vec![0, 63]));
        assert!(!s.contains(64) && !s.contains(1));
    }
}
