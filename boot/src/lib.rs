//! Entry code and runtime support for our two kinds of image.
//!
//! - [`a53`]: the A53 kernel's entry (EL2 or EL1), boot translation table and MMU enable,
//!   per-core stacks, exception vectors that save a full register frame.
//! - [`r5`]: the R5 firmware's MPU set-up on top of `aarch32-rt` (vectors, per-mode stacks).
#![cfg_attr(not(test), no_std)]

#[cfg(target_arch = "aarch64")]
pub mod a53;
pub mod frame;
#[cfg(target_arch = "arm")]
pub mod r5;
