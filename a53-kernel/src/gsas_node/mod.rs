//! This node's part of the global shared address space, on the hardware: the trusted interface
//! programmed at boot, the atomic service on its own core (core 1), the mailbox service, and
//! the vmbox interrupt that wakes whoever waits on a mailbox interface
//! (`docs/hw/gsas-packets.md`, seed D3.6 section 2.2).
//!
//! The packetizer and vmbox pages come from `devices` at [`init`]: the trusted interface goes to
//! the process table, PIF 0 to the service core, and this module keeps the vmbox (every MIF's
//! interrupt registers, MIF 0's data for the service, the control page), a lock per MIF.
//!
//! The decisions (where a reply goes, what a delivery wakes, who receives an opcode, the kernel
//! client's bookkeeping) are `gsas::node`'s, host-tested; this module holds them behind its locks
//! over the devices and the process table.

pub mod handlers;
pub mod job_exit;
pub mod kernel_client;
pub mod profile;

use crate::arch::cpu;
use crate::cluster;
use crate::devices::{Packetizer, Vmbox};
use crate::gsas::mailbox::{DeliverError, Delivery, KernelHandler, MailboxService};
use crate::gsas::node::memory::LinearMemory;
use crate::gsas::node::{self, Outbox, Recipients, base_dest_value, launch_for, ping_nonce, pong_for, pong_nonce};
use crate::gsas::service::{
    AtomicService, Env, FrameAllocator, MemoryFault, NotificationSink, Outcome, ProcessMemory, ServiceConfig,
    SpawnError, SpawnRequest, Spawner, VaFault,
};
use crate::gsas::softmmu::Frame;
use crate::irq::{self, IntId, sgi};
use crate::mm::kernel_frames::KernelFrames;
use crate::mm::user_space::FrameSource;
use crate::process::hooks::ExitedProcess;
use crate::process::lifecycle::{self, TABLE};
use crate::process::scheduler;
use crate::process::table::Wait;
use crate::sync::IrqMutex;
use board::pl;
use core::num::NonZeroU64;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use hal::packetizer::driver::Pif;
use hal::packetizer::words_from_words128;
use hal::vmbox::driver::{MifIrq, MifReader, VmboxControl};
use kernel_client::{KernelClient, SendError};
use proto::gsas::{MailboxOpcode, Message, Notification, Pid};
use spin::Once;

/// The core the atomic service runs on.
pub const SERVICE_CORE: usize = 1;

static MAILBOX: Once<IrqMutex<MailboxService>> = Once::new();
/// Set by the vmbox interrupt when MIF 0 has requests; cleared by the service.
static SERVICE_NEWS: AtomicBool = AtomicBool::new(false);
/// Set once the node is ready ([`open`]): before, requests wait in MIF 0.
static OPEN: AtomicBool = AtomicBool::new(false);
/// Final passes over MIF 0 asked for ([`serve_what_arrived`]), and the last one the service
/// finished: a pass is finished when the service found MIF 0 empty after it was asked for.
static PASSES_WANTED: AtomicU32 = AtomicU32::new(0);
static PASSES_DONE: AtomicU32 = AtomicU32::new(0);
/// How long a node about to stop waits for the service's final pass.
const FINAL_PASS_BOUND: core::time::Duration = core::time::Duration::from_millis(100);
/// Requests served and replies dropped (undeliverable), for tests and benchmarks.
pub static SERVED: AtomicU64 = AtomicU64::new(0);
pub static REPLIES_DROPPED: AtomicU64 = AtomicU64::new(0);
/// Reply sends the destination refused (NACK: its mailbox FIFO was full), each retried later.
pub static REPLY_NACKS: AtomicU64 = AtomicU64::new(0);

pub fn mailbox() -> &'static IrqMutex<MailboxService> {
    MAILBOX.call_once(|| IrqMutex::new(MailboxService::new(64, 16).expect("mailbox configuration")))
}

/// The vmbox as the kernel keeps it: the interrupt half of every MIF page, each behind its own
/// lock (taken for one operation at a time: the interrupt handler disarming a MIF never waits
/// long), and the control page, which is only read. MIF 0's reading half is the service's.
struct Mailboxes {
    irqs: [IrqMutex<MifIrq>; hal::INTERFACES],
    control: VmboxControl,
}

