//! One ZU9EG MPSoC of the ExaNeSt Quad-FPGA Daughter Board (the same map serves a ZCU102).
//!
//! The ZynqMP table (`crate::zynqmp`) with this overlay: the PL windows, the SMMU and the global
//! address window are real device memory, and the R5 reaches the PL through M_AXI_HPM0_LPD.
//!
//! The RPU is started through the platform-management firmware (see [`RpuStart`]): under ATF
//! the PMU firmware owns the RPU's power and reset, and requesting a wake-up at an address is the
//! supported way in; poking the CRL reset registers behind its back would leave the PMU
//! firmware's view of the node wrong (docs/hw/boot.md).

use crate::{Board, Exit, Forwarding, Peripheral, R5Wait, Region, RegionKind::*, RpuStart, zynqmp};

pub struct Qfdb;

/// Platform-management node id of RPU core 0 (`NODE_RPU_0` in the ZynqMP PM API).
pub const PM_NODE_RPU_0: u32 = 7;

impl Board for Qfdb {
    const NAME: &'static str = "qfdb";

    const A53_MEMORY: &'static [Region] = &zynqmp::a53_memory(Device);
    const R5_MEMORY: &'static [Region] =
        &zynqmp::r5_memory(Region::new("pl-hpm0-lpd", 0x8000_0000, 0x2000_0000, Device));
    /// The system timestamp counter as the FSBL clocks it (IOU_SCNTRS, 100 MHz nominal; ATF
    /// programs CNTFRQ_EL0 with the same value).
    const TIMER_HZ: u64 = 100_000_000;
    /// Context faults (all banks and the global fault) share SPI 155 (Linux `zynqmp.dtsi`).
    const SMMU: Peripheral = Peripheral { base: crate::SMMU_BASE, intid: Some(32 + 155) };
    const RPU_START: RpuStart = RpuStart::PmRequestWakeup { node_id: PM_NODE_RPU_0 };
    const R5_WAIT: R5Wait = R5Wait::Poll;
    /// The RPU's clock as the FSBL sets it on the ZU9EG -1 (500 MHz); the PMU cycle counter
    /// counts it undivided.
    const R5_CLOCK_HZ: u64 = 500_000_000;
    /// Seed 002 §3.6: 1 ms was the best of 25, 2.5 and 1 ms.
    const RDMA_TIMEOUT_US: u64 = 1_000;
    const RDMA_MAX_TIMEOUTS: u8 = 32;
    const EXIT: Exit = Exit::Park;
    const FORWARDING: Option<Forwarding> = None;
}
