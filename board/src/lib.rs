//! Board descriptions.
//!
//! A board is data: its physical memory map (as the A53 and as the R5 see it), interrupt
//! numbers, the peripherals we drive, and how the RPU is started. The kernel and the firmware
//! build their page tables, MPU regions and drivers from this description, so the two boards we
//! support differ here and nowhere else. Both are one SoC, [`zynqmp`], whose table and fixed
//! peripherals are the [`Board`] trait's defaults; each board is an overlay that gives only
//! what differs:
//!
//! - [`zcu102_qemu::Zcu102Qemu`]: QEMU's `xlnx-zcu102` machine, with the PL, the SMMU and the
//!   remote global-address window provided by `qemu-virt` through MMIO trap and forward.
//! - [`qfdb::Qfdb`]: one MPSoC of the ExaNeSt Quad-FPGA Daughter Board (and the ZCU102).
//!
//! [`Selected`] is the board the images are built for (cargo feature `qfdb`).
#![cfg_attr(not(test), no_std)]

pub mod layout;
pub mod pl;
pub mod qfdb;
pub mod zcu102_qemu;
pub mod zynqmp;

#[cfg(not(feature = "qfdb"))]
pub type Selected = zcu102_qemu::Zcu102Qemu;
#[cfg(feature = "qfdb")]
pub type Selected = qfdb::Qfdb;

/// What lives in a region of the physical address space, and so how it is mapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegionKind {
    /// Memory the processor executes from (the R5's ATCM); otherwise like `Ram`.
    Code,
    /// DDR or OCM used only by the processor that maps it: normal write-back memory.
    Ram,
    /// Memory shared between the A53 cluster and the RPU, which are not coherent with each
    /// other: normal non-cacheable on both sides.
    SharedUncached,
    /// Peripheral registers: device nGnRE, never executable.
    Device,
    /// Present on the board but served by the QEMU platform: left unmapped (A53) or uncovered
    /// (R5) so that every access traps and is forwarded to `qemu-virt`. On hardware these
    /// regions are `Device`.
    Forwarded,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub name: &'static str,
    pub base: u64,
    pub size: u64,
    pub kind: RegionKind,
}

impl Region {
    pub const fn new(name: &'static str, base: u64, size: u64, kind: RegionKind) -> Self {
        Self { name, base, size, kind }
    }

    pub const fn end(&self) -> u64 {
        self.base + self.size
    }

    pub const fn contains(&self, addr: u64) -> bool {
        addr >= self.base && addr < self.end()
    }
}

/// The address ranges `[start, end)` of the regions of `kind` in `regions` (sorted by address),
/// regions that touch merged into one; the unused entries are `(0, 0)`. For lookups on hot
/// paths (the forwarding fault handler asks it for every access), evaluated at compile time:
/// more than `N` ranges is a build error.
pub const fn ranges_of<const N: usize>(regions: &[Region], kind: RegionKind) -> [(u64, u64); N] {
    let mut out = [(0, 0); N];
    let (mut i, mut n) = (0, 0);
    while i < regions.len() {
        let r = &regions[i];
        i += 1;
        if r.kind as u8 != kind as u8 {
            continue;
        }
        if n > 0 && out[n - 1].1 == r.base {
            out[n - 1].1 = r.end();
        } else {
            assert!(n < N, "more ranges than the array holds");
            out[n] = (r.base, r.end());
            n += 1;
        }
    }
    out
}

/// Whether `addr` is in one of `ranges` (as [`ranges_of`] makes them).
pub const fn in_ranges(ranges: &[(u64, u64)], addr: u64) -> bool {
    let mut i = 0;
    while i < ranges.len() {
        if addr >= ranges[i].0 && addr < ranges[i].1 {
            return true;
        }
        i += 1;
    }
    false
}

/// How the A53 kernel starts RPU core 0 at an address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RpuStart {
    /// PSCI CPU_ON (SMC) with this target MPIDR; QEMU implements it for the R5 cores.
    PsciCpuOn { mpidr: u64 },
    /// Ask the PMU firmware, through the ATF platform-management SiP call (PM_REQUEST_WAKEUP),
    /// to wake this node at an address (ZynqMP PM API node id).
    PmRequestWakeup { node_id: u32 },
}

