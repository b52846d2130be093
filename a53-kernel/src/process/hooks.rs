//! What the subsystems above the process table do when a process ends, when one of its waits
//! runs out, and what a PD holder's RDMA resources are: registered at boot (`kernel::wire`),
//! called by the table and the scheduler, so that the process subsystem imports none of them.

use crate::hooks::{AlreadySet, Full, Hook, Hooks};
use crate::mm::kernel_frames::KernelFrames;
use crate::mm::user_space::AddressSpace;
use crate::process::state::Wait;
use hal::pldma::Pd;

/// A process that ended, as the subsystems know it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExitedProcess {
    pub slot: usize,
    pub domain: u16,
}

static EXITED: Hooks<fn(ExitedProcess), 4> = Hooks::new();
static WAIT_EXPIRED: Hooks<fn(usize, Wait), 2> = Hooks::new();
static PD_RESOURCES: Hook<PdResources> = Hook::new();

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

/// What the RDMA subsystem sets up for a process that holds its PD, given by it at boot
/// ([`set_pd_resources`]); without it no process gets RDMA resources.
pub struct PdResources {
    /// Whether the node can give any (an R5 and an SMMU that came up).
    pub available: fn() -> bool,
    /// The physical address of `pd`'s queue set.
    pub queue_set_pa: fn(Pd) -> u64,
    /// Shows the space's tables to the SMMU (cleans what changed to the point of coherency).
    pub publish_tables: fn(&mut AddressSpace<KernelFrames>),
    /// Attaches the PD's context bank to the space and registers its queues; false if it could
    /// not (the process then runs without RDMA; the subsystem says why).
    pub attach: fn(&Setup) -> bool,
    /// Takes an ended holder's resources down (its memory may go afterwards).
    pub detach: fn(&Teardown),
    /// Drops the SMMU's translations of `pages` pages from `va` in `pd`'s bank.
    pub invalidate: fn(pd: Pd, va: u64, pages: usize),
}

/// What a PD holder's resources are set up with, once its space is loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setup {
    pub pd: Pd,
    /// The bank's TTBR0: the process's DMA view (`AddressSpace::dma_ttbr0`) and ASID.
    pub ttbr0: u64,
    /// The PA of its queue set.
    pub queue_pa: u64,
}

/// What an ended holder leaves to take down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Teardown {
    pub slot: usize,
    pub pd: Pd,
}

pub fn set_pd_resources(resources: PdResources) -> Result<(), AlreadySet> {
    PD_RESOURCES.set(resources)
}

/// The RDMA subsystem's resources, if it registered and can give any now.
pub(super) fn pd_resources() -> Option<&'static PdResources> {
    PD_RESOURCES.get().filter(|r| (r.available)())
}

/// The RDMA subsystem's resources for what already has them (invalidations, a teardown).
pub(super) fn registered_pd_resources() -> Option<&'static PdResources> {
    PD_RESOURCES.get()
}
