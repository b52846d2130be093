//! One ZU9EG MPSoC of the ExaNeSt Quad-FPGA Daughter Board (the same map serves a ZCU102).
//!
//! Real addresses from UG1085 table 10-1 and UG1087; the PL windows hold the Unimem blocks
//! (packetizer, mailbox, PLDMA, system block) behind the AXI master ports:
//!
//! ```text
//! 0x0_0000_0000 DDR low, 2 GiB          see crate::layout for the carve-up
//! 0x0_8000_0000 PL via M_AXI_HPM0_LPD   512M, reachable from the R5 as well
//! 0x0_a000_0000 PL via M_AXI_HPM0_FPD   256M
//! 0x0_b000_0000 PL via M_AXI_HPM1_FPD   256M
//! 0x0_f900_0000 GIC-400                 (GICD 0xf901_0000, GICC 0xf902_0000)
//! 0x0_fd00_0000 FPD peripherals
//! 0x0_fd80_0000 SMMU-500                128K (global space, then 16 context banks)
//! 0x0_fe00_0000 LPD peripherals         UART0 0xff00_0000, IPI 0xff30_0000, CRL 0xff5e_0000
//! 0x0_fffc_0000 OCM                     ATF BL31 lives here: not mapped by the kernel
//! 0x10_0000_0000 global address window  M_AXI_HPM0_FPD high, 224 GiB (see crate::pl)
//! ```
//!
//! The RPU is started through the platform-management firmware (see [`RpuStart`]): under ATF
//! the PMU firmware owns the RPU's power and reset, and requesting a wake-up at an address is the
//! supported way in; poking the CRL reset registers behind its back would leave the PMU
//! firmware's view of the node wrong (docs/hw/boot.md).

use crate::layout::{self, DDR_LAYOUT, PLATFORM_BASE, PLATFORM_SIZE, SHARED_BASE, SHARED_SIZE};
use crate::{Board, Exit, Forwarding, Peripheral, R5Wait, Region, RegionKind::*, RpuStart, pl};

pub struct Qfdb;

/// Platform-management node id of RPU core 0 (`NODE_RPU_0` in the ZynqMP PM API).
pub const PM_NODE_RPU_0: u32 = 7;

impl Board for Qfdb {
    const NAME: &'static str = "qfdb";

    const A53_MEMORY: &'static [Region] = &[
        Region::new("r5-image", 0, SHARED_BASE, Ram),
        Region::new("shared", SHARED_BASE, SHARED_SIZE, SharedUncached),
        Region::new("platform", PLATFORM_BASE, PLATFORM_SIZE, SharedUncached),
        Region::new("ddr", DDR_LAYOUT.kernel_image, layout::PLDMA_AREA_BASE - DDR_LAYOUT.kernel_image, Ram),
        Region::new("pldma", layout::PLDMA_AREA_BASE, layout::PLDMA_AREA_SIZE, SharedUncached),
        Region::new("frames", DDR_LAYOUT.frames, layout::DDR_LOW_END - DDR_LAYOUT.frames, Ram),
        Region::new("pl-hpm0-lpd", 0x8000_0000, 0x2000_0000, Device),
        Region::new("pl-hpm0-fpd", 0xa000_0000, 0x1000_0000, Device),
        Region::new("pl-hpm1-fpd", 0xb000_0000, 0x1000_0000, Device),
        Region::new("gic", 0xf900_0000, 0x0010_0000, Device),
        Region::new("fpd", 0xfd00_0000, 0x0080_0000, Device),
        Region::new("smmu", crate::SMMU_BASE, crate::SMMU_SIZE, Device),
        Region::new("fpd-upper", 0xfd82_0000, 0x007e_0000, Device),
        Region::new("lpd", 0xfe00_0000, 0x01fc_0000, Device),
        Region::new("global-window", pl::GLOBAL_WINDOW_BASE, pl::GLOBAL_WINDOW_SIZE, Device),
    ];

    const R5_MEMORY: &'static [Region] = &[
        Region::new("atcm", layout::R5_ATCM.0, layout::R5_ATCM.1, Code),
        Region::new("btcm", layout::R5_BTCM.0, layout::R5_BTCM.1, Ram),
        Region::new("shared", SHARED_BASE, SHARED_SIZE, SharedUncached),
        Region::new("platform", PLATFORM_BASE, PLATFORM_SIZE, SharedUncached),
        Region::new("pldma", layout::PLDMA_AREA_BASE, layout::PLDMA_AREA_SIZE, SharedUncached),
        Region::new("pl-hpm0-lpd", 0x8000_0000, 0x2000_0000, Device),
    ];

    const DDR_LAYOUT: layout::DdrLayout = DDR_LAYOUT;
    const IPC_BASE: u64 = layout::IPC_BASE;
    const TRACE_RING_BASE: u64 = layout::TRACE_RING_BASE;
    /// The test runner can place boot arguments as a data partition of BOOT.bin.
    const BOOT_ARGS: Option<u64> = Some(layout::BOOT_ARGS_BASE);
    const CONSOLE_UART: Peripheral = Peripheral { base: 0xff00_0000, intid: Some(32 + 21) };
    /// The system timestamp counter as the FSBL clocks it (IOU_SCNTRS, 100 MHz nominal; ATF
    /// programs CNTFRQ_EL0 with the same value).
    const TIMER_HZ: u64 = 100_000_000;
    /// Context faults (all banks and the global fault) share SPI 155 (Linux `zynqmp.dtsi`).
    const SMMU: Peripheral = Peripheral { base: crate::SMMU_BASE, intid: Some(32 + 155) };
    const GIC_DISTRIBUTOR: u64 = 0xf901_0000;
    const GIC_CPU_INTERFACE: u64 = 0xf902_0000;
    const RPU_START: RpuStart = RpuStart::PmRequestWakeup { node_id: PM_NODE_RPU_0 };
    const R5_WAIT: R5Wait = R5Wait::Poll;
    /// The RPU's clock as the FSBL sets it on the ZU9EG -1 (500 MHz); the PMU cycle counter
    /// counts it undivided.
    const R5_CLOCK_HZ: u64 = 500_000_000;
    /// Seed 002 §3.6: 1 ms was the best of 25, 2.5 and 1 ms.
    const RDMA_TIMEOUT_US: u64 = 1_000;
    const EXIT: Exit = Exit::Park;
    const FORWARDING: Option<Forwarding> = None;
}
