//! MMIO trap and forward, the A53 side (QEMU board only; `docs/hw/forwarding.md`).
//!
//! The board leaves its forwarded regions (PL windows, SMMU, global address window) unmapped.
//! A load or store there takes a translation fault; this handler decodes the instruction at
//! ELR, emulates it against the saved frame with this core's slot as the bus, and resumes after
//! it (`exception::emulate`, host-tested). Interrupt lines of the emulated PL come back as bytes on the same UART and are dispatched
//! to the handlers registered for the PL lines' GIC interrupt IDs, exactly as on hardware.
//!
//! This module owns the channel (`devices::PlatformLink`): the UART's transmit half kicks the
//! host from whichever core faulted (core n uses slot n), its receive half is read by the
//! interrupt handler alone.

use crate::arch::{cpu, pmu};
use crate::devices::PlatformLink;
use crate::exception::emulate::Forwarding;
use crate::exception::{self, Fault, Resolution};
use crate::hooks::{AlreadySet, Hook};
use crate::irq::{self, IntId};
use crate::{Board, CORES};
use board::layout::KERNEL_VA_OFFSET;
use board::{Board as _, RegionKind};
use boot::a53::ExceptionFrame;
use core::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use hal::cadence_uart::{Rx, Tx};
use proto::forward::{Access, Failure, ForwardError, Patience, Slots, Status, Timing, forward, forward_timed};

/// Gives up on the host after this long: it answers in microseconds, but an access to a node
/// of a cluster over MPI ranks whose rank died waits until the other ranks find it silent
/// (4 s, `docs/architecture.md`, "A cluster over several ranks"), and a heavily loaded host
/// may be late by seconds. Past this, the platform is dead.
const TIMEOUT_SECS: u64 = 10;

/// What the fault handler needs, on any core: the kick and the slots.
struct Channel {
    kick: Tx,
    slots: &'static Slots,
}

static CHANNEL: spin::Once<Channel> = spin::Once::new();
/// The receive half: PL interrupt lines, read by [`on_platform_bytes`] only.
static LINES: spin::Mutex<Option<Rx>> = spin::Mutex::new(None);

/// Forwarded accesses served so far, per core (a shared counter would be a contended line
/// written on every access).
static FORWARDED: [AtomicU64; CORES] = [const { AtomicU64::new(0) }; CORES];

/// What clock times each forwarded access, for `cargo xtask bench platform --breakdown`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum TimingClock {
    Off = 0,
    /// The generic timer (`timer::now`).
    Ticks = 1,
    /// This core's PMU instruction counter (QEMU counts under `-icount` only).
    Instructions = 2,
}

static TIMING_CLOCK: AtomicU8 = AtomicU8::new(TimingClock::Off as u8);
/// The timing of each core's last forwarded access (while a clock is on).
static LAST_TIMING: spin::Mutex<[Timing; CORES]> =
    spin::Mutex::new([Timing { kicked: false, kicked_late: false, kick: 0, wait: 0, model_ns: 0 }; CORES]);

/// Instructions each core spent in forwarded accesses, from the forwarding fault handler's
/// entry to its return, while the clock is [`TimingClock::Instructions`]: the emulator's share
/// of whatever the core was doing (a board reads or writes its device in one instruction). The
/// exception's entry and exit around the handler (the vector's register save and restore, the
/// dispatch to the handler) are not in it.
static FORWARDING_INSTRUCTIONS: [AtomicU64; 4] = [const { AtomicU64::new(0) }; 4];

/// This core's [`FORWARDING_INSTRUCTIONS`] so far (take differences).
pub fn forwarding_instructions() -> u64 {
    FORWARDING_INSTRUCTIONS[cpu::core_id()].load(Ordering::Relaxed)
}

/// Times every forwarded access with `clock` from now on ([`last_timing`] reads it).
pub fn time_accesses(clock: TimingClock) {
    TIMING_CLOCK.store(clock as u8, Ordering::Release);
}

/// The timing of this core's last forwarded access.
pub fn last_timing() -> Timing {
    LAST_TIMING.lock()[cpu::core_id()]
}

/// Forwarded accesses served so far (all cores).
pub fn forwarded_count() -> u64 {
    FORWARDED.iter().map(|c| c.load(Ordering::Relaxed)).sum()
}

/// The regions the platform serves, merged where they touch (computed at compile time).
const FORWARDED_RANGES: [(u64, u64); 5] = board::ranges_of(Board::A53_MEMORY, RegionKind::Forwarded);

/// Whether physical address `pa` belongs to a region the platform serves.
pub fn is_forwarded(pa: u64) -> bool {
    board::in_ranges(&FORWARDED_RANGES, pa)
}

