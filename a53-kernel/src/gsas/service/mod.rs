//! The atomic service (seed §2.2.4, §2.2.6-§2.2.8; `docs/hw/gsas-packets.md`), as a pure function
//! of its state (the software MMU and the next free virtual page) and its inputs (one packet
//! from vmbox interface 0 and the backends in [`Env`]).
//!
//! Every request is answered (choice: the seed drops invalid requests, §2.2.6 step 11, which
//! leaves the requester waiting forever; we answer with an error code instead), except a packet
//! whose sender PID names interface 0: only atomic services send from PIF 0, so it is a reply
//! that reached a service interface, and answering it could start a loop between services.
//!
//! Checks, in this order: opcode and reserved byte; the address's node is this node; the
//! address's alignment and page bounds (seed §2.4.1, enforced instead of "ignoring" low bits);
//! unused arguments are zero and used ones in range; translation; the sender's rights;
//! resources. The first failing check is the error code. Process atomics (0x50..=0x5F) translate
//! through the sender's job's process instead of the software MMU: `process_atomics` has their
//! checks.

mod backend;
mod ops;
mod process_atomics;
mod replies;

pub use backend::{
    Env, FrameAllocator, LocalMemory, MailboxActions, MemoryFault, NotificationSink, ProcessMemory, SpawnError,
    SpawnRequest, Spawner, VaFault, Width,
};
pub use process_atomics::job_pd;
pub use replies::Replies;

use alloc::boxed::Box;

use crate::gsas::softmmu::{Access, FibonacciHasher, MmuError, PageEntry, PageHasher, SoftMmu};
use hal::packetizer::PACKET_BYTES;
use proto::gsas::{
    DomainId, ErrorCode, GlobalAddress, MAX_ALLOC_PAGES, PAGE_SIZE, Pid, RawRequest, Response, static_check,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServiceConfig {
    /// This node: the partition the service serves.
    pub node: u16,
    /// Most pages one allocSharedPage may ask for (the API's quantity is a `uint16_t`).
    pub max_alloc_pages: u32,
    /// Software MMU: 2^bits buckets.
    pub mmu_bucket_bits: u32,
    /// Software MMU entries: the most shared pages the node holds.
    pub mmu_capacity: usize,
}

impl ServiceConfig {
    pub const fn new(node: u16) -> Self {
        Self { node, max_alloc_pages: MAX_ALLOC_PAGES as u32, mmu_bucket_bits: 12, mmu_capacity: 16384 }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServiceStats {
    pub requests: u64,
    pub errors: u64,
    pub dropped: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// The sender PID names interface 0 (see the module comment).
    FromServiceInterface,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Reply(Replies),
    Dropped(DropReason),
}

/// What a successful operation produced.
enum Done {
    Value(u64),
    Page(Box<[u8; PAGE_SIZE as usize]>),
}

#[derive(Debug)]
pub struct AtomicService<H = FibonacciHasher> {
    node: u16,
    mmu: SoftMmu<H>,
    /// Next unused page index of this partition. Index 0 is never handed out, so no allocation
    /// is at offset 0 (NULL on node 0), and indices are never reused, so a stale address after a
    /// free is Unmapped instead of reaching a later allocation.
    next_page: u64,
    max_alloc_pages: u32,
    stats: ServiceStats,
}

impl AtomicService<FibonacciHasher> {
    pub fn new(config: ServiceConfig) -> Result<Self, MmuError> {
        Self::with_hasher(config, FibonacciHasher)
    }
}

impl<H: PageHasher> AtomicService<H> {
    pub fn with_hasher(config: ServiceConfig, hasher: H) -> Result<Self, MmuError> {
        Ok(Self {
            node: config.node,
            mmu: SoftMmu::with_hasher(config.mmu_bucket_bits, config.mmu_capacity, hasher)?,
            next_page: 1,
            max_alloc_pages: config.max_alloc_pages,
            stats: ServiceStats::default(),
        })
    }

    pub fn node(&self) -> u16 {
        self.node
    }

    /// The PID the packetizer puts on this service's replies (PIF 0).
    pub fn pid(&self) -> Pid {
        Pid::atomic_service(self.node)
    }

    pub fn mmu(&self) -> &SoftMmu<H> {
        &self.mmu
    }

    pub fn stats(&self) -> ServiceStats {
        self.stats
    }

    /// Serves one packet dequeued from mailbox interface 0. The sender is the packetizer's
    /// prefix (bytes 0..6); nothing in the rest of the packet can change who is asking.
    pub fn handle(&mut self, packet: &[u8; PACKET_BYTES], env: &mut Env<'_>) -> Outcome {
        self.handle_words(hal::packetizer::words_from_bytes(packet), env)
    }

    /// [`handle`](Self::handle) for a packet as the vmbox delivers it, four little-endian words
    /// (no byte-by-byte decoding: the A53 kernel is built for strict alignment).
    pub fn handle_words(&mut self, packet: [u64; 4], env: &mut Env<'_>) -> Outcome {
        let raw = RawRequest::from_words(packet);
        if raw.sender.interface() == 0 {
            self.stats.dropped = self.stats.dropped.wrapping_add(1);
            return Outcome::Dropped(DropReason::FromServiceInterface);
        }
        self.stats.requests = self.stats.requests.wrapping_add(1);
        let done = static_check(&raw, self.node, u64::from(self.max_alloc_pages))
            .and_then(|request| self.apply(&request, env));
        let (status, page) = match done {
            Ok(Done::Value(v)) => (Response::ok(v), None),
            Ok(Done::Page(page)) => (Response::ok(PAGE_SIZE), Some(page)),
            Err(code) => {
                self.stats.errors = self.stats.errors.wrapping_add(1);
                (Response::err(code), None)
            }
        };
        Outcome::Reply(Replies::new(self.pid(), raw.sender, raw.opcode, status, page))
    }

    /// Translates `addr` and checks that `who` may do `access` there.
    #[inline]
    fn resolve(&self, addr: GlobalAddress, who: DomainId, access: Access) -> Result<(u64, PageEntry), ErrorCode> {
        let (pa, entry) = self.mmu.translate(addr).ok_or(ErrorCode::Unmapped)?;
        if !entry.permits(who, access) {
            return Err(ErrorCode::PermissionDenied);
        }
        Ok((pa, *entry))
    }
}

#[cfg(test)]
mod tests;
