//! Transactions in flight (seed 002 §3.2.3.3's `pending_transactions[tid]`): one entry per
//! block on the wire, indexed by its 14-bit tid, with the attempt's sequence number and a
//! timeout. Every timeout has the same length, so arming appends to a list that stays sorted by
//! deadline: the earliest is always at its head (no scan, no heap).
//!
//! A tid's seq never goes back: it advances on every retransmission and again when the tid is
//! reused, so a message about an older attempt or an older block never matches.

use hal::pldma::seq_next;
use heapless::Deque;

/// Blocks in flight per node (fixed capacity; `docs/hw/pldma.md`, "The R5's rules").
pub const MAX_TIDS: usize = 256;
const NIL: u16 = u16::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxnState {
    Free,
    /// Sent (or about to be resent); its timeout runs.
    InFlight,
    /// A PF-NACK came: waits for a RAPF (or the timeout, still armed).
    Paused,
}

#[derive(Clone, Copy, Debug)]
pub struct Txn {
    pub state: TxnState,
    /// Index of its transfer.
    pub transfer: u8,
    /// Index of its block in the transfer.
    pub block: u32,
    pub seq: u16,
    pub first_seq: u16,
    pub deadline: u64,
    pub timeouts: u8,
    pub nacks: u8,
    prev: u16,
    next: u16,
}

impl Txn {
    const FREE: Txn = Txn {
        state: TxnState::Free,
        transfer: 0,
        block: 0,
        seq: 0,
        first_seq: 0,
        deadline: 0,
        timeouts: 0,
        nacks: 0,
        prev: NIL,
        next: NIL,
    };
}

pub struct Tids {
    txns: [Txn; MAX_TIDS],
    /// Free tids, oldest first: a tid is reused as late as possible.
    free: Deque<u16, MAX_TIDS>,
    /// The timer list: armed transactions by deadline.
    first: u16,
    last: u16,
}

impl Tids {
    pub fn new() -> Self {
        let mut free = Deque::new();
        for tid in 0..MAX_TIDS as u16 {
            // The deque holds exactly MAX_TIDS.
            let _ = free.push_back(tid);
        }
        Self { txns: [Txn::FREE; MAX_TIDS], free, first: NIL, last: NIL }
    }

    /// A live transaction (in flight or paused).
    pub fn get(&self, tid: u16) -> Option<&Txn> {
        self.txns.get(usize::from(tid)).filter(|t| t.state != TxnState::Free)
    }

    pub fn get_mut(&mut self, tid: u16) -> Option<&mut Txn> {
        self.txns.get_mut(usize::from(tid)).filter(|t| t.state != TxnState::Free)
    }

    pub fn available(&self) -> usize {
        self.free.len()
    }

    /// A new transaction for block `block` of transfer `transfer`, with a fresh seq; not armed.
    pub fn alloc(&mut self, transfer: u8, block: u32) -> Option<u16> {
        let tid = self.free.pop_front()?;
        let t = &mut self.txns[usize::from(tid)];
        let seq = seq_next(t.seq);
        *t = Txn { state: TxnState::InFlight, transfer, block, seq, first_seq: seq, ..Txn::FREE };
        Some(tid)
    }

    /// Ends a transaction; its seq stays for the tid's next use.
    pub fn free(&mut self, tid: u16) {
        if self.get(tid).is_none() {
            return;
        }
        self.unlink(tid);
        let t = &mut self.txns[usize::from(tid)];
        t.state = TxnState::Free;
        let _ = self.free.push_back(tid);
    }

    /// (Re)arms the timeout: `deadline` must not be earlier than any armed one's (deadlines
    /// are `now + timeout`), which keeps the list sorted.
    pub fn arm(&mut self, tid: u16, deadline: u64) {
        if self.get(tid).is_none() {
            return;
        }
        self.unlink(tid);
        let i = usize::from(tid);
        self.txns[i].deadline = deadline;
        self.txns[i].prev = self.last;
        self.txns[i].next = NIL;
        match self.last {
            NIL => self.first = tid,
            last => self.txns[usize::from(last)].next = tid,
        }
        self.last = tid;
    }

