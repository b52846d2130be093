//! Exceptions: the syndrome decoding (host-tested), what the kernel does with each exception,
//! and the fault handler that forwards trapped accesses to the emulated PL.

pub mod esr;

#[cfg(target_arch = "aarch64")]
mod dispatch;
#[cfg(target_arch = "aarch64")]
pub mod forward;

#[cfg(target_arch = "aarch64")]
pub use dispatch::*;
