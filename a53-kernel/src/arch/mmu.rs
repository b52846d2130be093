//! The kernel's TTBR1 page tables, built with `aarch64-paging` from the [`kernel_map`] plan.
//!
//! [`kernel_map`]: crate::mm::kernel_map

use crate::mm::kernel_map::{self, Attr, ImageLayout, PlanError};
use aarch64_cpu::asm::barrier;
use aarch64_cpu::registers::{ReadWriteable, TCR_EL1, TTBR0_EL1, Writeable};
use aarch64_paging::descriptor::{El1Attributes as A, PhysicalAddress};
use aarch64_paging::linearmap::LinearTranslation;
use aarch64_paging::paging::{Constraints, El1And0, MemoryRegion, VaRange};
use aarch64_paging::{MapError, Mapping};
use board::Board as _;
use board::layout::{KERNEL_IMAGE_VA_OFFSET, KERNEL_STACK_GUARD, KERNEL_STACK_SIZE, KERNEL_VA_OFFSET};
use core::arch::asm;
use core::sync::atomic::{AtomicU64, Ordering};
use spin::Once;

use super::virt_to_phys;
use crate::Board;
use boot::a53::mair;

const fn attr_index(index: u64) -> A {
    A::from_bits_retain((index as usize) << 2)
}

/// Whether an entry belongs to the kernel image (and so is also mapped in the image view).
fn in_image(attr: Attr) -> bool {
    matches!(attr, Attr::KernelText | Attr::KernelRodata | Attr::KernelData)
}

fn descriptor_flags(attr: Attr) -> A {
    let normal = A::VALID | A::ACCESSED | A::INNER_SHAREABLE | attr_index(mair::NORMAL);
    match attr {
        Attr::KernelText => normal | A::READ_ONLY | A::UXN,
        Attr::KernelRodata => normal | A::READ_ONLY | A::UXN | A::PXN,
        Attr::KernelData | Attr::Normal => normal | A::UXN | A::PXN,
        Attr::SharedUncached => {
            A::VALID | A::ACCESSED | A::OUTER_SHAREABLE | attr_index(mair::NORMAL_NC) | A::UXN | A::PXN
        }
        Attr::Device => A::VALID | A::ACCESSED | attr_index(mair::DEVICE) | A::UXN | A::PXN,
    }
}

#[derive(Debug)]
pub enum MmuError {
    Plan(PlanError),
    Map(MapError),
}

unsafe extern "C" {
    static __kernel_start: u8;
    static __text_end: u8;
    static __rodata_end: u8;
    static __stacks_start: u8;
    static __stacks_end: u8;
}

fn symbol_pa(symbol: &u8) -> u64 {
    virt_to_phys(symbol as *const u8 as usize)
}

/// The image's sections, from the linker symbols.
pub fn image_layout() -> ImageLayout {
    // SAFETY: only the addresses of these linker-defined symbols are taken.
    let (start, text_end, rodata_end, stacks_start, stacks_end) = unsafe {
        (
            symbol_pa(&__kernel_start),
            symbol_pa(&__text_end),
            symbol_pa(&__rodata_end),
            symbol_pa(&__stacks_start),
            symbol_pa(&__stacks_end),
        )
    };
    ImageLayout {
        text: start..text_end,
        rodata: text_end..rodata_end,
        data: rodata_end..stacks_start,
        stacks: stacks_start..stacks_end,
        stack_guard: KERNEL_STACK_GUARD,
        stack_size: KERNEL_STACK_SIZE,
    }
}

type KernelMap = Mapping<LinearTranslation<A>, El1And0>;

static KERNEL_MAP: Once<KernelMap> = Once::new();
/// TTBR1 value (root table PA) for the secondary cores.
static KERNEL_TTBR1: AtomicU64 = AtomicU64::new(0);

fn map(map: &mut KernelMap, view_offset: u64, pa: &core::ops::Range<u64>, flags: A) -> Result<(), MmuError> {
    let va = MemoryRegion::new((view_offset + pa.start) as usize, (view_offset + pa.end) as usize);
    map.map_range(&va, PhysicalAddress(pa.start as usize), flags, Constraints::empty()).map_err(MmuError::Map)
}

/// Builds the kernel map from the board and switches this (boot) core to it. Needs the heap.
///
/// Every planned range is mapped in the linear map, where nothing is executable; the image's
/// ranges are mapped once more in the image view, with their own permissions.
pub fn init_kernel_map() -> Result<(), MmuError> {
    let plan = kernel_map::plan(Board::A53_MEMORY, &image_layout()).map_err(MmuError::Plan)?;
    // Page tables come from the heap, which lives in the linear map.
    let translation = LinearTranslation::new(KERNEL_VA_OFFSET.wrapping_neg() as isize);
    let mut kernel_map = KernelMap::with_asid_and_va_range(translation, 0, 1, El1And0, VaRange::Upper);
    for entry in &plan {
        map(&mut kernel_map, KERNEL_VA_OFFSET, &entry.pa, descriptor_flags(entry.attr) | A::PXN)?;
        if in_image(entry.attr) {
            map(&mut kernel_map, KERNEL_IMAGE_VA_OFFSET, &entry.pa, descriptor_flags(entry.attr))?;
        }
    }
    let root = kernel_map.root_address().0 as u64;
    KERNEL_MAP.call_once(|| kernel_map);
    KERNEL_TTBR1.store(root, Ordering::Release);
    switch_to_kernel_map();
    Ok(())
}

