//! Stream sockets over RDMA between processes on any nodes (`docs/hw/sockets.md`): a listener
//! and the connections it accepts, connections made with [`Stream::connect`], and [`poll`] over
//! many of them. The kernels move the bytes with the PLDMA, ring to ring, and ring each other's
//! doorbells through the mailbox; a process only ever names its own sockets.
//!
//! [`Stream`] implements `embedded-io`'s `Read`, `Write`, `ReadReady` and `WriteReady`. Those
//! traits' `read` and `write` block whatever the stream's mode, as their contract says; the
//! stream's own [`Stream::read`] and [`Stream::write`] follow [`Stream::set_nonblocking`].

use crate::error::Error;
use crate::sys::call4;
use proto::socket::{NONBLOCKING, PollEntry, SocketStats, ready, shutdown};
use proto::syscall::{Error as SysError, nr};

pub use proto::socket::{
    EVENT_COUNTER, IO_MAX, MAX_CONNECTIONS, MAX_LISTENERS, POLL_MAX, PollEntry as Entry, RING_BYTES, ready as Ready,
};

/// How long [`Stream::connect`] waits for the peer's kernel by default.
pub const CONNECT_TIMEOUT_US: u64 = 10_000_000;

fn flags(nonblocking: bool) -> u64 {
    if nonblocking { NONBLOCKING } else { 0 }
}

/// A listening port of this node.
#[derive(Debug)]
pub struct Listener {
    handle: u64,
    nonblocking: bool,
}

impl Listener {
    /// Listens on `port` (1..=65535); `AddressInUse` if it is taken.
    pub fn bind(port: u16) -> Result<Self, Error> {
        Ok(Self { handle: raw::listen(port)?, nonblocking: false })
    }

    /// The next connection made to the port, and its peer's node; in non-blocking mode
    /// `WouldBlock` when none waits.
    pub fn accept(&self) -> Result<(Stream, u16), Error> {
        let (handle, node) = raw::accept(self.handle, self.nonblocking)?;
        Ok((Stream { handle, nonblocking: false }, node))
    }

    pub fn set_nonblocking(&mut self, nonblocking: bool) {
        self.nonblocking = nonblocking;
    }

    /// What [`poll`] takes for it.
    pub fn handle(&self) -> u32 {
        self.handle as u32
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let _ = raw::close(self.handle);
    }
}

/// Which direction [`Stream::shutdown`] ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shutdown {
    /// No more writes: the peer reads the end of the stream after what was written.
    Write,
    /// No more reads: the peer's writes fail from now on.
    Read,
    Both,
}

/// One end of a connection.
#[derive(Debug)]
pub struct Stream {
    handle: u64,
    nonblocking: bool,
}

impl Stream {
    /// Connects to `port` on `node`, waiting up to [`CONNECT_TIMEOUT_US`] for the answer.
    pub fn connect(node: u16, port: u16) -> Result<Self, Error> {
        Self::connect_timeout(node, port, CONNECT_TIMEOUT_US)
    }

    /// [`connect`](Self::connect), with a timeout in microseconds (0: none).
    pub fn connect_timeout(node: u16, port: u16, timeout_us: u64) -> Result<Self, Error> {
        Ok(Self { handle: raw::connect(node, port, timeout_us)?, nonblocking: false })
    }

    /// Reads what has arrived (at most [`IO_MAX`] bytes); 0 at the end of the stream. Blocks
    /// until something arrives, or answers `WouldBlock` in non-blocking mode.
    pub fn read(&mut self, buf: &mut [u8]) -> Result<usize, Error> {
        self.read_with(buf, self.nonblocking)
    }

    /// Writes what fits in the ring now (at most [`IO_MAX`] bytes); blocks until something
    /// fits, or answers `WouldBlock` in non-blocking mode.
    pub fn write(&mut self, buf: &[u8]) -> Result<usize, Error> {
        self.write_with(buf, self.nonblocking)
    }

    fn read_with(&mut self, buf: &mut [u8], nonblocking: bool) -> Result<usize, Error> {
        let len = buf.len().min(IO_MAX as usize);
        // SAFETY: `buf` is `len` writable bytes or more.
        unsafe { raw::read(self.handle, buf.as_mut_ptr(), len, nonblocking) }
    }

    fn write_with(&mut self, buf: &[u8], nonblocking: bool) -> Result<usize, Error> {
        let len = buf.len().min(IO_MAX as usize);
        raw::write(self.handle, buf.as_ptr(), len, nonblocking)
    }

