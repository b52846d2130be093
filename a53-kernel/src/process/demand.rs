//! Demand paging of process regions, the decisions (`docs/hw/syscalls.md`, `MAP`, `UNMAP`,
//! `EVICT`; `docs/hw/pldma.md`, "Fault handling"): which process a fault or a call is about,
//! what changes in its space, and whether the SMMU's walker must be shown the change. Plain
//! logic over the table, host-tested; `process::paging` applies it to the running processes,
//! the TLBs and the SMMU.

use super::table::{PdResources, ProcessOf, State, TableOf};
use crate::elf::Permissions;
use crate::gsas::service::{MemoryFault, ProcessMemory, VaFault};
use crate::mm::user_space::{AddressSpace, FrameSource, SpaceError, Touch, TouchError, Touched};
use hal::pldma::Pd;
use proto::syscall::{Error, MAP_DEVICE, MAP_FIXED, MAP_WRITABLE};

/// What taking pages back from a process leaves to do once the table is let go: empty the TLBs
/// of its ASID and, if it holds its PD, of the SMMU bank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TakenBack {
    /// Pages the change took (freed or made non-resident).
    pub pages: usize,
    pub asid: u16,
    pub pd: Option<Pd>,
}

impl<F: FrameSource> TableOf<F> {
    /// `MAP` for the process in `slot`: a new region of `len` bytes, readable, and writable with
    /// `MAP_WRITABLE`, of device memory in the device window with `MAP_DEVICE`, at `address`
    /// with `MAP_FIXED` (not with `MAP_DEVICE`; `address` is ignored without it); its address.
    pub fn map(&mut self, slot: usize, len: u64, flags: u64, address: u64) -> Result<u64, Error> {
        let (device, fixed) = (flags & MAP_DEVICE != 0, flags & MAP_FIXED != 0);
        if flags & !(MAP_WRITABLE | MAP_DEVICE | MAP_FIXED) != 0 || (device && fixed) {
            return Err(Error::BadArgument);
        }
        let permissions = Permissions { read: true, write: flags & MAP_WRITABLE != 0, execute: false };
        let p = self.slots[slot].as_mut().ok_or(Error::BadArgument)?;
        let mapped = if fixed {
            p.space.map_region_at(address, len, permissions)
        } else {
            p.space.map_region(len, permissions, device)
        };
        mapped.map_err(|_| Error::BadArgument)
    }

    /// Changes the space of the process in `slot` with `f` (an unmap, an eviction), and shows
    /// the cleared descriptors to the SMMU's walker before its TLB lets go of the pages: a walk
    /// after the invalidation must not find the old ones in memory.
    pub fn take_back(
        &mut self,
        slot: usize,
        resources: Option<&PdResources<F>>,
        f: impl FnOnce(&mut AddressSpace<F>) -> Result<usize, SpaceError>,
    ) -> Result<TakenBack, Error> {
        let p = self.slots[slot].as_mut().ok_or(Error::BadArgument)?;
        let pages = f(&mut p.space).map_err(|_| Error::BadArgument)?;
        publish(p, pages, resources);
        Ok(TakenBack { pages, asid: p.space.asid(), pd: p.rdma_pd() })
    }

    /// Touches `va` in the process in `slot` (`touch`: the page, or its 16 KiB block), as a
    /// first access by the CPU or the PLDMA would: the pages it mapped, and which are resident
    /// now (`AddressSpace::touch_span`).
    pub fn touch(
        &mut self,
        slot: usize,
        va: u64,
        write: bool,
        touch: Touch,
        resources: Option<&PdResources<F>>,
    ) -> Result<Touched, TouchError> {
        let p = self.slots[slot].as_mut().ok_or(TouchError::Outside(va))?;
        let touched = p.space.touch_span(va, write, touch)?;
        publish(p, touched.mapped, resources);
        Ok(touched)
    }

