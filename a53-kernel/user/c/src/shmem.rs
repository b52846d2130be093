//! OpenSHMEM for C programs (`include/shmem.h`, written over these by the C layer): the
//! standard names `include/unimem_shmem.h` declares and the generic cores (`unimem_shmem_*`) that the
//! typed C functions call, all over `unimem_user::shmem` (the same implementation as Rust's).
//!
//! Errors end the program, as `include/unimem_shmem.h` says: a bad PE, a non-symmetric address, a PE that
//! has gone, `shmem_free` of a pointer `shmem_malloc` did not return: one line names the
//! routine and the error, and the PE exits with the error's status (`README.md`, "Exit
//! statuses"; `0x360 + k` for the OpenSHMEM layer's own). The collectives return non-zero for
//! a bad active set or argument instead (the status, after logging it).

use core::ffi::{c_char, c_void};

use proto::gsas::{VaOp, VaWidth};
use proto::rdma::queue::Direction;
use unimem_user::log;
use unimem_user::shmem::wait::Wait;
use unimem_user::shmem::{ActiveSet, Cmp, Kind, Mode, NAME, ReduceOp, ReduceType, ShmemError, VERSION, with_pe};

/// A `volatile void *` parameter (the variables a wait polls).
#[repr(transparent)]
#[derive(Clone, Copy)]
pub struct VolatileVoid(pub *mut c_void);

/// Logs `routine`'s error and ends the PE with its status.
fn fail(routine: &str, e: ShmemError) -> ! {
    log!("{routine}: {e} (exit status {:#x})", e.exit_status());
    unimem_user::sys::exit(e.exit_status())
}

/// The value, or the end of the program.
fn or_fail<T>(routine: &str, r: Result<T, ShmemError>) -> T {
    r.unwrap_or_else(|e| fail(routine, e))
}

/// A collective's return: 0; a refused set or argument: logged, its status; else the end.
fn collective(routine: &str, r: Result<(), ShmemError>) -> i32 {
    match r {
        Ok(()) => 0,
        Err(e @ (ShmemError::BadActiveSet { .. } | ShmemError::BadArgument(_))) => {
            log!("{routine}: {e}");
            e.exit_status() as i32
        }
        Err(e) => fail(routine, e),
    }
}

/// `len` bytes at `ptr` as a slice; NULL with a length is `BadArgument` (never a slice).
///
/// # Safety
///
/// A non-NULL `ptr` holds `len` bytes.
unsafe fn bytes<'a>(ptr: *const c_void, len: usize, what: &'static str) -> Result<&'a [u8], ShmemError> {
    match (ptr.is_null(), len) {
        (_, 0) => Ok(&[]),
        (true, _) => Err(ShmemError::BadArgument(what)),
        // SAFETY: the caller's.
        (false, _) => Ok(unsafe { core::slice::from_raw_parts(ptr.cast(), len) }),
    }
}

/// As [`bytes`], writable.
///
/// # Safety
///
/// A non-NULL `ptr` holds `len` writable bytes.
unsafe fn bytes_mut<'a>(ptr: *mut c_void, len: usize, what: &'static str) -> Result<&'a mut [u8], ShmemError> {
    match (ptr.is_null(), len) {
        (_, 0) => Ok(&mut []),
        (true, _) => Err(ShmemError::BadArgument(what)),
        // SAFETY: the caller's.
        (false, _) => Ok(unsafe { core::slice::from_raw_parts_mut(ptr.cast(), len) }),
    }
}

fn set(start: i32, stride: i32, size: i32) -> ActiveSet {
    ActiveSet { start: i64::from(start), stride: i64::from(stride), size: i64::from(size) }
}

#[unsafe(no_mangle)]
pub extern "C" fn shmem_init() {
    or_fail("shmem_init", unimem_user::shmem::init().map(drop));
}

#[unsafe(no_mangle)]
pub extern "C" fn shmem_finalize() {
    or_fail("shmem_finalize", unimem_user::shmem::finalize());
}

#[unsafe(no_mangle)]
pub extern "C" fn shmem_my_pe() -> i32 {
    i32::from(or_fail("shmem_my_pe", with_pe(|pe| Ok(pe.my_pe()))))
}

#[unsafe(no_mangle)]
pub extern "C" fn shmem_n_pes() -> i32 {
    i32::from(or_fail("shmem_n_pes", with_pe(|pe| Ok(pe.n_pes()))))
}

