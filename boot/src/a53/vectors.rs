//! The EL1 exception vector table. Every entry saves the complete interrupted context
//! ([`ExceptionFrame`]: general registers, SP_EL0, ELR, SPSR, the whole FP/SIMD state and
//! TPIDR_EL0) on
//! the current kernel stack and calls the kernel's
//! `kernel_exception(frame: &mut ExceptionFrame, kind: ExceptionKind)`. Whatever the handler
//! leaves in the frame is restored: a handler resumes elsewhere by changing `elr`, emulates a
//! load by writing `x[n]` or `q[n]`, or switches process by swapping the whole frame.

use core::mem::{offset_of, size_of};

pub use crate::frame::ExceptionFrame;

const FRAME_SIZE: usize = size_of::<ExceptionFrame>();
const _: () = {
    assert!(offset_of!(ExceptionFrame, sp_el0) == 248);
    assert!(offset_of!(ExceptionFrame, elr) == 256);
    assert!(offset_of!(ExceptionFrame, q) == 272);
    assert!(offset_of!(ExceptionFrame, fpcr) == 784);
    assert!(offset_of!(ExceptionFrame, fpsr) == 792);
    assert!(offset_of!(ExceptionFrame, tpidr_el0) == 800);
    assert!(FRAME_SIZE == 816 && FRAME_SIZE.is_multiple_of(16));
};

/// Which of the sixteen vectors was taken: the source (current EL with SP_EL0 or SP_ELx,
/// lower EL in AArch64 or AArch32) times the type (synchronous, IRQ, FIQ, SError).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExceptionKind(pub u64);

impl ExceptionKind {
    pub fn source(self) -> ExceptionSource {
        match self.0 / 4 {
            0 => ExceptionSource::CurrentElSp0,
            1 => ExceptionSource::CurrentElSpx,
            2 => ExceptionSource::LowerElAarch64,
            _ => ExceptionSource::LowerElAarch32,
        }
    }

