//! The kernel's view of physical memory, planned from the board description and the image's
//! own sections. `arch::mmu` turns the plan into TTBR1 page tables.
//!
//! - board `Ram`: normal write-back, read/write, never executable; except the kernel image,
//!   whose text is read-only executable, rodata read-only, data/bss read/write, and the
//!   per-core stacks read/write with an unmapped guard page below each;
//! - `SharedUncached`: normal non-cacheable (shared with the RPU and the host platform);
//! - `Device`: device nGnRE;
//! - `Forwarded`: not mapped at all, so accesses trap (QEMU's PL, SMMU and remote window).

use board::{Region, RegionKind};
use core::ops::Range;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attr {
    KernelText,
    KernelRodata,
    KernelData,
    Normal,
    SharedUncached,
    Device,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapEntry {
    /// Physical range; the kernel maps it at `KERNEL_VA_OFFSET + pa`.
    pub pa: Range<u64>,
    pub attr: Attr,
}

/// The image's sections as physical ranges (from the linker symbols).
#[derive(Clone, Debug)]
pub struct ImageLayout {
    pub text: Range<u64>,
    pub rodata: Range<u64>,
    pub data: Range<u64>,
    pub stacks: Range<u64>,
    pub stack_guard: u64,
    pub stack_size: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlanError {
    TooManyEntries,
    ImageOutsideRam,
}

pub const MAX_ENTRIES: usize = 48;
pub type Plan = heapless::Vec<MapEntry, MAX_ENTRIES>;

fn region_attr(kind: RegionKind) -> Option<Attr> {
    match kind {
        RegionKind::Ram | RegionKind::Code => Some(Attr::Normal),
        RegionKind::SharedUncached => Some(Attr::SharedUncached),
        RegionKind::Device => Some(Attr::Device),
        RegionKind::Forwarded => None,
    }
}

/// The image's pieces in address order; `None` marks a stack guard page (left unmapped).
fn image_pieces(image: &ImageLayout) -> heapless::Vec<(Range<u64>, Option<Attr>), 24> {
    let mut pieces = heapless::Vec::new();
    let mut push = |r: Range<u64>, a| {
        if r.start < r.end {
            let _ = pieces.push((r, a));
        }
    };
    push(image.text.clone(), Some(Attr::KernelText));
    push(image.rodata.clone(), Some(Attr::KernelRodata));
    push(image.data.start..image.stacks.start, Some(Attr::KernelData));
    let slot = image.stack_guard + image.stack_size;
    let mut at = image.stacks.start;
    while at + slot <= image.stacks.end {
        push(at..at + image.stack_guard, None);
        push(at + image.stack_guard..at + slot, Some(Attr::KernelData));
        at += slot;
    }
    pieces
}

pub fn plan(regions: &[Region], image: &ImageLayout) -> Result<Plan, PlanError> {
    let pieces = image_pieces(image);
    let image_span = image.text.start..image.stacks.end;
    let mut plan = Plan::new();
    let mut push = |pa: Range<u64>, attr: Attr| plan.push(MapEntry { pa, attr }).map_err(|_| PlanError::TooManyEntries);
    let mut image_placed = false;
    for region in regions {
        let Some(attr) = region_attr(region.kind) else { continue };
        let inside = region.base <= image_span.start && image_span.end <= region.end();
        if !inside {
            push(region.base..region.end(), attr)?;
            continue;
        }
        if attr != Attr::Normal {
            return Err(PlanError::ImageOutsideRam);
        }
        image_placed = true;
        let mut cursor = region.base;
        for (range, piece_attr) in &pieces {
            if cursor < range.start {
                push(cursor..range.start, attr)?;
            }
            if let Some(a) = piece_attr {
                push(range.clone(), *a)?;
            }
            cursor = range.end;
        }
        if cursor < region.end() {
            push(cursor..region.end(), attr)?;
        }
    }
    if image_placed { Ok(plan) } else { Err(PlanError::ImageOutsideRam) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use board::{Board, zcu102_qemu::Zcu102Qemu};

    fn image() -> ImageLayout {
        let base = Zcu102Qemu::DDR_LAYOUT.kernel_image;
        ImageLayout {
            text: base..base + 0x2_0000,
            rodata: base + 0x2_0000..base + 0x3_0000,
            data: base + 0x3_0000..base + 0x3_8000,
            stacks: base + 0x3_8000..base + 0x3_8000 + 4 * 0x1_1000,
            stack_guard: 0x1000,
            stack_size: 0x1_0000,
        }
    }

    fn attr_at(plan: &Plan, pa: u64) -> Option<Attr> {
        plan.iter().find(|e| e.pa.contains(&pa)).map(|e| e.attr)
    }

    #[test]
    fn image_sections_get_their_own_permissions() {
        let image = image();
        let plan = plan(Zcu102Qemu::A53_MEMORY, &image).unwrap();
        assert_eq!(attr_at(&plan, image.text.start), Some(Attr::KernelText));
        assert_eq!(attr_at(&plan, image.rodata.start), Some(Attr::KernelRodata));
        assert_eq!(attr_at(&plan, image.data.start), Some(Attr::KernelData));
        assert_eq!(attr_at(&plan, image.text.start - 1), Some(Attr::SharedUncached));
        assert_eq!(attr_at(&plan, image.stacks.end), Some(Attr::Normal));
        // Only the text is executable.
        assert_eq!(plan.iter().filter(|e| e.attr == Attr::KernelText).count(), 1);
    }

    #[test]
    fn every_stack_has_an_unmapped_guard_below_it() {
        let image = image();
        let plan = plan(Zcu102Qemu::A53_MEMORY, &image).unwrap();
        for core in 0..Zcu102Qemu::A53_CORES as u64 {
            let slot = image.stacks.start + core * 0x1_1000;
            assert_eq!(attr_at(&plan, slot), None, "guard of core {core}");
            assert_eq!(attr_at(&plan, slot + 0x1000), Some(Attr::KernelData));
            assert_eq!(attr_at(&plan, slot + 0x1_0fff), Some(Attr::KernelData));
        }
    }

    #[test]
    fn forwarded_regions_stay_unmapped_and_devices_are_device() {
        let plan = plan(Zcu102Qemu::A53_MEMORY, &image()).unwrap();
        assert_eq!(attr_at(&plan, 0x8000_0000), None, "PL window must trap");
        assert_eq!(attr_at(&plan, 0xfd80_0000), None, "SMMU must trap");
        assert_eq!(attr_at(&plan, 0xff00_0000), Some(Attr::Device));
        assert_eq!(attr_at(&plan, 0xf901_0000), Some(Attr::Device));
        for pair in plan.windows(2) {
            assert!(pair[0].pa.end <= pair[1].pa.start, "plan must be sorted and disjoint");
        }
    }

    #[test]
    fn an_image_outside_ram_is_refused() {
        let mut bad = image();
        bad.text.start = 0xff00_0000;
        assert_eq!(plan(Zcu102Qemu::A53_MEMORY, &bad), Err(PlanError::ImageOutsideRam));
    }
}
