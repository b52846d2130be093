//! Sockets over RDMA (`docs/hw/sockets.md`): the layout of the kernels' ring memory, the
//! doorbells kernels exchange through the mailbox, and what processes pass to the socket calls.
//!
//! Every connection has, on each of its two nodes, a receive ring that the peer's kernel writes
//! with the PLDMA and a send ring it writes from. Both live in the node's *socket space*: the
//! address space of [`SOCKET_PD`], which every node's kernel holds and which maps nothing but
//! rings. A connection's rings sit at fixed addresses given by its index, the same on every
//! node, so a kernel knows where to write from the peer's connection id alone.

use crate::gsas::NOTIFICATION_PAYLOAD_BITS as PAYLOAD_BITS;
use hal::pldma::Pd;

/// The protection domain of the kernels' socket traffic: the same on every node, never a job's
/// (`crate::rdma::domain::share` leaves it out).
pub const SOCKET_PD: Pd = match Pd::new(14) {
    Some(pd) => pd,
    None => panic!("PD 14 exists"),
};

/// Bytes of one ring. A power of two: positions are taken modulo it.
pub const RING_BYTES: u32 = 512 * 1024;
/// Connections a node holds at once (both ends count on their own nodes).
pub const MAX_CONNECTIONS: usize = 64;
/// Listening ports a node holds at once.
pub const MAX_LISTENERS: usize = 16;
/// Connections a listener holds before they are accepted; further connects are refused.
pub const BACKLOG: usize = 32;
/// Most bytes one read or write call takes (a larger buffer is refused, `BadArgument`).
pub const IO_MAX: u64 = 1024 * 1024;
/// Most entries one poll call takes.
pub const POLL_MAX: usize = 64;

const _: () = assert!(RING_BYTES.is_power_of_two() && (RING_BYTES as u64).is_multiple_of(4096));
// Slot indexes fit their 8 bits, and a node's slots one 64-bit mask.
const _: () = assert!(MAX_CONNECTIONS <= 64 && MAX_LISTENERS <= 256);

/// Where the socket space maps connection rings: `SPACE_BASE + index * 2 * RING_BYTES` is the
/// receive ring of connection slot `index`, the next `RING_BYTES` its send ring.
pub const SPACE_BASE: u64 = 0x0000_0010_0000_0000;

/// The socket-space address of connection `index`'s receive ring.
pub const fn receive_ring(index: u8) -> u64 {
    SPACE_BASE + index as u64 * 2 * RING_BYTES as u64
}

/// The socket-space address of connection `index`'s send ring.
pub const fn send_ring(index: u8) -> u64 {
    receive_ring(index) + RING_BYTES as u64
}

/// The ring offset of stream position `position`.
pub const fn ring_offset(position: u32) -> u32 {
    position & (RING_BYTES - 1)
}

/// One end of a connection on its node: the slot and the slot's generation, which changes
/// every time the slot is reused, so a doorbell for an earlier connection is recognised.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConnId {
    pub index: u8,
    pub generation: u16,
}

impl ConnId {
    pub const BITS: u32 = 24;

    pub const fn raw(self) -> u64 {
        (self.index as u64) << 16 | self.generation as u64
    }

    pub const fn from_raw(raw: u64) -> Self {
        Self { index: (raw >> 16) as u8, generation: raw as u16 }
    }
}

/// Why a connect was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Refusal {
    /// Nobody listens on the port.
    NoListener = 1,
    /// The listener's backlog, or the node's connections, are full.
    Full = 2,
}

