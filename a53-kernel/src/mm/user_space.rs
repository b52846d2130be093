//! A process's address space: its own stage-1 tables for TTBR0 (39-bit VA, 4 KiB pages,
//! non-global mappings tagged with the process's ASID), built with `aarch64-paging`.
//!
//! The same tables serve the process's SMMU context bank on the QFDB, so a DMA engine sees the
//! process's virtual addresses exactly as the process does. Every page the space maps comes
//! from its [`FrameSource`] and goes back to it when the space is dropped. The kernel never
//! touches user memory through user addresses: it translates and uses its own view of the
//! frame, so a bad user pointer is an error, not a kernel fault.

use super::page_map::PageMap;
use super::{CACHE_LINE, PAGE_SIZE};
use crate::elf::{Permissions, Program};
use aarch64_paging::descriptor::{El1Attributes as A, PhysicalAddress};
use aarch64_paging::paging::{Constraints, El1And0, MemoryRegion, PageTable, Translation, VaRange};
use aarch64_paging::{MapError, Mapping};
use alloc::vec::Vec;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU64, Ordering};
use proto::syscall::layout;

/// Where an address space gets its frames (the kernel's pool, or a test arena). Shared
/// access: sources lock internally.
///
/// Sources keep a reserve that only page tables may use ([`TABLE_RESERVE`] frames): a data
/// allocation fails while tables can still be had, so mapping a page never runs out halfway
/// (`aarch64-paging` cannot report a failed table allocation).
pub trait FrameSource {
    /// A zeroed frame for data, or `None` when only the reserve is left.
    fn alloc_zeroed(&self) -> Option<u64>;
    /// Zeroed frames for data, `out.len()` at most, into `out`; how many it gave (fewer when
    /// only the reserve is left). One call for a block's pages: a source takes them under one
    /// lock.
    fn alloc_zeroed_many(&self, out: &mut [u64]) -> usize {
        let mut taken = 0;
        for pa in out {
            let Some(frame) = self.alloc_zeroed() else { break };
            *pa = frame;
            taken += 1;
        }
        taken
    }
    /// A zeroed frame for a page table; may use the reserve.
    fn alloc_table(&self) -> Option<u64>;
    fn free(&self, pa: u64);
    /// The kernel's pointer to a frame.
    fn virt(&self, pa: u64) -> *mut u8;
    /// Writes a frame's cached lines back to memory and drops them from the caches, before a
    /// mapping that bypasses the caches (a device page) reads it.
    fn uncache(&self, pa: u64);
}

/// Frames kept for page tables: enough for every process on a node (one per context bank,
/// `process::MAX_DOMAINS`) to map a page at once.
pub const TABLE_RESERVE: usize = 2 * hal::pldma::PDS + 8;

/// `aarch64-paging`'s view of the frame source: tables are frames too. It remembers which
/// frames hold tables, because an SMMU whose walks do not snoop the CPU caches (IDR0.CTTW = 0
/// on the ZynqMP) only sees them once the kernel has cleaned them (`docs/hw/smmu.md`).
pub struct FrameTables<F: FrameSource> {
    source: F,
    tables: Vec<u64>,
}

impl<F: FrameSource> Translation<A> for FrameTables<F> {
    fn allocate_table(&mut self) -> (NonNull<PageTable<A>>, PhysicalAddress) {
        // The reserve guarantees this (see `FrameSource`): data allocations fail before it is
        // touched, and one page mapping needs at most two new tables.
        let pa = self.source.alloc_table().expect("the page-table reserve is exhausted");
        let va = NonNull::new(self.source.virt(pa) as *mut PageTable<A>).expect("frames are mapped");
        self.tables.push(pa);
        (va, PhysicalAddress(pa as usize))
    }

    unsafe fn deallocate_table(&mut self, page_table: NonNull<PageTable<A>>) {
        let pa = self.virt_to_phys(page_table.as_ptr() as *mut u8);
        self.tables.retain(|&t| t != pa);
        self.source.free(pa);
    }

    fn physical_to_virtual(&self, pa: PhysicalAddress) -> NonNull<PageTable<A>> {
        NonNull::new(self.source.virt(pa.0 as u64) as *mut PageTable<A>).expect("frames are mapped")
    }
}

impl<F: FrameSource> FrameTables<F> {
    fn virt_to_phys(&self, va: *mut u8) -> u64 {
        // The kernel's frame view is a fixed offset from physical addresses.
        let base = self.source.virt(0) as u64;
        va as u64 - base
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpaceError {
    OutOfFrames,
    /// The address is outside the user half, or already mapped.
    BadAddress(u64),
    Map,
}

impl From<MapError> for SpaceError {
    fn from(_: MapError) -> Self {
        SpaceError::Map
    }
}

/// A page of user memory: where, and what the process may do with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UserPage {
    pub va: u64,
    pub pa: u64,
    pub permissions: Permissions,
}

/// A range of the space whose pages come on demand: mapped by `MAP`, a frame given to a page
/// at its first touch (a CPU fault or an RDMA fault), taken back by `EVICT` and `UNMAP`
/// (`docs/hw/syscalls.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub start: u64,
    pub end: u64,
    pub permissions: Permissions,
    /// Its pages are device memory for the CPU (`MAP_DEVICE`); it lies in the device window.
    pub device: bool,
}

/// Why a touch of the space cannot be given a page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TouchError {
    /// The address lies in no region (and has no page).
    Outside(u64),
    /// A write to a region the process may only read.
    ReadOnly(u64),
    /// No frame (or table) left for it.
    Space(SpaceError),
}

/// What a touch did: how many pages it mapped, and the pages of `[first, end)` are all resident
/// (`AddressSpace::touch_span`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Touched {
    pub mapped: usize,
    pub first: u64,
    pub end: u64,
}

/// How many pages a touch maps: the one touched, or every page of its 16 KiB block that lies
/// in the region (the PLDMA's touch-ahead, `docs/hw/pldma.md`, "Fault handling").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Touch {
    Page,
    Block,
}

pub struct AddressSpace<F: FrameSource> {
    mapping: Mapping<FrameTables<F>, El1And0>,
    asid: u16,
    pages: PageMap,
    regions: Vec<Region>,
    /// Where the next region goes (regions never reuse addresses within the process's life),
    /// and the next device region.
    next_region: u64,
    next_device_region: u64,
    /// The first-level table the process's SMMU context bank walks: the process's own, with
    /// the device window's entry left invalid, so that no DMA reaches a device mapping
    /// (`docs/hw/smmu.md`, "What the engine may reach"). It shares every table below.
    dma_root: u64,
    unpublished: Unpublished,
}

/// The first-level entry of the device window, which [`AddressSpace`]'s DMA view leaves out.
const DEVICE_WINDOW_ENTRY: usize = (layout::DEVICE_WINDOW >> 30) as usize;
/// Entries of a table.
const ENTRIES: usize = 512;
/// A valid table descriptor's low bits (levels 1 and 2), and where its next table's address
/// lies (bits 47:12).
const TABLE_DESCRIPTOR: u64 = 0b11;
const TABLE_ADDRESS: u64 = 0x0000_ffff_ffff_f000;
/// Pages of a 16 KiB block (the most a touch maps).
const BLOCK_PAGES: usize = (hal::pldma::BLOCK_BYTES / PAGE_SIZE) as usize;

/// Table descriptors written since the last [`AddressSpace::publish`]: what a table walker that
/// does not snoop the CPU's caches (the SMMU's) must be shown again.
#[derive(Default)]
struct Unpublished {
    /// Kernel addresses of the leaf descriptors written (a page mapped or unmapped).
    descriptors: Vec<usize>,
    /// A table was added (so its parent descriptor changed), or too many to list: every page of
    /// the tables.
    all: bool,
}

/// Listed descriptors at most; past it, [`Unpublished::all`].
const UNPUBLISHED_MAX: usize = 64;

