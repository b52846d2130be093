//! Transactions in flight (seed 002 §3.2.3.3's `pending_transactions[tid]`): one entry per
//! block on the wire, indexed by its 14-bit tid, with the attempt's sequence number and a
//! timeout. There are two timeout lengths, one for blocks in flight and a longer one for blocks
//! paused on a page fault (the kernel is resolving it: the timeout is only the safety net), and
//! a timer FIFO per length: arming appends to its FIFO, which stays sorted by deadline, so each
//! FIFO's earliest is at its front (no scan, no heap).
//!
//! Nothing is ever taken out of the middle of a FIFO: each arming stamps the transaction anew
//! and appends a (tid, stamp) entry, and freeing a transaction stamps it anew too, so entries of
//! earlier armings, of freed or of moved transactions are stale. Stale entries are dropped when
//! they reach the front, or all at once when a FIFO fills (it has room for twice the live
//! transactions, so that makes room for at least as many entries as there are tids). An ACK
//! then frees its tid in a few stores, with no unlinking.
//!
//! A tid's seq never goes back: it advances on every retransmission and again when the tid is
//! reused, so a message about an older attempt or an older block never matches.
//!
//! All-zero bytes are the empty table (tids never used are counted, not listed), so the
//! firmware's table lives in .bss.

use hal::pldma::seq_next;

/// Blocks in flight per node (fixed capacity; `docs/hw/pldma.md`, "The R5's rules").
pub const MAX_TIDS: usize = 256;
/// Entries per timer FIFO: twice the tids, so a full FIFO has at least [`MAX_TIDS`] stale
/// entries to drop. A stale entry would look live again only if its tid were stamped exactly a
/// multiple of 2^16 times while the entry waits behind a live one; even then it names the
/// transaction's current deadline (deadlines are read from the transaction), so it only stands
/// early in its FIFO until that deadline, as one more entry of the current arming.
const TIMER_ENTRIES: usize = 2 * MAX_TIDS;

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
    pub timeouts: u8,
    pub nacks: u8,
    /// Index of its block in the transfer.
    pub block: u32,
    pub seq: u16,
    pub first_seq: u16,
    /// Which timer entry is its live one (see the module's doc).
    stamp: u16,
    pub deadline: u64,
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
        stamp: 0,
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
        let tid = self.ids[self.head % MAX_TIDS];
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

/// An armed transaction as a timer FIFO holds it.
#[derive(Clone, Copy, Debug)]
struct Entry {
    tid: u16,
    stamp: u16,
}

/// A timer FIFO: entries `[head, head + len)`, indices modulo [`TIMER_ENTRIES`].
struct Timers {
    entries: [Entry; TIMER_ENTRIES],
    head: usize,
    len: usize,
}

impl Timers {
    const EMPTY: Self = Self { entries: [Entry { tid: 0, stamp: 0 }; TIMER_ENTRIES], head: 0, len: 0 };

    fn at(&self, k: usize) -> Entry {
        self.entries[(self.head + k) % TIMER_ENTRIES]
    }

    /// Appends `e`, the live entry of a transaction in `state` (making room first if full).
    #[inline(always)]
    fn push(&mut self, txns: &[Txn; MAX_TIDS], e: Entry, state: TxnState) {
        if self.len == TIMER_ENTRIES {
            Tids::compact(txns, self, state);
        }
        self.entries[(self.head + self.len) % TIMER_ENTRIES] = e;
        self.len += 1;
    }
}

pub struct Tids {
    txns: [Txn; MAX_TIDS],
    free: FreeTids,
    /// Armed transactions by deadline: in flight, and paused on a page fault.
    in_flight: Timers,
    paused: Timers,
}

impl Tids {
    pub const fn new() -> Self {
        Self { txns: [Txn::FREE; MAX_TIDS], free: FreeTids::EMPTY, in_flight: Timers::EMPTY, paused: Timers::EMPTY }
    }

    /// A live transaction (in flight or paused).
    #[inline(always)]
    pub fn get(&self, tid: u16) -> Option<&Txn> {
        self.txns.get(usize::from(tid)).filter(|t| t.state != TxnState::Free)
    }

    #[inline(always)]
    pub fn get_mut(&mut self, tid: u16) -> Option<&mut Txn> {
        self.txns.get_mut(usize::from(tid)).filter(|t| t.state != TxnState::Free)
    }

