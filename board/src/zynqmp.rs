//! The ZynqMP SoC as both boards have it (UG1085 table 10-1, UG1087): the A53's physical map,
//! the memory the R5 uses, and the peripherals at fixed addresses. A board is this table plus
//! an overlay that changes only what differs ([`crate::zcu102_qemu`], [`crate::qfdb`]).
//!
//! ```text
//! 0x0_0000_0000 DDR low, 2 GiB          see crate::layout for the carve-up
//! 0x0_8000_0000 PL via M_AXI_HPM0_LPD   512M, reachable from the R5 as well
//! 0x0_a000_0000 PL via M_AXI_HPM0_FPD   256M
//! 0x0_b000_0000 PL via M_AXI_HPM1_FPD   256M
//! 0x0_f900_0000 GIC-400                 (GICD 0xf901_0000, GICC 0xf902_0000)
//! 0x0_fd00_0000 FPD peripherals
//! 0x0_fd80_0000 SMMU-500                128K (global space, then 16 context banks)
//! 0x0_fe00_0000 LPD peripherals         UART0 0xff00_0000, UART1 0xff01_0000, IPI 0xff30_0000, CRL
//! 0x0_fffc_0000 OCM                     ATF BL31 lives here: not mapped by the kernel
//! 0x10_0000_0000 global address window  M_AXI_HPM0_FPD high, 224 GiB (see crate::pl)
//! ```

use crate::layout::{self, DDR_LAYOUT, PLATFORM_BASE, PLATFORM_SIZE, SHARED_BASE, SHARED_SIZE};
use crate::{Peripheral, Region, RegionKind, RegionKind::*, pl};

/// UART0, the console of both boards.
pub const UART0: Peripheral = Peripheral { base: 0xff00_0000, intid: Some(32 + 21) };
/// UART1: free on the QFDB; on QEMU the byte channel to the emulated platform.
pub const UART1: Peripheral = Peripheral { base: 0xff01_0000, intid: Some(32 + 22) };
/// The IPI block's channels (UG1085 ch. 13, `docs/hw/ipi.md`): the APU's (channel 0) and RPU
/// core 0's (channel 1), 64 KiB apart.
pub const IPI_APU: u64 = 0xff30_0000;
pub const IPI_RPU0: u64 = 0xff31_0000;
pub const IPI_CHANNEL_SIZE: u64 = 0x1_0000;
pub const GIC_DISTRIBUTOR: u64 = 0xf901_0000;
pub const GIC_CPU_INTERFACE: u64 = 0xf902_0000;

/// The A53's physical map, sorted by address. `pl` is how the PL windows, the SMMU, the global
/// window and the APU's IPI channel (the R5's doorbell, which QEMU's RPU cannot receive) are
/// reached: `Device` on the board, `Forwarded` where they are emulated.
pub const fn a53_memory(pl: RegionKind) -> [Region; 18] {
    [
        Region::new("r5-image", 0, SHARED_BASE, Ram),
        Region::new("shared", SHARED_BASE, SHARED_SIZE, SharedUncached),
        Region::new("platform", PLATFORM_BASE, PLATFORM_SIZE, SharedUncached),
        Region::new("ddr", DDR_LAYOUT.kernel_image, layout::PLDMA_AREA_BASE - DDR_LAYOUT.kernel_image, Ram),
        Region::new("pldma", layout::PLDMA_AREA_BASE, layout::PLDMA_AREA_SIZE, SharedUncached),
        Region::new("program-store", DDR_LAYOUT.program_store, DDR_LAYOUT.program_store_size, Ram),
        Region::new("frames", DDR_LAYOUT.frames, layout::DDR_LOW_END - DDR_LAYOUT.frames, Ram),
        Region::new("pl-hpm0-lpd", 0x8000_0000, 0x2000_0000, pl),
        Region::new("pl-hpm0-fpd", 0xa000_0000, 0x1000_0000, pl),
        Region::new("pl-hpm1-fpd", 0xb000_0000, 0x1000_0000, pl),
        Region::new("gic", 0xf900_0000, 0x0010_0000, Device),
        Region::new("fpd", 0xfd00_0000, 0x0080_0000, Device),
        Region::new("smmu", crate::SMMU_BASE, crate::SMMU_SIZE, pl),
        Region::new("fpd-upper", 0xfd82_0000, 0x007e_0000, Device),
        Region::new("lpd", 0xfe00_0000, IPI_APU - 0xfe00_0000, Device),
        Region::new("ipi-apu", IPI_APU, IPI_CHANNEL_SIZE, pl),
        Region::new("lpd-upper", IPI_APU + IPI_CHANNEL_SIZE, 0xfffc_0000 - IPI_APU - IPI_CHANNEL_SIZE, Device),
        Region::new("global-window", pl::GLOBAL_WINDOW_BASE, pl::GLOBAL_WINDOW_SIZE, pl),
    ]
}

/// The memory the R5 uses, each an MPU region: its TCMs, the shared areas, and `device`, the
/// one window of registers the board lets it reach.
pub const fn r5_memory(device: Region) -> [Region; 6] {
    [
        Region::new("atcm", layout::R5_ATCM.0, layout::R5_ATCM.1, Code),
        Region::new("btcm", layout::R5_BTCM.0, layout::R5_BTCM.1, Ram),
        Region::new("shared", SHARED_BASE, SHARED_SIZE, SharedUncached),
        Region::new("platform", PLATFORM_BASE, PLATFORM_SIZE, SharedUncached),
        Region::new("pldma", layout::PLDMA_AREA_BASE, layout::PLDMA_AREA_SIZE, SharedUncached),
        device,
    ]
}