impl Unpublished {
    /// The descriptor at kernel address `descriptor` was written.
    fn note(&mut self, descriptor: usize) {
        if self.all {
            return;
        }
        if self.descriptors.len() == UNPUBLISHED_MAX {
            self.all = true;
        } else {
            self.descriptors.push(descriptor);
        }
    }
}

fn flags(p: Permissions) -> A {
    user_flags(p, A::INNER_SHAREABLE | boot_attrs::NORMAL)
}

/// A user page of memory type `memory` (a MAIR index and its shareability).
fn user_flags(p: Permissions, memory: A) -> A {
    let mut f = A::VALID | A::ACCESSED | A::NON_GLOBAL | A::USER | A::PXN | memory;
    if !p.write {
        f |= A::READ_ONLY;
    }
    if !p.execute {
        f |= A::UXN;
    }
    f
}

/// MAIR indices (the kernel's boot code programs MAIR_EL1): device nGnRE, normal write-back,
/// normal non-cacheable.
mod boot_attrs {
    use aarch64_paging::descriptor::El1Attributes as A;
    pub const DEVICE: A = A::ATTRIBUTE_INDEX_0;
    pub const NORMAL: A = A::ATTRIBUTE_INDEX_1;
    pub const NORMAL_NC: A = A::ATTRIBUTE_INDEX_2;
}

impl<F: FrameSource> AddressSpace<F> {
    pub fn new(asid: u16, frames: F) -> Self {
        // From the table reserve, as the mapping's own tables are (see `FrameSource`).
        let dma_root = frames.alloc_table().expect("the page-table reserve is exhausted");
        let tables = FrameTables { source: frames, tables: Vec::new() };
        let mapping = Mapping::with_asid_and_va_range(tables, usize::from(asid), 1, El1And0, VaRange::Lower);
        let mut space = Self {
            mapping,
            asid,
            pages: PageMap::new(),
            regions: Vec::new(),
            next_region: layout::REGIONS_START,
            next_device_region: layout::DEVICE_REGIONS_START,
            dma_root,
            unpublished: Unpublished { descriptors: Vec::new(), all: true },
        };
        space.sync_dma_root();
        space
    }

    /// Copies the process's first-level table into the DMA view, but for the device window's
    /// entry (after a table was added below the root).
    fn sync_dma_root(&mut self) {
        let frames = self.frames();
        let root = frames.virt(self.mapping.root_address().0 as u64) as *const u64;
        let dma = frames.virt(self.dma_root) as *mut u64;
        for i in 0..ENTRIES {
            // SAFETY: both are table frames of this space (a page of 512 descriptors each) in
            // the kernel's view; only this space writes them, under its owner's lock.
            unsafe {
                let entry = if i == DEVICE_WINDOW_ENTRY { 0 } else { root.add(i).read() };
                dma.add(i).write(entry);
            }
        }
    }

    /// The value for the SMMU context bank's TTBR0: the DMA view's first-level table and the
    /// ASID.
    pub fn dma_ttbr0(&self) -> u64 {
        self.dma_root | u64::from(self.asid) << 48
    }

    pub fn asid(&self) -> u16 {
        self.asid
    }

    /// TTBR0_EL1 for this space: root table and ASID.
    pub fn ttbr0(&self) -> u64 {
        self.mapping.root_address().0 as u64 | u64::from(self.asid) << 48
    }

    /// The kernel's pointer to frame `pa` of this space.
    pub fn kernel_view(&self, pa: u64) -> *mut u8 {
        self.frames().virt(pa)
    }

    /// The frame source (owned by the mapping, which allocates its tables from it).
    fn frames(&self) -> &F {
        &self.mapping.translation().source
    }

