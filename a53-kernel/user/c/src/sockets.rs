//! Sockets the BSD way for C programs (`sys/socket.h`, `poll.h`, `unimem_socket.h`; the C
//! runtime's `crt/posix.c` defines `socket`, `bind`, ... over the `unimem_sock_*` exports of
//! `unimem_sock.h`): file descriptors over the kernel's stream sockets
//! (`docs/hw/sockets.md`, the user library's `socket::raw`).
//!
//! - [`fds`]: the descriptor table (0..=2 the console, then the lowest free number);
//! - [`calls`]: `socket` .. `close`, names, options, `fcntl`; [`io`]: `read`, `write`, `send`,
//!   `recv`; [`poll`]: `poll`, over sockets and the mailbox event counter;
//! - [`addr`]: the BSD constants and `struct sockaddr_unimem`; [`errno`]: the `errno`
//!   values (picolibc's) and what each kernel error is to a C programmer;
//! - [`net`]: the calls below, a trait, so that the host tests run all of this over a fake
//!   network.
//!
//! Every export returns a value, or `-errno`; the runtime keeps `errno` (picolibc's, in
//! thread-local storage) and turns one into the other.

use core::ffi::c_void;
use core::ptr;

pub mod addr;
pub mod calls;
pub mod errno;
pub mod fds;
pub mod io;
pub mod net;
pub mod poll;

#[cfg(test)]
mod fake;
#[cfg(test)]
mod tests;

use addr::{SOCKADDR_LEN, SockAddr};
pub use errno::Errno;
use fds::Fds;
use net::{Kernel, Net};
pub use poll::PollFd;

/// A process's sockets: its descriptors over the network below.
pub struct Sockets<N: Net> {
    fds: Fds,
    net: N,
    /// The ephemeral port `listen` tries next.
    next_port: u16,
}

impl<N: Net> Sockets<N> {
    /// The console's descriptors and nothing else, over `net`.
    pub const fn new(net: N) -> Self {
        Self { fds: Fds::new(), net, next_port: *calls::EPHEMERAL_PORTS.start() }
    }

    /// The network below (the tests' fake).
    #[cfg(test)]
    pub(crate) fn net(&mut self) -> &mut N {
        &mut self.net
    }
}

// A process has one thread. Host tests run in parallel threads, each with its own sockets.
#[cfg(not(test))]
static SOCKETS: spin::Mutex<Sockets<Kernel>> = spin::Mutex::new(Sockets::new(Kernel));
#[cfg(test)]
std::thread_local! {
    static SOCKETS: core::cell::RefCell<Sockets<Kernel>> = const { core::cell::RefCell::new(Sockets::new(Kernel)) };
}

/// Runs `f` on the process's sockets (no call of the layer calls another, so the lock is
/// never asked for twice).
fn with<R>(f: impl FnOnce(&mut Sockets<Kernel>) -> R) -> R {
    #[cfg(not(test))]
    return f(&mut SOCKETS.lock());
    #[cfg(test)]
    SOCKETS.with(|s| f(&mut s.borrow_mut()))
}

/// A result as an `int` export returns it.
fn int(result: Result<i32, Errno>) -> i32 {
    result.unwrap_or_else(Errno::negated)
}

/// A result without a value as an `int` export returns it (0).
fn done(result: Result<(), Errno>) -> i32 {
    int(result.map(|()| 0))
}

/// A byte count as an `ssize_t` export returns it.
fn size(result: Result<usize, Errno>) -> i64 {
    result.map_or_else(|e| i64::from(e.negated()), |n| n as i64)
}

/// The first `len` bytes of the caller's address (at most a whole `sockaddr_unimem`) copied
/// into `buf`; `None` for NULL.
///
/// # Safety
///
/// `addr` is NULL or `len` readable bytes.
unsafe fn address_in(addr: *const c_void, len: u32, buf: &mut [u8; SOCKADDR_LEN]) -> Option<&[u8]> {
    if addr.is_null() {
        return None;
    }
    let n = (len as usize).min(SOCKADDR_LEN);
    // SAFETY: `n` <= `len` readable bytes (the caller's contract); `buf` holds `n`.
    unsafe { ptr::copy_nonoverlapping(addr.cast::<u8>(), buf.as_mut_ptr(), n) };
    Some(&buf[..n])
}

/// Gives the caller `a` as POSIX does: as much of it as `*len` bytes hold, and its whole length
/// in `*len`.
///
/// # Safety
///
/// `len` is a readable and writable `socklen_t`; `addr` has `*len` writable bytes. Neither is
/// NULL.
unsafe fn address_out(addr: *mut c_void, len: *mut u32, a: SockAddr) {
    let bytes = a.encode();
    // SAFETY: the caller's contract; C's pointers may be unaligned.
    unsafe {
        let room = (len.read_unaligned() as usize).min(SOCKADDR_LEN);
        ptr::copy_nonoverlapping(bytes.as_ptr(), addr.cast::<u8>(), room);
        len.write_unaligned(SOCKADDR_LEN as u32);
    }
}

