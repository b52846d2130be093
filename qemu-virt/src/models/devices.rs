//! The packetizer and vmbox models as platform devices: forwarded accesses in, `proto::forward`
//! statuses out (`ModelError` maps through `From`), interrupt outputs as PL line masks.

use super::packetizer::PacketizerModel;
use super::vmbox::VmboxModel;
use super::{Delivery, MmioDevice};
use proto::forward::Status;

/// The packetizer block (`docs/hw/packetizer.md`).
///
/// It drives no interrupt line: the contract gives the packetizer no interrupt output, and the
/// platform's interconnect answers every packet before the third write completes, so `PEND` is
/// never set when the guest looks. Line `board::pl::irq_line::PACKETIZER` stays reserved for it.
#[derive(Debug)]
pub struct PacketizerDevice {
    model: PacketizerModel,
}

impl PacketizerDevice {
    pub fn new(model: PacketizerModel) -> Self {
        Self { model }
    }

    pub fn model(&self) -> &PacketizerModel {
        &self.model
    }
}

impl MmioDevice for PacketizerDevice {
    fn name(&self) -> &'static str {
        "packetizer"
    }

    fn read(&mut self, offset: u64, size: u32) -> Result<u128, Status> {
        Ok(self.model.read(offset, size as usize)?)
    }

    fn write(&mut self, offset: u64, size: u32, value: u128) -> Result<(), Status> {
        Ok(self.model.write(offset, size as usize, value)?)
    }
}

/// The virtualized mailbox block (`docs/hw/vmbox.md`), whose interrupt output drives PL line
/// `line`.
#[derive(Debug)]
pub struct VmboxDevice {
    model: VmboxModel,
    line: u8,
}

impl VmboxDevice {
    pub fn new(model: VmboxModel, line: u8) -> Self {
        Self { model, line }
    }

    pub fn model(&self) -> &VmboxModel {
        &self.model
    }

    /// A packet from the interconnect for MIF `interface`: queued whole (`Ack`) or not at all.
    pub fn deliver(&mut self, interface: u8, bytes: &[u8]) -> Delivery {
        self.model.deliver(interface, bytes)
    }
}

impl MmioDevice for VmboxDevice {
    fn name(&self) -> &'static str {
        "vmbox"
    }

    fn read(&mut self, offset: u64, size: u32) -> Result<u128, Status> {
        Ok(self.model.read(offset, size as usize)?)
    }

    fn write(&mut self, offset: u64, size: u32, value: u128) -> Result<(), Status> {
        Ok(self.model.write(offset, size as usize, value)?)
    }

    fn irq_lines(&self) -> u16 {
        if self.model.irq_line() { 1 << self.line } else { 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use board::pl::irq_line;
    use core::mem::size_of;
    use hal::vmbox::regs::VmboxRegisters;

    const MIF3: u64 = 3 * 0x1000;

    fn vmbox() -> VmboxDevice {
        VmboxDevice::new(VmboxModel::new(hal::vmbox::REFERENCE_DEPTH).unwrap(), irq_line::VMBOX)
    }

    fn packetizer() -> PacketizerDevice {
        PacketizerDevice::new(PacketizerModel::new(0, Box::new(|_| Delivery::Ack)))
    }

    #[test]
    fn the_board_windows_fit_the_hal_blocks() {
        assert_eq!(board::pl::VMBOX_SIZE, size_of::<VmboxRegisters>() as u64);
        assert_eq!(board::pl::PACKETIZER_SIZE, size_of::<hal::packetizer::regs::PacketizerRegisters>() as u64);
    }

    /// The cells of the markdown table rows of `doc` whose cell `column` starts with `text`.
    fn rows<'a>(doc: &'a str, column: usize, text: &str) -> Vec<Vec<&'a str>> {
        doc.lines()
            .filter(|l| l.starts_with('|'))
            .map(|l| l.trim_matches('|').split('|').map(|c| c.trim().trim_matches('`')).collect::<Vec<_>>())
            .filter(|cells| cells.get(column).is_some_and(|c| c.starts_with(text)))
            .collect()
    }

    fn hex(cell: &str) -> u64 {
        u64::from_str_radix(&cell.trim_start_matches("0x").replace('_', ""), 16).unwrap()
    }

    #[test]
    fn the_docs_name_the_lines_and_windows_the_platform_uses() {
        let forwarding = include_str!("../../../docs/hw/forwarding.md");
        for (line, block) in [(irq_line::VMBOX, "virtualized mailbox"), (irq_line::PACKETIZER, "packetizer")] {
            assert_eq!(rows(forwarding, 1, block)[0][0], line.to_string(), "forwarding.md, line of the {block}");
        }
        let global = include_str!("../../../docs/hw/global-address.md");
        for (base, size, block) in [
            (board::pl::PACKETIZER_BASE, board::pl::PACKETIZER_SIZE, "packetizer"),
            (board::pl::VMBOX_BASE, board::pl::VMBOX_SIZE, "virtualized mailbox"),
        ] {
            let row = &rows(global, 1, block)[0];
            assert_eq!((hex(row[0]), hex(row[2])), (base, size), "global-address.md, the {block}");
        }
    }

    #[test]
    fn model_errors_become_forwarding_statuses() {
        let mut v = vmbox();
        assert_eq!(v.read(MIF3 + 0x30, 4), Err(Status::Unmapped), "reserved offset");
        assert_eq!(v.read(0x41000, 4), Err(Status::Unmapped), "past the control page");
        assert_eq!(v.read(MIF3, 8), Err(Status::Rejected), "DATA is one 16-byte access");
        assert_eq!(v.write(MIF3 + 0x10, 4, 0), Err(Status::Rejected), "status is read-only");
        assert_eq!(v.write(0x40008, 4, 0), Err(Status::Rejected), "id is read-only");
        assert_eq!(v.read(MIF3 + 0x14, 4), Ok(u128::from(hal::vmbox::REFERENCE_DEPTH)));
        assert_eq!(v.read(0x40008, 4).map(|id| id >> 16), Ok(0x5642));

        let mut p = packetizer();
        assert_eq!(p.read(0x40, 4), Err(Status::Unmapped));
        assert_eq!(p.read(0x00, 8), Err(Status::Rejected), "payload0 is one 16-byte access");
        assert_eq!(p.write(0x30, 4, 0), Err(Status::Rejected), "status is read-only");
        assert_eq!(p.write(0x40200, 4, 0), Err(Status::Rejected), "BASE_DEST takes 8 bytes");
        assert_eq!(p.write(0x40200, 8, 0), Ok(()));
        assert_eq!(p.irq_lines(), 0);
    }

    #[test]
    fn the_vmbox_output_drives_its_line() {
        let mut v = vmbox();
        assert_eq!(v.deliver(3, &[0xab; 32]), Delivery::Ack);
        assert_eq!(v.irq_lines(), 0, "NOT_EMPTY not enabled");
        v.write(MIF3 + 0x18, 4, 1).unwrap();
        assert_eq!(v.irq_lines(), 1 << irq_line::VMBOX);
        assert_eq!(v.model().queued(3), 2);
    }
}