    /// The kernel's pointers to every page of this space's tables (the root and the DMA
    /// view's included).
    pub fn table_pages(&self) -> impl Iterator<Item = *const u8> + '_ {
        let tables = self.mapping.translation();
        tables.tables.iter().chain([&self.dma_root]).map(|&pa| tables.source.virt(pa) as *const u8)
    }

    /// Hands every table byte range written since the last call to `clean` (which cleans it to
    /// the point of coherency), so that a walker that does not snoop the CPU's caches sees the
    /// tables as the CPU does: the lines of the leaf descriptors written, merged into runs, or
    /// every table page after a table was added. A new space publishes everything once.
    pub fn publish(&mut self, mut clean: impl FnMut(*const u8, usize)) {
        // The list keeps its allocation from one publication to the next: a fault's few
        // descriptors then cost no allocation.
        let all = core::mem::replace(&mut self.unpublished.all, false);
        if all {
            self.unpublished.descriptors.clear();
            for page in self.table_pages() {
                clean(page, PAGE_SIZE as usize);
            }
            return;
        }
        let descriptors = &mut self.unpublished.descriptors;
        for d in descriptors.iter_mut() {
            *d &= !(CACHE_LINE - 1);
        }
        descriptors.sort_unstable();
        descriptors.dedup();
        let mut lines = descriptors.drain(..).peekable();
        while let Some(first) = lines.next() {
            let mut end = first + CACHE_LINE;
            while lines.next_if_eq(&end).is_some() {
                end += CACHE_LINE;
            }
            clean(first as *const u8, end - first);
        }
    }

    /// `map_range` on the mapping, noting what it wrote for [`publish`](Self::publish).
    fn map_range(&mut self, va: u64, end: u64, pa: u64, flags: A) -> Result<(), MapError> {
        let region = MemoryRegion::new(va as usize, end as usize);
        let tables = self.mapping.translation().tables.len();
        let result =
            self.mapping.map_range(&region, PhysicalAddress(pa as usize), flags, Constraints::NO_BLOCK_MAPPINGS);
        if self.mapping.translation().tables.len() != tables {
            // A new table below the root: the root changed, and so must the DMA view.
            self.sync_dma_root();
            self.unpublished.all = true;
            return result;
        }
        let unpublished = &mut self.unpublished;
        if unpublished.all {
            return result;
        }
        let _ = self.mapping.walk_range(&region, &mut |_, descriptor, _| {
            unpublished.note(descriptor as *const _ as usize);
            if unpublished.all { Err(()) } else { Ok(()) }
        });
        result
    }

    /// Maps one zeroed page at `va` and returns its frame.
    pub fn map_page(&mut self, va: u64, permissions: Permissions) -> Result<u64, SpaceError> {
        self.map_page_as(va, permissions, false)
    }

    /// Maps one zeroed page at `va`, of device memory for the CPU if `device`, and returns its
    /// frame.
    fn map_page_as(&mut self, va: u64, permissions: Permissions, device: bool) -> Result<u64, SpaceError> {
        if !va.is_multiple_of(PAGE_SIZE) || va >= layout::USER_END || self.page(va).is_some() {
            return Err(SpaceError::BadAddress(va));
        }
        let (pa, f) = self.new_frame(permissions, device)?;
        if let Err(e) = self.map_range(va, va + PAGE_SIZE, pa, f) {
            self.frames().free(pa);
            return Err(e.into());
        }
        self.pages.insert(UserPage { va, pa, permissions });
        Ok(pa)
    }

    /// A zeroed frame for a page and the flags of its descriptor.
    fn new_frame(&self, permissions: Permissions, device: bool) -> Result<(u64, A), SpaceError> {
        let pa = self.frames().alloc_zeroed().ok_or(SpaceError::OutOfFrames)?;
        Ok((pa, self.page_flags(pa, permissions, device)))
    }

    /// The flags of the descriptor of a page at the zeroed frame `pa`, of device memory for the
    /// CPU if `device` (its zeroes then written back first).
    fn page_flags(&self, pa: u64, permissions: Permissions, device: bool) -> A {
        if device {
            // The zeroes were written through the kernel's cached view; the process's is not.
            self.frames().uncache(pa);
            user_flags(permissions, A::OUTER_SHAREABLE | boot_attrs::DEVICE)
        } else {
            flags(permissions)
        }
    }

    /// The kernel's pointer to the level-3 table that holds `va`'s descriptor, if the tables
    /// reach that far: two descriptors read, from the root (level 1, 39-bit VA) down.
    fn leaf_table(&self, va: u64) -> Option<*mut u64> {
        let mut table = self.mapping.root_address().0 as u64;
        for shift in [30, 21] {
            let index = (va >> shift) as usize % ENTRIES;
            // SAFETY: `table` is a table frame of this space (512 descriptors) in the kernel's
            // view; its descriptors are written only under the space's owner's lock, which the
            // caller holds (`&self`).
            let descriptor = unsafe { (self.frames().virt(table) as *const u64).add(index).read() };
            if descriptor & TABLE_DESCRIPTOR != TABLE_DESCRIPTOR {
                return None;
            }
            table = descriptor & TABLE_ADDRESS;
        }
        Some(self.frames().virt(table) as *mut u64)
    }

    /// Maps the zeroed frame `pa` at `va` by writing its descriptor into `table`, the level-3
    /// table that holds it ([`leaf_table`](Self::leaf_table)): the fast path of a touch, with no
    /// walk. The caller adds the page to `pages`.
    fn map_frame_in(&mut self, table: *mut u64, va: u64, pa: u64, permissions: Permissions, device: bool) {
        let f = self.page_flags(pa, permissions, device);
        let index = (va / PAGE_SIZE) as usize % ENTRIES;
        // SAFETY: `table` is a level-3 table of this space (a whole frame of 512 descriptors) in
        // the kernel's view, and `va`'s entry is invalid (no page there): nothing walks it yet.
        // The store is atomic, as `aarch64-paging`'s own.
        let descriptor = unsafe { AtomicU64::from_ptr(table.add(index)) };
        descriptor.store(pa | (f | A::TABLE_OR_PAGE).bits() as u64, Ordering::Release);
        self.unpublished.note(descriptor.as_ptr() as usize);
    }

    /// Maps the device page `pa` (a PL interface page) at `va` in the device window, read/write
    /// for the process, never executable. The page is not the space's: it is not freed with it.
    pub fn map_device(&mut self, va: u64, pa: u64) -> Result<(), SpaceError> {
        if !va.is_multiple_of(PAGE_SIZE) || !layout::in_device_window(va) || self.page(va).is_some() {
            return Err(SpaceError::BadAddress(va));
        }
        let f = A::VALID | A::ACCESSED | A::NON_GLOBAL | A::USER | A::PXN | A::UXN | boot_attrs::DEVICE;
        self.map_range(va, va + PAGE_SIZE, pa, f)?;
        Ok(())
    }

    /// Maps `pages` pages of memory the space does not own (a queue set the kernel hands out)
    /// at `va` in the device window, from `pa`: read/write for the process, never executable,
    /// normal non-cacheable, because the other side of that memory (the R5) does not snoop the
    /// A53s' caches. They are not freed with the space.
    pub fn map_uncached(&mut self, va: u64, pa: u64, pages: u64) -> Result<(), SpaceError> {
        self.map_borrowed(va, pa, pages, A::OUTER_SHAREABLE | boot_attrs::NORMAL_NC)
    }

    fn map_borrowed(&mut self, va: u64, pa: u64, pages: u64, memory: A) -> Result<(), SpaceError> {
        let end = self.borrowed_range(va, pages)?;
        if !pa.is_multiple_of(PAGE_SIZE) {
            return Err(SpaceError::BadAddress(va));
        }
        let f = A::VALID | A::ACCESSED | A::NON_GLOBAL | A::USER | A::PXN | A::UXN | memory;
        self.map_range(va, end, pa, f)?;
        Ok(())
    }

    /// The end of `pages` pages at `va` where memory the space does not own may be mapped: in
    /// the device window, none of them a page of the space's own.
    fn borrowed_range(&self, va: u64, pages: u64) -> Result<u64, SpaceError> {
        let end = pages.checked_mul(PAGE_SIZE).and_then(|len| va.checked_add(len)).ok_or(SpaceError::BadAddress(va))?;
        let taken = (va..end).step_by(PAGE_SIZE as usize).any(|p| self.page(p).is_some());
        // Memory the space does not own is never the engine's to reach: it lies in the device
        // window, which the DMA view leaves out.
        let in_window = pages > 0 && layout::in_device_window(va) && layout::in_device_window(end - 1);
        if !va.is_multiple_of(PAGE_SIZE) || !in_window || taken {
            return Err(SpaceError::BadAddress(va));
        }
        Ok(end)
    }

    /// Removes the mapping of the `pages` pages at `va` that [`map_uncached`](Self::map_uncached)
    /// made (memory the space does not own: nothing is freed); returns how many were mapped. The
    /// caller invalidates the TLBs for the range.
    pub fn unmap_borrowed(&mut self, va: u64, pages: u64) -> Result<usize, SpaceError> {
        let end = self.borrowed_range(va, pages)?;
        let mapped = (va..end).step_by(PAGE_SIZE as usize).filter(|&p| self.translate(p).is_some()).count();
        if mapped > 0 {
            // Not VALID: the descriptors are cleared (the tables stay).
            self.map_range(va, end, 0, A::empty())?;
        }
        Ok(mapped)
    }

    /// The physical address a CPU access at `va` reaches, if the tables map it.
    pub fn translate(&self, va: u64) -> Option<u64> {
        let mut pa = None;
        let _ = self.mapping.walk_range(&MemoryRegion::new(va as usize, va as usize + 1), &mut |_, d, level| {
            if level == 3 && d.is_valid() {
                pa = Some(d.output_address().0 as u64 + va % PAGE_SIZE);
            }
            Ok(())
        });
        pa
    }

    /// The page mapped at `va` (any address inside it).
    pub fn page(&self, va: u64) -> Option<UserPage> {
        self.pages.get(va & !(PAGE_SIZE - 1))
    }

    /// The page at `va` if the kernel may copy to or from it through its cached view of the
    /// frames: not a device page, which the process reaches around the caches.
    fn copyable_page(&self, va: u64) -> Result<UserPage, SpaceError> {
        self.page(va).filter(|_| !layout::in_device_window(va)).ok_or(SpaceError::BadAddress(va))
    }

    /// A new region of `len` bytes (rounded up to pages) with no page resident; its address.
    /// A page-sized gap separates regions, so an overrun faults. A `device` region lies in the
    /// device window and its pages are device memory for the CPU.
    /// Placement skips the regions placed at fixed addresses ([`map_region_at`]), a page
    /// apart from them too.
    ///
    /// [`map_region_at`]: Self::map_region_at
    pub fn map_region(&mut self, len: u64, permissions: Permissions, device: bool) -> Result<u64, SpaceError> {
        let (mut start, limit) = if device {
            (self.next_device_region, layout::DEVICE_REGIONS_END)
        } else {
            (self.next_region, layout::REGIONS_END)
        };
        let bytes = len.checked_next_multiple_of(PAGE_SIZE).filter(|&l| l > 0).ok_or(SpaceError::BadAddress(start))?;
        let end = loop {
            let end = start.checked_add(bytes).filter(|&end| end <= limit).ok_or(SpaceError::BadAddress(start))?;
            // The first region in the way (with the page between), if any: go past it.
            let blocking = self.regions.iter().filter(|r| r.start < end + PAGE_SIZE && start < r.end + PAGE_SIZE);
            match blocking.map(|r| r.end).max() {
                Some(past) => start = past + PAGE_SIZE,
                None => break end,
            }
        };
        let next = if device { &mut self.next_device_region } else { &mut self.next_region };
        *next = end + PAGE_SIZE;
        self.regions.push(Region { start, end, permissions, device });
        Ok(start)
    }

    /// A new region of `len` bytes (rounded up to pages) at `start` (`MAP_FIXED`), with no page
    /// resident: `start` page-aligned, the whole region inside the regions range
    /// (`layout::REGIONS_START..REGIONS_END`), overlapping no region of the process.
    pub fn map_region_at(&mut self, start: u64, len: u64, permissions: Permissions) -> Result<u64, SpaceError> {
        let end = len
            .checked_next_multiple_of(PAGE_SIZE)
            .filter(|&l| l > 0)
            .and_then(|l| start.checked_add(l))
            .filter(|&end| {
                start.is_multiple_of(PAGE_SIZE) && start >= layout::REGIONS_START && end <= layout::REGIONS_END
            })
            .ok_or(SpaceError::BadAddress(start))?;
        if self.regions.iter().any(|r| r.start < end && start < r.end) {
            return Err(SpaceError::BadAddress(start));
        }
        self.regions.push(Region { start, end, permissions, device: false });
        Ok(start)
    }

    /// The region holding `va`.
    pub fn region(&self, va: u64) -> Option<&Region> {
        self.regions.iter().find(|r| (r.start..r.end).contains(&va))
    }

    /// Removes the whole region at `va` of `len` bytes (as `map_region` gave it) and frees its
    /// pages. The caller invalidates the TLBs (CPU and SMMU) for the range.
    pub fn unmap_region(&mut self, va: u64, len: u64) -> Result<usize, SpaceError> {
        let end = va.checked_add(len.next_multiple_of(PAGE_SIZE)).ok_or(SpaceError::BadAddress(va))?;
        let index =
            self.regions.iter().position(|r| r.start == va && r.end == end).ok_or(SpaceError::BadAddress(va))?;
        let freed = self.evict(va, end - va)?;
        self.regions.swap_remove(index);
        Ok(freed)
    }

    /// Makes the pages of `[va, va + len)` non-resident again (`madvise(DONTNEED)`): their
    /// frames are freed and their next touch gets zeroed ones. The range must lie in one region.
    /// Returns how many pages were resident; the caller invalidates the TLBs (CPU and SMMU).
    pub fn evict(&mut self, va: u64, len: u64) -> Result<usize, SpaceError> {
        let first = va & !(PAGE_SIZE - 1);
        let end = va.checked_add(len).ok_or(SpaceError::BadAddress(va))?.next_multiple_of(PAGE_SIZE);
        let inside = self.region(first).is_some_and(|r| len > 0 && end <= r.end);
        if !inside {
            return Err(SpaceError::BadAddress(va));
        }
        let resident: Vec<u64> = self.pages.range(first, end).map(|p| p.va).collect();
        for &p in &resident {
            // Not VALID: the descriptor is cleared (the tables stay).
            self.map_range(p, p + PAGE_SIZE, 0, A::empty())?;
            if let Some(page) = self.pages.remove(p) {
                self.frames().free(page.pa);
            }
        }
        Ok(resident.len())
    }

    /// Gives the page at `va` a frame, for a touch that `write`s or not: the page alone, or its
    /// whole 16 KiB block within the region (`touch`). Returns how many pages it mapped (0 if
    /// the page was resident already: another touch came first). Never maps outside a region.
    pub fn touch(&mut self, va: u64, write: bool, touch: Touch) -> Result<usize, TouchError> {
        self.touch_span(va, write, touch).map(|t| t.mapped)
    }

    /// [`touch`](Self::touch), saying also which pages are resident now: every page of
    /// `[first, end)`, the page or block it touched, for any access the touch's would be
    /// allowed (a read after a write).
    pub fn touch_span(&mut self, va: u64, write: bool, touch: Touch) -> Result<Touched, TouchError> {
        let region = *self.region(va).ok_or(TouchError::Outside(va))?;
        if write && !region.permissions.write {
            return Err(TouchError::ReadOnly(va));
        }
        let page = va & !(PAGE_SIZE - 1);
        let (first, end) = match touch {
            Touch::Page => (page, page + PAGE_SIZE),
            Touch::Block => {
                let block = va & !(hal::pldma::BLOCK_BYTES - 1);
                (block.max(region.start), (block + hal::pldma::BLOCK_BYTES).min(region.end))
            }
        };
        // A block never crosses a level-3 table (2 MiB): one walk serves all its pages, unless
        // the table is still to be made (then `map_range` makes it, page by page).
        debug_assert_eq!(first >> 21, (end - 1) >> 21);
        let missing: heapless::Vec<u64, BLOCK_PAGES> = self.pages.absent(first, end).collect();
        let touched = |mapped| Touched { mapped, first, end };
        let Some(&first_missing) = missing.first() else { return Ok(touched(0)) };
        let Some(table) = self.leaf_table(first_missing) else {
            for &p in &missing {
                self.map_page_as(p, region.permissions, region.device).map_err(TouchError::Space)?;
            }
            return Ok(touched(missing.len()));
        };
        // The block's frames in one call (one lock of the pool), then their descriptors.
        let mut frames = [0; BLOCK_PAGES];
        let got = self.frames().alloc_zeroed_many(&mut frames[..missing.len()]);
        let mut pages = [UserPage { va: 0, pa: 0, permissions: region.permissions }; BLOCK_PAGES];
        for ((&va, &pa), page) in missing.iter().zip(&frames[..got]).zip(&mut pages) {
            self.map_frame_in(table, va, pa, region.permissions, region.device);
            *page = UserPage { va, pa, permissions: region.permissions };
        }
        self.pages.insert_all(&pages[..got]);
        if got < missing.len() {
            return Err(TouchError::Space(SpaceError::OutOfFrames));
        }
        Ok(touched(got))
    }

    /// Copies `bytes` into the space at `va` through the kernel's view of the frames.
    pub fn write(&mut self, va: u64, bytes: &[u8]) -> Result<(), SpaceError> {
        let mut done = 0usize;
        while done < bytes.len() {
            let at = va + done as u64;
            let page = self.copyable_page(at)?;
            let offset = (at - page.va) as usize;
            let n = (PAGE_SIZE as usize - offset).min(bytes.len() - done);
            let dst = self.frames().virt(page.pa);
            // SAFETY: the frame belongs to this space and `offset + n` stays inside it.
            unsafe { core::ptr::copy_nonoverlapping(bytes[done..].as_ptr(), dst.add(offset), n) };
            done += n;
        }
        Ok(())
    }

    /// Copies `bytes` into the space at `va` for the process (a system call's result): only if
    /// the process may write every byte of it, and then all of it.
    pub fn copy_to_user(&mut self, va: u64, bytes: &[u8]) -> Result<(), SpaceError> {
        let last = va.checked_add(bytes.len() as u64).ok_or(SpaceError::BadAddress(va))?;
        let mut at = va;
        while at < last {
            let page = self.copyable_page(at)?;
            if !page.permissions.write {
                return Err(SpaceError::BadAddress(at));
            }
            at = page.va + PAGE_SIZE;
        }
        self.write(va, bytes)
    }

    /// Copies `len` bytes from `va` out of the space, if the process may read all of them.
    pub fn read(&self, va: u64, out: &mut [u8]) -> Result<(), SpaceError> {
        let mut done = 0usize;
        while done < out.len() {
            let at = va.checked_add(done as u64).ok_or(SpaceError::BadAddress(va))?;
            let page = self.copyable_page(at)?;
            if !page.permissions.read {
                return Err(SpaceError::BadAddress(at));
            }
            let offset = (at - page.va) as usize;
            let n = (PAGE_SIZE as usize - offset).min(out.len() - done);
            let src = self.frames().virt(page.pa);
            // SAFETY: the frame belongs to this space and `offset + n` stays inside it.
            unsafe { core::ptr::copy_nonoverlapping(src.add(offset), out[done..].as_mut_ptr(), n) };
            done += n;
        }
        Ok(())
    }

    /// Maps and fills a program's segments; returns its entry point.
    pub fn load(&mut self, program: &Program<'_>) -> Result<u64, SpaceError> {
        for seg in &program.segments {
            let first = seg.vaddr & !(PAGE_SIZE - 1);
            let end = (seg.vaddr + seg.mem_size).next_multiple_of(PAGE_SIZE);
            for va in (first..end).step_by(PAGE_SIZE as usize) {
                self.map_page(va, seg.permissions)?;
            }
            self.write(seg.vaddr, seg.data)?;
        }
        Ok(program.entry)
    }

    /// The stack below `layout::STACK_TOP`: a region of `layout::STACK_SIZE` whose top page is
    /// mapped; it grows down a page at a time as the process touches it (the guard page under
    /// the region stays unmapped: an overflow is a real fault).
    pub fn map_stack(&mut self) -> Result<u64, SpaceError> {
        let rw = Permissions { read: true, write: true, execute: false };
        let start = layout::STACK_TOP - layout::STACK_SIZE;
        if self.region(start).is_some() || self.region(layout::STACK_TOP - 1).is_some() {
            return Err(SpaceError::BadAddress(start));
        }
        self.regions.push(Region { start, end: layout::STACK_TOP, permissions: rw, device: false });
        self.map_page(layout::STACK_TOP - PAGE_SIZE, rw)?;
        Ok(layout::STACK_TOP)
    }

    /// Gives every page of `[va, va + len)` that lies in a region a frame (a system call about
    /// to read or write them for the process); returns how many it mapped. A page outside every
    /// region must be mapped already, and writable for a `write`.
    pub fn make_resident(&mut self, va: u64, len: usize, write: bool) -> Result<usize, SpaceError> {
        if len == 0 {
            return Ok(0);
        }
        let end = va.checked_add(len as u64).ok_or(SpaceError::BadAddress(va))?;
        if layout::in_device_window(va) || layout::in_device_window(end - 1) {
            // The kernel does not copy device pages (`copyable_page`): no use giving them frames.
            return Err(SpaceError::BadAddress(va));
        }
        let mut mapped = 0;
        let mut at = va & !(PAGE_SIZE - 1);
        while at < end {
            match self.page(at) {
                Some(page) if write && !page.permissions.write => return Err(SpaceError::BadAddress(at)),
                Some(_) => {}
                None => {
                    mapped += self.touch(at, write, Touch::Page).map_err(|e| match e {
                        TouchError::Space(e) => e,
                        TouchError::Outside(a) | TouchError::ReadOnly(a) => SpaceError::BadAddress(a),
                    })?;
                }
            }
            at += PAGE_SIZE;
        }
        Ok(mapped)
    }
}

