//! The RPU (R5 core 0): started through the board's method, then reached through the shared
//! request/response rings of `proto::ipc`, in the area this module takes at boot (`devices`).

use crate::Board;
use crate::arch::psci;
use board::{Board as _, RpuStart};
use core::sync::atomic::{AtomicU32, Ordering};
use proto::ipc::{self, Consumer, IpcArea, Message, Producer, RING_SLOTS};
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

/// Takes the shared area (boot core, before [`start`]).
pub fn init(area: &'static IpcArea) {
    AREA.call_once(|| area);
}

type Tx = Producer<'static, Message, RING_SLOTS>;
type Rx = Consumer<'static, Message, RING_SLOTS>;

static TX: Mutex<Option<Tx>> = Mutex::new(None);
static RX: Mutex<Option<Rx>> = Mutex::new(None);
static NEXT_SEQ: AtomicU32 = AtomicU32::new(1);
static FIRMWARE_VERSION: AtomicU32 = AtomicU32::new(0);

/// Initialises the shared area, starts the R5 and waits (bounded) for its ready message.
pub fn start() -> Result<u32, RpuError> {
    handshake(true)
}

/// Re-initialises the shared area under a new boot nonce and waits for the running firmware
/// to follow (what happens on a warm reboot, or when the FSBL started the R5 first).
pub fn reconnect() -> Result<u32, RpuError> {
    handshake(false)
}

fn handshake(start: bool) -> Result<u32, RpuError> {
    let area = *AREA.get().ok_or(RpuError::NotStarted)?;
    // Any value that differs from the previous boot's will do: the counter's low bits.
    let nonce = (crate::timer::now() as u32) | 1;
    let mut rx = RX.lock();
    // SAFETY: the kernel is the only producer of `to_r5` and the only consumer of `to_a53`.
    let replies = rx.get_or_insert_with(|| unsafe { area.to_a53.consumer() });
    area.init(nonce, replies);
    drop(rx);
    // SAFETY: as above.
    TX.lock().get_or_insert_with(|| unsafe { area.to_r5.producer() });
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
    let is_ours = |m: &Message| m.op == ipc::op::READY && m.args[1] == u64::from(nonce);
    let ready = wait_reply(is_ours, crate::timer::hz() * 5).ok_or(RpuError::NoReadyMessage)?;
    let version = ready.args[0] as u32;
    FIRMWARE_VERSION.store(version, Ordering::Relaxed);
    Ok(version)
}

pub fn is_started() -> bool {
    TX.lock().is_some() && FIRMWARE_VERSION.load(Ordering::Relaxed) != 0
}

pub fn next_seq() -> u32 {
    NEXT_SEQ.fetch_add(1, Ordering::Relaxed)
}

/// Queues a request without waiting.
pub fn send(msg: Message) -> Result<(), RpuError> {
    TX.lock().as_mut().ok_or(RpuError::NotStarted)?.push(msg).map_err(|_| RpuError::Full)
}

/// Takes the next reply, if one is there.
pub fn try_recv() -> Option<Message> {
    RX.lock().as_mut()?.pop()
}

/// Waits up to `timeout` counter ticks for a reply that `wanted` accepts; other replies that
/// arrive meanwhile are dropped with a warning.
fn wait_reply(wanted: impl Fn(&Message) -> bool, timeout: u64) -> Option<Message> {
    let start = crate::timer::now();
    loop {
        if let Some(m) = try_recv() {
            if wanted(&m) {
                return Some(m);
            }
            defmt::warn!("rpu: unexpected reply op {=u32:#x} seq {=u32}", m.op, m.seq);
        }
        if crate::timer::now() - start > timeout {
            return None;
        }
        core::hint::spin_loop();
    }
}

/// Sends a request and waits (bounded) for its reply.
pub fn call(op: u32, args: [u64; 7]) -> Result<Message, RpuError> {
    let seq = next_seq();
    send(Message::new(op, seq, args))?;
    wait_reply(|m| m.seq == seq && m.op & ipc::op::REPLY != 0, crate::timer::hz() * 2).ok_or(RpuError::Timeout)
}
