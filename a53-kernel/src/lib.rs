//! The A53 kernel (EL1).
//!
//! Logic that does not touch the CPU is plain Rust, compiled and unit-tested on the host;
//! the `arch` layer and everything that uses it exist only when building for
//! `aarch64-unknown-none`. The image (`src/bin/kernel.rs`) is thin: it boots and runs the demo,
//! a program or the console. The on-target tests are a crate of their own, `a53-ktest`
//! (`a53-kernel/ktest`), whose image boots the same way and runs them.
#![cfg_attr(not(test), no_std)]

extern crate alloc;

pub mod counters;
pub mod elf;
pub mod exception;
pub mod gsas;
pub mod hooks;
pub mod irq;
pub mod mm;
pub mod process;
pub mod rdma;
pub mod rpu_link;
pub mod socket;
pub mod syscall;
pub mod time;

#[cfg(target_arch = "aarch64")]
pub mod arch;
#[cfg(target_arch = "aarch64")]
pub mod cluster;
#[cfg(target_arch = "aarch64")]
pub mod console;
#[cfg(target_arch = "aarch64")]
pub mod devices;
#[cfg(target_arch = "aarch64")]
pub mod gsas_node;
#[cfg(target_arch = "aarch64")]
pub mod kernel;
#[cfg(target_arch = "aarch64")]
pub mod rdma_node;
#[cfg(target_arch = "aarch64")]
pub mod rpu;
#[cfg(target_arch = "aarch64")]
pub mod smp;
#[cfg(target_arch = "aarch64")]
pub mod socket_node;
#[cfg(target_arch = "aarch64")]
pub mod stop;
#[cfg(target_arch = "aarch64")]
pub mod sync;
#[cfg(target_arch = "aarch64")]
pub mod timer;

/// The board this kernel is built for.
pub type Board = board::Selected;

/// The A53 cores of the board: one fact, from the board.
pub const CORES: usize = <Board as board::Board>::A53_CORES;
