//! User-level RDMA on ordinary virtual addresses (`docs/hw/pldma.md`, "Using the queues"): a
//! transfer between a slice of this process and `(node, address, length)` in the process of the
//! same protection domain on `node` (this node included). No pinning and no special buffers: the
//! engine translates both ends through the SMMU context bank of the PD, which walks the process's
//! own page tables.
//!
//! - [`Rdma::write`] / [`Rdma::read`] post one work-queue entry each and return a [`Transfer`],
//!   which borrows the local slice until the transfer ends: [`Transfer::status`] looks,
//!   [`Transfer::wait`] sleeps in the kernel (`RDMA_WAIT`) until it ends, [`Rdma::poll`] looks at
//!   many without blocking. Dropping a transfer that is still running waits for it (the R5 ends
//!   every transfer with exactly one completion, at worst after its timeouts), so a slice is never
//!   handed back while the engine may still touch it.
//! - Completions are matched by tag; a completion whose tag names no transfer in progress (a
//!   stale or forged entry) is counted ([`Rdma::strays`]) and ignored.
//! - The seed's `unim_dma_*` calls are a layer over these ([`crate::unim`]).
//!
//! Generic over a [`Doorbell`] so that the bookkeeping runs on the host against a fake R5.

use crate::error::Error;
use core::cell::RefCell;
use core::marker::PhantomData;
use proto::rdma::queue::{Cqe, QueueSet, WQ_ENTRIES, Wqe};
pub use proto::rdma::queue::{CqeStatus, Direction};

/// What the queues need from below: the doorbell, and a way to sleep until a completion.
pub trait Doorbell {
    /// Rings the PD page's doorbell with the work queue's new head.
    fn ring(&mut self, head: u32);
    /// Sleeps until the completion queue holds an entry (the kernel arms it first), or
    /// `Err(Timeout)` after `timeout_us` (0: no limit).
    fn wait(&mut self, timeout_us: u64) -> Result<(), Error>;
    /// The engine's counts for this PD: (events lost, RAPFs refused).
    fn engine_counts(&self) -> (u32, u32);
}

/// A doorbell lent to the queues (the host tests keep their fake R5 to look at it afterwards).
impl<D: Doorbell + ?Sized> Doorbell for &mut D {
    fn ring(&mut self, head: u32) {
        (**self).ring(head);
    }

    fn wait(&mut self, timeout_us: u64) -> Result<(), Error> {
        (**self).wait(timeout_us)
    }

    fn engine_counts(&self) -> (u32, u32) {
        (**self).engine_counts()
    }
}

/// What was refused or lost of this process's PD (`docs/hw/pldma.md`, "One job cannot cost
/// another its events"): counts since the PD's queues were set up (the engine's wrap at 2^32).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RdmaCounters {
    /// WQEs the R5 refused as malformed (each ended with a BadRequest completion).
    pub bad_wqes: u32,
    /// Events of this PD the engine could not post: the PD's share of the event ring was full.
    pub events_lost: u32,
    /// `rapf` writes the engine refused: no fault of this PD awaited that answer.
    pub rapf_refused: u32,
}

/// Where a transfer stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Posted; no completion yet.
    Pending,
    /// Every byte is at the destination.
    Done(u32),
    /// Ended with this completion status (never `Ok`); the destination holds any mix of old and
    /// new bytes.
    Failed(CqeStatus),
}

