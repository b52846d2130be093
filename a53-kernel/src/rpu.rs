//! The RPU (R5 core 0): started through the board's method, then reached through the shared
//! request/response rings of `proto::ipc`, in the area this module takes at boot (`devices`).
//!
//! The R5 may sleep when it has nothing to do; every request queued (and every new boot nonce)
//! is followed by a look at its sleep line, and the APU's IPI rings its doorbell when it sleeps
//! (`docs/hw/ipi.md`).
//!
//! Two kinds of request: a call ([`call`]) waits for its reply, one call at a time (threads
//! only); a post ([`post`]) does not wait, and may come from an interrupt handler (the PLDMA's
//! fault answers). A post's sequence number has [`POSTED`] set, so whoever reads its reply out
//! of the ring drops it: the reply ring never fills with answers nobody reads (a full ring
//! would stall the R5).
//!
//! The ring protocol itself (matching replies, parking, the doorbell rule, the bounded wait) is
//! `rpu_link`'s, host-tested; this module keeps its one link behind a lock, rings the IPI and
//! starts the R5.

use crate::Board;
use crate::arch::psci;
use crate::hooks::{Full, Hooks};
use crate::rpu_link::{self, Link, Sequence, ready_for, reply_to};
use crate::sync::IrqMutex;
use board::{Board as _, RpuStart};
use core::sync::atomic::{AtomicU32, Ordering};
use core::time::Duration;
use hal::zynqmp_ipi::{Ipi, agent};
use proto::ipc::{IpcArea, Message};
use spin::Mutex;

/// Where the R5 starts: its reset vector (the firmware links its vector table at 0).
const R5_ENTRY: u64 = 0;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RpuError {
    PsciCpuOn(psci::PsciError),
    NoReadyMessage,
    Timeout,
    Full,
    NotStarted,
}

static AREA: spin::Once<&'static IpcArea> = spin::Once::new();
/// The R5's doorbell: the APU's IPI channel. A leaf lock, taken inside [`LINK`]'s.
static DOORBELL: IrqMutex<Option<Ipi>> = IrqMutex::new(None);

/// Takes the shared area and the APU's IPI channel (boot core, before [`start`]).
pub fn init(area: &'static IpcArea, ipi: Ipi) {
    AREA.call_once(|| area);
    *DOORBELL.lock() = Some(ipi);
}

/// Rings the R5's doorbell (the [`Link`] decides when: `docs/hw/ipi.md`, "The rule that loses no
/// wake-up").
fn ring_doorbell() {
    if let Some(ipi) = DOORBELL.lock().as_mut() {
        ipi.trigger(agent::RPU0);
    }
}

/// Both rings' kernel ends, from the first handshake on. Taken by interrupt handlers too (posts,
/// draining): interrupts are masked while held, and it is held for one operation at a time.
static LINK: IrqMutex<Option<Link<'static>>> = IrqMutex::new(None);
/// One call (or handshake) at a time, so that the one reply waited for is known.
static CALL: Mutex<()> = Mutex::new(());
static NEXT_SEQ: Sequence = Sequence::new();
static FIRMWARE_VERSION: AtomicU32 = AtomicU32::new(0);

/// How long a call waits for its reply: on QEMU a loaded host can keep the R5's vCPU from
/// running for seconds.
const CALL_SECONDS: u64 = 5;

pub use proto::ipc::POSTED;

/// Initialises the shared area, starts the R5 and waits (bounded) for its ready message.
pub fn start() -> Result<u32, RpuError> {
    handshake(true)
}

/// Re-initialises the shared area under a new boot nonce and waits for the running firmware
/// to follow (what happens on a warm reboot, or when the FSBL started the R5 first). The
/// firmware then forgets every RDMA registration: whoever registered with [`on_reconnect`] (the
/// sockets, for the kernel's own registration) makes theirs again.
pub fn reconnect() -> Result<u32, RpuError> {
    let version = handshake(false)?;
    for f in RECONNECTED.iter() {
        f();
    }
    Ok(version)
}

/// Who makes its registrations with the R5 again after a [`reconnect`].
static RECONNECTED: Hooks<fn(), 2> = Hooks::new();

/// Registers `f` to run after each [`reconnect`].
pub fn on_reconnect(f: fn()) -> Result<(), Full> {
    RECONNECTED.register(f)
}

fn handshake(start: bool) -> Result<u32, RpuError> {
    let area = *AREA.get().ok_or(RpuError::NotStarted)?;
    let _call = CALL.lock();
    // Any value that differs from the previous boot's will do: the counter's low bits.
    let nonce = (crate::timer::now() as u32) | 1;
    // SAFETY: the kernel is the only producer of `to_r5` and the only consumer of `to_a53`, and
    // `LINK` holds its one link for good.
    LINK.lock().get_or_insert_with(|| unsafe { Link::new(area) }).restart(nonce, ring_doorbell);
    match Board::RPU_START {
        _ if !start => {}
        RpuStart::PsciCpuOn { mpidr } => {
            psci::cpu_on_32(mpidr as u32, R5_ENTRY as u32, 0).map_err(RpuError::PsciCpuOn)?
        }
        // On hardware the FSBL has usually started the firmware from its BOOT.bin partition
        // already; the PMU firmware then refuses the wake-up, and the READY below decides.
        RpuStart::PmRequestWakeup { node_id } => {
            if let Err(status) = crate::arch::pm::request_wakeup(node_id, R5_ENTRY) {
                defmt::info!("RPU wake-up request: status {=i32} (already running?)", status);
            }
        }
    }
    let ready =
        wait_reply(ready_for(nonce), Duration::from_secs(5), core::hint::spin_loop).ok_or(RpuError::NoReadyMessage)?;
    let version = ready.args[0] as u32;
    FIRMWARE_VERSION.store(version, Ordering::Relaxed);
    Ok(version)
}

