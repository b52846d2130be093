//! The node's devices, built once at boot from the board's description.
//!
//! Every register block the kernel drives (and every fixed shared-memory area it exchanges
//! data in) becomes a handle here and nowhere else. [`Devices::take`] builds them all, once; the
//! boot core then moves each into the module that owns it, which keeps it for the rest of the
//! run. Who owns each and how it is shared is the table in `docs/architecture.md`, "Who owns a
//! device".

use crate::Board;
use crate::CORES;
use crate::arch::phys_to_virt;
use board::Board as _;
use board::pl;
use core::sync::atomic::{AtomicBool, Ordering};
use hal::cadence_uart::Uart;
use hal::gic400::{CpuInterface, Distributor};
use hal::packetizer::driver::{Pif, Tif};
use hal::pldma::driver::{EngineAdmin, FaultFifo, PdPage};
use hal::pldma::regs::{CONTROL_OFFSET, FAULT_OFFSET, PAGE, PD_PAGES_OFFSET};
use hal::smmu500::Smmu500;
use hal::sysblock::Sysblock;
use hal::vmbox::driver::{Mif, VmboxControl};
use hal::zynqmp_ipi::Ipi;
use proto::forward::Slots;
use proto::ipc::IpcArea;

/// The GIC-400: the distributor, and the CPU interface as each core sees it.
pub struct Gic {
    pub distributor: Distributor,
    /// Entry n is core n's: the block is banked, so each core's handle reaches its own copy.
    pub cpu_interfaces: [CpuInterface; CORES],
}

/// The channel to the emulated platform, on boards that forward (`docs/hw/forwarding.md`).
pub struct PlatformLink {
    pub uart: Uart,
    pub slots: &'static Slots,
}

/// The packetizer pages the kernel drives: the trusted interface and PIF 0, the atomic
/// service's (PIFs 1..64 belong to processes, which reach them through their own map).
pub struct Packetizer {
    pub tif: Tif,
    pub pif0: Pif,
}

impl Packetizer {
    /// The PIF of interface pair `index` for the kernel's own requests (`gsas_node::kernel_client`).
    /// The caller holds the pair in the interface table (as domain 0), so no process maps it and
    /// only the kernel's client, behind its lock, uses the page.
    pub fn kernel_pif(index: u8) -> Pif {
        // SAFETY: as above: a PIF page of the packetizer block, held by the kernel alone.
        unsafe { Pif::new(phys_to_virt(pl::PACKETIZER_BASE + u64::from(index) * hal::packetizer::PAGE_BYTES)) }
    }
}

/// The vmbox as the kernel drives it: every MIF page (MIF 0's data is the service's; of the
/// others the kernel uses only the interrupt registers) and the control page.
pub struct Vmbox {
    pub mifs: [Mif; hal::INTERFACES],
    pub control: VmboxControl,
}

/// The PLDMA pages the kernel drives (`docs/hw/pldma.md`): its registers of the control page
/// (the R5 owns the others), the fault FIFO, and every PD page, through which it answers faults
/// owned by other nodes. A process reaches only its own PD page, through its own map.
pub struct Pldma {
    pub admin: EngineAdmin,
    pub fault: FaultFifo,
    pub pd_pages: [PdPage; hal::pldma::PDS],
    /// Active Access's log table and active page table (`docs/hw/active-access.md`).
    pub active: hal::pldma::driver::ActivePages,
}

/// Every device of this node, as handles that nothing else holds.
pub struct Devices {
    pub console: Uart,
    pub gic: Gic,
    pub platform: Option<PlatformLink>,
    pub sysblock: Sysblock,
    pub packetizer: Packetizer,
    pub vmbox: Vmbox,
    pub smmu: Smmu500,
    pub pldma: Pldma,
    pub ipc: &'static IpcArea,
    /// The APU's IPI channel (`docs/hw/ipi.md`).
    pub ipi: Ipi,
}

static TAKEN: AtomicBool = AtomicBool::new(false);

impl Devices {
    /// The devices, the first time; `None` after that, so that no block gets a second handle.
    /// Building them touches no register: the owners do, when they set their devices up.
    pub fn take() -> Option<Self> {
        if TAKEN.swap(true, Ordering::AcqRel) {
            return None;
        }
        // SAFETY: for every block below, the address is the board's for that block, which the
        // kernel maps as device memory (or leaves to forwarding) for its whole run
        // (`kernel_map`), and `TAKEN` makes this the only handle ever built for it.
        let devices = unsafe {
            Self {
                console: Uart::new(phys_to_virt(Board::CONSOLE_UART.base)),
                gic: Gic {
                    distributor: Distributor::new(phys_to_virt(Board::GIC_DISTRIBUTOR)),
                    cpu_interfaces: core::array::from_fn(|_| CpuInterface::new(phys_to_virt(Board::GIC_CPU_INTERFACE))),
                },
                platform: Board::FORWARDING.map(|f| PlatformLink {
                    uart: Uart::new(phys_to_virt(f.uart.base)),
                    // Shared memory the board reserves for the slots, mapped for good.
                    slots: &*(phys_to_virt(f.slots) as *const Slots),
                }),
                sysblock: Sysblock::new(phys_to_virt(pl::SYSBLOCK_BASE)),
                packetizer: Packetizer {
                    tif: Tif::new(phys_to_virt(pl::PACKETIZER_BASE + hal::packetizer::TIF_OFFSET)),
                    pif0: Pif::new(phys_to_virt(pl::PACKETIZER_BASE)),
                },
                vmbox: Vmbox {
                    mifs: core::array::from_fn(|i| {
                        Mif::new(phys_to_virt(pl::VMBOX_BASE + i as u64 * hal::vmbox::PAGE_BYTES))
                    }),
                    control: VmboxControl::new(phys_to_virt(pl::VMBOX_BASE + hal::vmbox::CONTROL_OFFSET)),
                },
                smmu: Smmu500::new(phys_to_virt(Board::SMMU.base)),
                pldma: Pldma {
                    admin: EngineAdmin::new(phys_to_virt(pl::PLDMA_BASE + CONTROL_OFFSET)),
                    fault: FaultFifo::new(phys_to_virt(pl::PLDMA_BASE + FAULT_OFFSET)),
                    pd_pages: core::array::from_fn(|p| {
                        PdPage::new(phys_to_virt(pl::PLDMA_BASE + PD_PAGES_OFFSET + p as u64 * PAGE))
                    }),
                    active: hal::pldma::driver::ActivePages::new(
                        phys_to_virt(pl::PLDMA_BASE + hal::pldma::regs::ACTIVE_OFFSET),
                        phys_to_virt(pl::PLDMA_BASE + hal::pldma::regs::APT_OFFSET),
                    ),
                },
                // Shared, uncached memory the board reserves for the rings, mapped for good and
                // only accessed through `IpcArea`'s atomics and rings.
                ipc: &*(phys_to_virt(Board::IPC_BASE) as *const IpcArea),
                ipi: Ipi::new(phys_to_virt(board::zynqmp::IPI_APU)),
            }
        };
        Some(devices)
    }
}
