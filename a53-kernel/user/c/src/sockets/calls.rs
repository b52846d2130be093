//! The calls that make, join, name and end sockets: `socket`, `bind`, `listen`, `accept`,
//! `connect`, `shutdown`, `close`, `getsockname`, `getpeername`, the options and `fcntl`.
//!
//! The kernel has listeners and connections but nothing before them, so a socket is only a
//! descriptor until `listen` or `connect` makes one of those (`Kind::Unconnected`); `bind`
//! notes the port for `listen`.

use unimem_user::socket::{CONNECT_TIMEOUT_US, Shutdown};
use unimem_user::{Error, SysError};

use super::addr::*;
use super::fds::{Connection, Fd, Kind};
use super::{Errno, Net, Sockets};

/// `fcntl`'s commands and flags: picolibc's values (`sys/_default_fcntl.h`), which its
/// `fcntl.h` gives programs.
pub mod fcntl {
    pub const F_GETFD: i32 = 1;
    pub const F_SETFD: i32 = 2;
    pub const F_GETFL: i32 = 3;
    pub const F_SETFL: i32 = 4;
    pub const O_RDWR: i32 = 2;
    pub const O_NONBLOCK: i32 = 0x4000;
}

/// Where `listen` looks for a port when `bind` gave none: the range IANA leaves to
/// ephemeral ports.
pub const EPHEMERAL_PORTS: core::ops::RangeInclusive<u16> = 49152..=65535;
/// Ports `listen` tries before it gives up: more than a node has listeners, so only a node
/// whose every listener is in the range makes it fail.
const EPHEMERAL_TRIES: usize = 2 * proto::socket::MAX_LISTENERS;

impl<N: Net> Sockets<N> {
    /// This node and how many there are.
    pub(crate) fn node(&mut self) -> Result<(u32, u32), Errno> {
        let (me, nodes) = self.net.node_info()?;
        Ok((u32::from(me), u32::from(nodes)))
    }

    /// Descriptor `fd` if it is a socket: `EBADF` if it is not open, `ENOTSOCK` if it is the
    /// console or the event counter.
    pub(crate) fn socket_fd(&self, fd: i32) -> Result<Fd, Errno> {
        match *self.fds.get(fd)? {
            Fd { kind: Kind::Console | Kind::EventCounter, .. } => Err(Errno::ENOTSOCK),
            f => Ok(f),
        }
    }

    fn set_kind(&mut self, fd: i32, kind: Kind) {
        if let Ok(f) = self.fds.get_mut(fd) {
            f.kind = kind;
        }
    }

    /// `socket(domain, type, protocol)`: a stream socket of `AF_UNIMEM`, its descriptor.
    pub fn socket(&mut self, domain: i32, ty: i32, protocol: i32) -> Result<i32, Errno> {
        if domain != AF_UNIMEM {
            return Err(Errno::EAFNOSUPPORT);
        }
        if ty & !(SOCK_NONBLOCK | SOCK_CLOEXEC) != SOCK_STREAM {
            return Err(Errno::EPROTOTYPE);
        }
        if protocol != 0 {
            return Err(Errno::EPROTONOSUPPORT);
        }
        let kind = Kind::Unconnected { bound: None };
        self.fds.open(Fd { kind, nonblocking: ty & SOCK_NONBLOCK != 0 })
    }

    /// `bind(fd, addr)`: the port `listen` will take (`addr` is the caller's bytes, `None` for
    /// NULL). The node must be this one or `UNIMEM_NODE_ANY`.
    pub fn bind(&mut self, fd: i32, addr: Option<&[u8]>) -> Result<(), Errno> {
        let Kind::Unconnected { bound: None } = self.socket_fd(fd)?.kind else { return Err(Errno::EINVAL) };
        let addr = SockAddr::parse(addr.ok_or(Errno::EFAULT)?)?;
        let (me, _) = self.node()?;
        if addr.node != UNIMEM_NODE_ANY && addr.node != me {
            return Err(Errno::EADDRNOTAVAIL);
        }
        // Another of this process's sockets on the port; another process's is the kernel's to
        // find, at `listen`.
        if addr.port != 0 && self.fds.iter().any(|(other, f)| other != fd && f.port() == Some(addr.port)) {
            return Err(Errno::EADDRINUSE);
        }
        self.set_kind(fd, Kind::Unconnected { bound: Some(addr.port) });
        Ok(())
    }

