//! The R5 firmware image: MPU from the board, trace ring, the PLDMA engine, then serve the
//! A53's requests and schedule RDMA transfers.
#![no_std]
#![no_main]

use aarch32_cpu::register::{Ifar, Ifsr};
use aarch32_rt::{entry, exception};
use board::{Board as _, R5Wait};
use core::sync::atomic::{AtomicU32, Ordering};
use proto::ipc::{IpcArea, Message};
use proto::rdma::ipc::RdmaConfig;
use r5_firmware::clock::Extended;
use r5_firmware::once::Once;
use r5_firmware::pldma::{Pldma, QueueArea};
use r5_firmware::probe::Probe;
use r5_firmware::rdma::Scheduler;
use r5_firmware::service::{Action, Service};
use r5_firmware::{Board, VERSION, halt, pmu, trace};

/// The scheduler's tables (about 17 KiB): in .bss, taken once.
static SCHEDULER: Once<Scheduler<'static>> = Once::new(Scheduler::new());

/// WFE rounds the idle loop waits for the event word before it looks at the IPC ring and the
/// queues again (they are not signalled through the word).
const WAIT_ROUNDS: u32 = 16;

fn ipc_area() -> &'static IpcArea {
    // SAFETY: the board reserves this shared region for the IPC area at the same address on
    // both processors; it is accessed only through `IpcArea`'s atomics and rings.
    unsafe { &*(Board::IPC_BASE as *const IpcArea) }
}

fn event_word() -> Option<&'static AtomicU32> {
    match Board::R5_WAIT {
        // SAFETY: the board reserves this word of the shared platform area, which the MPU maps;
        // the platform and the firmware only access it atomically.
        R5Wait::EventWord { addr } => Some(unsafe { &*(addr as usize as *const AtomicU32) }),
        R5Wait::Poll => None,
    }
}

fn events_seen() -> u32 {
    event_word().map_or(0, |w| w.load(Ordering::Acquire))
}

/// Waits a little for news (see `board::R5Wait`): on QEMU until the platform bumps the event
/// word past `seen` (engine events, doorbells) or a few WFE rounds pass; on the board, polls.
fn wait_for_news(seen: u32) {
    match event_word() {
        Some(word) => {
            for _ in 0..WAIT_ROUNDS {
                if word.load(Ordering::Acquire) != seen {
                    return;
                }
                aarch32_cpu::asm::wfe();
            }
        }
        None => core::hint::spin_loop(),
    }
}

/// The RDMA side: the engine, the scheduler and its clock.
struct Rdma {
    pldma: Pldma,
    scheduler: &'static mut Scheduler<'static>,
    clock: Extended,
}

impl Rdma {
    /// Starts the engine and the scheduler; without an engine (or a system block) the firmware
    /// serves the IPC ring alone, and RDMA requests are answered UNKNOWN.
    fn start(probe: &Probe) -> Option<Self> {
        let Some((node, nodes)) = probe.node_and_count() else {
            defmt::error!("RDMA off: the system block does not answer");
            return None;
        };
        let pldma = match Pldma::start() {
            Ok((pldma, engine_node)) => {
                if engine_node != node {
                    defmt::warn!("the PLDMA says node {=u16}, the system block {=u16}", engine_node, node);
                }
                pldma
            }
            Err(_) => {
                defmt::error!("RDMA off: the PLDMA engine did not start");
                return None;
            }
        };
        let scheduler = SCHEDULER.take()?;
        let config = RdmaConfig {
            max_timeouts: Board::RDMA_MAX_TIMEOUTS,
            ..RdmaConfig::with_timeout_us(Board::RDMA_TIMEOUT_US)
        };
        scheduler.start(node, nodes, config, Board::R5_CLOCK_HZ);
        pmu::enable_cycle_counter();
        defmt::info!("RDMA scheduler up: node {=u16} of {=u16}", node, nodes);
        Some(Self { pldma, scheduler, clock: Extended::new() })
    }

    fn now(&mut self) -> u64 {
        self.clock.extend(pmu::cycles())
    }

    /// The reply to an RDMA request, or `None` for other requests.
    fn request(&mut self, request: &Message) -> Option<Message> {
        let now = self.now();
        let forward = (r5_firmware::forward::forwarded_count(), r5_firmware::forward::forwarded_cycles());
        self.scheduler.note_forwarded(u64::from(forward.0), u64::from(forward.1));
        self.scheduler.handle_request(request, &QueueArea, &mut self.pldma, now)
    }

    /// Takes the engine's events, then lets the scheduler work. A round that had work is timed
    /// (`RDMA_STATS` page 3): the R5's cost per block, without its idle polling.
    fn run(&mut self) {
        let start = pmu::cycles();
        let now = self.now();
        let mut events = false;
        while let Some(event) = self.pldma.next_event() {
            events = true;
            self.scheduler.on_event(&event, &mut self.pldma, now);
        }
        let before = self.scheduler.work_signature();
        self.scheduler.poll(&mut self.pldma, now);
        self.pldma.flush();
        if events || self.scheduler.work_signature() != before {
            self.scheduler.note_busy_round(u64::from(pmu::cycles().wrapping_sub(start)));
        }
    }
}

