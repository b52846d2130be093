//! Active Access (seed 004; `docs/hw/active-access.md`): the owner of a page marks it, and every
//! remote put or get that touches it is logged by the PLDMA into a ring in the owner's memory,
//! where a handler takes it. Puts and gets do not change on the origin side: they are
//! [`crate::rdma`] writes and reads.
//!
//! - [`Log::open`]: an IUID of this process's and its log (`ACTIVE_OPEN`); [`Log::close`], or
//!   dropping the `Log`, gives it back (`ACTIVE_CLOSE`);
//! - [`Log::assoc_page`]: the seed's `assoc_page(addr, actions, handler)`: the handler is the
//!   log (its IUID); the code that runs is what [`Log::poll`] / [`Log::wait`] are given;
//! - [`Log::entries`]: the log as an iterator; consumed entries are given back to the engine
//!   when the iterator is dropped (or [`Entries::release`]);
//! - handler dispatch: polling ([`Log::poll`]), blocking ([`Log::wait`]), or the mailbox's
//!   read, signal or event mode ([`Log::notify_on`]: the engine's interrupt, through the
//!   kernel, sends a notification per batch of entries);
//! - [`flush`]: the seed's active flush, an RDMA read of the target's flushing page, which the
//!   target's engine serves only once every entry appended before the read arrived has been
//!   consumed.
//!
//! The ring's reader ([`Reader`], `hal::pldma::active`, which the kernel uses for its fault
//! log too) is plain logic over bytes, host-tested.

use crate::error::Error;
use hal::pldma::active::header;
pub use hal::pldma::active::{Entry, IUIDS, LogEntry, LogError, Reader};
use proto::gsas::{MailboxOpcode, Notification};
use proto::syscall::active as bits;
use proto::syscall::{layout, nr};

/// What happens to a remote access of a marked page (`proto::syscall::active` bits).
pub mod actions {
    use super::bits;
    /// Active put: not written, logged with its data (W=0, WL=1, WLD=1).
    pub const ACTIVE_PUT: u64 = bits::WL | bits::WLD | bits::E;
    /// Put logging (dirty tracking): written and logged (W=1, WL=1).
    pub const PUT_LOG: u64 = bits::W | bits::WL | bits::E;
    /// Get counting: served and logged (R=1, RL=1).
    pub const GET_COUNT: u64 = bits::W | bits::RL | bits::E;
    /// Get logging: served, logged with the data served (RL=1, RLD=1).
    pub const GET_LOG: u64 = bits::W | bits::RL | bits::RLD | bits::E;
    /// The log's flushing page.
    pub const FLUSH: u64 = bits::FLUSH;
    /// Without `E`: entries go to the kernel's fault log, not to this process's.
    pub const E: u64 = bits::E;
}

/// A log of this process: its IUID, ring and header (mapped by the kernel), and the mailbox
/// opcode its entries are told on, if any. Dropping it gives the IUID back, as
/// [`close`](Log::close) does.
pub struct Log {
    iuid: u8,
    ring: u64,
    header: u64,
    notice: Option<MailboxOpcode>,
}

/// The ring's bytes.
const RING_BYTES: usize = layout::ACTIVE_LOG_RING as usize;

impl Log {
    /// Takes an IUID and its (empty) log: `Syscall(NoPd)` if the process holds no RDMA here,
    /// `Busy` when the node has no IUID left.
    pub fn open() -> Result<Self, Error> {
        let [iuid, ring, header] = crate::sys::call4(nr::ACTIVE_OPEN, [0; 4])?;
        let iuid = u8::try_from(iuid).map_err(|_| Error::Protocol(crate::error::ProtocolError::BadInterface))?;
        Ok(Self { iuid, ring, header, notice: None })
    }