/// Every PE of the job ends with `status` (0..=255; others: 255).
#[unsafe(no_mangle)]
pub extern "C" fn shmem_global_exit(status: i32) -> ! {
    let status = u8::try_from(status).unwrap_or(u8::MAX);
    unimem_user::sys::job_exit(status)
}

#[unsafe(no_mangle)]
pub extern "C" fn shmem_pe_accessible(pe: i32) -> i32 {
    i32::from(or_fail("shmem_pe_accessible", with_pe(|p| p.pe_accessible(i64::from(pe)))))
}

#[unsafe(no_mangle)]
pub extern "C" fn shmem_addr_accessible(addr: *const c_void, pe: i32) -> i32 {
    i32::from(or_fail("shmem_addr_accessible", with_pe(|p| Ok(p.addr_accessible(addr as u64, i64::from(pe))))))
}

/// The address itself for this PE; NULL for another (no load/store reaches another node).
#[unsafe(no_mangle)]
pub extern "C" fn shmem_ptr(dest: *const c_void, pe: i32) -> *mut c_void {
    let p = or_fail("shmem_ptr", with_pe(|p| Ok(p.ptr(dest as u64, i64::from(pe)))));
    p.map_or(core::ptr::null_mut(), |a| a as *mut c_void)
}

/// # Safety
///
/// `major` and `minor` are NULL or point to an `int` each.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_info_get_version(major: *mut i32, minor: *mut i32) {
    // SAFETY: the caller's.
    unsafe {
        if let Some(m) = major.as_mut() {
            *m = VERSION.0;
        }
        if let Some(m) = minor.as_mut() {
            *m = VERSION.1;
        }
    }
}

/// # Safety
///
/// `name` is NULL or holds `SHMEM_MAX_NAME_LEN` (256) bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_info_get_name(name: *mut c_char) {
    if name.is_null() {
        return;
    }
    // SAFETY: the caller's: room for the name and its NUL (under 256 bytes).
    unsafe {
        core::ptr::copy_nonoverlapping(NAME.as_ptr(), name.cast::<u8>(), NAME.len());
        *name.add(NAME.len()) = 0;
    }
}

fn pointer(address: Option<u64>) -> *mut c_void {
    address.map_or(core::ptr::null_mut(), |a| a as *mut c_void)
}

#[unsafe(no_mangle)]
pub extern "C" fn shmem_malloc(size: usize) -> *mut c_void {
    pointer(or_fail("shmem_malloc", with_pe(|p| p.malloc(size as u64, 16))))
}

#[unsafe(no_mangle)]
pub extern "C" fn shmem_calloc(count: usize, size: usize) -> *mut c_void {
    pointer(or_fail("shmem_calloc", with_pe(|p| p.calloc(count as u64, size as u64))))
}

#[unsafe(no_mangle)]
pub extern "C" fn shmem_align(alignment: usize, size: usize) -> *mut c_void {
    pointer(or_fail("shmem_align", with_pe(|p| p.malloc(size as u64, alignment as u64))))
}

#[unsafe(no_mangle)]
pub extern "C" fn shmem_realloc(ptr: *mut c_void, size: usize) -> *mut c_void {
    pointer(or_fail("shmem_realloc", with_pe(|p| p.realloc(ptr as u64, size as u64))))
}

#[unsafe(no_mangle)]
pub extern "C" fn shmem_free(ptr: *mut c_void) {
    or_fail("shmem_free", with_pe(|p| p.free(ptr as u64)));
}

/// # Safety
///
/// `source` holds `nelems` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_putmem(dest: *mut c_void, source: *const c_void, nelems: usize, pe: i32) {
    // SAFETY: the caller's.
    let r = unsafe { bytes(source, nelems, "NULL source") }
        .and_then(|src| with_pe(|p| p.putmem(dest as u64, src, i64::from(pe))));
    or_fail("shmem_putmem", r);
}

/// # Safety
///
/// `dest` holds `nelems` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_getmem(dest: *mut c_void, source: *const c_void, nelems: usize, pe: i32) {
    // SAFETY: the caller's.
    let r = unsafe { bytes_mut(dest, nelems, "NULL destination") }
        .and_then(|into| with_pe(|p| p.getmem(into, source as u64, i64::from(pe))));
    or_fail("shmem_getmem", r);
}

