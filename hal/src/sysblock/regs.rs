//! The system block: a small PL register block that tells a node who it is
//! (`docs/hw/sysblock.md`).

use tock_registers::{
    register_bitfields, register_structs,
    registers::{ReadOnly, ReadWrite, WriteOnly},
};

/// Value of `ID`: ASCII "UNMS" (Unimem system block), version 1 in `VERSION`.
pub const ID_VALUE: u32 = 0x534d_4e55;
pub const VERSION_VALUE: u32 = 1;

register_bitfields! [u32,
    pub COORD [
        X OFFSET(0) NUMBITS(8) [],
        Y OFFSET(8) NUMBITS(8) [],
        Z OFFSET(16) NUMBITS(8) []
    ],
    /// IRQ_STATUS (write 1 to clear), IRQ_ENABLE and IRQ_RAISE share these bits.
    pub IRQ [
        DOORBELL OFFSET(0) NUMBITS(1) []
    ]
];

register_structs! {
    pub SysblockRegisters {
        (0x00 => pub id: ReadOnly<u32>),
        (0x04 => pub version: ReadOnly<u32>),
        (0x08 => pub node_id: ReadOnly<u32>),
        (0x0c => pub coord: ReadOnly<u32, COORD::Register>),
        (0x10 => pub node_count: ReadOnly<u32>),
        (0x14 => pub scratch: ReadWrite<u32>),
        (0x18 => pub irq_status: ReadWrite<u32, IRQ::Register>),
        (0x1c => pub irq_enable: ReadWrite<u32, IRQ::Register>),
        (0x20 => pub irq_raise: WriteOnly<u32, IRQ::Register>),
        (0x24 => _reserved),
        (0x28 => pub scratch64: ReadWrite<u64>),
        (0x30 => @END),
    }
}

/// Size of the block's window.
pub const WINDOW_SIZE: u64 = 0x1000;

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::offset_of;

    #[test]
    fn offsets_match_docs_hw_sysblock() {
        assert_eq!(offset_of!(SysblockRegisters, id), 0x00);
        assert_eq!(offset_of!(SysblockRegisters, node_id), 0x08);
        assert_eq!(offset_of!(SysblockRegisters, coord), 0x0c);
        assert_eq!(offset_of!(SysblockRegisters, node_count), 0x10);
        assert_eq!(offset_of!(SysblockRegisters, scratch), 0x14);
        assert_eq!(offset_of!(SysblockRegisters, irq_status), 0x18);
        assert_eq!(offset_of!(SysblockRegisters, irq_enable), 0x1c);
        assert_eq!(offset_of!(SysblockRegisters, irq_raise), 0x20);
        assert_eq!(offset_of!(SysblockRegisters, scratch64), 0x28);
    }
}
