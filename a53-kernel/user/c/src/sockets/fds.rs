//! The process's file descriptors: 0, 1 and 2 are the console (the runtime serves them), the
//! others what `socket`, `accept` and `unimem_mailbox_event_fd` made, each taking the lowest
//! free number, as POSIX asks.

use super::Errno;
use super::addr::SockAddr;

/// File descriptors a process has at most (the console's three included).
pub const OPEN_MAX: usize = 128;
/// The console's: `stdin`, `stdout`, `stderr`.
pub const CONSOLE: i32 = 3;

/// One end of a connection, as a descriptor keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Connection {
    /// The kernel's handle.
    pub handle: u64,
    /// Its peer: the node and port connected to, or the node an accepted connection came
    /// from (port 0: the kernel does not say which).
    pub peer: SockAddr,
    /// Its own port: the listener's for an accepted connection, 0 for one that connected (the
    /// kernel gives connections no port of their own).
    pub port: u16,
    /// This end's writing was shut down: with the peer's end of the stream, the connection is
    /// over both ways (`POLLHUP`).
    pub write_shut: bool,
    /// The connection's break (`ECONNRESET`) was reported once, by a call or `SO_ERROR`: from
    /// then on a write is `EPIPE` and `SO_ERROR` 0, as on Linux.
    pub reset_reported: bool,
}

/// What a file descriptor is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// 0, 1 or 2.
    Console,
    /// Made by `socket`: nothing in the kernel yet. `bound` is the port `bind` gave it (0:
    /// any, chosen at `listen`).
    Unconnected {
        bound: Option<u16>,
    },
    Listener {
        handle: u64,
        port: u16,
    },
    Connected(Connection),
    /// The mailbox event counter (`unimem_mailbox_event_fd`).
    EventCounter,
}

/// An open file descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fd {
    pub kind: Kind,
    /// `O_NONBLOCK`: calls that would wait answer `EAGAIN` instead.
    pub nonblocking: bool,
}

impl Fd {
    /// A descriptor of `kind` that blocks.
    pub const fn blocking(kind: Kind) -> Self {
        Self { kind, nonblocking: false }
    }

    /// The port it holds or waits to listen on, for `bind`'s check.
    pub fn port(&self) -> Option<u16> {
        match self.kind {
            Kind::Unconnected { bound: Some(port) } | Kind::Listener { port, .. } => Some(port),
            _ => None,
        }
    }
}

/// The table.
pub struct Fds {
    slots: [Option<Fd>; OPEN_MAX],
}

impl Default for Fds {
    fn default() -> Self {
        Self::new()
    }
}

impl Fds {
    /// The console's three, nothing else.
    pub const fn new() -> Self {
        let mut slots = [None; OPEN_MAX];
        let mut fd = 0;
        while fd < CONSOLE as usize {
            slots[fd] = Some(Fd::blocking(Kind::Console));
            fd += 1;
        }
        Self { slots }
    }

    /// Descriptor `fd`; `EBADF` if it is not open.
    pub fn get(&self, fd: i32) -> Result<&Fd, Errno> {
        usize::try_from(fd).ok().and_then(|i| self.slots.get(i)?.as_ref()).ok_or(Errno::EBADF)
    }

    pub fn get_mut(&mut self, fd: i32) -> Result<&mut Fd, Errno> {
        usize::try_from(fd).ok().and_then(|i| self.slots.get_mut(i)?.as_mut()).ok_or(Errno::EBADF)
    }

    /// The lowest free number; `EMFILE` when every one is taken. Asked before anything is made
    /// that would need one (an accepted connection must not be left without a descriptor).
    pub fn lowest_free(&self) -> Result<i32, Errno> {
        let free = self.slots.iter().position(Option::is_none).ok_or(Errno::EMFILE)?;
        Ok(free as i32)
    }

    /// `entry` under the lowest free number, which it returns.
    pub fn open(&mut self, entry: Fd) -> Result<i32, Errno> {
        let fd = self.lowest_free()?;
        self.slots[fd as usize] = Some(entry);
        Ok(fd)
    }

    /// Closes `fd`: what it was; `EBADF` if it was not open.
    pub fn remove(&mut self, fd: i32) -> Result<Fd, Errno> {
        usize::try_from(fd).ok().and_then(|i| self.slots.get_mut(i)?.take()).ok_or(Errno::EBADF)
    }

    /// The open descriptors, in order.
    pub fn iter(&self) -> impl Iterator<Item = (i32, &Fd)> {
        self.slots.iter().enumerate().filter_map(|(i, s)| Some((i as i32, s.as_ref()?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_console_is_there_and_new_ones_take_the_lowest_free_number() {
        let mut fds = Fds::new();
        assert!((0..CONSOLE).all(|fd| fds.get(fd).is_ok_and(|f| f.kind == Kind::Console)));
        let unconnected = Fd::blocking(Kind::Unconnected { bound: None });
        assert_eq!(fds.open(unconnected), Ok(3));
        assert_eq!(fds.open(unconnected), Ok(4));
        assert_eq!(fds.open(unconnected), Ok(5));
        assert_eq!(fds.remove(4), Ok(unconnected));
        assert_eq!(fds.remove(4), Err(Errno::EBADF), "closed already");
        assert_eq!(fds.open(Fd::blocking(Kind::EventCounter)), Ok(4), "the hole is filled first");
        assert_eq!(fds.iter().map(|(fd, _)| fd).collect::<std::vec::Vec<_>>(), [0, 1, 2, 3, 4, 5]);
        for bad in [-1, 6, OPEN_MAX as i32, i32::MAX] {
            assert_eq!(fds.get(bad), Err(Errno::EBADF), "{bad}");
        }
    }

    #[test]
    fn a_full_table_is_emfile() {
        let mut fds = Fds::new();
        for fd in CONSOLE..OPEN_MAX as i32 {
            assert_eq!(fds.open(Fd::blocking(Kind::EventCounter)), Ok(fd));
        }
        assert_eq!(fds.lowest_free(), Err(Errno::EMFILE));
        assert_eq!(fds.open(Fd::blocking(Kind::EventCounter)), Err(Errno::EMFILE));
    }
}
