//! PLDMA register block (`docs/hw/pldma.md`: our design; the seed gives no register map).
//!
//! ```text
//! 0x0_0000 +-------------+
//!          | control     |  kernel and R5: rings, doorbell, PD enables, interrupts, counters
//! 0x0_1000 +-------------+
//!          | fault       |  kernel: the receiver fault FIFO (seed 002 Tab 3.2)
//! 0x0_2000 +-------------+
//!          | active      |  kernel: Active Access's log table (docs/hw/active-access.md)
//! 0x0_3000 +-------------+
//!          | apt         |  kernel: Active Access's active page table
//! 0x0_4000 +-------------+
//!          | reserved    |
//! 0x1_0000 +-------------+
//!          | PD page 0.. |  one per PD, 4 KiB apart: doorbell and RAPF, PD wired by the page
//! 0x2_0000 +-------------+
//! ```

use tock_registers::{
    register_structs,
    registers::{ReadOnly, ReadWrite, WriteOnly},
};

use super::PDS;

/// `id`: MAGIC "PL", version 1.
pub const ID_VALUE: u32 = 0x504C_0001;

pub use fields::*;

// The items the macro generates (Register, SET, CLEAR, Value) cannot carry docs of their own;
// each register and field is documented where it is declared.
#[allow(missing_docs)]
mod fields {
    use tock_registers::register_bitfields;

    register_bitfields! [u32,
        /// `id` (control `0x000`): reads `ID_VALUE`.
        pub ID [
            /// Layout version: 1.
            VERSION OFFSET(0) NUMBITS(16) [],
            /// `0x504C`, "PL".
            MAGIC OFFSET(16) NUMBITS(16) []
        ],
        /// `caps` (control `0x004`): the engine's limits (`caps_value`).
        pub CAPS [
            /// Protection domains: 16.
            PDS OFFSET(0) NUMBITS(8) [],
            /// Virtual channels per PD: 64.
            VCS OFFSET(8) NUMBITS(8) [],
            /// log2 of the largest block in bytes: 14 (16 KiB).
            BLOCK_LOG2 OFFSET(16) NUMBITS(4) [],
            /// log2 of the largest packet payload in bytes: 8 (256 B).
            PACKET_LOG2 OFFSET(20) NUMBITS(4) [],
            /// log2 of the fault FIFO's depth: 9 (512 entries).
            FIFO_LOG2 OFFSET(24) NUMBITS(4) []
        ],
        /// `ctrl` (control `0x008`, the R5's): see "Starting the engine".
        pub CTRL [
            /// 1: the engine takes descriptors, posts events and accepts packets.
            ENABLE OFFSET(0) NUMBITS(1) [],
            /// Read-only: the last ENABLE was refused (rings misaligned or outside memory).
            ERROR OFFSET(1) NUMBITS(1) []
        ],
        /// Layout of both `irq_status` and `irq_enable`.
        pub IRQ [
            /// Level: the fault FIFO is not empty.
            FAULT OFFSET(0) NUMBITS(1) [],
            /// Sticky, W1C: a fault was dropped, the FIFO was full.
            FAULT_LOST OFFSET(1) NUMBITS(1) [],
            /// Level: `cq_pending` is not 0.
            CQ OFFSET(2) NUMBITS(1) [],
            /// Sticky, W1C: an event was dropped, the event ring was full.
            EVENTS_LOST OFFSET(3) NUMBITS(1) [],
            /// Sticky, W1C: a descriptor was refused.
            DESC_REFUSED OFFSET(4) NUMBITS(1) [],
            /// Level: the Active Access page's `appended` is not 0 (an entry went to a log
            /// whose `ctrl.NOTIFY` is set).
            ACTIVE_LOG OFFSET(5) NUMBITS(1) [],
            /// `irq_status` only, read-only: a copy of `cq_pending` (bit `16 + p` for PD `p`),
            /// so that one read tells the handler every cause and every PD to wake.
            CQ_PENDING OFFSET(16) NUMBITS(16) []
        ],
        /// A PD page's `status` (`0x14`).
        pub PD_STATUS [
            /// `pd_enable` bit `p` of this page's PD.
            ENABLED OFFSET(0) NUMBITS(1) [],
            /// The last doorbell or rapf write was refused; the next accepted write clears it.
            REFUSED OFFSET(1) NUMBITS(1) []
        ]
    ];

