//! The console: defmt frames (rzCOBS, zero-terminated) on the board's console UART, decoded on
//! the host from the kernel ELF (`cargo xtask qemu`, the test runner, `--serial`).
//!
//! The logger is shared by the four cores under a spin lock taken with IRQs masked. It is also
//! the emergency console: a core that logs while it already holds the lock (an exception or a
//! panic in the middle of a log call) does not deadlock; it ends the half-written frame with a
//! zero byte, so the decoder drops only that one, and writes its own frame. A panic on another
//! core steals the lock after a bounded wait.
//!
//! This module owns the console UART (`devices`): it keeps the transmit half and gives the
//! receive half to [`input`].

pub mod input;

use crate::CORES;
use crate::arch::cpu;
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use hal::cadence_uart::{Tx, Uart};

/// The transmit half, set once by [`init`]; frames before that go nowhere.
static TX: spin::Once<Tx> = spin::Once::new();

/// Frames a core may have open at once: normal code, an exception report, a panic.
const MAX_DEPTH: usize = 3;
const FREE: usize = usize::MAX;
/// Lock spins before a panicking core takes the console from a core that holds it.
const STEAL_AFTER_SPINS: u32 = 10_000_000;

static OWNER: AtomicUsize = AtomicUsize::new(FREE);
static PANICKING: AtomicBool = AtomicBool::new(false);

struct CoreLog {
    depth: usize,
    irq: [Option<cpu::IrqState>; MAX_DEPTH],
    encoder: [defmt::Encoder; MAX_DEPTH],
}

struct PerCore(UnsafeCell<[CoreLog; CORES]>);
// SAFETY: each core only touches its own entry, with IRQs masked.
unsafe impl Sync for PerCore {}

static LOGS: PerCore = PerCore(UnsafeCell::new(
    [const { CoreLog { depth: 0, irq: [None, None, None], encoder: [const { defmt::Encoder::new() }; MAX_DEPTH] } };
        CORES],
));

/// This core's logger state.
///
/// # Safety
///
/// IRQs must be masked (so no handler on this core runs the logger concurrently).
unsafe fn this_core() -> &'static mut CoreLog {
    // SAFETY: per the caller, nothing else on this core uses the entry; other cores use theirs.
    unsafe { &mut (*LOGS.0.get())[cpu::core_id()] }
}

fn emit(bytes: &[u8]) {
    if let Some(tx) = TX.get() {
        tx.write_bytes(bytes);
    }
}

/// Takes the console UART (once, on the boot core, before anything is logged): sets it up,
/// keeps its transmit half and hands the receive half to [`input`].
pub fn init(mut uart: Uart) {
    uart.init();
    let (tx, rx) = uart.split();
    TX.call_once(|| tx);
    input::take(rx);
}

/// Marks the system as panicking: the console may now be taken from a core that holds it.
pub fn enter_panic() {
    PANICKING.store(true, Ordering::Relaxed);
}

pub fn flush() {
    if let Some(tx) = TX.get() {
        tx.flush();
    }
}

#[defmt::global_logger]
struct Logger;

// SAFETY: acquire/release bracket every frame; frames of different cores never interleave
// (lock), and nested frames on one core use their own encoder.
unsafe impl defmt::Logger for Logger {
    fn acquire() {
        let irq = cpu::irq_save_disable();
        let me = cpu::core_id();
        if OWNER.load(Ordering::Acquire) == me {
            emit(&[0]);
        } else {
            let mut spins = 0u32;
            while OWNER.compare_exchange_weak(FREE, me, Ordering::Acquire, Ordering::Relaxed).is_err() {
                spins = spins.saturating_add(1);
                if spins > STEAL_AFTER_SPINS && PANICKING.load(Ordering::Relaxed) {
                    OWNER.store(me, Ordering::Release);
                    emit(&[0]);
                    break;
                }
                core::hint::spin_loop();
            }
        }
        // SAFETY: IRQs are masked.
        let log = unsafe { this_core() };
        if log.depth < MAX_DEPTH {
            log.irq[log.depth] = Some(irq);
            log.encoder[log.depth].start_frame(emit);
        } else {
            // Too deep to log: keep the bracket balanced and write nothing. IRQs stay masked;
            // the outermost frame restores them.
            let _ = irq;
        }
        log.depth += 1;
    }

    unsafe fn flush() {
        flush();
    }

    unsafe fn release() {
        // SAFETY: IRQs are still masked from `acquire`.
        let log = unsafe { this_core() };
        log.depth -= 1;
        if log.depth < MAX_DEPTH {
            log.encoder[log.depth].end_frame(emit);
        }
        let irq = if log.depth < MAX_DEPTH { log.irq[log.depth].take() } else { None };
        if log.depth == 0 {
            OWNER.store(FREE, Ordering::Release);
        }
        if let Some(irq) = irq {
            cpu::irq_restore(irq);
        }
    }

    unsafe fn write(bytes: &[u8]) {
        // SAFETY: IRQs are masked between `acquire` and `release`.
        let log = unsafe { this_core() };
        if let Some(encoder) = log.encoder.get_mut(log.depth - 1) {
            encoder.write(bytes, emit);
        }
    }
}

defmt::timestamp!("{=u64:us}", crate::timer::uptime_us());
