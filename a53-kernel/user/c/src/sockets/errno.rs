//! The `errno` values of the socket calls, and what each failure of the user library becomes.
//!
//! The numbers are picolibc's (its `sys/errno.h`, newlib's numbering, not Linux's): C code
//! compares `errno` with picolibc's names, so the values must be those. `abi`'s tests hold each
//! one to picolibc's header with the cross-compiler.

use unimem_user::{Error, SysError};

/// An `errno` value; the exports return it negated and the runtime (`crt/posix.c`) stores it in
/// picolibc's `errno`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Errno(pub i32);

macro_rules! errnos {
    ($($(#[$doc:meta])* $name:ident = $value:literal,)*) => {
        impl Errno {
            $($(#[$doc])* pub const $name: Errno = Errno($value);)*

            /// Every value with its C name, for the header checks.
            pub const ALL: &[(&str, Errno)] = &[$((stringify!($name), Errno::$name)),*];
        }
    };
}

errnos! {
    /// A signal (a mailbox `'s'` registration) ended the wait.
    EINTR = 4,
    /// The kernel answered something the library does not know.
    EIO = 5,
    /// Not an open file descriptor.
    EBADF = 9,
    /// Nothing to read, no room to write, no connection to accept, and the caller asked not to
    /// wait (`EWOULDBLOCK` is the same number).
    EAGAIN = 11,
    /// A pointer the process cannot use for this: NULL, or memory the kernel refused.
    EFAULT = 14,
    /// An argument out of range, or a call the socket's state does not allow.
    EINVAL = 22,
    /// Every file descriptor is taken.
    EMFILE = 24,
    /// Writing to a connection whose writing was shut down, or whose peer closed or stopped
    /// reading.
    EPIPE = 32,
    /// The kernel has no such call.
    ENOSYS = 88,
    /// A `send`/`recv` flag this system does not have.
    EOPNOTSUPP = 95,
    /// The connection broke: it was reset, or the peer's node is gone.
    ECONNRESET = 104,
    /// The node's connections (64) or listeners (16) are all taken.
    ENOBUFS = 105,
    /// An address family other than `AF_UNIMEM`.
    EAFNOSUPPORT = 106,
    /// A socket type other than `SOCK_STREAM`.
    EPROTOTYPE = 107,
    /// A file descriptor that is no socket (the console, the event counter).
    ENOTSOCK = 108,
    /// A socket option this system does not have.
    ENOPROTOOPT = 109,
    /// Nobody listens on that port, or its listener's backlog is full.
    ECONNREFUSED = 111,
    /// The port has a listener already (or another socket of the process is bound to it).
    EADDRINUSE = 112,
    /// This node has no sockets (no RDMA).
    ENETDOWN = 115,
    /// The peer's kernel did not answer a connect in time.
    ETIMEDOUT = 116,
    /// The node does not exist, or it died or its links are down.
    EHOSTUNREACH = 118,
    /// A protocol other than 0.
    EPROTONOSUPPORT = 123,
    /// `bind` to another node's address.
    EADDRNOTAVAIL = 125,
    /// `connect` on a socket that is connected or listening.
    EISCONN = 127,
    /// A call that needs a connection, on a socket without one.
    ENOTCONN = 128,
}

impl Errno {
    /// `EWOULDBLOCK`: picolibc defines it as `EAGAIN`.
    pub const EWOULDBLOCK: Errno = Errno::EAGAIN;

    /// The value an export returns: `-errno`.
    pub fn negated(self) -> i32 {
        -self.0
    }
}

/// What a failure of the user library is to a C programmer, where the call gives it no other
/// meaning (the calls that do, `read` and `write`, decide before this).
impl From<Error> for Errno {
    fn from(e: Error) -> Self {
        match e {
            Error::Syscall(e) => match e {
                SysError::BadArgument | SysError::NotRegistered => Errno::EINVAL,
                SysError::BadPointer => Errno::EFAULT,
                SysError::NoSuchCall => Errno::ENOSYS,
                SysError::WouldBlock => Errno::EAGAIN,
                SysError::TimedOut => Errno::ETIMEDOUT,
                SysError::Busy => Errno::ENOBUFS,
                SysError::Unreachable => Errno::EHOSTUNREACH,
                SysError::NoPd => Errno::ENETDOWN,
                SysError::Interrupted => Errno::EINTR,
                SysError::ConnectionRefused => Errno::ECONNREFUSED,
                SysError::ConnectionReset => Errno::ECONNRESET,
                SysError::AddressInUse => Errno::EADDRINUSE,
                SysError::Closed => Errno::EPIPE,
            },
            // The library's own name for the kernel's TimedOut (`sys::raw_error`).
            Error::Timeout => Errno::ETIMEDOUT,
            // The socket calls give no other error; should one appear, it is still one.
            _ => Errno::EIO,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kernel_error_has_the_errno_a_c_programmer_expects() {
        let cases = [
            (SysError::ConnectionRefused, Errno::ECONNREFUSED),
            (SysError::ConnectionReset, Errno::ECONNRESET),
            (SysError::WouldBlock, Errno::EWOULDBLOCK),
            (SysError::BadPointer, Errno::EFAULT),
            (SysError::AddressInUse, Errno::EADDRINUSE),
            (SysError::Unreachable, Errno::EHOSTUNREACH),
            (SysError::TimedOut, Errno::ETIMEDOUT),
            (SysError::Interrupted, Errno::EINTR),
            (SysError::Closed, Errno::EPIPE),
            (SysError::Busy, Errno::ENOBUFS),
            (SysError::NoPd, Errno::ENETDOWN),
        ];
        for (e, errno) in cases {
            assert_eq!(Errno::from(Error::Syscall(e)), errno, "{e:?}");
        }
        assert_eq!(Errno::from(Error::Timeout), Errno::ETIMEDOUT);
        assert_eq!(Errno::from(Error::UnknownReturn(-99)), Errno::EIO);
        assert_eq!(Errno::ECONNREFUSED.negated(), -111);
    }

    #[test]
    fn the_values_are_distinct() {
        let mut values: std::vec::Vec<i32> = Errno::ALL.iter().map(|(_, e)| e.0).collect();
        values.sort_unstable();
        values.dedup();
        assert_eq!(values.len(), Errno::ALL.len());
    }
}
