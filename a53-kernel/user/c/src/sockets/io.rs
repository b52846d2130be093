//! `read`, `write`, `recv` and `send` on a connection, and `read` of the event counter.
//!
//! A blocking write takes everything before it returns, as a POSIX stream socket's does (the
//! kernel takes what fits in the ring, and the rest waits for room); a non-blocking one takes
//! what fits now. A read returns what has arrived, and waits only while nothing has. Calls
//! longer than the kernel's largest (`IO_MAX`, 1 MiB) are cut into several.

use proto::socket::IO_MAX;
use unimem_user::{Error, SysError};

use super::addr::{MSG_DONTWAIT, MSG_NOSIGNAL, MSG_WAITALL};
use super::fds::{Connection, Fd, Kind};
use super::{Errno, Net, Sockets};

/// The flags `recv` takes.
const RECV_FLAGS: i32 = MSG_DONTWAIT | MSG_WAITALL | MSG_NOSIGNAL;
/// The flags `send` takes.
const SEND_FLAGS: i32 = MSG_DONTWAIT | MSG_NOSIGNAL;

impl<N: Net> Sockets<N> {
    /// `read(fd, buf, len)` of a socket or the event counter (the runtime serves the console,
    /// so it is `EBADF` here).
    ///
    /// # Safety
    ///
    /// `buf` is NULL, `len` writable bytes, or memory the kernel refuses (`EFAULT`).
    pub unsafe fn read(&mut self, fd: i32, buf: *mut u8, len: usize) -> Result<usize, Errno> {
        match *self.fds.get(fd)? {
            Fd { kind: Kind::Console, .. } => Err(Errno::EBADF),
            // SAFETY: forwarded from the caller.
            Fd { kind: Kind::EventCounter, nonblocking } => unsafe { self.read_events(buf, len, nonblocking) },
            // SAFETY: forwarded from the caller.
            _ => unsafe { self.recv(fd, buf, len, 0) },
        }
    }

    /// `recv(fd, buf, len, flags)`: `MSG_DONTWAIT`, `MSG_WAITALL`, `MSG_NOSIGNAL` (nothing to
    /// do for a read); another flag is `EOPNOTSUPP`.
    ///
    /// # Safety
    ///
    /// As [`read`](Self::read).
    pub unsafe fn recv(&mut self, fd: i32, buf: *mut u8, len: usize, flags: i32) -> Result<usize, Errno> {
        let (c, nonblocking) = self.connection(fd, flags, RECV_FLAGS)?;
        if len == 0 {
            return Ok(0);
        }
        if buf.is_null() {
            return Err(Errno::EFAULT);
        }
        let nonblocking = nonblocking || flags & MSG_DONTWAIT != 0;
        let whole = flags & MSG_WAITALL != 0 && !nonblocking;
        let mut done = 0;
        while done < len {
            let piece = (len - done).min(IO_MAX as usize);
            // SAFETY: within the caller's `len` bytes (or memory the kernel refuses).
            match unsafe { self.net.read(c.handle, buf.wrapping_add(done), piece, nonblocking) } {
                Ok(0) => break,
                Ok(n) => done += n,
                // Reading was shut down: the end of the stream, as on Linux.
                Err(Error::Syscall(SysError::Closed)) => break,
                // What was read is the answer; the error comes again at the next call.
                Err(_) if done > 0 => break,
                Err(e) => return Err(self.read_error(fd, e)),
            }
            if !whole {
                break;
            }
        }
        Ok(done)
    }

    /// `write(fd, buf, len)` of a socket (the runtime serves the console; the event counter
    /// cannot be written, `EINVAL`).
    pub fn write(&mut self, fd: i32, buf: *const u8, len: usize) -> Result<usize, Errno> {
        match self.fds.get(fd)?.kind {
            Kind::Console => Err(Errno::EBADF),
            Kind::EventCounter => Err(Errno::EINVAL),
            _ => self.send(fd, buf, len, 0),
        }
    }

