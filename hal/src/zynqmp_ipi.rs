//! The ZynqMP inter-processor interrupt block (UG1085 ch. 13, "Interrupts": IPI; UG1087, module
//! IPI), as `docs/hw/ipi.md` uses it: the APU rings the R5's doorbell.
//!
//! Every agent (APU, RPU0, RPU1, PMU, PL) owns one channel, a register set 64 KiB apart from the
//! next (the bases are the board's: `board::zynqmp`). An agent writes a target's bit to its own
//! `TRIG`; the bit of the sender then appears in the target channel's `ISR`, which raises the
//! target's IPI interrupt while unmasked, until the target writes it back to `ISR`. The sender's
//! `OBS` shows the bit while the target has not cleared it.

use crate::mmio::Mmio;
use tock_registers::interfaces::{Readable, Writeable};
use tock_registers::{
    register_structs,
    registers::{ReadOnly, ReadWrite, WriteOnly},
};

/// The agents' bits in every register of the block (UG1087: IPI `APU_TRIG` and the others).
pub mod agent {
    /// The APU (channel 0).
    pub const APU: u32 = 1 << 0;
    /// RPU core 0 (channel 1).
    pub const RPU0: u32 = 1 << 8;
    /// RPU core 1 (channel 2).
    pub const RPU1: u32 = 1 << 9;
    /// The four PMU channels (3 to 6).
    pub const PMU: [u32; 4] = [1 << 16, 1 << 17, 1 << 18, 1 << 19];
    /// The four PL channels (7 to 10).
    pub const PL: [u32; 4] = [1 << 24, 1 << 25, 1 << 26, 1 << 27];
    /// Every agent bit.
    pub const ALL: u32 = APU | RPU0 | RPU1 | 0x000f_0000 | 0x0f00_0000;
}

register_structs! {
    /// One agent's channel (`docs/hw/ipi.md`, "Channel registers").
    pub IpiRegisters {
        /// TRIG: write a target's bit to interrupt it.
        (0x00 => pub trig: WriteOnly<u32>),
        /// OBS: targets triggered by this agent that have not cleared the interrupt yet.
        (0x04 => pub obs: ReadOnly<u32>),
        (0x08 => _reserved0),
        /// ISR: senders whose interrupt is pending here; write 1 to clear.
        (0x10 => pub isr: ReadWrite<u32>),
        /// IMR: masked senders (1 = masked; all masked at reset).
        (0x14 => pub imr: ReadOnly<u32>),
        /// IER: write 1 to unmask a sender.
        (0x18 => pub ier: WriteOnly<u32>),
        /// IDR: write 1 to mask a sender.
        (0x1c => pub idr: WriteOnly<u32>),
        (0x20 => @END),
    }
}

/// Bytes between two channels' register sets, and the size of one set's window.
pub const CHANNEL_STRIDE: u64 = 0x1_0000;

/// One agent's IPI channel: one owner, every change through `&mut self`.
pub struct Ipi {
    regs: Mmio<IpiRegisters>,
}

impl Ipi {
    /// # Safety
    ///
    /// `base` must be this agent's mapped (or forwarded) IPI channel, used through this handle
    /// only.
    pub const unsafe fn new(base: usize) -> Self {
        // SAFETY: forwarded from the caller.
        Self { regs: unsafe { Mmio::new(base) } }
    }

    /// Interrupts the agents in `targets` (bits of [`agent`]).
    pub fn trigger(&mut self, targets: u32) {
        self.regs.trig.set(targets & agent::ALL);
    }

    /// The targets this agent interrupted that have not cleared it yet.
    pub fn unacknowledged(&self) -> u32 {
        self.regs.obs.get()
    }

    /// Takes the senders whose interrupt is pending here (and clears them).
    pub fn take_pending(&mut self) -> u32 {
        let pending = self.regs.isr.get();
        if pending != 0 {
            self.regs.isr.set(pending);
        }
        pending
    }

    /// Unmasks the interrupt from `senders`.
    pub fn enable(&mut self, senders: u32) {
        self.regs.ier.set(senders & agent::ALL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc_table;
    use core::mem::offset_of;

    const DOC: &str = include_str!("../../docs/hw/ipi.md");

    #[test]
    fn registers_match_docs_hw_ipi() {
        let regs = [
            ("TRIG", offset_of!(IpiRegisters, trig)),
            ("OBS", offset_of!(IpiRegisters, obs)),
            ("ISR", offset_of!(IpiRegisters, isr)),
            ("IMR", offset_of!(IpiRegisters, imr)),
            ("IER", offset_of!(IpiRegisters, ier)),
            ("IDR", offset_of!(IpiRegisters, idr)),
        ];
        assert_eq!(doc_table(DOC, "Channel registers"), regs.map(|(n, o)| (n.into(), o)).to_vec());
        assert_eq!(core::mem::size_of::<IpiRegisters>(), 0x20);
    }

    #[test]
    fn agent_bits_match_docs_hw_ipi() {
        let rows = crate::doc_table(DOC, "Agent bits");
        let expected = [("APU", 0), ("RPU0", 8), ("RPU1", 9), ("PMU0", 16), ("PL0", 24)];
        assert_eq!(rows, expected.map(|(n, b)| (n.into(), 1usize << b)).to_vec());
        assert_eq!(agent::APU | agent::RPU0 | agent::RPU1, 0x301);
        assert_eq!(agent::PMU[0], 1 << 16);
        assert_eq!(agent::PL[0], 1 << 24);
        assert_eq!(agent::ALL.count_ones(), 11);
    }
}