/// What a kernel tells the kernel at the other end of a connection: the payload of a
/// `SOCKET_DOORBELL` notification (kernel opcode 0x6, which no process can send).
///
/// ```text
///  59   56 55                                                         0
/// +-------+-----------------------------------------------------------+
/// | kind  | fields, per kind (ConnId = index[23:16] generation[15:0]) |
/// +-------+-----------------------------------------------------------+
///  Connect  [39:24] port        [23:0] the connecting end
///  Accept   [47:24] the connector's end  [23:0] the accepting end
///  Refuse   [31:24] Refusal     [23:0] the connector's end
///  Data     [55:32] receiver's end  [31:0] position: bytes written into its ring so far
///  Credit   [55:32] sender's end    [31:0] position: bytes read from the receiver's ring
///  Fin      [55:32] receiver's end  [31:0] position: the stream ends there
///  Stop     [23:0] the end that must stop sending: nobody reads any more
/// ```
///
/// Positions count bytes from the connection's start, modulo 2^32.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Doorbell {
    Connect { port: u16, from: ConnId },
    Accept { to: ConnId, from: ConnId },
    Refuse { to: ConnId, why: Refusal },
    Data { to: ConnId, position: u32 },
    Credit { to: ConnId, position: u32 },
    Fin { to: ConnId, position: u32 },
    Stop { to: ConnId },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DoorbellError {
    UnknownKind(u8),
    UnknownRefusal(u8),
    /// Bits that must be zero are not.
    Reserved,
}

mod kind {
    pub const CONNECT: u64 = 1;
    pub const ACCEPT: u64 = 2;
    pub const REFUSE: u64 = 3;
    pub const DATA: u64 = 4;
    pub const CREDIT: u64 = 5;
    pub const FIN: u64 = 6;
    pub const STOP: u64 = 7;
}

const KIND_SHIFT: u32 = PAYLOAD_BITS - 4;

impl Doorbell {
    /// The 60-bit notification payload.
    pub const fn encode(self) -> u64 {
        let (kind, fields) = match self {
            Doorbell::Connect { port, from } => (kind::CONNECT, (port as u64) << 24 | from.raw()),
            Doorbell::Accept { to, from } => (kind::ACCEPT, to.raw() << 24 | from.raw()),
            Doorbell::Refuse { to, why } => (kind::REFUSE, (why as u64) << 24 | to.raw()),
            Doorbell::Data { to, position } => (kind::DATA, to.raw() << 32 | position as u64),
            Doorbell::Credit { to, position } => (kind::CREDIT, to.raw() << 32 | position as u64),
            Doorbell::Fin { to, position } => (kind::FIN, to.raw() << 32 | position as u64),
            Doorbell::Stop { to } => (kind::STOP, to.raw()),
        };
        kind << KIND_SHIFT | fields
    }

    pub const fn decode(payload: u64) -> Result<Self, DoorbellError> {
        let fields = payload & ((1 << KIND_SHIFT) - 1);
        let low24 = ConnId::from_raw(fields & 0xff_ffff);
        let high24 = ConnId::from_raw(fields >> 32 & 0xff_ffff);
        let position = fields as u32;
        Ok(match payload >> KIND_SHIFT {
            kind::CONNECT if fields >> 40 == 0 => Doorbell::Connect { port: (fields >> 24) as u16, from: low24 },
            kind::ACCEPT if fields >> 48 == 0 => {
                Doorbell::Accept { to: ConnId::from_raw(fields >> 24 & 0xff_ffff), from: low24 }
            }
            kind::REFUSE if fields >> 32 == 0 => {
                let why = match (fields >> 24) as u8 {
                    1 => Refusal::NoListener,
                    2 => Refusal::Full,
                    other => return Err(DoorbellError::UnknownRefusal(other)),
                };
                Doorbell::Refuse { to: low24, why }
            }
            kind::DATA => Doorbell::Data { to: high24, position },
            kind::CREDIT => Doorbell::Credit { to: high24, position },
            kind::FIN => Doorbell::Fin { to: high24, position },
            kind::STOP if fields >> 24 == 0 => Doorbell::Stop { to: low24 },
            kind::CONNECT | kind::ACCEPT | kind::REFUSE | kind::STOP => return Err(DoorbellError::Reserved),
            other => return Err(DoorbellError::UnknownKind(other as u8)),
        })
    }
}

/// A socket as a process names it in the socket calls: a connection or a listener of this
/// node, and its generation. Any other value, or one of another process's sockets, is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Handle {
    Connection(ConnId),
    Listener(ConnId),
}

const LISTENER_BIT: u64 = 1 << ConnId::BITS;

impl Handle {
    pub const fn raw(self) -> u64 {
        match self {
            Handle::Connection(id) => id.raw(),
            Handle::Listener(id) => LISTENER_BIT | id.raw(),
        }
    }

