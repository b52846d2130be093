//! Virtualized packetizer register blocks (seed §5.2.6 Tables 4 and 5; `docs/hw/packetizer.md`).
//!
//! ```text
//! 0x00000 +-------------+
//!         | PIF 0       |  atomic service only (seed §2.2.3)
//! 0x01000 +-------------+
//!         | PIF 1..63   |  one per thread, 4 KiB apart
//! 0x40000 +-------------+
//!         | TIF         |  trusted (EL1) only: PID table, BASE_DEST, PID_CONF, CLR_REQ
//! 0x41000 +-------------+
//! ```

use tock_registers::{
    register_structs,
    registers::{ReadOnly, ReadWrite, WriteOnly},
};

use crate::INTERFACES;

pub use fields::*;

// The items the macro generates (Register, SET, CLEAR, Value) cannot carry docs of their own;
// each register and field is documented where it is declared.
#[allow(missing_docs)]
mod fields {
    use tock_registers::register_bitfields;

    register_bitfields! [u128,
        /// PIF payload0 (seed Table 5: valid [127:48]); bits [47:0] are replaced by the PIDT entry.
        pub PAYLOAD0 [
            PREFIX OFFSET(0) NUMBITS(48) [],
            DATA OFFSET(48) NUMBITS(80) []
        ]
    ];

    register_bitfields! [u64,
        /// PIDT entry (seed Table 4: valid [47:0]).
        pub PIDT_ENTRY [
            PID OFFSET(0) NUMBITS(48) []
        ],
        /// BASE_DEST (seed Table 4: valid [33:18]).
        pub BASE_DEST [
            WINDOW OFFSET(18) NUMBITS(16) []
        ],
        /// PIF destination address (seed Table 5: valid [39:0]). The split of the 40-bit global
        /// physical address is our choice (`docs/hw/packetizer.md` "Destination address").
        pub DESTINATION [
            /// Byte offset inside the mailbox interface page; must be 0 (the DATA register).
            PAGE_OFFSET OFFSET(0) NUMBITS(12) [],
            /// Mailbox interface (MIF) index at the destination.
            INTERFACE OFFSET(12) NUMBITS(6) [],
            /// Must equal BASE_DEST.WINDOW.
            WINDOW OFFSET(18) NUMBITS(16) [],
            /// Destination node.
            NODE OFFSET(34) NUMBITS(6) []
        ]
    ];

    register_bitfields! [u32,
        /// PIF status (seed Table 5 and §5.2.3: bits O, A, N, I, P).
        pub STATUS [
            PEND OFFSET(0) NUMBITS(1) [],
            ILLEGAL OFFSET(1) NUMBITS(1) [],
            NACK OFFSET(2) NUMBITS(1) [],
            ACK OFFSET(3) NUMBITS(1) [],
            OVERWR_BUF OFFSET(4) NUMBITS(1) [],
            /// The destination node is unreachable (not in the system block's NODES_ALIVE).
            UNREACH OFFSET(5) NUMBITS(1) []
        ]
    ];
}

register_structs! {
    /// One packetizer interface page.
    pub PifRegisters {
        /// Payload word 0; its low 48 bits are replaced by the PID.
        (0x00 => pub payload0: ReadWrite<u128, PAYLOAD0::Register>),
        /// Payload word 1.
        (0x10 => pub payload1: ReadWrite<u128>),
        /// Where the packet goes; writing it sends.
        (0x20 => pub destination: ReadWrite<u64, DESTINATION::Register>),
        (0x28 => _reserved0),
        /// How the last send ended.
        (0x30 => pub status: ReadOnly<u32, STATUS::Register>),
        (0x34 => _reserved1),
        (0x1000 => @END),
    }
}

register_structs! {
    /// The trusted interface page.
    pub TifRegisters {
        /// PID of each interface.
        (0x000 => pub pidt: [ReadWrite<u64, PIDT_ENTRY::Register>; INTERFACES]),
        /// The vmbox window every destination must be in.
        (0x200 => pub base_dest: ReadWrite<u64, BASE_DEST::Register>),
        /// Bit i enables PIF i.
        (0x208 => pub pid_conf: ReadWrite<u64>),
        /// Write 1 to bit i: abort PIF i's packet and clear its status (debug only). Reads 0.
        (0x210 => pub clr_req: WriteOnly<u64>),
        (0x218 => _reserved0),
        (0x1000 => @END),
    }
}

