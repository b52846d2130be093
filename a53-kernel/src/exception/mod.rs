//! Exceptions: the syndrome decoding (host-tested), what the kernel does with each exception,
//! and the fault handler that forwards trapped accesses to the emulated PL.

pub mod emulate;
pub mod esr;
pub mod fault;

pub use fault::{Fault, FaultHandler, FaultNote, Resolution, UserEntry};

#[cfg(target_arch = "aarch64")]
mod dispatch;
#[cfg(target_arch = "aarch64")]
pub mod forward;

#[cfg(target_arch = "aarch64")]
pub use dispatch::*;
