//! [`hold_across`]: the registers of a `Held` loaded, an act that lets the kernel switch away,
//! and the registers read back, all in assembly, so that no compiled code touches them in
//! between (`crate::held` says what it is for).

use crate::held::{Held, RawAct};
use core::mem::{offset_of, size_of};

// The assembly's offsets.
const _: () = {
    assert!(offset_of!(Held, q) == 0 && offset_of!(Held, fpcr) == 144);
    assert!(offset_of!(Held, fpsr) == 152 && offset_of!(Held, tpidr_el0) == 160);
    assert!(offset_of!(RawAct, nr) == 0 && offset_of!(RawAct, arg) == 8);
    assert!(offset_of!(RawAct, spins) == 16 && offset_of!(RawAct, load) == 24);
    assert!(size_of::<RawAct>() == 32);
};

// x9..x17 carry the pointers, the act and the caller's FPCR and FPSR across the call: the kernel
// preserves every register but x0..x5 (`proto::syscall`). d8..d15 are the caller's (AAPCS64):
// kept on the stack.
core::arch::global_asm!(
    ".section .text.__unimem_hold_across, \"ax\"",
    ".global __unimem_hold_across",
    ".type __unimem_hold_across, %function",
    "__unimem_hold_across:",
    "    stp  d8, d9, [sp, #-64]!",
    "    stp  d10, d11, [sp, #16]",
    "    stp  d12, d13, [sp, #32]",
    "    stp  d14, d15, [sp, #48]",
    "    mrs  x16, fpcr",
    "    mrs  x17, fpsr",
    "    mov  x9, x0",
    "    mov  x10, x1",
    "    ldp  x11, x12, [x2]",
    "    ldp  x13, x14, [x2, #16]",
    "    ldr  q0, [x9]",
    "    ldp  q8, q9, [x9, #16]",
    "    ldp  q10, q11, [x9, #48]",
    "    ldp  q12, q13, [x9, #80]",
    "    ldp  q14, q15, [x9, #112]",
    "    ldp  x15, x0, [x9, #144]",
    "    msr  fpcr, x15",
    "    msr  fpsr, x0",
    "    ldr  x15, [x9, #160]",
    "    msr  tpidr_el0, x15",
    // The call, unless there is none (nr = u64::MAX); x1..x5 = 0, as the calls that keep a
    // deadline in x5 need.
    "    cmn  x11, #1",
    "    b.eq 1f",
    "    mov  x8, x11",
    "    mov  x0, x12",
    "    mov  x1, xzr",
    "    mov  x2, xzr",
    "    mov  x3, xzr",
    "    mov  x4, xzr",
    "    mov  x5, xzr",
    "    svc  #0",
    "1:  cbz  x13, 3f",
    "2:  subs x13, x13, #1",
    "    b.ne 2b",
    "3:  cbz  x14, 4f",
    "    ldr  w15, [x14]",
    "4:  str  q0, [x10]",
    "    stp  q8, q9, [x10, #16]",
    "    stp  q10, q11, [x10, #48]",
    "    stp  q12, q13, [x10, #80]",
    "    stp  q14, q15, [x10, #112]",
    "    mrs  x15, fpcr",
    "    mrs  x0, fpsr",
    "    stp  x15, x0, [x10, #144]",
    "    mrs  x15, tpidr_el0",
    "    str  x15, [x10, #160]",
    "    msr  fpcr, x16",
    "    msr  fpsr, x17",
    "    ldp  d10, d11, [sp, #16]",
    "    ldp  d12, d13, [sp, #32]",
    "    ldp  d14, d15, [sp, #48]",
    "    ldp  d8, d9, [sp], #64",
    "    ret",
    ".size __unimem_hold_across, . - __unimem_hold_across",
);

unsafe extern "C" {
    /// Loads `before` into q0, q8..q15, FPCR, FPSR and TPIDR_EL0, does `act` and stores the
    /// same registers into `after`.
    fn __unimem_hold_across(before: *const Held, after: *mut Held, act: *const RawAct);
}

/// Runs the assembly on `before` and `act`; returns what the registers held afterwards.
pub(crate) fn hold_across(before: &Held, act: &RawAct) -> Held {
    let mut after = Held::default();
    // SAFETY: the assembly reads `before` and `act` and writes `after`, all valid for the call;
    // it follows AAPCS64 (d8..d15, FPCR and FPSR restored, the stack balanced) and its call is
    // YIELD, SLEEP_US or TIME_US, which touch no memory of the process. The load is of the
    // process's own MIF DEPTH register, which changes nothing. TPIDR_EL0, which it leaves
    // changed, is nobody's but the program's: the runtime keeps nothing behind it.
    unsafe { __unimem_hold_across(before, &mut after, act) };
    after
}
