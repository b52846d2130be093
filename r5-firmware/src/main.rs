//! The R5 firmware image: MPU from the board, trace ring, the PLDMA engine, then serve the
//! A53's requests and schedule RDMA transfers.
#![no_std]
#![no_main]

use aarch32_cpu::register::{Ifar, Ifsr};
use aarch32_rt::{entry, exception};
use board::Board as _;
use proto::ipc::{IpcArea, Message};
use proto::rdma::ipc::RdmaConfig;
use r5_firmware::clock::Extended;
use r5_firmware::idle::{self, Idle};
use r5_firmware::once::Once;
use r5_firmware::pldma::{Pldma, QueueArea};
use r5_firmware::probe::Probe;
use r5_firmware::rdma::Scheduler;
use r5_firmware::service::{Action, Service};
use r5_firmware::sleep::Sleeper;
use r5_firmware::{Board, VERSION, halt, pmu, trace};

/// The scheduler's tables (about 21 KiB): in .bss, taken once.
static SCHEDULER: Once<Scheduler<'static>> = Once::new(Scheduler::new());

/// How long the R5 keeps looking after a round without work before it sleeps (`idle`).
const SPIN_US: u64 = 200;

fn ipc_area() -> &'static IpcArea {
    // SAFETY: the board reserves this shared region for the IPC area at the same address on
    // both processors; it is accessed only through `IpcArea`'s atomics and rings.
    unsafe { &*(Board::IPC_BASE as *const IpcArea) }
}

/// The firmware's clock: the PMU cycle counter, extended to 64 bits.
struct Clock(Extended);

impl Clock {
    fn start() -> Self {
        pmu::enable_cycle_counter();
        Self(Extended::new())
    }

    fn now(&mut self) -> u64 {
        self.0.extend(pmu::cycles())
    }
}

/// The RDMA side: the engine and the scheduler.
struct Rdma {
    pldma: Pldma,
    scheduler: &'static mut Scheduler<'static>,
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
        defmt::info!("RDMA scheduler up: node {=u16} of {=u16}", node, nodes);
        Some(Self { pldma, scheduler })
    }

    /// The reply to an RDMA request, or `None` for other requests.
    fn request(&mut self, request: &Message, now: u64) -> Option<Message> {
        let forward = (r5_firmware::forward::forwarded_count(), r5_firmware::forward::forwarded_cycles());
        self.scheduler.note_forwarded(u64::from(forward.0), u64::from(forward.1));
        self.scheduler.handle_request(request, &QueueArea, &mut self.pldma, now)
    }

    /// Takes the engine's events, then lets the scheduler work; returns whether there was
    /// any. A round that had work is timed (`RDMA_STATS` page 3): the R5's cost per block,
    /// without its idle polling.
    fn run(&mut self, now: u64) -> bool {
        let start = pmu::cycles();
        let mut events = false;
        while let Some(event) = self.pldma.next_event() {
            events = true;
            self.scheduler.on_event(&event, &mut self.pldma, now);
        }
        // With events the round had work anyway: the signature is needed only without.
        let before = if events { 0 } else { self.scheduler.work_signature() };
        self.scheduler.poll(&mut self.pldma, now);
        self.pldma.flush();
        let worked = events || self.scheduler.work_signature() != before;
        if worked {
            self.scheduler.note_busy_round(u64::from(pmu::cycles().wrapping_sub(start)));
        }
        worked
    }

    /// Whether a round would find work now (the last look before a sleep).
    fn has_work(&self, now: u64) -> bool {
        self.pldma.has_events() || self.scheduler.has_work(now)
    }
}

/// The R5's loop state between rounds: its clock, when to sleep, and how.
struct Waiting {
    clock: Clock,
    idle: Idle,
    sleeper: Sleeper,
}

impl Waiting {
    /// A round found nothing: keeps looking for a while, then sleeps until work comes (as
    /// `has_work` would see it, asked after the sleep is published) or the scheduler's next
    /// deadline. While it sleeps, processes ring the doorbell for their WQEs.
    fn after_quiet_round(&mut self, rdma: &mut Option<Rdma>, has_news: &dyn Fn() -> bool) {
        let now = self.clock.now();
        if !self.idle.time_to_sleep(now) {
            core::hint::spin_loop();
            return;
        }
        let deadline = rdma.as_ref().and_then(|r| r.scheduler.next_deadline());
        if let Some(r) = rdma.as_mut() {
            r.scheduler.stop_polling();
        }
        let clock = &mut self.clock;
        let rdma_ref = rdma.as_ref();
        self.sleeper.sleep(idle::sleep_us(now, deadline, Board::R5_CLOCK_HZ), || {
            has_news() || rdma_ref.is_some_and(|r| r.has_work(clock.now()))
        });
        if let Some(r) = rdma.as_mut() {
            r.scheduler.resume_polling();
        }
        self.idle.worked();
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
    let clock = Clock::start();
    let mut waiting = Waiting {
        clock,
        idle: Idle::new(r5_firmware::clock::ticks(SPIN_US, Board::R5_CLOCK_HZ)),
        sleeper: Sleeper::new(&area.r5_sleep, Board::R5_WAIT),
    };
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
            waiting.after_quiet_round(&mut rdma, &|| area.nonce().is_some());
        };
        if let Some(r) = &mut rdma {
            // The new kernel has no registrations; old transfers are forgotten.
            r.scheduler.reset();
        }
        serve(area, nonce, &mut service, &mut probe, &mut rdma, &mut waiting);
        defmt::info!("the kernel rebooted: serving its new rings");
    }
}

/// Answers requests and schedules RDMA until the kernel publishes a different boot nonce.
fn serve(
    area: &'static IpcArea,
    nonce: u32,
    service: &mut Service,
    probe: &mut Probe,
    rdma: &mut Option<Rdma>,
    waiting: &mut Waiting,
) {
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
            core::hint::spin_loop();
        }
    };
    send(Service::ready(VERSION, nonce));
    defmt::info!("serving requests");
    while current() {
        let mut worked = false;
        while let Some(request) = rx.pop() {
            worked = true;
            let now = waiting.clock.now();
            if let Some(reply) = rdma.as_mut().and_then(|r| r.request(&request, now)) {
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
        if let Some(r) = rdma.as_mut() {
            worked |= r.run(waiting.clock.now());
        }
        if worked {
            waiting.idle.worked();
        } else {
            waiting.after_quiet_round(rdma, &|| !area.to_r5.is_empty() || !current());
        }
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
