//! Hardware abstraction for the Unimem stack.
//!
//! Every register block is described once, here, with `register_structs!` (offsets checked at
//! compile time and against the documented maps in the host tests) and `register_bitfields!`.
//! The same definitions serve the drivers on the A53 and the R5 and the device models of
//! `qemu-virt`, so a layout can never disagree between the two sides.
//!
//! Besides MMIO blocks, `hal` holds the wire formats that cross a hardware boundary: the
//! A53/R5 shared-memory rings ([`ipc`]) and the R5 trace ring ([`trace_ring`]).
#![cfg_attr(not(test), no_std)]

pub mod boot_args;
pub mod cadence_uart;
pub mod forward;
pub mod generic_timer;
pub mod gic400;
pub mod ipc;
pub mod mmio;
pub mod sysblock;
/// Decoding and emulation of trapped loads and stores (MMIO trap and forward).
pub use mmio_trap;
pub mod trace_ring;
