//! Access counting with get counting (RL=1 without RLD: each remote get logged, without its
//! data), the plan and checks of `active-count`: an owner's [`PAGES`] pages of objects of
//! [`OBJECT`] bytes, read by its team's members; the owner counts the gets per page and per
//! object from its log ([`Counter`]), and the counts must be what the members read
//! ([`Tally::expected`]), exactly, however the links behave: a get retried after a lost packet
//! is logged again, and [`Seen`] counts it once.

use super::{Entry, PacketId, Seen, SeenFull};

/// Pages of counted objects.
pub const PAGES: usize = 8;
pub const PAGE: usize = 4096;
/// An object: one get of it is one packet (it lies in one 256 B window), so one entry.
pub const OBJECT: usize = 64;
/// Objects per page.
pub const OBJECTS: usize = PAGE / OBJECT;
/// Distinct gets a [`Counter`] tells apart (its [`Seen`] holds one less than this).
pub const MAX_GETS: usize = 1023;

/// The reads of reader `index` of the run `seed`: `reads` objects as (page, object), the page
/// drawn with weight page + 1 (so that every page's count differs from the others'), the
/// object uniformly.
pub fn reads(seed: u64, index: u8, reads: u16) -> impl Iterator<Item = (usize, usize)> {
    let mut rng = proto::rand::XorShift64::new(seed ^ (u64::from(index) + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let weights = (PAGES * (PAGES + 1) / 2) as u64;
    (0..reads).map(move |_| {
        let mut r = rng.below(weights) as usize;
        let mut page = 0;
        while r > page {
            r -= page + 1;
            page += 1;
        }
        (page, rng.below(OBJECTS as u64) as usize)
    })
}

/// Gets per page and per object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tally {
    pages: [u32; PAGES],
    objects: [[u16; OBJECTS]; PAGES],
}

impl Default for Tally {
    fn default() -> Self {
        Self::new()
    }
}

impl Tally {
    pub const fn new() -> Self {
        Self { pages: [0; PAGES], objects: [[0; OBJECTS]; PAGES] }
    }

    pub fn add(&mut self, page: usize, object: usize) {
        self.pages[page] += 1;
        self.objects[page][object] += 1;
    }

    /// What `readers` readers of `reads` gets each read in the run `seed`.
    pub fn expected(seed: u64, readers: u8, reads_each: u16) -> Self {
        let mut t = Self::new();
        for index in 0..readers {
            for (page, object) in reads(seed, index, reads_each) {
                t.add(page, object);
            }
        }
        t
    }

    /// Gets of page `page`.
    pub fn page(&self, page: usize) -> u32 {
        self.pages[page]
    }

    /// Gets in all.
    pub fn total(&self) -> u32 {
        self.pages.iter().sum()
    }
}

/// The owner's handler: counts each get of an object once, per page and per object.
pub struct Counter {
    base: u64,
    tally: Tally,
    seen: Seen<{ MAX_GETS + 1 }>,
    /// Entries that were a get logged again (a retry's copy).
    copies: u32,
    /// Entries that were not a get of one object (a put, a get with data, another length or
    /// place): none should come.
    stray: u32,
    full: bool,
}

impl Counter {
    /// For the objects at `base`.
    pub fn new(base: u64) -> Self {
        Self { base, tally: Tally::new(), seen: Seen::new(), copies: 0, stray: 0, full: false }
    }

    /// Takes one entry.
    pub fn take(&mut self, e: &Entry<'_>) {
        let h = &e.header;
        let offset = h.va.wrapping_sub(self.base) as usize;
        let object = e.is_get()
            && e.data.is_empty()
            && usize::from(h.len) == OBJECT
            && offset.is_multiple_of(OBJECT)
            && offset < PAGES * PAGE;
        if !object {
            self.stray += 1;
            return;
        }
        match self.seen.first(PacketId::of(h)) {
            Ok(true) => self.tally.add(offset / PAGE, offset % PAGE / OBJECT),
            Ok(false) => self.copies += 1,
            Err(SeenFull) => self.full = true,
        }
    }

    pub fn tally(&self) -> &Tally {
        &self.tally
    }

    pub fn copies(&self) -> u32 {
        self.copies
    }

    pub fn stray(&self) -> u32 {
        self.stray
    }

    /// More distinct gets came than it can tell apart (the count is then not exact).
    pub fn overflowed(&self) -> bool {
        self.full
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hal::pldma::active::{EntryKind, LogEntry};

    const BASE: u64 = 0x10_0000_0000;

    fn get(node: u16, tid: u16, page: usize, object: usize) -> LogEntry {
        let mut h = LogEntry::pad(1);
        h.kind = EntryKind::Get;
        h.node = node;
        h.tid = tid;
        h.first_seq = tid.wrapping_mul(3);
        h.va = BASE + (page * PAGE + object * OBJECT) as u64;
        h.len = OBJECT as u16;
        h
    }

    #[test]
    fn the_reads_follow_the_weights_and_every_page_count_differs() {
        let t = Tally::expected(4, 3, 1000);
        assert_eq!(t.total(), 3000);
        for p in 1..PAGES {
            assert!(t.page(p) > t.page(p - 1), "{:?}", t.pages);
        }
        assert_ne!(Tally::expected(4, 3, 100), Tally::expected(5, 3, 100));
        assert_eq!(reads(4, 1, 50).collect::<std::vec::Vec<_>>(), reads(4, 1, 50).collect::<std::vec::Vec<_>>());
    }

    #[test]
    fn the_log_counts_each_get_once_even_logged_twice() {
        let (seed, readers, each) = (7, 3u8, 120u16);
        let want = Tally::expected(seed, readers, each);
        let mut c = Counter::new(BASE);
        for index in 0..readers {
            for (k, (page, object)) in reads(seed, index, each).enumerate() {
                let h = get(1 + u16::from(index), k as u16, page, object);
                c.take(&Entry { header: h, data: &[] });
                // Every seventh get was retried: its packet logged again.
                if k % 7 == 0 {
                    c.take(&Entry { header: h, data: &[] });
                }
            }
        }
        assert_eq!(c.tally(), &want);
        assert_eq!((c.copies(), c.stray(), c.overflowed()), (3 * 18, 0, false));
    }

    #[test]
    fn a_count_off_by_one_or_anything_but_an_object_get_shows() {
        let mut c = Counter::new(BASE);
        c.take(&Entry { header: get(1, 1, 2, 3), data: &[] });
        let mut want = Tally::new();
        want.add(2, 3);
        assert_eq!(c.tally(), &want);
        want.add(2, 4);
        assert_ne!(c.tally(), &want, "one get fewer is another tally");
        let mut put = get(1, 2, 0, 0);
        put.kind = EntryKind::Put;
        let mut short = get(1, 3, 0, 0);
        short.len = 8;
        let outside = get(1, 4, PAGES, 0);
        let mut unaligned = get(1, 5, 0, 0);
        unaligned.va += 8;
        for h in [put, short, outside, unaligned] {
            c.take(&Entry { header: h, data: &[] });
        }
        c.take(&Entry { header: get(1, 6, 0, 0), data: &[0; 64] });
        assert_eq!(c.stray(), 5);
    }
}