/// The vmbox, from [`init`]. Each MIF's lock is a leaf lock: nothing else is taken while it is
/// held. The kernel dequeues only from MIF 0 (the service); processes read their own MIFs.
static VMBOX: Once<Mailboxes> = Once::new();
/// MIF 0's reading half, from [`init`] until the service core takes it for good.
static SERVICE_MIF: spin::Mutex<Option<MifReader>> = spin::Mutex::new(None);
/// PIF 0, from [`init`] until the service core takes it for good.
static SERVICE_PIF: spin::Mutex<Option<Pif>> = spin::Mutex::new(None);

/// Runs `f` on the interrupt half of mailbox interface `index` under its lock; `None` before
/// [`init`] or for an index that does not exist.
fn with_mif<R>(index: u8, f: impl FnOnce(&mut MifIrq) -> R) -> Option<R> {
    let mif = VMBOX.get()?.irqs.get(usize::from(index))?;
    Some(f(&mut mif.lock()))
}

/// Boot: learn who we are, set up the trusted interface (PIF 0 for the service) and hand it to
/// the process table, keep the vmbox, and take the vmbox interrupt.
pub fn init(packetizer: Packetizer, vmbox: Vmbox) {
    let Packetizer { mut tif, pif0 } = packetizer;
    tif.set_base_dest(base_dest_value());
    tif.grant(0, Pid::atomic_service(cluster::node_id()).raw());
    let kernel_index = {
        let mut table = TABLE.lock();
        table.take_tif(tif, cluster::node_id());
        table.kernel_interface().map(|g| g.index)
    };
    let kernel_pif = kernel_index.map(Packetizer::kernel_pif);
    *SERVICE_PIF.lock() = Some(pif0);
    let Vmbox { mifs, control } = vmbox;
    let (mut reader0, mut kernel_reader) = (None, None);
    // The kernel keeps every MIF's interrupt half; of the reading halves only MIF 0's (the
    // service's) and its own pair's (the other MIFs are read by the processes that hold them).
    let mut index = 0u8;
    let irqs = mifs.map(|mif| {
        let (reader, irq) = mif.split();
        if index == 0 {
            reader0 = Some(reader);
        } else if Some(index) == kernel_index {
            kernel_reader = Some(reader);
        }
        index = index.wrapping_add(1);
        IrqMutex::new(irq)
    });
    *SERVICE_MIF.lock() = reader0;
    VMBOX.call_once(|| Mailboxes { irqs, control });
    if let (Some(index), Some(reader)) = (kernel_index, kernel_reader) {
        *KERNEL_CLIENT.lock() = kernel_pif.map(|pif| kernel_client::new(index, pif, reader));
        with_mif(index, kernel_client::arm);
    } else {
        defmt::error!("the kernel has no request interface: it cannot notify other nodes");
    }
    mailbox();
    register_ping();
    job_exit::register();
    if let Err(e) = irq::register_pl(pl::irq_line::VMBOX, on_vmbox_irq, 1 << cpu::core_id()) {
        defmt::error!("vmbox interrupt: {}", defmt::Debug2Format(&e));
    }
}

/// A MIF reached its threshold: disarm it and wake whoever waits on it.
fn on_vmbox_irq(_: IntId) {
    let Some(vmbox) = VMBOX.get() else { return };
    let asserting = vmbox.control.asserting();
    for index in (0..64u8).filter(|i| asserting & (1 << i) != 0) {
        with_mif(index, MifIrq::disarm);
        if index == 0 {
            SERVICE_NEWS.store(true, Ordering::Release);
            irq::send_sgi(sgi::WAKE, 1 << SERVICE_CORE);
        } else if let Some(client) = KERNEL_CLIENT.lock().as_mut().filter(|c| c.index == index) {
            client.drain();
            with_mif(index, kernel_client::arm);
        } else {
            // The guard must be gone before waking (which takes the table again).
            let holder = TABLE.lock().holder_of(index);
            if let Some(slot) = holder {
                scheduler::wake_waiter(slot, |w| matches!(w, Wait::Mif { .. }));
            }
        }
    }
}

/// The mailbox interface the process in `slot` holds.
pub fn process_mif(slot: usize) -> Option<u8> {
    TABLE.lock().slots[slot].as_ref().map(|p| p.grant.index)
}

/// Runs `f` on the interrupt half of mailbox interface `index` (a process's: its data is the
/// process's), under that MIF's lock, for one operation.
pub fn with_process_mif<R>(index: u8, f: impl FnOnce(&mut MifIrq) -> R) -> Option<R> {
    with_mif(index, f)
}

