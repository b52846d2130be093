//! The process's one library state and the seed's calls over it, for Rust programs; the C
//! library's `unim_*` exports are the same thin layer over [`with_dma`].
//!
//! Host builds have no kernel: `unim_dma_init` fails there (`RDMA_QUEUES` answers
//! `NoSuchCall`), and every other call is then `NotInitialised`.

use spin::Mutex;

use super::{BufferId, Callback, SysRegions, UnimBuffer, UnimDma, UnimDmaStatus, UnimError};
use crate::error::Error;
use crate::rdma::HwDoorbell;
use crate::sys;

/// The state `unim_dma_init` sets up. The queues can be opened once per process, so
/// `unim_dma_cleanup` keeps them for a later `unim_dma_init`.
struct Library {
    dma: Option<UnimDma<HwDoorbell, SysRegions>>,
    /// `unim_dma_init` succeeded and no `unim_dma_cleanup` came after it.
    ready: bool,
}

static LIBRARY: Mutex<Library> = Mutex::new(Library { dma: None, ready: false });

/// Runs `f` on the process's library state: `NotInitialised` before `unim_dma_init`,
/// `Lib(Busy)` when called from inside `f`.
pub fn with_dma<R>(
    f: impl FnOnce(&mut UnimDma<HwDoorbell, SysRegions>) -> Result<R, UnimError>,
) -> Result<R, UnimError> {
    let mut library = LIBRARY.try_lock().ok_or(UnimError::Lib(Error::Busy))?;
    match &mut *library {
        Library { dma: Some(dma), ready: true } => f(dma),
        _ => Err(UnimError::NotInitialised),
    }
}

/// `unim_dma_init(node_id)`: opens the process's RDMA queues (`Lib(Syscall(NoPd))` if it holds
/// none here); `node_id` must be this node's, as the seed's programs pass it. A second call
/// changes nothing.
pub fn unim_dma_init(node_id: u16) -> Result<(), UnimError> {
    let here = sys::node_info()?.node;
    if node_id != here {
        return Err(UnimError::NotThisNode(node_id));
    }
    let mut library = LIBRARY.try_lock().ok_or(UnimError::Lib(Error::Busy))?;
    if library.dma.is_none() {
        library.dma = Some(UnimDma::new(crate::rdma::open()?, here, SysRegions));
    }
    library.ready = true;
    Ok(())
}

/// `unim_dma_cleanup`: [`UnimDma::cleanup`]; the calls after it are `NotInitialised` until the
/// next `unim_dma_init`.
pub fn unim_dma_cleanup() {
    let mut library = LIBRARY.lock();
    if let Some(dma) = library.dma.as_mut() {
        dma.cleanup();
    }
    library.ready = false;
}

/// `unim_alloc_buf_l`: [`UnimDma::alloc_buf_l`].
pub fn unim_alloc_buf_l(size: u32) -> Result<BufferId, UnimError> {
    with_dma(|d| d.alloc_buf_l(size))
}

/// `unim_alloc_buf_r`: [`UnimDma::alloc_buf_r`] (this node only).
pub fn unim_alloc_buf_r(size: u32, node: u16) -> Result<BufferId, UnimError> {
    with_dma(|d| d.alloc_buf_r(size, node))
}

/// A buffer object for `size` bytes at `addr` in the process of this PD on `node`:
/// [`UnimDma::attach_buf`].
pub fn unim_attach_buf_r(addr: u64, size: u64, node: u16) -> Result<BufferId, UnimError> {
    with_dma(|d| d.attach_buf(node, addr, size))
}

/// `unim_free_buf`: [`UnimDma::free_buf`].
pub fn unim_free_buf(id: BufferId) -> Result<(), UnimError> {
    with_dma(|d| d.free_buf(id))
}

/// `unim_get_buf`: what the buffer names (a [`BufferId`] is both the seed's buffer object and
/// its id, so `unim_get_buf_id` has nothing to do in Rust).
pub fn unim_get_buf(id: BufferId) -> Result<UnimBuffer, UnimError> {
    with_dma(|d| d.buffer(id))
}

