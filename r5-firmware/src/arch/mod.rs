//! The R5's own instructions, behind named functions.

pub mod semihosting;
