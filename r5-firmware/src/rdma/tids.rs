//! Transactions in flight (seed 002 §3.2.3.3's `pending_transactions[tid]`): one entry per
//! block on the wire, indexed by its 14-bit tid, with the attempt's sequence number and a
//! timeout. There are two timeout lengths, one for blocks in flight and a longer one for blocks
//! paused on a page fault (the kernel is resolving it: the timeout is only the safety net), and
//! a list per length: arming appends to its list, which stays sorted by deadline, so each
//! list's earliest is at its head (no scan, no heap).
//!
//! A tid's seq never goes back: it advances on every retransmission and again when the tid is
//! reused, so a message about an older attempt or an older block never matches.
//!
//! All-zero bytes are the empty table (links hold tid + 1, with 0 for none; tids never used are
//! counted, not listed), so the firmware's table lives in .bss.

use hal::pldma::seq_next;

/// Blocks in flight per node (fixed capacity; `docs/hw/pldma.md`, "The R5's rules").
pub const MAX_TIDS: usize = 256;
/// No link (links hold tid + 1).
const NIL: u16 = 0;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum TxnState {
    Free = 0,
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
    /// Timer-list neighbours, as tid + 1, on the list of its state (paused or in flight).
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

/// The free tids: first the ones never used, then the freed ones oldest first, so that a tid
/// is reused as late as possible. The ring holds each freed tid at most once: it never overflows.
struct FreeTids {
    ids: [u16; MAX_TIDS],
    head: usize,
    len: usize,
    /// Tids `fresh..MAX_TIDS` were never used.
    fresh: usize,
}

impl FreeTids {
    const EMPTY: Self = Self { ids: [0; MAX_TIDS], head: 0, len: 0, fresh: 0 };

    fn pop_front(&mut self) -> Option<u16> {
        if self.fresh < MAX_TIDS {
            self.fresh += 1;
            return Some((self.fresh - 1) as u16);
        }
        if self.len == 0 {
            return None;
        }
        let tid = self.ids[self.head];
        self.head = (self.head + 1) % MAX_TIDS;
        self.len -= 1;
        Some(tid)
    }

    fn available(&self) -> usize {
        MAX_TIDS - self.fresh + self.len
    }

    fn push_back(&mut self, tid: u16) {
        if self.len < MAX_TIDS {
            self.ids[(self.head + self.len) % MAX_TIDS] = tid;
            self.len += 1;
        }
    }
}

/// A timer list: its first and last transactions, as tid + 1.
#[derive(Clone, Copy, Debug)]
struct List {
    first: u16,
    last: u16,
}

impl List {
    const EMPTY: Self = Self { first: NIL, last: NIL };
}

pub struct Tids {
    txns: [Txn; MAX_TIDS],
    free: FreeTids,
    /// Armed transactions by deadline: in flight, and paused on a page fault.
    in_flight: List,
    paused: List,
}

impl Tids {
    pub const fn new() -> Self {
        Self { txns: [Txn::FREE; MAX_TIDS], free: FreeTids::EMPTY, in_flight: List::EMPTY, paused: List::EMPTY }
    }

    /// A live transaction (in flight or paused).
    pub fn get(&self, tid: u16) -> Option<&Txn> {
        self.txns.get(usize::from(tid)).filter(|t| t.state != TxnState::Free)
    }

    pub fn get_mut(&mut self, tid: u16) -> Option<&mut Txn> {
        self.txns.get_mut(usize::from(tid)).filter(|t| t.state != TxnState::Free)
    }

    pub fn available(&self) -> usize {
        self.free.available()
    }

    /// A new transaction for block `block` of transfer `transfer`, with a fresh seq (returned
    /// with its tid); not armed.
    pub fn alloc(&mut self, transfer: u8, block: u32) -> Option<(u16, u16)> {
        let tid = self.free.pop_front()?;
        let t = self.txns.get_mut(usize::from(tid))?;
        let seq = seq_next(t.seq);
        *t = Txn { state: TxnState::InFlight, transfer, block, seq, first_seq: seq, ..Txn::FREE };
        Some((tid, seq))
    }

    /// Ends a transaction; its seq stays for the tid's next use.
    pub fn free(&mut self, tid: u16) {
        if self.get(tid).is_none() {
            return;
        }
        self.unlink(tid);
        let t = &mut self.txns[usize::from(tid)];
        t.state = TxnState::Free;
        self.free.push_back(tid);
    }

    /// Puts the transaction in flight (sent, resent, or taken off pause) and (re)arms its
    /// timeout: `deadline` must not be earlier than any in-flight one's (deadlines are `now +
    /// timeout`), which keeps the list sorted.
    pub fn arm(&mut self, tid: u16, deadline: u64) {
        self.link(tid, deadline, TxnState::InFlight);
    }

    /// Pauses the transaction (a page-fault NACK came) with the paused timeout: `deadline`
    /// (`now + paused timeout`) must not be earlier than any paused one's.
    pub fn pause(&mut self, tid: u16, deadline: u64) {
        self.link(tid, deadline, TxnState::Paused);
    }

    /// Moves a live transaction to `state` (in flight or paused) and to the end of that state's
    /// timer list.
    fn link(&mut self, tid: u16, deadline: u64, state: TxnState) {
        if self.get(tid).is_none() {
            return;
        }
        self.unlink(tid);
        let paused = state == TxnState::Paused;
        let i = usize::from(tid);
        let list = if paused { self.paused } else { self.in_flight };
        self.txns[i].state = state;
        self.txns[i].deadline = deadline;
        self.txns[i].prev = list.last;
        self.txns[i].next = NIL;
        let mut list = list;
        match list.last {
            NIL => list.first = tid + 1,
            last => self.txns[usize::from(last - 1)].next = tid + 1,
        }
        list.last = tid + 1;
        *self.list_mut(paused) = list;
    }

    fn list_mut(&mut self, paused: bool) -> &mut List {
        if paused { &mut self.paused } else { &mut self.in_flight }
    }

    fn head_deadline(&self, list: List) -> Option<u64> {
        (list.first != NIL).then(|| self.txns[usize::from(list.first - 1)].deadline)
    }

    /// The earliest deadline of all armed transactions.
    pub fn next_deadline(&self) -> Option<u64> {
        match (self.head_deadline(self.in_flight), self.head_deadline(self.paused)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// A transaction whose deadline passed, if any (the earlier of the two lists' heads), taken
    /// off its list (the caller re-arms or frees it).
    pub fn expired(&mut self, now: u64) -> Option<u16> {
        let in_flight = self.head_deadline(self.in_flight).filter(|&d| d <= now);
        let paused = self.head_deadline(self.paused).filter(|&d| d <= now);
        let list = match (in_flight, paused) {
            (Some(a), Some(b)) => {
                if a <= b {
                    self.in_flight
                } else {
                    self.paused
                }
            }
            (Some(_), None) => self.in_flight,
            (None, Some(_)) => self.paused,
            (None, None) => return None,
        };
        let first = list.first - 1;
        self.unlink(first);
        Some(first)
    }

    /// Frees every live transaction of transfer `transfer`.
    pub fn free_transfer(&mut self, transfer: u8) {
        for tid in 0..MAX_TIDS as u16 {
            if self.txns[usize::from(tid)].state != TxnState::Free && self.txns[usize::from(tid)].transfer == transfer {
                self.free(tid);
            }
        }
    }

    fn unlink(&mut self, tid: u16) {
        let i = usize::from(tid);
        let (prev, next, paused) = (self.txns[i].prev, self.txns[i].next, self.txns[i].state == TxnState::Paused);
        let mut list = *self.list_mut(paused);
        let linked = prev != NIL || next != NIL || list.first == tid + 1;
        if !linked {
            return;
        }
        match prev {
            NIL => list.first = next,
            p => self.txns[usize::from(p - 1)].next = next,
        }
        match next {
            NIL => list.last = prev,
            n => self.txns[usize::from(n - 1)].prev = prev,
        }
        *self.list_mut(paused) = list;
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
        let (a, _) = t.alloc(0, 0).unwrap();
        let first = t.get(a).unwrap().seq;
        t.free(a);
        // Reused last: every tid never used first.
        let mut seen = Vec::new();
        for _ in 0..MAX_TIDS {
            seen.push(t.alloc(0, 0).unwrap().0);
        }
        assert_eq!(*seen.last().unwrap(), a, "the freed tid comes back last");
        assert_eq!(seen[..MAX_TIDS - 1], (1..MAX_TIDS as u16).collect::<Vec<_>>()[..]);
        assert_eq!(t.alloc(0, 0), None, "full");
        assert_eq!(t.get(a).unwrap().seq, seq_next(first), "a reused tid has a newer seq");
        assert_eq!(t.get(a).unwrap().first_seq, t.get(a).unwrap().seq);
    }

    #[test]
    fn the_timer_list_yields_deadlines_in_order() {
        let mut t = Tids::new();
        let tids: Vec<u16> = (0..5).map(|i| t.alloc(0, i).unwrap().0).collect();
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
    fn paused_transactions_wait_on_their_own_longer_list() {
        let mut t = Tids::new();
        let a = t.alloc(0, 0).unwrap().0;
        let b = t.alloc(0, 1).unwrap().0;
        let c = t.alloc(0, 2).unwrap().0;
        t.arm(a, 100);
        t.arm(b, 110);
        t.arm(c, 120);
        t.pause(a, 1000);
        assert_eq!(t.get(a).map(|x| x.state), Some(TxnState::Paused));
        assert_eq!(t.next_deadline(), Some(110), "the paused one no longer times out at 100");
        assert_eq!(t.expired(500), Some(b));
        assert_eq!(t.expired(500), Some(c));
        assert_eq!(t.expired(500), None, "paused until 1000");
        t.pause(b, 1010);
        t.arm(a, 600);
        assert_eq!(t.next_deadline(), Some(600), "a retransmission moves it back");
        t.free(b);
        assert_eq!(t.expired(2000), Some(a));
        assert_eq!(t.expired(2000), None, "freed: off the paused list");
        t.pause(c, 3000);
        assert_eq!(t.expired(3000), Some(c));
        assert_eq!(t.next_deadline(), None);
    }

    #[test]
    fn out_of_range_and_free_tids_are_not_found() {
        let mut t = Tids::new();
        assert!(t.get(0).is_none());
        assert!(t.get(0x3fff).is_none());
        t.free(7);
        t.arm(7, 5);
        assert_eq!(t.next_deadline(), None, "arming a free tid does nothing");
        let a = t.alloc(3, 9).unwrap().0;
        let b = t.alloc(4, 0).unwrap().0;
        t.arm(a, 1);
        t.free_transfer(3);
        assert!(t.get(a).is_none());
        assert!(t.get(b).is_some(), "another transfer's");
        assert_eq!(t.next_deadline(), None, "unlinked from the timer list");
    }
}
