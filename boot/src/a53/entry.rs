//! Reset and secondary entry; see the module documentation for the sequence.

use board::layout::{KERNEL_IMAGE_VA_OFFSET, KERNEL_STACK_GUARD, KERNEL_STACK_SIZE, KERNEL_VA_OFFSET};

/// MAIR_EL1 attribute indices.
pub mod mair {
    /// Device-nGnRE.
    pub const DEVICE: u64 = 0;
    /// Normal, inner/outer write-back read/write-allocate.
    pub const NORMAL: u64 = 1;
    /// Normal, non-cacheable.
    pub const NORMAL_NC: u64 = 2;
}

pub const MAIR_EL1: u64 = 0x04 << (8 * mair::DEVICE) | 0xff << (8 * mair::NORMAL) | 0x44 << (8 * mair::NORMAL_NC);

/// TCR_EL1: 39-bit VA in both halves (T0SZ = T1SZ = 25), 4 KiB granules, walks inner-shareable
/// write-back, 40-bit physical addresses (the ZynqMP's), 8-bit ASIDs taken from TTBR0.
pub const BOOT_TCR_EL1: u64 = 25
    | 0b01 << 8 // IRGN0: write-back, write-allocate
    | 0b01 << 10 // ORGN0
    | 0b11 << 12 // SH0: inner shareable
    // TG0 (bits 15:14) = 0b00: 4 KiB
    | 25 << 16 // T1SZ
    | 0b01 << 24 // IRGN1
    | 0b01 << 26 // ORGN1
    | 0b11 << 28 // SH1
    | 0b10 << 30 // TG1: 4 KiB
    | 0b010 << 32; // IPS: 40 bits

/// Level-1 block descriptors of the boot table (ARM DDI 0487, D8.3): AF, inner shareable,
/// EL1-only, never executable from EL0.
const BLOCK: u64 = 0b01;
const AF: u64 = 1 << 10;
const SH_INNER: u64 = 0b11 << 8;
const PXN: u64 = 1 << 53;
const UXN: u64 = 1 << 54;
const BOOT_NORMAL_BLOCK: u64 = BLOCK | AF | SH_INNER | mair::NORMAL << 2 | UXN;
const BOOT_DEVICE_BLOCK: u64 = BLOCK | AF | mair::DEVICE << 2 | PXN | UXN;

/// SCTLR_EL1 bits: M (MMU), C (data cache), SA (SP alignment check), I (instruction cache);
/// cleared: A (alignment faults), WXN, E0E/EE (little-endian).
const SCTLR_SET: u64 = 1 << 0 | 1 << 2 | 1 << 3 | 1 << 12;
const SCTLR_CLEAR: u64 = 1 << 1 | 1 << 19 | 1 << 24 | 1 << 25;
/// SCTLR_EL1 value with every RES1 bit set and everything else off (used before ERET from EL2).
const SCTLR_EL1_RES1: u64 = 0x30d0_0800;

