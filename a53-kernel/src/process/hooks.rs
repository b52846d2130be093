//! What the subsystems above the process table do when a process ends, when one of its waits
//! runs out, and what a PD holder's RDMA resources are: registered at boot (`kernel::wire`),
//! called by the table and the scheduler, so that the process subsystem imports none of them.

use crate::hooks::{AlreadySet, Full, Hook, Hooks};
use crate::mm::kernel_frames::KernelFrames;
use crate::process::state::Wait;

pub use crate::process::table::{ExitedProcess, PdResources, Setup, Teardown};

static EXITED: Hooks<fn(ExitedProcess), 6> = Hooks::new();
static WAIT_EXPIRED: Hooks<fn(usize, Wait), 2> = Hooks::new();
static PD_RESOURCES: Hook<PdResources<KernelFrames>> = Hook::new();

/// Registers `f` to run for each process that ends, once the table is let go (its mailbox
/// registrations, its sockets). It runs before the process's RDMA resources are taken down.
pub fn on_exit(f: fn(ExitedProcess)) -> Result<(), Full> {
    EXITED.register(f)
}

/// Registers `f` to run when the wait of the process in a slot ends by its deadline, before the
/// process is woken with the timeout (a mailbox wait's interrupt is disarmed).
pub fn on_wait_expired(f: fn(slot: usize, wait: Wait)) -> Result<(), Full> {
    WAIT_EXPIRED.register(f)
}

pub(super) fn exited(process: ExitedProcess) {
    for f in EXITED.iter() {
        f(process);
    }
}

pub(super) fn wait_expired(slot: usize, wait: Wait) {
    for f in WAIT_EXPIRED.iter() {
        f(slot, wait);
    }
}

/// Says what a PD holder's RDMA resources are (the RDMA subsystem, at boot).
pub fn set_pd_resources(resources: PdResources<KernelFrames>) -> Result<(), AlreadySet> {
    PD_RESOURCES.set(resources)
}

/// The RDMA subsystem's resources, if it registered (whether it can give any now is their
/// `available`).
pub(super) fn pd_resources() -> Option<&'static PdResources<KernelFrames>> {
    PD_RESOURCES.get()
}