    pub const fn from_raw(raw: u64) -> Option<Self> {
        if raw >> (ConnId::BITS + 1) != 0 {
            return None;
        }
        let id = ConnId::from_raw(raw & 0xff_ffff);
        Some(if raw & LISTENER_BIT != 0 { Handle::Listener(id) } else { Handle::Connection(id) })
    }
}

/// Readiness bits (`SOCKET_POLL`'s `interest` and `ready`).
pub mod ready {
    /// A read would not block: data, the end of the stream, or an error; for a listener, a
    /// connection to accept.
    pub const READABLE: u16 = 1 << 0;
    /// A write would not block: ring space, or an error.
    pub const WRITABLE: u16 = 1 << 1;
    /// The peer has gone: it closed, stopped reading, or its node died (always reported, but
    /// for an `interest` with `ASKED_ONLY`).
    pub const HANGUP: u16 = 1 << 2;
    /// The handle is not one of the caller's sockets (always reported).
    pub const INVALID: u16 = 1 << 3;
    /// The connection broke: it was reset (a failed RDMA write, a protocol violation) or the
    /// peer's node is gone; reads and writes fail with `ConnectionReset` (always reported).
    /// A peer that closed or stopped reading is a `HANGUP` without it.
    pub const ERROR: u16 = 1 << 4;
    /// The peer's stream has ended: its `Fin` came, so a read gives the end of the stream once
    /// the bytes before it are read (always reported, as `HANGUP` is). A `HANGUP` without it
    /// is a peer that stopped reading and may still write (a peer that closes sends both, not
    /// at once).
    pub const ENDED: u16 = 1 << 5;
    /// In `interest` only: `HANGUP` and `ENDED` are reported only when asked for, like
    /// `READABLE` and `WRITABLE` (`INVALID` and `ERROR` still always are). For a wait that must
    /// not end at a hang-up it does not care about: to a BSD `poll`, a peer that stopped reading
    /// is no event, and a closing peer stops reading a while before its stream ends.
    pub const ASKED_ONLY: u16 = 1 << 15;
}

/// The handle of a `SOCKET_POLL` entry that watches the caller's mailbox event counter (the
/// notifications waiting on its `MODE_EVENT` opcodes) instead of a socket: `READABLE` while
/// the counter is not zero, `INVALID` without an event opcode. A delivery to one of those
/// opcodes wakes the poll. No socket has this handle ([`Handle::from_raw`] refuses it).
pub const EVENT_COUNTER: u32 = u32::MAX;

/// One entry of `SOCKET_POLL`'s array: the caller fills `handle` and `interest`, the kernel
/// writes `ready`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PollEntry {
    pub handle: u32,
    pub interest: u16,
    pub ready: u16,
}

impl PollEntry {
    pub const BYTES: usize = 8;

    pub fn to_bytes(self) -> [u8; Self::BYTES] {
        let mut b = [0; Self::BYTES];
        b[..4].copy_from_slice(&self.handle.to_le_bytes());
        b[4..6].copy_from_slice(&self.interest.to_le_bytes());
        b[6..].copy_from_slice(&self.ready.to_le_bytes());
        b
    }

    pub fn from_bytes(b: [u8; Self::BYTES]) -> Self {
        Self {
            handle: u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            interest: u16::from_le_bytes([b[4], b[5]]),
            ready: u16::from_le_bytes([b[6], b[7]]),
        }
    }
}

const _: () = assert!(core::mem::size_of::<PollEntry>() == PollEntry::BYTES);

/// A process's socket statistics (`SOCKET_STATS`), as the seed keeps them per process.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SocketStats {
    /// Connections made: connected or accepted.
    pub connections: u64,
    /// RDMA writes posted for its connections' data.
    pub rdma_writes: u64,
    /// Bytes it wrote.
    pub bytes_out: u64,
    /// Bytes it read.
    pub bytes_in: u64,
}

impl SocketStats {
    pub const WORDS: usize = 4;

    pub fn to_words(self) -> [u64; Self::WORDS] {
        [self.connections, self.rdma_writes, self.bytes_out, self.bytes_in]
    }