    pub fn available(&self) -> usize {
        self.free.available()
    }

    /// A new transaction for block `block` of transfer `transfer`, with a fresh seq (returned
    /// with its tid); not armed.
    #[cfg(test)]
    pub fn alloc(&mut self, transfer: u8, block: u32) -> Option<(u16, u16)> {
        let tid = self.free.pop_front()?;
        let t = self.txns.get_mut(usize::from(tid))?;
        let seq = seq_next(t.seq);
        *t = Txn { state: TxnState::InFlight, transfer, block, seq, first_seq: seq, stamp: t.stamp, ..Txn::FREE };
        Some((tid, seq))
    }

    /// [`Tids::alloc`] and [`Tids::arm`] in one go (one per block sent).
    #[inline(always)]
    pub fn alloc_armed(&mut self, transfer: u8, block: u32, deadline: u64) -> Option<(u16, u16)> {
        let tid = self.free.pop_front()?;
        let t = self.txns.get_mut(usize::from(tid))?;
        let (seq, stamp) = (seq_next(t.seq), t.stamp.wrapping_add(1));
        *t = Txn { state: TxnState::InFlight, transfer, block, seq, first_seq: seq, stamp, deadline, ..Txn::FREE };
        self.in_flight.push(&self.txns, Entry { tid, stamp }, TxnState::InFlight);
        Some((tid, seq))
    }

    /// Ends a transaction; its seq stays for the tid's next use, and its timer entry goes stale.
    #[inline(always)]
    pub fn free(&mut self, tid: u16) {
        let Some(t) = self.get_mut(tid) else { return };
        t.state = TxnState::Free;
        t.stamp = t.stamp.wrapping_add(1);
        self.free.push_back(tid);
    }

    /// Puts the transaction in flight (sent, resent, or taken off pause) and (re)arms its
    /// timeout: `deadline` must not be earlier than any in-flight one's (deadlines are `now +
    /// timeout`), which keeps the FIFO sorted.
    #[inline(always)]
    pub fn arm(&mut self, tid: u16, deadline: u64) {
        self.enqueue(tid, deadline, TxnState::InFlight);
    }

    /// Pauses the transaction (a page-fault NACK came) with the paused timeout: `deadline`
    /// (`now + paused timeout`) must not be earlier than any paused one's.
    pub fn pause(&mut self, tid: u16, deadline: u64) {
        self.enqueue(tid, deadline, TxnState::Paused);
    }

    /// Moves a live transaction to `state` (in flight or paused) and to the end of that state's
    /// timer FIFO (its earlier entry goes stale).
    #[inline(always)]
    fn enqueue(&mut self, tid: u16, deadline: u64, state: TxnState) {
        let Some(t) = self.txns.get_mut(usize::from(tid)).filter(|t| t.state != TxnState::Free) else { return };
        let stamp = t.stamp.wrapping_add(1);
        (t.state, t.deadline, t.stamp) = (state, deadline, stamp);
        let timers = if state == TxnState::Paused { &mut self.paused } else { &mut self.in_flight };
        timers.push(&self.txns, Entry { tid, stamp }, state);
    }

    /// Whether `e` is the live entry of a transaction in `state`.
    fn is_live(txns: &[Txn; MAX_TIDS], e: Entry, state: TxnState) -> bool {
        txns.get(usize::from(e.tid)).is_some_and(|t| t.state == state && t.stamp == e.stamp)
    }

    /// Drops every stale entry of a full FIFO, keeping the order of the others (at most
    /// [`MAX_TIDS`] are live, so at least as many go).
    #[cold]
    fn compact(txns: &[Txn; MAX_TIDS], timers: &mut Timers, state: TxnState) {
        let mut kept = 0;
        for k in 0..timers.len {
            let e = timers.at(k);
            if Self::is_live(txns, e, state) {
                timers.entries[(timers.head + kept) % TIMER_ENTRIES] = e;
                kept += 1;
            }
        }
        timers.len = kept;
    }

    /// The earliest live entry of a FIFO (not taken off), after dropping the stale ones before
    /// it.
    #[inline(always)]
    fn front(txns: &[Txn; MAX_TIDS], timers: &mut Timers, state: TxnState) -> Option<(u16, u64)> {
        while timers.len > 0 {
            let e = timers.at(0);
            if Self::is_live(txns, e, state) {
                return Some((e.tid, txns[usize::from(e.tid)].deadline));
            }
            timers.head = (timers.head + 1) % TIMER_ENTRIES;
            timers.len -= 1;
        }
        None
    }

