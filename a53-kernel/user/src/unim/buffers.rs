//! The buffer objects of `unim_alloc_buf_l` and friends (seed §3.4.3): a table of at most
//! [`MAX_BUFFERS`] named ranges, each with an id that is never reused within the process.
//! The memory of a buffer the library allocates is a `MAP` region of its own (zeroed, its
//! pages get frames when first touched, by the CPU or the engine), which freeing unmaps.

use super::{UnimBuffer, UnimError};
use crate::error::Error;
use crate::sys;

/// Buffer objects a process may hold at once. The seed allowed one per node (its remote
/// allocator's static mapping, §3.1.1); a region per buffer lifts that, and 64 is as many as
/// transfers may be in progress.
pub const MAX_BUFFERS: usize = 64;

/// A buffer's id (`unim_dma_buf_id_t`): never 0, never reused within the process; its value
/// modulo [`MAX_BUFFERS`] is its slot in the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BufferId(u64);

impl BufferId {
    /// The id from its number, `None` for 0 (the seed's error value).
    pub fn from_raw(raw: u64) -> Option<Self> {
        (raw != 0).then_some(Self(raw))
    }

    /// Its number.
    pub fn raw(self) -> u64 {
        self.0
    }

    /// Its slot in the table.
    pub fn slot(self) -> usize {
        (self.0 % MAX_BUFFERS as u64) as usize
    }
}

/// Where the memory of a buffer comes from: `MAP` and `UNMAP` on the target, the host heap in
/// the tests (`fake::FakeRegions`).
pub trait Regions {
    /// A new writable region of `len` bytes (rounded up to pages), zeroed; its address.
    fn map(&mut self, len: u64) -> Result<u64, Error>;
    /// Removes the region `map` returned at `addr`; returns the pages that were resident.
    fn unmap(&mut self, addr: u64, len: u64) -> Result<u64, Error>;
}

/// The process's own regions: the `MAP` and `UNMAP` system calls.
pub struct SysRegions;

impl Regions for SysRegions {
    fn map(&mut self, len: u64) -> Result<u64, Error> {
        sys::map(len, true)
    }

    fn unmap(&mut self, addr: u64, len: u64) -> Result<u64, Error> {
        sys::unmap(addr, len)
    }
}

#[derive(Clone, Copy)]
struct Entry {
    id: BufferId,
    buffer: UnimBuffer,
    /// The library mapped its memory, so freeing the buffer unmaps it.
    mapped: bool,
}

/// The table of buffer objects.
pub(super) struct Buffers<M> {
    regions: M,
    entries: [Option<Entry>; MAX_BUFFERS],
    /// How many ids have been given out.
    serial: u64,
}

impl<M: Regions> Buffers<M> {
    pub(super) fn new(regions: M) -> Self {
        Self { regions, entries: [None; MAX_BUFFERS], serial: 0 }
    }

    /// A new buffer of `size` bytes on `node` (this one) in a region of its own.
    pub(super) fn alloc(&mut self, node: u16, size: u32) -> Result<BufferId, UnimError> {
        if size == 0 {
            return Err(UnimError::EmptyBuffer);
        }
        // Look for room first: a region mapped for a buffer that cannot be kept would leak.
        self.free_slot()?;
        let addr = self.regions.map(u64::from(size))?;
        self.insert(Entry { id: BufferId(0), buffer: UnimBuffer { node, addr, len: u64::from(size) }, mapped: true })
    }

    /// A buffer object for memory that exists already.
    pub(super) fn attach(&mut self, buffer: UnimBuffer) -> Result<BufferId, UnimError> {
        if buffer.len == 0 {
            return Err(UnimError::EmptyBuffer);
        }
        self.insert(Entry { id: BufferId(0), buffer, mapped: false })
    }

    fn free_slot(&self) -> Result<usize, UnimError> {
        self.entries.iter().position(Option::is_none).ok_or(UnimError::TooManyBuffers)
    }

    fn insert(&mut self, mut entry: Entry) -> Result<BufferId, UnimError> {
        let slot = self.free_slot()?;
        self.serial += 1;
        entry.id = BufferId(self.serial * MAX_BUFFERS as u64 + slot as u64);
        self.entries[slot] = Some(entry);
        Ok(entry.id)
    }

    fn entry(&self, id: BufferId) -> Result<Entry, UnimError> {
        self.entries[id.slot()].filter(|e| e.id == id).ok_or(UnimError::NoSuchBuffer)
    }

    /// Forgets the buffer, unmapping its memory if [`alloc`](Self::alloc) mapped it. The id is
    /// gone even when `UNMAP` fails (the region then stays until the process ends).
    pub(super) fn free(&mut self, id: BufferId) -> Result<(), UnimError> {
        let entry = self.entry(id)?;
        self.entries[id.slot()] = None;
        if entry.mapped {
            self.regions.unmap(entry.buffer.addr, entry.buffer.len)?;
        }
        Ok(())
    }

    pub(super) fn get(&self, id: BufferId) -> Result<UnimBuffer, UnimError> {
        self.entry(id).map(|e| e.buffer)
    }

    /// The id of the buffer in `slot`, if one is there.
    pub(super) fn at(&self, slot: usize) -> Option<BufferId> {
        self.entries.get(slot).copied().flatten().map(|e| e.id)
    }

    /// Frees every buffer.
    pub(super) fn clear(&mut self) {
        for slot in 0..MAX_BUFFERS {
            if let Some(id) = self.at(slot) {
                // Only `UNMAP` can fail here, and the id goes all the same.
                let _ = self.free(id);
            }
        }
    }

    pub(super) fn regions(&self) -> &M {
        &self.regions
    }
}