/// Whether the R5 sleeps now (`docs/hw/ipi.md`), and the doorbells the kernel rang so far.
pub fn r5_sleep_state() -> Option<(bool, u32)> {
    let area = *AREA.get()?;
    let rings = area.a53_wake.rings.load(Ordering::Relaxed);
    Some((area.r5_sleep.sleeper().is_some(), rings))
}

/// The number of the R5's last sleep: how many it has slept (wraps).
pub fn r5_sleeps() -> Option<u32> {
    Some(AREA.get()?.r5_sleep.last())
}

pub fn is_started() -> bool {
    LINK.lock().is_some() && FIRMWARE_VERSION.load(Ordering::Relaxed) != 0
}

/// A sequence number for a request (never with [`POSTED`] set).
pub fn next_seq() -> u32 {
    NEXT_SEQ.next()
}

/// Runs `f` on the link under its lock; `NotStarted` before the first handshake.
fn with_link<R>(f: impl FnOnce(&mut Link<'static>) -> R) -> Result<R, RpuError> {
    LINK.lock().as_mut().map(f).ok_or(RpuError::NotStarted)
}

/// Queues a request without waiting, and wakes the R5 if it sleeps.
pub fn send(msg: Message) -> Result<(), RpuError> {
    with_link(|link| link.send(msg, ring_doorbell))?.map_err(|_| RpuError::Full)
}

/// Takes the next reply, if one is there. For tests that drive the ring themselves; other
/// users go through [`call`] and [`post`].
pub fn try_recv() -> Option<Message> {
    with_link(Link::pop).ok().flatten()
}

/// Queues request `op` without waiting for its reply, which is dropped when it is read (from
/// any context). Returns `Full` when the request ring has no room.
pub fn post(op: u32, args: [u64; 7]) -> Result<(), RpuError> {
    with_link(|link| link.post(op, next_seq(), args, ring_doorbell))?.map_err(|_| RpuError::Full)
}

/// (posts the R5 refused, posts lost to a full ring) so far.
pub fn post_counters() -> (u64, u64) {
    with_link(|link| link.post_counters()).unwrap_or((0, 0))
}

/// Reports a reply nobody waited for (a caller that gave up, or an earlier boot's).
fn unexpected(m: &Message) {
    defmt::warn!("rpu: unexpected reply op {=u32:#x} seq {=u32}", m.op, m.seq);
}

/// Reads every reply that has arrived: replies to posts are dropped, any other is kept for the
/// call waiting for it. Called after posting, so that the reply ring does not fill while no
/// call reads it.
pub fn drain() {
    let _ = with_link(|link| link.drain(unexpected));
}

/// Waits up to `timeout` for a reply that `wanted` accepts, calling `pause` between two looks
/// at the ring (`rpu_link::wait_for_reply`). The caller holds [`CALL`].
fn wait_reply(wanted: impl Fn(&Message) -> bool, timeout: Duration, pause: impl FnMut()) -> Option<Message> {
    let look = || with_link(|link| link.look(&wanted, unexpected)).ok().flatten();
    rpu_link::wait_for_reply(crate::timer::deadline_in(timeout), crate::timer::instant, look, pause)
}

/// [`call`] for a request the R5 takes a while over (milliseconds): the caller sleeps between
/// looks at the ring (WFI until the next interrupt; a core with the periodic tick wakes at least
/// every tick), so that it leaves the host's CPU to the R5 on QEMU, whose host threads the
/// caller's spinning vCPU would otherwise compete with.
pub fn call_patiently(op: u32, args: [u64; 7]) -> Result<Message, RpuError> {
    let _call = CALL.lock();
    let seq = next_seq();
    send(Message::new(op, seq, args))?;
    let nap = || crate::timer::sleep_until(crate::timer::deadline_in(Duration::from_micros(100)).ticks());
    wait_reply(reply_to(seq), Duration::from_secs(CALL_SECONDS), nap).ok_or(RpuError::Timeout)
}

/// Sends a request and waits (bounded) for its reply. Threads only (it may wait for another
/// call to finish first).
pub fn call(op: u32, args: [u64; 7]) -> Result<Message, RpuError> {
    let _call = CALL.lock();
    let seq = next_seq();
    send(Message::new(op, seq, args))?;
    wait_reply(reply_to(seq), Duration::from_secs(CALL_SECONDS), core::hint::spin_loop).ok_or(RpuError::Timeout)
}
