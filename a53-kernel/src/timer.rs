//! Time: the system counter, the periodic tick (core 0 and the process cores) and one-shot
//! alarms (any core).
//!
//! The tick serves the clients that registered for it ([`register_tick_client`]): core 0's
//! (process deadlines, the sockets' outbox) and the process cores' (preemption). A client whose
//! need is exact (a blocked process's deadline) gets an interrupt at its counter value, between
//! two ticks if need be, so a wait ends when asked and not at the next tick. A core that idles
//! through [`idle_until`] stops its tick unless a client still needs it: the comparator is set to
//! the earliest deadline a client asks for, or off, and back to the next tick when the core
//! wakes. Ticks skipped meanwhile are counted at the next tick interrupt, so [`ticks`] stays
//! exact; an idle node costs the host nothing between interrupts. The decisions are
//! `time::tick`'s.

use crate::CORES;
use crate::arch::cpu;
use crate::hooks::{Full, Hooks};
use crate::irq::{self, IntId, sgi};
use crate::time::tick::{self, Comparator, CoreTimer};
use crate::time::{self, Instant, TimedOut};
use board::Board as _;
use core::sync::atomic::{AtomicU64, Ordering};
use core::time::Duration;
use hal::generic_timer::SystemTimer;

pub use crate::time::tick::{AlarmCallback, Need, TickClient};

/// The kernel tick: 100 Hz.
pub const TICK_HZ: u64 = 100;

static TICKS: AtomicU64 = AtomicU64::new(0);

/// Per core: its tick, its alarm, and whether its tick is stopped while it idles.
static CORE_TIMERS: [CoreTimer; CORES] = [const { CoreTimer::new() }; CORES];

/// The tick's clients (registered at boot, before the cores they name tick).
static TICK_CLIENTS: Hooks<TickClient, 8> = Hooks::new();

/// The comparator of the calling core's EL1 physical timer (banked per core).
struct ThisCore;

impl Comparator for ThisCore {
    fn set_deadline(&self, deadline: u64) {
        timer().set_deadline(deadline);
    }

    fn stop(&self) {
        timer().stop();
    }
}

/// Registers `client` for the tick of its cores (at boot, before the cores it names tick).
pub fn register_tick_client(client: TickClient) -> Result<(), Full> {
    TICK_CLIENTS.register(client)
}

/// A tick client of the cores among `cores` needs `need` (a process blocked with a deadline, a
/// doorbell waits to be sent again), published before this call: each of those cores whose
/// comparator does not meet it sets it again, this one at once, the others when the SGI this
/// sends reaches them (`tick::needs_changed`, which also says why no need is lost to a core
/// deciding at the same time).
pub fn needs_changed(cores: u8, need: Need) {
    let behind = tick::needs_changed(&CORE_TIMERS, cores, need);
    let me = 1 << cpu::core_id();
    if behind & me != 0 {
        cpu::without_irqs(recheck);
    }
    if behind & !me != 0 {
        irq::send_sgi(sgi::TIMER, behind & !me);
    }
}

/// This core's timer decides again if a client's need grew beyond it (the SGI
/// [`needs_changed`] sends, or its own call). Interrupts masked.
fn recheck() {
    let core = cpu::core_id();
    CORE_TIMERS[core].on_recheck(core, || TICK_CLIENTS.iter(), &ThisCore);
}

/// Sleeps until `ready()` holds, as [`cpu::idle_until`] does, and lets this core's tick stop
/// meanwhile: the first tick that finds the core idling with no client due before the next one
/// stops it (`CoreTimer::on_interrupt`), so that a core idling between two short pieces of work
/// (a process waiting for a reply) never touches its timer. A client's need that grows meanwhile
/// ([`needs_changed`]) sets the comparator again; when the core leaves, the tick resumes at its
/// next deadline (at once if that passed: the tick interrupt then counts the ticks skipped and
/// runs the clients).
pub fn idle_until(ready: impl FnMut() -> bool) {
    let core = cpu::core_id();
    let t = &CORE_TIMERS[core];
    if !t.has_tick() {
        return cpu::idle_until(ready);
    }
    t.enter_idle();
    cpu::idle_until(ready);
    cpu::without_irqs(|| t.leave_idle(core, || TICK_CLIENTS.iter(), &ThisCore));
}

