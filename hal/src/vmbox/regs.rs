//! Virtualized mailbox register blocks (seed §5.1; Table 3 "MIF Register Space" is missing from
//! the seed, so this layout is ours: `docs/hw/vmbox.md`).
//!
//! ```text
//! 0x00000 +-------------+
//!         | MIF 0       |  atomic service requests (seed §2.2.3)
//! 0x01000 +-------------+
//!         | MIF 1..63   |  one per thread, 4 KiB apart (seed Fig. 6)
//! 0x40000 +-------------+
//!         | control     |  kernel only: interrupt summary, id
//! 0x41000 +-------------+
//! ```

use tock_registers::{
    register_structs,
    registers::{ReadOnly, ReadWrite},
};

use crate::INTERFACES;

pub use fields::*;

// The items the macro generates (Register, SET, CLEAR, Value) cannot carry docs of their own;
// each register and field is documented where it is declared.
#[allow(missing_docs)]
mod fields {
    use tock_registers::register_bitfields;

    register_bitfields! [u32,
        pub STATUS [
            /// Words (128-bit) a reader can dequeue now.
            COUNT OFFSET(0) NUMBITS(16) [],
            EMPTY OFFSET(16) NUMBITS(1) [],
            /// No free word (queued plus words reserved by bursts in progress equals the depth).
            FULL OFFSET(17) NUMBITS(1) [],
            /// THRESHOLD.LEVEL != 0 and COUNT >= LEVEL.
            ABOVE_THRESHOLD OFFSET(18) NUMBITS(1) []
        ],
        pub DEPTH [
            WORDS OFFSET(0) NUMBITS(16) []
        ],
        /// Layout of both IRQ_ENABLE and IRQ_STATUS.
        pub IRQ [
            /// Status: a packet was enqueued (re-asserts on clear while the FIFO is not empty).
            NOT_EMPTY OFFSET(0) NUMBITS(1) [],
            /// Status: COUNT reached THRESHOLD.LEVEL (re-asserts on clear while still reached).
            THRESHOLD OFFSET(1) NUMBITS(1) [],
            /// Status: a packet or write was refused because the FIFO had no room for all of it.
            REFUSED OFFSET(2) NUMBITS(1) []
        ],
        pub THRESHOLD [
            /// 0 disables the threshold condition.
            LEVEL OFFSET(0) NUMBITS(16) []
        ],
        pub ID [
            VERSION OFFSET(0) NUMBITS(16) [],
            MAGIC OFFSET(16) NUMBITS(16) []
        ]
    ];
}

register_structs! {
    /// One mailbox interface page.
    pub MifRegisters {
        /// Write: enqueue one word. Read: dequeue one word, or the empty sentinel.
        (0x00 => pub data: ReadWrite<u128>),
        /// Words queued.
        (0x10 => pub status: ReadOnly<u32, STATUS::Register>),
        /// FIFO depth in words.
        (0x14 => pub depth: ReadOnly<u32, DEPTH::Register>),
        /// Causes that drive the interrupt.
        (0x18 => pub irq_enable: ReadWrite<u32, IRQ::Register>),
        /// Write 1 to clear.
        (0x1c => pub irq_status: ReadWrite<u32, IRQ::Register>),
        /// Words that raise the threshold interrupt.
        (0x20 => pub threshold: ReadWrite<u32, THRESHOLD::Register>),
        /// Refused packets and writes, saturating; any write clears it.
        (0x24 => pub refused: ReadWrite<u32>),
        (0x28 => _reserved0),
        /// A whole packet, read with one pair access (`docs/hw/vmbox.md`, "PACKET"): the
        /// first half dequeues both words of the oldest packet (or returns the empty sentinel
        /// and dequeues nothing) and keeps the second for the second half.
        (0x40 => pub packet: [ReadOnly<u128>; 2]),
        (0x60 => _reserved1),
        (0x1000 => @END),
    }
}