    /// `listen(fd, backlog)`: the kernel's listener on the bound port, or on a free ephemeral
    /// one. The backlog is the kernel's (`SOMAXCONN`) whatever is asked.
    pub fn listen(&mut self, fd: i32) -> Result<(), Errno> {
        let (handle, port) = match self.socket_fd(fd)?.kind {
            Kind::Listener { .. } => return Ok(()),
            Kind::Unconnected { bound: Some(port) } if port != 0 => (self.net.listen(port)?, port),
            Kind::Unconnected { .. } => self.listen_anywhere()?,
            _ => return Err(Errno::EINVAL),
        };
        self.set_kind(fd, Kind::Listener { handle, port });
        Ok(())
    }

    /// A listener on the next ephemeral port that is free.
    fn listen_anywhere(&mut self) -> Result<(u64, u16), Errno> {
        for _ in 0..EPHEMERAL_TRIES {
            let port = self.next_port;
            self.next_port = if port == *EPHEMERAL_PORTS.end() { *EPHEMERAL_PORTS.start() } else { port + 1 };
            if self.fds.iter().any(|(_, f)| f.port() == Some(port)) {
                continue;
            }
            match self.net.listen(port) {
                Ok(handle) => return Ok((handle, port)),
                Err(Error::Syscall(SysError::AddressInUse)) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(Errno::EADDRINUSE)
    }

    /// `accept(fd)`: the next connection made to the listener, as a new (blocking) descriptor,
    /// and its peer's address.
    pub fn accept(&mut self, fd: i32) -> Result<(i32, SockAddr), Errno> {
        let listener = self.socket_fd(fd)?;
        let Kind::Listener { handle, port } = listener.kind else { return Err(Errno::EINVAL) };
        // Both asked first: once accepted, a connection must get its descriptor.
        self.fds.lowest_free()?;
        let (handle, node) = self.net.accept(handle, listener.nonblocking)?;
        let peer = SockAddr { node: u32::from(node), port: 0 };
        let connection = Connection { handle, peer, port, write_shut: false, reset_reported: false };
        let new = self.fds.open(Fd::blocking(Kind::Connected(connection)))?;
        Ok((new, peer))
    }

    /// `connect(fd, addr)`: a connection to the address, once the peer's kernel accepted it or
    /// refused it. It completes before it returns, also on a non-blocking socket (the kernel
    /// has no connection in progress to come back to), so `EINPROGRESS` never comes.
    pub fn connect(&mut self, fd: i32, addr: Option<&[u8]>) -> Result<(), Errno> {
        if !matches!(self.socket_fd(fd)?.kind, Kind::Unconnected { .. }) {
            return Err(Errno::EISCONN);
        }
        let addr = SockAddr::parse(addr.ok_or(Errno::EFAULT)?)?;
        let (me, nodes) = self.node()?;
        let node = if addr.node == UNIMEM_NODE_ANY { me } else { addr.node };
        if node >= nodes {
            return Err(Errno::EHOSTUNREACH);
        }
        if addr.port == 0 {
            // Nothing ever listens there.
            return Err(Errno::ECONNREFUSED);
        }
        let handle = self.net.connect(node as u16, addr.port, CONNECT_TIMEOUT_US)?;
        let peer = SockAddr { node, port: addr.port };
        let connection = Connection { handle, peer, port: 0, write_shut: false, reset_reported: false };
        self.set_kind(fd, Kind::Connected(connection));
        Ok(())
    }

    /// `shutdown(fd, how)`.
    pub fn shutdown(&mut self, fd: i32, how: i32) -> Result<(), Errno> {
        let socket = self.socket_fd(fd)?;
        let how = match how {
            SHUT_RD => Shutdown::Read,
            SHUT_WR => Shutdown::Write,
            SHUT_RDWR => Shutdown::Both,
            _ => return Err(Errno::EINVAL),
        };
        let Kind::Connected(mut c) = socket.kind else { return Err(Errno::ENOTCONN) };
        self.net.shutdown(c.handle, how)?;
        c.write_shut |= how != Shutdown::Read;
        self.set_kind(fd, Kind::Connected(c));
        Ok(())
    }

    /// `close(fd)`: the descriptor is free again and the kernel's socket behind it is given
    /// up (unsent data still goes, then the end of the stream). The console's descriptors
    /// stay: the console is the process's only output.
    pub fn close(&mut self, fd: i32) -> Result<(), Errno> {
        if self.fds.get(fd)?.kind == Kind::Console {
            return Ok(());
        }
        match self.fds.remove(fd)?.kind {
            Kind::Listener { handle, .. } | Kind::Connected(Connection { handle, .. }) => self.net.close(handle),
            Kind::Console | Kind::Unconnected { .. } | Kind::EventCounter => {}
        }
        Ok(())
    }

    /// `getsockname(fd)`: this node and the socket's port (0 when it has none).
    pub fn sockname(&mut self, fd: i32) -> Result<SockAddr, Errno> {
        let port = match self.socket_fd(fd)?.kind {
            Kind::Unconnected { bound } => bound.unwrap_or(0),
            Kind::Listener { port, .. } => port,
            Kind::Connected(c) => c.port,
            // `socket_fd` let neither through.
            Kind::Console | Kind::EventCounter => return Err(Errno::ENOTSOCK),
        };
        Ok(SockAddr { node: self.node()?.0, port })
    }

    /// `getpeername(fd)`.
    pub fn peername(&mut self, fd: i32) -> Result<SockAddr, Errno> {
        match self.socket_fd(fd)?.kind {
            Kind::Connected(c) => Ok(c.peer),
            _ => Err(Errno::ENOTCONN),
        }
    }

    /// `getsockopt(fd, level, name)`: the option's `int`.
    pub fn getsockopt(&mut self, fd: i32, level: i32, name: i32) -> Result<i32, Errno> {
        let socket = self.socket_fd(fd)?;
        if level != SOL_SOCKET {
            return Err(Errno::ENOPROTOOPT);
        }
        match name {
            SO_TYPE => Ok(SOCK_STREAM),
            SO_ACCEPTCONN => Ok(i32::from(matches!(socket.kind, Kind::Listener { .. }))),
            SO_ERROR => self.pending_error(fd).map(|e| e.map_or(0, |e| e.0)),
            _ => Err(Errno::ENOPROTOOPT),
        }
    }

    /// `SO_ERROR`: a break of the connection not reported yet (and now reported).
    fn pending_error(&mut self, fd: i32) -> Result<Option<Errno>, Errno> {
        let Kind::Connected(c) = self.socket_fd(fd)?.kind else { return Ok(None) };
        if c.reset_reported || !self.broken(c.handle)? {
            return Ok(None);
        }
        self.report_reset(fd);
        Ok(Some(Errno::ECONNRESET))
    }

    /// Whether the kernel reports the connection broken (`ready::ERROR`): reset, or its peer's
    /// node gone, rather than closed by its peer.
    pub(crate) fn broken(&mut self, handle: u64) -> Result<bool, Errno> {
        let mut entry = [proto::socket::PollEntry { handle: handle as u32, interest: 0, ready: 0 }];
        self.net.poll(&mut entry, 0)?;
        Ok(entry[0].ready & proto::socket::ready::ERROR != 0)
    }

    /// Notes that `fd`'s break has been reported.
    pub(crate) fn report_reset(&mut self, fd: i32) {
        if let Ok(Fd { kind: Kind::Connected(c), .. }) = self.fds.get_mut(fd) {
            c.reset_reported = true;
        }
    }

    /// `setsockopt(fd, level, name, value)`: the options that change nothing here are taken
    /// (code written for other systems sets them); the rest are `ENOPROTOOPT`.
    pub fn setsockopt(&mut self, fd: i32, level: i32, name: i32, value: Option<&[u8]>) -> Result<(), Errno> {
        self.socket_fd(fd)?;
        if level != SOL_SOCKET || !matches!(name, SO_REUSEADDR | SO_KEEPALIVE) {
            return Err(Errno::ENOPROTOOPT);
        }
        match value {
            None => Err(Errno::EFAULT),
            Some(v) if v.len() < size_of::<i32>() => Err(Errno::EINVAL),
            Some(_) => Ok(()),
        }
    }

    /// `fcntl(fd, cmd, arg)`: the status flags (`O_NONBLOCK` is the one that changes anything)
    /// and the descriptor flags (no exec, so `FD_CLOEXEC` is taken and means nothing).
    pub fn fcntl(&mut self, fd: i32, cmd: i32, arg: i64) -> Result<i32, Errno> {
        use fcntl::*;
        let f = self.fds.get_mut(fd)?;
        match cmd {
            F_GETFL => Ok(O_RDWR | if f.nonblocking { O_NONBLOCK } else { 0 }),
            F_SETFL => {
                f.nonblocking = arg & i64::from(O_NONBLOCK) != 0;
                Ok(0)
            }
            F_GETFD | F_SETFD => Ok(0),
            _ => Err(Errno::EINVAL),
        }
    }

    /// `unimem_mailbox_event_fd()`: the descriptor of the mailbox event counter (one per
    /// process: asked again, the same one while it is open).
    pub fn event_fd(&mut self) -> Result<i32, Errno> {
        let open = self.fds.iter().find(|(_, f)| f.kind == Kind::EventCounter).map(|(fd, _)| fd);
        open.map_or_else(|| self.fds.open(Fd::blocking(Kind::EventCounter)), Ok)
    }
}
