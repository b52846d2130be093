//! Keyboard input on the console UART: the receive interrupt queues bytes for whoever reads
//! them (the demo's little command loop).

use crate::Board;
use crate::arch::cpu;
use crate::irq::{self, IntId};
use crate::sync::IrqMutex;
use board::Board as _;
use hal::cadence_uart::Rx;
use spin::Mutex;

/// The console UART's receive half, from [`super::init`]. Taken by the receive interrupt and
/// by [`enable`].
static RX: IrqMutex<Option<Rx>> = IrqMutex::new(None);

static QUEUE: Mutex<heapless::Deque<u8, 256>> = Mutex::new(heapless::Deque::new());

/// Keeps the receive half (the console hands it over at boot).
pub(super) fn take(rx: Rx) {
    *RX.lock() = Some(rx);
}

fn on_rx(_: IntId) {
    let mut rx = RX.lock();
    let Some(rx) = rx.as_mut() else { return };
    let mut queue = QUEUE.lock();
    while let Some(byte) = rx.read_byte() {
        // A full queue drops new keystrokes, never the interrupt.
        let _ = queue.push_back(byte);
    }
    rx.clear_rx_interrupt();
}

/// Why console input cannot be had.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputError {
    /// The receive interrupt could not be registered.
    Irq(crate::irq::table::IrqError),
    /// The console has not been set up (`console::init`).
    NoConsole,
}

/// Enables the receive interrupt, routed to the calling core.
pub fn enable() -> Result<(), InputError> {
    let intid = IntId(Board::CONSOLE_UART.intid.expect("the console UART has an interrupt"));
    if RX.lock().is_none() {
        return Err(InputError::NoConsole);
    }
    irq::register(intid, on_rx, 1 << cpu::core_id()).map_err(InputError::Irq)?;
    if let Some(rx) = RX.lock().as_mut() {
        rx.enable_rx_interrupt();
    }
    Ok(())
}

/// Waits (asleep) for the next byte.
pub fn read_byte() -> u8 {
    let mut byte = None;
    crate::timer::idle_until(|| {
        byte = QUEUE.lock().pop_front();
        byte.is_some()
    });
    byte.unwrap_or_default()
}

/// Reads a line into `buf` (without its end, Enter: `\r` or `\n`) and returns its length. Bytes
/// past `buf`'s end are dropped; backspace (0x08, 0x7f) takes back the last byte. The host
/// edits and echoes the line (`docs/hw/console.md`, "Asking for a line").
pub fn read_line(buf: &mut [u8]) -> usize {
    let mut len = 0;
    loop {
        match read_byte() {
            b'\r' | b'\n' => return len,
            0x08 | 0x7f => len = len.saturating_sub(1),
            byte if len < buf.len() => {
                buf[len] = byte;
                len += 1;
            }
            _ => {}
        }
    }
}