    /// `send(fd, buf, len, flags)`: `MSG_DONTWAIT`, `MSG_NOSIGNAL` (there are no signals, so
    /// it changes nothing); another flag is `EOPNOTSUPP`. The kernel reads `buf`.
    pub fn send(&mut self, fd: i32, buf: *const u8, len: usize, flags: i32) -> Result<usize, Errno> {
        let (c, nonblocking) = self.connection(fd, flags, SEND_FLAGS)?;
        if len == 0 {
            return Ok(0);
        }
        if buf.is_null() {
            return Err(Errno::EFAULT);
        }
        let nonblocking = nonblocking || flags & MSG_DONTWAIT != 0;
        let mut done = 0;
        while done < len {
            let piece = (len - done).min(IO_MAX as usize);
            match self.net.write(c.handle, buf.wrapping_add(done), piece, nonblocking) {
                Ok(n) => done += n,
                // What was taken is the answer; the error comes again at the next call (a
                // non-blocking write ends here when the ring is full).
                Err(_) if done > 0 => break,
                Err(e) => return Err(self.write_error(fd, c, e)),
            }
        }
        Ok(done)
    }

    /// The connection behind socket `fd` and whether it is non-blocking, for a call that takes
    /// `allowed` flags.
    fn connection(&self, fd: i32, flags: i32, allowed: i32) -> Result<(Connection, bool), Errno> {
        let socket = self.socket_fd(fd)?;
        if flags & !allowed != 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        match socket.kind {
            Kind::Connected(c) => Ok((c, socket.nonblocking)),
            _ => Err(Errno::ENOTCONN),
        }
    }

    /// A failed read: a broken connection is `ECONNRESET` (and counts as reported).
    fn read_error(&mut self, fd: i32, e: Error) -> Errno {
        if e == Error::Syscall(SysError::ConnectionReset) {
            self.report_reset(fd);
        }
        e.into()
    }

    /// A failed write. The kernel says `ConnectionReset` whenever the bytes can go nowhere; a
    /// C programmer tells a peer that closed or stopped reading (`EPIPE`) from a connection
    /// that broke (`ECONNRESET`, once; `EPIPE` after, as on Linux), and the readiness bits
    /// tell them apart. Writing after this end's write shutdown is `EPIPE` too.
    fn write_error(&mut self, fd: i32, c: Connection, e: Error) -> Errno {
        match e {
            Error::Syscall(SysError::ConnectionReset) => {
                if !c.reset_reported && self.broken(c.handle).unwrap_or(false) {
                    self.report_reset(fd);
                    Errno::ECONNRESET
                } else {
                    Errno::EPIPE
                }
            }
            Error::Syscall(SysError::Closed) => Errno::EPIPE,
            e => e.into(),
        }
    }

    /// `read` of the event counter: its value, 8 bytes (a `uint64_t`, as an eventfd gives).
    /// Blocking, it waits until the value is not 0. The notifications stay queued: the
    /// counter goes down as `unimem_mailbox_receive` takes them.
    ///
    /// # Safety
    ///
    /// `buf` is NULL or 8 writable bytes when `len` is 8 or more.
    unsafe fn read_events(&mut self, buf: *mut u8, len: usize, nonblocking: bool) -> Result<usize, Errno> {
        const BYTES: usize = size_of::<u64>();
        if len < BYTES {
            return Err(Errno::EINVAL);
        }
        if buf.is_null() {
            return Err(Errno::EFAULT);
        }
        let count = self.net.events(!nonblocking).map_err(|e| match e {
            // No `'e'` opcode: there is no counter to read.
            Error::Syscall(SysError::NotRegistered) => Errno::EINVAL,
            e => e.into(),
        })?;
        // SAFETY: not NULL, and 8 writable bytes (the caller's contract); C's buffer may be
        // unaligned.
        unsafe { buf.cast::<u64>().write_unaligned(count) };
        Ok(BYTES)
    }
}