register_structs! {
    /// The control page after the interfaces.
    pub ControlRegisters {
        /// Bit i: MIF i's interrupt output (IRQ_STATUS & IRQ_ENABLE != 0).
        (0x00 => pub irq_summary: ReadOnly<u64>),
        /// ID: magic and version.
        (0x08 => pub id: ReadOnly<u32, ID::Register>),
        (0x0c => _reserved0),
        (0x1000 => @END),
    }
}

register_structs! {
    /// The whole block: 64 MIF pages and the control page.
    pub VmboxRegisters {
        /// The interface pages.
        (0x00000 => pub mif: [MifRegisters; INTERFACES]),
        /// The control page.
        (0x40000 => pub control: ControlRegisters),
        (0x41000 => @END),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc_table;
    use core::mem::{offset_of, size_of};

    const DOC: &str = include_str!("../../../docs/hw/vmbox.md");

    #[test]
    fn offsets() {
        assert_eq!(offset_of!(MifRegisters, data), 0x00);
        assert_eq!(offset_of!(MifRegisters, status), 0x10);
        assert_eq!(offset_of!(MifRegisters, depth), 0x14);
        assert_eq!(offset_of!(MifRegisters, irq_enable), 0x18);
        assert_eq!(offset_of!(MifRegisters, irq_status), 0x1c);
        assert_eq!(offset_of!(MifRegisters, threshold), 0x20);
        assert_eq!(offset_of!(MifRegisters, refused), 0x24);
        assert_eq!(offset_of!(MifRegisters, packet), 0x40);
        assert_eq!(size_of::<MifRegisters>(), 0x1000);
        assert_eq!(offset_of!(ControlRegisters, irq_summary), 0x00);
        assert_eq!(offset_of!(ControlRegisters, id), 0x08);
        assert_eq!(offset_of!(VmboxRegisters, control), 0x40000);
        assert_eq!(size_of::<VmboxRegisters>(), 0x41000);
    }

    /// Every register row of the tables in `docs/hw/vmbox.md` names the offset the struct has.
    #[test]
    fn offsets_match_the_doc() {
        let mif = [
            ("data", offset_of!(MifRegisters, data)),
            ("status", offset_of!(MifRegisters, status)),
            ("depth", offset_of!(MifRegisters, depth)),
            ("irq_enable", offset_of!(MifRegisters, irq_enable)),
            ("irq_status", offset_of!(MifRegisters, irq_status)),
            ("threshold", offset_of!(MifRegisters, threshold)),
            ("refused", offset_of!(MifRegisters, refused)),
            ("packet", offset_of!(MifRegisters, packet)),
        ];
        let control =
            [("irq_summary", offset_of!(ControlRegisters, irq_summary)), ("id", offset_of!(ControlRegisters, id))];
        let block = [("mif", offset_of!(VmboxRegisters, mif)), ("control", offset_of!(VmboxRegisters, control))];
        assert_eq!(doc_table(DOC, "MIF registers"), mif.map(|(n, o)| (n.into(), o)).to_vec());
        assert_eq!(doc_table(DOC, "Control registers"), control.map(|(n, o)| (n.into(), o)).to_vec());
        assert_eq!(doc_table(DOC, "Block map"), block.map(|(n, o)| (n.into(), o)).to_vec());
    }

    #[test]
    fn field_positions() {
        assert_eq!(STATUS::COUNT.mask, 0xffff);
        assert_eq!(STATUS::EMPTY.shift, 16);
        assert_eq!(STATUS::FULL.shift, 17);
        assert_eq!(STATUS::ABOVE_THRESHOLD.shift, 18);
        assert_eq!((IRQ::NOT_EMPTY.shift, IRQ::THRESHOLD.shift, IRQ::REFUSED.shift), (0, 1, 2));
        assert_eq!((ID::MAGIC.shift, ID::VERSION.mask), (16, 0xffff));
    }
}