/// Takes the channel and installs the fault handler and the PL interrupt glue, on boards with
/// forwarding (`link` is `None` on the others).
pub fn init(link: Option<PlatformLink>) {
    let Some(PlatformLink { mut uart, slots }) = link else { return };
    uart.init();
    let (kick, mut lines) = uart.split();
    CHANNEL.call_once(|| Channel { kick, slots });
    exception::register_fault_handler(on_fault).expect("fault handler table full");
    let intid = IntId(Board::FORWARDING.and_then(|f| f.uart.intid).expect("the platform UART has an interrupt"));
    irq::register(intid, on_platform_bytes, 1 << cpu::core_id()).expect("platform UART interrupt taken");
    lines.enable_rx_interrupt();
    *LINES.lock() = Some(lines);
}

/// A byte from the platform names a PL interrupt line that went up.
fn on_platform_bytes(_: IntId) {
    let mut lines = LINES.lock();
    let Some(uart) = lines.as_mut() else { return };
    while let Some(line) = uart.read_byte() {
        if usize::from(line) < board::pl::PL_IRQ_LINES {
            irq::invoke(IntId(board::pl::pl_irq_intid(line)));
        } else {
            defmt::warn!("platform named PL interrupt line {=u8}, which does not exist", line);
        }
    }
    uart.clear_rx_interrupt();
}

/// The kernel's virtual address -> physical, for the linear map (where the kernel's views of
/// forwarded regions are).
fn kernel_pa(va: u64) -> Option<u64> {
    va.checked_sub(KERNEL_VA_OFFSET).filter(|&pa| pa < 1 << 39)
}

/// Where the running process's interface pages are: its user address -> physical, or `None`
/// for an address that is not one of its forwarded pages (set by the process subsystem).
static USER_PAGES: Hook<fn(u64) -> Option<u64>> = Hook::new();

/// Says how the running process's forwarded pages are found (boot, once).
pub fn set_user_pages(lookup: fn(va: u64) -> Option<u64>) -> Result<(), AlreadySet> {
    USER_PAGES.set(lookup)
}

fn user_pa(va: u64) -> Option<u64> {
    USER_PAGES.get()?(va)
}

/// One request through this core's slot (`slot`): what the bus sends (`proto::forward::SlotBus`).
fn request(slot: usize, access: &Access) -> Result<[u128; 2], ForwardError> {
    let unmapped = ForwardError::Host(Failure { status: Status::Unmapped, second: false });
    let channel = CHANNEL.get().ok_or(unmapped)?;
    let kick = || channel.kick.write_byte(slot as u8);
    // The deadline is set at the first look at the clock: most accesses are answered before
    // the first look, and reading the clock is an exit to the emulator.
    let mut give_up = None;
    let timed_out = || {
        let now = crate::timer::instant();
        now > *give_up
            .get_or_insert_with(|| now.after(core::time::Duration::from_secs(TIMEOUT_SECS), crate::timer::hz()))
    };
    let result = match TIMING_CLOCK.load(Ordering::Relaxed) {
        0 => forward(channel.slots, slot, access, kick, timed_out),
        clock => {
            let now =
                || if clock == TimingClock::Ticks as u8 { crate::timer::now() } else { u64::from(pmu::instructions()) };
            let patience = Patience::default();
            let (result, timing) = forward_timed(channel.slots, slot, access, patience, (kick, timed_out), now);
            LAST_TIMING.lock()[slot] = timing;
            result
        }
    };
    FORWARDED[slot].fetch_add(1, Ordering::Relaxed);
    result
}

fn on_fault(frame: &mut ExceptionFrame, fault: &Fault) -> Resolution {
    if TIMING_CLOCK.load(Ordering::Relaxed) != TimingClock::Instructions as u8 {
        return serve_fault(frame, fault);
    }
    let start = pmu::instructions();
    let resolution = serve_fault(frame, fault);
    if resolution == Resolution::Resume {
        let spent = pmu::instructions().wrapping_sub(start);
        FORWARDING_INSTRUCTIONS[cpu::core_id()].fetch_add(u64::from(spent), Ordering::Relaxed);
    }
    resolution
}

/// Serves the fault if it is a forwarded access (`exception::emulate`), through this core's
/// slot.
fn serve_fault(frame: &mut ExceptionFrame, fault: &Fault) -> Resolution {
    let translate: &dyn Fn(u64) -> Option<u64> = if fault.from_user { &user_pa } else { &kernel_pa };
    let slot = cpu::core_id();
    let mut forwarding = Forwarding { translate, is_forwarded, request: |a: &Access| request(slot, a) };
    let word = || {
        // SAFETY: ELR is the address of the instruction that just faulted: mapped and readable.
        unsafe { (fault.elr as *const u32).read_volatile() }
    };
    let undecodable = |e: &dyn core::fmt::Display| defmt::error!("cannot forward: {}", defmt::Display2Format(e));
    forwarding.serve(frame, fault, word, undecodable)
}
