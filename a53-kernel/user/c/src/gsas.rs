//! `unimem.h`: the GSAS API (seed D3.6 §2.3) under its own names, over the process's one
//! client (`unimem_user::with_client`).
//!
//! A GSAS address travels in a C pointer (the seed's `uint64_t *addr`), which nothing
//! dereferences: its bits are the address. Where the seed says the application "exits
//! abnormally" on an invalid address, the call logs which call failed on which address and
//! the process exits with the error's status; the `_e` variants return that status instead
//! and deliver their value through a pointer. Unaligned addresses are refused, not rounded
//! down (`docs/hw/gsas-packets.md`, "Choices and corrections").
//!
//! Each call's work is a function generic over the client's [`Link`], so the host tests run it
//! against the fake service; the exports only join it to the process's client and to the
//! error conventions of [`crate::status`].
#![allow(non_snake_case)] // the seed's names

use core::ffi::{c_char, c_void};

use proto::gsas::{GlobalAddress, MAX_SPAWN_NAME, PAGE_SIZE, Sharing};
use unimem_user::{Error, ErrorCode, Gsas, Hw, Link};

use crate::status::{CError, deliver, or_exit, record, status};

/// Runs `op` on the process's client, which opens on first use.
fn client<R>(op: impl FnOnce(&mut Gsas<Hw>) -> Result<R, CError>) -> Result<R, CError> {
    unimem_user::with_client(|g| Ok(op(g))).unwrap_or_else(|e| Err(e.into()))
}

/// The GSAS address a C pointer carries.
fn address<T>(p: *const T) -> GlobalAddress {
    GlobalAddress::from_raw(p.addr() as u64)
}

/// A node number given as the seed's `uint64_t bid`.
fn node(bid: u64) -> Result<u16, CError> {
    u16::try_from(bid).map_err(|_| Error::NoSuchNode(bid).into())
}

/// allocSharedPage with a sharing mode: the address as a pointer.
pub(crate) fn alloc<L: Link>(g: &mut Gsas<L>, quantity: u16, bid: u64, sharing: u64) -> Result<*mut c_void, CError> {
    let sharing = Sharing::from_bits(sharing).ok_or(Error::Local(ErrorCode::BadArgument))?;
    let page = g.alloc_shared(quantity, node(bid)?, sharing)?;
    // A GSAS address, not memory of this process: it carries no provenance.
    Ok(core::ptr::without_provenance_mut(page.raw() as usize))
}

/// freeSharedPage: the pages freed.
pub(crate) fn free<L: Link>(g: &mut Gsas<L>, addr: *mut c_void) -> Result<u64, CError> {
    Ok(g.free_shared(address(addr))?)
}

/// READ8.
pub(crate) fn read8<L: Link>(g: &mut Gsas<L>, addr: *mut c_char) -> Result<c_char, CError> {
    Ok(g.read8(address(addr))? as c_char)
}

/// READ32.
pub(crate) fn read32<L: Link>(g: &mut Gsas<L>, addr: *mut u32) -> Result<u32, CError> {
    Ok(g.read32(address(addr))?)
}

/// READ64.
pub(crate) fn read64<L: Link>(g: &mut Gsas<L>, addr: *mut u64) -> Result<u64, CError> {
    Ok(g.read64(address(addr))?)
}

/// READ4K into `buffer`; on failure its bytes are unspecified.
///
/// # Safety
///
/// `buffer` is NULL or holds [`PAGE_SIZE`] writable bytes that nothing else uses meanwhile.
pub(crate) unsafe fn read4k<L: Link>(g: &mut Gsas<L>, addr: *mut c_void, buffer: *mut c_char) -> Result<u64, CError> {
    if buffer.is_null() {
        return Err(CError::Null);
    }
    // SAFETY: not NULL, and this function's contract.
    let page = unsafe { &mut *buffer.cast::<[u8; PAGE_SIZE as usize]>() };
    Ok(g.read4k(address(addr), page)? as u64)
}

/// WRITE8.
pub(crate) fn write8<L: Link>(g: &mut Gsas<L>, addr: *mut c_char, val: c_char) -> Result<(), CError> {
    Ok(g.write8(address(addr), crate::byte(val))?)
}

/// WRITE32.
pub(crate) fn write32<L: Link>(g: &mut Gsas<L>, addr: *mut u32, val: u32) -> Result<(), CError> {
    Ok(g.write32(address(addr), val)?)
}