    /// The earliest deadline of a FIFO's live entries, looking past the stale ones.
    fn first_deadline(&self, timers: &Timers, state: TxnState) -> Option<u64> {
        (0..timers.len)
            .map(|k| timers.at(k))
            .find(|&e| Self::is_live(&self.txns, e, state))
            .map(|e| self.txns[usize::from(e.tid)].deadline)
    }

    /// The earliest deadline of all armed transactions.
    pub fn next_deadline(&self) -> Option<u64> {
        let in_flight = self.first_deadline(&self.in_flight, TxnState::InFlight);
        match (in_flight, self.first_deadline(&self.paused, TxnState::Paused)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// A transaction whose deadline passed, if any (the earlier of the two FIFOs' fronts), taken
    /// off its FIFO (the caller re-arms or frees it).
    pub fn expired(&mut self, now: u64) -> Option<u16> {
        let in_flight = Self::front(&self.txns, &mut self.in_flight, TxnState::InFlight).filter(|&(_, d)| d <= now);
        let paused = Self::front(&self.txns, &mut self.paused, TxnState::Paused).filter(|&(_, d)| d <= now);
        let (tid, timers) = match (in_flight, paused) {
            (Some((a, da)), Some((b, db))) => {
                if da <= db {
                    (a, &mut self.in_flight)
                } else {
                    (b, &mut self.paused)
                }
            }
            (Some((a, _)), None) => (a, &mut self.in_flight),
            (None, Some((b, _))) => (b, &mut self.paused),
            (None, None) => return None,
        };
        timers.head = (timers.head + 1) % TIMER_ENTRIES;
        timers.len -= 1;
        Some(tid)
    }

    /// Frees every live transaction of transfer `transfer`.
    pub fn free_transfer(&mut self, transfer: u8) {
        for tid in 0..MAX_TIDS as u16 {
            if self.txns[usize::from(tid)].state != TxnState::Free && self.txns[usize::from(tid)].transfer == transfer {
                self.free(tid);
            }
        }
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
    fn the_timer_fifo_yields_deadlines_in_order() {
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
    fn paused_transactions_wait_on_their_own_longer_fifo() {
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
        assert_eq!(t.expired(2000), None, "freed: its paused entry is stale");
        t.pause(c, 3000);
        assert_eq!(t.expired(3000), Some(c));
        assert_eq!(t.next_deadline(), None);
    }

    #[test]
    fn a_fifo_full_of_stale_entries_drops_them_and_keeps_its_order() {
        let mut t = Tids::new();
        let first = t.alloc(0, 0).unwrap().0;
        t.arm(first, 10);
        let others: Vec<u16> = (1..4).map(|b| t.alloc(0, b).unwrap().0).collect();
        // Re-armings behind the live front leave stale entries until the FIFO fills, many
        // times over (each fill drops them all).
        for round in 0..3 * TIMER_ENTRIES as u64 {
            for &tid in &others {
                t.arm(tid, 20 + round);
            }
        }
        assert!(t.in_flight.len <= TIMER_ENTRIES);
        let last = 20 + 3 * TIMER_ENTRIES as u64 - 1;
        assert_eq!(t.next_deadline(), Some(10));
        assert_eq!(t.expired(last - 1), Some(first));
        assert_eq!(t.next_deadline(), Some(last), "only the latest arming of the others is live");
        assert_eq!(t.expired(last - 1), None);
        let expired: Vec<u16> = core::iter::from_fn(|| t.expired(last)).collect();
        assert_eq!(expired, others, "each once, in arming order");
        assert_eq!(t.in_flight.len, 0);
        // A freed and reused tid's old entry is stale too.
        t.free(first);
        let (again, _) = (0..MAX_TIDS).find_map(|_| t.alloc(1, 0).filter(|&(tid, _)| tid == first)).unwrap();
        assert_eq!(t.expired(u64::MAX), None, "allocated, not armed: no timeout");
        t.arm(again, 5);
        assert_eq!(t.expired(5), Some(again));
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
        assert_eq!(t.next_deadline(), None, "its timer entry is stale");
    }
}
