//! Demand paging of process regions (`docs/hw/syscalls.md`, `MAP`, `UNMAP`, `EVICT`;
//! `docs/hw/pldma.md`, "Fault handling"): a page of a region gets its frame at its first touch,
//! by the CPU (a translation fault at EL0) or by the PLDMA (a fault FIFO entry); an eviction
//! takes it back. The decisions are `AddressSpace`'s (host-tested); this module applies them to
//! the running processes, the TLBs and the SMMU.

use super::hooks;
use super::lifecycle::TABLE;
use super::scheduler;
use super::table::Process;
use crate::arch;
use crate::elf::Permissions;
use crate::exception::esr::{ExceptionClass, FaultStatus};
use crate::exception::{Fault, FaultNote, Resolution};
use crate::mm::PAGE_SIZE;
use crate::mm::kernel_frames::KernelFrames;
use crate::mm::user_space::{AddressSpace, SpaceError, Touch, TouchError};
use boot::a53::ExceptionFrame;
use core::sync::atomic::{AtomicBool, Ordering};
use hal::pldma::Pd;
use proto::syscall::{Error, MAP_DEVICE, MAP_WRITABLE};

/// How the PLDMA's faults are answered: the whole 16 KiB block of the faulting page
/// (touch-ahead, the default) or the faulting page alone (the seed's touch-a-page).
static TOUCH_A_PAGE: AtomicBool = AtomicBool::new(false);

pub fn set_rdma_touch(touch: Touch) {
    TOUCH_A_PAGE.store(touch == Touch::Page, Ordering::Relaxed);
}

pub fn rdma_touch() -> Touch {
    if TOUCH_A_PAGE.load(Ordering::Relaxed) { Touch::Page } else { Touch::Block }
}

/// `MAP`: a new region of `len` bytes, readable, and writable with `MAP_WRITABLE`, of device
/// memory in the device window with `MAP_DEVICE`; its address.
pub fn map(slot: usize, len: u64, flags: u64) -> Result<u64, Error> {
    if flags & !(MAP_WRITABLE | MAP_DEVICE) != 0 {
        return Err(Error::BadArgument);
    }
    let permissions = Permissions { read: true, write: flags & MAP_WRITABLE != 0, execute: false };
    let mut table = TABLE.lock();
    let p = table.slots[slot].as_mut().ok_or(Error::BadArgument)?;
    p.space.map_region(len, permissions, flags & MAP_DEVICE != 0).map_err(|_| Error::BadArgument)
}

/// `UNMAP`: the whole region at `va` of `len` bytes goes, its pages freed.
pub fn unmap(slot: usize, va: u64, len: u64) -> Result<u64, Error> {
    take_back(slot, va, len, |space| space.unmap_region(va, len))
}

/// `EVICT`: the pages of `[va, va + len)`, inside one region, become non-resident; returns how
/// many were resident.
pub fn evict(slot: usize, va: u64, len: u64) -> Result<u64, Error> {
    take_back(slot, va, len, |space| space.evict(va, len))
}

/// Changes the space with `f`, then empties every TLB that may hold the pages it took: this
/// core's and the others' (TLBI ASIDE1IS) and, if the process holds its PD, the SMMU bank's.
fn take_back(
    slot: usize,
    va: u64,
    len: u64,
    f: impl FnOnce(&mut AddressSpace<KernelFrames>) -> Result<usize, SpaceError>,
) -> Result<u64, Error> {
    let (freed, asid, pd) = {
        let mut table = TABLE.lock();
        let p = table.slots[slot].as_mut().ok_or(Error::BadArgument)?;
        let freed = f(&mut p.space).map_err(|_| Error::BadArgument)?;
        // The cleared descriptors reach memory before the SMMU's TLB lets go of the pages: a
        // walk after the invalidation must not find the old ones there.
        publish(p, freed);
        (freed, p.space.asid(), p.rdma_pd())
    };
    arch::mmu::tlbi_asid(asid);
    if let (Some(pd), Some(r)) = (pd, hooks::pd_resources()) {
        let first = va & !(PAGE_SIZE - 1);
        let pages = (va + len).next_multiple_of(PAGE_SIZE).saturating_sub(first) / PAGE_SIZE;
        (r.invalidate)(pd, first, pages as usize);
    }
    Ok(freed as u64)
}

/// The EL0 fault handler: a translation fault inside a region of the running process maps the
/// page and resumes; a write to a read-only region, or a fault outside every region, is not
/// resolved (the process is killed with a report).
pub fn on_fault(_frame: &mut ExceptionFrame, fault: &Fault) -> Resolution {
    let translation = matches!(fault.esr.fault_status(), FaultStatus::Translation { .. });
    if !fault.from_user || fault.esr.class() != ExceptionClass::DataAbortLower || !translation {
        return Resolution::NotMine;
    }
    let Some(slot) = scheduler::current() else { return Resolution::NotMine };
    match touch_slot(slot, fault.far, fault.esr.is_write(), Touch::Page) {
        Ok(_) => Resolution::Resume,
        Err(TouchError::Outside(_)) => Resolution::NotMine,
        Err(TouchError::ReadOnly(addr)) => {
            Resolution::Failed(FaultNote { what: "a write to a read-only region", addr })
        }
        Err(TouchError::Space(_)) => {
            Resolution::Failed(FaultNote { what: "no frame for a region page", addr: fault.far })
        }
    }
}

/// A PLDMA fault of PD `pd` at `va` (a write at the destination, or a read at the source):
/// maps the page (and its block, with touch-ahead) in the process that holds `pd` here.
/// `Ok` means a retry will find the page.
pub fn resolve_rdma_fault(pd: Pd, va: u64, write: bool) -> Result<usize, TouchError> {
    // The engine's view of the process leaves the device window out: no page there is its to
    // have (`docs/hw/smmu.md`, "What the engine may reach"), and mapping one for the CPU would
    // only make it fault again.
    if proto::syscall::layout::in_device_window(va) {
        return Err(TouchError::Outside(va));
    }
    let slot = TABLE.lock().holder_of_pd(pd).ok_or(TouchError::Outside(va))?;
    touch_slot(slot, va, write, rdma_touch())
}

/// Makes `[va, va + len)` resident in `process` for a system call that reads (or `write`s) it
/// for the process: region pages get their frames as a touch would give them.
pub fn make_resident(process: &mut Process, va: u64, len: usize, write: bool) -> Result<(), SpaceError> {
    let mapped = process.space.make_resident(va, len, write)?;
    publish(process, mapped);
    Ok(())
}

/// Touches `va` in the process in `slot`.
fn touch_slot(slot: usize, va: u64, write: bool, touch: Touch) -> Result<usize, TouchError> {
    let mut table = TABLE.lock();
    let p = table.slots[slot].as_mut().ok_or(TouchError::Outside(va))?;
    let mapped = p.space.touch(va, write, touch)?;
    publish(p, mapped);
    Ok(mapped)
}

/// After `changed` pages were mapped or unmapped: the SMMU's walker sees the descriptors only
/// once they are cleaned to the point of coherency, so they are when the process holds its PD.
fn publish(process: &mut Process, changed: usize) {
    if changed > 0
        && process.holds_pd
        && let Some(r) = hooks::pd_resources()
    {
        (r.publish_tables)(&mut process.space);
    }
}
