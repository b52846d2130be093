//! The pages an address space owns, by address: what `AddressSpace::page` answers and what
//! it frees. A page fault looks pages up and adds them (four for a PLDMA block), so both are
//! an index into a table rather than a search: the map keeps, for each 2 MiB of address space
//! that holds any page (the span of one level-3 page table), a table of 512 entries, each a
//! frame's address and the page's permissions packed in one word. Only finding the 2 MiB
//! table is a search, among the few a process has.

use super::PAGE_SIZE;
use super::user_space::UserPage;
use crate::elf::Permissions;
use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::vec;

/// Pages per table (2 MiB of address space).
const ENTRIES: usize = 512;
/// An entry's bits below the frame's address: the page is there, and what it permits.
const PRESENT: u64 = 1 << 0;
const READ: u64 = 1 << 1;
const WRITE: u64 = 1 << 2;
const EXECUTE: u64 = 1 << 3;

/// One 2 MiB span's pages: how many there are, and their entries (0: no page).
struct Span {
    pages: usize,
    entries: Box<[u64]>,
}

#[derive(Default)]
pub struct PageMap {
    spans: BTreeMap<u64, Span>,
}

/// The span of `va` and its entry's index there.
fn place(va: u64) -> (u64, usize) {
    let page = va / PAGE_SIZE;
    (page / ENTRIES as u64, (page % ENTRIES as u64) as usize)
}

fn pack(page: &UserPage) -> u64 {
    let p = page.permissions;
    let bit = |on: bool, b: u64| if on { b } else { 0 };
    page.pa | PRESENT | bit(p.read, READ) | bit(p.write, WRITE) | bit(p.execute, EXECUTE)
}

fn unpack(va: u64, entry: u64) -> Option<UserPage> {
    if entry & PRESENT == 0 {
        return None;
    }
    let permissions = Permissions { read: entry & READ != 0, write: entry & WRITE != 0, execute: entry & EXECUTE != 0 };
    Some(UserPage { va, pa: entry & !(PAGE_SIZE - 1), permissions })
}

impl PageMap {
    pub fn new() -> Self {
        Self::default()
    }

    /// The page at `va` (page aligned).
    pub fn get(&self, va: u64) -> Option<UserPage> {
        let (span, index) = place(va);
        unpack(va, self.spans.get(&span)?.entries[index])
    }

    /// Adds `page` (its `va` and `pa` page aligned), in place of any page at its address.
    pub fn insert(&mut self, page: UserPage) {
        self.insert_all(&[page]);
    }

    /// Adds `pages` as [`insert`](Self::insert) does, finding each span once for a run of
    /// pages in it (a block's).
    pub fn insert_all(&mut self, pages: &[UserPage]) {
        let mut rest = pages;
        while let Some(first) = rest.first() {
            let key = place(first.va).0;
            let span = self.spans.entry(key).or_insert_with(|| Span { pages: 0, entries: vec![0; ENTRIES].into() });
            let run = rest.iter().take_while(|p| place(p.va).0 == key).count();
            for page in &rest[..run] {
                let entry = &mut span.entries[place(page.va).1];
                if *entry & PRESENT == 0 {
                    span.pages += 1;
                }
                *entry = pack(page);
            }
            rest = &rest[run..];
        }
    }

