//! The instructions the tests need exactly as written: a fault at a known address, or a load
//! the trap-and-forward decoder must handle (`ldrsb`). Each function returns where the
//! instruction is, or what it loaded; the compiler could pick other instructions for plain Rust.

use core::arch::asm;

/// Loads from `addr` with `ldr`; returns the address of that instruction. The load is meant to
/// fault: call it under `catch_fault`, which skips it.
///
/// # Safety
///
/// A load from `addr` must either fault (and be caught) or be a valid read.
pub unsafe fn load_and_locate(addr: u64) -> u64 {
    let pc: u64;
    // SAFETY: per the caller; the loaded value is discarded.
    unsafe { asm!("adr {pc}, 1f", "1: ldr {val}, [{addr}]", pc = out(reg) pc, val = out(reg) _, addr = in(reg) addr) };
    pc
}

/// Stores the 32-bit `value` to `addr` with `str`; returns the address of that instruction.
///
/// # Safety
///
/// A store to `addr` must either fault (and be caught) or be a valid write.
pub unsafe fn store_and_locate(addr: u64, value: u32) -> u64 {
    let pc: u64;
    // SAFETY: per the caller.
    unsafe {
        asm!("adr {pc}, 1f", "1: str {val:w}, [{addr}]", pc = out(reg) pc, val = in(reg) value, addr = in(reg) addr)
    };
    pc
}

/// Executes `udf #0x5a5a`; returns its address. It always traps: call it under `catch_fault`.
pub fn undefined_and_locate() -> u64 {
    let pc: u64;
    // SAFETY: UDF traps; the kernel's catcher skips it and nothing else changes.
    unsafe { asm!("adr {pc}, 1f", "1: udf #0x5a5a", pc = out(reg) pc) };
    pc
}

/// Executes `brk #0x42`; returns its address. It always traps: call it under `catch_fault`.
pub fn brk_and_locate() -> u64 {
    let pc: u64;
    // SAFETY: BRK traps; the kernel's catcher skips it and nothing else changes.
    unsafe { asm!("adr {pc}, 1f", "1: brk #0x42", pc = out(reg) pc) };
    pc
}

/// Loads the byte at `addr` with `ldrsb` (sign-extended to 64 bits by the core).
///
/// # Safety
///
/// `addr` must be valid for a one-byte read.
pub unsafe fn load_signed_byte(addr: *const u8) -> i64 {
    let value: i64;
    // SAFETY: per the caller.
    unsafe { asm!("ldrsb {v}, [{a}]", a = in(reg) addr, v = out(reg) value) };
    value
}
