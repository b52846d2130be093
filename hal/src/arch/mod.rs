//! The one access `core` has no single instruction for: a 128-bit load or store (the mailbox's
//! DATA register and the packetizer's payloads are 128 bits wide, and an access in two halves
//! would be two register accesses).

use core::arch::asm;

/// `ldr q`: one 128-bit load.
///
/// # Safety
///
/// `ptr` must be valid for a 16-byte read and 16-byte aligned.
#[inline(always)]
pub(crate) unsafe fn load_q(ptr: *const u128) -> u128 {
    let (lo, hi): (u64, u64);
    // SAFETY: per the caller; the load is a single 128-bit access into a vector register.
    unsafe {
        asm!(
            "ldr {q:q}, [{p}]",
            "mov {lo}, {q}.d[0]",
            "mov {hi}, {q}.d[1]",
            p = in(reg) ptr, q = out(vreg) _, lo = out(reg) lo, hi = out(reg) hi,
            options(nostack, readonly),
        );
    }
    u128::from(lo) | u128::from(hi) << 64
}

/// `str q`: one 128-bit store.
///
/// # Safety
///
/// `ptr` must be valid for a 16-byte write and 16-byte aligned.
#[inline(always)]
pub(crate) unsafe fn store_q(ptr: *mut u128, value: u128) {
    // SAFETY: per the caller; the store is a single 128-bit access from a vector register.
    unsafe {
        asm!(
            "mov {q}.d[0], {lo}",
            "mov {q}.d[1], {hi}",
            "str {q:q}, [{p}]",
            p = in(reg) ptr, q = out(vreg) _, lo = in(reg) value as u64, hi = in(reg) (value >> 64) as u64,
            options(nostack),
        );
    }
}
