//! ARM semihosting (HLT #0xF000 on AArch64), used by QEMU images to end the run.

use core::arch::asm;

const SYS_EXIT: u64 = 0x18;
/// ADP_Stopped_ApplicationExit: with the 64-bit parameter block, the second word is the status.
const ADP_STOPPED_APPLICATION_EXIT: u64 = 0x20026;

/// Ends the emulation with `status` (0 = success).
pub fn exit(status: u32) -> ! {
    let block = [ADP_STOPPED_APPLICATION_EXIT, u64::from(status)];
    // SAFETY: the semihosting call reads the two-word block; QEMU then exits. Without a
    // semihosting host the HLT would trap, so only boards with `Exit::Semihosting` call this.
    unsafe {
        asm!("hlt #0xf000", in("x0") SYS_EXIT, in("x1") block.as_ptr(), options(nostack));
    }
    super::cpu::park()
}
