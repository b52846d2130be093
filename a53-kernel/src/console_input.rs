//! Keyboard input on the console UART: the receive interrupt queues bytes for whoever reads
//! them (the demo's little command loop).

use crate::Board;
use crate::arch::{cpu, phys_to_virt};
use crate::irq::{self, IntId};
use board::Board as _;
use hal::cadence_uart::Uart;
use spin::Mutex;

// SAFETY: the receive side of the console UART is only driven from here (the transmit side
// belongs to `console`; the two touch disjoint registers except the shared interrupt enable,
// which only this module writes).
static RX: Uart = unsafe { Uart::new(phys_to_virt(Board::CONSOLE_UART.base)) };

static QUEUE: Mutex<heapless::Deque<u8, 256>> = Mutex::new(heapless::Deque::new());

fn on_rx(_: IntId) {
    let mut queue = QUEUE.lock();
    while let Some(byte) = RX.read_byte() {
        // A full queue drops new keystrokes, never the interrupt.
        let _ = queue.push_back(byte);
    }
    RX.clear_rx_interrupt();
}

/// Enables the receive interrupt, routed to the calling core.
pub fn enable() -> Result<(), crate::irq_table::IrqError> {
    let intid = IntId(Board::CONSOLE_UART.intid.expect("the console UART has an interrupt"));
    irq::register(intid, on_rx, 1 << cpu::core_id())?;
    RX.enable_rx_interrupt();
    Ok(())
}

/// Waits (asleep) for the next byte.
pub fn read_byte() -> u8 {
    let mut byte = None;
    cpu::idle_until(|| {
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
