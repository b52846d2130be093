//! Demand paging of process regions (`docs/hw/syscalls.md`, `MAP`, `UNMAP`, `EVICT`;
//! `docs/hw/pldma.md`, "Fault handling"): a page of a region gets its frame at its first touch,
//! by the CPU (a translation fault at EL0) or by the PLDMA (a fault FIFO entry); an eviction
//! takes it back. The decisions are `AddressSpace`'s and `process::demand`'s (host-tested);
//! this module applies them to the running processes, the TLBs and the SMMU.

use super::demand::ProcessWords;
use super::hooks;
use super::lifecycle::TABLE;
use super::scheduler;
use super::table::Process;
use crate::arch;
use crate::exception::esr::{ExceptionClass, FaultStatus};
use crate::exception::{Fault, FaultNote, Resolution};
use crate::gsas::service::{MemoryFault, ProcessMemory, VaFault};
use crate::mm::PAGE_SIZE;
use crate::mm::kernel_frames::KernelFrames;
use crate::mm::user_space::{AddressSpace, SpaceError, Touch, TouchError, Touched};
use boot::a53::ExceptionFrame;
use core::sync::atomic::{AtomicBool, Ordering};
use hal::pldma::Pd;
use proto::syscall::Error;

/// How the PLDMA's faults are answered: the whole 16 KiB block of the faulting page
/// (touch-ahead, the default) or the faulting page alone (the seed's touch-a-page).
static TOUCH_A_PAGE: AtomicBool = AtomicBool::new(false);

pub fn set_rdma_touch(touch: Touch) {
    TOUCH_A_PAGE.store(touch == Touch::Page, Ordering::Relaxed);
}

pub fn rdma_touch() -> Touch {
    if TOUCH_A_PAGE.load(Ordering::Relaxed) { Touch::Page } else { Touch::Block }
}

/// `MAP` (`TableOf::map`).
pub fn map(slot: usize, len: u64, flags: u64, address: u64) -> Result<u64, Error> {
    TABLE.lock().map(slot, len, flags, address)
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

/// An Active Access log's mapping (`ACTIVE_CLOSE`): the `pages` pages at `va`, memory the space
/// does not own, leave it; none is freed. Returns how many were mapped.
pub fn unmap_borrowed(slot: usize, va: u64, pages: u64) -> Result<u64, Error> {
    let len = pages.checked_mul(PAGE_SIZE).ok_or(Error::BadArgument)?;
    take_back(slot, va, len, |space| space.unmap_borrowed(va, pages))
}

/// Changes the space with `f` (`TableOf::take_back`), then empties every TLB that may hold the
/// pages it took: this core's and the others' (TLBI ASIDE1IS) and, if the process holds its PD,
/// the SMMU bank's.
fn take_back(
    slot: usize,
    va: u64,
    len: u64,
    f: impl FnOnce(&mut AddressSpace<KernelFrames>) -> Result<usize, SpaceError>,
) -> Result<u64, Error> {
    let resources = hooks::pd_resources();
    let taken = TABLE.lock().take_back(slot, resources, f)?;
    arch::mmu::tlbi_asid(taken.asid);
    if let (Some(pd), Some(r)) = (taken.pd, resources) {
        let first = va & !(PAGE_SIZE - 1);
        let pages = (va + len).next_multiple_of(PAGE_SIZE).saturating_sub(first) / PAGE_SIZE;
        (r.invalidate)(pd, first, pages as usize);
    }
    Ok(taken.pages as u64)
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
    match TABLE.lock().touch(slot, fault.far, fault.esr.is_write(), Touch::Page, hooks::pd_resources()) {
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

/// A PLDMA fault of PD `pd` at `va` (`TableOf::resolve_rdma_fault`). `Ok` means a retry will
/// find the page.
pub fn resolve_rdma_fault(pd: Pd, va: u64, write: bool) -> Result<Touched, TouchError> {
    TABLE.lock().resolve_rdma_fault(pd, va, write, rdma_touch(), hooks::pd_resources())
}

/// A process atomic's word (`gsas::service::ProcessMemory`, `demand::ProcessWords`): the table's
/// lock is held for the whole look-up, first touch and `apply`, so the process and its frame
/// stay meanwhile. Lock order: the caller (the atomic service) holds no lock; under the table
/// only the frame source's own lock and the tables' publication (as in a CPU fault) are taken.
/// A process that faults on the same page at the same time takes the table too and waits for
/// it, then finds the page resident: neither holds a lock the other waits for.
pub fn with_process_word(
    pd: Pd,
    va: u64,
    write: bool,
    apply: &mut dyn FnMut(u64) -> Result<u64, MemoryFault>,
) -> Result<u64, VaFault> {
    let mut table = TABLE.lock();
    ProcessWords { table: &mut table, resources: hooks::pd_resources() }.with_word(pd, va, write, apply)
}

/// Makes `[va, va + len)` resident in `process` for a system call that reads (or `write`s) it
/// for the process (`demand::make_resident`).
pub fn make_resident(process: &mut Process, va: u64, len: usize, write: bool) -> Result<(), SpaceError> {
    super::demand::make_resident(process, va, len, write, hooks::pd_resources())
}