/// # Safety
///
/// `source` holds `nelems` bytes, unchanged until the next `shmem_quiet`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_putmem_nbi(dest: *mut c_void, source: *const c_void, nelems: usize, pe: i32) {
    // SAFETY: the caller's.
    let r = with_pe(|p| unsafe { p.putmem_nbi(dest as u64, source as u64, nelems, i64::from(pe)) });
    or_fail("shmem_putmem_nbi", r);
}

/// # Safety
///
/// `dest` holds `nelems` bytes, not used until the next `shmem_quiet`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_getmem_nbi(dest: *mut c_void, source: *const c_void, nelems: usize, pe: i32) {
    // SAFETY: the caller's.
    let r = with_pe(|p| unsafe { p.getmem_nbi(dest as u64, source as u64, nelems, i64::from(pe)) });
    or_fail("shmem_getmem_nbi", r);
}

#[unsafe(no_mangle)]
pub extern "C" fn shmem_quiet() {
    or_fail("shmem_quiet", with_pe(|p| p.quiet()));
}

#[unsafe(no_mangle)]
pub extern "C" fn shmem_fence() {
    or_fail("shmem_fence", with_pe(|p| p.fence()));
}

#[unsafe(no_mangle)]
pub extern "C" fn shmem_barrier_all() {
    or_fail("shmem_barrier_all", with_pe(|p| p.barrier_all()));
}

#[unsafe(no_mangle)]
pub extern "C" fn shmem_sync_all() {
    or_fail("shmem_sync_all", with_pe(|p| p.sync_all()));
}

#[unsafe(no_mangle)]
pub extern "C" fn shmem_set_lock(lock: *mut i64) {
    or_fail("shmem_set_lock", with_pe(|p| p.set_lock(lock as u64)));
}

#[unsafe(no_mangle)]
pub extern "C" fn shmem_clear_lock(lock: *mut i64) {
    or_fail("shmem_clear_lock", with_pe(|p| p.clear_lock(lock as u64)));
}

/// 0 if the lock was free and is now this PE's, 1 if another holds it.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_test_lock(lock: *mut i64) -> i32 {
    or_fail("shmem_test_lock", with_pe(|p| p.test_lock(lock as u64)))
}

#[unsafe(no_mangle)]
pub extern "C" fn shmem_signal_fetch(sig_addr: *const u64) -> u64 {
    or_fail("shmem_signal_fetch", with_pe(|p| p.signal_fetch(sig_addr as u64)))
}

/// Waits until the local signal `cmp` `cmp_value`; returns the signal's value then.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_signal_wait_until(sig_addr: *mut u64, cmp: i32, cmp_value: u64) -> u64 {
    let r = with_pe(|p| {
        let w = Wait {
            kind: Kind { width: 8, signed: false },
            mode: Mode::All,
            ivars: sig_addr as u64,
            n: 1,
            status: None,
            cmp: Cmp::from_raw(cmp)?,
            values: None,
            value: cmp_value,
        };
        p.wait(&w, true, None)?;
        p.signal_fetch(sig_addr as u64)
    });
    or_fail("shmem_signal_wait_until", r)
}

/// The ABI's `op` (0 FETCH .. 7 FETCH_XOR) and `width` (4 or 8).
fn va_op(op: i32, width: i32) -> Result<(VaOp, VaWidth), ShmemError> {
    let op = usize::try_from(op).ok().and_then(|i| VaOp::ALL.get(i).copied());
    let op = op.ok_or(ShmemError::BadArgument("atomic op (0..=7)"))?;
    let width = match width {
        4 => VaWidth::W32,
        8 => VaWidth::W64,
        _ => return Err(ShmemError::BadArgument("atomic width (4 or 8)")),
    };
    Ok((op, width))
}

/// The generic atomic: the old value, zero-extended. COMPARE_SWAP: `value` = new,
/// `compare` = expected.
#[unsafe(no_mangle)]
pub extern "C" fn unimem_shmem_atomic(
    op: i32,
    width: i32,
    dest: *mut c_void,
    value: u64,
    compare: u64,
    pe: i32,
) -> u64 {
    let r = va_op(op, width).and_then(|(op, width)| {
        let (a1, a2) = if op == VaOp::CompareSwap { (compare, value) } else { (value, 0) };
        with_pe(|p| p.atomic(op, width, dest as u64, a1, a2, i64::from(pe)))
    });
    or_fail("shmem atomic", r)
}

