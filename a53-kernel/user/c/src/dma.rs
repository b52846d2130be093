//! `unim_dma.h`: the RDMA API (seed 000 §3.4) under its own names, over the process's one
//! library state (`unimem_user::unim::with_dma`); what differs from the seed is said in
//! `unimem_user::unim` and in the header.
//!
//! The seed's objects are opaque pointers to C. A buffer object points into [`OBJECTS`], one
//! byte per slot of the library's buffer table, so a pointer turns back into a slot by
//! subtraction and a pointer this library never gave is recognised without being read. A node
//! object carries its node number plus one (so node 0 is not NULL); nothing reads it either.
//!
//! Each call's work is a function generic over the library state's doorbell and regions, so the
//! host tests run it against the fake R5 and fake regions.

use core::ffi::c_void;

use unimem_user::rdma::{Doorbell, HwDoorbell};
use unimem_user::unim::{
    self, BufferId, Callback, MAX_BUFFERS, Regions, UnimCompCbC, UnimDma, UnimDmaStatus, UnimError,
};
use unimem_user::{Error, SysError};

use crate::status::{CError, record};

/// `unim_dma_buffer_t`, opaque: C only holds pointers to it.
#[repr(C)]
pub struct UnimDmaBuffer {
    _opaque: [u8; 0],
}

/// `struct unim_dma_node`, opaque: `unim_dma_node_t` is a pointer to it.
#[repr(C)]
pub struct UnimDmaNode {
    _opaque: [u8; 0],
}

/// `unim_dma_status_t`: the seed's four states, and `DMA_UNKNOWN` for an id the library does not
/// know (never submitted, forgotten, or `unim_dma_init` not done).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DmaStatus {
    /// Never returned: a submission is posted at once.
    Pending = 0,
    /// Posted to the engine, not ended.
    Started = 1,
    /// Every byte is at the destination.
    Completed = 2,
    /// Ended with an error; the destination holds any mix of old and new bytes.
    Failed = 3,
    /// The id names no transfer the library knows.
    Unknown = 4,
}

impl From<UnimDmaStatus> for DmaStatus {
    fn from(s: UnimDmaStatus) -> Self {
        match s {
            UnimDmaStatus::Unknown => DmaStatus::Unknown,
            UnimDmaStatus::Started => DmaStatus::Started,
            UnimDmaStatus::Completed => DmaStatus::Completed,
            UnimDmaStatus::Failed => DmaStatus::Failed,
        }
    }
}

/// The addresses buffer objects point to: slot `i`'s object is `&OBJECTS[i]`.
static OBJECTS: [u8; MAX_BUFFERS] = [0; MAX_BUFFERS];

/// The object pointer of buffer `id`.
fn object(id: BufferId) -> *mut UnimDmaBuffer {
    OBJECTS.as_ptr().wrapping_add(id.slot()).cast_mut().cast()
}

/// The buffer an object pointer names: `Null`, or `NoSuchBuffer` for a pointer that is not one
/// of [`OBJECTS`] or whose buffer was freed.
fn buffer<D: Doorbell, M: Regions>(d: &UnimDma<D, M>, object: *const UnimDmaBuffer) -> Result<BufferId, CError> {
    if object.is_null() {
        return Err(CError::Null);
    }
    let slot = object.addr().wrapping_sub(OBJECTS.as_ptr().addr());
    let id = (slot < MAX_BUFFERS).then(|| d.buffer_at(slot)).flatten();
    Ok(id.ok_or(UnimError::NoSuchBuffer)?)
}

/// Node `node`'s object.
pub(crate) fn node_object(node: u16) -> *const UnimDmaNode {
    core::ptr::without_provenance(usize::from(node) + 1)
}

/// The node an object names: `Null`, or `BadArgument` for a value no node object has.
pub(crate) fn node_of(object: *const UnimDmaNode) -> Result<u16, CError> {
    if object.is_null() {
        return Err(CError::Null);
    }
    u16::try_from(object.addr() - 1).map_err(|_| CError::BadArgument)
}

/// A C completion callback and its argument; NULL is no callback.
///
/// # Safety
///
/// `f` may be called once with `arg` by a later call of this library (what submitting means).
unsafe fn callback(f: Option<UnimCompCbC>, arg: *mut c_void) -> Option<Callback> {
    // SAFETY: forwarded from the caller.
    f.map(|f| unsafe { Callback::c(f, arg) })
}

