//! The GIC-400 (owned here, from `devices`), the handlers, and dispatch.

use crate::CORES;
use crate::arch::cpu;
use crate::devices::Gic;
use crate::irq::table::{Handler, HandlerTable, IrqError};
use crate::sync::IrqMutex;
use hal::gic400::{CpuInterface, Distributor, IntId, Trigger};

/// The distributor, shared by every core: configuration and SGIs go through its lock, which
/// interrupt handlers take too (IRQs are masked while it is held).
static DISTRIBUTOR: IrqMutex<Option<Distributor>> = IrqMutex::new(None);
/// Core n's CPU interface; only core n takes entry n, in the IRQ path (IRQs masked) or in its
/// own set-up.
static CPU_INTERFACES: [spin::Mutex<Option<CpuInterface>>; CORES] = [const { spin::Mutex::new(None) }; CORES];

static HANDLERS: HandlerTable<{ IntId::MAX as usize + 1 }> = HandlerTable::new();

/// SGIs the kernel uses.
pub mod sgi {
    /// Wakes a core to look at its work queue (smp::run_on).
    pub const WAKE: u32 = 0;
    /// A tick client's needs grew beyond what a core's timer meets: it sets its comparator
    /// again (`timer::needs_changed`).
    pub const TIMER: u32 = 1;
    /// Free for tests.
    pub const TEST: u32 = 15;
}

/// Runs `f` on the distributor (nothing, before [`init_boot_core`] set it up).
fn with_distributor(f: impl FnOnce(&mut Distributor)) {
    if let Some(d) = DISTRIBUTOR.lock().as_mut() {
        f(d);
    }
}

/// Boot core: takes the GIC, sets up the distributor and this core's interface.
pub fn init_boot_core(gic: Gic) {
    let Gic { mut distributor, cpu_interfaces } = gic;
    distributor.init();
    *DISTRIBUTOR.lock() = Some(distributor);
    for (slot, interface) in CPU_INTERFACES.iter().zip(cpu_interfaces) {
        *slot.lock() = Some(interface);
    }
    init_this_core();
}

/// Every core: banked SGI/PPI set-up and the CPU interface.
pub fn init_this_core() {
    with_distributor(Distributor::init_banked);
    if let Some(interface) = CPU_INTERFACES[cpu::core_id()].lock().as_mut() {
        interface.init();
    }
}

/// Installs `handler` for `id` and enables the interrupt (an SPI is routed to `cpu_mask`).
/// Private interrupts (SGI/PPI) are enabled on the calling core only; other cores call
/// [`enable_private`].
pub fn register(id: IntId, handler: Handler, cpu_mask: u8) -> Result<(), IrqError> {
    HANDLERS.register(id, handler)?;
    with_distributor(|d| {
        if !id.is_private() {
            d.set_targets(id, cpu_mask);
        }
        d.enable(id);
    });
    Ok(())
}

pub fn unregister(id: IntId) {
    with_distributor(|d| d.disable(id));
    HANDLERS.unregister(id);
}

/// Enables an already registered SGI/PPI on the calling core.
pub fn enable_private(id: IntId) {
    with_distributor(|d| d.enable(id));
}

pub fn set_trigger(id: IntId, trigger: Trigger) {
    with_distributor(|d| d.set_trigger(id, trigger));
}

pub fn send_sgi(sgi: u32, cpu_mask: u8) {
    with_distributor(|d| d.send_sgi(sgi, cpu_mask));
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
    let interface = &CPU_INTERFACES[cpu::core_id()];
    // The interface is not held while the handler runs: handlers may take other locks, and a
    // fault in one must not find it taken.
    loop {
        let acknowledged = interface.lock().as_mut().and_then(CpuInterface::acknowledge);
        let Some(ack) = acknowledged else { break };
        let id = ack.id();
        match HANDLERS.get(id) {
            Some(handler) => handler(id),
            None => {
                defmt::warn!("interrupt {=u32} has no handler: disabled", id.0);
                with_distributor(|d| d.disable(id));
            }
        }
        if let Some(i) = interface.lock().as_mut() {
            i.end_of_interrupt(ack);
        }
    }
}
