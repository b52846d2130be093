/*
 * The entry of a C program (a53-kernel/user/crt/README.md). The kernel enters `_start` at EL0
 * with SP = layout::STACK_TOP (16-byte aligned) and x0 = 0; the frame chain ends here, and the
 * C part of the start-up takes it from there.
 */
    .section .text._start, "ax", %progbits
    .global _start
    .type   _start, %function
_start:
    mov     x29, #0
    mov     x30, #0
    bl      __unimem_c_start
    /* __unimem_c_start does not return; stop at a breakpoint if it ever does. */
    brk     #0
    .size   _start, . - _start
