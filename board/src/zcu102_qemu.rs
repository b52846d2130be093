//! QEMU's `xlnx-zcu102` machine (`-smp 6 -m 2G`): 4 A53 + 2 R5F, GIC-400, Cadence UARTs; no PL,
//! no SMMU, no TCM and no RPU interrupt controller (`docs/architecture.md`, "QEMU and the QFDB").
//!
//! A53 physical map (UG1085 table 10-1, as far as we use it):
//!
//! ```text
//! 0x0_0000_0000 DDR low, 2 GiB          see crate::layout for the carve-up
//! 0x0_8000_0000 PL via HPM0_LPD, 512M   forwarded to qemu-virt
//! 0x0_a000_0000 PL via HPM0_FPD, 256M   forwarded
//! 0x0_b000_0000 PL via HPM1_FPD, 256M   forwarded
//! 0x0_f900_0000 GIC-400                 device
//! 0x0_fd00_0000 FPD peripherals         device
//! 0x0_fd80_0000 SMMU-500 registers      forwarded (QEMU has no SMMU)
//! 0x0_fe00_0000 LPD peripherals         device (UART0 0xff00_0000, UART1 0xff01_0000)
//! 0x10_0000_0000 global address window  forwarded (remote DDR, see crate::pl)
//! ```

use crate::layout::{self, DDR_LAYOUT, PLATFORM_BASE, PLATFORM_SIZE, SHARED_BASE, SHARED_SIZE};
use crate::{Board, Exit, Forwarding, Peripheral, R5Wait, Region, RegionKind::*, RpuStart, pl};

pub struct Zcu102Qemu;

/// UART1 is the byte channel to qemu-virt (forwarded-access kicks, PL interrupt lines).
pub const PLATFORM_UART: Peripheral = Peripheral { base: 0xff01_0000, intid: Some(32 + 22) };

/// The forwarded-access slots.
pub const FORWARD_SLOTS: u64 = layout::FORWARD_SLOTS_BASE;

/// The word the R5 sleeps on (see [`R5Wait::EventWord`]): the last word of the platform area.
pub const R5_EVENT_WORD: u64 = PLATFORM_BASE + PLATFORM_SIZE - 64;

impl Board for Zcu102Qemu {
    const NAME: &'static str = "zcu102-qemu";

    const A53_MEMORY: &'static [Region] = &[
        Region::new("r5-image", 0, SHARED_BASE, Ram),
        Region::new("shared", SHARED_BASE, SHARED_SIZE, SharedUncached),
        Region::new("platform", PLATFORM_BASE, PLATFORM_SIZE, SharedUncached),
        Region::new("ddr", DDR_LAYOUT.kernel_image, layout::PLDMA_AREA_BASE - DDR_LAYOUT.kernel_image, Ram),
        Region::new("pldma", layout::PLDMA_AREA_BASE, layout::PLDMA_AREA_SIZE, SharedUncached),
        Region::new("frames", DDR_LAYOUT.frames, layout::DDR_LOW_END - DDR_LAYOUT.frames, Ram),
        Region::new("pl-hpm0-lpd", 0x8000_0000, 0x2000_0000, Forwarded),
        Region::new("pl-hpm0-fpd", 0xa000_0000, 0x1000_0000, Forwarded),
        Region::new("pl-hpm1-fpd", 0xb000_0000, 0x1000_0000, Forwarded),
        Region::new("gic", 0xf900_0000, 0x0010_0000, Device),
        Region::new("fpd", 0xfd00_0000, 0x0080_0000, Device),
        Region::new("smmu", crate::SMMU_BASE, crate::SMMU_SIZE, Forwarded),
        Region::new("fpd-upper", 0xfd82_0000, 0x007e_0000, Device),
        Region::new("lpd", 0xfe00_0000, 0x01fc_0000, Device),
        Region::new("global-window", pl::GLOBAL_WINDOW_BASE, pl::GLOBAL_WINDOW_SIZE, Forwarded),
    ];

    const R5_MEMORY: &'static [Region] = &[
        Region::new("atcm", layout::R5_ATCM.0, layout::R5_ATCM.1, Code),
        Region::new("btcm", layout::R5_BTCM.0, layout::R5_BTCM.1, Ram),
        Region::new("shared", SHARED_BASE, SHARED_SIZE, SharedUncached),
        Region::new("platform", PLATFORM_BASE, PLATFORM_SIZE, SharedUncached),
        Region::new("pldma", layout::PLDMA_AREA_BASE, layout::PLDMA_AREA_SIZE, SharedUncached),
        Region::new("platform-uart", PLATFORM_UART.base, 0x1000, Device),
    ];

    const DDR_LAYOUT: layout::DdrLayout = DDR_LAYOUT;
    const IPC_BASE: u64 = layout::IPC_BASE;
    const TRACE_RING_BASE: u64 = layout::TRACE_RING_BASE;
    const BOOT_ARGS: Option<u64> = Some(layout::BOOT_ARGS_BASE);
    const CONSOLE_UART: Peripheral = Peripheral { base: 0xff00_0000, intid: Some(32 + 21) };
    /// QEMU's generic timer runs at 62.5 MHz (and sets CNTFRQ_EL0 itself).
    const TIMER_HZ: u64 = 62_500_000;
    /// No SMMU interrupt: `qemu-virt` raises PL line `SMMU_CONTEXT` (`docs/hw/smmu.md`).
    const SMMU: Peripheral = Peripheral { base: crate::SMMU_BASE, intid: None };
    const GIC_DISTRIBUTOR: u64 = 0xf901_0000;
    const GIC_CPU_INTERFACE: u64 = 0xf902_0000;
    /// QEMU models RPU core 0 with MPIDR 4 and starts it in AArch32 through PSCI CPU_ON.
    const RPU_START: RpuStart = RpuStart::PsciCpuOn { mpidr: 4 };
    const R5_WAIT: R5Wait = R5Wait::EventWord { addr: R5_EVENT_WORD };
    /// QEMU's PMU cycle counter counts virtual nanoseconds at a nominal 1 GHz
    /// (`ARM_CPU_FREQ`), whatever the emulated speed.
    const R5_CLOCK_HZ: u64 = 1_000_000_000;
    /// Emulated time runs slower than the board's: a forwarded access costs 15 us, and the
    /// kernel's fault path makes dozens. 20 ms keeps timeouts for packets that were really lost.
    const RDMA_TIMEOUT_US: u64 = 20_000;
    const EXIT: Exit = Exit::Semihosting;
    const FORWARDING: Option<Forwarding> = Some(Forwarding { slots: FORWARD_SLOTS, uart: PLATFORM_UART });
}