/// `unim_alloc_buf_l`: the new buffer's object.
pub(crate) fn alloc_buf_l<D: Doorbell, M: Regions>(
    d: &mut UnimDma<D, M>,
    size: u32,
) -> Result<*mut UnimDmaBuffer, CError> {
    Ok(d.alloc_buf_l(size).map(object)?)
}

/// `unim_alloc_buf_r`: for this node only (`RemoteAllocation` for another).
pub(crate) fn alloc_buf_r<D: Doorbell, M: Regions>(
    d: &mut UnimDma<D, M>,
    size: u32,
    node: *const UnimDmaNode,
) -> Result<*mut UnimDmaBuffer, CError> {
    Ok(d.alloc_buf_r(size, node_of(node)?).map(object)?)
}

/// `unim_attach_buf_r`: an object for memory that exists on `node`.
pub(crate) fn attach_buf_r<D: Doorbell, M: Regions>(
    d: &mut UnimDma<D, M>,
    addr: u64,
    size: u64,
    node: *const UnimDmaNode,
) -> Result<*mut UnimDmaBuffer, CError> {
    Ok(d.attach_buf(node_of(node)?, addr, size).map(object)?)
}

/// `unim_free_buf`.
pub(crate) fn free_buf<D: Doorbell, M: Regions>(d: &mut UnimDma<D, M>, buf: *mut UnimDmaBuffer) -> Result<(), CError> {
    Ok(d.free_buf(buffer(d, buf)?)?)
}

/// `unim_get_buf`: the object of buffer `id` (0 is never an id).
pub(crate) fn get_buf<D: Doorbell, M: Regions>(d: &UnimDma<D, M>, id: u64) -> Result<*mut UnimDmaBuffer, CError> {
    let id = BufferId::from_raw(id).ok_or(UnimError::NoSuchBuffer)?;
    d.buffer(id)?;
    Ok(object(id))
}

/// `unim_get_buf_id`.
pub(crate) fn get_buf_id<D: Doorbell, M: Regions>(d: &UnimDma<D, M>, buf: *mut UnimDmaBuffer) -> Result<u64, CError> {
    buffer(d, buf).map(BufferId::raw)
}

/// `unim_buf_get_memory`: the memory of a buffer on this node.
pub(crate) fn buf_get_memory<D: Doorbell, M: Regions>(
    d: &UnimDma<D, M>,
    buf: *mut UnimDmaBuffer,
) -> Result<*mut c_void, CError> {
    let addr = d.buf_memory(buffer(d, buf)?)?;
    // The address of a region the kernel mapped for this process (`MAP`), or of memory a
    // buffer was attached to: memory of the process, whose provenance was exposed.
    Ok(core::ptr::with_exposed_provenance_mut(addr as usize))
}

/// `unim_dma_submit_transfer` between two buffer objects.
///
/// # Safety
///
/// The memory of the buffer on this node stays valid until the transfer ends; `comp_cb` may be
/// called once with `cb_arg`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn submit<D: Doorbell, M: Regions>(
    d: &mut UnimDma<D, M>,
    src: *mut UnimDmaBuffer,
    dst: *mut UnimDmaBuffer,
    src_off: u64,
    dst_off: u64,
    size: u64,
    comp_cb: Option<UnimCompCbC>,
    cb_arg: *mut c_void,
) -> Result<u64, CError> {
    let (src, dst) = (buffer(d, src)?, buffer(d, dst)?);
    // SAFETY: forwarded from the caller.
    Ok(unsafe { d.submit_buffers(src, dst, src_off, dst_off, size, callback(comp_cb, cb_arg)) }?)
}

/// `unim_dma_submit_transfer_from_mem`: from plain memory to a buffer object.
///
/// # Safety
///
/// `src + src_off .. + size` is memory of this process that stays valid and unchanged until the
/// transfer ends; `comp_cb` may be called once with `cb_arg`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn submit_from_mem<D: Doorbell, M: Regions>(
    d: &mut UnimDma<D, M>,
    src: *const c_void,
    dst: *mut UnimDmaBuffer,
    src_off: u64,
    dst_off: u64,
    size: u64,
    comp_cb: Option<UnimCompCbC>,
    cb_arg: *mut c_void,
) -> Result<u64, CError> {
    if src.is_null() {
        return Err(CError::Null);
    }
    let dst = buffer(d, dst)?;
    let src = src.expose_provenance() as u64;
    // SAFETY: forwarded from the caller.
    Ok(unsafe { d.submit_from_mem(src, dst, src_off, dst_off, size, callback(comp_cb, cb_arg)) }?)
}