    /// Writes all of `buf`, blocking as needed.
    pub fn write_all(&mut self, mut buf: &[u8]) -> Result<(), Error> {
        while !buf.is_empty() {
            let n = self.write_with(buf, false)?;
            buf = &buf[n..];
        }
        Ok(())
    }

    /// Fills `buf`, blocking as needed; `ConnectionReset` if the stream ends first.
    pub fn read_exact(&mut self, mut buf: &mut [u8]) -> Result<(), Error> {
        while !buf.is_empty() {
            match self.read_with(buf, false)? {
                0 => return Err(Error::Syscall(SysError::ConnectionReset)),
                n => buf = &mut buf[n..],
            }
        }
        Ok(())
    }

    pub fn shutdown(&mut self, how: Shutdown) -> Result<(), Error> {
        raw::shutdown(self.handle, how)
    }

    pub fn set_nonblocking(&mut self, nonblocking: bool) {
        self.nonblocking = nonblocking;
    }

    /// What [`poll`] takes for it.
    pub fn handle(&self) -> u32 {
        self.handle as u32
    }

    /// Its readiness bits now ([`Ready`]).
    pub fn readiness(&self) -> Result<u16, Error> {
        let mut entry = [PollEntry { handle: self.handle(), interest: ready::READABLE | ready::WRITABLE, ready: 0 }];
        poll(&mut entry, 0)?;
        Ok(entry[0].ready)
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let _ = raw::close(self.handle);
    }
}

/// Fills each entry's `ready` with what of its `interest` holds (and `HANGUP`, `INVALID`,
/// `ERROR` and `ENDED`, always), sleeping until one is ready or `timeout_us` passes (0: at
/// once; `u64::MAX`: no timeout). Returns how many are ready (0 after the timeout).
///
/// An entry whose handle is [`EVENT_COUNTER`] watches the process's mailbox event counter
/// (`READABLE` while notifications wait on its event opcodes, `INVALID` without one).
pub fn poll(entries: &mut [PollEntry], timeout_us: u64) -> Result<usize, Error> {
    let [n, ..] = call4(nr::SOCKET_POLL, [entries.as_mut_ptr() as u64, entries.len() as u64, timeout_us, 0])?;
    Ok(n as usize)
}

/// The socket calls on bare handles, for code that keeps its handles itself and closes them
/// when it must (the C library's file descriptors); [`Listener`] and [`Stream`] are built on
/// them. A buffer is passed to the kernel as it is, which checks it against the process's
/// memory (`BadPointer`, with nothing copied).
pub mod raw {
    use super::{Error, Shutdown, call4, flags, nr, shutdown};

    /// A listener on `port` (1..=65535): its handle; `AddressInUse` if the port is taken.
    pub fn listen(port: u16) -> Result<u64, Error> {
        let [handle, ..] = call4(nr::SOCKET_LISTEN, [u64::from(port), 0, 0, 0])?;
        Ok(handle)
    }

    /// The next connection of `listener`'s backlog: its handle and the peer's node;
    /// `WouldBlock` when none waits and `nonblocking`, else the call sleeps until one comes.
    pub fn accept(listener: u64, nonblocking: bool) -> Result<(u64, u16), Error> {
        let [handle, node, _] = call4(nr::SOCKET_ACCEPT, [listener, flags(nonblocking), 0, 0])?;
        Ok((handle, node as u16))
    }

    /// A connection to `port` on `node` once the peer's kernel accepted it (`timeout_us`: 0 for
    /// none): its handle; `ConnectionRefused`, `Unreachable`, `TimedOut`.
    pub fn connect(node: u16, port: u16, timeout_us: u64) -> Result<u64, Error> {
        let [handle, ..] = call4(nr::SOCKET_CONNECT, [u64::from(node), u64::from(port), timeout_us, 0])?;
        Ok(handle)
    }

    /// Reads what has arrived into `len` bytes at `buf` (1..=`IO_MAX`); 0 at the end of the
    /// stream.
    ///
    /// # Safety
    ///
    /// `buf` is `len` bytes that nothing else uses meanwhile, or memory the process does not
    /// have writable (which the kernel refuses): the kernel writes there.
    pub unsafe fn read(connection: u64, buf: *mut u8, len: usize, nonblocking: bool) -> Result<usize, Error> {
        let [n, ..] = call4(nr::SOCKET_READ, [connection, buf as u64, len as u64, flags(nonblocking)])?;
        Ok(n as usize)
    }