impl Status {
    /// The transfer's end as a result: the bytes moved, the completion's error, or `Timeout`
    /// while it is still pending (a wait that gave up).
    pub fn result(self) -> Result<u32, Error> {
        match self {
            Status::Done(len) => Ok(len),
            Status::Failed(status) => Err(Error::Transfer(status)),
            Status::Pending => Err(Error::Timeout),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Free,
    Busy { tag: u64, status: Status },
}

/// The process's queue state (inside [`Rdma`]'s cell).
pub struct Queues<D: Doorbell> {
    set: &'static QueueSet,
    doorbell: D,
    /// Slot `i` tracks the transfer whose tag is `i` modulo [`WQ_ENTRIES`]; at most one per slot.
    slots: [Slot; WQ_ENTRIES],
    /// Tags: a transfer's is `serial * WQ_ENTRIES + slot`, never reused in this process.
    serial: u64,
    strays: u64,
    remote_writes: u64,
}

impl<D: Doorbell> Queues<D> {
    /// Posts one WQE for `[local, local + len)` here and `remote` at `node`; returns its tag.
    /// `BadRequest` for a range the R5 would refuse (checked here first), `Busy` when
    /// [`WQ_ENTRIES`] transfers are in progress.
    ///
    /// # Safety
    ///
    /// The local range is memory of this process that nothing else reads (for a Read) or writes
    /// until the transfer has ended ([`status`](Self::status) is not `Pending`).
    pub unsafe fn post(
        &mut self,
        direction: Direction,
        local: u64,
        len: usize,
        node: u16,
        remote: u64,
    ) -> Result<u64, Error> {
        let len32 = u32::try_from(len).ok().filter(|&l| l > 0);
        let in_user_half = |va: u64| va.checked_add(len as u64).is_some_and(|end| end <= hal::pldma::USER_VA_LIMIT);
        let Some(len) = len32.filter(|_| in_user_half(local) && in_user_half(remote)) else {
            return Err(Error::Transfer(CqeStatus::BadRequest));
        };
        self.reap();
        let index = self.slots.iter().position(|s| *s == Slot::Free).ok_or(Error::Busy)?;
        self.serial += 1;
        let tag = self.serial * WQ_ENTRIES as u64 + index as u64;
        let wqe = Wqe { direction, node, len, local, remote, tag, notify: None };
        // SAFETY: this process is its queue set's only WQ producer, and `Queues` is its only
        // user (one per process, behind `Rdma`'s cell).
        let mut wq = unsafe { self.set.wq.producer() };
        // At most WQ_ENTRIES transfers are in progress, so the WQ has room (the R5 keeps at
        // most that many of a PD between taking a WQE and its CQE).
        wq.push(wqe.encode()).map_err(|_| Error::Busy)?;
        self.slots[index] = Slot::Busy { tag, status: Status::Pending };
        if self.set.doorbell_needed() {
            self.doorbell.ring(self.set.wq.produced());
        }
        Ok(tag)
    }

    /// Takes every completion the CQ holds.
    pub fn reap(&mut self) {
        // SAFETY: the only CQ consumer (as in `post`).
        let mut cq = unsafe { self.set.cq.consumer() };
        while let Some(raw) = cq.pop() {
            match Cqe::decode(&raw) {
                Ok(Cqe::Local { tag, len, status, .. }) => {
                    let slot = &mut self.slots[(tag % WQ_ENTRIES as u64) as usize];
                    match slot {
                        Slot::Busy { tag: t, status: s @ Status::Pending } if *t == tag => {
                            *s = match status {
                                CqeStatus::Ok => Status::Done(len),
                                failed => Status::Failed(failed),
                            };
                        }
                        _ => self.strays += 1,
                    }
                }
                Ok(Cqe::RemoteWrite { .. }) => self.remote_writes += 1,
                Err(_) => self.strays += 1,
            }
        }
    }

    /// The status of the transfer with `tag` (after taking the completions there are).
    pub fn status(&mut self, tag: u64) -> Status {
        self.reap();
        self.peek(tag)
    }

    fn peek(&self, tag: u64) -> Status {
        match self.slots[(tag % WQ_ENTRIES as u64) as usize] {
            Slot::Busy { tag: t, status } if t == tag => status,
            _ => Status::Failed(CqeStatus::BadRequest),
        }
    }

    /// Sleeps until the transfer with `tag` ends, or `Timeout` after `timeout_us` (0: none).
    pub fn wait(&mut self, tag: u64, timeout_us: u64) -> Result<Status, Error> {
        loop {
            let status = self.status(tag);
            if status != Status::Pending {
                return Ok(status);
            }
            self.doorbell.wait(timeout_us)?;
        }
    }

    /// Forgets the transfer with `tag` (ended, or abandoned by its owner).
    pub fn release(&mut self, tag: u64) {
        let slot = &mut self.slots[(tag % WQ_ENTRIES as u64) as usize];
        if matches!(slot, Slot::Busy { tag: t, .. } if *t == tag) {
            *slot = Slot::Free;
        }
    }

    /// Transfers posted and not released.
    pub fn in_progress(&self) -> usize {
        self.slots.iter().filter(|s| **s != Slot::Free).count()
    }
}

/// The process's RDMA queues. One per process ([`Rdma::open`] on the target).
pub struct Rdma<D: Doorbell> {
    queues: RefCell<Queues<D>>,
}

impl<D: Doorbell> Rdma<D> {
    /// Over an existing queue set (zeroed, or as the kernel set it up) and its doorbell.
    ///
    /// # Safety
    ///
    /// `set` is this process's queue set and nothing else produces its WQ or consumes its CQ
    /// for as long as the returned value lives.
    pub unsafe fn new(set: &'static QueueSet, doorbell: D) -> Self {
        let queues = Queues { set, doorbell, slots: [Slot::Free; WQ_ENTRIES], serial: 0, strays: 0, remote_writes: 0 };
        Self { queues: RefCell::new(queues) }
    }

    /// Starts copying `local` to `remote` in the process of this PD on `node`.
    pub fn write<'a>(&'a self, local: &'a [u8], node: u16, remote: u64) -> Result<Transfer<'a, D>, Error> {
        // SAFETY: the transfer borrows `local` until it has ended (its drop waits).
        let tag = unsafe {
            self.queues.borrow_mut().post(Direction::Write, local.as_ptr() as u64, local.len(), node, remote)
        }?;
        Ok(Transfer { rdma: self, tag, _buffer: PhantomData })
    }

    /// Starts copying `local.len()` bytes from `remote` in the process of this PD on `node` into
    /// `local`.
    pub fn read<'a>(&'a self, local: &'a mut [u8], node: u16, remote: u64) -> Result<Transfer<'a, D>, Error> {
        // SAFETY: as in `write`, mutably.
        let tag = unsafe {
            self.queues.borrow_mut().post(Direction::Read, local.as_ptr() as u64, local.len(), node, remote)
        }?;
        Ok(Transfer { rdma: self, tag, _buffer: PhantomData })
    }

    /// Without blocking: the index in `transfers` of one that has ended, if any.
    pub fn poll(&self, transfers: &[&Transfer<'_, D>]) -> Option<usize> {
        let mut q = self.queues.borrow_mut();
        q.reap();
        transfers.iter().position(|t| q.peek(t.tag) != Status::Pending)
    }

    /// Completions that named no transfer in progress (stale or forged), ignored.
    pub fn strays(&self) -> u64 {
        self.queues.borrow().strays
    }

    /// NOTIFY writes of other processes that landed here.
    pub fn remote_writes(&self) -> u64 {
        self.queues.borrow().remote_writes
    }

    /// What the R5 and the engine refused or lost of this process's PD.
    pub fn counters(&self) -> RdmaCounters {
        let q = self.queues.borrow();
        let (events_lost, rapf_refused) = q.doorbell.engine_counts();
        RdmaCounters { bad_wqes: q.set.bad_wqes.load(core::sync::atomic::Ordering::Acquire), events_lost, rapf_refused }
    }

    /// Runs `f` on the queue state: for the `unim_dma_*` wrappers, which track transfers by tag.
    pub fn with_queues<R>(&self, f: impl FnOnce(&mut Queues<D>) -> R) -> R {
        f(&mut self.queues.borrow_mut())
    }
}

/// A transfer in progress; it holds the local slice until it ends.
pub struct Transfer<'a, D: Doorbell> {
    rdma: &'a Rdma<D>,
    tag: u64,
    _buffer: PhantomData<&'a mut [u8]>,
}

impl<D: Doorbell> Transfer<'_, D> {
    /// Where it stands, without blocking.
    pub fn status(&self) -> Status {
        self.rdma.queues.borrow_mut().status(self.tag)
    }

    /// Sleeps until it ends: the bytes transferred, or the completion's error. `Timeout` after
    /// `timeout_us` (0: none); the transfer then goes on, and dropping it waits for its end.
    pub fn wait(&self, timeout_us: u64) -> Result<u32, Error> {
        self.rdma.queues.borrow_mut().wait(self.tag, timeout_us)?.result()
    }

    /// The tag its WQE carries.
    pub fn tag(&self) -> u64 {
        self.tag
    }
}

impl<D: Doorbell> Drop for Transfer<'_, D> {
    fn drop(&mut self) {
        let mut q = self.rdma.queues.borrow_mut();
        // The engine may still touch the slice: wait for the one completion the R5 posts for
        // every WQE (a failed wait, which only a broken kernel gives, leaves the slot taken so
        // its tag is never reused).
        if q.wait(self.tag, 0).is_ok() {
            q.release(self.tag);
        }
    }
}

