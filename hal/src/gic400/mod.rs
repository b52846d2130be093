//! GIC-400 driver: distributor (shared) and CPU interface (banked per core).
//!
//! # Why not `arm-gic`
//!
//! The `arm-gic` crate's GICv2 driver (`GicV2`, read at version 0.6) is the model this driver
//! follows: one owner, every change through `&mut self`. It is not used because its shape does
//! not fit a GIC that four cores share:
//!
//! - one `GicV2` value owns the distributor *and* a CPU interface, and its safety contract allows
//!   no alias of either. Here the distributor is one owner shared by four cores (behind the
//!   kernel's lock) while each core owns its own banked CPU interface: two types, two owners;
//! - it routes no SPI to a core (no `GICD_ITARGETSR` access): the kernel sends the vmbox, UART
//!   and system-block interrupts to the core that serves them;
//! - it puts every interrupt in group 1 and acknowledges through the group-1 aliases; this
//!   driver keeps the reset grouping with both groups enabled, as the boards' firmware leaves
//!   it, and reports an SGI's source core;
//! - its register layout would be a second one beside `regs`, which this crate's tests check
//!   offset by offset, like every other block's.
//!
//! Should the kernel move to a GICv3 (other boards), `arm-gic`'s GICv3 driver is the one to use.

pub mod regs;

use crate::mmio::Mmio;
use regs::{CpuInterfaceRegisters, DistributorRegisters, GICC_CTLR, GICC_IAR, GICD_CTLR, GICD_SGIR};
use tock_registers::interfaces::{Readable, Writeable};

/// GIC interrupt ID (INTID): 0..16 SGI, 16..32 PPI, 32.. SPI.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct IntId(pub u32);

impl IntId {
    /// What IAR reads when nothing is pending.
    pub const SPURIOUS: IntId = IntId(1023);
    /// Highest INTID a GIC-400 can implement (480 SPIs).
    pub const MAX: u32 = 511;

    /// Software-generated interrupt `n` (0..16).
    pub const fn sgi(n: u32) -> Self {
        IntId(n)
    }
    /// Private peripheral interrupt `n` (0..16).
    pub const fn ppi(n: u32) -> Self {
        IntId(16 + n)
    }
    /// Shared peripheral interrupt `n`.
    pub const fn spi(n: u32) -> Self {
        IntId(32 + n)
    }
    /// Whether this is an SGI (0..16).
    pub fn is_sgi(self) -> bool {
        self.0 < 16
    }
    /// SGIs and PPIs are banked per core: each core configures its own copy.
    pub fn is_private(self) -> bool {
        self.0 < 32
    }
}

/// How an interrupt line signals (GICD_ICFGR).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// Pending while the line is high.
    Level,
    /// Pending on a rising edge.
    Edge,
}

/// Lowest priority that still passes the priority mask set by [`CpuInterface::init`].
pub const DEFAULT_PRIORITY: u8 = 0xa0;

/// The distributor (GICD), shared by every core: one owner, every change through `&mut self`.
pub struct Distributor {
    regs: Mmio<DistributorRegisters>,
}

impl Distributor {
    /// # Safety
    ///
    /// `base` must be the mapped GICD block, used through this handle only.
    pub const unsafe fn new(base: usize) -> Self {
        // SAFETY: forwarded from the caller.
        Self { regs: unsafe { Mmio::new(base) } }
    }

    /// Number of interrupt IDs the distributor implements (32 * (ITLinesNumber + 1)).
    pub fn lines(&self) -> u32 {
        32 * (self.regs.typer.read(regs::GICD_TYPER::IT_LINES_NUMBER) + 1)
    }

    /// Global set-up, once, on the boot core: every SPI disabled, level, default priority,
    /// routed to core 0; then the distributor is enabled for both groups.
    pub fn init(&mut self) {
        self.regs.ctlr.set(0);
        let lines = self.lines().min(IntId::MAX + 1);
        for word in 1..(lines / 32) as usize {
            self.regs.icenabler[word].set(u32::MAX);
            self.regs.icpendr[word].set(u32::MAX);
        }
        for id in 32..lines as usize {
            self.regs.ipriorityr[id].set(DEFAULT_PRIORITY);
            self.regs.itargetsr[id].set(0x01);
        }
        for word in 2..(lines / 16) as usize {
            self.regs.icfgr[word].set(0);
        }
        self.regs.ctlr.write(GICD_CTLR::ENABLE_GRP0::SET + GICD_CTLR::ENABLE_GRP1::SET);
    }

