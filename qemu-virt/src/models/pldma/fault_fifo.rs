//! The receiver fault FIFO (seed 002 §3.2.3.1, Tab 3.2; `docs/hw/pldma.md`, "Fault page
//! registers"): 512 entries of two 64-bit words, popped only by a `fifo_hi` read that follows a
//! valid `fifo_lo` read, and never holding the same fault twice in a row.

use hal::pldma::FIFO_DEPTH;
use hal::pldma::fault::FaultEntry;
use std::collections::VecDeque;

/// What a push did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Push {
    Pushed,
    /// Equal to the last entry pushed: not pushed again.
    Deduplicated,
    /// The FIFO was full: dropped.
    Lost,
}

#[derive(Debug, Default)]
pub struct FaultFifo {
    entries: VecDeque<FaultEntry>,
    last_pushed: Option<FaultEntry>,
    /// The last access of the page was a `fifo_lo` read that returned an entry.
    armed: bool,
}

impl FaultFifo {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, entry: FaultEntry) -> Push {
        if self.last_pushed == Some(entry) {
            return Push::Deduplicated;
        }
        if self.entries.len() >= FIFO_DEPTH {
            return Push::Lost;
        }
        self.entries.push_back(entry);
        self.last_pushed = Some(entry);
        Push::Pushed
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn head_words(&self) -> [u64; 2] {
        self.entries.front().map_or([0, 0], FaultEntry::encode)
    }

    /// A `fifo_lo` read.
    pub fn read_lo(&mut self) -> u64 {
        let [lo, _] = self.head_words();
        self.armed = lo != 0;
        lo
    }

    /// A `fifo_hi` read: pops when armed.
    pub fn read_hi(&mut self) -> u64 {
        let [_, hi] = self.head_words();
        if std::mem::take(&mut self.armed) {
            self.entries.pop_front();
        }
        hi
    }

    /// A 16-byte read of both words (`fifo_lo` in the low half): pops.
    pub fn read_both(&mut self) -> u128 {
        let [lo, hi] = self.head_words();
        self.armed = false;
        self.entries.pop_front();
        u128::from(lo) | u128::from(hi) << 64
    }

    /// Any other access of the fault page disarms the pop.
    pub fn disarm(&mut self) {
        self.armed = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hal::pldma::Pd;
    use hal::pldma::codes::FaultCode;

    fn entry(tid: u16, page: u64) -> FaultEntry {
        FaultEntry::new(FaultCode::DestinationFault, Pd::new(1).unwrap(), 2, tid, 3, page << 12)
    }

    fn pop(f: &mut FaultFifo) -> Option<FaultEntry> {
        let lo = f.read_lo();
        let hi = f.read_hi();
        FaultEntry::decode(lo, hi).unwrap()
    }

    #[test]
    fn entries_come_out_in_order() {
        let mut f = FaultFifo::new();
        for i in 0..10 {
            assert_eq!(f.push(entry(i, 0)), Push::Pushed);
        }
        for i in 0..10 {
            assert_eq!(pop(&mut f), Some(entry(i, 0)));
        }
        assert_eq!(pop(&mut f), None);
        assert_eq!((f.read_lo(), f.read_hi()), (0, 0), "empty reads VALID = 0");
    }

    #[test]
    fn only_low_then_high_pops() {
        let mut f = FaultFifo::new();
        f.push(entry(1, 1));
        f.push(entry(2, 2));
        let hi = entry(1, 1).encode()[1];
        assert_eq!(f.read_hi(), hi, "the second word alone");
        assert_eq!(f.read_hi(), hi, "... pops nothing");
        assert_eq!(f.len(), 2);
        f.read_lo();
        f.read_lo();
        assert_eq!(f.len(), 2, "reading the first word twice re-arms, pops nothing");
        assert_eq!(f.read_hi(), hi);
        assert_eq!(f.len(), 1, "low then high pops");
        f.read_lo();
        f.disarm();
        f.read_hi();
        assert_eq!(f.len(), 1, "another access between the halves disarms");
        let [lo, hi] = entry(2, 2).encode();
        assert_eq!(f.read_both(), u128::from(lo) | u128::from(hi) << 64);
        assert!(f.is_empty());
    }

    #[test]
    fn an_entry_equal_to_the_last_pushed_is_not_pushed() {
        let mut f = FaultFifo::new();
        assert_eq!(f.push(entry(1, 5)), Push::Pushed);
        assert_eq!(f.push(entry(1, 5)), Push::Deduplicated);
        assert_eq!(pop(&mut f), Some(entry(1, 5)));
        assert_eq!(f.push(entry(1, 5)), Push::Deduplicated, "the last pushed, even once popped");
        assert_eq!(f.push(entry(1, 6)), Push::Pushed, "another page");
        assert_eq!(f.push(entry(1, 5)), Push::Pushed, "only the last one is compared (seed 002 §4)");
        assert_eq!(f.len(), 2);
    }

    #[test]
    fn a_full_fifo_drops_new_faults() {
        let mut f = FaultFifo::new();
        for i in 0..FIFO_DEPTH as u64 {
            assert_eq!(f.push(entry(0, i)), Push::Pushed);
        }
        assert_eq!(f.push(entry(0, 9999)), Push::Lost);
        assert_eq!(f.len(), FIFO_DEPTH);
        assert_eq!(pop(&mut f), Some(entry(0, 0)));
        assert_eq!(f.push(entry(0, 9999)), Push::Pushed, "room again");
    }
}
