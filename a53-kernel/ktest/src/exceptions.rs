//! Synchronous exceptions are reported precisely and can be recovered from.

use crate::testkit::{Test, TestResult};
use crate::{arch, ensure};
use a53_kernel::exception::catch_fault;
use a53_kernel::exception::esr::{ExceptionClass, FaultStatus};
use board::layout::KERNEL_VA_OFFSET;

pub const TESTS: &[Test] = &[
    Test::new("exceptions", "data_abort_on_load_is_reported_and_recovered", load_abort),
    Test::new("exceptions", "data_abort_on_store_is_reported_and_recovered", store_abort),
    Test::new("exceptions", "undefined_instruction_is_reported_and_recovered", undefined),
    Test::new("exceptions", "brk_is_reported_and_recovered", brk),
];

/// A kernel address that no board maps: 256 GiB into the linear map.
const UNMAPPED: u64 = KERNEL_VA_OFFSET + 0x40_0000_0000;

fn load_abort() -> TestResult {
    // SAFETY: the load faults and the catcher skips it.
    let (pc, caught) = catch_fault(|| unsafe { arch::load_and_locate(UNMAPPED + 8) });
    let f = caught.ok_or("no fault was taken")?;
    ensure(f.esr.class() == ExceptionClass::DataAbortSame, "wrong exception class")?;
    ensure(f.esr.fault_status() == FaultStatus::Translation { level: 1 }, "wrong fault status")?;
    ensure(!f.esr.is_write(), "a load reported as a write")?;
    ensure(f.far == UNMAPPED + 8, "FAR is not the faulting address")?;
    ensure(f.elr == pc, "ELR is not the faulting instruction")
}

fn store_abort() -> TestResult {
    // SAFETY: the store faults and the catcher skips it; nothing is written.
    let (pc, caught) = catch_fault(|| unsafe { arch::store_and_locate(UNMAPPED + 0x1234, 7) });
    let f = caught.ok_or("no fault was taken")?;
    ensure(f.esr.class() == ExceptionClass::DataAbortSame, "wrong exception class")?;
    ensure(f.esr.is_write(), "a store reported as a read")?;
    ensure(f.far == UNMAPPED + 0x1234, "FAR is not the faulting address")?;
    ensure(f.elr == pc, "ELR is not the faulting instruction")
}

fn undefined() -> TestResult {
    let (pc, caught) = catch_fault(arch::undefined_and_locate);
    let f = caught.ok_or("no exception was taken")?;
    ensure(f.esr.class() == ExceptionClass::Unknown, "wrong exception class")?;
    ensure(f.elr == pc, "ELR is not the undefined instruction")
}

fn brk() -> TestResult {
    let (pc, caught) = catch_fault(arch::brk_and_locate);
    let f = caught.ok_or("no exception was taken")?;
    ensure(f.esr.class() == ExceptionClass::Brk, "wrong exception class")?;
    ensure(f.esr.imm16() == 0x42, "wrong BRK immediate")?;
    ensure(f.elr == pc, "ELR is not the BRK")
}

/// `crash=panic`: the runner checks that the message and location reach the console.
pub fn deliberate_panic() -> ! {
    panic!("deliberate panic for the runner (value {})", 42);
}

/// `crash=fault`: the runner checks the report of an unhandled data abort.
pub fn deliberate_unhandled_fault() -> ! {
    // SAFETY: not safe at all: this load faults on purpose and nothing catches it.
    let value = unsafe { core::ptr::read_volatile((UNMAPPED + 0xdead0) as *const u64) };
    panic!("the unmapped load returned {}", value);
}
