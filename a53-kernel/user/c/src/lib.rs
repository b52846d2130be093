//! `unimem-c`: the seed's C API for Unimem processes, a static library (`libunimem_c.a`) over the
//! user library: C programs call the same client, RDMA state and system calls that Rust
//! programs use, under the seed's names. One header per area, in `a53-kernel/user/include/`:
//!
//! - `unimem.h` ([`gsas`]): the GSAS API (seed D3.6 §2.3): the calls that exit on an invalid
//!   address, and their `_e` variants that return a status instead;
//! - `unim_dma.h` ([`dma`]): user-level RDMA (§3.4);
//! - `unimem_mailbox.h` ([`mailbox`]): notifications (§3.2);
//! - `unimem_sys.h` ([`sys`]): the system calls a C runtime is built on;
//! - `unimem_sock.h` ([`sockets`]): BSD sockets over file descriptors, which the C runtime
//!   gives programs under their POSIX names (`sys/socket.h`, `poll.h`, `unimem_socket.h`);
//! - `shmem.h` ([`shmem`]): OpenSHMEM 1.5, the standard names and the generic cores the typed
//!   C functions call, over `unimem_user::shmem`;
//! - `unimem_error.h` ([`status`]): status numbers and `unimem_last_error`.
//!
//! The library defines neither `_start` nor `main` (a C runtime does). From the user library's
//! feature `runtime` it takes the panic handler (the message is logged, the exit status is
//! 101); it allocates nothing, so it needs no allocator. `cargo xtask` builds it for
//! `aarch64-unknown-none` (`xtask/src/c_lib.rs`). Host builds have std and no kernel: there the
//! tests run the C layer over the user library's fakes, and `abi`'s tests hold the headers to
//! the exports (names, types, constants) with the cross-compiler.
#![cfg_attr(target_os = "none", no_std)]

pub mod active;
pub mod dma;
pub mod gsas;
pub mod mailbox;
pub mod shmem;
pub mod sockets;
pub mod status;
pub mod sys;

#[cfg(test)]
mod abi;

/// A C `char` as the byte it is: `c_char` is `u8` on the target and `i8` on the host, so a
/// cast would be needless on one and needed on the other.
pub(crate) fn byte(c: core::ffi::c_char) -> u8 {
    u8::from_ne_bytes(c.to_ne_bytes())
}