/// `unim_dma_submit_transfer_to_mem`: from a buffer object to plain memory.
///
/// # Safety
///
/// `dst + dst_off .. + size` is memory of this process that stays valid, and is not otherwise
/// used, until the transfer ends; `comp_cb` may be called once with `cb_arg`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn submit_to_mem<D: Doorbell, M: Regions>(
    d: &mut UnimDma<D, M>,
    src: *mut UnimDmaBuffer,
    dst: *mut c_void,
    src_off: u64,
    dst_off: u64,
    size: u64,
    comp_cb: Option<UnimCompCbC>,
    cb_arg: *mut c_void,
) -> Result<u64, CError> {
    if dst.is_null() {
        return Err(CError::Null);
    }
    let src = buffer(d, src)?;
    let dst = dst.expose_provenance() as u64;
    // SAFETY: forwarded from the caller.
    Ok(unsafe { d.submit_to_mem(src, dst, src_off, dst_off, size, callback(comp_cb, cb_arg)) }?)
}

/// What `unim_dma_wait` returns for the outcome of a wait: a wait that ended before the
/// transfer did (it timed out, or a signal ended it: `unimem_mailbox.h`) leaves it started.
pub(crate) fn waited(result: Result<UnimDmaStatus, CError>) -> DmaStatus {
    match result {
        Ok(status) => status.into(),
        Err(CError::Lib(Error::Timeout | Error::Syscall(SysError::Interrupted))) => DmaStatus::Started,
        Err(_) => DmaStatus::Unknown,
    }
}

/// Runs `op` on the process's library state.
pub(crate) fn dma<R>(
    op: impl FnOnce(&mut UnimDma<HwDoorbell, unim::SysRegions>) -> Result<R, CError>,
) -> Result<R, CError> {
    unim::with_dma(|d| Ok(op(d))).unwrap_or_else(|e| Err(e.into()))
}

// ---- The exports ----

/// `int unim_dma_init(unim_node_id_t node_id)`: 0, or -1 (`unimem_last_error` says why).
#[unsafe(no_mangle)]
pub extern "C" fn unim_dma_init(node_id: u16) -> i32 {
    record(unim::unim_dma_init(node_id).map_err(CError::from)).map_or(-1, |()| 0)
}

/// `void unim_dma_cleanup(void)`.
#[unsafe(no_mangle)]
pub extern "C" fn unim_dma_cleanup() {
    unim::unim_dma_cleanup();
}

/// `unim_dma_buffer_t *unim_alloc_buf_l(uint32_t size)`: NULL on error.
#[unsafe(no_mangle)]
pub extern "C" fn unim_alloc_buf_l(size: u32) -> *mut UnimDmaBuffer {
    record(dma(|d| alloc_buf_l(d, size))).unwrap_or(core::ptr::null_mut())
}

/// `unim_dma_buffer_t *unim_alloc_buf_r(uint32_t size, unim_dma_node_t node)`: NULL on error.
#[unsafe(no_mangle)]
pub extern "C" fn unim_alloc_buf_r(size: u32, node: *const UnimDmaNode) -> *mut UnimDmaBuffer {
    record(dma(|d| alloc_buf_r(d, size, node))).unwrap_or(core::ptr::null_mut())
}

/// `unim_dma_buffer_t *unim_attach_buf_r(uint64_t addr, uint64_t size, unim_dma_node_t node)`:
/// NULL on error.
#[unsafe(no_mangle)]
pub extern "C" fn unim_attach_buf_r(addr: u64, size: u64, node: *const UnimDmaNode) -> *mut UnimDmaBuffer {
    record(dma(|d| attach_buf_r(d, addr, size, node))).unwrap_or(core::ptr::null_mut())
}

/// `void unim_free_buf(unim_dma_buffer_t *buf)`.
#[unsafe(no_mangle)]
pub extern "C" fn unim_free_buf(buf: *mut UnimDmaBuffer) {
    let _ = record(dma(|d| free_buf(d, buf)));
}

/// `unim_dma_buffer_t *unim_get_buf(unim_dma_buf_id_t id)`: NULL on error.
#[unsafe(no_mangle)]
pub extern "C" fn unim_get_buf(id: u64) -> *mut UnimDmaBuffer {
    record(dma(|d| get_buf(d, id))).unwrap_or(core::ptr::null_mut())
}

