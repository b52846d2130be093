//! The seed's RDMA API (seed 000 §3.4) over [`crate::rdma`], so that its programs port
//! directly; the C library exports it under the seed's names (`a53-kernel/user/include/unim_dma.h`).
//! The mapping is in `README.md` ("RDMA"). What differs from the seed, and why:
//!
//! - A buffer is memory of the process: [`UnimDma::alloc_buf_l`] maps a region for one, and
//!   [`UnimDma::attach_buf`] names memory that exists already, here or in the process of this
//!   PD on another node (the peer allocates its buffer and sends the address). No process can
//!   allocate memory in another's address space (the seed's remote allocator has no
//!   counterpart), so `alloc_buf_r` for another node is [`UnimError::RemoteAllocation`].
//! - A transfer runs between this node and one node, this one included: the engine cannot move
//!   data between two other nodes, so that is [`UnimError::BothRemote`]. A submission is posted
//!   to the engine at once, so the seed's `DMA_PENDING` never lasts.
//! - The seed's `_from_mem`/`_to_mem` copy through an internal buffer, a copy it meant to remove;
//!   here the engine reaches ordinary memory, so they copy nothing and the memory must stay put
//!   until the transfer ends, as a buffer's must.
//! - Callbacks run from [`UnimDma::poll`] (and the process's status and wait calls), in the
//!   caller, never from a thread of the library.

mod buffers;
mod process;

use core::ffi::c_void;

use crate::error::{Error, status};
use crate::rdma::{Doorbell, Queues, Rdma, Status};
use buffers::Buffers;
pub use buffers::{BufferId, MAX_BUFFERS, Regions, SysRegions};
pub use process::{
    unim_alloc_buf_l, unim_alloc_buf_r, unim_attach_buf_r, unim_buf_get_memory, unim_dma_cleanup, unim_dma_get_node,
    unim_dma_init, unim_dma_poll, unim_dma_status, unim_dma_submit_transfer, unim_dma_submit_transfer_from_mem,
    unim_dma_submit_transfer_to_mem, unim_dma_wait, unim_free_buf, unim_get_buf, with_dma,
};
use proto::rdma::queue::{Direction, WQ_ENTRIES};

/// `unim_comp_cb_t` for Rust programs: called with the submitter's argument when the transfer
/// has ended.
pub type UnimCompCb = fn(usize);

/// The seed's `unim_comp_cb_t` as C declares it: `void (*)(void *)`.
pub type UnimCompCbC = unsafe extern "C" fn(*mut c_void);

/// What runs when a transfer has ended: a completion callback with its argument.
#[derive(Clone, Copy)]
pub struct Callback(CallbackKind);

#[derive(Clone, Copy)]
enum CallbackKind {
    Rust(UnimCompCb, usize),
    /// The argument is kept as an address, so that the library's state stays `Send` (it sits
    /// in a static); its provenance was exposed when it was stored.
    C(UnimCompCbC, usize),
}

impl Callback {
    /// A Rust callback and its argument.
    pub fn new(f: UnimCompCb, arg: usize) -> Self {
        Self(CallbackKind::Rust(f, arg))
    }

    /// A C program's callback and its `void *` argument.
    ///
    /// # Safety
    ///
    /// `f` may be called once with `arg`, from whichever later call of this library runs the
    /// callbacks that are due (what a C program promises by submitting it).
    pub unsafe fn c(f: UnimCompCbC, arg: *mut c_void) -> Self {
        Self(CallbackKind::C(f, arg.expose_provenance()))
    }

    /// Calls it.
    pub fn run(self) {
        match self.0 {
            CallbackKind::Rust(f, arg) => f(arg),
            // SAFETY: `Callback::c`'s contract: the C program allowed this call with this
            // argument, whose provenance was exposed when it was stored.
            CallbackKind::C(f, arg) => unsafe { f(core::ptr::with_exposed_provenance_mut(arg)) },
        }
    }
}

/// `unim_dma_buffer_t`: `len` bytes at `addr` in the process of this PD on `node`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnimBuffer {
    pub node: u16,
    pub addr: u64,
    pub len: u64,
}

/// `unim_dma_status_t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnimDmaStatus {
    /// The id names no transfer this library remembers (never submitted, or its slot has been
    /// reused since: ids are remembered for [`WQ_ENTRIES`] submissions after they end).
    Unknown,
    /// Posted to the engine's work queue (the seed's `DMA_PENDING` never lasts here: a
    /// submission is posted at once).
    Started,
    Completed,
    Failed,
}