    /// A PLDMA fault of PD `pd` at `va` (a write at the destination, or a read at the source):
    /// maps the page (and its block, with touch-ahead) in the process that holds `pd` here.
    /// `Ok` means a retry will find the page, and every page it says is resident.
    pub fn resolve_rdma_fault(
        &mut self,
        pd: Pd,
        va: u64,
        write: bool,
        touch: Touch,
        resources: Option<&PdResources<F>>,
    ) -> Result<Touched, TouchError> {
        // The engine's view of the process leaves the device window out: no page there is its
        // to have (`docs/hw/smmu.md`, "What the engine may reach"), and mapping one for the CPU
        // would only make it fault again.
        if proto::syscall::layout::in_device_window(va) {
            return Err(TouchError::Outside(va));
        }
        let slot = self.holder_of_pd(pd).ok_or(TouchError::Outside(va))?;
        self.touch(slot, va, write, touch, resources)
    }
}

/// The node's processes as the atomic service's process atomics reach them
/// (`gsas::service::ProcessMemory`): the table, locked by the caller for the whole call, so the
/// process and its page stay while the atomic is applied. A process that faults on the same
/// page meanwhile waits for the table, then finds the page resident: the two touches give it
/// one frame.
pub struct ProcessWords<'a, F: FrameSource> {
    pub table: &'a mut TableOf<F>,
    pub resources: Option<&'a PdResources<F>>,
}

impl<F: FrameSource> TableOf<F> {
    /// The live process of `pd` that process atomics reach here: its holder (the process the
    /// PLDMA reaches), else its first live member.
    pub fn atomics_target(&self, pd: Pd) -> Option<usize> {
        let alive =
            |slot: usize| self.slots[slot].as_ref().is_some_and(|p| p.pd == pd && !matches!(p.state, State::Exited(_)));
        self.holder_of_pd(pd).filter(|&s| alive(s)).or_else(|| (0..self.slots.len()).find(|&s| alive(s)))
    }
}

impl<F: FrameSource> ProcessMemory for ProcessWords<'_, F> {
    fn with_word(
        &mut self,
        pd: Pd,
        va: u64,
        write: bool,
        apply: &mut dyn FnMut(u64) -> Result<u64, MemoryFault>,
    ) -> Result<u64, VaFault> {
        let slot = self.table.atomics_target(pd).ok_or(VaFault::NoProcess)?;
        // User memory only: the device window holds device pages and pages the process does
        // not own (its interface pages, its queue set).
        if proto::syscall::layout::in_device_window(va) || va >= proto::syscall::layout::USER_END {
            return Err(VaFault::Unmapped);
        }
        let resident = self.table.slots[slot].as_ref().and_then(|p| p.space.page(va));
        let page = match resident {
            Some(page) if write && !page.permissions.write => return Err(VaFault::ReadOnly),
            Some(page) => page,
            None => {
                self.table.touch(slot, va, write, Touch::Page, self.resources).map_err(|e| match e {
                    TouchError::Outside(_) => VaFault::Unmapped,
                    TouchError::ReadOnly(_) => VaFault::ReadOnly,
                    TouchError::Space(_) => VaFault::NoFrame,
                })?;
                let p = self.table.slots[slot].as_ref().ok_or(VaFault::NoProcess)?;
                p.space.page(va).ok_or(VaFault::Unmapped)?
            }
        };
        if !page.permissions.read {
            return Err(VaFault::Unmapped);
        }
        Ok(apply(page.pa + (va - page.va))?)
    }
}

/// Makes `[va, va + len)` resident in `process` for a system call that reads (or `write`s) it
/// for the process: region pages get their frames as a touch would give them.
pub fn make_resident<F: FrameSource>(
    process: &mut ProcessOf<F>,
    va: u64,
    len: usize,
    write: bool,
    resources: Option<&PdResources<F>>,
) -> Result<(), SpaceError> {
    let mapped = process.space.make_resident(va, len, write)?;
    publish(process, mapped, resources);
    Ok(())
}

