//! The SMMU's owner. The kernel takes the driver at boot and keeps it here for the rest of the
//! run; `rdma_node` drives it: a context bank per PD holder, attached and detached through
//! [`with_smmu`] (`hal::smmu500`, `docs/hw/smmu.md`), and the context-fault handler, which
//! uses it from its interrupt, hence the interrupt-masking lock.

use crate::sync::IrqMutex;
use hal::smmu500::Smmu500;

static SMMU: IrqMutex<Option<Smmu500>> = IrqMutex::new(None);

/// Keeps the driver (boot core, once). Programming it is up to its first user: until then the
/// SMMU stays as the boot left it.
pub fn init(smmu: Smmu500) {
    *SMMU.lock() = Some(smmu);
}

/// Runs `f` on the SMMU under its lock; `None` before [`init`].
pub fn with_smmu<R>(f: impl FnOnce(&mut Smmu500) -> R) -> Option<R> {
    SMMU.lock().as_mut().map(f)
}
