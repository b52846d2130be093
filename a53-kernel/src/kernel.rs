//! Bringing the kernel up, and ending a run.

use crate::arch::{cpu, mmu, phys_to_virt};
use crate::devices::Devices;
use crate::exception::forward;
use crate::mm::heap;
use crate::{console, irq, rpu, smp, timer};
use board::Board as _;
use core::sync::atomic::{AtomicU8, Ordering};
use proto::boot_args::{BootArgs, HEADER_SIZE, MAX_TEXT};

static ENTRY_EL: AtomicU8 = AtomicU8::new(0);

/// The exception level the boot core was entered at (2 under ATF or QEMU with
/// `virtualization=on`, 1 under QEMU's plain loader).
pub fn entry_el() -> u8 {
    ENTRY_EL.load(Ordering::Relaxed)
}

/// The boot arguments the loader placed (`docs/hw/boot-args.md`), or none.
pub fn boot_args() -> BootArgs<'static> {
    let Some(addr) = crate::Board::BOOT_ARGS else { return BootArgs::default() };
    // SAFETY: the board reserves this block in a region the kernel maps for its lifetime;
    // nothing writes it after the loader.
    let block = unsafe { core::slice::from_raw_parts(phys_to_virt(addr) as *const u8, HEADER_SIZE + MAX_TEXT) };
    BootArgs::decode(block).unwrap_or_default()
}

/// What came up, for the boot banner and the tests.
#[derive(Clone, Copy, Debug)]
pub struct BootReport {
    pub cores_online: usize,
    pub rpu_firmware: Option<u32>,
}

/// Boot core: the devices, console, heap, kernel map, the program store, interrupts, tick, the
/// other cores, the RPU. Each device goes to its owner here (`devices`). Each step that can fail
/// on a given machine (the program store, PSCI, the RPU) is reported and the boot goes on.
pub fn init_boot_core(entry_el: u64) -> BootReport {
    ENTRY_EL.store(entry_el as u8, Ordering::Relaxed);
    let Some(devices) = Devices::take() else { panic!("the kernel booted twice") };
    let Devices { console, gic, platform, sysblock, packetizer, vmbox, smmu, pldma, ipc, ipi } = devices;
    console::init(console);
    defmt::info!(
        "unimem kernel {=str} on {=str}, entered at EL{=u64}",
        env!("CARGO_PKG_VERSION"),
        crate::Board::NAME,
        entry_el
    );
    heap::init();
    if let Err(e) = mmu::init_kernel_map() {
        panic!("cannot build the kernel map: {:?}", e);
    }
    report_programs();
    irq::init_boot_core(gic);
    forward::init(platform);
    wire();
    if boot_args().flag("smmu-stall") {
        crate::rdma_node::set_stall_mode(true);
        defmt::info!("smmu-stall: SMMU banks stall faulting accesses");
    }
    if boot_args().value("rdma-touch") == Some("page") {
        crate::process::paging::set_rdma_touch(crate::mm::user_space::Touch::Page);
        defmt::info!("rdma-touch=page: an RDMA fault maps its page alone");
    }
    crate::cluster::init(sysblock);
    report_identity();
    crate::gsas_node::init(packetizer, vmbox);
    crate::cluster::enable_interrupts();
    crate::mm::smmu::init(smmu);
    crate::rdma_node::init(pldma);
    rpu::init(ipc, ipi);
    timer::init_boot_core();
    cpu::irq_enable();
    if let Err(e) = smp::start_secondaries() {
        defmt::error!("secondary cores: {}", defmt::Debug2Format(&e));
    }
    let cores_online = smp::online_count();
    defmt::info!("{=usize} A53 cores online, timer at {=u64} Hz", cores_online, timer::hz());
    let rpu_firmware = match rpu::start() {
        Ok(version) => {
            defmt::info!("RPU firmware {=u32:#x} is up", version);
            if let Err(e) = crate::rdma_node::start() {
                defmt::warn!("no RDMA on this node: {}", defmt::Debug2Format(&e));
            } else if let Err(e) = crate::socket_node::start() {
                defmt::warn!("no sockets on this node: {}", defmt::Debug2Format(&e));
            }
            Some(version)
        }
        Err(e) => {
            defmt::warn!("RPU not started: {}", defmt::Debug2Format(&e));
            None
        }
    };
    crate::gsas_node::open();
    defmt::info!("node ready");
    BootReport { cores_online, rpu_firmware }
}

