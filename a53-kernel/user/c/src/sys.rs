//! `unimem_sys.h`: the system calls a C runtime is built on (its start-up, stdio, heap, clock
//! and sleeps), over the library's typed wrappers (`unimem_user::sys`). They answer as the
//! kernel does: a negative value is a `proto::syscall::Error` (`docs/hw/syscalls.md`).

use core::ffi::c_char;

use proto::syscall::LOG_MAX;
use unimem_user::{Error, SysError, sys};

/// The kernel's return value for what the library made of it (`sys` turns `-n` into an
/// [`Error`], and `TimedOut` into `Error::Timeout`).
pub(crate) fn raw_error(e: Error) -> i64 {
    match e {
        Error::Syscall(e) => e as i64,
        Error::Timeout => SysError::TimedOut as i64,
        Error::UnknownReturn(v) => v,
        // The system-call wrappers give no other error; should one appear, it is still an
        // error to the caller.
        _ => SysError::BadArgument as i64,
    }
}

/// A result as the kernel would have returned it.
fn raw(result: Result<u64, Error>) -> i64 {
    result.map_or_else(raw_error, |v| v as i64)
}

/// `void unimem_sys_exit(uint64_t status)`: ends the process (EXIT).
#[unsafe(no_mangle)]
pub extern "C" fn unimem_sys_exit(status: u64) -> ! {
    sys::exit(status)
}

/// `int64_t unimem_sys_log(const char *buf, size_t len)`: one console line (LOG) of at most
/// 256 bytes (longer ones are cut); the bytes written.
///
/// # Safety
///
/// `buf` names `len` readable bytes (it may be NULL when `len` is 0).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unimem_sys_log(buf: *const c_char, len: usize) -> i64 {
    let line: &[u8] = match (buf.is_null(), len) {
        (_, 0) => &[],
        (true, _) => return SysError::BadPointer as i64,
        // SAFETY: not NULL, and `len` readable bytes (this function's contract).
        (false, _) => unsafe { core::slice::from_raw_parts(buf.cast(), len) },
    };
    raw(sys::log(line).map(|()| line.len().min(LOG_MAX as usize) as u64))
}

/// `uint64_t unimem_sys_time_us(void)`: microseconds since boot (TIME_US); 0 should the kernel
/// refuse, which it never does.
#[unsafe(no_mangle)]
pub extern "C" fn unimem_sys_time_us() -> u64 {
    sys::time_us().unwrap_or(0)
}

/// `int64_t unimem_sys_sleep_us(uint64_t us)`: sleeps at least `us` (SLEEP_US); 0, or
/// `Interrupted` when a signal ended it.
#[unsafe(no_mangle)]
pub extern "C" fn unimem_sys_sleep_us(us: u64) -> i64 {
    raw(sys::sleep_us(us).map(|()| 0))
}

/// `int64_t unimem_sys_map(uint64_t len, uint64_t flags)`: a new region (MAP; flags
/// `MAP_WRITABLE`), its address, or a negative error.
#[unsafe(no_mangle)]
pub extern "C" fn unimem_sys_map(len: u64, flags: u64) -> i64 {
    raw(sys::map_with_flags(len, flags))
}

/// `int64_t unimem_sys_args(char *buf, size_t len)`: copies the process's arguments (each
/// followed by a zero byte) into `buf` (ARGS); their whole length, which exceeds `len` when
/// they did not fit.
///
/// # Safety
///
/// `buf` names `len` writable bytes (it may be NULL when `len` is 0: only the length is asked).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unimem_sys_args(buf: *mut c_char, len: usize) -> i64 {
    let out: &mut [u8] = match (buf.is_null(), len) {
        (_, 0) => &mut [],
        (true, _) => return SysError::BadPointer as i64,
        // SAFETY: not NULL, and `len` writable bytes (this function's contract).
        (false, _) => unsafe { core::slice::from_raw_parts_mut(buf.cast(), len) },
    };
    raw(sys::args(out).map(|n| n as u64))
}

/// `void unimem_sys_yield(void)`: gives the core to another runnable process (YIELD).
#[unsafe(no_mangle)]
pub extern "C" fn unimem_sys_yield() {
    sys::yield_now();
}

/// `uint64_t unimem_sys_node(void)`: this node (NODE_INFO); `UINT64_MAX` should the kernel
/// refuse, which it never does.
#[unsafe(no_mangle)]
pub extern "C" fn unimem_sys_node() -> u64 {
    sys::node_info().map_or(u64::MAX, |i| u64::from(i.node))
}

/// `uint64_t unimem_sys_nodes(void)`: how many nodes there are (NODE_INFO); 0 should the kernel
/// refuse.
#[unsafe(no_mangle)]
pub extern "C" fn unimem_sys_nodes() -> u64 {
    sys::node_info().map_or(0, |i| u64::from(i.nodes))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On the host every call answers `NoSuchCall` (there is no kernel), which shows how an
    /// error comes back.
    #[test]
    fn errors_come_back_as_the_kernels_negative_values() {
        let none = SysError::NoSuchCall as i64;
        assert_eq!(unimem_sys_map(4096, 1), none);
        assert_eq!(unimem_sys_sleep_us(1), none);
        let mut buf = [0 as c_char; 8];
        // SAFETY: `buf` is 8 writable bytes; the others are NULL or empty.
        unsafe {
            assert_eq!(unimem_sys_args(buf.as_mut_ptr(), buf.len()), none);
            assert_eq!(unimem_sys_args(core::ptr::null_mut(), 0), none, "asking the length only");
            assert_eq!(unimem_sys_args(core::ptr::null_mut(), 8), SysError::BadPointer as i64);
            assert_eq!(unimem_sys_log(c"hi".as_ptr(), 2), none);
            assert_eq!(unimem_sys_log(core::ptr::null(), 3), SysError::BadPointer as i64);
        }
        assert_eq!((unimem_sys_node(), unimem_sys_nodes(), unimem_sys_time_us()), (u64::MAX, 0, 0));
        assert_eq!(raw_error(Error::Timeout), SysError::TimedOut as i64, "sys's TimedOut, given back");
        assert_eq!(raw_error(Error::UnknownReturn(-99)), -99);
        assert_eq!(raw(Ok(0x10_0000_0000)), 0x10_0000_0000);
    }
}
