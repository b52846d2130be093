//! System block driver.

pub mod regs;

use crate::mmio::Mmio;
use regs::{COORD, IRQ, SysblockRegisters};
use tock_registers::interfaces::{Readable, Writeable};

/// A node's place in the system.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Coordinates {
    pub x: u8,
    pub y: u8,
    pub z: u8,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Identity {
    pub node: u16,
    pub coordinates: Coordinates,
    pub node_count: u16,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SysblockError {
    /// The block does not identify itself: wrong bitstream, or nothing at the address.
    BadId(u32),
}

pub struct Sysblock {
    regs: Mmio<SysblockRegisters>,
}

impl Sysblock {
    /// # Safety
    ///
    /// `base` must be the mapped (or forwarded) system block, used through this handle only.
    pub const unsafe fn new(base: usize) -> Self {
        // SAFETY: forwarded from the caller.
        Self { regs: unsafe { Mmio::new(base) } }
    }

    pub fn identity(&self) -> Result<Identity, SysblockError> {
        let id = self.regs.id.get();
        if id != regs::ID_VALUE {
            return Err(SysblockError::BadId(id));
        }
        let coord = self.regs.coord.extract();
        Ok(Identity {
            node: self.regs.node_id.get() as u16,
            coordinates: Coordinates {
                x: coord.read(COORD::X) as u8,
                y: coord.read(COORD::Y) as u8,
                z: coord.read(COORD::Z) as u8,
            },
            node_count: self.regs.node_count.get() as u16,
        })
    }

    pub fn scratch(&self) -> u32 {
        self.regs.scratch.get()
    }

    pub fn set_scratch(&self, value: u32) {
        self.regs.scratch.set(value);
    }

    pub fn enable_doorbell_irq(&self) {
        self.regs.irq_enable.write(IRQ::DOORBELL::SET);
    }

    /// Rings the self-test doorbell: raises the block's interrupt line.
    pub fn ring_doorbell(&self) {
        self.regs.irq_raise.write(IRQ::DOORBELL::SET);
    }

    /// Acknowledges the doorbell; returns whether it was pending.
    pub fn take_doorbell(&self) -> bool {
        let pending = self.regs.irq_status.is_set(IRQ::DOORBELL);
        if pending {
            self.regs.irq_status.write(IRQ::DOORBELL::SET);
        }
        pending
    }
}