    /// The page addresses of `[first, end)` (page aligned) with no page, in address order; the
    /// span of `first` is found once.
    pub fn absent(&self, first: u64, end: u64) -> impl Iterator<Item = u64> + '_ {
        let key = place(first).0;
        let span = self.spans.get(&key);
        (first..end).step_by(PAGE_SIZE as usize).filter(move |&va| {
            let (k, index) = place(va);
            match span {
                _ if k != key => self.get(va).is_none(),
                Some(s) => s.entries[index] & PRESENT == 0,
                None => true,
            }
        })
    }

    /// Takes the page at `va` (page aligned) out.
    pub fn remove(&mut self, va: u64) -> Option<UserPage> {
        let (key, index) = place(va);
        let span = self.spans.get_mut(&key)?;
        let page = unpack(va, core::mem::take(&mut span.entries[index]))?;
        span.pages -= 1;
        if span.pages == 0 {
            self.spans.remove(&key);
        }
        Some(page)
    }

    /// The pages of `[first, end)`, in address order.
    pub fn range(&self, first: u64, end: u64) -> impl Iterator<Item = UserPage> + '_ {
        let (from, to) = (place(first).0, place(end.saturating_sub(1)).0);
        self.spans
            .range(from..=to.max(from))
            .flat_map(|(&span, s)| {
                let base = span * ENTRIES as u64 * PAGE_SIZE;
                s.entries.iter().enumerate().filter_map(move |(i, &e)| unpack(base + i as u64 * PAGE_SIZE, e))
            })
            .filter(move |p| (first..end).contains(&p.va))
    }

    /// Every page, in address order.
    pub fn iter(&self) -> impl Iterator<Item = UserPage> + '_ {
        self.range(0, u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    const RW: Permissions = Permissions { read: true, write: true, execute: false };
    const RX: Permissions = Permissions { read: true, write: false, execute: true };

    fn page(va: u64, pa: u64, permissions: Permissions) -> UserPage {
        UserPage { va, pa, permissions }
    }

    #[test]
    fn pages_come_back_as_they_went_in() {
        let mut map = PageMap::new();
        let pages = [
            page(0x40_0000, 0x8000_0000, RX),
            page(0x40_1000, 0x1234_5000, RW),
            page(0x60_0000, 0x7fff_f000, Permissions { read: false, write: false, execute: false }),
            page(0x7f_ffff_f000, 0x1000, RW),
        ];
        for p in pages {
            map.insert(p);
        }
        for p in pages {
            assert_eq!(map.get(p.va), Some(p));
        }
        assert_eq!(map.get(0x40_2000), None);
        assert_eq!(map.get(0x20_0000), None, "a span with no table");
        assert_eq!(map.iter().collect::<Vec<_>>(), pages, "in address order");
        map.insert(page(0x40_1000, 0x5000, RX));
        assert_eq!(map.get(0x40_1000), Some(page(0x40_1000, 0x5000, RX)), "replaced");
        assert_eq!(map.iter().count(), 4);
    }

    #[test]
    fn runs_go_in_at_once_and_the_absent_pages_are_listed() {
        let mut map = PageMap::new();
        let end = 0x20_0000;
        let run: Vec<UserPage> =
            (0..4).map(|i| page(end - 2 * PAGE_SIZE + i * PAGE_SIZE, (i + 1) * PAGE_SIZE, RW)).collect();
        map.insert_all(&run);
        assert_eq!(map.iter().collect::<Vec<_>>(), run, "across two spans");
        map.insert_all(&run[1..2]);
        assert_eq!(map.iter().count(), 4, "counted once");
        let first = end - 4 * PAGE_SIZE;
        assert_eq!(
            map.absent(first, end + 4 * PAGE_SIZE).collect::<Vec<_>>(),
            [first, first + PAGE_SIZE, end + 2 * PAGE_SIZE, end + 3 * PAGE_SIZE]
        );
        assert_eq!(map.absent(0x100_0000, 0x100_0000 + 2 * PAGE_SIZE).count(), 2, "a span with no table");
        for p in &run {
            map.remove(p.va);
        }
        assert!(map.spans.is_empty(), "each span's count was right");
    }

    #[test]
    fn a_range_holds_only_its_pages_and_removal_empties_spans() {
        let mut map = PageMap::new();
        for i in 0..1030u64 {
            map.insert(page(0x20_0000 + i * PAGE_SIZE, (i + 1) * PAGE_SIZE, RW));
        }
        let (first, end) = (0x20_0000 + 510 * PAGE_SIZE, 0x20_0000 + 1025 * PAGE_SIZE);
        let got: Vec<u64> = map.range(first, end).map(|p| p.va).collect();
        assert_eq!(got, (510..1025).map(|i| 0x20_0000 + i * PAGE_SIZE).collect::<Vec<_>>(), "across three spans");
        assert_eq!(map.range(first, first).count(), 0);
        for i in 0..1030u64 {
            assert_eq!(map.remove(0x20_0000 + i * PAGE_SIZE).map(|p| p.pa), Some((i + 1) * PAGE_SIZE));
        }
        assert_eq!(map.remove(0x20_0000), None);
        assert!(map.spans.is_empty(), "empty spans are let go");
    }
}