/// Why a call of this API was refused. Every one has its own exit status
/// ([`UnimError::exit_status`]), as the library's errors do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnimError {
    /// `unim_dma_init` has not succeeded, or `unim_dma_cleanup` came after it.
    NotInitialised,
    /// `unim_dma_init` was given another node's id than this one's.
    NotThisNode(u16),
    /// The buffer id names no buffer of this process: never one, or freed.
    NoSuchBuffer,
    /// A buffer of 0 bytes.
    EmptyBuffer,
    /// [`MAX_BUFFERS`] buffers exist already.
    TooManyBuffers,
    /// A buffer on another node cannot be allocated from here: its memory belongs to the
    /// process there, which allocates it and sends its address ([`UnimDma::attach_buf`]).
    RemoteAllocation,
    /// The memory of a buffer on another node: loads and stores here cannot reach it.
    NotLocal,
    /// `offset + size` runs past the end of its buffer.
    OutsideBuffer,
    /// Neither end of the transfer is on this node: the engine moves data between this node
    /// and one node (this one included).
    BothRemote,
    /// Refused below: `MAP`/`UNMAP`, the queues (`Busy` with 64 transfers in progress,
    /// `Transfer(BadRequest)` for a size of 0 or a range the engine cannot reach), a wait
    /// (`Timeout`), `NODE_INFO` or `RDMA_QUEUES`.
    Lib(Error),
}

impl UnimError {
    /// The exit status of a program that fails with it: the library error's own for `Lib`,
    /// `status::UNIM` + the variant's index otherwise (`README.md`, "Exit statuses").
    pub fn exit_status(self) -> u64 {
        let index = match self {
            UnimError::Lib(e) => return e.exit_status(),
            UnimError::NotInitialised => 0,
            UnimError::NotThisNode(_) => 1,
            UnimError::NoSuchBuffer => 2,
            UnimError::EmptyBuffer => 3,
            UnimError::TooManyBuffers => 4,
            UnimError::RemoteAllocation => 5,
            UnimError::NotLocal => 6,
            UnimError::OutsideBuffer => 7,
            UnimError::BothRemote => 8,
        };
        status::UNIM + index
    }
}

impl From<Error> for UnimError {
    fn from(e: Error) -> Self {
        UnimError::Lib(e)
    }
}

#[derive(Clone, Copy)]
struct Entry {
    id: u64,
    callback: Option<Callback>,
    end: Option<UnimDmaStatus>,
}

/// The library state of `unim_dma_init`: the queues, the buffers and the transfers it tracks.
pub struct UnimDma<D: Doorbell, M: Regions> {
    rdma: Rdma<D>,
    me: u16,
    entries: [Option<Entry>; WQ_ENTRIES],
    buffers: Buffers<M>,
}

impl<D: Doorbell, M: Regions> UnimDma<D, M> {
    /// `unim_dma_init`: the queues of this process on node `me`, and where its buffers' memory
    /// comes from.
    pub fn new(rdma: Rdma<D>, me: u16, regions: M) -> Self {
        Self { rdma, me, entries: [None; WQ_ENTRIES], buffers: Buffers::new(regions) }
    }

    /// This node.
    pub fn node(&self) -> u16 {
        self.me
    }

    /// `unim_alloc_buf_l`: a new buffer of `size` bytes here, zeroed (a region of its own).
    pub fn alloc_buf_l(&mut self, size: u32) -> Result<BufferId, UnimError> {
        self.buffers.alloc(self.me, size)
    }

    /// `unim_alloc_buf_r`: a new buffer on `node`, which can only be this one
    /// ([`UnimError::RemoteAllocation`] otherwise).
    pub fn alloc_buf_r(&mut self, size: u32, node: u16) -> Result<BufferId, UnimError> {
        if node != self.me {
            return Err(UnimError::RemoteAllocation);
        }
        self.alloc_buf_l(size)
    }

    /// A buffer object for `len` bytes at `addr` in the process of this PD on `node` (this
    /// node included), memory that exists already: a peer's buffer, at the address it sent.
    /// Freeing it forgets it; the memory stays its owner's.
    pub fn attach_buf(&mut self, node: u16, addr: u64, len: u64) -> Result<BufferId, UnimError> {
        self.buffers.attach(UnimBuffer { node, addr, len })
    }

    /// `unim_free_buf`: forgets the buffer, and unmaps its memory if [`alloc_buf_l`](Self::alloc_buf_l)
    /// mapped it (a transfer still using that memory then ends with `FaultLocal`).
    pub fn free_buf(&mut self, id: BufferId) -> Result<(), UnimError> {
        self.buffers.free(id)
    }

    /// `unim_get_buf`: what the buffer names.
    pub fn buffer(&self, id: BufferId) -> Result<UnimBuffer, UnimError> {
        self.buffers.get(id)
    }

    /// The buffer in slot `slot` of the table (`id.slot()`), if any: how the C library turns
    /// the object pointers it hands out back into ids.
    pub fn buffer_at(&self, slot: usize) -> Option<BufferId> {
        self.buffers.at(slot)
    }

