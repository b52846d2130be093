//! The system block: a small PL register block that tells a node who it is
//! (`docs/hw/sysblock.md`).

use tock_registers::{
    register_structs,
    registers::{ReadOnly, ReadWrite, WriteOnly},
};

/// Value of `ID`: ASCII "UNMS" (Unimem system block), version 1 in `VERSION`.
pub const ID_VALUE: u32 = 0x534d_4e55;
/// Value of `VERSION`.
pub const VERSION_VALUE: u32 = 1;

pub use fields::*;

// The items the macro generates (Register, SET, CLEAR, Value) cannot carry docs of their own;
// each register and field is documented where it is declared.
#[allow(missing_docs)]
mod fields {
    use tock_registers::register_bitfields;

    register_bitfields! [u32,
        pub COORD [
            X OFFSET(0) NUMBITS(8) [],
            Y OFFSET(8) NUMBITS(8) [],
            Z OFFSET(16) NUMBITS(8) []
        ],
        /// IRQ_STATUS (write 1 to clear), IRQ_ENABLE and IRQ_RAISE share these bits (IRQ_RAISE
        /// only sets DOORBELL).
        pub IRQ [
            DOORBELL OFFSET(0) NUMBITS(1) [],
            /// Every node of the system has written RUN_DONE or is unreachable.
            ALL_DONE OFFSET(1) NUMBITS(1) [],
            /// A node that was reachable no longer is (its bit left NODES_ALIVE).
            PEER_LOST OFFSET(2) NUMBITS(1) []
        ],
        pub RUN_DONE [
            DONE OFFSET(0) NUMBITS(1) []
        ]
    ];
}

register_structs! {
    /// The system block (`docs/hw/sysblock.md`).
    pub SysblockRegisters {
        /// ID: `ID_VALUE`.
        (0x00 => pub id: ReadOnly<u32>),
        /// VERSION: `VERSION_VALUE`.
        (0x04 => pub version: ReadOnly<u32>),
        /// NODE_ID: this node.
        (0x08 => pub node_id: ReadOnly<u32>),
        /// COORD: its coordinates.
        (0x0c => pub coord: ReadOnly<u32, COORD::Register>),
        /// NODE_COUNT: nodes in the system.
        (0x10 => pub node_count: ReadOnly<u32>),
        /// SCRATCH: read/write, for tests.
        (0x14 => pub scratch: ReadWrite<u32>),
        /// IRQ_STATUS: raised causes, write 1 to clear.
        (0x18 => pub irq_status: ReadWrite<u32, IRQ::Register>),
        /// IRQ_ENABLE: causes that drive the line.
        (0x1c => pub irq_enable: ReadWrite<u32, IRQ::Register>),
        /// IRQ_RAISE: write 1 to raise a cause (the doorbell).
        (0x20 => pub irq_raise: WriteOnly<u32, IRQ::Register>),
        (0x24 => _reserved),
        /// SCRATCH64: read/write with 64-bit accesses, for tests.
        (0x28 => pub scratch64: ReadWrite<u64>),
        /// RUN_DONE: this node's run is over.
        (0x30 => pub run_done: WriteOnly<u32, RUN_DONE::Register>),
        (0x34 => _reserved2),
        /// NODES_DONE: bit n, node n reported RUN_DONE.
        (0x40 => pub nodes_done: [ReadOnly<u32>; NODE_WORDS]),
        /// NODES_ALIVE: bit n, node n is reachable.
        (0x50 => pub nodes_alive: [ReadOnly<u32>; NODE_WORDS]),
        (0x60 => @END),
    }
}

/// 32-bit words of the node bitmaps (NODES_DONE, NODES_ALIVE): bit `n % 32` of word `n / 32` is
/// node `n`; 128 bits cover the 112 nodes of the global address window.
pub const NODE_WORDS: usize = 4;

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
        assert_eq!(offset_of!(SysblockRegisters, run_done), 0x30);
        assert_eq!(offset_of!(SysblockRegisters, nodes_done), 0x40);
        assert_eq!(offset_of!(SysblockRegisters, nodes_alive), 0x50);
        assert_eq!(IRQ::ALL_DONE.mask << IRQ::ALL_DONE.shift, 1 << 1);
        assert_eq!(IRQ::PEER_LOST.mask << IRQ::PEER_LOST.shift, 1 << 2);
    }

    #[test]
    fn offsets_match_the_table_in_the_doc() {
        let doc = include_str!("../../../docs/hw/sysblock.md");
        let rows = crate::doc_table(doc, "System block");
        let expected = [
            ("ID", offset_of!(SysblockRegisters, id)),
            ("VERSION", offset_of!(SysblockRegisters, version)),
            ("NODE_ID", offset_of!(SysblockRegisters, node_id)),
            ("COORD", offset_of!(SysblockRegisters, coord)),
            ("NODE_COUNT", offset_of!(SysblockRegisters, node_count)),
            ("SCRATCH", offset_of!(SysblockRegisters, scratch)),
            ("IRQ_STATUS", offset_of!(SysblockRegisters, irq_status)),
            ("IRQ_ENABLE", offset_of!(SysblockRegisters, irq_enable)),
            ("IRQ_RAISE", offset_of!(SysblockRegisters, irq_raise)),
            ("SCRATCH64", offset_of!(SysblockRegisters, scratch64)),
            ("RUN_DONE", offset_of!(SysblockRegisters, run_done)),
            ("NODES_DONE", offset_of!(SysblockRegisters, nodes_done)),
            ("NODES_ALIVE", offset_of!(SysblockRegisters, nodes_alive)),
        ];
        let rows: std::vec::Vec<(&str, usize)> = rows.iter().map(|(n, o)| (n.as_str(), *o)).collect();
        assert_eq!(rows, expected);
    }
}
