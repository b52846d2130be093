//! What the atomic service needs from the rest of the kernel, as small traits with host fakes.

use core::num::NonZeroU64;

use crate::gsas::mailbox::{DeliverError, MailboxService};
use crate::gsas::softmmu::Frame;
use hal::pldma::Pd;
use proto::gsas::{Notification, PAGE_SIZE, Pid, VaOp, VaWidth};

/// Access width of a plain load or store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Width {
    U8,
    U32,
    U64,
}

impl Width {
    pub const fn bytes(self) -> usize {
        match self {
            Width::U8 => 1,
            Width::U32 => 4,
            Width::U64 => 8,
        }
    }
}

/// The local memory refused an access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryFault;

/// Loads, stores and atomics on local frames, by physical address. The service only passes
/// addresses inside frames it mapped, aligned to the access width (8 for `store128`).
///
/// The service applies requests one at a time, which makes them atomic with respect to each
/// other (seed §2.2.6); an implementation still uses single-copy-atomic accesses of the given
/// width so a (forbidden, seed §2.3.2) local access never sees a torn value.
pub trait LocalMemory {
    fn load(&mut self, pa: u64, width: Width) -> Result<u64, MemoryFault>;
    /// Stores the low `width` bytes of `value`.
    fn store(&mut self, pa: u64, width: Width, value: u64) -> Result<(), MemoryFault>;
    fn store128(&mut self, pa: u64, value: u128) -> Result<(), MemoryFault>;
    /// Stores `new` if the value is `expected`; returns whether it did.
    fn compare_exchange64(&mut self, pa: u64, expected: u64, new: u64) -> Result<bool, MemoryFault>;
    /// Wrapping add; returns the previous value.
    fn fetch_add64(&mut self, pa: u64, addend: u64) -> Result<u64, MemoryFault>;
    /// Returns the previous value.
    fn swap64(&mut self, pa: u64, new: u64) -> Result<u64, MemoryFault>;
    fn read_frame(&mut self, frame: Frame, out: &mut [u8; PAGE_SIZE as usize]) -> Result<(), MemoryFault>;
    fn zero_frame(&mut self, frame: Frame) -> Result<(), MemoryFault>;
    /// A process atomic (`VaOp::apply` says what it does) on the `width` word at `pa`, a frame
    /// of a process that the process itself reaches concurrently: one atomic read-modify-write
    /// (an atomic load for `Fetch`), so that the process's own atomics on the word are atomic
    /// with it. Returns the old value, zero-extended.
    fn va_atomic(&mut self, pa: u64, op: VaOp, width: VaWidth, arg1: u64, arg2: u64) -> Result<u64, MemoryFault>;
}

/// Why a process atomic found no word to apply to ([`ProcessMemory::with_word`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VaFault {
    /// No live process of the PD on this node.
    NoProcess,
    /// The address is not user memory of that process: outside its map, or in its device
    /// window (device pages take no atomics and are not the kernel's to reach).
    Unmapped,
    /// A write to a page the process may only read.
    ReadOnly,
    /// The page was not resident and no frame (or table) was left for it.
    NoFrame,
    /// The local memory refused the access.
    Memory,
}

impl From<MemoryFault> for VaFault {
    fn from(_: MemoryFault) -> Self {
        VaFault::Memory
    }
}

/// The memory of this node's processes, for process atomics (`docs/hw/gsas-packets.md`,
/// "Process atomics").
pub trait ProcessMemory {
    /// Finds the process of PD `pd` on this node, makes the page of `va` resident as the
    /// process's first touch would (a write touch when `write`: the page must be writable),
    /// and runs `apply` on the physical address of `va`, all under the lock that keeps the
    /// process and its page from going meanwhile. Returns what `apply` returned.
    fn with_word(
        &mut self,
        pd: Pd,
        va: u64,
        write: bool,
        apply: &mut dyn FnMut(u64) -> Result<u64, MemoryFault>,
    ) -> Result<u64, VaFault>;
}

/// Local frames for shared pages.
pub trait FrameAllocator {
    fn allocate(&mut self) -> Option<Frame>;
    fn free(&mut self, frame: Frame);
}

/// A RemoteSpawn the service validated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpawnRequest<'a> {
    /// The requester (from the trusted prefix).
    pub parent: Pid,
    /// Image name from the description page.
    pub image: &'a str,
    /// What the child reads with `readThreadArgument` (seed §2.3.5).
    pub argument: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpawnError {
    UnknownImage,
    NoResources,
}

pub trait Spawner {
    /// Starts the process; returns its nonzero handle (seed §2.3.5: nonzero on success).
    fn spawn(&mut self, request: &SpawnRequest<'_>) -> Result<NonZeroU64, SpawnError>;
}

/// Where Notify requests go; the mailbox service is one.
pub trait NotificationSink {
    fn notify(&mut self, from: Pid, notification: Notification) -> Result<(), DeliverError>;
}

/// Delivers and keeps the resulting actions for the kernel to run ([`MailboxActions::take`]).
#[derive(Debug)]
pub struct MailboxActions<'a> {
    pub mailbox: &'a mut MailboxService,
    pub actions: alloc::vec::Vec<crate::gsas::mailbox::Delivery>,
}

impl MailboxActions<'_> {
    pub fn take(&mut self) -> alloc::vec::Vec<crate::gsas::mailbox::Delivery> {
        core::mem::take(&mut self.actions)
    }
}

impl NotificationSink for MailboxActions<'_> {
    fn notify(&mut self, from: Pid, notification: Notification) -> Result<(), DeliverError> {
        let delivery = self.mailbox.deliver(from, notification)?;
        self.actions.push(delivery);
        Ok(())
    }
}

/// The service's backends for one call.
pub struct Env<'a> {
    pub memory: &'a mut dyn LocalMemory,
    pub frames: &'a mut dyn FrameAllocator,
    pub spawner: &'a mut dyn Spawner,
    pub notifications: &'a mut dyn NotificationSink,
    pub processes: &'a mut dyn ProcessMemory,
}

impl core::fmt::Debug for Env<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Env")
    }
}