/// After `changed` pages were mapped or unmapped: the SMMU's walker sees the descriptors only
/// once they are cleaned to the point of coherency, so they are when the process holds its PD.
fn publish<F: FrameSource>(process: &mut ProcessOf<F>, changed: usize, resources: Option<&PdResources<F>>) {
    if changed > 0
        && process.holds_pd
        && let Some(r) = resources
    {
        (r.publish_tables)(&mut process.space);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm::PAGE_SIZE;
    use crate::mm::test_frames::Arena;
    use crate::process::table::Launch;
    use crate::process::table::tests::{Node, table};
    use proto::syscall::layout::{DEVICE_WINDOW, in_device_window};

    // Publications of the tables by this thread's test (the tests run in threads of their own).
    std::thread_local! {
        static PUBLISHED: core::cell::Cell<usize> = const { core::cell::Cell::new(0) };
    }

    fn resources() -> PdResources<&'static Arena> {
        PdResources {
            available: || true,
            queue_set_pa: |pd| 0x8000 * (u64::from(pd.raw()) + 1),
            publish_tables: |_| PUBLISHED.with(|p| p.set(p.get() + 1)),
            attach: |_| true,
            detach: |_| {},
            invalidate: |_, _, _| {},
        }
    }

    fn published() -> usize {
        PUBLISHED.with(core::cell::Cell::get)
    }

    /// A table with one process in slot 0; it holds its PD if `rdma`.
    fn one_process(rdma: bool) -> (TableOf<&'static Arena>, Option<Pd>) {
        let node = Node::new(rdma);
        let mut t = table();
        let s = node.spawn(&mut t, &Launch::new("prog", None)).unwrap();
        let pd = s.rdma.map(|setup| setup.pd);
        if pd.is_some() {
            assert!(t.started(s.slot, true).is_none());
        }
        (t, pd)
    }

    #[test]
    fn map_takes_the_flags_the_abi_names_and_places_device_regions_in_the_window() {
        let (mut t, _) = one_process(false);
        assert_eq!(t.map(0, 4096, 0x8, 0), Err(Error::BadArgument));
        let window = DEVICE_WINDOW + 0x1000_0000;
        assert_eq!(t.map(0, 4096, MAP_FIXED | MAP_DEVICE, window), Err(Error::BadArgument), "no fixed device region");
        assert_eq!(t.map(1, 4096, 0, 0), Err(Error::BadArgument), "no process in slot 1");
        let plain = t.map(0, 4096, 0, 0).unwrap();
        let writable = t.map(0, 4096, MAP_WRITABLE, 0).unwrap();
        let device = t.map(0, 4096, MAP_DEVICE, 0).unwrap();
        let space = &t.slots[0].as_ref().unwrap().space;
        assert!(!space.region(plain).unwrap().permissions.write);
        assert!(space.region(writable).unwrap().permissions.write);
        assert!(!in_device_window(plain) && in_device_window(device));
        let heap = proto::syscall::layout::SYMMETRIC_HEAP;
        assert_eq!(t.map(0, 2 * 4096, MAP_FIXED | MAP_WRITABLE, heap), Ok(heap));
        assert!(t.slots[0].as_ref().unwrap().space.region(heap + 4096).unwrap().permissions.write);
        assert_eq!(t.map(0, 4096, MAP_FIXED, heap + 4096), Err(Error::BadArgument), "it overlaps");
        assert_eq!(t.map(0, 4096, MAP_FIXED, heap + 4095), Err(Error::BadArgument), "not page-aligned");
        assert_eq!(t.map(0, 4096, MAP_FIXED, 0x40_0000), Err(Error::BadArgument), "outside the regions range");
        assert_eq!(t.map(0, 4096, 0, heap), Ok(writable + 2 * 4096), "the address means nothing without MAP_FIXED");
    }

    #[test]
    fn an_rdma_fault_maps_its_block_in_the_pd_holder_and_shows_the_walker() {
        let (mut t, pd) = one_process(true);
        let pd = pd.unwrap();
        let r = resources();
        let region = t.map(0, 8 * PAGE_SIZE, MAP_WRITABLE, 0).unwrap();
        let before = published();
        let block = Touched { mapped: 4, first: region, end: region + 4 * PAGE_SIZE };
        assert_eq!(t.resolve_rdma_fault(pd, region + PAGE_SIZE, true, Touch::Block, Some(&r)), Ok(block));
        assert_eq!(published(), before + 1);
        let page = |mapped| Touched { mapped, first: region + 5 * PAGE_SIZE, end: region + 6 * PAGE_SIZE };
        assert_eq!(t.resolve_rdma_fault(pd, region + 5 * PAGE_SIZE, false, Touch::Page, Some(&r)), Ok(page(1)));
        assert_eq!(
            t.resolve_rdma_fault(pd, region + 5 * PAGE_SIZE + 8, false, Touch::Page, Some(&r)),
            Ok(page(0)),
            "resident already"
        );
        assert_eq!(published(), before + 2, "nothing changed, nothing to show");

        let device = t.map(0, PAGE_SIZE, MAP_DEVICE, 0).unwrap();
        assert_eq!(t.resolve_rdma_fault(pd, device, true, Touch::Block, Some(&r)), Err(TouchError::Outside(device)));
        assert_eq!(
            t.resolve_rdma_fault(pd, DEVICE_WINDOW, true, Touch::Block, Some(&r)),
            Err(TouchError::Outside(DEVICE_WINDOW))
        );
        let nobody = Pd::new((pd.raw() + 1) % hal::pldma::PDS as u16).unwrap();
        assert_eq!(
            t.resolve_rdma_fault(nobody, region, true, Touch::Block, Some(&r)),
            Err(TouchError::Outside(region))
        );
    }

    #[test]
    fn a_process_that_does_not_hold_its_pd_has_nothing_shown_to_the_walker() {
        let node = Node::new(false);
        let mut t = table();
        let holder = node.spawn(&mut t, &Launch::new("prog", None)).unwrap().slot;
        let pd = t.slots[holder].as_ref().unwrap().pd;
        let launch = Launch { pd: crate::process::pds::PdRequest::Inherit(pd), ..Launch::new("prog", None) };
        let member = node.spawn(&mut t, &launch).unwrap().slot;
        assert!(!t.slots[member].as_ref().unwrap().holds_pd);
        let r = resources();
        let region = t.map(member, 4 * PAGE_SIZE, MAP_WRITABLE, 0).unwrap();
        let before = published();
        assert!(matches!(t.touch(member, region, true, Touch::Block, Some(&r)).map(|t| t.mapped), Ok(n) if n > 0));
        let p = t.slots[member].as_deref_mut().unwrap();
        make_resident(p, region, 4 * PAGE_SIZE as usize, true, Some(&r)).unwrap();
        assert_eq!(published(), before, "the engine never walks a member's tables");
        let region = t.map(holder, PAGE_SIZE, MAP_WRITABLE, 0).unwrap();
        assert_eq!(t.touch(holder, region, true, Touch::Page, Some(&r)).map(|t| t.mapped), Ok(1));
        assert_eq!(published(), before + 1, "the holder's, it does");
    }

    /// Process atomics' look-up: (the frame address `apply` was given, what it returned).
    fn word(t: &mut TableOf<&'static Arena>, pd: Pd, va: u64, write: bool) -> Result<u64, VaFault> {
        let r = resources();
        let mut words = ProcessWords { table: t, resources: Some(&r) };
        words.with_word(pd, va, write, &mut |pa| Ok(pa))
    }

    #[test]
    fn process_atomics_reach_user_memory_of_the_pds_process_and_touch_what_is_not_resident() {
        let (mut t, pd) = one_process(true);
        let pd = pd.unwrap();
        let image = proto::syscall::layout::IMAGE_BASE;
        let text = t.slots[0].as_ref().unwrap().space.page(image).unwrap();
        assert_eq!(word(&mut t, pd, image + 8, false), Ok(text.pa + 8), "a read of a resident page");
        assert_eq!(word(&mut t, pd, image, true), Err(VaFault::ReadOnly), "the program's text is read-only");
        let region = t.map(0, 2 * PAGE_SIZE, MAP_WRITABLE, 0).unwrap();
        let before = published();
        let pa = word(&mut t, pd, region + PAGE_SIZE + 16, true).unwrap();
        let page = t.slots[0].as_ref().unwrap().space.page(region + PAGE_SIZE).unwrap();
        assert_eq!(pa, page.pa + 16, "the page got a frame, as at a first touch");
        assert!(t.slots[0].as_ref().unwrap().space.page(region).is_none(), "that page only");
        assert_eq!(published(), before + 1, "and the PLDMA's walker was shown it");
        assert_eq!(word(&mut t, pd, region + PAGE_SIZE + 16, true), Ok(pa), "the same frame again");
        let ro = t.map(0, PAGE_SIZE, 0, 0).unwrap();
        assert_eq!(word(&mut t, pd, ro, true), Err(VaFault::ReadOnly));
        assert!(word(&mut t, pd, ro, false).is_ok(), "a fetch on a read-only region");
        let device = t.map(0, PAGE_SIZE, MAP_DEVICE | MAP_WRITABLE, 0).unwrap();
        for va in [device, DEVICE_WINDOW, region + 2 * PAGE_SIZE, 0, 1 << 39, !7] {
            assert_eq!(word(&mut t, pd, va, false), Err(VaFault::Unmapped), "{va:#x}");
        }
        let other = Pd::new((pd.raw() + 1) % 14).unwrap();
        assert_eq!(word(&mut t, other, region, false), Err(VaFault::NoProcess));
        let _ = t.exit(0, crate::process::table::Exit::Status(0)).unwrap();
        assert_eq!(word(&mut t, pd, region + PAGE_SIZE, false), Err(VaFault::NoProcess), "it ended");
    }

    #[test]
    fn process_atomics_go_to_the_pd_holder_else_a_live_member() {
        let node = Node::new(false);
        let mut t = table();
        let first = node.spawn(&mut t, &Launch::new("prog", None)).unwrap().slot;
        let pd = t.slots[first].as_ref().unwrap().pd;
        let launch = Launch { pd: crate::process::pds::PdRequest::Inherit(pd), ..Launch::new("prog", None) };
        let second = node.spawn(&mut t, &launch).unwrap().slot;
        assert_eq!(t.atomics_target(pd), Some(first));
        let _ = t.exit(first, crate::process::table::Exit::Killed).unwrap();
        assert_eq!(t.atomics_target(pd), Some(second), "the holder ended: a live member");
        let _ = t.exit(second, crate::process::table::Exit::Killed).unwrap();
        assert_eq!(t.atomics_target(pd), None);
    }

    #[test]
    fn taking_pages_back_says_whose_tlbs_to_empty() {
        let (mut t, pd) = one_process(true);
        let r = resources();
        let region = t.map(0, 4 * PAGE_SIZE, MAP_WRITABLE, 0).unwrap();
        t.touch(0, region, true, Touch::Block, Some(&r)).unwrap();
        let asid = t.slots[0].as_ref().unwrap().space.asid();
        let before = published();
        let evicted = t.take_back(0, Some(&r), |space| space.evict(region, 2 * PAGE_SIZE));
        assert_eq!(evicted, Ok(TakenBack { pages: 2, asid, pd }));
        assert_eq!(published(), before + 1, "the cleared descriptors are shown before the SMMU's TLB is emptied");
        let unmapped = t.take_back(0, Some(&r), |space| space.unmap_region(region, 4 * PAGE_SIZE));
        assert_eq!(unmapped.map(|u| u.pages), Ok(2));
        assert_eq!(
            t.take_back(0, Some(&r), |space| space.unmap_region(region, 4 * PAGE_SIZE)),
            Err(Error::BadArgument)
        );
    }
}
