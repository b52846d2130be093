//! `cargo xtask size`: text, data and bss of both images against their budgets.

use crate::images::{self, Options};
use anyhow::{Context, bail};
use object::{Object, ObjectSection, SectionFlags, SectionKind};
use std::path::Path;

/// The R5 image must fit in one TCM pair; the kernel image in its budget. The user programs
/// the kernel embeds (`.user_images`, like an initramfs) are counted apart, against their own.
pub const R5_BUDGET: u64 = 128 * 1024;
pub const KERNEL_BUDGET: u64 = 512 * 1024;
pub const USER_PROGRAMS_BUDGET: u64 = 1024 * 1024;
/// The kernel's section of embedded user programs (`boot/link/a53-kernel.ld`).
const USER_IMAGES_SECTION: &str = ".user_images";

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Sizes {
    /// Code and read-only data.
    pub text: u64,
    pub data: u64,
    /// Zero-initialised data and stacks (not in the file).
    pub bss: u64,
    /// Embedded user programs (read-only data, not in `text`).
    pub programs: u64,
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
        if section.name() == Ok(USER_IMAGES_SECTION) {
            sizes.programs += section.size();
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
    println!("{:<12} {:>10} {:>10} {:>10} {:>12} {:>10}", "image", "text", "data", "bss", "counted", "budget");
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
        println!("{name:<12} {:>10} {:>10} {:>10} {:>12} {:>10}", s.text, s.data, s.bss, counted, budget);
        check(name, counted, budget);
    }
    println!(
        "{:<12} {:>10} {:>10} {:>10} {:>12} {:>10}",
        "+ programs", kernel.programs, 0, 0, kernel.programs, USER_PROGRAMS_BUDGET
    );
    check("user programs embedded in a53-kernel", kernel.programs, USER_PROGRAMS_BUDGET);
    if !over.is_empty() {
        bail!("over budget: {}", over.join("; "));
    }
    println!("within budget (the kernel's embedded user programs counted apart)");
    Ok(())
}