pub fn timer() -> SystemTimer {
    SystemTimer::with_fallback(crate::Board::TIMER_HZ)
}

pub fn now() -> u64 {
    timer().now()
}

pub fn hz() -> u64 {
    timer().rate().hz
}

/// The counter now, as an [`Instant`].
pub fn instant() -> Instant {
    Instant::from_ticks(now())
}

/// The instant `span` from now.
pub fn deadline_in(span: Duration) -> Instant {
    instant().after(span, hz())
}

/// Waits up to `span` for `ready`, calling `pause` between two looks (a spin, or a nap).
pub fn wait_for(span: Duration, ready: impl FnMut() -> bool, pause: impl FnMut()) -> Result<(), TimedOut> {
    time::wait_until(deadline_in(span), instant, ready, pause)
}

/// Waits up to `span` for `ready` asleep (WFI between looks: an interrupt, the tick at the
/// latest, wakes the core to look again).
pub fn idle_for(span: Duration, mut ready: impl FnMut() -> bool) -> Result<(), TimedOut> {
    let deadline = deadline_in(span);
    let mut came = false;
    cpu::idle_until(|| {
        came = ready();
        came || instant() > deadline
    });
    if came { Ok(()) } else { Err(TimedOut) }
}

/// Microseconds since the counter started (the console's timestamps, `TIME_US`).
pub fn uptime_us() -> u64 {
    let t = timer();
    t.rate().us_from_ticks(t.now())
}

pub fn tick_period() -> u64 {
    hz() / TICK_HZ
}

pub fn ticks() -> u64 {
    TICKS.load(Ordering::Relaxed)
}

/// This core's next periodic tick deadline (counter value), if it has a periodic tick. The
/// tick count advances by one for each deadline passed, so across two reads on the tick core
/// (IRQs masked) the deadline moves by exactly `tick_period()` per tick counted.
pub fn next_tick() -> Option<u64> {
    CORE_TIMERS[cpu::core_id()].next_tick()
}

pub fn intid() -> IntId {
    IntId(crate::Board::TIMER_INTID)
}

/// Registers the timer interrupt and the SGI of [`needs_changed`] (boot core) and starts the
/// periodic tick on this core.
pub fn init_boot_core() {
    irq::register(intid(), on_interrupt, 0).expect("timer interrupt taken");
    irq::register(IntId::sgi(sgi::TIMER), |_| recheck(), 0).expect("timer SGI taken");
    start_periodic_tick();
}

/// Enables the (banked) timer interrupt and the timer's SGI on a secondary core; it has no
/// periodic tick.
pub fn init_this_core() {
    irq::enable_private(intid());
    irq::enable_private(IntId::sgi(sgi::TIMER));
}

/// A process core: a periodic tick for preemption (`scheduler::on_tick`).
pub fn start_preemption_tick() {
    start_periodic_tick();
}

fn start_periodic_tick() {
    CORE_TIMERS[cpu::core_id()].start(now(), tick_period(), &ThisCore);
}

/// Arms a one-shot alarm on this core at counter value `deadline`, in place of one armed
/// before. Only on cores without the periodic tick.
pub fn set_alarm(deadline: u64, callback: AlarmCallback) {
    CORE_TIMERS[cpu::core_id()].set_alarm(deadline, callback, &ThisCore);
}

/// Sleeps (WFI) until the counter passes `deadline`, on a core with the periodic tick, which
/// wakes it: the sleep ends at the first tick (or other interrupt) after the deadline, at most
/// one tick period late. For polling loops that should leave the host's CPU to others.
pub fn sleep_until(deadline: u64) {
    assert!(CORE_TIMERS[cpu::core_id()].has_tick(), "sleep on a core without a tick");
    cpu::idle_until(|| now() >= deadline);
}

/// The timer interrupt: this core's tick (core 0 counts [`ticks`]) or its alarm.
fn on_interrupt(_: IntId) {
    let now = now();
    let core = cpu::core_id();
    let passed = CORE_TIMERS[core].on_interrupt(core, now, || TICK_CLIENTS.iter(), &ThisCore);
    if core == 0 {
        TICKS.fetch_add(passed, Ordering::Relaxed);
    }
}
