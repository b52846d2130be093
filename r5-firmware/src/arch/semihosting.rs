//! ARM semihosting from the R5 (A32 state: `svc 0x123456`), as QEMU implements it: how the R5
//! sleeps on QEMU (`docs/hw/ipi.md`, "On QEMU"). Only boards with `R5Wait::Semihosting` call
//! these; on hardware without a debugger attached the SVC would reach the firmware's own
//! handler.

use core::arch::asm;

const SYS_WRITEC: u32 = 0x03;
const SYS_READC: u32 = 0x07;

/// Writes one byte to the semihosting console.
pub fn write_char(byte: u8) {
    let cell = byte;
    // SAFETY: SYS_WRITEC reads the one byte r1 points at; QEMU handles the call and resumes
    // after the SVC with r0 clobbered.
    unsafe {
        asm!("svc 0x123456", inout("r0") SYS_WRITEC => _, in("r1") &cell as *const u8, options(nostack, readonly));
    }
}

/// Reads one byte from the semihosting console; QEMU halts this vCPU until one arrives.
pub fn read_char() -> u32 {
    let ret: u32;
    // SAFETY: SYS_READC takes no argument block; QEMU writes the byte just below the stack
    // pointer (an unused part of the stack) and returns it in r0.
    unsafe {
        asm!("svc 0x123456", inout("r0") SYS_READC => ret, in("r1") 0u32, options(nostack));
    }
    ret
}