    register_bitfields! [u64,
        /// The first word of a fault FIFO entry.
        pub FAULT_LO [
            /// 1: an entry (0: the FIFO is empty).
            VALID OFFSET(0) NUMBITS(1) [],
            /// The fault code (`codes::FaultCode`).
            CODE OFFSET(4) NUMBITS(4) [],
            /// The PD of the refused access.
            PD OFFSET(16) NUMBITS(16) [],
            /// The node whose R5 owns the transaction: the RAPF goes there.
            NODE OFFSET(32) NUMBITS(16) [],
            /// The transaction id (14 bits).
            TID OFFSET(48) NUMBITS(14) []
        ],
        /// The second word of a fault FIFO entry.
        pub FAULT_HI [
            /// 1: an entry.
            VALID OFFSET(0) NUMBITS(1) [],
            /// The sequence number of the refused attempt (14 bits).
            SEQ OFFSET(2) NUMBITS(14) [],
            /// The faulting VA >> 12.
            PAGE OFFSET(16) NUMBITS(48) []
        ],
        /// A PD page's `rapf` register.
        pub RAPF [
            /// The node whose R5 owns the transaction (the FIFO entry's `NODE`).
            NODE OFFSET(0) NUMBITS(16) [],
            /// The transaction id (14 bits).
            TID OFFSET(16) NUMBITS(14) [],
            /// What the owner's R5 does (`codes::RapfAction`); 2 and 3 are refused.
            ACTION OFFSET(30) NUMBITS(2) [
                Retry = 0,
                Abort = 1
            ],
            /// The sequence number of the faulted attempt (14 bits).
            SEQ OFFSET(32) NUMBITS(14) [],
            /// The PD the writer claims; the R5 requires it to equal the page's wired PD.
            CLAIMED_PD OFFSET(48) NUMBITS(16) []
        ]
    ];
}

/// The engine's counters, in register order (`counters[i]` at `0x040 + 8 * i`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counter {
    /// `descriptors`: descriptors taken from the ring.
    Descriptors,
    /// `blocks_sent`: WriteBlock descriptors whose every packet was sent.
    BlocksSent,
    /// `packets_sent`: packets this engine sent, of every kind.
    PacketsSent,
    /// `packets_received`: packets delivered to this engine, of every kind.
    PacketsReceived,
    /// `acks_sent`: block ACKs (also the local ones of read responses).
    AcksSent,
    /// `nacks_sent`: NACKs (also local).
    NacksSent,
    /// `pf_nacks_sent`: page-fault NACKs (also local).
    PfNacksSent,
    /// `events_posted`: events written to the event ring.
    EventsPosted,
    /// `events_lost`: events dropped because the ring was full.
    EventsLost,
    /// `faults_pushed`: fault FIFO entries pushed.
    FaultsPushed,
    /// `faults_deduplicated`: faults not pushed because they equal the last entry pushed.
    FaultsDeduplicated,
    /// `faults_lost`: faults not pushed because the FIFO was full.
    FaultsLost,
    /// `malformed`: packets and descriptors refused as malformed, spoofed or for a disabled PD.
    Malformed,
    /// `duplicates`: data packets dropped as duplicates or stale.
    Duplicates,
    /// `stalls`: accesses the SMMU stalled.
    Stalls,
    /// `doorbells`: doorbells accepted from PD pages.
    Doorbells,
}