    pub fn from_words(w: [u64; Self::WORDS]) -> Self {
        Self { connections: w[0], rdma_writes: w[1], bytes_out: w[2], bytes_in: w[3] }
    }
}

/// `SOCKET_SHUTDOWN` directions.
pub mod shutdown {
    /// No more writes: the peer reads the end of the stream after the data sent so far.
    pub const WRITE: u64 = 1;
    /// No more reads: the peer's writes fail from now on.
    pub const READ: u64 = 2;
    pub const BOTH: u64 = WRITE | READ;
}

/// Flag of `SOCKET_READ`, `SOCKET_WRITE` and `SOCKET_ACCEPT`: return `WouldBlock` instead of
/// sleeping.
pub const NONBLOCKING: u64 = 1;

#[cfg(test)]
mod tests {
    use super::*;

    fn id(index: u8, generation: u16) -> ConnId {
        ConnId { index, generation }
    }

    #[test]
    fn every_doorbell_round_trips_in_60_bits() {
        let all = [
            Doorbell::Connect { port: 0xffff, from: id(63, 0xffff) },
            Doorbell::Accept { to: id(255, 1), from: id(0, 0xfffe) },
            Doorbell::Refuse { to: id(3, 4), why: Refusal::NoListener },
            Doorbell::Refuse { to: id(3, 4), why: Refusal::Full },
            Doorbell::Data { to: id(255, 0xffff), position: u32::MAX },
            Doorbell::Credit { to: id(1, 2), position: 0 },
            Doorbell::Fin { to: id(1, 2), position: 77 },
            Doorbell::Stop { to: id(9, 9) },
        ];
        for d in all {
            let payload = d.encode();
            assert_eq!(payload >> PAYLOAD_BITS, 0, "{d:?}");
            assert_eq!(Doorbell::decode(payload), Ok(d));
        }
    }

    #[test]
    fn malformed_doorbells_are_refused() {
        assert_eq!(Doorbell::decode(0), Err(DoorbellError::UnknownKind(0)));
        assert_eq!(Doorbell::decode(0xf << KIND_SHIFT), Err(DoorbellError::UnknownKind(0xf)));
        let refuse = Doorbell::Refuse { to: id(1, 1), why: Refusal::Full }.encode();
        assert_eq!(Doorbell::decode(refuse & !(0xff << 24) | 9 << 24), Err(DoorbellError::UnknownRefusal(9)));
        let stop = Doorbell::Stop { to: id(1, 1) }.encode();
        assert_eq!(Doorbell::decode(stop | 1 << 40), Err(DoorbellError::Reserved));
    }

    #[test]
    fn handles_round_trip_and_wide_values_are_no_handle() {
        for h in [Handle::Connection(id(0, 0)), Handle::Listener(id(15, 0xffff)), Handle::Connection(id(63, 7))] {
            assert_eq!(Handle::from_raw(h.raw()), Some(h));
        }
        assert_eq!(Handle::from_raw(1 << 25), None);
        assert_eq!(Handle::from_raw(u64::MAX), None);
        assert_eq!(Handle::from_raw(u64::from(EVENT_COUNTER)), None, "the event counter is no socket");
    }

    #[test]
    fn rings_do_not_overlap_and_fit_the_user_half() {
        assert_eq!(send_ring(0), receive_ring(0) + RING_BYTES as u64);
        assert_eq!(receive_ring(1), send_ring(0) + RING_BYTES as u64);
        let end = send_ring(MAX_CONNECTIONS as u8 - 1) + RING_BYTES as u64;
        assert!(end <= hal::pldma::USER_VA_LIMIT);
        assert_eq!(ring_offset(RING_BYTES + 5), 5);
    }

    #[test]
    fn poll_entries_and_stats_round_trip() {
        let e = PollEntry { handle: 0x0100_0203, interest: ready::READABLE, ready: ready::HANGUP };
        assert_eq!(PollEntry::from_bytes(e.to_bytes()), e);
        let s = SocketStats { connections: 1, rdma_writes: 2, bytes_out: 3, bytes_in: 4 };
        assert_eq!(SocketStats::from_words(s.to_words()), s);
    }
}
