//! `cargo xtask size`: text, data and bss of both images against their budgets, and the
//! program store against its region.

use crate::images::{self, Options};
use anyhow::{Context, bail};
use object::{Object, ObjectSection, SectionFlags, SectionKind};
use std::path::Path;

/// The R5 image must fit in one TCM pair; the kernel image in its budget. The user programs
/// are not in the kernel: their store's budget is its DDR region (`docs/hw/program-store.md`).
pub const R5_BUDGET: u64 = 128 * 1024;
pub const KERNEL_BUDGET: u64 = 512 * 1024;
pub const PROGRAM_STORE_BUDGET: u64 = board::layout::PROGRAM_STORE_SIZE;

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Sizes {
    /// Code and read-only data.
    pub text: u64,
    pub data: u64,
    /// Zero-initialised data and stacks (not in the file).
    pub bss: u64,
}

pub fn measure(elf: &Path) -> anyhow::Result<Sizes> {
    let bytes = std::fs::read(elf).with_context(|| format!("cannot read {}", elf.display()))?;
    let file = object::File::parse(&*bytes).with_context(|| format!("{} is not an ELF", elf.display()))?;
    let mut sizes = Sizes::default();
    for section in file.sections() {
        let SectionFlags::Elf { sh_flags } = section.flags() else { continue };
        if sh_flags & u64::from(object::elf::SHF_ALLOC) == 0 {
            continue;
        }
        match section.kind() {
            SectionKind::Text | SectionKind::ReadOnlyData | SectionKind::ReadOnlyString => sizes.text += section.size(),
            SectionKind::UninitializedData | SectionKind::UninitializedTls => sizes.bss += section.size(),
            SectionKind::Data | SectionKind::Tls => sizes.data += section.size(),
            _ if sh_flags & u64::from(object::elf::SHF_WRITE) != 0 => sizes.data += section.size(),
            _ => sizes.text += section.size(),
        }
    }
    Ok(sizes)
}

pub fn run(release: bool) -> anyhow::Result<()> {
    let opts = Options { release, qfdb: false };
    let images = images::build_all(opts)?;
    let kernel = measure(&images.kernel)?;
    let r5 = measure(&images.r5)?;
    let store = std::fs::read(&images.store).with_context(|| format!("cannot read {}", images.store.display()))?;
    let programs = images::store_programs(&store).with_context(|| images.store.display().to_string())?.len();
    println!("{:<14} {:>10} {:>10} {:>10} {:>12} {:>10}", "image", "text", "data", "bss", "counted", "budget");
    // The kernel's budget is its loaded image (text + data); bss and stacks are reserved DDR.
    // The R5 budget is everything, stacks included: all of it lives in the TCMs.
    let rows = [
        ("a53-kernel", &kernel, kernel.text + kernel.data, KERNEL_BUDGET),
        ("r5-firmware", &r5, r5.text + r5.data + r5.bss, R5_BUDGET),
    ];
    let mut over = Vec::new();
    let mut check = |name: &str, counted: u64, budget: u64| {
        if counted > budget {
            over.push(format!("{name}: {counted} bytes > {budget}"));
        }
    };
    for (name, s, counted, budget) in rows {
        println!("{name:<14} {:>10} {:>10} {:>10} {:>12} {:>10}", s.text, s.data, s.bss, counted, budget);
        check(name, counted, budget);
    }
    // The store is loaded as it is: all of it counts, against the region it is placed in.
    let bytes = store.len() as u64;
    println!("{:<14} {:>10} {:>10} {:>10} {bytes:>12} {PROGRAM_STORE_BUDGET:>10}", "program-store", "-", "-", "-");
    check("program-store", bytes, PROGRAM_STORE_BUDGET);
    if !over.is_empty() {
        bail!("over budget: {}", over.join("; "));
    }
    println!("within budget ({programs} user programs in the program store, apart from the kernel)");
    Ok(())
}
