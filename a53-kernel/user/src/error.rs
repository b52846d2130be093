//! One error type for everything a process can be told "no" by: the target's atomic service, the
//! library's own checks, the kernel, the packetizer, or a clock.

use proto::gsas::{ErrorCode, ReplyError};
use proto::syscall::Error as SysError;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// The target's atomic service answered with this code (`docs/hw/gsas-packets.md`).
    Service(ErrorCode),
    /// Refused before sending: the service would have answered this code (same checks, same
    /// order, see [`crate::check`]).
    Local(ErrorCode),
    /// A system call failed.
    Syscall(SysError),
    /// A system call returned a negative value that `proto::syscall::Error` does not name.
    UnknownReturn(i64),
    /// No reply (or no room at the target) within the client's timeout.
    Timeout,
    /// The packetizer found the packet unsendable (PIF status ILLEGAL): the interface is not
    /// enabled, or the destination window is not the kernel's BASE_DEST.
    Illegal,
    /// A register write hit a pending packet (PIF status OVERWR_BUF); the packet was not ours.
    Overwritten,
    /// The node is not in `0..board_count()` (or a thread argument that should name a node
    /// does not fit 16 bits).
    NoSuchNode(u64),
    /// The node died or its links are down: the request went nowhere, or its answer will never
    /// come. Known within milliseconds, not after the timeout.
    NodeUnreachable(u16),
    /// The process has no thread argument (it reads `EMPTY_THREAD_ARGUMENT`), or one its
    /// program cannot unpack.
    NoArgument,
    /// The process's client is in use (a GSAS call from inside [`crate::with_client`]).
    Busy,
    /// The operation cannot be done this way (Read4K in a pipeline).
    Unsupported,
    /// A genuine reply (or a kernel answer) that breaks the contract.
    Protocol(ProtocolError),
    /// An RDMA transfer ended with this completion status, or the library refused it with the
    /// status the R5 would have given (`BadRequest`) (`docs/hw/pldma.md`, "CQE status").
    Transfer(proto::rdma::queue::CqeStatus),
}

/// Ways the other side broke the contract. The packet came from the target's service (its PID
/// prefix says so), so it is not skipped like a stray packet: it is an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProtocolError {
    /// The reply echoes another opcode than the request's.
    OpcodeMismatch { expected: u8, got: u8 },
    /// A data reply where only a status reply may come.
    UnexpectedData,
    /// Read4K data out of order.
    ChunkOrder { expected: usize, got: usize },
    /// Read4K's status reply before all 256 data replies, or with a result other than 4096.
    MissingData { chunks: usize },
    /// The reply packet does not decode.
    BadReply(ReplyError),
    /// A result that cannot be: an allocation on another node, a byte read above 0xff, ...
    BadResult(u64),
    /// The kernel returned a notification with opcode 0.
    BadNotification(u64),
    /// The kernel returned interface pages or node numbers that cannot be.
    BadInterface,
}

/// Exit statuses, documented in `README.md` ("Exit statuses"). Programs use 1..=0xff for their
/// own checks; everything here is at or above 0x100 and below 0x1000, so a status that is a
/// GSAS page address (>= 0x1000) is never mistaken for one.
pub mod status {
    pub const SERVICE: u64 = 0x100;
    pub const LOCAL: u64 = 0x180;
    pub const SYSCALL: u64 = 0x200;
    pub const UNKNOWN_RETURN: u64 = 0x2ff;
    pub const TIMEOUT: u64 = 0x300;
    pub const ILLEGAL: u64 = 0x301;
    pub const OVERWRITTEN: u64 = 0x302;
    pub const NO_SUCH_NODE: u64 = 0x303;
    pub const NO_ARGUMENT: u64 = 0x304;
    pub const BUSY: u64 = 0x305;
    pub const UNSUPPORTED: u64 = 0x306;
    pub const NODE_UNREACHABLE: u64 = 0x307;
    pub const PROTOCOL: u64 = 0x310;
    pub const TRANSFER: u64 = 0x320;
    /// The seed's RDMA calls' own refusals (`unim::UnimError`).
    pub const UNIM: u64 = 0x340;
}

impl Error {
    /// The exit status a program that fails with this error ends with.
    pub fn exit_status(self) -> u64 {
        match self {
            Error::Service(code) => status::SERVICE + code.as_u64(),
            Error::Local(code) => status::LOCAL + code.as_u64(),
            Error::Syscall(e) => status::SYSCALL + (e as i64).unsigned_abs(),
            Error::UnknownReturn(_) => status::UNKNOWN_RETURN,
            Error::Timeout => status::TIMEOUT,
            Error::Illegal => status::ILLEGAL,
            Error::Overwritten => status::OVERWRITTEN,
            Error::NoSuchNode(_) => status::NO_SUCH_NODE,
            Error::NoArgument => status::NO_ARGUMENT,
            Error::Busy => status::BUSY,
            Error::Unsupported => status::UNSUPPORTED,
            Error::NodeUnreachable(_) => status::NODE_UNREACHABLE,
            Error::Protocol(p) => status::PROTOCOL + p.index(),
            Error::Transfer(s) => status::TRANSFER + u64::from(s as u8),
        }
    }

    /// The GSAS error code, whether the service answered it or the library refused locally.
    pub fn code(self) -> Option<ErrorCode> {
        match self {
            Error::Service(code) | Error::Local(code) => Some(code),
            _ => None,
        }
    }
}

impl ProtocolError {
    fn index(self) -> u64 {
        match self {
            ProtocolError::OpcodeMismatch { .. } => 0,
            ProtocolError::UnexpectedData => 1,
            ProtocolError::ChunkOrder { .. } => 2,
            ProtocolError::MissingData { .. } => 3,
            ProtocolError::BadReply(_) => 4,
            ProtocolError::BadResult(_) => 5,
            ProtocolError::BadNotification(_) => 6,
            ProtocolError::BadInterface => 7,
        }
    }
}

impl From<SysError> for Error {
    fn from(e: SysError) -> Self {
        match e {
            SysError::TimedOut => Error::Timeout,
            e => Error::Syscall(e),
        }
    }
}

impl From<ProtocolError> for Error {
    fn from(e: ProtocolError) -> Self {
        Error::Protocol(e)
    }
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Debug::fmt(self, f)
    }
}

impl core::error::Error for Error {}

/// The kinds `embedded-io` code sees (`crate::socket::Stream`'s errors).
impl embedded_io::Error for Error {
    fn kind(&self) -> embedded_io::ErrorKind {
        use embedded_io::ErrorKind as K;
        match self {
            Error::Syscall(SysError::ConnectionRefused) => K::ConnectionRefused,
            Error::Syscall(SysError::ConnectionReset) => K::ConnectionReset,
            Error::Syscall(SysError::AddressInUse) => K::AddrInUse,
            Error::Syscall(SysError::Closed) => K::BrokenPipe,
            Error::Syscall(SysError::Interrupted) => K::Interrupted,
            Error::Syscall(SysError::BadArgument | SysError::BadPointer) => K::InvalidInput,
            Error::Syscall(SysError::Unreachable) | Error::NodeUnreachable(_) => K::ConnectionAborted,
            Error::Syscall(SysError::Busy | SysError::NoPd) => K::OutOfMemory,
            Error::Timeout => K::TimedOut,
            Error::NoSuchNode(_) => K::AddrNotAvailable,
            _ => K::Other,
        }
    }
}
