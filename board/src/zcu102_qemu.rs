//! QEMU's `xlnx-zcu102` machine (`-smp 6 -m 2G`): 4 A53 + 2 R5F, GIC-400, Cadence UARTs; no PL,
//! no SMMU, no TCM and no RPU interrupt controller (`docs/architecture.md`, "QEMU and the QFDB").
//!
//! The ZynqMP table (`crate::zynqmp`) with this overlay: the PL windows, the SMMU, the global
//! address window and the APU's IPI channel are `Forwarded` (left unmapped, every access trapped
//! and served by `qemu-virt`), UART1 is the channel to the platform, the R5 reaches that UART,
//! and the R5 sleeps in semihosting (`docs/hw/ipi.md`, "On QEMU").

use crate::layout;
use crate::{Board, Exit, Forwarding, Peripheral, R5Wait, Region, RegionKind::*, RpuStart, zynqmp};

pub struct Zcu102Qemu;

/// UART1 is the byte channel to qemu-virt (forwarded-access kicks, PL interrupt lines).
pub const PLATFORM_UART: Peripheral = zynqmp::UART1;

/// The forwarded-access slots.
pub const FORWARD_SLOTS: u64 = layout::FORWARD_SLOTS_BASE;

impl Board for Zcu102Qemu {
    const NAME: &'static str = "zcu102-qemu";

    const A53_MEMORY: &'static [Region] = &zynqmp::a53_memory(Forwarded);
    const R5_MEMORY: &'static [Region] =
        &zynqmp::r5_memory(Region::new("platform-uart", PLATFORM_UART.base, 0x1000, Device));
    /// QEMU's generic timer runs at 62.5 MHz (and sets CNTFRQ_EL0 itself).
    const TIMER_HZ: u64 = 62_500_000;
    /// No SMMU interrupt: `qemu-virt` raises PL line `SMMU_CONTEXT` (`docs/hw/smmu.md`).
    const SMMU: Peripheral = Peripheral { base: crate::SMMU_BASE, intid: None };
    /// QEMU models RPU core 0 with MPIDR 4 and starts it in AArch32 through PSCI CPU_ON.
    const RPU_START: RpuStart = RpuStart::PsciCpuOn { mpidr: 4 };
    const R5_WAIT: R5Wait = R5Wait::Semihosting;
    /// QEMU's PMU cycle counter counts virtual nanoseconds at a nominal 1 GHz
    /// (`ARM_CPU_FREQ`), whatever the emulated speed.
    const R5_CLOCK_HZ: u64 = 1_000_000_000;
    /// Emulated time runs slower than the board's: a forwarded access costs 15 us to
    /// milliseconds on a busy host, and the kernel's fault path makes dozens. 100 ms keeps
    /// timeouts for packets that were really lost; shorter ones, on a 2-core host running two
    /// nodes or four processes faulting at once, fired while ACKs were only late, and every
    /// retransmission (64 more packets) made the host busier still.
    const RDMA_TIMEOUT_US: u64 = 100_000;
    /// The R5's vCPU runs at a low priority: on a busy host it may not run for seconds, and its
    /// timeouts still fire. 250 x 100 ms = 25 s before a block is given up.
    const RDMA_MAX_TIMEOUTS: u8 = 250;
    const EXIT: Exit = Exit::Semihosting;
    const FORWARDING: Option<Forwarding> = Some(Forwarding { slots: FORWARD_SLOTS, uart: PLATFORM_UART });
}