/// How an image ends a run (tests, the demo).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// ARM semihosting SYS_EXIT: QEMU exits with the status.
    Semihosting,
    /// Hardware: report and park the cores; the host runner reads the summary line.
    Park,
}

/// A peripheral instance: its register window and its GIC interrupt ID (if it has one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Peripheral {
    pub base: u64,
    pub intid: Option<u32>,
}

/// The SMMU-500's register window (UG1085 table 10-1, `docs/hw/smmu.md`): the same on every
/// ZynqMP; 16 global pages, then 16 context bank pages.
pub const SMMU_BASE: u64 = 0xfd80_0000;
pub const SMMU_SIZE: u64 = 0x2_0000;

/// How a board reaches PL registers that QEMU lacks: the MMIO trap-and-forward channel
/// (`docs/hw/forwarding.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Forwarding {
    /// The request slots (`proto::forward::Slots`), in shared DDR.
    pub slots: u64,
    /// The UART whose bytes kick `qemu-virt` (guest to host) and name PL interrupt lines (host
    /// to guest).
    pub uart: Peripheral,
}

/// How the R5 waits for work when a round found none (`docs/hw/ipi.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum R5Wait {
    /// Poll its inputs without sleeping (the board, until the R5 drives its GIC).
    Poll,
    /// Sleep in the semihosting call SYS_READC, which halts the vCPU until the platform writes
    /// a byte to the semihosting console (QEMU: its RPU has no interrupt controller).
    Semihosting,
}

/// A board, as data. Everything is a constant so it can shape page tables, linker scripts and
/// host-side tools alike.
pub trait Board {
    const NAME: &'static str;
    /// Number of A53 cores.
    const A53_CORES: usize = 4;
    /// The physical memory map as the A53 sees it, sorted by address.
    const A53_MEMORY: &'static [Region];
    /// The memory the R5 uses, as it sees it: each becomes an MPU region.
    const R5_MEMORY: &'static [Region];
    /// Where the A53 kernel image, its heap and the page-frame pool go.
    const DDR_LAYOUT: layout::DdrLayout = layout::DDR_LAYOUT;
    /// Shared A53/R5 area: IPC rings, then the R5 trace ring (same address on both sides).
    const IPC_BASE: u64 = layout::IPC_BASE;
    const TRACE_RING_BASE: u64 = layout::TRACE_RING_BASE;
    /// Where boot arguments (test filters) are placed by the loader, if the board has them.
    const BOOT_ARGS: Option<u64> = Some(layout::BOOT_ARGS_BASE);
    const CONSOLE_UART: Peripheral = zynqmp::UART0;
    /// The SMMU-500 (base [`SMMU_BASE`]). Its context-fault interrupt is a GIC SPI on hardware;
    /// on QEMU it has none and arrives as PL line `pl::irq_line::SMMU_CONTEXT` instead.
    const SMMU: Peripheral;
    const GIC_DISTRIBUTOR: u64 = zynqmp::GIC_DISTRIBUTOR;
    const GIC_CPU_INTERFACE: u64 = zynqmp::GIC_CPU_INTERFACE;
    /// PPI of the EL1 physical timer (INTID).
    const TIMER_INTID: u32 = 30;
    /// The system counter's frequency, for when firmware left CNTFRQ_EL0 unset.
    const TIMER_HZ: u64;
    const RPU_START: RpuStart;
    const R5_WAIT: R5Wait;
    /// Ticks per second of the R5's time source, its PMU cycle counter (PMCCNTR), which both
    /// QEMU's RPU and the board's have (`docs/hw/pldma.md`, "Time on the R5").
    const R5_CLOCK_HZ: u64;
    /// The R5's default RDMA retransmission timeout (seed 002 §3.6: 1 ms on the board). The
    /// kernel may change it at run time (`proto::ipc::op::RDMA_CONFIG`).
    const RDMA_TIMEOUT_US: u64;
    /// Timeouts of one block the R5 retransmits before it fails the transfer.
    const RDMA_MAX_TIMEOUTS: u8;
    const EXIT: Exit;
    /// The forwarding channel, on boards whose PL is emulated.
    const FORWARDING: Option<Forwarding>;
}

#[cfg(test)]
mod tests;