core::arch::global_asm!(
    r#"
    .section .text.boot, "ax"
    .global _start
_start:
    mov     x19, #0
    b       1f

    .global _secondary_entry
_secondary_entry:
    mov     x19, x0

1:  // Leave EL2 if the loader (ATF on hardware, QEMU with virtualization=on) entered us there.
    // x20 keeps the entry exception level for the kernel.
    mrs     x20, CurrentEL
    ubfx    x20, x20, #2, #2
    cmp     x20, #2
    b.ne    2f
    mov     x9, #(1 << 31)              // HCR_EL2.RW: EL1 is AArch64; no stage 2, no traps
    msr     hcr_el2, x9
    mrs     x9, cnthctl_el2
    orr     x9, x9, #3                  // EL1PCTEN | EL1PCEN: counter and timer at EL1
    msr     cnthctl_el2, x9
    msr     cntvoff_el2, xzr
    mov     x9, #0x33ff                 // CPTR_EL2: RES1 bits, no FP/SIMD trap
    msr     cptr_el2, x9
    msr     hstr_el2, xzr
    msr     vttbr_el2, xzr
    mrs     x9, midr_el1
    msr     vpidr_el2, x9
    mrs     x9, mpidr_el1
    msr     vmpidr_el2, x9
    ldr     x9, ={sctlr_res1}
    msr     sctlr_el1, x9
    mov     x9, #0x3c5                  // EL1h with D, A, I, F masked
    msr     spsr_el2, x9
    adr     x9, 2f
    msr     elr_el2, x9
    eret

2:  // EL1, MMU off.
    mov     x9, #(3 << 20)              // CPACR_EL1.FPEN: FP/SIMD usable
    msr     cpacr_el1, x9
    isb
    adrp    x10, __boot_l1              // physical: the PC is physical here
    cbnz    x19, 4f
    mov     x12, #(1 << 30)
    ldr     x11, ={normal}
    str     x11, [x10, #0]              // 0x0000_0000: DDR low, first GiB
    add     x11, x11, x12
    str     x11, [x10, #8]              // 0x4000_0000: DDR low, second GiB
    ldr     x11, ={device}
    add     x11, x11, x12, lsl #1
    add     x11, x11, x12
    str     x11, [x10, #24]             // 0xc000_0000: peripherals
    ldr     x11, ={normal}
    str     x11, [x10, #{image_l1}]     // the image view: 0xffff_ffff_8000_0000 -> 0
    add     x11, x11, x12
    str     x11, [x10, #{image_l1} + 8] // 0xffff_ffff_c000_0000 -> 0x4000_0000
    dsb     sy
4:  // Caches may hold stale lines of the table's memory: invalidate them to the PoC.
    mov     x11, x10
    add     x12, x10, #4096
5:  dc      ivac, x11
    add     x11, x11, #64
    cmp     x11, x12
    b.lo    5b
    dsb     sy
    ldr     x9, ={mair}
    msr     mair_el1, x9
    ldr     x9, ={tcr}
    msr     tcr_el1, x9
    msr     ttbr0_el1, x10
    msr     ttbr1_el1, x10
    isb
    tlbi    vmalle1
    dsb     nsh
    isb
    mrs     x9, sctlr_el1
    ldr     x11, ={sctlr_set}
    orr     x9, x9, x11
    ldr     x11, ={sctlr_clear}
    bic     x9, x9, x11
    msr     sctlr_el1, x9
    isb
    ldr     x9, =3f                     // the linked, upper-half address
    br      x9

3:  ldr     x9, =__stacks_start
    ldr     x10, ={slot}
    madd    x9, x19, x10, x9
    add     x9, x9, x10                 // top of this core's slot
    mov     sp, x9
    ldr     x9, =__exception_vectors
    msr     vbar_el1, x9
    msr     tpidr_el1, x19
    isb
    cbnz    x19, 7f
    ldr     x9, =__bss_start
    ldr     x10, =__bss_end
6:  cmp     x9, x10
    b.hs    8f
    stp     xzr, xzr, [x9], #16
    b       6b
8:  mov     x0, x19
    mov     x1, x20
    bl      kernel_main
    b       9f
7:  mov     x0, x19
    mov     x1, x20
    bl      kernel_secondary_main
9:  wfe
    b       9b

    .section .data.boot_l1, "aw"
    .balign 4096
    .global __boot_l1
__boot_l1:
    .fill   512, 8, 0
"#,
    sctlr_res1 = const SCTLR_EL1_RES1,
    normal = const BOOT_NORMAL_BLOCK,
    device = const BOOT_DEVICE_BLOCK,
    mair = const MAIR_EL1,
    tcr = const BOOT_TCR_EL1,
    sctlr_set = const SCTLR_SET,
    sctlr_clear = const SCTLR_CLEAR,
    slot = const KERNEL_STACK_SIZE + KERNEL_STACK_GUARD,
    image_l1 = const IMAGE_L1_INDEX * 8,
);

/// Level-1 index of the image view in a 39-bit upper-half table (VA bits [38:30]).
const IMAGE_L1_INDEX: u64 = (KERNEL_IMAGE_VA_OFFSET >> 30) & 0x1ff;

// The assembly relies on these: the linear map's level-1 indices equal the physical GiB
// number (so the table doubles as the identity map), and the image view takes the last two.
const _: () = assert!((KERNEL_VA_OFFSET >> 30) & 0x1ff == 0);
const _: () = assert!(IMAGE_L1_INDEX == 510);