    /// Gives the IUID back (`ACTIVE_CLOSE`): the pages marked for it are unmarked (remote puts
    /// and gets of them are plain again), the log is invalidated and unmapped from this process,
    /// and the IUID is free for the next [`Log::open`] on this node. Dropping the `Log` does the
    /// same, without telling of a failure (only a kernel that does not know the IUID as this
    /// process's refuses it: `Syscall(BadArgument)`).
    pub fn close(self) -> Result<(), Error> {
        let log = core::mem::ManuallyDrop::new(self);
        close(log.iuid)
    }

    /// Handler dispatch through the mailbox (`ACTIVE_NOTIFY`): from now on every entry the
    /// engine appends is told to this process by a notification from its node's kernel on
    /// `opcode`, payload the IUID ([`Log::is_notice`]). This process must receive `opcode`
    /// (`sys::mailbox_register`), in the mode it wants to be told in: read ([`Log::wait`]
    /// blocks on it), signal (a signal ends its sleeps and waits; `sys::signals` says which) or
    /// event (`sys::mailbox_event` counts the notices). `None`: the log is polled again.
    /// `Syscall(NotRegistered)` if this process does not receive `opcode`.
    pub fn notify_on(&mut self, opcode: Option<MailboxOpcode>) -> Result<(), Error> {
        let raw = opcode.map_or(0, |op| u64::from(op.value()));
        crate::sys::call4(nr::ACTIVE_NOTIFY, [u64::from(self.iuid), raw, 0, 0])?;
        self.notice = opcode;
        Ok(())
    }

    /// Whether `notification` is this log's notice (its opcode and IUID).
    pub fn is_notice(&self, notification: &Notification) -> bool {
        Some(notification.opcode()) == self.notice && notification.payload() == u64::from(self.iuid)
    }

    /// The IUID.
    pub fn iuid(&self) -> u8 {
        self.iuid
    }

    /// The seed's `assoc_page`: marks the page holding `addr` (this process's own memory) with
    /// `actions` (`actions::*`, 0 unmarks it) for this log.
    pub fn assoc_page(&self, addr: u64, actions: u64) -> Result<(), Error> {
        assoc_page(addr, actions, self.iuid)
    }

    fn word(&self, offset: u64) -> u32 {
        // SAFETY: the header page the kernel mapped for this log for the life of the process
        // (uncached, shared with the engine): read volatilely.
        unsafe { core::ptr::read_volatile((self.header + offset) as *const u32) }
    }

    /// Granules the engine has produced.
    pub fn produced(&self) -> u32 {
        self.word(header::PRODUCED)
    }

    /// Granules this process has consumed.
    pub fn consumed(&self) -> u32 {
        self.word(header::CONSUMED)
    }

    /// Accesses the engine refused for want of room (they are retried by their initiators).
    pub fn full(&self) -> u32 {
        self.word(header::FULL)
    }

    /// Whether entries wait.
    pub fn pending(&self) -> bool {
        self.produced() != self.consumed()
    }