/// Loads the kernel map into TTBR1 on this core and turns off TTBR0 walks until a process
/// runs, so that a stray low address (a null pointer) faults instead of hitting the boot map.
pub fn switch_to_kernel_map() {
    let root = KERNEL_TTBR1.load(Ordering::Acquire);
    assert!(root != 0, "kernel map not built");
    // SAFETY: the new table maps the kernel exactly where the boot table did (same VA -> PA for
    // every address the kernel uses), so execution continues; TLBs are invalidated afterwards.
    unsafe {
        asm!(
            "dsb ishst",
            "msr ttbr1_el1, {root}",
            "isb",
            "mrs {tcr}, tcr_el1",
            "orr {tcr}, {tcr}, #(1 << 7)", // EPD0
            "msr tcr_el1, {tcr}",
            "isb",
            "tlbi vmalle1",
            "dsb nsh",
            "isb",
            root = in(reg) root,
            tcr = out(reg) _,
            options(nostack),
        );
    }
}

/// Invalidates every TLB entry of `asid` on every core of the inner-shareable domain, after the
/// table stores before it are visible to the walkers.
pub fn tlbi_asid(asid: u16) {
    // SAFETY: TLB maintenance and barriers only; no memory is accessed.
    unsafe {
        asm!("dsb ishst", "tlbi aside1is, {}", "dsb ish", "isb", in(reg) u64::from(asid) << 48, options(nostack));
    }
}

/// Makes `ttbr0` (a process's root table and ASID) the low half of this core's address space,
/// or, with `None`, turns TTBR0 walks off (TCR_EL1.EPD0), so that a stray low address faults
/// while no process runs.
pub fn switch_user_table(ttbr0: Option<u64>) {
    match ttbr0 {
        Some(value) => {
            TTBR0_EL1.set(value);
            barrier::isb(barrier::SY);
            TCR_EL1.modify(TCR_EL1::EPD0::EnableTTBR0Walks);
        }
        None => TCR_EL1.modify(TCR_EL1::EPD0::DisableTTBR0Walks),
    }
    barrier::isb(barrier::SY);
}

/// Zeroes the 4 KiB page at `page` (a kernel address of normal memory, page-aligned) with DC
/// ZVA, one block (DCZID_EL0.BS: 64 bytes on the A53) per instruction, or with stores where
/// DC ZVA is prohibited (DCZID_EL0.DZP).
///
/// # Safety
/// `page` must be a page of normal memory the caller may overwrite, mapped writable.
pub unsafe fn zero_page(page: *mut u8) {
    const PAGE: usize = 4096;
    let dczid: u64;
    // SAFETY: reads an identification register.
    unsafe { asm!("mrs {}, dczid_el0", out(reg) dczid, options(nomem, nostack, preserves_flags)) };
    let block = 4usize << (dczid & 0xf);
    if dczid & 1 << 4 != 0 || block > PAGE {
        // SAFETY: the caller's page (this function's contract).
        unsafe { page.write_bytes(0, PAGE) };
        return;
    }
    for at in (page as usize..page as usize + PAGE).step_by(block) {
        // SAFETY: zeroes one block of the caller's page (normal memory: DC ZVA applies).
        unsafe { asm!("dc zva, {}", in(reg) at, options(nostack, preserves_flags)) };
    }
}

/// Cleans the data cache lines of `[start, start + len)` to the point of coherency, so that a
/// walker that does not snoop the A53s' caches (the SMMU on the ZynqMP: IDR0.CTTW = 0) reads
/// what the kernel wrote.
pub fn clean_to_poc(start: *const u8, len: usize) {
    for line in lines(start, len) {
        // SAFETY: cache maintenance by VA on memory the kernel maps; no data changes.
        unsafe { asm!("dc cvac, {}", in(reg) line, options(nostack)) };
    }
    // SAFETY: a barrier only.
    unsafe { asm!("dsb sy", options(nostack)) };
}

/// Cleans and invalidates the data cache lines of `[start, start + len)` to the point of
/// coherency: what the kernel wrote reaches memory and no line of it stays cached, for a
/// mapping that bypasses the caches (a process's device page).
pub fn clean_invalidate_to_poc(start: *const u8, len: usize) {
    for line in lines(start, len) {
        // SAFETY: cache maintenance by VA on memory the kernel maps; no data changes.
        unsafe { asm!("dc civac, {}", in(reg) line, options(nostack)) };
    }
    // SAFETY: a barrier only.
    unsafe { asm!("dsb sy", options(nostack)) };
}

/// The cache lines that `[start, start + len)` touches.
fn lines(start: *const u8, len: usize) -> impl Iterator<Item = usize> {
    use crate::mm::CACHE_LINE as LINE;
    let begin = start as usize & !(LINE - 1);
    (begin..start as usize + len).step_by(LINE)
}