    /// Per-core set-up of the banked SGI/PPI registers: all disabled, default priority.
    pub fn init_banked(&mut self) {
        self.regs.icenabler[0].set(u32::MAX);
        self.regs.icpendr[0].set(u32::MAX);
        for id in 0..32 {
            self.regs.ipriorityr[id].set(DEFAULT_PRIORITY);
        }
    }

    /// Lets `id` be signalled (GICD_ISENABLER).
    pub fn enable(&mut self, id: IntId) {
        self.regs.isenabler[(id.0 / 32) as usize].set(1 << (id.0 % 32));
    }

    /// Stops `id` from being signalled (GICD_ICENABLER).
    pub fn disable(&mut self, id: IntId) {
        self.regs.icenabler[(id.0 / 32) as usize].set(1 << (id.0 % 32));
    }

    /// Whether `id` is pending (GICD_ISPENDR).
    pub fn is_pending(&self, id: IntId) -> bool {
        self.regs.ispendr[(id.0 / 32) as usize].get() & (1 << (id.0 % 32)) != 0
    }

    /// Sets the priority of `id` (lower is more urgent).
    pub fn set_priority(&mut self, id: IntId, priority: u8) {
        self.regs.ipriorityr[id.0 as usize].set(priority);
    }

    /// Routes an SPI to the cores in `cpu_mask` (bit n = core n). Ignored by the GIC for SGIs
    /// and PPIs, whose targets are fixed.
    pub fn set_targets(&mut self, id: IntId, cpu_mask: u8) {
        self.regs.itargetsr[id.0 as usize].set(cpu_mask);
    }

    /// Makes `id` level- or edge-triggered (SPIs and PPIs).
    pub fn set_trigger(&mut self, id: IntId, trigger: Trigger) {
        let reg = &self.regs.icfgr[(id.0 / 16) as usize];
        let shift = (id.0 % 16) * 2 + 1;
        let value = match trigger {
            Trigger::Level => reg.get() & !(1 << shift),
            Trigger::Edge => reg.get() | (1 << shift),
        };
        reg.set(value);
    }

    /// Sends software-generated interrupt `sgi` (0..16) to the cores in `cpu_mask`.
    pub fn send_sgi(&mut self, sgi: u32, cpu_mask: u8) {
        debug_assert!(sgi < 16);
        self.regs.sgir.write(
            GICD_SGIR::SGIINTID.val(sgi)
                + GICD_SGIR::TARGET_LIST_FILTER::ListedCpus
                + GICD_SGIR::CPU_TARGET_LIST.val(u32::from(cpu_mask)),
        );
    }
}

/// An interrupt taken from [`CpuInterface::acknowledge`]; hand it back to
/// [`CpuInterface::end_of_interrupt`] when handled.
#[derive(Clone, Copy, Debug)]
pub struct Acknowledged {
    raw: u32,
}

impl Acknowledged {
    /// The interrupt taken.
    pub fn id(self) -> IntId {
        IntId(self.raw & 0x3ff)
    }
    /// For SGIs, the core that sent it.
    pub fn source_cpu(self) -> u32 {
        (self.raw >> 10) & 0x7
    }
}

/// A core's CPU interface (GICC). The block is banked: each core's handle reaches its own copy.
pub struct CpuInterface {
    regs: Mmio<CpuInterfaceRegisters>,
}

impl CpuInterface {
    /// # Safety
    ///
    /// `base` must be the mapped GICC block. The block is banked per core: every core may hold
    /// its own handle to the same address.
    pub const unsafe fn new(base: usize) -> Self {
        // SAFETY: forwarded from the caller.
        Self { regs: unsafe { Mmio::new(base) } }
    }

    /// Accepts every priority above the idle level and enables signalling to this core.
    pub fn init(&mut self) {
        self.regs.pmr.set(0xf0);
        self.regs.bpr.set(0);
        self.regs.ctlr.write(GICC_CTLR::ENABLE_GRP0::SET + GICC_CTLR::ENABLE_GRP1::SET);
    }

    /// Takes the highest-priority pending interrupt (GICC_IAR), if there is one.
    pub fn acknowledge(&mut self) -> Option<Acknowledged> {
        let raw = self.regs.iar.get();
        let id = raw & GICC_IAR::INTERRUPT_ID.mask;
        // 1020..=1023 are special IDs (spurious, or group-1 pending while reading group 0).
        (id < 1020).then_some(Acknowledged { raw })
    }

    /// Ends the handling of `ack` (GICC_EOIR).
    pub fn end_of_interrupt(&mut self, ack: Acknowledged) {
        self.regs.eoir.set(ack.raw);
    }
}