    /// The entries not yet consumed; dropping the iterator gives their room back.
    pub fn entries(&mut self) -> Entries<'_> {
        let produced = self.produced();
        core::sync::atomic::fence(core::sync::atomic::Ordering::Acquire);
        // SAFETY: the ring the kernel mapped for this log, 16 KiB, for the life of the process;
        // the engine writes only granules past `produced` read above, which this reader does not
        // look at.
        let ring = unsafe { core::slice::from_raw_parts(self.ring as *const u8, RING_BYTES) };
        Entries { reader: Reader::new(ring, produced, self.consumed()), header: self.header, error: None }
    }

    /// Runs `handler` on every entry waiting (polling mode); returns how many.
    pub fn poll(&mut self, mut handler: impl FnMut(&Entry<'_>)) -> Result<usize, Error> {
        let mut entries = self.entries();
        let mut n = 0;
        for e in entries.by_ref() {
            handler(&e);
            n += 1;
        }
        entries.release()?;
        Ok(n)
    }

    /// Blocking mode: runs `handler` on the entries waiting, and if there were none waits for
    /// some, or `Timeout` after `timeout_us`. With a notice opcode ([`Log::notify_on`]) it
    /// sleeps in the mailbox until the engine's interrupt tells it (a notice is queued before
    /// the entries it is about are looked at, so none is missed); without one it looks every
    /// `nap_us`.
    pub fn wait(&mut self, timeout_us: u64, nap_us: u64, mut handler: impl FnMut(&Entry<'_>)) -> Result<usize, Error> {
        let start = crate::sys::time_us()?;
        loop {
            let n = self.poll(&mut handler)?;
            if n > 0 {
                return Ok(n);
            }
            let left = timeout_us.saturating_sub(crate::sys::time_us()?.saturating_sub(start));
            if left == 0 {
                return Err(Error::Timeout);
            }
            match self.notice {
                // A notice about entries already taken just means one more look.
                Some(op) => drop(crate::sys::mailbox_receive_within(Some(op), left)?),
                None => crate::sys::sleep_us(nap_us.min(left))?,
            }
        }
    }
}

impl Drop for Log {
    fn drop(&mut self) {
        let _ = close(self.iuid);
    }
}

/// `ACTIVE_CLOSE` of IUID `iuid`.
fn close(iuid: u8) -> Result<(), Error> {
    crate::sys::call4(nr::ACTIVE_CLOSE, [u64::from(iuid), 0, 0, 0]).map(drop)
}

/// The seed's `assoc_page(addr, act, hlr_id)`: marks the page holding `addr` with `actions` for
/// the log of IUID `handler` (which must be this process's: the kernel refuses any other).
pub fn assoc_page(addr: u64, actions: u64, handler: u8) -> Result<(), Error> {
    crate::sys::call4(nr::ACTIVE_ASSOC, [u64::from(handler), addr, actions, 0]).map(drop)
}

/// The log's entries; dropping it publishes how far they were consumed.
pub struct Entries<'a> {
    reader: Reader<'a>,
    header: u64,
    error: Option<LogError>,
}

impl<'a> Entries<'a> {
    /// Publishes what was consumed; an error if the ring was found corrupt.
    pub fn release(mut self) -> Result<(), Error> {
        self.publish();
        match self.error {
            Some(LogError::Corrupt) => Err(Error::Protocol(crate::error::ProtocolError::BadInterface)),
            None => Ok(()),
        }
    }

    fn publish(&mut self) {
        core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst);
        // SAFETY: the header page of this log (see `Log::word`); `consumed` is the process's.
        unsafe { core::ptr::write_volatile((self.header + header::CONSUMED) as *mut u32, self.reader.consumed()) };
    }
}

impl<'a> Iterator for Entries<'a> {
    type Item = Entry<'a>;
    fn next(&mut self) -> Option<Entry<'a>> {
        if self.error.is_some() {
            return None;
        }
        match self.reader.next_entry() {
            Ok(e) => e,
            Err(e) => {
                self.error = Some(e);
                None
            }
        }
    }
}

impl Drop for Entries<'_> {
    fn drop(&mut self) {
        self.publish();
    }
}

/// The seed's active flush: completes once `target`'s handler has taken every entry its log
/// (whose flushing page is at `flush_page` there) held when the flush arrived, so every active
/// access this process issued to `target` before (and whose completion it has seen) was taken;
/// entries others append meanwhile do not hold it back. An RDMA read of 8 bytes, which the
/// target's engine serves only then (`docs/hw/active-access.md`, "Flush"); until then the read
/// is retried by the R5's timeout. `Timeout` after `timeout_us` (0: none).
pub fn flush<D: crate::rdma::Doorbell>(
    rdma: &crate::rdma::Rdma<D>,
    target: u16,
    flush_page: u64,
    timeout_us: u64,
) -> Result<(), Error> {
    let mut word = [0u8; 8];
    rdma.read(&mut word, target, flush_page)?.wait(timeout_us).map(drop)
}