/// WRITE64.
pub(crate) fn write64<L: Link>(g: &mut Gsas<L>, addr: *mut u64, val: u64) -> Result<(), CError> {
    Ok(g.write64(address(addr), val)?)
}

/// WRITE128 of the seed's `uint64_t val[2]`: `val[0]` at `addr`, `val[1]` at `addr + 8`.
///
/// # Safety
///
/// `val` is NULL or points to two readable `uint64_t`.
pub(crate) unsafe fn write128<L: Link>(g: &mut Gsas<L>, addr: *mut u64, val: *mut u64) -> Result<(), CError> {
    if val.is_null() {
        return Err(CError::Null);
    }
    // SAFETY: not NULL, and this function's contract.
    let (low, high) = unsafe { (val.read(), val.add(1).read()) };
    Ok(g.write128(address(addr), u128::from(high) << 64 | u128::from(low))?)
}

/// CAS64: 1 if it stored `new_val`, else 0.
pub(crate) fn cas64<L: Link>(g: &mut Gsas<L>, addr: *mut u64, old_val: u64, new_val: u64) -> Result<u64, CError> {
    Ok(u64::from(g.cas64(address(addr), old_val, new_val)?))
}

/// FAD64: the value before, signed as the seed has it.
pub(crate) fn fad64<L: Link>(g: &mut Gsas<L>, addr: *mut i64, val: i64) -> Result<i64, CError> {
    Ok(g.fad64(address(addr), val)? as i64)
}

/// SWAP64: the value before.
pub(crate) fn swap64<L: Link>(g: &mut Gsas<L>, addr: *mut u64, val: u64) -> Result<u64, CError> {
    Ok(g.swap64(address(addr), val)?)
}

/// remoteFork of a C string: a name that is not UTF-8, or longer than an image's can be, is
/// refused as the library refuses it (`Local(BadArgument)`).
///
/// # Safety
///
/// `filename` is NULL or a NUL-terminated string.
pub(crate) unsafe fn remote_fork<L: Link>(
    g: &mut Gsas<L>,
    filename: *const c_char,
    arg: u64,
    bid: u64,
) -> Result<u64, CError> {
    if filename.is_null() {
        return Err(CError::Null);
    }
    // Read up to the longest name an image can have, and one byte more for its NUL, so that a
    // name too long is refused without reading past it.
    let mut name = [0u8; MAX_SPAWN_NAME];
    let mut len = None;
    for i in 0..=MAX_SPAWN_NAME {
        // SAFETY: bytes before the string's NUL and the NUL itself are readable (this
        // function's contract), and the loop stops at the NUL.
        let byte = crate::byte(unsafe { filename.add(i).read() });
        if byte == 0 {
            len = Some(i);
            break;
        }
        if let Some(b) = name.get_mut(i) {
            *b = byte;
        }
    }
    let name = len.and_then(|len| core::str::from_utf8(&name[..len]).ok());
    let name = name.ok_or(Error::Local(ErrorCode::BadArgument))?;
    Ok(g.remote_spawn(name, arg, node(bid)?)?)
}

// ---- The seed's calls ----

/// `uint64_t getNumberBoards(void)`.
#[unsafe(no_mangle)]
pub extern "C" fn getNumberBoards() -> u64 {
    or_exit("getNumberBoards", None, unimem_user::board_count().map(u64::from).map_err(CError::from))
}

/// `uint64_t getBoardPid(void)`.
#[unsafe(no_mangle)]
pub extern "C" fn getBoardPid() -> u64 {
    or_exit("getBoardPid", None, unimem_user::board_id().map(u64::from).map_err(CError::from))
}

/// `void *allocSharedPage(uint16_t quantity, uint64_t bid)`: NULL on failure.
#[unsafe(no_mangle)]
pub extern "C" fn allocSharedPage(quantity: u16, bid: u64) -> *mut c_void {
    unimem_alloc_shared_page(quantity, bid, Sharing::Shared.bits())
}

/// `void *unimem_alloc_shared_page(uint16_t quantity, uint64_t bid, uint64_t sharing)`:
/// allocSharedPage with a sharing mode; NULL on failure.
#[unsafe(no_mangle)]
pub extern "C" fn unimem_alloc_shared_page(quantity: u16, bid: u64, sharing: u64) -> *mut c_void {
    record(client(|g| alloc(g, quantity, bid, sharing))).unwrap_or(core::ptr::null_mut())
}

