//! GSAS global addresses (seed §2.2.2, `docs/hw/gsas-packets.md` "Addresses").
//!
//! ```text
//!  63            48 47                          12 11          0
//! +----------------+------------------------------+-------------+
//! | node (16 bits) | page index within the node   | page offset |
//! +----------------+------------------------------+-------------+
//! ```
//!
//! Choice (seed §2.2.2 example is self-contradictory): the 16-bit partition index *is* the node
//! id; partition `n` lives on node `n`.

/// Page size of the global shared address space (seed §2.2.2: 4096 bytes).
pub const PAGE_SIZE: u64 = 4096;
pub const PAGE_SHIFT: u32 = 12;
/// Width of the node-local part of an address (seed §2.2.2: "remaining 48 bits").
pub const OFFSET_BITS: u32 = 48;
pub const OFFSET_MASK: u64 = (1 << OFFSET_BITS) - 1;
/// Pages per node partition: 2^48 / 2^12.
pub const PAGES_PER_NODE: u64 = 1 << (OFFSET_BITS - PAGE_SHIFT);

/// Values that do not fit their field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddressError {
    /// The node-local offset does not fit 48 bits.
    OffsetTooLarge(u64),
    /// The page index does not fit 36 bits.
    PageIndexTooLarge(u64),
}

/// A 64-bit GSAS virtual address. Every `u64` is a well-formed address; whether it is mapped is
/// the target node's software MMU's business.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GlobalAddress(u64);

impl GlobalAddress {
    /// The address the API returns for a failed allocation (seed §2.3.2, "NULL").
    pub const NULL: Self = Self(0);

    #[inline]
    pub const fn new(node: u16, offset: u64) -> Result<Self, AddressError> {
        if offset > OFFSET_MASK {
            return Err(AddressError::OffsetTooLarge(offset));
        }
        Ok(Self(((node as u64) << OFFSET_BITS) | offset))
    }

    #[inline]
    pub const fn from_raw(raw: u64) -> Self {
        Self(raw)
    }

    #[inline]
    pub const fn raw(self) -> u64 {
        self.0
    }

    /// The node that holds the data: the top 16 bits (seed §2.2.2).
    #[inline]
    pub const fn node(self) -> u16 {
        (self.0 >> OFFSET_BITS) as u16
    }

    /// The node-local 48-bit offset.
    #[inline]
    pub const fn offset(self) -> u64 {
        self.0 & OFFSET_MASK
    }

    #[inline]
    pub const fn page(self) -> GlobalPage {
        GlobalPage(self.0 >> PAGE_SHIFT)
    }

    /// Byte offset inside the 4 KiB page.
    #[inline]
    pub const fn page_offset(self) -> u64 {
        self.0 & (PAGE_SIZE - 1)
    }

    /// Whether the address is a multiple of `align` (a power of two).
    #[inline]
    pub const fn is_aligned(self, align: u64) -> bool {
        self.0 & (align - 1) == 0
    }
}

/// A global page number: the address shifted right by 12, i.e. node (16) | page index (36).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GlobalPage(u64);

impl GlobalPage {
    #[inline]
    pub const fn new(node: u16, index: u64) -> Result<Self, AddressError> {
        if index >= PAGES_PER_NODE {
            return Err(AddressError::PageIndexTooLarge(index));
        }
        Ok(Self(((node as u64) << (OFFSET_BITS - PAGE_SHIFT)) | index))
    }

    /// The page number of a 52-bit value; the top 12 bits of `raw` are dropped.
    #[inline]
    pub const fn from_raw(raw: u64) -> Self {
        Self(raw & ((1 << (64 - PAGE_SHIFT)) - 1))
    }

    #[inline]
    pub const fn raw(self) -> u64 {
        self.0
    }

    #[inline]
    pub const fn node(self) -> u16 {
        (self.0 >> (OFFSET_BITS - PAGE_SHIFT)) as u16
    }

    /// Page index inside the node's partition (36 bits).
    #[inline]
    pub const fn index(self) -> u64 {
        self.0 & (PAGES_PER_NODE - 1)
    }

    #[inline]
    pub const fn base(self) -> GlobalAddress {
        GlobalAddress(self.0 << PAGE_SHIFT)
    }

    /// The page `n` pages further on inside the same partition, if there is one.
    #[inline]
    pub const fn checked_add(self, n: u64) -> Option<Self> {
        match self.index().checked_add(n) {
            Some(index) if index < PAGES_PER_NODE => Some(Self(self.0 + n)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields() {
        let a = GlobalAddress::new(2, 0x1001).unwrap();
        assert_eq!(a.raw(), 0x0002_0000_0000_1001);
        assert_eq!(a.node(), 2);
        assert_eq!(a.offset(), 0x1001);
        assert_eq!(a.page(), GlobalPage::new(2, 1).unwrap());
        assert_eq!(a.page_offset(), 1);
        assert!(!a.is_aligned(4));
        assert!(a.page().base().is_aligned(PAGE_SIZE));
        assert_eq!(GlobalAddress::new(0, 1 << 48), Err(AddressError::OffsetTooLarge(1 << 48)));
        assert_eq!(GlobalPage::new(0, PAGES_PER_NODE), Err(AddressError::PageIndexTooLarge(PAGES_PER_NODE)));
    }

    #[test]
    fn page_arithmetic_stays_in_partition() {
        let last = GlobalPage::new(7, PAGES_PER_NODE - 1).unwrap();
        assert_eq!(last.checked_add(1), None);
        assert_eq!(last.node(), 7);
        let first = GlobalPage::new(7, 0).unwrap();
        assert_eq!(first.checked_add(3).unwrap().index(), 3);
        assert_eq!(GlobalPage::from_raw(u64::MAX).node(), u16::MAX);
        assert_eq!(GlobalAddress::from_raw(u64::MAX).page(), GlobalPage::from_raw(u64::MAX));
    }
}