/// `address_out` for `getsockname`/`getpeername`, which need both pointers: the call's own
/// error first (`EBADF`, `ENOTCONN`), then NULL (`EFAULT`), as Linux orders them.
///
/// # Safety
///
/// As [`address_out`], except that either may be NULL.
unsafe fn name_out(addr: *mut c_void, len: *mut u32, name: Result<SockAddr, Errno>) -> i32 {
    match name {
        Err(e) => e.negated(),
        Ok(_) if addr.is_null() || len.is_null() => Errno::EFAULT.negated(),
        Ok(a) => {
            // SAFETY: not NULL, and the caller's contract.
            unsafe { address_out(addr, len, a) };
            0
        }
    }
}

// ---- The exports (`unimem_sock.h`) ----

/// `int32_t unimem_sock_socket(int32_t domain, int32_t type, int32_t protocol)`: `socket`.
#[unsafe(no_mangle)]
pub extern "C" fn unimem_sock_socket(domain: i32, ty: i32, protocol: i32) -> i32 {
    int(with(|s| s.socket(domain, ty, protocol)))
}

/// `int32_t unimem_sock_bind(int32_t fd, const void *addr, uint32_t len)`: `bind`.
///
/// # Safety
///
/// `addr` is NULL or `len` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unimem_sock_bind(fd: i32, addr: *const c_void, len: u32) -> i32 {
    let mut buf = [0; SOCKADDR_LEN];
    // SAFETY: forwarded from the caller.
    let addr = unsafe { address_in(addr, len, &mut buf) };
    done(with(|s| s.bind(fd, addr)))
}

/// `int32_t unimem_sock_listen(int32_t fd, int32_t backlog)`: `listen`.
#[unsafe(no_mangle)]
pub extern "C" fn unimem_sock_listen(fd: i32, _backlog: i32) -> i32 {
    done(with(|s| s.listen(fd)))
}

/// `int32_t unimem_sock_accept(int32_t fd, void *addr, uint32_t *len)`: `accept`; the peer's
/// address goes to `addr` unless it is NULL.
///
/// # Safety
///
/// `addr` is NULL, or `len` is a `socklen_t` and `addr` has `*len` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unimem_sock_accept(fd: i32, addr: *mut c_void, len: *mut u32) -> i32 {
    if !addr.is_null() && len.is_null() {
        // Refused before a connection is taken that could then not be reported.
        return Errno::EFAULT.negated();
    }
    match with(|s| s.accept(fd)) {
        Ok((new, peer)) => {
            if !addr.is_null() {
                // SAFETY: neither is NULL, and the caller's contract.
                unsafe { address_out(addr, len, peer) };
            }
            new
        }
        Err(e) => e.negated(),
    }
}

/// `int32_t unimem_sock_connect(int32_t fd, const void *addr, uint32_t len)`: `connect`.
///
/// # Safety
///
/// `addr` is NULL or `len` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unimem_sock_connect(fd: i32, addr: *const c_void, len: u32) -> i32 {
    let mut buf = [0; SOCKADDR_LEN];
    // SAFETY: forwarded from the caller.
    let addr = unsafe { address_in(addr, len, &mut buf) };
    done(with(|s| s.connect(fd, addr)))
}

/// `int64_t unimem_sock_read(int32_t fd, void *buf, size_t len)`: `read` of a socket or the
/// event counter (not the console's descriptors, which the runtime serves).
///
/// # Safety
///
/// `buf` is NULL, `len` writable bytes, or memory the kernel refuses.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unimem_sock_read(fd: i32, buf: *mut c_void, len: usize) -> i64 {
    // SAFETY: forwarded from the caller.
    size(with(|s| unsafe { s.read(fd, buf.cast(), len) }))
}

/// `int64_t unimem_sock_write(int32_t fd, const void *buf, size_t len)`: `write` of a socket.
#[unsafe(no_mangle)]
pub extern "C" fn unimem_sock_write(fd: i32, buf: *const c_void, len: usize) -> i64 {
    size(with(|s| s.write(fd, buf.cast(), len)))
}

/// `int64_t unimem_sock_recv(int32_t fd, void *buf, size_t len, int32_t flags)`: `recv`.
///
/// # Safety
///
/// As [`unimem_sock_read`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unimem_sock_recv(fd: i32, buf: *mut c_void, len: usize, flags: i32) -> i64 {
    // SAFETY: forwarded from the caller.
    size(with(|s| unsafe { s.recv(fd, buf.cast(), len, flags) }))
}

/// `int64_t unimem_sock_send(int32_t fd, const void *buf, size_t len, int32_t flags)`: `send`.
#[unsafe(no_mangle)]
pub extern "C" fn unimem_sock_send(fd: i32, buf: *const c_void, len: usize, flags: i32) -> i64 {
    size(with(|s| s.send(fd, buf.cast(), len, flags)))
}

/// `int32_t unimem_sock_shutdown(int32_t fd, int32_t how)`: `shutdown`.
#[unsafe(no_mangle)]
pub extern "C" fn unimem_sock_shutdown(fd: i32, how: i32) -> i32 {
    done(with(|s| s.shutdown(fd, how)))
}