/// The generic wait/test (`include/unimem_shmem.h`, `unimem_shmem_wait`).
///
/// # Safety
///
/// `status` is NULL or `n` ints; `indices` NULL or `n` `size_t`s; `values` NULL or `n`
/// values of `kind`.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn unimem_shmem_wait(
    kind: i32,
    mode: i32,
    block: i32,
    ivars: VolatileVoid,
    n: usize,
    status: *const i32,
    indices: *mut usize,
    cmp: i32,
    values: *const c_void,
    value: u64,
) -> usize {
    let r = (|| {
        let kind = Kind::from_raw(kind)?;
        let mode = Mode::from_raw(mode)?;
        let cmp = Cmp::from_raw(cmp)?;
        // SAFETY: the caller's.
        let status = (!status.is_null() && n > 0).then(|| unsafe { core::slice::from_raw_parts(status, n) });
        // SAFETY: the caller's.
        let indices = (!indices.is_null()).then(|| unsafe { core::slice::from_raw_parts_mut(indices, n) });
        let values = (!values.is_null()).then_some(values as u64);
        let w = Wait { kind, mode, ivars: ivars.0 as u64, n, status, cmp, values, value };
        with_pe(|p| p.wait(&w, block != 0, indices))
    })();
    or_fail("shmem wait/test", r)
}

/// `dest` on `pe` gets `src`, then the signal (0 SET, 1 ADD) once the data is there.
///
/// # Safety
///
/// `src` holds `nbytes` bytes.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn unimem_shmem_put_signal(
    dest: *mut c_void,
    src: *const c_void,
    nbytes: usize,
    sig_addr: *mut u64,
    signal: u64,
    sig_op: i32,
    pe: i32,
    nbi: i32,
) {
    let _ = nbi; // the _nbi form completes at once too (allowed: it may complete early)
    // SAFETY: the caller's.
    let r = unsafe { bytes(src, nbytes, "NULL source") }.and_then(|data| match sig_op {
        0 | 1 => with_pe(|p| p.put_signal(dest as u64, data, sig_addr as u64, signal, sig_op == 1, i64::from(pe))),
        _ => Err(ShmemError::BadArgument("signal op (0 SET, 1 ADD)")),
    });
    or_fail("shmem_put_signal", r);
}

/// # Safety
///
/// The strided source holds `nelems` elements of `elem_size` bytes, `sst` apart.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unimem_shmem_iput(
    dest: *mut c_void,
    src: *const c_void,
    dst: i64,
    sst: i64,
    nelems: usize,
    elem_size: usize,
    pe: i32,
) {
    // SAFETY: the caller's.
    let r = with_pe(|p| unsafe {
        p.strided(Direction::Write, dest as u64, src as u64, dst, sst, nelems, elem_size, i64::from(pe))
    });
    or_fail("shmem_iput", r);
}

/// # Safety
///
/// The strided destination holds `nelems` elements of `elem_size` bytes, `dst` apart.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unimem_shmem_iget(
    dest: *mut c_void,
    src: *const c_void,
    dst: i64,
    sst: i64,
    nelems: usize,
    elem_size: usize,
    pe: i32,
) {
    // SAFETY: the caller's.
    let r = with_pe(|p| unsafe {
        p.strided(Direction::Read, dest as u64, src as u64, dst, sst, nelems, elem_size, i64::from(pe))
    });
    or_fail("shmem_iget", r);
}

#[unsafe(no_mangle)]
pub extern "C" fn unimem_shmem_sync(start: i32, stride: i32, size: i32) -> i32 {
    collective("shmem_sync", with_pe(|p| p.sync(set(start, stride, size))))
}

#[unsafe(no_mangle)]
pub extern "C" fn unimem_shmem_barrier(start: i32, stride: i32, size: i32) -> i32 {
    collective("shmem_barrier", with_pe(|p| p.barrier(set(start, stride, size))))
}

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn unimem_shmem_broadcast(
    dest: *mut c_void,
    src: *const c_void,
    nbytes: usize,
    root: i32,
    with_root: i32,
    start: i32,
    stride: i32,
    size: i32,
) -> i32 {
    let s = set(start, stride, size);
    let r = with_pe(|p| p.broadcast(dest as u64, src as u64, nbytes, i64::from(root), with_root != 0, s));
    collective("shmem_broadcast", r)
}

#[unsafe(no_mangle)]
pub extern "C" fn unimem_shmem_collect(
    dest: *mut c_void,
    src: *const c_void,
    nbytes: usize,
    start: i32,
    stride: i32,
    size: i32,
) -> i32 {
    let s = set(start, stride, size);
    collective("shmem_collect", with_pe(|p| p.collect(dest as u64, src as u64, nbytes, s)))
}

