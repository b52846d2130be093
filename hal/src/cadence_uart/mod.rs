//! Cadence UART driver (UG1085 chapter 21): polled transmit, interrupt-driven receive.
//!
//! One [`Uart`] is the whole block; set it up with [`Uart::init`], then [`Uart::split`] it into
//! its transmit and receive halves, which touch disjoint registers and so can have different
//! owners (the logger transmits, an interrupt handler receives).

pub mod regs;

use crate::mmio::Mmio;
use regs::{CONTROL, INTERRUPT, MODE, STATUS, UartRegisters};
use tock_registers::interfaces::{Readable, Writeable};

/// A Cadence UART, before it is split.
pub struct Uart {
    regs: Mmio<UartRegisters>,
}

impl Uart {
    /// # Safety
    ///
    /// `base` must be the mapped address of a Cadence UART register block that nothing else
    /// drives (see [`Mmio::new`]).
    pub const unsafe fn new(base: usize) -> Self {
        // SAFETY: forwarded from the caller.
        Self { regs: unsafe { Mmio::new(base) } }
    }

    /// Enables transmitter and receiver in 8N1 mode. The baud rate is left as the boot loader
    /// set it (FSBL on hardware; QEMU ignores it).
    pub fn init(&mut self) {
        self.regs.mode.write(MODE::CHRL::Bits8 + MODE::PAR::None + MODE::NBSTOP::One + MODE::CHMODE::Normal);
        self.regs.control.write(CONTROL::TX_EN::SET + CONTROL::RX_EN::SET);
    }

    /// The two halves: [`Tx`] writes the FIFO and reads the status; [`Rx`] reads the FIFO and
    /// owns the receive interrupt (trigger level, enable, status). Mode and control registers
    /// belong to neither: set them up with [`init`](Self::init) first.
    pub fn split(self) -> (Tx, Rx) {
        let addr = self.regs.addr();
        // SAFETY: the same block, by `new`'s contract owned by `self`, which is consumed here;
        // the halves touch disjoint registers (status is read-only).
        let (tx, rx) = unsafe { (Mmio::new(addr), Mmio::new(addr)) };
        (Tx { regs: tx }, Rx { regs: rx })
    }
}

/// The transmit half.
///
/// Its methods take `&self`: each byte is one FIFO write, and the owner decides how writers are
/// ordered (the console's logger has its own lock, which a panicking core may steal, and a
/// forwarded-access kick is one byte from whichever core faulted).
pub struct Tx {
    regs: Mmio<UartRegisters>,
}

impl Tx {
    /// Waits for room in the transmit FIFO, then queues `byte`.
    pub fn write_byte(&self, byte: u8) {
        while self.regs.status.is_set(STATUS::TFUL) {
            core::hint::spin_loop();
        }
        self.regs.fifo.set(u32::from(byte));
    }

    /// Queues every byte of `bytes`, in order.
    pub fn write_bytes(&self, bytes: &[u8]) {
        for &b in bytes {
            self.write_byte(b);
        }
    }

    /// Waits until every queued byte has left the transmitter.
    pub fn flush(&self) {
        while !self.regs.status.is_set(STATUS::TEMPTY) {
            core::hint::spin_loop();
        }
    }
}

/// The receive half, with the receive interrupt.
pub struct Rx {
    regs: Mmio<UartRegisters>,
}

impl Rx {
    /// Takes the next received byte, if there is one.
    pub fn read_byte(&mut self) -> Option<u8> {
        if self.regs.status.is_set(STATUS::REMPTY) { None } else { Some(self.regs.fifo.get() as u8) }
    }

    /// Raises the receive interrupt as soon as one byte is in the FIFO.
    pub fn enable_rx_interrupt(&mut self) {
        self.regs.rx_trigger.set(1);
        self.regs.intr_enable.write(INTERRUPT::RTRIG::SET);
    }

    /// Acknowledges the receive-trigger interrupt; call after draining the FIFO.
    pub fn clear_rx_interrupt(&mut self) {
        self.regs.intr_status.write(INTERRUPT::RTRIG::SET + INTERRUPT::TIMEOUT::SET);
    }
}