/// The layers' wiring, in one place (`docs/architecture.md`, "Layers"). The services below
/// (exceptions, the forwarder, the cluster, the R5 link, the cores, the tick) import no
/// subsystem: each subsystem registers what it must hear here, and the process table calls the
/// subsystems above it only through `process::hooks`. The subsystems stack as
/// process < {gsas_node, rdma_node} < socket_node: each imports only those below it.
///
/// Lock order, outermost first: the process table; then the mailbox service, the sockets, the
/// PLDMA engine or the SMMU (one of them at a time); then the IPC ring. A hook runs with none of
/// them held unless its registration says otherwise (the tick's and the interrupts' run in
/// interrupt context). The atomic service's process atomics hold the process table alone
/// (`process::paging::with_process_word`), and the job-exit handler (`gsas_node::job_exit`)
/// ends processes as a kill does, with no lock of its own held.
fn wire() {
    use crate::process::{hooks, lifecycle, paging, scheduler};
    use crate::{cluster, gsas_node, rdma_node, socket_node};
    const FULL: &str = "a hook list is full";
    crate::exception::set_user_entry(crate::syscall::node::USER_ENTRY).expect("wired once");
    crate::exception::register_fault_handler(paging::on_fault).expect("fault handler table full");
    forward::set_user_pages(scheduler::running_interface_page).expect("wired once");
    // Who the tick serves, on which cores: core 0 ends the waits whose deadline passed (at the
    // deadline, between ticks if need be) and retries the sockets' doorbells (at a tick); the
    // process cores preempt.
    let clients = [
        timer::TickClient {
            cores: scheduler::EXPIRY_CORES,
            on_tick: scheduler::expire,
            due: scheduler::next_deadline,
            exact: true,
        },
        timer::TickClient {
            cores: socket_node::TICK_CORES,
            on_tick: |_| socket_node::on_tick(),
            due: socket_node::tick_due,
            exact: false,
        },
        timer::TickClient {
            cores: scheduler::PROCESS_CORES,
            on_tick: |_| scheduler::on_tick(),
            due: || None,
            exact: false,
        },
    ];
    for client in clients {
        timer::register_tick_client(client).expect(FULL);
    }
    // The cores' roles: the atomic service on one, processes on the others.
    smp::set_role(gsas_node::SERVICE_CORE, gsas_node::service_core_main).expect("wired once");
    for core in (0..crate::CORES).filter(|c| scheduler::PROCESS_CORES & 1 << c != 0) {
        smp::set_role(core, scheduler::process_core_main).expect("wired once");
    }
    // A node lost: its sockets are reset, then the processes waiting on their mailbox look again.
    cluster::on_node_lost(socket_node::node_lost).expect(FULL);
    cluster::on_node_lost(scheduler::wake_mif_waiters).expect(FULL);
    // Before a node stops, its service serves what other nodes sent it (a job's exit, say).
    cluster::before_stop(gsas_node::serve_what_arrived).expect(FULL);
    rpu::on_reconnect(socket_node::registrations_lost).expect(FULL);
    // The process table's subsystems.
    hooks::on_exit(gsas_node::process_exited).expect(FULL);
    hooks::on_exit(socket_node::process_exited).expect(FULL);
    hooks::on_exit(lifecycle::report_unawaited_end).expect(FULL);
    hooks::on_exit(rdma_node::active_exited).expect(FULL);
    hooks::on_wait_expired(gsas_node::wait_expired).expect(FULL);
    hooks::set_pd_resources(rdma_node::pd_resources()).expect("wired once");
    rdma_node::on_kernel_completions(proto::socket::SOCKET_PD, socket_node::on_completions).expect(FULL);
    // Active Access logs tell their owners through the mailbox.
    rdma_node::on_log_notice(|domain, notice| gsas_node::notify_process(domain, notice).is_ok()).expect("wired once");
}

/// Checks the program store the loader placed (`process::images`) and says in one line what the
/// node can run. A store that is missing or refused leaves the node without programs, not down.
fn report_programs() {
    match crate::process::images::init() {
        Ok(store) => defmt::info!("program store: {=usize} programs, {=usize} bytes", store.count(), store.len()),
        Err(e) => defmt::warn!("program store refused: {}; this node has no programs", defmt::Debug2Format(&e)),
    }
}

fn report_identity() {
    match crate::cluster::identity() {
        Ok(id) => defmt::info!(
            "node {=u16} of {=u16}, coordinates ({=u8}, {=u8}, {=u8})",
            id.node,
            id.node_count,
            id.coordinates.x,
            id.coordinates.y,
            id.coordinates.z
        ),
        Err(e) => defmt::error!("no system block: {}", defmt::Debug2Format(&e)),
    }
}

/// A secondary core, from its entry: kernel map, interrupts, then the work loop.
pub fn secondary_main(core: usize) -> ! {
    mmu::switch_to_kernel_map();
    irq::init_this_core();
    timer::init_this_core();
    smp::secondary_loop(core)
}

pub use crate::stop::{Stop, stop};

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    console::enter_panic();
    let _ = cpu::irq_save_disable();
    match info.location() {
        Some(loc) => defmt::error!(
            "panicked at {=str}:{=u32}:{=u32}: {}",
            loc.file(),
            loc.line(),
            loc.column(),
            defmt::Display2Format(&info.message())
        ),
        None => defmt::error!("panicked: {}", defmt::Display2Format(&info.message())),
    }
    stop(Stop::Panic)
}

#[unsafe(no_mangle)]
extern "C" fn kernel_secondary_main(core: usize, _entry_el: u64) -> ! {
    secondary_main(core)
}