pub fn disarm_process_mif(slot: usize) {
    if let Some(index) = process_mif(slot) {
        with_mif(index, MifIrq::disarm);
    }
}

/// A thread blocked in `MAILBOX_RECEIVE` has news (the thread id is its slot).
pub fn wake_mailbox_thread(thread: u32) {
    Kernel.wake_mailbox_waiter(thread as usize);
}

/// A process ended (`process::hooks::on_exit`): its notification registrations and queues go.
/// Its shared pages stay, owned by a domain number that is never reused (the seed leaks them
/// too, section 2.3.2).
pub fn process_exited(process: ExitedProcess) {
    mailbox().lock().release_domain(process.domain);
}

/// A process's wait ran out (`process::hooks::on_wait_expired`): a mailbox interface wait's
/// interrupt is disarmed, a receive's place among the mailbox's waiters given up.
pub fn wait_expired(slot: usize, wait: Wait) {
    match wait {
        Wait::Mif { .. } => disarm_process_mif(slot),
        // A receive that timed out waits no more: the next delivery wakes, signals or counts as
        // the receiver asked instead of waking nobody.
        Wait::Mailbox => {
            if let Some(domain) = TABLE.lock().slot_domain(slot) {
                mailbox().lock().cancel_wait(domain, slot as u32);
            }
        }
        _ => {}
    }
}

// ---- the atomic service's back ends ----

struct Frames;

impl FrameAllocator for Frames {
    fn allocate(&mut self) -> Option<Frame> {
        Frame::new(KernelFrames.alloc_zeroed()?)
    }
    fn free(&mut self, frame: Frame) {
        KernelFrames.free(frame.addr());
    }
}

struct Spawn;

impl Spawner for Spawn {
    fn spawn(&mut self, request: &SpawnRequest<'_>) -> Result<NonZeroU64, SpawnError> {
        node::spawned(lifecycle::launch(&launch_for(request)))
    }
}

/// Process atomics, under the process table's lock (`process::paging::with_process_word`): the
/// service holds no other lock around `handle`.
struct Processes;

impl ProcessMemory for Processes {
    fn with_word(
        &mut self,
        pd: hal::pldma::Pd,
        va: u64,
        write: bool,
        apply: &mut dyn FnMut(u64) -> Result<u64, MemoryFault>,
    ) -> Result<u64, VaFault> {
        crate::process::paging::with_process_word(pd, va, write, apply)
    }
}

/// Notifications: the mailbox lock is taken per delivery, never across the service's work
/// (which may spawn, and so take the process table: the table comes first in lock order).
#[derive(Default)]
struct Sink {
    deliveries: heapless::Vec<Delivery, 4>,
}

impl NotificationSink for Sink {
    fn notify(&mut self, from: Pid, notification: Notification) -> Result<(), DeliverError> {
        // A request notifies once (`Opcode::Notify`); one more than the sink holds would be
        // queued with nobody told, so it is refused before the mailbox takes it.
        if self.deliveries.is_full() {
            return Err(DeliverError::QueueFull);
        }
        let delivery = mailbox().lock().deliver(from, notification)?;
        let _ = self.deliveries.push(delivery);
        Ok(())
    }
}

/// The kernel's side of deliveries: its receivers, the process table and the scheduler.
struct Kernel;

impl Recipients for Kernel {
    fn run_handler(&mut self, handler: KernelHandler, notification: Notification, from: Pid) {
        handlers::run(handler, notification, from);
    }

    fn slot_of_domain(&mut self, domain: u16) -> Option<usize> {
        TABLE.lock().slot_of_domain(domain)
    }

    fn wake_mailbox_waiter(&mut self, slot: usize) {
        // A socket poll may watch the event counter (`proto::socket::EVENT_COUNTER`); any other
        // socket wait woken here looks again and sleeps on.
        scheduler::wake_waiter(slot, |w| matches!(w, Wait::Mailbox | Wait::Socket));
    }

    fn raise_signal(&mut self, domain: u16, signal: u8) {
        // The table's guard must be gone before waking (which takes the table again).
        let (slot, interrupted) = {
            let mut table = TABLE.lock();
            (table.slot_of_domain(domain), table.raise_signal(domain, signal))
        };
        // A receive the signal ends, or will end as it blocks (it sees the signal then), waits
        // no more: its place among the mailbox's waiters goes (the thread id is the slot).
        if let Some(slot) = slot {
            mailbox().lock().cancel_wait(domain, slot as u32);
        }
        if let Some(slot) = interrupted {
            scheduler::wake(slot, Some(proto::syscall::Error::Interrupted as i64));
        }
    }
}

