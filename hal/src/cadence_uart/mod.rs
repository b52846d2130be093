//! Cadence UART driver: polled transmit, interrupt-driven receive.

pub mod regs;

use crate::mmio::Mmio;
use regs::{CONTROL, INTERRUPT, MODE, STATUS, UartRegisters};
use tock_registers::interfaces::{Readable, Writeable};

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
    pub fn init(&self) {
        self.regs.mode.write(MODE::CHRL::Bits8 + MODE::PAR::None + MODE::NBSTOP::One + MODE::CHMODE::Normal);
        self.regs.control.write(CONTROL::TX_EN::SET + CONTROL::RX_EN::SET);
    }

    pub fn write_byte(&self, byte: u8) {
        while self.regs.status.is_set(STATUS::TFUL) {
            core::hint::spin_loop();
        }
        self.regs.fifo.set(u32::from(byte));
    }

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

    pub fn read_byte(&self) -> Option<u8> {
        if self.regs.status.is_set(STATUS::REMPTY) { None } else { Some(self.regs.fifo.get() as u8) }
    }

    /// Raises the receive interrupt as soon as one byte is in the FIFO.
    pub fn enable_rx_interrupt(&self) {
        self.regs.rx_trigger.set(1);
        self.regs.intr_enable.write(INTERRUPT::RTRIG::SET);
    }

    /// Acknowledges the receive-trigger interrupt; call after draining the FIFO.
    pub fn clear_rx_interrupt(&self) {
        self.regs.intr_status.write(INTERRUPT::RTRIG::SET + INTERRUPT::TIMEOUT::SET);
    }
}