/// `uint64_t freeSharedPage(void *addr)`: the pages freed, 0 on failure.
#[unsafe(no_mangle)]
pub extern "C" fn freeSharedPage(addr: *mut c_void) -> u64 {
    record(client(|g| free(g, addr))).unwrap_or(0)
}

/// `char READ8(char *addr)`.
#[unsafe(no_mangle)]
pub extern "C" fn READ8(addr: *mut c_char) -> c_char {
    or_exit("READ8", Some(address(addr).raw()), client(|g| read8(g, addr)))
}

/// `uint32_t READ32(uint32_t *addr)` (the seed's `uint64_t *` is a slip: the value and its
/// alignment are 32-bit).
#[unsafe(no_mangle)]
pub extern "C" fn READ32(addr: *mut u32) -> u32 {
    or_exit("READ32", Some(address(addr).raw()), client(|g| read32(g, addr)))
}

/// `uint64_t READ64(uint64_t *addr)`.
#[unsafe(no_mangle)]
pub extern "C" fn READ64(addr: *mut u64) -> u64 {
    or_exit("READ64", Some(address(addr).raw()), client(|g| read64(g, addr)))
}

/// `uint64_t READ4K(void *addr, char *buffer)`: 4096.
///
/// # Safety
///
/// `buffer` holds 4096 writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn READ4K(addr: *mut c_void, buffer: *mut c_char) -> u64 {
    // SAFETY: forwarded from the caller.
    or_exit("READ4K", Some(address(addr).raw()), client(|g| unsafe { read4k(g, addr, buffer) }))
}

/// `void WRITE8(char *addr, char val)`.
#[unsafe(no_mangle)]
pub extern "C" fn WRITE8(addr: *mut c_char, val: c_char) {
    or_exit("WRITE8", Some(address(addr).raw()), client(|g| write8(g, addr, val)))
}

/// `void WRITE32(uint32_t *addr, uint32_t val)`.
#[unsafe(no_mangle)]
pub extern "C" fn WRITE32(addr: *mut u32, val: u32) {
    or_exit("WRITE32", Some(address(addr).raw()), client(|g| write32(g, addr, val)))
}

/// `void WRITE64(uint64_t *addr, uint64_t val)`.
#[unsafe(no_mangle)]
pub extern "C" fn WRITE64(addr: *mut u64, val: u64) {
    or_exit("WRITE64", Some(address(addr).raw()), client(|g| write64(g, addr, val)))
}

/// `void WRITE128(uint64_t *addr, uint64_t val[2])`.
///
/// # Safety
///
/// `val` points to two readable `uint64_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn WRITE128(addr: *mut u64, val: *mut u64) {
    // SAFETY: forwarded from the caller.
    or_exit("WRITE128", Some(address(addr).raw()), client(|g| unsafe { write128(g, addr, val) }))
}

/// `uint64_t CAS64(uint64_t *addr, uint64_t old_val, uint64_t new_val)`: 1 if it swapped.
#[unsafe(no_mangle)]
pub extern "C" fn CAS64(addr: *mut u64, old_val: u64, new_val: u64) -> u64 {
    or_exit("CAS64", Some(address(addr).raw()), client(|g| cas64(g, addr, old_val, new_val)))
}

/// `int64_t FAD64(int64_t *addr, int64_t val)`: the value before the addition.
#[unsafe(no_mangle)]
pub extern "C" fn FAD64(addr: *mut i64, val: i64) -> i64 {
    or_exit("FAD64", Some(address(addr).raw()), client(|g| fad64(g, addr, val)))
}

/// `uint64_t SWAP64(uint64_t *addr, uint64_t val)`: the value before.
#[unsafe(no_mangle)]
pub extern "C" fn SWAP64(addr: *mut u64, val: u64) -> u64 {
    or_exit("SWAP64", Some(address(addr).raw()), client(|g| swap64(g, addr, val)))
}

/// `uint64_t remoteFork(char *filename, uint64_t arg, uint64_t bid)`: the child's nonzero
/// handle, 0 on failure.
///
/// # Safety
///
/// `filename` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn remoteFork(filename: *mut c_char, arg: u64, bid: u64) -> u64 {
    // SAFETY: forwarded from the caller.
    record(client(|g| unsafe { remote_fork(g, filename, arg, bid) })).unwrap_or(0)
}

