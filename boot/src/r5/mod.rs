//! R5 start-up on top of `aarch32-rt` (vector table, per-mode stacks, .data/.bss set-up,
//! FPU enable): this module adds the reset entry and the MPU configuration from the board
//! description.
//!
//! The MPU runs without the background region, so an address the board does not list faults.
//! That is what makes the PL windows trap on QEMU (where they are `Forwarded`, i.e. absent
//! from the R5's list) and what catches stray pointers on hardware.

// The firmware runs on exactly one RPU core (R5-0 in split mode, or the lockstep pair), but
// that core's MPIDR affinity is not 0 (QEMU models RPU core 0 with MPIDR 4), so aarch32-rt's
// default reset code would park it as a "secondary". This entry starts it as core 0.
//
// The RPU also leaves reset with high vectors (SCTLR.V = 1, from the VINITHI signal; UG1085
// "RPU"): exceptions would go to 0xffff_0000 in OCM. Our vector table is at 0, so clear V
// first.
core::arch::global_asm!(
    r#"
    .pushsection .text._start
    .arm
    .global _start
    .type _start, %function
    .p2align 2
_start:
    mrc     p15, 0, r0, c1, c0, 0
    bic     r0, r0, #(1 << 13)
    mcr     p15, 0, r0, c1, c0, 0
    isb
    bl      _asm_init_segments
    mov     r0, #0
    b       _asm_core_start
    .size _start, . - _start
    .popsection
"#
);

/// The context saved by the data-abort entry below, for the firmware's handler
/// `r5_data_abort(frame: &mut AbortFrame)`. Whatever the handler leaves here is restored, and
/// execution resumes at `pc`: to emulate a load, write `r[n]` and advance `pc`.
#[repr(C)]
#[derive(Debug)]
pub struct AbortFrame {
    /// SP and LR of SYS/USR mode (the firmware's normal mode) at the time of the abort.
    pub sp: u32,
    pub lr: u32,
    _pad: u32,
    /// r0..r12.
    pub r: [u32; 13],
    /// The aborted instruction's address.
    pub pc: u32,
    /// The interrupted CPSR (SPSR_abt).
    pub cpsr: u32,
}

const _: () = assert!(core::mem::size_of::<AbortFrame>() == 72);

// Data-abort entry, replacing aarch32-rt's default: save every general register, the SYS-mode
// SP/LR and the VFP state, call the firmware's handler with the frame, restore, and return to
// the (possibly changed) PC. A32 code, as the vector table requires.
core::arch::global_asm!(
    r#"
    .pushsection .text._asm_data_abort_handler
    .arm
    .fpu vfp3-d16
    .global _asm_data_abort_handler
    .type _asm_data_abort_handler, %function
    .p2align 2
_asm_data_abort_handler:
    sub     lr, lr, #8
    srsdb   sp!, #0x17
    push    {{r0-r12}}
    cps     #0x1f
    mov     r0, sp
    mov     r1, lr
    cps     #0x17
    mov     r2, #0
    push    {{r0-r2}}
    mov     r4, sp
    vpush   {{d0-d15}}
    vmrs    r0, fpscr
    push    {{r0, r1}}
    mov     r0, r4
    bl      r5_data_abort
    pop     {{r0, r1}}
    vmsr    fpscr, r0
    vpop    {{d0-d15}}
    pop     {{r0-r2}}
    cps     #0x1f
    mov     sp, r0
    mov     lr, r1
    cps     #0x17
    pop     {{r0-r12}}
    rfeia   sp!
    .size _asm_data_abort_handler, . - _asm_data_abort_handler
    .popsection
"#
);

use aarch32_cpu::pmsav7::{AccessPerms, Config, Error, MemAttr, Mpu, Region as MpuRegion, RegionSize};
use board::{Region, RegionKind};

/// Cortex-R5 MPUs have 12 or 16 regions; the boards use far fewer.
const MAX_REGIONS: usize = 12;

fn region_size(bytes: u64) -> Option<RegionSize> {
    use RegionSize::*;
    const SIZES: [RegionSize; 27] = [
        _32B, _64B, _128B, _256B, _512b, _1K, _2K, _4K, _8K, _16K, _32K, _64K, _128K, _256K, _512K, _1M, _2M, _4M, _8M,
        _16M, _32M, _64M, _128M, _256M, _512M, _1G, _2G,
    ];
    if !bytes.is_power_of_two() || bytes < 32 {
        return None;
    }
    SIZES.get(bytes.trailing_zeros() as usize - 5).copied()
}

fn mpu_region(r: &Region) -> Option<MpuRegion> {
    let (mem_attr, no_exec) = match r.kind {
        RegionKind::Code => (MemAttr::WriteBackWriteAlloc { shareable: false }, false),
        RegionKind::Ram => (MemAttr::WriteBackWriteAlloc { shareable: false }, true),
        RegionKind::SharedUncached => (MemAttr::NonCacheable { shareable: true }, true),
        RegionKind::Device => (MemAttr::Device { shareable: true }, true),
        RegionKind::Forwarded => return None,
    };
    Some(MpuRegion {
        base: r.base as *mut u8,
        size: region_size(r.size)?,
        subregion_mask: 0,
        enabled: true,
        no_exec,
        mem_attr,
        access_perms: AccessPerms::PrivReadWrite,
    })
}

#[derive(Debug)]
pub enum MpuSetupError {
    /// The board lists a region the MPU cannot express (size not a power of two, misaligned).
    BadRegion(&'static str),
    TooManyRegions,
    Mpu(Error),
}

/// Programs one MPU region per board region (except forwarded ones) and enables the MPU with
/// the background region off.
pub fn configure_mpu(regions: &[Region]) -> Result<(), MpuSetupError> {
    let mut dregions: heapless::Vec<MpuRegion, MAX_REGIONS> = heapless::Vec::new();
    for r in regions.iter().filter(|r| r.kind != RegionKind::Forwarded) {
        let region = mpu_region(r).ok_or(MpuSetupError::BadRegion(r.name))?;
        dregions.push(region).map_err(|_| MpuSetupError::TooManyRegions)?;
    }
    // SAFETY: called once, at start-up, on the only core that runs this firmware.
    let mut mpu = unsafe { Mpu::new() };
    mpu.disable();
    mpu.configure(&Config { background_config: false, iregions: &[], dregions: &dregions })
        .map_err(MpuSetupError::Mpu)?;
    mpu.enable();
    Ok(())
}
