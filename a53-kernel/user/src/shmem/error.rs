//! What the OpenSHMEM layer refuses or meets, each with its own exit status (`README.md`,
//! "Exit statuses": `0x360 + k`; a library error below keeps its own status).

use crate::error::Error;
use proto::gsas::ErrorCode;
use proto::rdma::queue::CqeStatus;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShmemError {
    /// A call of the library below failed (system call, GSAS client, RDMA).
    Lib(Error),
    /// `shmem_init` has not run (or `shmem_finalize` has).
    NotInitialised,
    /// A PE number outside `0..n_pes`.
    NoSuchPe(i64),
    /// The address range (address, length) is neither in the program's image (its globals) nor
    /// in the symmetric heap: no other PE has it at the same address.
    NotSymmetric(u64, u64),
    /// A PE this call depends on has ended (its process is gone).
    PeGone(u16),
    /// `shmem_free` / `shmem_realloc` of an address that `shmem_malloc` did not return (or
    /// already freed).
    ForeignFree(u64),
    /// The symmetric heap has no room for this many bytes.
    HeapFull(u64),
    /// An active set (start, stride, size) that names PEs outside `0..n_pes`, or that this PE
    /// is not in.
    BadActiveSet { start: i64, stride: i64, size: i64 },
    /// An argument out of its range (a width, an operation, a type, an alignment): the name of
    /// what was wrong.
    BadArgument(&'static str),
    /// The launch went wrong: the program started (as PE 0) on another node than 0, or more
    /// PEs than the library can serve.
    BadLaunch(u16),
}

/// The first exit status of the OpenSHMEM layer's own errors.
pub const STATUS_BASE: u64 = 0x360;

impl ShmemError {
    /// The exit status a PE that fails with this error ends with.
    pub fn exit_status(self) -> u64 {
        let own = |k: u64| STATUS_BASE + k;
        match self {
            ShmemError::Lib(e) => e.exit_status(),
            ShmemError::NotInitialised => own(0),
            ShmemError::NoSuchPe(_) => own(1),
            ShmemError::NotSymmetric(..) => own(2),
            ShmemError::PeGone(_) => own(3),
            ShmemError::ForeignFree(_) => own(4),
            ShmemError::HeapFull(_) => own(5),
            ShmemError::BadActiveSet { .. } => own(6),
            ShmemError::BadArgument(_) => own(7),
            ShmemError::BadLaunch(_) => own(8),
        }
    }

    /// A failure of an operation aimed at PE `pe`: its process being gone (no process of the
    /// PD there, its node unreachable) is [`ShmemError::PeGone`].
    pub(crate) fn at(pe: u16, e: Error) -> ShmemError {
        match e {
            Error::Service(ErrorCode::NoProcess)
            | Error::NodeUnreachable(_)
            | Error::Transfer(CqeStatus::NoRemotePd) => ShmemError::PeGone(pe),
            e => ShmemError::Lib(e),
        }
    }
}

impl From<Error> for ShmemError {
    fn from(e: Error) -> Self {
        ShmemError::Lib(e)
    }
}

impl core::fmt::Display for ShmemError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ShmemError::Lib(e) => write!(f, "{e:?}"),
            ShmemError::NotInitialised => f.write_str("shmem_init has not been called"),
            ShmemError::NoSuchPe(pe) => write!(f, "PE {pe} does not exist"),
            ShmemError::NotSymmetric(a, n) => {
                write!(f, "{a:#x} (+{n} bytes) is not symmetric (neither a global nor in the symmetric heap)")
            }
            ShmemError::PeGone(pe) => write!(f, "PE {pe} has ended"),
            ShmemError::ForeignFree(a) => write!(f, "{a:#x} was not returned by shmem_malloc (or is freed already)"),
            ShmemError::HeapFull(n) => write!(f, "no room for {n} bytes in the symmetric heap"),
            ShmemError::BadActiveSet { start, stride, size } => {
                write!(f, "bad active set (start {start}, stride {stride}, size {size}) for this PE")
            }
            ShmemError::BadArgument(what) => write!(f, "bad argument: {what}"),
            ShmemError::BadLaunch(node) => {
                write!(f, "cannot launch as PE 0 on node {node} (start the program on node 0)")
            }
        }
    }
}
