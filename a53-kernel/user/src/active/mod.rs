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
//!
//! The seed's use cases, each a program (`a53-kernel/user/README.md`) whose plan and checks are
//! here, host-tested: [`dht`] (`active-dht`, Listings 2 and 3), [`checkpoint`]
//! (`active-checkpoint`, incremental checkpointing with put logging) and [`count`]
//! (`active-count`, access counting with get counting); [`team`] is their common shape (an
//! owner here, a member on every other node), [`PacketId`] and [`Seen`] tell a retried get's
//! copies apart, and [`pattern`] is the bytes they write and check.

pub mod checkpoint;
pub mod count;
pub mod dht;
pub mod team;

use crate::error::Error;
use hal::pldma::active::header;
pub use hal::pldma::active::{Entry, FLAG_WRITTEN, IUIDS, LogEntry, LogError, Reader};
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
    /// some ([`Log::wait_for_entries`]); `Timeout` after `timeout_us`.
    pub fn wait(&mut self, timeout_us: u64, nap_us: u64, handler: impl FnMut(&Entry<'_>)) -> Result<usize, Error> {
        self.wait_for_entries(timeout_us, nap_us)?;
        self.poll(handler)
    }

    /// Returns once entries wait, or `Timeout` after `timeout_us`. With a notice opcode
    /// ([`Log::notify_on`]) it sleeps in the mailbox until the engine's interrupt tells it (a
    /// notice is queued before the entries it is about are looked at, so none is missed); without
    /// one it looks every `nap_us`.
    pub fn wait_for_entries(&mut self, timeout_us: u64, nap_us: u64) -> Result<(), Error> {
        let start = crate::sys::time_us()?;
        loop {
            if self.pending() {
                return Ok(());
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

/// Byte `i` of the data named `seed`: what the Active Access programs write (or serve) and
/// check, so that a byte out of place shows.
pub fn pattern(seed: u64, i: usize) -> u8 {
    (seed.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left((i % 61) as u32) as usize ^ i.wrapping_mul(131)) as u8
}

/// What names one logged packet: the remote node, and the block's tid and first seq, and the
/// packet's index in it (`docs/hw/active-access.md`, "Log entry header"). A get retried after a
/// lost packet is logged again under the same name; two different accesses never share one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketId {
    pub node: u16,
    pub tid: u16,
    pub first_seq: u16,
    pub index: u8,
}

impl PacketId {
    pub fn of(h: &LogEntry) -> Self {
        Self { node: h.node, tid: h.tid, first_seq: h.first_seq, index: h.index }
    }

    /// The fields in one word, never 0 (the empty slot of [`Seen`]).
    fn word(self) -> u64 {
        (u64::from(self.node) << 40
            | u64::from(self.tid) << 24
            | u64::from(self.first_seq) << 8
            | u64::from(self.index))
            + 1
    }
}

/// [`Seen::first`] has no room for another packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeenFull;

/// The packets seen so far, up to `N - 1` of them (`N` a power of two; no allocation: an open
/// hash table in place): a handler that counts accesses counts a packet logged twice (a
/// retried get) once.
pub struct Seen<const N: usize> {
    slots: [u64; N],
    len: usize,
}

impl<const N: usize> Default for Seen<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Seen<N> {
    const FITS: () = assert!(N.is_power_of_two() && N >= 2);

    pub const fn new() -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::FITS;
        Self { slots: [0; N], len: 0 }
    }

    /// Distinct packets seen.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Records `id`: whether it is the first time it is seen.
    pub fn first(&mut self, id: PacketId) -> Result<bool, SeenFull> {
        let word = id.word();
        let mut at = (word.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as usize % N;
        loop {
            match self.slots[at] {
                0 if self.len + 1 >= N => return Err(SeenFull),
                0 => {
                    self.slots[at] = word;
                    self.len += 1;
                    return Ok(true);
                }
                w if w == word => return Ok(false),
                _ => at = (at + 1) % N,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packet_seen_again_is_not_first_and_every_field_tells_packets_apart() {
        let id = PacketId { node: 3, tid: 0xffff, first_seq: 0x1234, index: 7 };
        let mut seen = Seen::<64>::new();
        assert_eq!(seen.first(id), Ok(true));
        assert_eq!(seen.first(id), Ok(false), "a retried get's copy");
        for other in [
            PacketId { node: 2, ..id },
            PacketId { tid: 0, ..id },
            PacketId { first_seq: 0x1235, ..id },
            PacketId { index: 8, ..id },
            PacketId { node: 0, tid: 0, first_seq: 0, index: 0 },
        ] {
            assert_eq!(seen.first(other), Ok(true), "{other:?}");
        }
        assert_eq!(seen.len(), 6);
    }

    #[test]
    fn the_set_fills_without_looping_and_keeps_what_it_has() {
        let mut seen = Seen::<16>::new();
        let id = |k: u16| PacketId { node: 1, tid: k, first_seq: k, index: 0 };
        for k in 0..15 {
            assert_eq!(seen.first(id(k)), Ok(true));
        }
        assert_eq!(seen.first(id(15)), Err(SeenFull));
        assert!((0..15).all(|k| seen.first(id(k)) == Ok(false)), "every one still found");
    }

    #[test]
    fn the_pattern_differs_by_seed_and_place() {
        let a: std::vec::Vec<u8> = (0..256).map(|i| pattern(1, i)).collect();
        let b: std::vec::Vec<u8> = (0..256).map(|i| pattern(2, i)).collect();
        assert_ne!(a, b);
        assert!(a.windows(2).filter(|w| w[0] == w[1]).count() < 16);
    }
}