/// `uint64_t readThreadArgument(void)`: `_EMPTY_THREAD_ARGUMENT_` without a parent.
#[unsafe(no_mangle)]
pub extern "C" fn readThreadArgument() -> u64 {
    unimem_user::sys::thread_argument_raw()
}

// ---- The `_e` variants: a status instead of an exit ----

/// `uint64_t READ8_e(char *addr, char *value)`.
///
/// # Safety
///
/// `value` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn READ8_e(addr: *mut c_char, value: *mut c_char) -> u64 {
    // SAFETY: forwarded from the caller.
    unsafe { deliver(value, || client(|g| read8(g, addr))) }
}

/// `uint64_t READ32_e(uint32_t *addr, uint32_t *value)`.
///
/// # Safety
///
/// `value` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn READ32_e(addr: *mut u32, value: *mut u32) -> u64 {
    // SAFETY: forwarded from the caller.
    unsafe { deliver(value, || client(|g| read32(g, addr))) }
}

/// `uint64_t READ64_e(uint64_t *addr, uint64_t *value)`.
///
/// # Safety
///
/// `value` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn READ64_e(addr: *mut u64, value: *mut u64) -> u64 {
    // SAFETY: forwarded from the caller.
    unsafe { deliver(value, || client(|g| read64(g, addr))) }
}

/// `uint64_t READ4K_e(void *addr, char *buffer)`.
///
/// # Safety
///
/// `buffer` is NULL or holds 4096 writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn READ4K_e(addr: *mut c_void, buffer: *mut c_char) -> u64 {
    // SAFETY: forwarded from the caller.
    status(client(|g| unsafe { read4k(g, addr, buffer) }.map(drop)))
}

/// `uint64_t WRITE8_e(char *addr, char val)`.
#[unsafe(no_mangle)]
pub extern "C" fn WRITE8_e(addr: *mut c_char, val: c_char) -> u64 {
    status(client(|g| write8(g, addr, val)))
}

/// `uint64_t WRITE32_e(uint32_t *addr, uint32_t val)`.
#[unsafe(no_mangle)]
pub extern "C" fn WRITE32_e(addr: *mut u32, val: u32) -> u64 {
    status(client(|g| write32(g, addr, val)))
}

/// `uint64_t WRITE64_e(uint64_t *addr, uint64_t val)`.
#[unsafe(no_mangle)]
pub extern "C" fn WRITE64_e(addr: *mut u64, val: u64) -> u64 {
    status(client(|g| write64(g, addr, val)))
}

/// `uint64_t WRITE128_e(uint64_t *addr, uint64_t val[2])`.
///
/// # Safety
///
/// `val` is NULL or points to two readable `uint64_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn WRITE128_e(addr: *mut u64, val: *mut u64) -> u64 {
    // SAFETY: forwarded from the caller.
    status(client(|g| unsafe { write128(g, addr, val) }))
}

/// `uint64_t CAS64_e(uint64_t *addr, uint64_t old_val, uint64_t new_val, uint64_t *swapped)`.
///
/// # Safety
///
/// `swapped` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn CAS64_e(addr: *mut u64, old_val: u64, new_val: u64, swapped: *mut u64) -> u64 {
    // SAFETY: forwarded from the caller.
    unsafe { deliver(swapped, || client(|g| cas64(g, addr, old_val, new_val))) }
}

/// `uint64_t FAD64_e(int64_t *addr, int64_t val, int64_t *old)`.
///
/// # Safety
///
/// `old` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn FAD64_e(addr: *mut i64, val: i64, old: *mut i64) -> u64 {
    // SAFETY: forwarded from the caller.
    unsafe { deliver(old, || client(|g| fad64(g, addr, val))) }
}

/// `uint64_t SWAP64_e(uint64_t *addr, uint64_t val, uint64_t *old)`.
///
/// # Safety
///
/// `old` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn SWAP64_e(addr: *mut u64, val: u64, old: *mut u64) -> u64 {
    // SAFETY: forwarded from the caller.
    unsafe { deliver(old, || client(|g| swap64(g, addr, val))) }
}

#[cfg(test)]
mod tests;
