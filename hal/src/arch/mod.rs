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

/// `ldp q, q`: two 128-bit loads in one instruction (one burst where the bus makes one).
///
/// # Safety
///
/// `ptr` must be valid for a 32-byte read and 16-byte aligned.
#[inline(always)]
pub(crate) unsafe fn load_q_pair(ptr: *const u128) -> [u128; 2] {
    let (a_lo, a_hi, b_lo, b_hi): (u64, u64, u64, u64);
    // SAFETY: per the caller; one LDP of two vector registers.
    unsafe {
        asm!(
            "ldp {a:q}, {b:q}, [{p}]",
            "mov {a_lo}, {a}.d[0]",
            "mov {a_hi}, {a}.d[1]",
            "mov {b_lo}, {b}.d[0]",
            "mov {b_hi}, {b}.d[1]",
            p = in(reg) ptr, a = out(vreg) _, b = out(vreg) _,
            a_lo = out(reg) a_lo, a_hi = out(reg) a_hi, b_lo = out(reg) b_lo, b_hi = out(reg) b_hi,
            options(nostack, readonly),
        );
    }
    [u128::from(a_lo) | u128::from(a_hi) << 64, u128::from(b_lo) | u128::from(b_hi) << 64]
}

/// `stp q, q`: two 128-bit stores in one instruction (one burst where the bus makes one).
///
/// # Safety
///
/// `ptr` must be valid for a 32-byte write and 16-byte aligned.
#[inline(always)]
pub(crate) unsafe fn store_q_pair(ptr: *mut u128, values: [u128; 2]) {
    // SAFETY: per the caller; one STP of two vector registers.
    unsafe {
        asm!(
            "mov {a}.d[0], {a_lo}",
            "mov {a}.d[1], {a_hi}",
            "mov {b}.d[0], {b_lo}",
            "mov {b}.d[1], {b_hi}",
            "stp {a:q}, {b:q}, [{p}]",
            p = in(reg) ptr, a = out(vreg) _, b = out(vreg) _,
            a_lo = in(reg) values[0] as u64, a_hi = in(reg) (values[0] >> 64) as u64,
            b_lo = in(reg) values[1] as u64, b_hi = in(reg) (values[1] >> 64) as u64,
            options(nostack),
        );
    }
}

/// `stp w, w`: two 32-bit stores in one instruction (one burst where the bus makes one).
///
/// # Safety
///
/// `ptr` must be valid for an 8-byte write and 4-byte aligned.
#[inline(always)]
pub(crate) unsafe fn store_w_pair(ptr: *mut u32, values: [u32; 2]) {
    // SAFETY: per the caller; one STP of two general-purpose registers' low words.
    unsafe {
        asm!(
            "stp {a:w}, {b:w}, [{p}]",
            p = in(reg) ptr, a = in(reg) values[0], b = in(reg) values[1],
            options(nostack),
        );
    }
}