/// Number of counters (`counters` is 16 x 64 bits).
pub const COUNTERS: usize = 16;

impl Counter {
    /// Every counter, in register order.
    pub const ALL: [Counter; COUNTERS] = [
        Counter::Descriptors,
        Counter::BlocksSent,
        Counter::PacketsSent,
        Counter::PacketsReceived,
        Counter::AcksSent,
        Counter::NacksSent,
        Counter::PfNacksSent,
        Counter::EventsPosted,
        Counter::EventsLost,
        Counter::FaultsPushed,
        Counter::FaultsDeduplicated,
        Counter::FaultsLost,
        Counter::Malformed,
        Counter::Duplicates,
        Counter::Stalls,
        Counter::Doorbells,
    ];

    /// Its index `i` in `counters` (the register at `0x040 + 8 * i`).
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The name the docs give it.
    pub const fn name(self) -> &'static str {
        match self {
            Counter::Descriptors => "descriptors",
            Counter::BlocksSent => "blocks_sent",
            Counter::PacketsSent => "packets_sent",
            Counter::PacketsReceived => "packets_received",
            Counter::AcksSent => "acks_sent",
            Counter::NacksSent => "nacks_sent",
            Counter::PfNacksSent => "pf_nacks_sent",
            Counter::EventsPosted => "events_posted",
            Counter::EventsLost => "events_lost",
            Counter::FaultsPushed => "faults_pushed",
            Counter::FaultsDeduplicated => "faults_deduplicated",
            Counter::FaultsLost => "faults_lost",
            Counter::Malformed => "malformed",
            Counter::Duplicates => "duplicates",
            Counter::Stalls => "stalls",
            Counter::Doorbells => "doorbells",
        }
    }
}

register_structs! {
    /// The control page: the kernel's and the R5's.
    pub ControlRegisters {
        /// `ID_VALUE`: magic and version.
        (0x000 => pub id: ReadOnly<u32, ID::Register>),
        /// The engine's limits (`caps_value`).
        (0x004 => pub caps: ReadOnly<u32, CAPS::Register>),
        /// ENABLE and ERROR (the R5's).
        (0x008 => pub ctrl: ReadWrite<u32, CTRL::Register>),
        /// This node's id, stamped into every packet.
        (0x00c => pub node: ReadOnly<u32>),
        /// PA of the engine rings, bits [31:0], 4 KiB aligned; ignores writes while ENABLE = 1.
        (0x010 => pub rings_lo: ReadWrite<u32>),
        /// PA of the engine rings, bits [63:32]; ignores writes while ENABLE = 1.
        (0x014 => pub rings_hi: ReadWrite<u32>),
        /// Any value: the descriptor ring may hold new descriptors (wakes an idle engine).
        (0x018 => pub desc_doorbell: WriteOnly<u32>),
        /// A PD number `p` < 16 sets bit `p` of `cq_pending`; other values are ignored.
        (0x01c => pub cq_notify: WriteOnly<u32>),
        /// Bit `p` [15:0]: the engine accepts the work and packets of PD `p` (the kernel's).
        (0x020 => pub pd_enable: ReadWrite<u32>),
        /// Bit `p`: the engine still holds work of PD `p`.
        (0x024 => pub pd_busy: ReadOnly<u32>),
        /// Interrupt causes; the sticky ones are write-1-to-clear.
        (0x028 => pub irq_status: ReadWrite<u32, IRQ::Register>),
        /// A set bit of `irq_status & irq_enable` drives PL line 3.
        (0x02c => pub irq_enable: ReadWrite<u32, IRQ::Register>),
        /// Bit `p`: the R5 asked to wake PD `p`'s process; write 1 to clear.
        (0x030 => pub cq_pending: ReadWrite<u32>),
        (0x034 => _reserved0),
        /// Event counters, indexed by `Counter::index`; they wrap.
        (0x040 => pub counters: [ReadOnly<u64>; COUNTERS]),
        (0x0c0 => _reserved1),
        (0x1000 => @END),
    }
}

