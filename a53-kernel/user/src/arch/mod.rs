//! The EL0 side of the machine: the entry point of a program, the `svc` instruction, and the
//! registers held across a switch (`held`). Only on the target; host builds of the library
//! have no kernel (`sys` answers `NoSuchCall`).

use proto::syscall::nr;

#[cfg(feature = "image")]
pub(crate) mod held;

// Only in the programs: the kernel links this crate for `args` and has its own entry and
// panic handler.
#[cfg(all(feature = "image", target_arch = "aarch64", target_os = "none"))]
core::arch::global_asm!(
    ".section .text._start, \"ax\"",
    ".global _start",
    ".type _start, %function",
    "_start:",
    "    adrp x1, __bss_start",
    "    add  x1, x1, :lo12:__bss_start",
    "    adrp x2, __bss_end",
    "    add  x2, x2, :lo12:__bss_end",
    "0:  cmp  x1, x2",
    "    b.hs 1f",
    "    stp  xzr, xzr, [x1], #16",
    "    b    0b",
    // The outermost frame: a zero frame pointer and link register end backtraces here.
    "1:  mov  x29, xzr",
    "    mov  x30, xzr",
    "    bl   __unimem_main",
    "    udf  #0",
    ".size _start, . - _start",
);

/// The bare call: `svc #0` with x8 = `number` and x0..x5 = `args`; returns x0..x2.
#[inline(always)]
pub(crate) fn svc(number: u64, args: [u64; 6]) -> [u64; 3] {
    let (x0, x1, x2);
    // SAFETY: `svc #0` enters the kernel, which reads x0..x5 and x8, may read or write memory
    // the arguments point to (declared by not passing `nomem`), writes x0..x5 (declared as
    // outputs) and preserves every other register and the stack (the ABI of `proto::syscall`).
    unsafe {
        core::arch::asm!(
            "svc #0",
            inlateout("x0") args[0] => x0,
            inlateout("x1") args[1] => x1,
            inlateout("x2") args[2] => x2,
            inlateout("x3") args[3] => _,
            inlateout("x4") args[4] => _,
            inlateout("x5") args[5] => _,
            in("x8") number,
            options(nostack),
        );
    }
    [x0, x1, x2]
}

/// EXIT with `status`: the kernel ends the process, so this never returns.
pub(crate) fn svc_exit(status: u64) -> ! {
    // SAFETY: EXIT does not return; nothing after the `svc` runs.
    unsafe {
        core::arch::asm!("svc #0", in("x0") status, in("x8") nr::EXIT, options(noreturn, nostack));
    }
}
