//! Power State Coordination Interface calls (SMC conduit: QEMU without EL3, ATF on hardware).

use smccc::{Smc, psci};

pub use smccc::psci::error::Error as PsciError;

/// Starts the core with affinity `mpidr` at physical address `entry`, with x0 = `context`.
pub fn cpu_on(mpidr: u64, entry: u64, context: u64) -> Result<(), PsciError> {
    psci::cpu_on::<Smc>(mpidr, entry, context)
}

/// Starts an AArch32 core (the R5) at `entry` through the 32-bit calling convention.
pub fn cpu_on_32(mpidr: u32, entry: u32, context: u32) -> Result<(), PsciError> {
    psci::cpu_on_32::<Smc>(mpidr, entry, context)
}

pub fn version() -> Result<psci::Version, PsciError> {
    psci::version::<Smc>()
}
