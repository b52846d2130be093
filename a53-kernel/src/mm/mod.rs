//! Memory: page frames and processes' address spaces.

pub mod frames;
#[cfg(target_arch = "aarch64")]
pub mod kernel_frames;
pub mod user_space;

pub const PAGE_SIZE: u64 = 4096;