register_structs! {
    /// The fault page: the kernel's.
    pub FaultRegisters {
        /// The head entry's first word (VALID = 0 when empty); reading it arms the pop.
        (0x00 => pub fifo_lo: ReadOnly<u64, FAULT_LO::Register>),
        /// The head entry's second word; read right after a VALID `fifo_lo`, it pops the entry.
        (0x08 => pub fifo_hi: ReadOnly<u64, FAULT_HI::Register>),
        /// Entries queued, 0..=512.
        (0x10 => pub fifo_count: ReadOnly<u32>),
        (0x14 => _reserved0),
        (0x1000 => @END),
    }
}

register_structs! {
    /// A PD page: the kernel's and the PD's process's.
    pub PdRegisters {
        /// The work queue's new head (a hint): posts a Doorbell event for the page's PD.
        (0x00 => pub doorbell: WriteOnly<u32>),
        (0x04 => _reserved0),
        /// Sends a RAPF message for the page's PD.
        (0x08 => pub rapf: WriteOnly<u64, RAPF::Register>),
        /// The page's PD, `p`.
        (0x10 => pub pd: ReadOnly<u32>),
        /// ENABLED and REFUSED.
        (0x14 => pub status: ReadOnly<u32, PD_STATUS::Register>),
        /// Events of the page's PD the engine could not post: its share of the event ring was
        /// full (wraps).
        (0x18 => pub events_lost: ReadOnly<u32>),
        /// `rapf` writes refused: no fault of the page's PD awaits that answer, a bad field, or
        /// the PD disabled (wraps).
        (0x1c => pub rapf_refused: ReadOnly<u32>),
        (0x20 => _reserved1),
        (0x1000 => @END),
    }
}

register_structs! {
    /// The whole block.
    pub PldmaRegisters {
        /// Configuration, the R5's doorbell, interrupts and counters.
        (0x0_0000 => pub control: ControlRegisters),
        /// The receiver fault FIFO.
        (0x0_1000 => pub fault: FaultRegisters),
        /// The access-log table of Active Access (`docs/hw/active-access.md`).
        (0x0_2000 => pub active: super::active::ActiveRegisters),
        /// The active page table of Active Access.
        (0x0_3000 => pub apt: super::active::AptRegisters),
        (0x0_4000 => _reserved0),
        /// PD page `p` at `0x1_0000 + p * 0x1000`.
        (0x1_0000 => pub pd: [PdRegisters; PDS]),
        (0x2_0000 => @END),
    }
}

/// Offset of the control page in the block: `0x0_0000`.
pub const CONTROL_OFFSET: u64 = core::mem::offset_of!(PldmaRegisters, control) as u64;
/// Offset of the fault page in the block: `0x0_1000`.
pub const FAULT_OFFSET: u64 = core::mem::offset_of!(PldmaRegisters, fault) as u64;
/// Offset of the `active` page (Active Access's log table) in the block: `0x0_2000`.
pub const ACTIVE_OFFSET: u64 = core::mem::offset_of!(PldmaRegisters, active) as u64;
/// Offset of the `apt` page (the active page table) in the block: `0x0_3000`.
pub const APT_OFFSET: u64 = core::mem::offset_of!(PldmaRegisters, apt) as u64;
/// Offset of PD page 0 in the block: `0x1_0000`.
pub const PD_PAGES_OFFSET: u64 = core::mem::offset_of!(PldmaRegisters, pd) as u64;
/// Size of one page of the block (and the stride of the PD pages): 4 KiB.
pub const PAGE: u64 = core::mem::size_of::<PdRegisters>() as u64;
/// Size of the whole block: `0x2_0000` bytes.
pub const BLOCK_SIZE: u64 = core::mem::size_of::<PldmaRegisters>() as u64;

