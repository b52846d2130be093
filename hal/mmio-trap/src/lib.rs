//! Decode and emulate the load/store instruction that took a synchronous
//! data abort on an unmapped MMIO window.
//!
//! Stage-1 translation faults report no instruction syndrome (`ESR_ELx.ISV ==
//! 0`), so an abort handler that wants to forward the access to a device model
//! has to decode the faulting instruction itself. This crate is that logic,
//! free of any CPU-specific glue:
//!
//! * [`a64`] decodes A64 loads/stores ([`a64::decode`]) and executes a decoded
//!   access against an [`a64::RegisterFile`] and a [`Bus`]: [`a64::execute`]
//!   for an abort handler, [`a64::emulate`], which also records the bus
//!   accesses, for tests and tools.
//! * [`a32`] does the same for the A32 (ARM state) instruction set of an
//!   ARMv7-R core ([`a32::decode`], [`a32::emulate`], [`a32::RegisterFile`]).
//! * [`Bus`], [`Emulated`] and the shared operand types live at the crate root.
//!
//! The glue reads the instruction word at `ELR`, calls `decode`, then
//! `emulate`, and on success advances the saved PC by
//! [`Emulated::pc_advance`]. Anything the library does not understand comes
//! back as a [`DecodeError`] naming the PC, the word and the reason.
//!
//! ```
//! use mmio_trap::{a64, Bus, BusError, Size};
//!
//! struct Frame { x: [u64; 31], sp: u64, v: [u128; 32] }
//! impl a64::RegisterFile for Frame {
//!     fn x(&self, n: u8) -> u64 { self.x[n as usize] }
//!     fn set_x(&mut self, n: u8, value: u64) { self.x[n as usize] = value }
//!     fn sp(&self) -> u64 { self.sp }
//!     fn set_sp(&mut self, value: u64) { self.sp = value }
//!     fn v(&self, n: u8) -> u128 { self.v[n as usize] }
//!     fn set_v(&mut self, n: u8, value: u128) { self.v[n as usize] = value }
//! }
//!
//! /// Stand-in for the host-served device model.
//! struct Host;
//! impl Bus for Host {
//!     fn read(&mut self, addr: u64, _size: Size) -> Result<u128, BusError> {
//!         if addr == 0xa000_0010 { Ok(0x1234_5678) } else { Err(BusError::Unmapped) }
//!     }
//!     fn write(&mut self, _addr: u64, _size: Size, _value: u128) -> Result<(), BusError> {
//!         Ok(())
//!     }
//! }
//!
//! // In the synchronous-abort handler: ELR_EL1 and the word found there.
//! let (elr, word) = (0xffff_ff80_0040_1234_u64, 0xb9401020_u32); // ldr w0, [x1, #16]
//! let mut frame = Frame { x: [0; 31], sp: 0, v: [0; 32] };
//! frame.x[1] = 0xa000_0000;
//!
//! let access = a64::decode(elr, word)?;
//! assert_eq!(access.to_string(), "ldr w0, [x1, #16]");
//! let done = a64::emulate(&access, &mut frame, &mut Host)?;
//! assert_eq!(frame.x[0], 0x1234_5678);
//! let resume_at = elr + done.pc_advance; // write back to ELR_EL1, then ERET
//! # assert_eq!(resume_at, 0xffff_ff80_0040_1238);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Encodings follow the Arm Architecture Reference Manual: ARM DDI 0487
//! (section C4.1.4 "Loads and Stores" for A64) and ARM DDI 0406C (section A5.3
//! "Load/store word and unsigned byte" and A5.2.8 "Extra load/store
//! instructions" for A32).
#![no_std]
#![deny(unsafe_code)]
#![warn(missing_docs)]

#[cfg(test)]
extern crate std;

pub mod a32;
pub mod a64;
mod emulate;
mod error;
mod types;

pub use emulate::{Bus, BusAccess, Emulated, Executed};
pub use error::{BusError, DecodeError, EmulateError, Isa, Reason};
pub use types::{Addressing, Kind, Size, Transfer};