#[unsafe(no_mangle)]
pub extern "C" fn unimem_shmem_fcollect(
    dest: *mut c_void,
    src: *const c_void,
    nbytes: usize,
    start: i32,
    stride: i32,
    size: i32,
) -> i32 {
    let s = set(start, stride, size);
    collective("shmem_fcollect", with_pe(|p| p.fcollect(dest as u64, src as u64, nbytes, s)))
}

#[unsafe(no_mangle)]
pub extern "C" fn unimem_shmem_alltoall(
    dest: *mut c_void,
    src: *const c_void,
    nbytes: usize,
    start: i32,
    stride: i32,
    size: i32,
) -> i32 {
    let s = set(start, stride, size);
    collective("shmem_alltoall", with_pe(|p| p.alltoall(dest as u64, src as u64, nbytes, s)))
}

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn unimem_shmem_alltoalls(
    dest: *mut c_void,
    src: *const c_void,
    dst: i64,
    sst: i64,
    nelems: usize,
    elem_size: usize,
    start: i32,
    stride: i32,
    size: i32,
) -> i32 {
    let s = set(start, stride, size);
    let r = with_pe(|p| p.alltoalls(dest as u64, src as u64, dst, sst, nelems, elem_size, s));
    collective("shmem_alltoalls", r)
}

/// `op` (0 AND .. 6 PROD) over `type` (width | class << 8) elements.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn unimem_shmem_reduce(
    op: i32,
    r#type: i32,
    dest: *mut c_void,
    src: *const c_void,
    nreduce: usize,
    start: i32,
    stride: i32,
    size: i32,
) -> i32 {
    let s = set(start, stride, size);
    let r = ReduceOp::from_raw(op).and_then(|op| {
        let ty = ReduceType::from_raw(r#type)?;
        with_pe(|p| p.reduce(op, ty, dest as u64, src as u64, nreduce, s))
    });
    collective("shmem reduction", r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_abis_atomic_ops_and_widths_decode_in_order() {
        assert_eq!(va_op(0, 8), Ok((VaOp::Fetch, VaWidth::W64)));
        assert_eq!(va_op(2, 4), Ok((VaOp::CompareSwap, VaWidth::W32)));
        assert_eq!(va_op(7, 8), Ok((VaOp::FetchXor, VaWidth::W64)));
        assert!(va_op(8, 8).is_err());
        assert!(va_op(-1, 8).is_err());
        assert!(va_op(4, 2).is_err());
    }

    #[test]
    fn null_buffers_with_a_length_are_refused_and_empty_ones_are_empty() {
        // SAFETY: NULL is never read; a live local otherwise.
        unsafe {
            assert_eq!(bytes(core::ptr::null(), 4, "x"), Err(ShmemError::BadArgument("x")));
            assert_eq!(bytes(core::ptr::null(), 0, "x"), Ok(&[][..]));
            assert!(bytes_mut(core::ptr::null_mut(), 1, "y").is_err());
            let v = [1u8, 2];
            assert_eq!(bytes(v.as_ptr().cast(), 2, "x"), Ok(&v[..]));
        }
    }

    #[test]
    fn version_and_name() {
        let (mut major, mut minor) = (0, 0);
        // SAFETY: two ints.
        unsafe { shmem_info_get_version(&mut major, &mut minor) };
        assert_eq!((major, minor), (1, 5));
        let mut name = [1 as c_char; 256];
        // SAFETY: 256 bytes.
        unsafe { shmem_info_get_name(name.as_mut_ptr()) };
        let end = name.iter().position(|&c| c == 0).unwrap();
        assert_eq!(end, NAME.len());
        assert!(name[..end].iter().zip(NAME.bytes()).all(|(&c, b)| crate::byte(c) == b));
    }

    #[test]
    fn a_call_before_shmem_init_ends_the_program_with_not_initialised() {
        // Host builds have no kernel: `exit` panics with the status it was given.
        let e = std::panic::catch_unwind(|| or_fail("shmem_my_pe", with_pe(|pe| Ok(pe.my_pe())))).unwrap_err();
        let message = e.downcast_ref::<std::string::String>().unwrap();
        assert!(message.contains(&std::format!("{}", ShmemError::NotInitialised.exit_status())), "{message}");
    }
}