/// `unim_dma_buf_id_t unim_get_buf_id(unim_dma_buffer_t *buf)`: 0 (never an id) on error.
#[unsafe(no_mangle)]
pub extern "C" fn unim_get_buf_id(buf: *mut UnimDmaBuffer) -> u64 {
    record(dma(|d| get_buf_id(d, buf))).unwrap_or(0)
}

/// `void *unim_buf_get_memory(unim_dma_buffer_t *buf)`: NULL on error.
#[unsafe(no_mangle)]
pub extern "C" fn unim_buf_get_memory(buf: *mut UnimDmaBuffer) -> *mut c_void {
    record(dma(|d| buf_get_memory(d, buf))).unwrap_or(core::ptr::null_mut())
}

/// `unim_dma_transfer_id_t unim_dma_submit_transfer(unim_dma_buffer_t *src, unim_dma_buffer_t
/// *dst, uint64_t src_off, uint64_t dst_off, uint64_t size, unim_comp_cb_t comp_cb, void
/// *cb_arg)`: 0 on error.
///
/// # Safety
///
/// As [`submit`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unim_dma_submit_transfer(
    src: *mut UnimDmaBuffer,
    dst: *mut UnimDmaBuffer,
    src_off: u64,
    dst_off: u64,
    size: u64,
    comp_cb: Option<UnimCompCbC>,
    cb_arg: *mut c_void,
) -> u64 {
    // SAFETY: forwarded from the caller.
    record(dma(|d| unsafe { submit(d, src, dst, src_off, dst_off, size, comp_cb, cb_arg) })).unwrap_or(0)
}

/// `unim_dma_transfer_id_t unim_dma_submit_transfer_from_mem(void *src, unim_dma_buffer_t
/// *dst, ...)`: 0 on error.
///
/// # Safety
///
/// As [`submit_from_mem`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unim_dma_submit_transfer_from_mem(
    src: *mut c_void,
    dst: *mut UnimDmaBuffer,
    src_off: u64,
    dst_off: u64,
    size: u64,
    comp_cb: Option<UnimCompCbC>,
    cb_arg: *mut c_void,
) -> u64 {
    // SAFETY: forwarded from the caller.
    record(dma(|d| unsafe { submit_from_mem(d, src, dst, src_off, dst_off, size, comp_cb, cb_arg) })).unwrap_or(0)
}

/// `unim_dma_transfer_id_t unim_dma_submit_transfer_to_mem(unim_dma_buffer_t *src, void
/// *dst, ...)`: 0 on error.
///
/// # Safety
///
/// As [`submit_to_mem`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unim_dma_submit_transfer_to_mem(
    src: *mut UnimDmaBuffer,
    dst: *mut c_void,
    src_off: u64,
    dst_off: u64,
    size: u64,
    comp_cb: Option<UnimCompCbC>,
    cb_arg: *mut c_void,
) -> u64 {
    // SAFETY: forwarded from the caller.
    record(dma(|d| unsafe { submit_to_mem(d, src, dst, src_off, dst_off, size, comp_cb, cb_arg) })).unwrap_or(0)
}

/// `unim_dma_status_t unim_dma_status(unim_dma_transfer_id_t tID)`; then the callbacks that
/// are due run.
#[unsafe(no_mangle)]
pub extern "C" fn unim_dma_status(id: u64) -> DmaStatus {
    let status = record(dma(|d| Ok(d.status(id))));
    unim::unim_dma_poll();
    status.map_or(DmaStatus::Unknown, DmaStatus::from)
}

/// `unim_dma_status_t unim_dma_wait(unim_dma_transfer_id_t tID, uint64_t timeout_us)`: sleeps
/// until the transfer has ended (0: no timeout), then runs the callbacks that are due.
#[unsafe(no_mangle)]
pub extern "C" fn unim_dma_wait(id: u64, timeout_us: u64) -> DmaStatus {
    waited(record(unim::unim_dma_wait(id, timeout_us).map_err(CError::from)))
}

/// `size_t unim_dma_poll(void)`: runs the callbacks of the transfers that have ended; how many.
#[unsafe(no_mangle)]
pub extern "C" fn unim_dma_poll() -> usize {
    unim::unim_dma_poll()
}

/// `unim_dma_node_t unim_dma_get_node(unim_node_id_t id)`: NULL on error.
#[unsafe(no_mangle)]
pub extern "C" fn unim_dma_get_node(id: u16) -> *const UnimDmaNode {
    record(unim::unim_dma_get_node(id).map_err(CError::from)).map_or(core::ptr::null(), node_object)
}

#[cfg(test)]
mod tests;
