//! The atomic service's software MMU (seed §2.2.5, Fig. 10): a chained hash map from global page
//! to ⟨local frame, owning domain, sharing, allocation role⟩.
//!
//! Seed §2.2.5 gives the structure (buckets, chains through a "next translation pair" field) but
//! the table size exponent is unreadable and the hash function unspecified. Choice: the caller
//! picks 2^`bucket_bits` buckets and a fixed entry capacity; all memory is allocated once at
//! construction, so the table never grows and a full table is a typed error; the default hash
//! is Fibonacci hashing of the page number.

use alloc::vec::Vec;

use proto::gsas::{DomainId, GlobalAddress, GlobalPage, PAGE_SIZE};

/// A 4 KiB-aligned local physical frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Frame(u64);

impl Frame {
    pub const fn new(addr: u64) -> Option<Self> {
        if addr.is_multiple_of(PAGE_SIZE) { Some(Self(addr)) } else { None }
    }

    #[inline]
    pub const fn addr(self) -> u64 {
        self.0
    }
}

/// Who besides the owner may access a page: the wire's sharing mode.
pub use proto::gsas::Sharing;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    /// Writes and read-modify-writes (CAS, FAD, SWAP).
    Write,
}

/// The page's place in the allocation it came from (freeSharedPage frees whole allocations).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chunk {
    /// First page of an allocation of `pages` consecutive pages.
    Head {
        pages: u32,
    },
    Member,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageEntry {
    pub frame: Frame,
    pub owner: DomainId,
    pub sharing: Sharing,
    pub chunk: Chunk,
}

impl PageEntry {
    #[inline]
    pub fn permits(&self, who: DomainId, access: Access) -> bool {
        who == self.owner
            || match (self.sharing, access) {
                (Sharing::Shared, _) | (Sharing::ReadOnly, Access::Read) => true,
                (Sharing::ReadOnly, Access::Write) | (Sharing::Private, _) => false,
            }
    }
}

/// Picks a bucket among 2^`bits`.
pub trait PageHasher {
    fn bucket(&self, page: GlobalPage, bits: u32) -> usize;
}

#[derive(Clone, Copy, Debug, Default)]
pub struct FibonacciHasher;