/// Does what `deliveries` ask of the kernel (`gsas::node::run_deliveries`).
fn run_deliveries(deliveries: &[Delivery]) {
    node::run_deliveries(deliveries, &mut Kernel);
}

/// Delivers `notification` to this node's mailbox as the kernel (domain 0, which may send the
/// kernel opcodes) and does what the delivery asks: a kernel handler runs in the caller.
pub fn notify_local(notification: Notification) -> Result<(), DeliverError> {
    let delivery = mailbox().lock().deliver(Pid::atomic_service(cluster::node_id()), notification)?;
    run_deliveries(&[delivery]);
    Ok(())
}

/// Delivers `notification` from this node's kernel to process `domain` only (`MailboxService::
/// deliver_to`: refused if another holds its opcode), and wakes or signals it as it asked.
pub fn notify_process(domain: u16, notification: Notification) -> Result<(), DeliverError> {
    let delivery = mailbox().lock().deliver_to(domain, Pid::atomic_service(cluster::node_id()), notification)?;
    run_deliveries(&[delivery]);
    Ok(())
}

/// The kernel's request interface (`kernel_client`), from [`init`].
static KERNEL_CLIENT: IrqMutex<Option<KernelClient>> = IrqMutex::new(None);

/// Why a notification the kernel sent did not arrive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotifyError {
    /// This node's mailbox refused it.
    Refused(DeliverError),
    /// It could not leave for another node.
    NotSent(SendError),
}

/// Sends `notification` as the kernel (domain 0: kernel opcodes allowed) to node `node`'s
/// mailbox: delivered at once here, or sent through the kernel's request interface (the other
/// node's answer is counted, not awaited: `kernel_client::DELIVERED`, `REFUSED`).
pub fn notify(node: u16, notification: Notification) -> Result<(), NotifyError> {
    if node == cluster::node_id() {
        return notify_local(notification).map_err(NotifyError::Refused);
    }
    let mut client = KERNEL_CLIENT.lock();
    let client = client.as_mut().ok_or(NotifyError::NotSent(SendError::NoRoute))?;
    client.notify(node, notification).map_err(NotifyError::NotSent)
}

/// The nonce of the last Pong that came back (`ping`).
static LAST_PONG: AtomicU64 = AtomicU64::new(0);
static PINGS: AtomicU64 = AtomicU64::new(0);

/// The kernel's ping service (`Message::Ping` / `Pong`, kernel opcodes): a Ping from another
/// kernel is answered with a Pong carrying its nonce; a Pong is noted for [`ping`].
fn register_ping() {
    let on_ping = |n: Notification, from: Pid| {
        if let Some(pong) = pong_for(n) {
            let _ = notify(from.node(), pong);
        }
    };
    let on_pong = |n: Notification, _: Pid| {
        if let Some(nonce) = pong_nonce(n) {
            LAST_PONG.store(nonce, Ordering::Release);
        }
    };
    for (opcode, handler) in [(MailboxOpcode::PING, on_ping as handlers::Handler), (MailboxOpcode::PONG, on_pong)] {
        if handlers::register(opcode, handler).is_err() {
            defmt::error!("the kernel's ping service could not take its opcodes");
        }
    }
}

/// Pings node `node`'s kernel: true once its Pong comes back `within` that time.
pub fn ping(node: u16, within: core::time::Duration) -> Result<bool, NotifyError> {
    let count = PINGS.fetch_add(1, Ordering::Relaxed) + 1;
    let nonce = ping_nonce(cluster::node_id(), count);
    let ping = Message::Ping { nonce }.encode().map_err(|_| NotifyError::NotSent(SendError::NoRoute))?;
    notify(node, ping)?;
    let pong = || LAST_PONG.load(Ordering::Acquire) == nonce;
    Ok(crate::timer::wait_for(within, pong, core::hint::spin_loop).is_ok())
}

/// Lets the atomic service serve, once the node is ready. A request served earlier would find
/// the node's RPU, RDMA and sockets missing: a remote spawn's process would get no PD, and a
/// socket doorbell no handler (refused, and so lost to its sender, whose connect would wait for
/// an answer until it timed out). Until then the requests wait in MIF 0; beyond its depth they
/// are NACKed, and their senders try again.
pub fn open() {
    OPEN.store(true, Ordering::Release);
    irq::send_sgi(sgi::WAKE, 1 << SERVICE_CORE);
}

