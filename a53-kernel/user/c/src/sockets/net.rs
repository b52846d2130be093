//! What the socket layer needs from below: the kernel's socket calls on bare handles, the event
//! counter, the node's identity and a sleep. [`Kernel`] is the real one (the user library's
//! `socket::raw` and `sys`); the host tests give the layer a fake network instead.

use proto::socket::PollEntry;
use unimem_user::socket::{Shutdown, poll, raw};
use unimem_user::{Error, sys};

/// The calls below the file descriptors. Handles are the kernel's; buffers are the caller's
/// pointers, handed on unchecked (the kernel checks them).
pub trait Net {
    /// This node and how many there are.
    fn node_info(&mut self) -> Result<(u16, u16), Error>;
    /// A listener on `port`.
    fn listen(&mut self, port: u16) -> Result<u64, Error>;
    /// The next connection of `listener`: its handle and its peer's node.
    fn accept(&mut self, listener: u64, nonblocking: bool) -> Result<(u64, u16), Error>;
    /// A connection to `port` on `node`, once accepted.
    fn connect(&mut self, node: u16, port: u16, timeout_us: u64) -> Result<u64, Error>;
    /// What has arrived, into `len` bytes at `buf` (1..=`IO_MAX`); 0 at the end.
    ///
    /// # Safety
    ///
    /// As `unimem_user::socket::raw::read`: `buf` is `len` bytes nothing else uses, or memory
    /// the kernel refuses.
    unsafe fn read(&mut self, connection: u64, buf: *mut u8, len: usize, nonblocking: bool) -> Result<usize, Error>;
    /// What fits now of `len` bytes at `buf` (1..=`IO_MAX`).
    fn write(&mut self, connection: u64, buf: *const u8, len: usize, nonblocking: bool) -> Result<usize, Error>;
    fn shutdown(&mut self, connection: u64, how: Shutdown) -> Result<(), Error>;
    /// Gives up a connection or a listener.
    fn close(&mut self, handle: u64);
    /// `SOCKET_POLL` over `entries` (`proto::socket::EVENT_COUNTER` for the event counter).
    fn poll(&mut self, entries: &mut [PollEntry], timeout_us: u64) -> Result<usize, Error>;
    /// The mailbox event counter; `WouldBlock` when it is 0 and not `blocking`.
    fn events(&mut self, blocking: bool) -> Result<u64, Error>;
    /// Sleeps `us` microseconds (a poll with nothing to watch).
    fn sleep_us(&mut self, us: u64) -> Result<(), Error>;
}

/// The process's kernel.
pub struct Kernel;

impl Net for Kernel {
    fn node_info(&mut self) -> Result<(u16, u16), Error> {
        sys::node_info().map(|i| (i.node, i.nodes))
    }
    fn listen(&mut self, port: u16) -> Result<u64, Error> {
        raw::listen(port)
    }
    fn accept(&mut self, listener: u64, nonblocking: bool) -> Result<(u64, u16), Error> {
        raw::accept(listener, nonblocking)
    }
    fn connect(&mut self, node: u16, port: u16, timeout_us: u64) -> Result<u64, Error> {
        raw::connect(node, port, timeout_us)
    }
    unsafe fn read(&mut self, connection: u64, buf: *mut u8, len: usize, nonblocking: bool) -> Result<usize, Error> {
        // SAFETY: forwarded from the caller.
        unsafe { raw::read(connection, buf, len, nonblocking) }
    }
    fn write(&mut self, connection: u64, buf: *const u8, len: usize, nonblocking: bool) -> Result<usize, Error> {
        raw::write(connection, buf, len, nonblocking)
    }
    fn shutdown(&mut self, connection: u64, how: Shutdown) -> Result<(), Error> {
        raw::shutdown(connection, how)
    }
    fn close(&mut self, handle: u64) {
        // The only refusal is a handle that is gone already: it is gone either way.
        let _ = raw::close(handle);
    }
    fn poll(&mut self, entries: &mut [PollEntry], timeout_us: u64) -> Result<usize, Error> {
        poll(entries, timeout_us)
    }
    fn events(&mut self, blocking: bool) -> Result<u64, Error> {
        sys::mailbox_event(blocking)
    }
    fn sleep_us(&mut self, us: u64) -> Result<(), Error> {
        sys::sleep_us(us)
    }
}