impl PageHasher for FibonacciHasher {
    #[inline]
    fn bucket(&self, page: GlobalPage, bits: u32) -> usize {
        (page.raw().wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MmuError {
    /// `bucket_bits` not in 1..=MAX_BUCKET_BITS or capacity not in 1..=MAX_CAPACITY.
    InvalidConfig,
    /// Every entry is in use.
    Full,
    AlreadyMapped(GlobalPage),
    NotMapped(GlobalPage),
}

pub const MAX_BUCKET_BITS: u32 = 24;
pub const MAX_CAPACITY: usize = 1 << 24;
const NIL: u32 = u32::MAX;
/// The page of a slot that maps nothing: no global page number is this large.
const FREE: u64 = u64::MAX;

/// The table: `heads[bucket]` starts a chain of slots linked through `next`; a free slot is on
/// the free list (through `next` too) and has `pages[slot] == FREE`. The slots' pages, entries
/// and links are three arrays, so that the lookup the service makes for every request is a loop
/// of one load and one compare per slot of the chain (seed §2.2.5 walks the same chains).
#[derive(Debug)]
pub struct SoftMmu<H = FibonacciHasher> {
    bucket_bits: u32,
    heads: Vec<u32>,
    pages: Vec<u64>,
    entries: Vec<PageEntry>,
    next: Vec<u32>,
    free: u32,
    len: usize,
    hasher: H,
}

impl SoftMmu<FibonacciHasher> {
    pub fn new(bucket_bits: u32, capacity: usize) -> Result<Self, MmuError> {
        Self::with_hasher(bucket_bits, capacity, FibonacciHasher)
    }
}

impl<H: PageHasher> SoftMmu<H> {
    pub fn with_hasher(bucket_bits: u32, capacity: usize, hasher: H) -> Result<Self, MmuError> {
        if !(1..=MAX_BUCKET_BITS).contains(&bucket_bits) || !(1..=MAX_CAPACITY).contains(&capacity) {
            return Err(MmuError::InvalidConfig);
        }
        let unused =
            PageEntry { frame: Frame(0), owner: DomainId::new(0, 0), sharing: Sharing::Private, chunk: Chunk::Member };
        Ok(Self {
            bucket_bits,
            heads: alloc::vec![NIL; 1 << bucket_bits],
            pages: alloc::vec![FREE; capacity],
            entries: alloc::vec![unused; capacity],
            next: (0..capacity).map(|i| if i + 1 < capacity { i as u32 + 1 } else { NIL }).collect(),
            free: 0,
            len: 0,
            hasher,
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn capacity(&self) -> usize {
        self.pages.len()
    }

    pub fn free_slots(&self) -> usize {
        self.capacity() - self.len
    }

    #[inline]
    fn bucket(&self, page: GlobalPage) -> usize {
        self.hasher.bucket(page, self.bucket_bits) & (self.heads.len() - 1)
    }

    /// The slot that maps `page`.
    #[inline]
    fn find(&self, page: GlobalPage) -> Option<usize> {
        let mut at = self.heads[self.bucket(page)] as usize;
        while let Some(&p) = self.pages.get(at) {
            if p == page.raw() {
                return Some(at);
            }
            at = self.next[at] as usize;
        }
        None
    }

    pub fn insert(&mut self, page: GlobalPage, entry: PageEntry) -> Result<(), MmuError> {
        if self.find(page).is_some() {
            return Err(MmuError::AlreadyMapped(page));
        }
        let index = self.free as usize;
        if index >= self.pages.len() {
            return Err(MmuError::Full);
        }
        let bucket = self.bucket(page);
        self.free = self.next[index];
        self.pages[index] = page.raw();
        self.entries[index] = entry;
        self.next[index] = self.heads[bucket];
        self.heads[bucket] = index as u32;
        self.len += 1;
        Ok(())
    }

    #[inline]
    pub fn lookup(&self, page: GlobalPage) -> Option<&PageEntry> {
        self.find(page).map(|i| &self.entries[i])
    }

    /// The local physical address of `addr` and its page's entry (seed §2.2.5 lookup).
    #[inline]
    pub fn translate(&self, addr: GlobalAddress) -> Option<(u64, &PageEntry)> {
        let entry = self.lookup(addr.page())?;
        Some((entry.frame.addr() + addr.page_offset(), entry))
    }

    pub fn remove(&mut self, page: GlobalPage) -> Result<PageEntry, MmuError> {
        let bucket = self.bucket(page);
        let mut prev = None;
        let mut at = self.heads[bucket] as usize;
        while let Some(&p) = self.pages.get(at) {
            let next = self.next[at];
            if p == page.raw() {
                match prev {
                    Some(prev) => self.next[prev] = next,
                    None => self.heads[bucket] = next,
                }
                self.pages[at] = FREE;
                self.next[at] = self.free;
                self.free = at as u32;
                self.len -= 1;
                return Ok(self.entries[at]);
            }
            prev = Some(at);
            at = next as usize;
        }
        Err(MmuError::NotMapped(page))
    }

    pub fn iter(&self) -> impl Iterator<Item = (GlobalPage, &PageEntry)> {
        self.pages.iter().zip(&self.entries).filter(|(p, _)| **p != FREE).map(|(&p, e)| (GlobalPage::from_raw(p), e))
    }

    /// Entries in the longest chain (for statistics and the collision tests).
    pub fn longest_chain(&self) -> usize {
        let chain = |head: u32| {
            core::iter::successors(Some(head as usize), |&at| self.next.get(at).map(|&n| n as usize))
                .take_while(|&at| at < self.pages.len())
                .count()
        };
        self.heads.iter().map(|&h| chain(h)).max().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Puts every page into bucket 0: every insert collides.
    struct Collide;
    impl PageHasher for Collide {
        fn bucket(&self, _: GlobalPage, _: u32) -> usize {
            0
        }
    }

    fn page(i: u64) -> GlobalPage {
        GlobalPage::new(1, i).unwrap()
    }

    fn entry(frame: u64) -> PageEntry {
        PageEntry {
            frame: Frame::new(frame * PAGE_SIZE).unwrap(),
            owner: DomainId::new(1, 2),
            sharing: Sharing::Shared,
            chunk: Chunk::Member,
        }
    }

    #[test]
    fn insert_lookup_remove() {
        let mut mmu = SoftMmu::new(4, 8).unwrap();
        assert!(mmu.is_empty());
        mmu.insert(page(1), entry(10)).unwrap();
        mmu.insert(page(2), entry(20)).unwrap();
        assert_eq!(mmu.lookup(page(1)), Some(&entry(10)));
        assert_eq!(mmu.lookup(page(3)), None);
        let addr = GlobalAddress::from_raw(page(2).base().raw() + 0x123);
        assert_eq!(mmu.translate(addr).map(|(pa, _)| pa), Some(20 * PAGE_SIZE + 0x123));
        assert_eq!(mmu.insert(page(1), entry(11)), Err(MmuError::AlreadyMapped(page(1))));
        assert_eq!(mmu.remove(page(1)), Ok(entry(10)));
        assert_eq!(mmu.remove(page(1)), Err(MmuError::NotMapped(page(1))));
        assert_eq!(mmu.lookup(page(1)), None);
        assert_eq!(mmu.len(), 1);
    }

    #[test]
    fn forced_collisions_remove_head_middle_tail() {
        let mut mmu = SoftMmu::with_hasher(3, 16, Collide).unwrap();
        for i in 0..6 {
            mmu.insert(page(i), entry(i)).unwrap();
        }
        assert_eq!(mmu.longest_chain(), 6);
        // Chain order is newest first: 5 (head) .. 0 (tail).
        for victim in [5, 2, 0] {
            assert_eq!(mmu.remove(page(victim)), Ok(entry(victim)));
            assert_eq!(mmu.lookup(page(victim)), None);
        }
        for kept in [1, 3, 4] {
            assert_eq!(mmu.lookup(page(kept)), Some(&entry(kept)));
        }
        assert_eq!(mmu.longest_chain(), 3);
        assert_eq!(mmu.lookup(page(99)), None);
        assert_eq!(mmu.remove(page(99)), Err(MmuError::NotMapped(page(99))));
    }

    #[test]
    fn full_table_then_reuse() {
        let mut mmu = SoftMmu::with_hasher(1, 4, Collide).unwrap();
        for i in 0..4 {
            mmu.insert(page(i), entry(i)).unwrap();
        }
        assert_eq!(mmu.free_slots(), 0);
        assert_eq!(mmu.insert(page(4), entry(4)), Err(MmuError::Full));
        assert_eq!(mmu.lookup(page(4)), None);
        mmu.remove(page(2)).unwrap();
        mmu.insert(page(4), entry(4)).unwrap();
        mmu.insert(page(2), entry(7)).unwrap_err();
        mmu.remove(page(0)).unwrap();
        mmu.insert(page(2), entry(7)).unwrap();
        assert_eq!(mmu.lookup(page(2)), Some(&entry(7)));
        assert_eq!(mmu.iter().count(), 4);
    }

    #[test]
    fn invalid_config() {
        assert!(matches!(SoftMmu::new(0, 1), Err(MmuError::InvalidConfig)));
        assert!(matches!(SoftMmu::new(25, 1), Err(MmuError::InvalidConfig)));
        assert!(matches!(SoftMmu::new(4, 0), Err(MmuError::InvalidConfig)));
    }

    #[test]
    fn rights() {
        let owner = DomainId::new(1, 2);
        let other = DomainId::new(1, 3);
        let same_number_other_node = DomainId::new(2, 2);
        let mut e = entry(0);
        for (sharing, read, write) in
            [(Sharing::Shared, true, true), (Sharing::ReadOnly, true, false), (Sharing::Private, false, false)]
        {
            e.sharing = sharing;
            assert!(e.permits(owner, Access::Read) && e.permits(owner, Access::Write));
            assert_eq!((e.permits(other, Access::Read), e.permits(other, Access::Write)), (read, write));
            assert_eq!(e.permits(same_number_other_node, Access::Write), write);
            assert_eq!(Sharing::from_bits(sharing.bits()), Some(sharing));
        }
        assert_eq!(Sharing::from_bits(3), None);
    }
}