    /// Writes what fits in the ring now of `len` bytes at `buf` (1..=`IO_MAX`); the kernel
    /// only reads them, and refuses memory the process cannot read.
    pub fn write(connection: u64, buf: *const u8, len: usize, nonblocking: bool) -> Result<usize, Error> {
        let [n, ..] = call4(nr::SOCKET_WRITE, [connection, buf as u64, len as u64, flags(nonblocking)])?;
        Ok(n as usize)
    }

    pub fn shutdown(connection: u64, how: Shutdown) -> Result<(), Error> {
        let how = match how {
            Shutdown::Write => shutdown::WRITE,
            Shutdown::Read => shutdown::READ,
            Shutdown::Both => shutdown::BOTH,
        };
        call4(nr::SOCKET_SHUTDOWN, [connection, how, 0, 0]).map(drop)
    }

    /// Gives up a connection (unsent data still goes, then the end of the stream) or a listener
    /// (its unaccepted connections are closed); the handle is gone.
    pub fn close(handle: u64) -> Result<(), Error> {
        call4(nr::SOCKET_CLOSE, [handle, 0, 0, 0]).map(drop)
    }
}

/// This process's socket statistics.
pub fn stats() -> Result<SocketStats, Error> {
    let mut words = [0u64; SocketStats::WORDS];
    call4(nr::SOCKET_STATS, [words.as_mut_ptr() as u64, 0, 0, 0])?;
    Ok(SocketStats::from_words(words))
}

impl embedded_io::ErrorType for Stream {
    type Error = Error;
}

impl embedded_io::Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Error> {
        if buf.is_empty() {
            return Ok(0);
        }
        self.read_with(buf, false)
    }
}

impl embedded_io::Write for Stream {
    fn write(&mut self, buf: &[u8]) -> Result<usize, Error> {
        if buf.is_empty() {
            return Ok(0);
        }
        self.write_with(buf, false)
    }

    /// Written bytes are in the kernel's ring and on their way: nothing is held here.
    fn flush(&mut self) -> Result<(), Error> {
        Ok(())
    }
}

impl embedded_io::ReadReady for Stream {
    fn read_ready(&mut self) -> Result<bool, Error> {
        Ok(self.readiness()? & ready::READABLE != 0)
    }
}

impl embedded_io::WriteReady for Stream {
    fn write_ready(&mut self) -> Result<bool, Error> {
        Ok(self.readiness()? & ready::WRITABLE != 0)
    }
}

/// Connects to `port` on `node`, trying again while nobody listens there yet (a server just
/// spawned), for up to `within_us` microseconds.
pub fn connect_when_listening(node: u16, port: u16, within_us: u64) -> Result<Stream, Error> {
    let give_up = crate::sys::time_us()?.saturating_add(within_us);
    loop {
        match Stream::connect(node, port) {
            Err(Error::Syscall(SysError::ConnectionRefused)) if crate::sys::time_us()? < give_up => {
                crate::sys::sleep_us(2_000)?;
            }
            r => return r,
        }
    }
}

/// FNV-1a (64-bit) over a stream, whatever pieces it comes in: what the socket programs check
/// their bytes with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fnv(pub u64);

impl Default for Fnv {
    fn default() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    pub fn update(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// The test pattern of the socket programs: byte `position` of stream `seed`.
pub fn pattern_byte(seed: u64, position: u64) -> u8 {
    let x = (position / 8).wrapping_add(seed).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (x >> (8 * (position % 8))) as u8 ^ (x >> 59) as u8
}

/// Fills `buf` with the pattern from `position` on.
pub fn fill_pattern(seed: u64, position: u64, buf: &mut [u8]) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = pattern_byte(seed, position + i as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_does_not_depend_on_how_the_stream_is_cut() {
        let mut data = [0u8; 1000];
        fill_pattern(3, 17, &mut data);
        let mut whole = Fnv::default();
        whole.update(&data);
        let mut pieces = Fnv::default();
        for piece in data.chunks(7) {
            pieces.update(piece);
        }
        assert_eq!(whole, pieces);
        assert_ne!(whole, Fnv::default());
        let mut other = [0u8; 1000];
        fill_pattern(4, 17, &mut other);
        assert_ne!(data, other, "seeds give different streams");
    }
}