impl<F: FrameSource> Drop for AddressSpace<F> {
    fn drop(&mut self) {
        for p in self.pages.iter() {
            self.frames().free(p.pa);
        }
        self.frames().free(self.dma_root);
        // The mapping frees its own tables when it is dropped.
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::elf::{self, tests::elf};
    use crate::mm::test_frames::Arena;

    const RX: u32 = object::elf::PF_R | object::elf::PF_X;
    const RW: u32 = object::elf::PF_R | object::elf::PF_W;

    #[test]
    fn loads_a_program_and_reads_it_back_through_the_frames() {
        let arena = Arena::new(64);
        let code: Vec<u8> = (0..100u8).collect();
        let bytes = elf(
            object::elf::EM_AARCH64,
            layout::IMAGE_BASE,
            &[(layout::IMAGE_BASE, &code, 100, RX), (layout::IMAGE_BASE + 0x3000, &[7; 10], 0x1800, RW)],
        );
        let program = elf::parse(&bytes).unwrap();
        let mut space = AddressSpace::new(3, &arena);
        assert_eq!(space.load(&program).unwrap(), layout::IMAGE_BASE);
        space.map_stack().unwrap();
        let mut back = [0u8; 100];
        space.read(layout::IMAGE_BASE, &mut back).unwrap();
        assert_eq!(&back[..], &code[..]);
        let mut bss = [1u8; 16];
        space.read(layout::IMAGE_BASE + 0x3000 + 0x1000, &mut bss).unwrap();
        assert_eq!(bss, [0; 16], "memory beyond the file is zero");
        assert!(!space.page(layout::IMAGE_BASE).unwrap().permissions.write);
        assert_eq!(space.ttbr0() >> 48, 3);
        assert_eq!(
            space.read(layout::STACK_TOP - layout::STACK_SIZE - 8, &mut [0; 8]),
            Err(SpaceError::BadAddress(layout::STACK_TOP - layout::STACK_SIZE - 8)),
            "the guard page"
        );
        drop(space);
        assert_eq!(arena.used(), 0, "every page and table went back");
    }

    /// What `publish` hands to the cleaner: (kernel address, length) runs.
    fn published(space: &mut AddressSpace<&Arena>) -> Vec<(usize, usize)> {
        let mut runs = Vec::new();
        space.publish(|p, len| runs.push((p as usize, len)));
        runs
    }

    #[test]
    fn publishing_cleans_only_the_descriptor_lines_written_unless_a_table_was_added() {
        let arena = Arena::new(32);
        let mut space = AddressSpace::new(1, &arena);
        let rw = Permissions { read: true, write: true, execute: false };
        let region = space.map_region(64 * 1024, rw, false).unwrap();
        space.touch(region, true, Touch::Page).unwrap();
        let pages: Vec<(usize, usize)> = space.table_pages().map(|p| (p as usize, 4096)).collect();
        assert_eq!(published(&mut space), pages, "a new space: every table page");
        assert_eq!(published(&mut space), [], "nothing written since");
        // Touch-ahead maps the other three pages of the block: three descriptors in one line.
        assert_eq!(space.touch(region, true, Touch::Block), Ok(3));
        let runs = published(&mut space);
        let [(line, 64)] = runs[..] else { panic!("one line: {runs:?}") };
        assert!(pages.iter().any(|&(p, _)| (p..p + 4096).contains(&line)), "a line of a table page");
        assert_eq!(line % 64, 0);
        // Pages 8..16 of the region: descriptors 8..16 of the same table, two lines in one run.
        space.make_resident(region + 8 * PAGE_SIZE, 8 * PAGE_SIZE as usize, true).unwrap();
        let runs = published(&mut space);
        assert_eq!(runs, [(line + 64, 64)], "descriptors 8..16 are the line after 0..8");
        // Eviction clears descriptors: they are published too.
        space.evict(region, 4 * PAGE_SIZE).unwrap();
        assert_eq!(published(&mut space), [(line, 64)]);
        // A page far away needs a new table: everything again.
        space.map_page(layout::IMAGE_BASE, rw).unwrap();
        assert_eq!(published(&mut space).len(), space.table_pages().count());
    }

    #[test]
    fn bad_user_pointers_are_errors() {
        let arena = Arena::new(16);
        let mut space = AddressSpace::new(1, &arena);
        let rw = Permissions { read: true, write: true, execute: false };
        space.map_page(layout::IMAGE_BASE, rw).unwrap();
        assert_eq!(space.map_page(layout::IMAGE_BASE, rw), Err(SpaceError::BadAddress(layout::IMAGE_BASE)), "twice");
        assert_eq!(space.map_page(layout::IMAGE_BASE + 1, rw), Err(SpaceError::BadAddress(layout::IMAGE_BASE + 1)));
        assert_eq!(space.map_page(layout::USER_END, rw), Err(SpaceError::BadAddress(layout::USER_END)));
        let mut buf = [0u8; 16];
        assert!(space.read(layout::IMAGE_BASE + 4090, &mut buf).is_err(), "runs off the page");
        assert!(space.read(u64::MAX - 4, &mut buf).is_err());
        assert!(space.read(0, &mut buf).is_err());
    }

    #[test]
    fn copies_to_the_process_need_write_permission_for_every_byte() {
        let arena = Arena::new(16);
        let mut space = AddressSpace::new(1, &arena);
        let rw = Permissions { read: true, write: true, execute: false };
        let ro = Permissions { read: true, write: false, execute: false };
        space.map_page(layout::IMAGE_BASE, rw).unwrap();
        space.map_page(layout::IMAGE_BASE + PAGE_SIZE, ro).unwrap();
        space.copy_to_user(layout::IMAGE_BASE + 4090, b"abcdef").unwrap();
        let mut back = [0u8; 6];
        space.read(layout::IMAGE_BASE + 4090, &mut back).unwrap();
        assert_eq!(&back, b"abcdef");
        let crossing = layout::IMAGE_BASE + PAGE_SIZE - 2;
        assert_eq!(space.copy_to_user(crossing, b"wxyz"), Err(SpaceError::BadAddress(layout::IMAGE_BASE + PAGE_SIZE)));
        space.read(crossing, &mut back[..2]).unwrap();
        assert_eq!(&back[..2], b"ef", "nothing was written, not even the writable half");
        assert!(space.copy_to_user(u64::MAX - 2, b"abcd").is_err());
        assert!(space.copy_to_user(0, b"a").is_err());
    }

    #[test]
    fn uncached_pages_are_mapped_for_the_process_but_not_owned_and_tables_are_listed() {
        let arena = Arena::new(16);
        let mut space = AddressSpace::new(1, &arena);
        assert_eq!(space.table_pages().count(), 2, "the root table and the DMA view's");
        space.map_uncached(layout::RDMA_QUEUE_SET, 0x8000, 2).unwrap();
        assert_eq!(space.table_pages().count(), 4, "both roots, level 2, level 3");
        assert!(space.page(layout::RDMA_QUEUE_SET).is_none(), "not the space's pages: never freed with it");
        assert!(space.read(layout::RDMA_QUEUE_SET, &mut [0; 4]).is_err(), "system calls do not read it");
        let bad = |va, pa, pages| space_error(&arena, va, pa, pages);
        assert_eq!(bad(layout::RDMA_QUEUE_SET + 8, 0x8000, 1), Err(SpaceError::BadAddress(layout::RDMA_QUEUE_SET + 8)));
        assert_eq!(bad(layout::RDMA_QUEUE_SET, 0x8008, 1), Err(SpaceError::BadAddress(layout::RDMA_QUEUE_SET)));
        assert_eq!(bad(layout::USER_END - PAGE_SIZE, 0, 2), Err(SpaceError::BadAddress(layout::USER_END - PAGE_SIZE)));
        assert_eq!(bad(!0xfff_u64, 0, 2), Err(SpaceError::BadAddress(!0xfff_u64)));
        let (window_end, regions) = (layout::DEVICE_WINDOW + layout::DEVICE_WINDOW_SIZE, layout::REGIONS_START);
        assert_eq!(bad(regions, 0x8000, 1), Err(SpaceError::BadAddress(regions)), "outside the device window");
        assert_eq!(
            bad(window_end - PAGE_SIZE, 0, 2),
            Err(SpaceError::BadAddress(window_end - PAGE_SIZE)),
            "across its end"
        );
        assert_eq!(bad(layout::RDMA_QUEUE_SET, 0x8000, 0), Err(SpaceError::BadAddress(layout::RDMA_QUEUE_SET)));
        let mut other = AddressSpace::new(3, &arena);
        assert_eq!(other.map_device(regions, 0x8000), Err(SpaceError::BadAddress(regions)), "a device page outside it");
        drop(other);
        let rw = Permissions { read: true, write: true, execute: false };
        space.map_page(layout::IMAGE_BASE, rw).unwrap();
        assert_eq!(
            space.map_uncached(layout::IMAGE_BASE, 0x8000, 1),
            Err(SpaceError::BadAddress(layout::IMAGE_BASE)),
            "over a page of the space"
        );
        drop(space);
        assert_eq!(arena.used(), 0, "the tables went back, the uncached frames were never taken");
    }

    #[test]
    fn uncached_pages_are_unmapped_without_being_freed_and_only_they() {
        let arena = Arena::new(16);
        let mut space = AddressSpace::new(1, &arena);
        let log = layout::active_log(3);
        space.map_uncached(log, 0x20_0000, 5).unwrap();
        assert_eq!(space.translate(log + 0x4008), Some(0x20_4008), "the header page, after the ring");
        // Only in the device window, and never a page of the space's own.
        let rw = Permissions { read: true, write: true, execute: false };
        space.map_page(layout::IMAGE_BASE, rw).unwrap();
        assert_eq!(space.unmap_borrowed(layout::IMAGE_BASE, 1), Err(SpaceError::BadAddress(layout::IMAGE_BASE)));
        let device = space.map_region(PAGE_SIZE, rw, true).unwrap();
        space.touch(device, true, Touch::Page).unwrap();
        assert_eq!(space.unmap_borrowed(device, 1), Err(SpaceError::BadAddress(device)));
        assert_eq!(space.unmap_borrowed(log + 8, 1), Err(SpaceError::BadAddress(log + 8)));
        assert!(space.translate(layout::IMAGE_BASE).is_some() && space.translate(device).is_some());
        let used = arena.used();
        assert_eq!(space.unmap_borrowed(log, 5), Ok(5));
        assert!((0..5).all(|p| space.translate(log + p * PAGE_SIZE).is_none()), "gone for the CPU");
        assert_eq!(arena.used(), used, "no frame freed: they were never the space's");
        assert_eq!(space.unmap_borrowed(log, 5), Ok(0), "nothing left to unmap");
        // The place can be mapped again (the next owner of the IUID, in another process, alike).
        space.map_uncached(log, 0x30_0000, 5).unwrap();
        assert_eq!(space.translate(log), Some(0x30_0000));
        drop(space);
        assert_eq!(arena.used(), 0);
    }

    /// The first-level descriptors of the CPU's view and of the DMA view.
    fn roots(space: &AddressSpace<&Arena>) -> (Vec<u64>, Vec<u64>) {
        let read = |pa: u64| {
            let table = space.frames().virt(pa) as *const u64;
            // SAFETY: a table frame of the arena, 512 descriptors.
            (0..ENTRIES).map(|i| unsafe { table.add(i).read() }).collect()
        };
        (read(space.mapping.root_address().0 as u64), read(space.dma_root))
    }

    #[test]
    fn the_dma_view_is_the_process_but_for_the_device_window() {
        let arena = Arena::new(32);
        let mut space = AddressSpace::new(1, &arena);
        let rw = Permissions { read: true, write: true, execute: false };
        let memory = space.map_region(PAGE_SIZE, rw, false).unwrap();
        let device = space.map_region(2 * PAGE_SIZE, rw, true).unwrap();
        assert!(!layout::in_device_window(memory));
        assert!(layout::in_device_window(device) && device == layout::DEVICE_REGIONS_START);
        assert_eq!(space.map_region(PAGE_SIZE, rw, true), Ok(device + 3 * PAGE_SIZE), "two pages, a page of gap");
        space.touch(memory, true, Touch::Page).unwrap();
        space.touch(device, true, Touch::Page).unwrap();
        space.map_uncached(layout::RDMA_QUEUE_SET, 0x8000, 1).unwrap();
        let (cpu, dma) = roots(&space);
        assert_ne!(cpu[DEVICE_WINDOW_ENTRY], 0, "the CPU reaches the device window");
        assert_eq!(dma[DEVICE_WINDOW_ENTRY], 0, "the engine does not");
        for i in (0..ENTRIES).filter(|&i| i != DEVICE_WINDOW_ENTRY) {
            assert_eq!(cpu[i], dma[i], "entry {i} is shared");
        }
        assert_ne!(cpu[(memory >> 30) as usize], 0);
        assert_eq!(space.dma_ttbr0() >> 48, 1, "the ASID");
        assert_eq!(space.dma_ttbr0() & 0xffff_ffff_ffff, space.dma_root);
        // A device page is device memory for the CPU; a region's page is normal memory.
        let attributes = |va| {
            let mut found = None;
            let _ = space.mapping.walk_range(&MemoryRegion::new(va as usize, va as usize + 1), &mut |_, d, level| {
                if level == 3 {
                    found = Some(d.flags() & A::ATTRIBUTE_INDEX_MASK);
                }
                Ok(())
            });
            found
        };
        assert_eq!(attributes(device), Some(boot_attrs::DEVICE));
        assert_eq!(attributes(memory), Some(boot_attrs::NORMAL));
        assert_eq!(*arena.uncached.borrow(), [space.page(device).unwrap().pa], "only the device page left the caches");
        // The kernel copies through its cached view: never a device page.
        assert_eq!(space.read(device, &mut [0; 8]), Err(SpaceError::BadAddress(device)));
        assert_eq!(space.copy_to_user(device, &[1; 8]), Err(SpaceError::BadAddress(device)));
        assert_eq!(space.make_resident(device + PAGE_SIZE, 8, true), Err(SpaceError::BadAddress(device + PAGE_SIZE)));
        assert!(space.page(device + PAGE_SIZE).is_none(), "nor given a frame for a system call");
        space.read(memory, &mut [0; 8]).unwrap();
        assert!(space.map_region(layout::DEVICE_REGIONS_END - layout::DEVICE_REGIONS_START, rw, true).is_err());
        drop(space);
        assert_eq!(arena.used(), 0, "the DMA view's root went back too");
    }

    /// Every leaf descriptor of `[va, end)`: (address, output address, flags), invalid ones too.
    fn leaves(space: &AddressSpace<&Arena>, va: u64, end: u64) -> Vec<(usize, u64, A)> {
        let mut out = Vec::new();
        let _ = space.mapping.walk_range(&MemoryRegion::new(va as usize, end as usize), &mut |r, d, level| {
            assert_eq!(level, 3);
            out.push((r.start().0, d.output_address().0 as u64, d.flags()));
            Ok(())
        });
        out
    }

    #[test]
    fn a_touch_in_an_existing_table_writes_what_map_range_writes() {
        let arena = Arena::new(64);
        let rw = Permissions { read: true, write: true, execute: false };
        let (mut fast, mut slow) = (AddressSpace::new(1, &arena), AddressSpace::new(2, &arena));
        for device in [false, true] {
            let block = hal::pldma::BLOCK_BYTES;
            let (a, b) =
                (fast.map_region(2 * block, rw, device).unwrap(), slow.map_region(2 * block, rw, device).unwrap());
            assert_eq!(a, b);
            // The first touch makes the tables (`map_range`); the second block's is the fast path.
            assert_eq!(fast.touch(a, true, Touch::Page), Ok(1));
            published(&mut fast);
            assert!(fast.leaf_table(a + block).is_some());
            assert!(fast.leaf_table(a + (1 << 21) * 8).is_none(), "no table there yet");
            assert_eq!(fast.touch(a + block + 5, true, Touch::Block), Ok(4));
            for p in (b..b + 2 * block).step_by(PAGE_SIZE as usize).filter(|&p| p == b || p >= b + block) {
                slow.map_page_as(p, rw, device).unwrap();
            }
            let (f, s) = (leaves(&fast, a, a + 2 * block), leaves(&slow, b, b + 2 * block));
            assert_eq!(f.len(), s.len());
            for ((va, pa, flags), (_, _, slow_flags)) in f.iter().zip(&s) {
                assert_eq!(flags, slow_flags, "the descriptor of {va:#x}");
                if flags.contains(A::VALID) {
                    assert_eq!(*pa, fast.page(*va as u64).unwrap().pa, "{va:#x} maps its frame");
                }
            }
            // The fast path's four descriptors are published: one cache line.
            let runs = published(&mut fast);
            assert_eq!(runs.len(), 1, "{runs:?}");
            assert_eq!(fast.touch(a + block, true, Touch::Block), Ok(0), "all resident: nothing to do");
            assert!(published(&mut fast).is_empty());
        }
        drop((fast, slow));
        assert_eq!(arena.used(), 0);
    }

    fn space_error(arena: &Arena, va: u64, pa: u64, pages: u64) -> Result<(), SpaceError> {
        AddressSpace::new(2, arena).map_uncached(va, pa, pages)
    }

    #[test]
    fn regions_get_pages_when_touched_and_give_them_back_when_evicted() {
        let arena = Arena::new(64);
        let mut space = AddressSpace::new(1, &arena);
        let rw = Permissions { read: true, write: true, execute: false };
        let ro = Permissions { read: true, write: false, execute: false };
        let a = space.map_region(5 * PAGE_SIZE + 1, rw, false).unwrap();
        assert_eq!(a, layout::REGIONS_START);
        let b = space.map_region(PAGE_SIZE, ro, false).unwrap();
        assert_eq!(b, a + 7 * PAGE_SIZE, "six pages, then a page of gap");
        assert!(space.page(a).is_none(), "nothing resident before a touch");
        assert_eq!(space.touch(a + 5, true, Touch::Page), Ok(1));
        assert_eq!(space.touch(a + 7, false, Touch::Page), Ok(0), "resident already");
        assert_eq!(space.touch(a + 2 * PAGE_SIZE, true, Touch::Block), Ok(3), "the rest of its 16 KiB block");
        assert_eq!(space.touch(a + 5 * PAGE_SIZE, true, Touch::Block), Ok(2), "its block, cut at the region's end");
        assert!(space.page(a + 6 * PAGE_SIZE).is_none(), "never outside the region");
        assert_eq!(space.touch(a + 6 * PAGE_SIZE, true, Touch::Page), Err(TouchError::Outside(a + 6 * PAGE_SIZE)));
        assert_eq!(space.touch(b, true, Touch::Page), Err(TouchError::ReadOnly(b)));
        assert_eq!(space.touch(b, false, Touch::Page), Ok(1));
        space.write(a + 100, b"resident").unwrap();
        assert_eq!(space.evict(a, PAGE_SIZE), Ok(1));
        assert!(space.read(a + 100, &mut [0; 8]).is_err(), "not resident: system calls see no page");
        assert_eq!(space.touch(a + 100, false, Touch::Page), Ok(1));
        let mut back = [1u8; 8];
        space.read(a + 100, &mut back).unwrap();
        assert_eq!(back, [0; 8], "a touched page after an eviction is zeroed");
        assert_eq!(space.evict(a, 7 * PAGE_SIZE), Err(SpaceError::BadAddress(a)), "past the region");
        assert_eq!(space.evict(a + 6 * PAGE_SIZE, 1), Err(SpaceError::BadAddress(a + 6 * PAGE_SIZE)));
        assert_eq!(space.unmap_region(a, 5 * PAGE_SIZE), Err(SpaceError::BadAddress(a)), "not the whole region");
        assert_eq!(space.unmap_region(a, 5 * PAGE_SIZE + 1), Ok(6));
        assert_eq!(space.touch(a, false, Touch::Page), Err(TouchError::Outside(a)));
        assert_eq!(space.unmap_region(b, PAGE_SIZE), Ok(1));
        assert_eq!(arena.used(), space.table_pages().count(), "every page went back; the tables stay until the end");
        assert!(space.map_region(0, rw, false).is_err());
        assert!(space.map_region(u64::MAX, rw, false).is_err());
        assert!(space.map_region(layout::REGIONS_END - layout::REGIONS_START, rw, false).is_err(), "past the area");
        drop(space);
        assert_eq!(arena.used(), 0);
    }

    #[test]
    fn fixed_regions_go_where_asked_and_placement_goes_around_them() {
        let arena = Arena::new(64);
        let mut space = AddressSpace::new(1, &arena);
        let rw = Permissions { read: true, write: true, execute: false };
        let start = layout::REGIONS_START;
        // Fixed at the third page: the first placed region (two pages) would touch it.
        let fixed = start + 2 * PAGE_SIZE;
        assert_eq!(space.map_region_at(fixed, 3 * PAGE_SIZE, rw), Ok(fixed));
        let placed = space.map_region(2 * PAGE_SIZE, rw, false).unwrap();
        assert_eq!(placed, fixed + 4 * PAGE_SIZE, "past the fixed region and a page of gap");
        assert_eq!(space.map_region(PAGE_SIZE, rw, false), Ok(placed + 3 * PAGE_SIZE));
        let refused = [
            (fixed + 2 * PAGE_SIZE, PAGE_SIZE, "overlaps the fixed region"),
            (fixed - PAGE_SIZE, 2 * PAGE_SIZE, "overlaps its start"),
            (placed + 1, PAGE_SIZE, "not page-aligned"),
            (start - PAGE_SIZE, PAGE_SIZE, "below the regions range"),
            (layout::REGIONS_END - PAGE_SIZE, 2 * PAGE_SIZE, "past its end"),
            (layout::SYMMETRIC_HEAP, 0, "empty"),
            (layout::SYMMETRIC_HEAP, u64::MAX, "too long"),
            (layout::DEVICE_REGIONS_START, PAGE_SIZE, "device window"),
        ];
        for (at, len, why) in refused {
            assert_eq!(space.map_region_at(at, len, rw), Err(SpaceError::BadAddress(at)), "{why}");
        }
        let heap = space.map_region_at(layout::SYMMETRIC_HEAP, layout::SYMMETRIC_HEAP_MAX, rw).unwrap();
        assert_eq!(heap, layout::SYMMETRIC_HEAP);
        assert!(space.page(heap).is_none(), "nothing resident");
        assert_eq!(space.touch(heap + layout::SYMMETRIC_HEAP_MAX - 8, true, Touch::Page), Ok(1));
        assert_eq!(space.map_region_at(fixed + 3 * PAGE_SIZE, PAGE_SIZE, rw), Ok(fixed + 3 * PAGE_SIZE), "adjacent");
        assert_eq!(space.unmap_region(fixed, 3 * PAGE_SIZE), Ok(0), "a fixed region is unmapped as any other");
        assert_eq!(space.map_region_at(fixed, 3 * PAGE_SIZE, rw), Ok(fixed), "and its range may be taken again");
    }

    #[test]
    fn placement_skips_a_fixed_region_that_fills_the_rest_of_the_range() {
        let arena = Arena::new(64);
        let mut space = AddressSpace::new(1, &arena);
        let rw = Permissions { read: true, write: true, execute: false };
        let end = layout::REGIONS_END - PAGE_SIZE;
        space.map_region_at(layout::REGIONS_START + PAGE_SIZE, end - layout::REGIONS_START - PAGE_SIZE, rw).unwrap();
        let past = layout::REGIONS_END;
        assert_eq!(space.map_region(PAGE_SIZE, rw, false), Err(SpaceError::BadAddress(past)), "no room after the gap");
        assert_eq!(space.map_region(PAGE_SIZE, rw, false), Err(SpaceError::BadAddress(past)), "nothing was taken");
        assert!(space.map_region(PAGE_SIZE, rw, true).is_ok(), "device regions are elsewhere");
    }

    #[test]
    fn the_stack_grows_on_touch_and_system_calls_make_region_pages_resident() {
        let arena = Arena::new(64);
        let mut space = AddressSpace::new(1, &arena);
        let top = space.map_stack().unwrap();
        assert!(space.page(top - 8).is_some(), "the top page is there from the start");
        assert!(space.page(top - PAGE_SIZE - 8).is_none(), "the rest comes on touch");
        assert_eq!(space.touch(top - 3 * PAGE_SIZE, true, Touch::Page), Ok(1), "the stack grows");
        let bottom = top - layout::STACK_SIZE;
        assert_eq!(space.touch(bottom - 8, true, Touch::Page), Err(TouchError::Outside(bottom - 8)), "the guard");
        assert_eq!(space.make_resident(top - 6 * PAGE_SIZE - 10, 2 * PAGE_SIZE as usize, true), Ok(3));
        space.copy_to_user(top - 6 * PAGE_SIZE - 10, &[1; 20]).unwrap();
        assert_eq!(space.make_resident(bottom - 8, 16, false), Err(SpaceError::BadAddress(bottom - PAGE_SIZE)));
        assert_eq!(space.make_resident(bottom - 8, 0, false), Ok(0));
        let ro = Permissions { read: true, write: false, execute: false };
        space.map_page(layout::IMAGE_BASE, ro).unwrap();
        assert_eq!(space.make_resident(layout::IMAGE_BASE, 8, false), Ok(0), "mapped already");
        assert_eq!(
            space.make_resident(layout::IMAGE_BASE, 8, true),
            Err(SpaceError::BadAddress(layout::IMAGE_BASE)),
            "a read-only page is not written"
        );
        let r = space.map_region(PAGE_SIZE, ro, false).unwrap();
        assert_eq!(space.make_resident(r, 8, true), Err(SpaceError::BadAddress(r)), "nor a read-only region");
        assert!(space.map_stack().is_err(), "one stack");
        drop(space);
        assert_eq!(arena.used(), 0);
    }

    #[test]
    fn touched_pages_read_zero_whether_their_frames_were_zeroed_ahead_or_not() {
        let arena = Arena::new(crate::mm::frames::ZEROED_FLOOR + 48);
        let mut space = AddressSpace::new(1, &arena);
        let rw = Permissions { read: true, write: true, execute: false };
        let blocks = 24;
        let a = space.map_region(blocks * hal::pldma::BLOCK_BYTES, rw, false).unwrap();
        // The tables first (its frames zeroed by the taker), then every free frame dirty, then
        // some zeroed ahead: a block's touch takes those first, then dirty ones to zero.
        assert_eq!(space.touch(a, true, Touch::Page), Ok(1));
        arena.dirty_free_frames(0xa5);
        let ahead = arena.zero_ahead();
        assert!(ahead > 0 && ahead < 4 * blocks as usize, "{ahead} frames zeroed ahead");
        for b in 0..blocks {
            assert!(space.touch(a + b * hal::pldma::BLOCK_BYTES, true, Touch::Block).unwrap() > 0);
        }
        let mut page = [1u8; PAGE_SIZE as usize];
        for p in (a..a + blocks * hal::pldma::BLOCK_BYTES).step_by(PAGE_SIZE as usize) {
            space.read(p, &mut page).unwrap();
            assert!(page.iter().all(|&b| b == 0), "the page at {p:#x} reads zero");
        }
        drop(space);
        assert_eq!(arena.used(), 0);
    }

    #[test]
    fn a_block_touch_that_runs_out_of_frames_maps_what_it_got_and_says_so() {
        let arena = Arena::new(16);
        let mut space = AddressSpace::new(1, &arena);
        let rw = Permissions { read: true, write: true, execute: false };
        let block = hal::pldma::BLOCK_BYTES;
        let a = space.map_region(8 * block, rw, false).unwrap();
        assert_eq!(space.touch(a, true, Touch::Page), Ok(1), "the tables");
        let mut err = None;
        for b in 0..8 {
            if let Err(e) = space.touch(a + b * block, true, Touch::Block) {
                err = Some((b, e));
                break;
            }
        }
        let (b, e) = err.expect("16 frames run out");
        assert_eq!(e, TouchError::Space(SpaceError::OutOfFrames));
        let mapped = (0..4).filter(|i| space.page(a + b * block + i * PAGE_SIZE).is_some()).count();
        assert!(mapped < 4, "the block is mapped in part: {mapped} pages");
        drop(space);
        assert_eq!(arena.used(), 0);
    }

    #[test]
    fn running_out_of_frames_is_an_error_and_leaks_nothing() {
        let arena = Arena::new(8);
        let mut space = AddressSpace::new(1, &arena);
        let rw = Permissions { read: true, write: true, execute: false };
        let mut mapped = 0;
        while space.map_page(layout::IMAGE_BASE + mapped * PAGE_SIZE, rw).is_ok() {
            mapped += 1;
        }
        assert!(mapped >= 1);
        drop(space);
        assert_eq!(arena.used(), 0);
    }
}