/// `unim_buf_get_memory`: the memory of a buffer on this node.
pub fn unim_buf_get_memory(id: BufferId) -> Result<*mut u8, UnimError> {
    with_dma(|d| d.buf_memory(id)).map(|addr| core::ptr::with_exposed_provenance_mut(addr as usize))
}

/// `unim_dma_submit_transfer`: [`UnimDma::submit_buffers`].
///
/// # Safety
///
/// As [`UnimDma::try_submit`]: the local buffer's memory stays valid until the transfer ends.
pub unsafe fn unim_dma_submit_transfer(
    src: BufferId,
    dst: BufferId,
    src_off: u64,
    dst_off: u64,
    size: u64,
    callback: Option<Callback>,
) -> Result<u64, UnimError> {
    // SAFETY: forwarded from the caller.
    with_dma(|d| unsafe { d.submit_buffers(src, dst, src_off, dst_off, size, callback) })
}

/// `unim_dma_submit_transfer_from_mem`: [`UnimDma::submit_from_mem`], no copy.
///
/// # Safety
///
/// `src + src_off .. + size` is memory of this process that stays valid and unchanged until
/// the transfer ends.
pub unsafe fn unim_dma_submit_transfer_from_mem(
    src: *const u8,
    dst: BufferId,
    src_off: u64,
    dst_off: u64,
    size: u64,
    callback: Option<Callback>,
) -> Result<u64, UnimError> {
    let src = src.expose_provenance() as u64;
    // SAFETY: forwarded from the caller.
    with_dma(|d| unsafe { d.submit_from_mem(src, dst, src_off, dst_off, size, callback) })
}

/// `unim_dma_submit_transfer_to_mem`: [`UnimDma::submit_to_mem`], no copy.
///
/// # Safety
///
/// `dst + dst_off .. + size` is memory of this process that stays valid, and is not otherwise
/// used, until the transfer ends.
pub unsafe fn unim_dma_submit_transfer_to_mem(
    src: BufferId,
    dst: *mut u8,
    src_off: u64,
    dst_off: u64,
    size: u64,
    callback: Option<Callback>,
) -> Result<u64, UnimError> {
    let dst = dst.expose_provenance() as u64;
    // SAFETY: forwarded from the caller.
    with_dma(|d| unsafe { d.submit_to_mem(src, dst, src_off, dst_off, size, callback) })
}

/// `unim_dma_status`: [`UnimDma::status`] (`Unknown` before `unim_dma_init`), then the
/// callbacks that are due run.
pub fn unim_dma_status(id: u64) -> UnimDmaStatus {
    let status = with_dma(|d| Ok(d.status(id))).unwrap_or(UnimDmaStatus::Unknown);
    unim_dma_poll();
    status
}

/// Sleeps until transfer `id` has ended ([`UnimDma::wait`]), then runs the callbacks that are
/// due.
pub fn unim_dma_wait(id: u64, timeout_us: u64) -> Result<UnimDmaStatus, UnimError> {
    let status = with_dma(|d| d.wait(id, timeout_us));
    unim_dma_poll();
    status
}

/// Runs the callbacks of the transfers that ended since the last poll, outside the library's
/// lock (so a callback may submit); returns how many ran.
pub fn unim_dma_poll() -> usize {
    let due = with_dma(|d| Ok(d.take_due()));
    let due = due.iter().flatten().flatten();
    due.clone().for_each(|cb| cb.run());
    due.count()
}

/// `unim_dma_get_node`: `id` itself, if it names a node of the system (`NoSuchNode` if not).
pub fn unim_dma_get_node(id: u16) -> Result<u16, UnimError> {
    let nodes = sys::node_info()?.nodes;
    if id >= nodes {
        return Err(Error::NoSuchNode(u64::from(id)).into());
    }
    Ok(id)
}