#[entry]
fn main() -> ! {
    trace::init();
    defmt::info!("R5 firmware {=u32:#x} on {=str}", VERSION, Board::NAME);
    if let Err(e) = boot::r5::configure_mpu(Board::R5_MEMORY) {
        let why = match e {
            boot::r5::MpuSetupError::BadRegion(name) => name,
            boot::r5::MpuSetupError::TooManyRegions => "too many regions",
            boot::r5::MpuSetupError::Mpu(_) => "the MPU refused the configuration",
        };
        defmt::error!("MPU set-up failed: {=str}", why);
    }
    let area = ipc_area();
    let mut service = Service::new();
    // SAFETY: the system block (device on hardware, forwarded on QEMU); this is the firmware's
    // only handle to it, and the probe its only user.
    let mut probe = Probe::new(unsafe { hal::sysblock::Sysblock::new(board::pl::SYSBLOCK_BASE as usize) });
    let mut rdma = Rdma::start(&probe);
    // Serve each kernel boot in turn: a new nonce means the kernel (re)initialised the rings.
    loop {
        let nonce = loop {
            if let Some(n) = area.nonce() {
                break n;
            }
            wait_for_news(events_seen());
        };
        if let Some(r) = &mut rdma {
            // The new kernel has no registrations; old transfers are forgotten.
            r.scheduler.reset();
        }
        serve(area, nonce, &mut service, &mut probe, &mut rdma);
        defmt::info!("the kernel rebooted: serving its new rings");
    }
}

/// Answers requests and schedules RDMA until the kernel publishes a different boot nonce.
fn serve(area: &'static IpcArea, nonce: u32, service: &mut Service, probe: &mut Probe, rdma: &mut Option<Rdma>) {
    // SAFETY: the firmware is the only consumer of `to_r5` and the only producer of `to_a53`;
    // the previous handles (of an older boot) were dropped when `serve` last returned.
    let (mut rx, mut tx) = unsafe { (area.to_r5.consumer(), area.to_a53.producer()) };
    // Requests of an earlier boot are dropped; the new kernel sends nothing before READY.
    rx.discard_pending();
    let current = || area.nonce() == Some(nonce);
    let mut send = |msg: Message| {
        // A full reply ring is back-pressure, never a reason to drop: wait for the A53. Except
        // for the reply to a post, which the A53 discards unread: the kernel posts fault
        // answers from its interrupt handler and reads their replies only when it next posts,
        // so waiting for room there would stop the scheduler (and let its timeouts fire) until
        // another fault came.
        while tx.push(msg).is_err() {
            if !current() || msg.seq & proto::ipc::POSTED != 0 {
                return;
            }
            wait_for_news(events_seen());
        }
    };
    send(Service::ready(VERSION, nonce));
    defmt::info!("serving requests");
    while current() {
        let seen = events_seen();
        while let Some(request) = rx.pop() {
            if let Some(reply) = rdma.as_mut().and_then(|r| r.request(&request)) {
                send(reply);
                continue;
            }
            let (mut reply, action) = service.handle(&request);
            match action {
                Action::TraceNonce(nonce) => defmt::info!("trace nonce {=u64:#x}", nonce),
                Action::PlProbe { scratch, reads } => {
                    let (id, p) = (probe.identity(), probe.scratch_round_trip(scratch));
                    let (median, p99) = probe.time_reads(reads);
                    let (node, id_reg) = id;
                    reply.args = [u64::from(node), u64::from(p), u64::from(id_reg), u64::from(reads), median, p99, 0];
                }
                Action::FaultTest(addr) => {
                    defmt::warn!("fault self-test: loading from {=u32:#010x}", addr);
                    // SAFETY: not safe: the load is meant to fault, and the abort handler stops
                    // the firmware after reporting it.
                    let value = unsafe { core::ptr::read_volatile(addr as *const u32) };
                    defmt::error!("fault self-test: the load returned {=u32:#x}: the MPU let it through", value);
                }
                Action::None => {}
            }
            if reply.op == proto::ipc::op::UNKNOWN {
                defmt::warn!("unknown request op {=u32:#x} (seq {=u32})", request.op, request.seq);
            }
            send(reply);
        }
        if let Some(r) = rdma {
            r.run();
        }
        wait_for_news(seen);
    }
}

#[exception(PrefetchAbort)]
fn prefetch_abort(addr: usize) -> ! {
    defmt::error!(
        "prefetch abort at PC {=usize:#010x}: IFAR {=u32:#010x}, IFSR {=u32:#010x}",
        addr,
        Ifar::read().0,
        Ifsr::read().raw_value()
    );
    halt()
}

#[exception(Undefined)]
fn undefined(addr: usize) -> ! {
    defmt::error!("undefined instruction at PC {=usize:#010x}", addr);
    halt()
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    match info.location() {
        Some(loc) => defmt::error!(
            "panicked at {=str}:{=u32}: {}",
            loc.file(),
            loc.line(),
            defmt::Display2Format(&info.message())
        ),
        None => defmt::error!("panicked: {}", defmt::Display2Format(&info.message())),
    }
    halt()
}
