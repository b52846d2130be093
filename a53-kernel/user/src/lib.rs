//! The EL0 side of Unimem processes: runtime, system calls and the GSAS library (seed D3.6
//! §2.3), over the ABI in `proto::syscall` and the wire formats in `proto::gsas`.
//!
//! - [`rt`]: `_start`, [`entry!`], the panic handler (logs, exits with [`rt::PANIC_STATUS`]).
//! - [`log!`]: `format!`-style logging into a stack buffer, one `LOG` call per line.
//! - [`sys`]: one typed wrapper per system call.
//! - [`Gsas`]: the protocol client (requests, reply matching, NACK retry, Read4K, pipelining),
//!   generic over a [`Link`] so it is tested on the host against a fake service; [`Hw`] is the
//!   packetizer/mailbox interface pair of the process.
//! - The seed's API as free functions over the process's client: [`read64`], [`cas64`],
//!   [`alloc_shared`], [`remote_spawn`], [`notify`], ... (`api.rs`).
//!
//! - [`held`]: the registers a process owns beyond the general ones (FP/SIMD, TPIDR_EL0) and a
//!   check that the kernel keeps them.
//! - [`shmem`]: OpenSHMEM 1.5 (one PE per node) over RDMA and process atomics
//!   ([`va_atomic`]), the implementation under the Rust API and the C one (`unimem-c`).
//! - [`rdma`]: user-level RDMA on ordinary virtual addresses (write/read, transfer handles,
//!   polling); [`unim`]: the seed's `unim_dma_*` calls over it (buffers, transfers, callbacks).
//!
//! The C library (`a53-kernel/user/c`, headers in `a53-kernel/user/include`) exposes all of
//! this to C programs under the seed's names; it is a thin layer over these same functions.
//!
//! Errors are one [`Error`] enum; every error has a distinct exit status
//! ([`Error::exit_status`]) so a kernel test can tell from a program's status what went wrong.
#![cfg_attr(not(test), no_std)]

// The fakes are host code for other crates' tests (feature `fakes`), and use `std`.
#[cfg(all(feature = "fakes", not(test)))]
extern crate std;

#[macro_use]
mod log;

pub mod active;
mod api;
#[cfg(all(target_arch = "aarch64", target_os = "none"))]
mod arch;
pub mod args;
mod arguments;
pub mod check;
mod client;
mod error;
pub mod fuzz;
pub mod held;
mod hw;
mod link;
mod ops;
#[cfg(all(target_arch = "aarch64", target_os = "none"))]
pub mod pmu;
pub mod rdma;
/// The tests' generator, `proto::rand`.
pub use proto::rand;
pub mod channel;
pub mod rt;
pub mod shmem;
pub mod socket;
pub mod sys;
pub mod unim;

pub use api::{
    alloc_shared, alloc_shared_with, board_count, board_id, cas64, fad64, free_shared, my_pid, notify,
    notify_when_ready, read4k, read8, read32, read64, receive, register, remote_spawn, set_request_timeout_us, stats,
    swap64, thread_argument, unregister, va_atomic, with_client, write8, write32, write64, write128,
};
pub use arguments::{Arguments, arguments};
pub use client::{DEFAULT_TIMEOUT_US, Gsas, Pipeline, Stats, offset, request};
pub use error::{Error, ProtocolError, status};
pub use hw::Hw;
pub use link::{Link, Sent};
pub use log::{Line, log_args};
pub use proto::syscall::Error as SysError;

/// The GSAS types programs use, re-exported from `proto::gsas`.
pub use proto::gsas::{
    ErrorCode, GlobalAddress, MailboxOpcode, Notification, Opcode, PAGE_SIZE, Pid, RawRequest, Response, Sharing, VaOp,
    VaWidth,
};

/// In a `main` returning `Result<u64, Error>` (or a closure returning one): unless `cond`
/// holds, logs the message and returns `Ok(status)`, the program's own failure status.
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $status:expr, $($arg:tt)+) => {
        if !$cond {
            $crate::log!($($arg)+);
            return Ok($status);
        }
    };
}

#[cfg(any(test, feature = "fakes"))]
pub mod fake;
#[cfg(test)]
mod tests;