/// The distributed hash table of the seed's Listings 2 and 3 (`active-aa`'s DHT roles): one
/// process's volume, a table of `TABLE` buckets and an overflow heap of `HEAP` cells, each cell
/// `{elem, ptr}`; a collision goes to the next free heap cell, chained from its bucket. The RMA
/// baseline runs the insert remotely (CAS, fetch-and-add, swap, puts) on this layout; Active
/// Access runs [`local_insert`](dht::Volume::local_insert) in the owner's handler for one put.
pub mod dht {
    /// Buckets: the first page of a volume (the page Active Access marks).
    pub const TABLE: usize = 512;
    /// Overflow cells.
    pub const HEAP: usize = 256;
    /// Cells in all.
    pub const CELLS: usize = TABLE + HEAP;

    /// A volume, in the owner's memory (page-aligned: `elems[..TABLE]` is its first page).
    #[repr(C)]
    pub struct Volume {
        /// Cell `i`'s element (0: empty).
        pub elems: [u64; CELLS],
        /// Cell `i`'s next cell in its bucket's chain (0: none).
        pub ptrs: [u64; CELLS],
        /// The next free heap cell (starts at `TABLE`).
        pub next_free: u64,
        /// Per bucket, the last heap cell chained to it.
        pub last_ptr: [u64; TABLE],
    }

    /// Byte offsets of the fields, for the remote baseline.
    pub const ELEMS: u64 = core::mem::offset_of!(Volume, elems) as u64;
    pub const PTRS: u64 = core::mem::offset_of!(Volume, ptrs) as u64;
    pub const NEXT_FREE: u64 = core::mem::offset_of!(Volume, next_free) as u64;
    pub const LAST_PTR: u64 = core::mem::offset_of!(Volume, last_ptr) as u64;

    /// The overflow heap is full.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Overflow;

    /// An element's bucket.
    pub const fn bucket(elem: u64) -> usize {
        (elem % TABLE as u64) as usize
    }

    impl Volume {
        /// Empties it.
        pub fn clear(&mut self) {
            self.elems = [0; CELLS];
            self.ptrs = [0; CELLS];
            self.next_free = TABLE as u64;
            self.last_ptr = [0; TABLE];
        }

        /// Listing 2 with local operations (the AA handler's `local_insert`).
        pub fn local_insert(&mut self, elem: u64) -> Result<(), Overflow> {
            let pos = bucket(elem);
            if self.elems[pos] == 0 {
                self.elems[pos] = elem;
                return Ok(());
            }
            let free = self.next_free;
            self.next_free += 1;
            if free >= CELLS as u64 {
                return Err(Overflow);
            }
            self.elems[free as usize] = elem;
            let prev = core::mem::replace(&mut self.last_ptr[pos], free);
            if self.ptrs[pos] == 0 {
                self.ptrs[pos] = free;
            } else {
                self.ptrs[prev as usize] = free;
            }
            Ok(())
        }

        /// Whether the volume holds exactly `expected` (distinct, non-zero), each in its bucket's
        /// chain, and nothing else.
        pub fn holds_exactly(&self, expected: impl Iterator<Item = u64> + Clone) -> bool {
            let mut found = 0usize;
            for pos in 0..TABLE {
                let mut cell = pos;
                let mut steps = 0;
                loop {
                    let e = self.elems[cell];
                    if e == 0 || bucket(e) != pos {
                        if e != 0 || cell != pos {
                            return false;
                        }
                        break;
                    }
                    found += 1;
                    let next = self.ptrs[cell] as usize;
                    if next == 0 {
                        break;
                    }
                    steps += 1;
                    if !(TABLE..CELLS).contains(&next) || steps > HEAP {
                        return false;
                    }
                    cell = next;
                }
            }
            let wanted = expected.clone().count();
            found == wanted && expected.into_iter().all(|e| self.find(e))
        }