    pub fn class(self) -> ExceptionType {
        match self.0 % 4 {
            0 => ExceptionType::Synchronous,
            1 => ExceptionType::Irq,
            2 => ExceptionType::Fiq,
            _ => ExceptionType::SError,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExceptionSource {
    CurrentElSp0,
    CurrentElSpx,
    LowerElAarch64,
    LowerElAarch32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExceptionType {
    Synchronous,
    Irq,
    Fiq,
    SError,
}

macro_rules! vector_table {
    ($($kind:literal)*) => {
        concat!(
            ".section .text.vectors, \"ax\"\n",
            ".balign 2048\n",
            ".global __exception_vectors\n",
            "__exception_vectors:\n",
            $(
                ".balign 128\n",
                "sub sp, sp, #", "{frame}", "\n",
                "stp x0, x1, [sp, #0]\n",
                "mov x1, #", $kind, "\n",
                "b __exception_common\n",
            )*
        )
    };
}

core::arch::global_asm!(
    vector_table!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15),
    r#"
__exception_common:
    stp     x2, x3, [sp, #16]
    stp     x4, x5, [sp, #32]
    stp     x6, x7, [sp, #48]
    stp     x8, x9, [sp, #64]
    stp     x10, x11, [sp, #80]
    stp     x12, x13, [sp, #96]
    stp     x14, x15, [sp, #112]
    stp     x16, x17, [sp, #128]
    stp     x18, x19, [sp, #144]
    stp     x20, x21, [sp, #160]
    stp     x22, x23, [sp, #176]
    stp     x24, x25, [sp, #192]
    stp     x26, x27, [sp, #208]
    stp     x28, x29, [sp, #224]
    mrs     x2, sp_el0
    stp     x30, x2, [sp, #240]
    mrs     x2, elr_el1
    mrs     x3, spsr_el1
    stp     x2, x3, [sp, #256]
    add     x2, sp, #272
    stp     q0, q1, [x2, #0]
    stp     q2, q3, [x2, #32]
    stp     q4, q5, [x2, #64]
    stp     q6, q7, [x2, #96]
    stp     q8, q9, [x2, #128]
    stp     q10, q11, [x2, #160]
    stp     q12, q13, [x2, #192]
    stp     q14, q15, [x2, #224]
    stp     q16, q17, [x2, #256]
    stp     q18, q19, [x2, #288]
    stp     q20, q21, [x2, #320]
    stp     q22, q23, [x2, #352]
    stp     q24, q25, [x2, #384]
    stp     q26, q27, [x2, #416]
    stp     q28, q29, [x2, #448]
    stp     q30, q31, [x2, #480]
    mrs     x3, fpcr
    mrs     x4, fpsr
    str     x3, [sp, #784]
    str     x4, [sp, #792]
    // Saved from EL1 too, where it still holds the process's value (the kernel never writes
    // it): a nested exception restores what it found, and only a frame the scheduler put in
    // place changes it.
    mrs     x3, tpidr_el0
    str     x3, [sp, #800]
    mov     x0, sp
    bl      kernel_exception

    .global __exception_return
__exception_return:
    add     x2, sp, #272
    ldr     x3, [sp, #784]
    ldr     x4, [sp, #792]
    msr     fpcr, x3
    msr     fpsr, x4
    ldr     x3, [sp, #800]
    msr     tpidr_el0, x3
    ldp     q0, q1, [x2, #0]
    ldp     q2, q3, [x2, #32]
    ldp     q4, q5, [x2, #64]
    ldp     q6, q7, [x2, #96]
    ldp     q8, q9, [x2, #128]
    ldp     q10, q11, [x2, #160]
    ldp     q12, q13, [x2, #192]
    ldp     q14, q15, [x2, #224]
    ldp     q16, q17, [x2, #256]
    ldp     q18, q19, [x2, #288]
    ldp     q20, q21, [x2, #320]
    ldp     q22, q23, [x2, #352]
    ldp     q24, q25, [x2, #384]
    ldp     q26, q27, [x2, #416]
    ldp     q28, q29, [x2, #448]
    ldp     q30, q31, [x2, #480]
    ldp     x2, x3, [sp, #256]
    msr     elr_el1, x2
    msr     spsr_el1, x3
    ldp     x30, x2, [sp, #240]
    msr     sp_el0, x2
    ldp     x0, x1, [sp, #0]
    ldp     x2, x3, [sp, #16]
    ldp     x4, x5, [sp, #32]
    ldp     x6, x7, [sp, #48]
    ldp     x8, x9, [sp, #64]
    ldp     x10, x11, [sp, #80]
    ldp     x12, x13, [sp, #96]
    ldp     x14, x15, [sp, #112]
    ldp     x16, x17, [sp, #128]
    ldp     x18, x19, [sp, #144]
    ldp     x20, x21, [sp, #160]
    ldp     x22, x23, [sp, #176]
    ldp     x24, x25, [sp, #192]
    ldp     x26, x27, [sp, #208]
    ldp     x28, x29, [sp, #224]
    add     sp, sp, #{frame}
    eret
"#,
    frame = const FRAME_SIZE,
);

unsafe extern "C" {
    /// Continues at `frame` as if returning from an exception: restores every register of the
    /// frame (EL0 or EL1 context per its SPSR) and ERETs. The frame must be at the top of the
    /// core's stack (see the kernel's scheduler); the stack below it is abandoned.
    pub fn resume_frame(frame: *const ExceptionFrame) -> !;
    /// Switches to the stack ending at `top` and jumps to `f`, abandoning the current stack.
    pub fn run_on_stack(top: usize, f: extern "C" fn() -> !) -> !;
}

core::arch::global_asm!(
    r#"
    .section .text.resume_frame, "ax"
    .global resume_frame
resume_frame:
    mov     sp, x0
    b       __exception_return

    .section .text.run_on_stack, "ax"
    .global run_on_stack
run_on_stack:
    mov     sp, x0
    br      x1
"#
);
