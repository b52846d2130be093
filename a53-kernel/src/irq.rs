//! Interrupts: the GIC-400, the handler table, and dispatch.

use crate::Board;
use crate::arch::phys_to_virt;
use crate::irq_table::{Handler, HandlerTable, IrqError};
use board::Board as _;
use hal::gic400::{CpuInterface, Distributor};
pub use hal::gic400::{IntId, Trigger};

// SAFETY: the GIC blocks are mapped device memory; the distributor is only driven through this
// module (its registers are either per-interrupt or banked, and set-up happens once per core),
// and the CPU interface is banked per core.
static DISTRIBUTOR: Distributor = unsafe { Distributor::new(phys_to_virt(Board::GIC_DISTRIBUTOR)) };
// SAFETY: see above.
static CPU_INTERFACE: CpuInterface = unsafe { CpuInterface::new(phys_to_virt(Board::GIC_CPU_INTERFACE)) };

static HANDLERS: HandlerTable<{ IntId::MAX as usize + 1 }> = HandlerTable::new();

/// SGIs the kernel uses.
pub mod sgi {
    /// Wakes a core to look at its work queue (smp::run_on).
    pub const WAKE: u32 = 0;
    /// Free for tests.
    pub const TEST: u32 = 15;
}

/// Boot core: distributor and this core's interface.
pub fn init_boot_core() {
    DISTRIBUTOR.init();
    init_this_core();
}

/// Every core: banked SGI/PPI set-up and the CPU interface.
pub fn init_this_core() {
    DISTRIBUTOR.init_banked();
    CPU_INTERFACE.init();
}

/// Installs `handler` for `id` and enables the interrupt (an SPI is routed to `cpu_mask`).
/// Private interrupts (SGI/PPI) are enabled on the calling core only; other cores call
/// [`enable_private`].
pub fn register(id: IntId, handler: Handler, cpu_mask: u8) -> Result<(), IrqError> {
    HANDLERS.register(id, handler)?;
    if !id.is_private() {
        DISTRIBUTOR.set_targets(id, cpu_mask);
    }
    DISTRIBUTOR.enable(id);
    Ok(())
}

pub fn unregister(id: IntId) {
    DISTRIBUTOR.disable(id);
    HANDLERS.unregister(id);
}

/// Enables an already registered SGI/PPI on the calling core.
pub fn enable_private(id: IntId) {
    DISTRIBUTOR.enable(id);
}

pub fn set_trigger(id: IntId, trigger: Trigger) {
    DISTRIBUTOR.set_trigger(id, trigger);
}

pub fn send_sgi(sgi: u32, cpu_mask: u8) {
    DISTRIBUTOR.send_sgi(sgi, cpu_mask);
}

/// Runs the handler registered for `id` as if the GIC had signalled it: the PL interrupt glue
/// of boards whose PL is emulated delivers lines this way.
pub fn invoke(id: IntId) {
    match HANDLERS.get(id) {
        Some(handler) => handler(id),
        None => defmt::warn!("interrupt {=u32} has no handler", id.0),
    }
}

/// Registers `handler` for PL-to-PS interrupt line `line` (its GIC SPI on hardware; the
/// platform glue delivers the same ID on QEMU).
pub fn register_pl(line: u8, handler: Handler, cpu_mask: u8) -> Result<(), IrqError> {
    register(IntId(board::pl::pl_irq_intid(line)), handler, cpu_mask)
}

/// Called from the IRQ vector: acknowledge, run the handler, end of interrupt; repeat while
/// interrupts are pending.
pub fn dispatch() {
    while let Some(ack) = CPU_INTERFACE.acknowledge() {
        let id = ack.id();
        match HANDLERS.get(id) {
            Some(handler) => handler(id),
            None => {
                defmt::warn!("interrupt {=u32} has no handler: disabled", id.0);
                DISTRIBUTOR.disable(id);
            }
        }
        CPU_INTERFACE.end_of_interrupt(ack);
    }
}
