//! The system block model (`hal::sysblock`, `docs/hw/sysblock.md`).

use super::MmioDevice;
use crate::reg_offset;
use hal::forward::Status;
use hal::sysblock::Coordinates;
use hal::sysblock::regs::{COORD, ID_VALUE, IRQ, SysblockRegisters as R, VERSION_VALUE};
use tock_registers::LocalRegisterCopy;

pub struct Sysblock {
    node: u16,
    coordinates: Coordinates,
    node_count: u16,
    scratch: u32,
    scratch64: u64,
    irq_status: LocalRegisterCopy<u32, IRQ::Register>,
    irq_enable: LocalRegisterCopy<u32, IRQ::Register>,
    irq_line: u8,
}

impl Sysblock {
    pub fn new(node: u16, coordinates: Coordinates, node_count: u16, irq_line: u8) -> Self {
        Self {
            node,
            coordinates,
            node_count,
            scratch: 0,
            scratch64: 0,
            irq_status: LocalRegisterCopy::new(0),
            irq_enable: LocalRegisterCopy::new(0),
            irq_line,
        }
    }

    fn coord(&self) -> u32 {
        let c = self.coordinates;
        (COORD::X.val(u32::from(c.x)) + COORD::Y.val(u32::from(c.y)) + COORD::Z.val(u32::from(c.z))).value
    }
}

impl MmioDevice for Sysblock {
    fn name(&self) -> &'static str {
        "sysblock"
    }

    fn read(&mut self, offset: u64, size: u32) -> Result<u128, Status> {
        let value = match (offset, size) {
            (o, 8) if o == reg_offset!(R, scratch64) => return Ok(u128::from(self.scratch64)),
            (_, 4) => match offset {
                o if o == reg_offset!(R, id) => ID_VALUE,
                o if o == reg_offset!(R, version) => VERSION_VALUE,
                o if o == reg_offset!(R, node_id) => u32::from(self.node),
                o if o == reg_offset!(R, coord) => self.coord(),
                o if o == reg_offset!(R, node_count) => u32::from(self.node_count),
                o if o == reg_offset!(R, scratch) => self.scratch,
                o if o == reg_offset!(R, irq_status) => self.irq_status.get(),
                o if o == reg_offset!(R, irq_enable) => self.irq_enable.get(),
                // Write-only and reserved registers read as zero.
                _ => 0,
            },
            _ => return Err(Status::Rejected),
        };
        Ok(u128::from(value))
    }

    fn write(&mut self, offset: u64, size: u32, value: u128) -> Result<(), Status> {
        match (offset, size) {
            (o, 8) if o == reg_offset!(R, scratch64) => self.scratch64 = value as u64,
            (_, 4) => {
                let v = value as u32;
                match offset {
                    o if o == reg_offset!(R, scratch) => self.scratch = v,
                    o if o == reg_offset!(R, irq_status) => self.irq_status.set(self.irq_status.get() & !v),
                    o if o == reg_offset!(R, irq_enable) => self.irq_enable.set(v & IRQ::DOORBELL::SET.mask()),
                    o if o == reg_offset!(R, irq_raise) => {
                        self.irq_status.set(self.irq_status.get() | (v & IRQ::DOORBELL::SET.mask()))
                    }
                    // Read-only and reserved registers ignore writes.
                    _ => {}
                }
            }
            _ => return Err(Status::Rejected),
        }
        Ok(())
    }

    fn irq_lines(&self) -> u16 {
        if self.irq_status.get() & self.irq_enable.get() != 0 { 1 << self.irq_line } else { 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block() -> Sysblock {
        Sysblock::new(3, Coordinates { x: 3, y: 0, z: 0 }, 4, 0)
    }

    #[test]
    fn identity_registers() {
        let mut b = block();
        assert_eq!(b.read(reg_offset!(R, id), 4), Ok(u128::from(ID_VALUE)));
        assert_eq!(b.read(reg_offset!(R, node_id), 4), Ok(3));
        assert_eq!(b.read(reg_offset!(R, coord), 4), Ok(3));
        assert_eq!(b.read(reg_offset!(R, node_count), 4), Ok(4));
        assert_eq!(b.write(reg_offset!(R, node_id), 4, 9), Ok(()));
        assert_eq!(b.read(reg_offset!(R, node_id), 4), Ok(3), "read-only");
    }

    #[test]
    fn scratch_registers_keep_what_is_written() {
        let mut b = block();
        b.write(reg_offset!(R, scratch), 4, 0xdead_beef).unwrap();
        assert_eq!(b.read(reg_offset!(R, scratch), 4), Ok(0xdead_beef));
        b.write(reg_offset!(R, scratch64), 8, 0x0123_4567_89ab_cdef).unwrap();
        assert_eq!(b.read(reg_offset!(R, scratch64), 8), Ok(0x0123_4567_89ab_cdef));
        assert_eq!(b.read(reg_offset!(R, scratch), 2), Err(Status::Rejected));
        assert_eq!(b.write(reg_offset!(R, scratch), 16, 0), Err(Status::Rejected));
    }

    #[test]
    fn doorbell_raises_the_line_until_cleared() {
        let mut b = block();
        b.write(reg_offset!(R, irq_raise), 4, 1).unwrap();
        assert_eq!(b.irq_lines(), 0, "not enabled");
        b.write(reg_offset!(R, irq_enable), 4, 1).unwrap();
        assert_eq!(b.irq_lines(), 1);
        assert_eq!(b.read(reg_offset!(R, irq_status), 4), Ok(1));
        b.write(reg_offset!(R, irq_status), 4, 1).unwrap();
        assert_eq!(b.irq_lines(), 0, "write 1 to clear");
    }
}