/// The real doorbell: the process's PLDMA PD page (forwarded on QEMU, a device page on the
/// board), and `RDMA_WAIT`.
pub struct HwDoorbell {
    page: hal::pldma::driver::PdPage,
}

// SAFETY: a process has one thread; the page is this process's own PD page.
unsafe impl Send for HwDoorbell {}

impl Doorbell for HwDoorbell {
    fn ring(&mut self, head: u32) {
        self.page.ring(head);
    }

    fn wait(&mut self, timeout_us: u64) -> Result<(), Error> {
        crate::sys::rdma_wait(timeout_us)
    }

    fn engine_counts(&self) -> (u32, u32) {
        (self.page.events_lost(), self.page.rapf_refused())
    }
}

static OPENED: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// The process's queues, once (`Busy` the second time): `Syscall(NoPd)` if the process holds no
/// RDMA resources on this node (it shares its PD with another process here, or the node has no
/// R5).
pub fn open() -> Result<Rdma<HwDoorbell>, Error> {
    let queues = crate::sys::rdma_queues()?;
    if OPENED.swap(true, core::sync::atomic::Ordering::AcqRel) {
        return Err(Error::Busy);
    }
    // SAFETY: the kernel mapped the queue set (two pages, read/write, uncached) and the PD page
    // at these addresses for the life of the process; `OPENED` makes this the only user.
    unsafe {
        let set = &*(queues.queue_set as *const QueueSet);
        let page = hal::pldma::driver::PdPage::new(queues.pd_page as usize);
        Ok(Rdma::new(set, HwDoorbell { page }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeR5;
    use std::vec::Vec;

    #[test]
    fn write_and_read_move_every_byte_and_ring_once_each() {
        let mut r5 = FakeR5::new();
        let set = r5.set;
        // SAFETY: the fake's queue set, used by this `Rdma` only.
        let rdma = unsafe { Rdma::new(set, &mut r5) };
        let src: Vec<u8> = (0..5000u32).map(|i| (i * 7) as u8).collect();
        let mut remote = std::vec![0u8; 5003];
        let remote_va = remote.as_mut_ptr() as u64 + 3;
        let t = rdma.write(&src, 1, remote_va).unwrap();
        assert_eq!(t.status(), Status::Pending);
        assert_eq!(t.wait(0), Ok(5000));
        drop(t);
        assert_eq!(&remote[3..], &src[..]);
        let mut back = std::vec![0u8; 5000];
        let t = rdma.read(&mut back, 1, remote_va).unwrap();
        assert_eq!(t.wait(0), Ok(5000));
        drop(t);
        assert_eq!(back, src);
        assert_eq!(rdma.with_queues(|q| q.in_progress()), 0, "handles gone: slots free");
        assert_eq!(r5.rings, 2, "one doorbell per WQE");
    }

    #[test]
    fn the_counters_show_what_the_r5_refused() {
        let mut r5 = FakeR5::new();
        let set = r5.set;
        // SAFETY: as above.
        let rdma = unsafe { Rdma::new(set, &mut r5) };
        assert_eq!(rdma.counters(), RdmaCounters::default());
        set.bad_wqes.store(3, core::sync::atomic::Ordering::Release);
        assert_eq!(rdma.counters().bad_wqes, 3);
    }

    #[test]
    fn no_doorbell_while_the_r5_polls_the_wq() {
        let mut r5 = FakeR5::new();
        let set = r5.set;
        // SAFETY: as above.
        let rdma = unsafe { Rdma::new(set, &mut r5) };
        let src = [7u8; 64];
        let mut dst = [0u8; 64];
        set.wq_polled.store(1, core::sync::atomic::Ordering::Release);
        assert_eq!(rdma.write(&src, 0, dst.as_mut_ptr() as u64).unwrap().wait(0), Ok(64));
        set.wq_polled.store(0, core::sync::atomic::Ordering::Release);
        assert_eq!(rdma.write(&src[..32], 0, dst.as_mut_ptr() as u64).unwrap().wait(0), Ok(32));
        assert_eq!(dst, src);
        assert_eq!(r5.rings, 1, "only the WQE posted while the R5 did not poll rang");
    }

    #[test]
    fn completions_out_of_order_failures_and_strays_are_told_apart() {
        let mut r5 = FakeR5::new();
        let set = r5.set;
        r5.fail.push(2 * WQ_ENTRIES as u64 + 1);
        r5.stray = Some(12345);
        // SAFETY: as above.
        let rdma = unsafe { Rdma::new(set, &mut r5) };
        let bufs: Vec<Vec<u8>> = (0..3u8).map(|i| std::vec![i + 1; 100]).collect();
        let mut dst = std::vec![0u8; 300];
        let base = dst.as_mut_ptr() as u64;
        let ts: Vec<_> =
            bufs.iter().enumerate().map(|(i, b)| rdma.write(b, 0, base + 100 * i as u64).unwrap()).collect();
        assert_eq!(rdma.poll(&ts.iter().collect::<Vec<_>>()), None, "nothing has ended");
        assert_eq!(ts[2].wait(0), Ok(100));
        assert_eq!(rdma.poll(&[&ts[0]]), Some(0), "served in the same round");
        assert_eq!(ts[1].wait(0), Err(Error::Transfer(CqeStatus::FaultRemote)));
        assert_eq!(ts[0].wait(0), Ok(100));
        assert_eq!(rdma.strays(), 1, "the forged completion was ignored");
        drop(ts);
        assert_eq!(&dst[..100], &[1; 100][..]);
        assert_eq!(&dst[100..200], &[0; 100][..], "the failed transfer wrote nothing here");
        assert_eq!(&dst[200..], &[3; 100][..]);
    }

    #[test]
    fn bad_ranges_are_refused_before_posting_and_sixty_four_is_the_limit() {
        let mut r5 = FakeR5::new();
        let set = r5.set;
        // SAFETY: as above.
        let rdma = unsafe { Rdma::new(set, &mut r5) };
        let bad = Err(Error::Transfer(CqeStatus::BadRequest));
        assert_eq!(rdma.write(&[], 0, 0x1000).map(|t| t.tag()), bad, "empty");
        assert_eq!(rdma.write(&[1], 0, hal::pldma::USER_VA_LIMIT).map(|t| t.tag()), bad, "past the user half");
        let src = [7u8; 16];
        let mut dst = std::vec![0u8; 16 * 65];
        let base = dst.as_mut_ptr() as u64;
        let ts: Vec<_> = (0..64).map(|i| rdma.write(&src, 0, base + 16 * i).unwrap()).collect();
        assert_eq!(rdma.write(&src, 0, base + 16 * 64).map(|t| t.tag()), Err(Error::Busy));
        drop(ts);
        assert!(dst[..16 * 64].iter().all(|&b| b == 7), "dropping waits for every transfer");
        assert!(rdma.write(&src, 0, base + 16 * 64).is_ok(), "room again");
    }
}