register_structs! {
    /// The whole block: 64 PIF pages and the TIF page (seed §5.2: 65 pages).
    pub PacketizerRegisters {
        /// The interface pages, one per PID.
        (0x00000 => pub pif: [PifRegisters; INTERFACES]),
        /// The trusted interface page.
        (0x40000 => pub tif: TifRegisters),
        (0x41000 => @END),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc_table;
    use core::mem::{offset_of, size_of};

    const DOC: &str = include_str!("../../../docs/hw/packetizer.md");

    #[test]
    fn offsets_match_seed_tables_4_and_5() {
        assert_eq!(offset_of!(PifRegisters, payload0), 0x00);
        assert_eq!(offset_of!(PifRegisters, payload1), 0x10);
        assert_eq!(offset_of!(PifRegisters, destination), 0x20);
        assert_eq!(offset_of!(PifRegisters, status), 0x30);
        assert_eq!(size_of::<PifRegisters>(), 0x1000);
        assert_eq!(offset_of!(TifRegisters, pidt), 0x000);
        assert_eq!(offset_of!(TifRegisters, base_dest), 0x200);
        assert_eq!(offset_of!(TifRegisters, pid_conf), 0x208);
        assert_eq!(offset_of!(TifRegisters, clr_req), 0x210);
        assert_eq!(size_of::<TifRegisters>(), 0x1000);
        assert_eq!(offset_of!(PacketizerRegisters, tif), 0x40000);
        assert_eq!(size_of::<PacketizerRegisters>(), 0x41000);
    }

    /// Every register row of the tables in `docs/hw/packetizer.md` names the offset the struct has.
    #[test]
    fn offsets_match_the_doc() {
        let pif = [
            ("payload0", offset_of!(PifRegisters, payload0)),
            ("payload1", offset_of!(PifRegisters, payload1)),
            ("destination", offset_of!(PifRegisters, destination)),
            ("status", offset_of!(PifRegisters, status)),
        ];
        let tif = [
            ("pidt", offset_of!(TifRegisters, pidt)),
            ("base_dest", offset_of!(TifRegisters, base_dest)),
            ("pid_conf", offset_of!(TifRegisters, pid_conf)),
            ("clr_req", offset_of!(TifRegisters, clr_req)),
        ];
        let block = [("pif", offset_of!(PacketizerRegisters, pif)), ("tif", offset_of!(PacketizerRegisters, tif))];
        assert_eq!(doc_table(DOC, "PIF registers"), pif.map(|(n, o)| (n.into(), o)).to_vec());
        assert_eq!(doc_table(DOC, "TIF registers"), tif.map(|(n, o)| (n.into(), o)).to_vec());
        assert_eq!(doc_table(DOC, "Block map"), block.map(|(n, o)| (n.into(), o)).to_vec());
    }

    #[test]
    fn field_positions() {
        assert_eq!(STATUS::PEND.mask << STATUS::PEND.shift, 1 << 0);
        assert_eq!(STATUS::ILLEGAL.mask << STATUS::ILLEGAL.shift, 1 << 1);
        assert_eq!(STATUS::NACK.mask << STATUS::NACK.shift, 1 << 2);
        assert_eq!(STATUS::ACK.mask << STATUS::ACK.shift, 1 << 3);
        assert_eq!(STATUS::OVERWR_BUF.mask << STATUS::OVERWR_BUF.shift, 1 << 4);
        assert_eq!(STATUS::UNREACH.mask << STATUS::UNREACH.shift, 1 << 5);
        assert_eq!(BASE_DEST::WINDOW.mask << BASE_DEST::WINDOW.shift, 0x3_FFFC_0000);
        assert_eq!(DESTINATION::NODE.mask << DESTINATION::NODE.shift, 0xFC_0000_0000);
        assert_eq!(PAYLOAD0::PREFIX.mask, (1 << 48) - 1);
    }
}
