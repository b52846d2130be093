//! Memory: the kernel's own map, its heap, page frames and processes' address spaces.

pub mod frames;
#[cfg(target_arch = "aarch64")]
pub mod heap;
#[cfg(target_arch = "aarch64")]
pub mod kernel_frames;
pub mod kernel_map;
pub mod page_map;
#[cfg(target_arch = "aarch64")]
pub mod smmu;
#[cfg(test)]
pub mod test_frames;
pub mod user_space;

pub const PAGE_SIZE: u64 = 4096;

/// The data cache line that cache maintenance by address steps by: CTR_EL0.DminLine would give
/// it; 64 bytes is the A53's and the smallest a ZynqMP core has, so stepping by it never skips
/// a line.
pub const CACHE_LINE: usize = 64;