    /// `unim_buf_get_memory`: the address of a buffer on this node, which loads and stores
    /// reach; [`UnimError::NotLocal`] for one on another node.
    pub fn buf_memory(&self, id: BufferId) -> Result<u64, UnimError> {
        let b = self.buffer(id)?;
        if b.node != self.me {
            return Err(UnimError::NotLocal);
        }
        Ok(b.addr)
    }

    /// `unim_dma_submit_transfer`: copies `size` bytes from `src + src_off` to `dst + dst_off`;
    /// one of the two buffers must be on this node. Returns the transfer id; `callback` runs
    /// once after it has ended.
    ///
    /// # Safety
    ///
    /// The local range stays valid, and is not otherwise used, until the transfer has ended
    /// (`status` says Completed or Failed).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn try_submit(
        &mut self,
        src: &UnimBuffer,
        dst: &UnimBuffer,
        src_off: u64,
        dst_off: u64,
        size: u64,
        callback: Option<Callback>,
    ) -> Result<u64, UnimError> {
        let inside = |b: &UnimBuffer, off: u64| off.checked_add(size).is_some_and(|end| end <= b.len);
        if !inside(src, src_off) || !inside(dst, dst_off) {
            return Err(UnimError::OutsideBuffer);
        }
        let (s, d) = (src.addr.wrapping_add(src_off), dst.addr.wrapping_add(dst_off));
        let (direction, local, node, remote) = if src.node == self.me {
            (Direction::Write, s, dst.node, d)
        } else if dst.node == self.me {
            (Direction::Read, d, src.node, s)
        } else {
            return Err(UnimError::BothRemote);
        };
        // A size beyond the address space is one the engine refuses, as it refuses 0.
        let size = usize::try_from(size).unwrap_or(usize::MAX);
        // SAFETY: the caller keeps the local range for the transfer (this function's contract).
        let id = self.rdma.with_queues(|q| unsafe { q.post(direction, local, size, node, remote) })?;
        self.entries[slot(id)] = Some(Entry { id, callback, end: None });
        Ok(id)
    }

    /// [`try_submit`](Self::try_submit) as the seed has it: the transfer id, or 0 on error.
    ///
    /// # Safety
    ///
    /// As [`try_submit`](Self::try_submit).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn submit(
        &mut self,
        src: &UnimBuffer,
        dst: &UnimBuffer,
        src_off: u64,
        dst_off: u64,
        size: u64,
        callback: Option<UnimCompCb>,
        arg: usize,
    ) -> u64 {
        let callback = callback.map(|f| Callback::new(f, arg));
        // SAFETY: forwarded from the caller.
        unsafe { self.try_submit(src, dst, src_off, dst_off, size, callback) }.unwrap_or(0)
    }

    /// `unim_dma_submit_transfer` between two buffer objects.
    ///
    /// # Safety
    ///
    /// As [`try_submit`](Self::try_submit): the memory of the buffer on this node stays valid
    /// until the transfer ends (the library's own regions do unless freed; a freed one makes
    /// the transfer fail with `FaultLocal`).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn submit_buffers(
        &mut self,
        src: BufferId,
        dst: BufferId,
        src_off: u64,
        dst_off: u64,
        size: u64,
        callback: Option<Callback>,
    ) -> Result<u64, UnimError> {
        let (src, dst) = (self.buffer(src)?, self.buffer(dst)?);
        // SAFETY: forwarded from the caller.
        unsafe { self.try_submit(&src, &dst, src_off, dst_off, size, callback) }
    }

    /// `unim_dma_submit_transfer_from_mem`: from `size` bytes at `src + src_off` in this
    /// process to buffer `dst`, with no copy in between.
    ///
    /// # Safety
    ///
    /// The source bytes are memory of this process that stays valid and unchanged until the
    /// transfer ends.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn submit_from_mem(
        &mut self,
        src: u64,
        dst: BufferId,
        src_off: u64,
        dst_off: u64,
        size: u64,
        callback: Option<Callback>,
    ) -> Result<u64, UnimError> {
        let dst = self.buffer(dst)?;
        let src = self.memory(src, src_off, size)?;
        // SAFETY: forwarded from the caller.
        unsafe { self.try_submit(&src, &dst, src_off, dst_off, size, callback) }
    }

    /// `unim_dma_submit_transfer_to_mem`: from buffer `src` to `size` bytes at `dst + dst_off`
    /// in this process, with no copy in between.
    ///
    /// # Safety
    ///
    /// The destination bytes are memory of this process that stays valid, and is not
    /// otherwise used, until the transfer ends.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn submit_to_mem(
        &mut self,
        src: BufferId,
        dst: u64,
        src_off: u64,
        dst_off: u64,
        size: u64,
        callback: Option<Callback>,
    ) -> Result<u64, UnimError> {
        let src = self.buffer(src)?;
        let dst = self.memory(dst, dst_off, size)?;
        // SAFETY: forwarded from the caller.
        unsafe { self.try_submit(&src, &dst, src_off, dst_off, size, callback) }
    }

    /// Plain memory of this process at `addr` as a buffer of `off + size` bytes, all that a
    /// transfer of `size` bytes at `off` touches.
    fn memory(&self, addr: u64, off: u64, size: u64) -> Result<UnimBuffer, UnimError> {
        let len = off.checked_add(size).ok_or(UnimError::OutsideBuffer)?;
        Ok(UnimBuffer { node: self.me, addr, len })
    }

    /// `unim_dma_status`: where transfer `id` stands. Its callback, if due, runs at the next
    /// [`poll`](Self::poll).
    pub fn status(&mut self, id: u64) -> UnimDmaStatus {
        self.reap();
        match self.entries[slot(id)] {
            Some(Entry { id: e, end: Some(end), .. }) if e == id => end,
            Some(Entry { id: e, end: None, .. }) if e == id => UnimDmaStatus::Started,
            _ => UnimDmaStatus::Unknown,
        }
    }

    /// Sleeps until transfer `id` has ended (`RDMA_WAIT`), or `Timeout` after `timeout_us` (0:
    /// none); returns where it stands then, as [`status`](Self::status) would.
    pub fn wait(&mut self, id: u64, timeout_us: u64) -> Result<UnimDmaStatus, UnimError> {
        if self.status(id) == UnimDmaStatus::Started {
            self.rdma.with_queues(|q| q.wait(id, timeout_us))?;
        }
        Ok(self.status(id))
    }

    /// Takes the completions and runs the callback of every transfer that ended since the last
    /// poll; returns how many callbacks ran.
    pub fn poll(&mut self) -> usize {
        let due = self.take_due();
        due.iter().flatten().for_each(|cb| cb.run());
        due.iter().flatten().count()
    }

    /// The callbacks that are due, taken (for a caller that runs them outside its own lock).
    pub fn take_due(&mut self) -> [Option<Callback>; WQ_ENTRIES] {
        self.reap();
        let mut due = [None; WQ_ENTRIES];
        for (d, entry) in due.iter_mut().zip(self.entries.iter_mut().flatten()) {
            if entry.end.is_some() && entry.callback.is_some() {
                *d = entry.callback.take();
                self.rdma.with_queues(|q| q.release(entry.id));
            }
        }
        due
    }

    /// Marks the transfers whose completion arrived as ended. A queue slot is freed once
    /// nothing of its transfer is left to do: at once without a callback, else when the
    /// callback is taken, so that a later submission never overwrites a callback not run yet
    /// (64 of them waiting is `Busy`, as 64 transfers in progress are).
    fn reap(&mut self) {
        for entry in self.entries.iter_mut().flatten().filter(|e| e.end.is_none()) {
            let status = self.rdma.with_queues(|q: &mut Queues<D>| q.status(entry.id));
            entry.end = match status {
                Status::Pending => continue,
                Status::Done(_) => Some(UnimDmaStatus::Completed),
                Status::Failed(_) => Some(UnimDmaStatus::Failed),
            };
            if entry.callback.is_none() {
                self.rdma.with_queues(|q| q.release(entry.id));
            }
        }
    }

    /// Transfers submitted that have not ended.
    pub fn in_progress(&self) -> usize {
        self.entries.iter().flatten().filter(|e| e.end.is_none()).count()
    }

    /// `unim_dma_cleanup`: waits for every transfer in progress (the engine may still touch
    /// its memory), then frees every buffer and forgets every transfer, callbacks not run
    /// included. The queues stay, for a later `unim_dma_init`.
    pub fn cleanup(&mut self) {
        for id in self.entries.iter().flatten().filter(|e| e.end.is_none()).map(|e| e.id) {
            // A wait that fails (only a broken kernel's does) leaves the queue slot taken, so
            // its tag is never reused.
            let _ = self.rdma.with_queues(|q| q.wait(id, 0));
        }
        self.reap();
        for entry in self.entries.iter_mut().filter_map(Option::take).filter(|e| e.end.is_some()) {
            self.rdma.with_queues(|q| q.release(entry.id));
        }
        self.buffers.clear();
    }

    /// The queues underneath.
    pub fn rdma(&self) -> &Rdma<D> {
        &self.rdma
    }

    /// Where the buffers' memory comes from.
    pub fn regions(&self) -> &M {
        self.buffers.regions()
    }
}

fn slot(id: u64) -> usize {
    (id % WQ_ENTRIES as u64) as usize
}

#[cfg(test)]
mod tests;
