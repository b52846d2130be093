//! The boot path: entry exception level, and the protections of the kernel map.

use crate::ensure;
use crate::testkit::{Test, TestResult};
use a53_kernel::arch::mmu::image_layout;
use a53_kernel::arch::phys_to_virt;
use a53_kernel::exception::catch_fault;
use a53_kernel::exception::esr::{ExceptionClass, FaultStatus};
use a53_kernel::kernel::boot_args;
use aarch64_cpu::registers::{CurrentEL, Readable};

pub const TESTS: &[Test] = &[
    Test::new("boot", "entered_at_the_expected_exception_level", entry_el),
    Test::new("boot", "kernel_text_is_read_only", text_read_only),
    Test::new("boot", "stack_guard_pages_fault", stack_guard),
    Test::new("boot", "null_pointer_faults", null_pointer),
];

fn entry_el() -> TestResult {
    let el = a53_kernel::kernel::entry_el();
    match boot_args().value("expect-el") {
        Some(expected) => ensure(expected.parse::<u8>() == Ok(el), "entered at a different EL than expected"),
        None => ensure(el == 1 || el == 2, "entered at neither EL1 nor EL2"),
    }?;
    // Whatever the entry, the kernel runs at EL1.
    ensure(CurrentEL.read(CurrentEL::EL) == 1, "the kernel is not running at EL1")
}

fn text_read_only() -> TestResult {
    let text = phys_to_virt(image_layout().text.start + 0x100) as *mut u32;
    // SAFETY: the write faults (text is read-only) and is skipped; nothing is modified.
    let (_, caught) = catch_fault(|| unsafe { text.write_volatile(0) });
    let f = caught.ok_or("a write to kernel text succeeded")?;
    ensure(matches!(f.esr.fault_status(), FaultStatus::Permission { .. }), "not a permission fault")
}

fn stack_guard() -> TestResult {
    let guard = phys_to_virt(image_layout().stacks.start + 8) as *const u64;
    // SAFETY: the guard page is unmapped; the read faults and is skipped.
    let (_, caught) = catch_fault(|| unsafe { guard.read_volatile() });
    let f = caught.ok_or("the stack guard page is readable")?;
    ensure(matches!(f.esr.fault_status(), FaultStatus::Translation { .. }), "not a translation fault")
}

fn null_pointer() -> TestResult {
    let null = core::ptr::null::<u64>().wrapping_add(2);
    // SAFETY: TTBR0 walks are disabled while no process runs; the read faults and is skipped.
    let (_, caught) = catch_fault(|| unsafe { null.read_volatile() });
    let f = caught.ok_or("a null pointer was readable")?;
    ensure(f.esr.class() == ExceptionClass::DataAbortSame && f.far == 16, "wrong fault for a null pointer")
}
