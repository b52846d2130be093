//! EL0 processes: each is a protection domain with its own address space (TTBR0, ASID), one
//! thread, and one packetizer/mailbox interface pair.

pub mod demand;
#[cfg(target_arch = "aarch64")]
pub mod hooks;
#[cfg(target_arch = "aarch64")]
pub mod images;
pub mod launch;
#[cfg(target_arch = "aarch64")]
pub mod lifecycle;
#[cfg(target_arch = "aarch64")]
pub mod paging;
pub mod pds;
#[cfg(target_arch = "aarch64")]
pub mod scheduler;
pub mod state;
pub mod table;

/// Protection domains (processes) per node: one SMMU context bank each on the QFDB.
pub const MAX_DOMAINS: usize = hal::pldma::PDS;