/// `int32_t unimem_sock_close(int32_t fd)`: `close` of any descriptor.
#[unsafe(no_mangle)]
pub extern "C" fn unimem_sock_close(fd: i32) -> i32 {
    done(with(|s| s.close(fd)))
}

/// `int32_t unimem_sock_poll(struct pollfd *fds, uint64_t nfds, int32_t timeout)`: `poll`.
///
/// # Safety
///
/// `fds` is NULL or `nfds` `struct pollfd`s that nothing else uses meanwhile.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unimem_sock_poll(fds: *mut PollFd, nfds: u64, timeout: i32) -> i32 {
    let fds: &mut [PollFd] = match (fds.is_null(), usize::try_from(nfds)) {
        (_, Ok(0)) => &mut [],
        (true, _) => return Errno::EFAULT.negated(),
        // More than a process has descriptors (POSIX: `EINVAL` past `OPEN_MAX`).
        (_, Ok(n)) if n > fds::OPEN_MAX => return Errno::EINVAL.negated(),
        // SAFETY: not NULL, `nfds` of them (the caller's contract).
        (false, Ok(n)) => unsafe { core::slice::from_raw_parts_mut(fds, n) },
        (false, Err(_)) => return Errno::EINVAL.negated(),
    };
    int(with(|s| s.poll(fds, timeout).map(|n| n as i32)))
}

/// `int32_t unimem_sock_fcntl(int32_t fd, int32_t cmd, int64_t arg)`: `fcntl`'s `F_GETFL`,
/// `F_SETFL`, `F_GETFD`, `F_SETFD`.
#[unsafe(no_mangle)]
pub extern "C" fn unimem_sock_fcntl(fd: i32, cmd: i32, arg: i64) -> i32 {
    int(with(|s| s.fcntl(fd, cmd, arg)))
}

/// `int32_t unimem_sock_getsockopt(int32_t fd, int32_t level, int32_t name, void *value,
/// uint32_t *len)`: `getsockopt` of an `int` option.
///
/// # Safety
///
/// `len` is NULL or a `socklen_t`; `value` is NULL or `*len` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unimem_sock_getsockopt(
    fd: i32,
    level: i32,
    name: i32,
    value: *mut c_void,
    len: *mut u32,
) -> i32 {
    let got = with(|s| {
        // The descriptor first, then the pointers, then the option (`SO_ERROR` reports the
        // error it gives, so it must not be asked for a value that cannot be delivered).
        s.socket_fd(fd)?;
        if value.is_null() || len.is_null() {
            return Err(Errno::EFAULT);
        }
        // SAFETY: not NULL, and a `socklen_t` (the caller's contract).
        if (unsafe { len.read_unaligned() } as usize) < size_of::<i32>() {
            return Err(Errno::EINVAL);
        }
        s.getsockopt(fd, level, name)
    });
    match got {
        Ok(v) => {
            // SAFETY: not NULL, and room for an int (checked above).
            unsafe {
                value.cast::<i32>().write_unaligned(v);
                len.write_unaligned(size_of::<i32>() as u32);
            }
            0
        }
        Err(e) => e.negated(),
    }
}

/// `int32_t unimem_sock_setsockopt(int32_t fd, int32_t level, int32_t name, const void
/// *value, uint32_t len)`: `setsockopt`.
///
/// # Safety
///
/// `value` is NULL or `len` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unimem_sock_setsockopt(fd: i32, level: i32, name: i32, value: *const c_void, len: u32) -> i32 {
    let value = (!value.is_null()).then(|| {
        // SAFETY: not NULL, `len` readable bytes (the caller's contract).
        unsafe { core::slice::from_raw_parts(value.cast::<u8>(), len as usize) }
    });
    done(with(|s| s.setsockopt(fd, level, name, value)))
}

/// `int32_t unimem_sock_getsockname(int32_t fd, void *addr, uint32_t *len)`: `getsockname`.
///
/// # Safety
///
/// As [`unimem_sock_accept`]'s, but neither may be NULL (`EFAULT`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unimem_sock_getsockname(fd: i32, addr: *mut c_void, len: *mut u32) -> i32 {
    let name = with(|s| s.sockname(fd));
    // SAFETY: forwarded from the caller.
    unsafe { name_out(addr, len, name) }
}

/// `int32_t unimem_sock_getpeername(int32_t fd, void *addr, uint32_t *len)`: `getpeername`.
///
/// # Safety
///
/// As [`unimem_sock_getsockname`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unimem_sock_getpeername(fd: i32, addr: *mut c_void, len: *mut u32) -> i32 {
    let name = with(|s| s.peername(fd));
    // SAFETY: forwarded from the caller.
    unsafe { name_out(addr, len, name) }
}

/// `int32_t unimem_sock_event_fd(void)`: the mailbox event counter's descriptor
/// (`unimem_mailbox_event_fd`).
#[unsafe(no_mangle)]
pub extern "C" fn unimem_sock_event_fd() -> i32 {
    int(with(Sockets::event_fd))
}