/// The `caps` value of this engine.
pub const fn caps_value() -> u32 {
    (PDS as u32) | (super::VCS_PER_PD as u32) << 8 | 14 << 16 | 8 << 20 | 9 << 24
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{doc_bits, doc_table};
    use core::mem::{offset_of, size_of};
    use std::string::String;
    use std::vec::Vec;

    const DOC: &str = include_str!("../../../docs/hw/pldma.md");

    fn named(rows: &[(&str, usize)]) -> Vec<(String, usize)> {
        rows.iter().map(|(n, o)| ((*n).into(), *o)).collect()
    }

    #[test]
    fn the_block_map_matches_the_doc() {
        let block = [
            ("control", offset_of!(PldmaRegisters, control)),
            ("fault", offset_of!(PldmaRegisters, fault)),
            ("active", offset_of!(PldmaRegisters, active)),
            ("apt", offset_of!(PldmaRegisters, apt)),
            ("pd", offset_of!(PldmaRegisters, pd)),
        ];
        assert_eq!(doc_table(DOC, "Block map"), named(&block));
        assert_eq!(size_of::<PldmaRegisters>(), 0x2_0000);
        assert_eq!(BLOCK_SIZE, 0x2_0000);
        assert_eq!(PAGE, 0x1000);
    }

    #[test]
    fn the_control_page_matches_the_doc() {
        let control = [
            ("id", offset_of!(ControlRegisters, id)),
            ("caps", offset_of!(ControlRegisters, caps)),
            ("ctrl", offset_of!(ControlRegisters, ctrl)),
            ("node", offset_of!(ControlRegisters, node)),
            ("rings_lo", offset_of!(ControlRegisters, rings_lo)),
            ("rings_hi", offset_of!(ControlRegisters, rings_hi)),
            ("desc_doorbell", offset_of!(ControlRegisters, desc_doorbell)),
            ("cq_notify", offset_of!(ControlRegisters, cq_notify)),
            ("pd_enable", offset_of!(ControlRegisters, pd_enable)),
            ("pd_busy", offset_of!(ControlRegisters, pd_busy)),
            ("irq_status", offset_of!(ControlRegisters, irq_status)),
            ("irq_enable", offset_of!(ControlRegisters, irq_enable)),
            ("cq_pending", offset_of!(ControlRegisters, cq_pending)),
            ("counters", offset_of!(ControlRegisters, counters)),
        ];
        assert_eq!(doc_table(DOC, "Control page registers"), named(&control));
        let counters: Vec<(String, usize)> = Counter::ALL
            .iter()
            .map(|c| (c.name().into(), offset_of!(ControlRegisters, counters) + 8 * c.index()))
            .collect();
        assert_eq!(doc_table(DOC, "### Counters"), counters);
        assert!(Counter::ALL.iter().enumerate().all(|(i, c)| c.index() == i));
    }

    #[test]
    fn the_fault_and_pd_pages_match_the_doc() {
        let fault = [
            ("fifo_lo", offset_of!(FaultRegisters, fifo_lo)),
            ("fifo_hi", offset_of!(FaultRegisters, fifo_hi)),
            ("fifo_count", offset_of!(FaultRegisters, fifo_count)),
        ];
        assert_eq!(doc_table(DOC, "Fault page registers"), named(&fault));
        let pd = [
            ("doorbell", offset_of!(PdRegisters, doorbell)),
            ("rapf", offset_of!(PdRegisters, rapf)),
            ("pd", offset_of!(PdRegisters, pd)),
            ("status", offset_of!(PdRegisters, status)),
            ("events_lost", offset_of!(PdRegisters, events_lost)),
            ("rapf_refused", offset_of!(PdRegisters, rapf_refused)),
        ];
        assert_eq!(doc_table(DOC, "PD page registers"), named(&pd));
    }

    fn bits<R: tock_registers::RegisterLongName>(f: tock_registers::fields::Field<u64, R>) -> (u32, u32) {
        (f.shift as u32 + f.mask.count_ones() - 1, f.shift as u32)
    }

    #[test]
    fn bit_layouts_match_the_doc() {
        let lo = [
            ("VALID", bits(FAULT_LO::VALID)),
            ("CODE", bits(FAULT_LO::CODE)),
            ("PD", bits(FAULT_LO::PD)),
            ("NODE", bits(FAULT_LO::NODE)),
            ("TID", bits(FAULT_LO::TID)),
        ];
        let hi = [("VALID", bits(FAULT_HI::VALID)), ("SEQ", bits(FAULT_HI::SEQ)), ("PAGE", bits(FAULT_HI::PAGE))];
        let rapf = [
            ("NODE", bits(RAPF::NODE)),
            ("TID", bits(RAPF::TID)),
            ("ACTION", bits(RAPF::ACTION)),
            ("SEQ", bits(RAPF::SEQ)),
            ("CLAIMED_PD", bits(RAPF::CLAIMED_PD)),
        ];
        let owned = |rows: &[(&str, (u32, u32))]| rows.iter().map(|(n, b)| ((*n).into(), *b)).collect::<Vec<_>>();
        assert_eq!(doc_bits(DOC, "Fault entry, first word"), owned(&lo));
        assert_eq!(doc_bits(DOC, "Fault entry, second word"), owned(&hi));
        assert_eq!(doc_bits(DOC, "The `rapf` register"), owned(&rapf));
    }

    #[test]
    fn interrupt_causes_match_the_doc() {
        let section = DOC.split("### Interrupt causes").nth(1).expect("the section").split("\n#").next().unwrap();
        let rows: Vec<(String, (u32, u32))> = section
            .lines()
            .filter_map(|line| {
                let cells: Vec<&str> = line.split('|').map(|c| c.trim().trim_matches('`')).collect();
                let (hi, lo) = cells.get(1)?.split_once(':').unwrap_or((cells[1], cells[1]));
                Some((cells[2].to_string(), (hi.parse().ok()?, lo.parse().ok()?)))
            })
            .collect();
        let bits = |f: tock_registers::fields::Field<u32, IRQ::Register>| {
            (f.shift as u32 + f.mask.count_ones() - 1, f.shift as u32)
        };
        let causes = [
            ("FAULT", bits(IRQ::FAULT)),
            ("FAULT_LOST", bits(IRQ::FAULT_LOST)),
            ("CQ", bits(IRQ::CQ)),
            ("EVENTS_LOST", bits(IRQ::EVENTS_LOST)),
            ("DESC_REFUSED", bits(IRQ::DESC_REFUSED)),
            ("ACTIVE_LOG", bits(IRQ::ACTIVE_LOG)),
            ("CQ_PENDING", bits(IRQ::CQ_PENDING)),
        ];
        assert_eq!(rows, causes.iter().map(|(n, b)| ((*n).into(), *b)).collect::<Vec<_>>());
    }

    #[test]
    fn id_and_caps() {
        let id = tock_registers::LocalRegisterCopy::<u32, ID::Register>::new(ID_VALUE);
        assert_eq!((id.read(ID::MAGIC), id.read(ID::VERSION)), (0x504C, 1));
        let caps = tock_registers::LocalRegisterCopy::<u32, CAPS::Register>::new(caps_value());
        assert_eq!(caps.read(CAPS::PDS), 16);
        assert_eq!(caps.read(CAPS::VCS), 64);
        assert_eq!(1u64 << caps.read(CAPS::BLOCK_LOG2), super::super::BLOCK_BYTES);
        assert_eq!(1u64 << caps.read(CAPS::PACKET_LOG2), super::super::PACKET_BYTES);
        assert_eq!(1usize << caps.read(CAPS::FIFO_LOG2), super::super::FIFO_DEPTH);
    }
}
