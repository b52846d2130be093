//! A context bank's TLB: every leaf the bank walked, until an invalidation removes it. It never
//! evicts, so a driver that forgets an invalidation keeps seeing the old translation.

use super::walk::Leaf;

/// A TLB maintenance operation, as the registers state it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Invalidation {
    /// TLBIVA: the entry covering page `page` (VA >> 12) of `asid`, or a global one covering it.
    Va { page: u64, asid: u16 },
    /// TLBIASID: every non-global entry of `asid`.
    Asid(u16),
    /// TLBIALL, TLBIALLNSNH, TLBIVMID of the bank's VMID: everything.
    All,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    asid: u16,
    leaf: Leaf,
}

#[derive(Debug, Default)]
pub struct Tlb {
    entries: Vec<Entry>,
}

impl Tlb {
    /// The cached leaf covering `va` for `asid`.
    pub fn lookup(&self, asid: u16, va: u64) -> Option<Leaf> {
        self.entries.iter().find(|e| (e.leaf.global || e.asid == asid) && e.leaf.covers(va)).map(|e| e.leaf)
    }

    pub fn insert(&mut self, asid: u16, leaf: Leaf) {
        self.entries.push(Entry { asid, leaf });
    }

    pub fn invalidate(&mut self, op: Invalidation) {
        match op {
            Invalidation::Va { page, asid } => {
                self.entries.retain(|e| !((e.leaf.global || e.asid == asid) && e.leaf.covers(page << 12)))
            }
            Invalidation::Asid(asid) => self.entries.retain(|e| e.leaf.global || e.asid != asid),
            Invalidation::All => self.entries.clear(),
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf(va: u64, size_log2: u32, global: bool) -> Leaf {
        Leaf { va_base: va, pa_base: 0x9000_0000, size_log2, el0: true, writable: true, af: true, global, level: 3 }
    }

    #[test]
    fn entries_match_by_asid_unless_global() {
        let mut tlb = Tlb::default();
        tlb.insert(1, leaf(0x1000, 12, false));
        tlb.insert(2, leaf(0x4000_0000, 30, true));
        assert!(tlb.lookup(1, 0x1fff).is_some());
        assert!(tlb.lookup(2, 0x1000).is_none(), "another ASID");
        assert!(tlb.lookup(7, 0x7fff_ffff).is_some(), "a global block serves every ASID");
        assert!(tlb.lookup(1, 0x2000).is_none());
    }

    #[test]
    fn invalidations_remove_what_they_name() {
        let mut tlb = Tlb::default();
        tlb.insert(1, leaf(0x1000, 12, false));
        tlb.insert(1, leaf(0x2000, 12, false));
        tlb.insert(2, leaf(0x1000, 12, false));
        tlb.insert(3, leaf(0x4000_0000, 30, true));
        tlb.invalidate(Invalidation::Va { page: 1, asid: 1 });
        assert!(tlb.lookup(1, 0x1000).is_none() && tlb.lookup(2, 0x1000).is_some() && tlb.lookup(1, 0x2000).is_some());
        tlb.invalidate(Invalidation::Va { page: 0x4_0123, asid: 9 });
        assert!(tlb.lookup(3, 0x4000_0000).is_none(), "a VA inside a global block removes it");
        tlb.insert(3, leaf(0x4000_0000, 30, true));
        tlb.invalidate(Invalidation::Asid(1));
        assert_eq!(tlb.len(), 2, "ASID 2's page and the global block stay");
        tlb.invalidate(Invalidation::Asid(3));
        assert_eq!(tlb.len(), 2, "global entries survive TLBIASID");
        tlb.invalidate(Invalidation::All);
        assert_eq!(tlb.len(), 0);
    }
}