    /// The earliest deadline of all armed transactions.
    pub fn next_deadline(&self) -> Option<u64> {
        (self.first != NIL).then(|| self.txns[usize::from(self.first)].deadline)
    }

    /// The transaction whose deadline passed first, if any, taken off the list (the caller
    /// re-arms or frees it).
    pub fn expired(&mut self, now: u64) -> Option<u16> {
        let first = self.first;
        if first == NIL || self.txns[usize::from(first)].deadline > now {
            return None;
        }
        self.unlink(first);
        Some(first)
    }

    /// The live transactions of transfer `transfer`.
    pub fn of_transfer(&self, transfer: u8) -> impl Iterator<Item = u16> + '_ {
        self.txns
            .iter()
            .enumerate()
            .filter(move |(_, t)| t.state != TxnState::Free && t.transfer == transfer)
            .map(|(tid, _)| tid as u16)
    }

    fn unlink(&mut self, tid: u16) {
        let i = usize::from(tid);
        let (prev, next) = (self.txns[i].prev, self.txns[i].next);
        let linked = prev != NIL || next != NIL || self.first == tid;
        if !linked {
            return;
        }
        match prev {
            NIL => self.first = next,
            p => self.txns[usize::from(p)].next = next,
        }
        match next {
            NIL => self.last = prev,
            n => self.txns[usize::from(n)].prev = prev,
        }
        self.txns[i].prev = NIL;
        self.txns[i].next = NIL;
    }
}

impl Default for Tids {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seqs_advance_across_reuse() {
        let mut t = Tids::new();
        let a = t.alloc(0, 0).unwrap();
        let first = t.get(a).unwrap().seq;
        t.free(a);
        // Reused last: every other tid first.
        let mut seen = Vec::new();
        for _ in 0..MAX_TIDS {
            seen.push(t.alloc(0, 0).unwrap());
        }
        assert_eq!(*seen.last().unwrap(), a, "the freed tid comes back last");
        assert_eq!(t.alloc(0, 0), None, "full");
        assert_eq!(t.get(a).unwrap().seq, seq_next(first), "a reused tid has a newer seq");
        assert_eq!(t.get(a).unwrap().first_seq, t.get(a).unwrap().seq);
    }

    #[test]
    fn the_timer_list_yields_deadlines_in_order() {
        let mut t = Tids::new();
        let tids: Vec<u16> = (0..5).map(|i| t.alloc(0, i).unwrap()).collect();
        for (i, &tid) in tids.iter().enumerate() {
            t.arm(tid, 100 + i as u64);
        }
        t.arm(tids[1], 200);
        t.free(tids[3]);
        assert_eq!(t.next_deadline(), Some(100));
        assert_eq!(t.expired(99), None);
        assert_eq!(t.expired(150), Some(tids[0]));
        assert_eq!(t.expired(150), Some(tids[2]));
        assert_eq!(t.expired(150), Some(tids[4]));
        assert_eq!(t.expired(150), None);
        assert_eq!(t.expired(200), Some(tids[1]));
        assert_eq!(t.next_deadline(), None);
        assert_eq!(t.get(tids[1]).map(|x| x.state), Some(TxnState::InFlight), "expired is not freed");
        assert!(t.get(tids[3]).is_none());
        assert_eq!(t.available(), MAX_TIDS - 4);
    }

    #[test]
    fn out_of_range_and_free_tids_are_not_found() {
        let mut t = Tids::new();
        assert!(t.get(0).is_none());
        assert!(t.get(0x3fff).is_none());
        t.free(7);
        t.arm(7, 5);
        assert_eq!(t.next_deadline(), None, "arming a free tid does nothing");
        let tid = t.alloc(3, 9).unwrap();
        assert_eq!(t.of_transfer(3).collect::<Vec<_>>(), [tid]);
        assert_eq!(t.of_transfer(4).count(), 0);
    }
}
