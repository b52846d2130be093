//! The R5 firmware image: MPU from the board, trace ring, then serve the A53's requests.
#![no_std]
#![no_main]

use aarch32_cpu::register::{Ifar, Ifsr};
use aarch32_rt::{entry, exception};
use board::{Board as _, R5Wait};
use proto::ipc::{IpcArea, Message};
use r5_firmware::probe::Probe;
use r5_firmware::service::{Action, Service};
use r5_firmware::{Board, VERSION, halt, trace};

fn ipc_area() -> &'static IpcArea {
    // SAFETY: the board reserves this shared region for the IPC area at the same address on
    // both processors; it is accessed only through `IpcArea`'s atomics and rings.
    unsafe { &*(Board::IPC_BASE as *const IpcArea) }
}

/// Waits a little for news (see `board::R5Wait`).
fn wait_for_news() {
    match Board::R5_WAIT {
        // QEMU: WFE yields the emulated core; the loop re-checks the rings (and, later, the
        // event word the platform bumps).
        R5Wait::EventWord { .. } => aarch32_cpu::asm::wfe(),
        R5Wait::Poll => core::hint::spin_loop(),
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
    // Serve each kernel boot in turn: a new nonce means the kernel (re)initialised the rings.
    loop {
        let nonce = loop {
            if let Some(n) = area.nonce() {
                break n;
            }
            wait_for_news();
        };
        serve(area, nonce, &mut service, &mut probe);
        defmt::info!("the kernel rebooted: serving its new rings");
    }
}

/// Answers requests until the kernel publishes a different boot nonce.
fn serve(area: &'static IpcArea, nonce: u32, service: &mut Service, probe: &mut Probe) {
    // SAFETY: the firmware is the only consumer of `to_r5` and the only producer of `to_a53`;
    // the previous handles (of an older boot) were dropped when `serve` last returned.
    let (mut rx, mut tx) = unsafe { (area.to_r5.consumer(), area.to_a53.producer()) };
    // Requests of an earlier boot are dropped; the new kernel sends nothing before READY.
    rx.discard_pending();
    let current = || area.nonce() == Some(nonce);
    let mut send = |msg: Message| {
        // A full reply ring is back-pressure, never a reason to drop: wait for the A53.
        while tx.push(msg).is_err() {
            if !current() {
                return;
            }
            wait_for_news();
        }
    };
    send(Service::ready(VERSION, nonce));
    defmt::info!("serving requests");
    while current() {
        while let Some(request) = rx.pop() {
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
        wait_for_news();
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
