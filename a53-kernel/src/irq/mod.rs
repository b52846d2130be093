//! Interrupts: the table of handlers (host-tested) and the GIC-400 that raises them.

pub mod table;

#[cfg(target_arch = "aarch64")]
mod gic;

#[cfg(target_arch = "aarch64")]
pub use gic::*;
pub use hal::gic400::{IntId, Trigger};