/// Serves what is in MIF 0 now before the node stops (registered with
/// `cluster::before_stop`): asks the service for a pass and waits, at most
/// [`FINAL_PASS_BOUND`], until it has found MIF 0 empty after the asking, so every request that
/// arrived before has been served (a job's exit that reached this node after the run's last
/// node ended, say). Nothing to wait for on a node that never opened.
pub fn serve_what_arrived() {
    if !OPEN.load(Ordering::Acquire) {
        return;
    }
    let wanted = PASSES_WANTED.fetch_add(1, Ordering::AcqRel).wrapping_add(1);
    irq::send_sgi(sgi::WAKE, 1 << SERVICE_CORE);
    let served = || PASSES_DONE.load(Ordering::Acquire) == wanted;
    if crate::timer::wait_for(FINAL_PASS_BOUND, served, core::hint::spin_loop).is_err() {
        defmt::warn!("the atomic service did not empty MIF 0 before the node stopped");
    }
}

/// Whether a final pass was asked for that the service has not finished.
fn pass_wanted() -> bool {
    PASSES_WANTED.load(Ordering::Acquire) != PASSES_DONE.load(Ordering::Acquire)
}

/// The atomic service, forever, on [`SERVICE_CORE`]: applies MIF 0's requests one at a time
/// (which is what makes them atomic), sends the replies through PIF 0, and sleeps while there
/// is nothing to do. It also serves the core's kernel jobs.
pub fn service_core_main() -> ! {
    let mut service = match AtomicService::new(ServiceConfig::new(cluster::node_id())) {
        Ok(s) => s,
        Err(e) => panic!("atomic service: {:?}", e),
    };
    let Some(mut pif0) = SERVICE_PIF.lock().take() else { panic!("atomic service: no PIF 0 (gsas_node::init)") };
    let Some(mut mif0) = SERVICE_MIF.lock().take() else { panic!("atomic service: no MIF 0 (gsas_node::init)") };
    let mut outbox = Outbox::new(&REPLIES_DROPPED, &REPLY_NACKS);
    // SAFETY: the service's frames come from `KernelFrames`, in the kernel's linear map.
    let mut memory = unsafe { LinearMemory::new(board::layout::KERNEL_VA_OFFSET) };
    cpu::irq_enable();
    // Only the core's kernel jobs until the node is ready ([`open`]).
    while !OPEN.load(Ordering::Acquire) {
        crate::smp::serve_jobs();
        cpu::idle_until(|| OPEN.load(Ordering::Acquire) || crate::smp::job_pending());
    }
    loop {
        crate::smp::serve_jobs();
        let mut worked = false;
        // Replies first: a full requester FIFO must not hold up the others for long, but a
        // request's replies go out in order.
        let flushed = outbox.flush(&mut pif0);
        let wanted = PASSES_WANTED.load(Ordering::Acquire);
        while !outbox.is_full() {
            let Some(words) = mif0.read_packet() else {
                PASSES_DONE.store(wanted, Ordering::Release);
                break;
            };
            worked = true;
            let mut sink = Sink::default();
            let mut env = Env {
                memory: &mut memory,
                frames: &mut Frames,
                spawner: &mut Spawn,
                notifications: &mut sink,
                processes: &mut Processes,
            };
            let begun = profile::begin();
            let outcome = service.handle_words(words_from_words128(words), &mut env);
            profile::end(begun);
            SERVED.fetch_add(1, Ordering::Relaxed);
            run_deliveries(&sink.deliveries);
            if let Outcome::Reply(replies) = outcome {
                outbox.push(replies);
            }
            outbox.flush(&mut pif0);
        }
        if worked {
            continue;
        }
        if !flushed {
            // A requester's FIFO is full: give it time to drain.
            let _ = crate::timer::wait_for(core::time::Duration::from_micros(200), || false, core::hint::spin_loop);
            continue;
        }
        // Idle: arm MIF 0 and sleep until the vmbox interrupt (or a job) wakes us.
        SERVICE_NEWS.store(false, Ordering::Release);
        with_mif(0, |mif0| mif0.arm(2));
        cpu::idle_until(|| SERVICE_NEWS.load(Ordering::Acquire) || crate::smp::job_pending() || pass_wanted());
    }
}
