//! The BSD names of this system's sockets (`sys/socket.h`, `poll.h`, `unimem_socket.h`) and
//! its address, `struct sockaddr_unimem`: a node and a port.
//!
//! The values follow Linux where Linux has the name, so that code written there reads the same
//! here; `abi`'s tests hold the headers to them. A port and a node are in the machine's byte
//! order: this is not IP, and nothing converts them (`htons` would only change the number both
//! ends use).

use super::Errno;

/// The families: `AF_UNIMEM` is the only one there is; the others are named so that code that
/// asks for them compiles and is told `EAFNOSUPPORT`.
pub const AF_UNSPEC: i32 = 0;
pub const AF_INET: i32 = 2;
pub const AF_INET6: i32 = 10;
/// A family number no Linux family has.
pub const AF_UNIMEM: i32 = 85;

/// Socket types, and the flags `socket` takes with them (Linux's).
pub const SOCK_STREAM: i32 = 1;
pub const SOCK_DGRAM: i32 = 2;
/// The socket starts non-blocking.
pub const SOCK_NONBLOCK: i32 = 0o4000;
/// Taken and ignored: there is no exec.
pub const SOCK_CLOEXEC: i32 = 0o2000000;

/// Options: the socket level, and the options it has.
pub const SOL_SOCKET: i32 = 1;
/// Taken and ignored: a port is free again as soon as its listener closes.
pub const SO_REUSEADDR: i32 = 2;
pub const SO_TYPE: i32 = 3;
pub const SO_ERROR: i32 = 4;
/// Taken and ignored: a lost node is noticed by the hardware, not by probes.
pub const SO_KEEPALIVE: i32 = 9;
pub const SO_ACCEPTCONN: i32 = 30;

/// `send`/`recv` flags.
pub const MSG_DONTWAIT: i32 = 0x40;
/// `recv`: wait until the whole buffer is filled (or the stream ends, or an error).
pub const MSG_WAITALL: i32 = 0x100;
/// Taken and ignored: there are no signals, so a broken connection is only `EPIPE`.
pub const MSG_NOSIGNAL: i32 = 0x4000;

/// `shutdown`'s directions.
pub const SHUT_RD: i32 = 0;
pub const SHUT_WR: i32 = 1;
pub const SHUT_RDWR: i32 = 2;

/// `listen`'s largest backlog: a listener holds this many connections before they are
/// accepted, whatever `listen` is given (`proto::socket::BACKLOG`).
pub const SOMAXCONN: i32 = proto::socket::BACKLOG as i32;

/// `poll`'s events (Linux's values).
pub const POLLIN: i16 = 0x001;
/// Never reported: there is no urgent data.
pub const POLLPRI: i16 = 0x002;
pub const POLLOUT: i16 = 0x004;
pub const POLLERR: i16 = 0x008;
pub const POLLHUP: i16 = 0x010;
pub const POLLNVAL: i16 = 0x020;
/// The peer's stream ended: it closed or shut down its writing (Linux's, reported only when
/// asked for).
pub const POLLRDHUP: i16 = 0x2000;

/// `bind`'s "this node, whichever it is" (and `connect`'s "this node").
pub const UNIMEM_NODE_ANY: u32 = u32::MAX;

/// The bytes of `struct sockaddr_unimem`, as many as `struct sockaddr`'s.
pub const SOCKADDR_LEN: usize = 16;
/// Where its fields are: `su_family` (`sa_family_t`, 16 bits), `su_port` (16 bits), `su_node`
/// (32 bits), then zeros to `SOCKADDR_LEN`.
pub const FAMILY_AT: usize = 0;
pub const PORT_AT: usize = 2;
pub const NODE_AT: usize = 4;

/// A socket's address: a node and a port (0: none yet).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SockAddr {
    pub node: u32,
    pub port: u16,
}

impl SockAddr {
    /// The address in the first `bytes` of a caller's `struct sockaddr`: too short for a
    /// family, or for a whole `sockaddr_unimem`, is `EINVAL`; another family `EAFNOSUPPORT`.
    pub fn parse(bytes: &[u8]) -> Result<Self, Errno> {
        let field = |at: usize, n: usize| bytes.get(at..at + n).ok_or(Errno::EINVAL);
        let family = u16::from_ne_bytes(field(FAMILY_AT, 2)?.try_into().expect("2 bytes"));
        if i32::from(family) != AF_UNIMEM {
            return Err(Errno::EAFNOSUPPORT);
        }
        if bytes.len() < SOCKADDR_LEN {
            return Err(Errno::EINVAL);
        }
        Ok(Self {
            port: u16::from_ne_bytes(field(PORT_AT, 2)?.try_into().expect("2 bytes")),
            node: u32::from_ne_bytes(field(NODE_AT, 4)?.try_into().expect("4 bytes")),
        })
    }

    /// As a `struct sockaddr_unimem`.
    pub fn encode(self) -> [u8; SOCKADDR_LEN] {
        let mut b = [0u8; SOCKADDR_LEN];
        b[FAMILY_AT..][..2].copy_from_slice(&(AF_UNIMEM as u16).to_ne_bytes());
        b[PORT_AT..][..2].copy_from_slice(&self.port.to_ne_bytes());
        b[NODE_AT..][..4].copy_from_slice(&self.node.to_ne_bytes());
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_round_trips_and_a_bad_one_is_refused_with_the_right_errno() {
        let a = SockAddr { node: 3, port: 7 };
        let bytes = a.encode();
        assert_eq!(SockAddr::parse(&bytes), Ok(a));
        assert_eq!(SockAddr::parse(&bytes[..SOCKADDR_LEN - 1]), Err(Errno::EINVAL), "short");
        assert_eq!(SockAddr::parse(&bytes[..1]), Err(Errno::EINVAL), "not even a family");
        let mut inet = bytes;
        inet[..2].copy_from_slice(&(AF_INET as u16).to_ne_bytes());
        assert_eq!(SockAddr::parse(&inet), Err(Errno::EAFNOSUPPORT));
        assert_eq!(SockAddr::parse(&inet[..2]), Err(Errno::EAFNOSUPPORT), "the family is judged first");
        assert_eq!(&bytes[8..], &[0; 8], "the padding is zero");
    }
}