        fn find(&self, elem: u64) -> bool {
            let mut cell = bucket(elem);
            for _ in 0..=HEAP {
                if self.elems[cell] == elem {
                    return true;
                }
                match self.ptrs[cell] as usize {
                    0 => return false,
                    next if next < CELLS => cell = next,
                    _ => return false,
                }
            }
            false
        }
    }

    /// The elements of a run, in order (at most `TABLE`): element `k` collides with an earlier
    /// one's bucket with probability `pct` %, else takes a bucket no earlier element has. Yields
    /// the element and whether it collides; distinct and non-zero.
    #[derive(Clone)]
    pub struct Elements {
        rng: proto::rand::XorShift64,
        pct: u8,
        buckets: [u16; TABLE],
        k: usize,
        fresh: u64,
    }

    impl Elements {
        pub fn new(seed: u64, pct: u8) -> Self {
            Self { rng: proto::rand::XorShift64::new(seed), pct, buckets: [0; TABLE], k: 0, fresh: 0 }
        }
    }

    impl Iterator for Elements {
        type Item = (u64, bool);
        fn next(&mut self) -> Option<(u64, bool)> {
            if self.k >= TABLE {
                return None;
            }
            let collide = self.k > 0 && self.rng.below(100) < u64::from(self.pct);
            let pos = if collide {
                u64::from(self.buckets[self.rng.below(self.k as u64) as usize])
            } else {
                self.fresh += 1;
                ((self.fresh - 1) * 37) % TABLE as u64
            };
            self.buckets[self.k] = pos as u16;
            self.k += 1;
            Some((pos + TABLE as u64 * self.k as u64, collide))
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use std::boxed::Box;
        use std::vec::Vec;

        fn volume() -> Box<Volume> {
            let mut v: Box<Volume> =
                Box::new(Volume { elems: [0; CELLS], ptrs: [0; CELLS], next_free: 0, last_ptr: [0; TABLE] });
            v.clear();
            v
        }

        #[test]
        fn inserts_chain_collisions_and_the_check_is_exact() {
            let n = 120;
            let all: Vec<(u64, bool)> = Elements::new(7, 25).take(n).collect();
            let collisions = all.iter().filter(|e| e.1).count();
            assert!((15..=45).contains(&collisions), "about 25 %: {collisions}");
            let elems: Vec<u64> = all.iter().map(|e| e.0).collect();
            let mut sorted = elems.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted.len(), n, "distinct");
            let mut v = volume();
            for &e in &elems {
                v.local_insert(e).unwrap();
            }
            assert_eq!(v.next_free as usize - TABLE, collisions, "one heap cell per collision");
            assert!(v.holds_exactly(elems.iter().copied()));
            // One missing, one extra, one in the wrong bucket: not exact.
            assert!(!v.holds_exactly(elems[1..].iter().copied()));
            let mut w = volume();
            for &e in &elems[1..] {
                w.local_insert(e).unwrap();
            }
            assert!(!w.holds_exactly(elems.iter().copied()));
            let mut x = volume();
            for &e in &elems {
                x.local_insert(e).unwrap();
            }
            x.elems[TABLE] ^= TABLE as u64 * 3 + 1;
            assert!(!x.holds_exactly(elems.iter().copied()));
            // A chain that loops is refused, not followed for ever.
            let mut y = volume();
            for &e in &elems {
                y.local_insert(e).unwrap();
            }
            let first = (TABLE..CELLS).find(|&c| y.elems[c] != 0).unwrap();
            y.ptrs[first] = first as u64;
            assert!(!y.holds_exactly(elems.iter().copied()));
        }

        #[test]
        fn the_heap_overflows_cleanly() {
            let mut v = volume();
            v.local_insert(5).unwrap();
            for k in 1..=HEAP as u64 {
                v.local_insert(5 + k * TABLE as u64).unwrap();
            }
            assert_eq!(v.local_insert(5 + (HEAP as u64 + 1) * TABLE as u64), Err(Overflow));
        }
    }
}
