//! SMMU-500 register blocks (ZynqMP, `docs/hw/smmu.md`): the subset of the ARM SMMUv2
//! architecture (ARM IHI 0062) the kernel programs, at the offsets of Linux's `arm-smmu.h` and
//! UG1087's SMMU_GPV register map.
//!
//! ```text
//! 0x00000 +---------------------+
//!         | GR0                 |  global: sCR0, IDR0-2, global fault, TLBI, SMR/S2CR
//! 0x01000 +---------------------+
//!         | GR1                 |  context bank attributes: CBAR, CBFRSYNRA, CBA2R
//! 0x02000 +---------------------+
//!         | (GID, PM, SSD, ...) |  not used
//! 0x10000 +---------------------+  IDR1: PAGESIZE = 4 KiB, NUMPAGENDXB = 3 (16 global pages)
//!         | context bank 0..15  |  one 4 KiB page each
//! 0x20000 +---------------------+
//! ```

use tock_registers::{
    register_structs,
    registers::{ReadOnly, ReadWrite, WriteOnly},
};

/// Context banks of the ZynqMP SMMU-500 (IDR1.NUMCB).
pub const CONTEXT_BANKS: usize = 16;
/// Stream match register groups (IDR0.NUMSMRG).
pub const STREAM_MATCH_GROUPS: usize = 48;
/// Size of one SMMU register page (IDR1.PAGESIZE = 0).
pub const PAGE_BYTES: usize = 0x1000;
/// Offset of context bank 0: the global space is 2^(NUMPAGENDXB + 1) pages.
pub const CONTEXT_BANK_BASE: usize = 0x10000;

pub use fields::*;

// The items the macro generates (Register, SET, CLEAR, Value) cannot carry docs of their own;
// each register and field is documented where it is declared.
#[allow(missing_docs)]
mod fields {
    use tock_registers::register_bitfields;

    register_bitfields! [u32,
        /// sCR0, global configuration (the Non-secure alias at GR0 + 0).
        pub SCR0 [
            /// Client port disable: 1 = every transaction bypasses the SMMU (reset value).
            CLIENTPD OFFSET(0) NUMBITS(1) [],
            GFRE OFFSET(1) NUMBITS(1) [],
            GFIE OFFSET(2) NUMBITS(1) [],
            GCFGFRE OFFSET(4) NUMBITS(1) [],
            GCFGFIE OFFSET(5) NUMBITS(1) [],
            /// Reads 0: context banks may stall.
            STALLD OFFSET(8) NUMBITS(1) [],
            /// Unidentified stream fault: 1 = a transaction no SMR matches faults, 0 = it bypasses.
            USFCFG OFFSET(10) NUMBITS(1) [],
            VMIDPNE OFFSET(11) NUMBITS(1) [],
            /// Private TLB maintenance: CPU broadcast TLBIs do not reach the SMMU.
            PTM OFFSET(12) NUMBITS(1) [],
            FB OFFSET(13) NUMBITS(1) [],
            BSU OFFSET(14) NUMBITS(2) []
        ],
        /// SMMU_IDR0: stage support, stream matching, stream ID width, SMR count.
        pub IDR0 [
            NUMSMRG OFFSET(0) NUMBITS(8) [],
            NUMSIDB OFFSET(9) NUMBITS(4) [],
            BTM OFFSET(13) NUMBITS(1) [],
            /// Coherent translation table walks.
            CTTW OFFSET(14) NUMBITS(1) [],
            NUMIRPT OFFSET(16) NUMBITS(8) [],
            PTFS OFFSET(24) NUMBITS(2) [],
            ATOSNS OFFSET(26) NUMBITS(1) [],
            /// Stream matching (SMR) rather than indexing.
            SMS OFFSET(27) NUMBITS(1) [],
            NTS OFFSET(28) NUMBITS(1) [],
            S2TS OFFSET(29) NUMBITS(1) [],
            S1TS OFFSET(30) NUMBITS(1) [],
            SES OFFSET(31) NUMBITS(1) []
        ],
        /// SMMU_IDR1: register page size and count, context banks.
        pub IDR1 [
            NUMCB OFFSET(0) NUMBITS(8) [],
            NUMSSDNDXB OFFSET(8) NUMBITS(4) [],
            SSDTP OFFSET(12) NUMBITS(1) [],
            SMCD OFFSET(15) NUMBITS(1) [],
            NUMS2CB OFFSET(16) NUMBITS(8) [],
            NUMPAGENDXB OFFSET(28) NUMBITS(3) [],
            /// 0 = 4 KiB register pages, 1 = 64 KiB.
            PAGESIZE OFFSET(31) NUMBITS(1) []
        ],
        /// SMMU_IDR2: address sizes and translation granules.
        pub IDR2 [
            IAS OFFSET(0) NUMBITS(4) [],
            OAS OFFSET(4) NUMBITS(4) [],
            UBS OFFSET(8) NUMBITS(4) [],
            PTFS_4K OFFSET(12) NUMBITS(1) [],
            PTFS_16K OFFSET(13) NUMBITS(1) [],
            PTFS_64K OFFSET(14) NUMBITS(1) []
        ],
        /// sGFSR, global fault status (write 1 to clear).
        pub GFSR [
            /// Invalid context fault (the model: an S2CR of type fault).
            ICF OFFSET(0) NUMBITS(1) [],
            /// Unidentified stream fault: no SMR matched and sCR0.USFCFG = 1.
            USF OFFSET(1) NUMBITS(1) [],
            /// Stream match conflict: more than one SMR matched.
            SMCF OFFSET(2) NUMBITS(1) [],
            /// Unidentified context bank fault: S2CR.CBNDX names no bank.
            UCBF OFFSET(3) NUMBITS(1) [],
            UCIF OFFSET(4) NUMBITS(1) [],
            CAF OFFSET(5) NUMBITS(1) [],
            EF OFFSET(6) NUMBITS(1) [],
            PF OFFSET(7) NUMBITS(1) [],
            UUT OFFSET(8) NUMBITS(1) [],
            MULTI OFFSET(31) NUMBITS(1) []
        ],
        /// sGFSYNR0, syndrome of the recorded global fault.
        pub GFSYNR0 [
            NESTED OFFSET(0) NUMBITS(1) [],
            WNR OFFSET(1) NUMBITS(1) [],
            PNU OFFSET(2) NUMBITS(1) [],
            IND OFFSET(3) NUMBITS(1) []
        ],
        /// sGFSYNR1: the recorded global fault's stream.
        pub GFSYNR1 [
            STREAMID OFFSET(0) NUMBITS(15) []
        ],
        /// sTLBGSTATUS: the global sync's progress.
        pub TLBGSTATUS [
            GSACTIVE OFFSET(0) NUMBITS(1) []
        ],
        /// TLBIVMID: the VMID whose entries go.
        pub TLBIVMID [
            VMID OFFSET(0) NUMBITS(16) []
        ],
        /// SMR n: which stream IDs group n matches (ID ^ stream) & !MASK == 0.
        pub SMR [
            ID OFFSET(0) NUMBITS(15) [],
            MASK OFFSET(16) NUMBITS(15) [],
            VALID OFFSET(31) NUMBITS(1) []
        ],
        /// S2CR n: what happens to the streams SMR n matches.
        pub S2CR [
            CBNDX OFFSET(0) NUMBITS(8) [],
            TYPE OFFSET(16) NUMBITS(2) [
                Translate = 0,
                Bypass = 1,
                Fault = 2
            ],
            PRIVCFG OFFSET(24) NUMBITS(2) [
                Default = 0,
                Unprivileged = 2,
                Privileged = 3
            ]
        ],
        /// CBAR n: the bank's translation type and VMID.
        pub CBAR [
            VMID OFFSET(0) NUMBITS(8) [],
            BPSHCFG OFFSET(8) NUMBITS(2) [],
            MEMATTR OFFSET(12) NUMBITS(4) [],
            TYPE OFFSET(16) NUMBITS(2) [
                S2Translate = 0,
                S1TranslateS2Bypass = 1,
                S1TranslateS2Fault = 2,
                S1TranslateS2Translate = 3
            ],
            IRPTNDX OFFSET(24) NUMBITS(8) []
        ],
        /// CBFRSYNRA n: the stream of the fault bank n recorded.
        pub CBFRSYNRA [
            STREAMID OFFSET(0) NUMBITS(16) []
        ],
        /// CBA2R n: the bank's regime (AArch64 or AArch32).
        pub CBA2R [
            /// 1 = AArch64 translation regime (64-bit TTBRs, TLBIVA format).
            VA64 OFFSET(0) NUMBITS(1) [],
            VMID16 OFFSET(16) NUMBITS(16) []
        ],
        /// SCTLR: the bank's enable and fault configuration.
        pub SCTLR [
            /// Translation enabled. With M = 0 the bank's transactions bypass translation.
            M OFFSET(0) NUMBITS(1) [],
            TRE OFFSET(1) NUMBITS(1) [],
            /// Access flag enable: a descriptor with AF = 0 faults (with AFFD = 0).
            AFE OFFSET(2) NUMBITS(1) [],
            AFFD OFFSET(3) NUMBITS(1) [],
            E OFFSET(4) NUMBITS(1) [],
            /// Context fault report enable: a terminated transaction gets an abort (SLVERR).
            CFRE OFFSET(5) NUMBITS(1) [],
            /// Context fault interrupt enable.
            CFIE OFFSET(6) NUMBITS(1) [],
            CFCFG OFFSET(7) NUMBITS(1) [
                Terminate = 0,
                Stall = 1
            ],
            /// Hit under previous context fault.
            HUPCF OFFSET(8) NUMBITS(1) [],
            WXN OFFSET(9) NUMBITS(1) [],
            UWXN OFFSET(10) NUMBITS(1) [],
            /// The bank's ASIDs are private to it.
            ASIDPNE OFFSET(12) NUMBITS(1) []
        ],
        /// RESUME: what to do with the bank's stalled transactions.
        pub RESUME [
            TNR OFFSET(0) NUMBITS(1) [
                Retry = 0,
                Terminate = 1
            ]
        ],
        /// TCR2: output size and ASID width.
        pub TCR2 [
            /// Output (physical) address size, encoded as TCR_EL1.IPS.
            PASIZE OFFSET(0) NUMBITS(3) [],
            /// 1 = 16-bit ASIDs.
            AS OFFSET(4) NUMBITS(1) [],
            TBI0 OFFSET(5) NUMBITS(1) [],
            TBI1 OFFSET(6) NUMBITS(1) [],
            SEP OFFSET(15) NUMBITS(3) [
                Upstream = 0b111
            ]
        ],
        /// TCR in the AArch64 format: the low half of TCR_EL1.
        pub TCR [
            T0SZ OFFSET(0) NUMBITS(6) [],
            EPD0 OFFSET(7) NUMBITS(1) [],
            IRGN0 OFFSET(8) NUMBITS(2) [],
            ORGN0 OFFSET(10) NUMBITS(2) [],
            SH0 OFFSET(12) NUMBITS(2) [],
            TG0 OFFSET(14) NUMBITS(2) [
                Granule4K = 0b00,
                Granule64K = 0b01,
                Granule16K = 0b10
            ],
            T1SZ OFFSET(16) NUMBITS(6) [],
            A1 OFFSET(22) NUMBITS(1) [],
            EPD1 OFFSET(23) NUMBITS(1) []
        ],
        /// FSR, context fault status. Fault bits are write 1 to clear.
        pub FSR [
            /// Translation fault.
            TF OFFSET(1) NUMBITS(1) [],
            /// Access flag fault.
            AFF OFFSET(2) NUMBITS(1) [],
            /// Permission fault.
            PF OFFSET(3) NUMBITS(1) [],
            /// External fault (a table walk read failed).
            EF OFFSET(4) NUMBITS(1) [],
            TLBMCF OFFSET(5) NUMBITS(1) [],
            TLBLKF OFFSET(6) NUMBITS(1) [],
            /// Address size fault.
            ASF OFFSET(7) NUMBITS(1) [],
            UUT OFFSET(8) NUMBITS(1) [],
            FORMAT OFFSET(9) NUMBITS(2) [],
            /// A transaction is stalled (CFCFG = 1) until RESUME is written.
            SS OFFSET(30) NUMBITS(1) [],
            /// A fault arrived while FSR already held one; it was not recorded.
            MULTI OFFSET(31) NUMBITS(1) []
        ],
        /// FSYNR0: syndrome of the recorded context fault.
        pub FSYNR0 [
            /// Level of the descriptor that faulted.
            PLVL OFFSET(0) NUMBITS(2) [],
            /// 1 = the faulting access was a write.
            WNR OFFSET(4) NUMBITS(1) [],
            /// 1 = privileged access.
            PNU OFFSET(5) NUMBITS(1) [],
            IND OFFSET(6) NUMBITS(1) [],
            NSATTR OFFSET(8) NUMBITS(1) [],
            ATOF OFFSET(9) NUMBITS(1) [],
            /// The fault happened on a table walk read.
            PTWF OFFSET(10) NUMBITS(1) [],
            AFR OFFSET(11) NUMBITS(1) [],
            S1CBNDX OFFSET(16) NUMBITS(4) []
        ],
        /// TLBIASID: the ASID whose entries go.
        pub TLBIASID [
            ASID OFFSET(0) NUMBITS(16) []
        ],
        /// TLBSTATUS: the bank's sync progress.
        pub TLBSTATUS [
            SACTIVE OFFSET(0) NUMBITS(1) []
        ]
    ];

    register_bitfields! [u64,
        /// TTBR0 in the AArch64 format (CBA2R.VA64 = 1), as TTBR0_EL1.
        pub TTBR [
            BADDR OFFSET(0) NUMBITS(48) [],
            ASID OFFSET(48) NUMBITS(16) []
        ],
        /// TLBIVA in the AArch64 format: VA[55:12] and the ASID.
        pub TLBIVA [
            PAGE OFFSET(0) NUMBITS(44) [],
            ASID OFFSET(48) NUMBITS(16) []
        ]
    ];
}

register_structs! {
    /// Global register space 0.
    pub Gr0Registers {
        /// sCR0.
        (0x000 => pub scr0: ReadWrite<u32, SCR0::Register>),
        (0x004 => _reserved0),
        /// SMMU_IDR0.
        (0x020 => pub idr0: ReadOnly<u32, IDR0::Register>),
        /// SMMU_IDR1.
        (0x024 => pub idr1: ReadOnly<u32, IDR1::Register>),
        /// SMMU_IDR2.
        (0x028 => pub idr2: ReadOnly<u32, IDR2::Register>),
        (0x02c => _reserved1),
        /// sGFAR: address of the recorded global fault.
        (0x040 => pub gfar: ReadWrite<u64>),
        /// sGFSR: global fault status (write 1 to clear).
        (0x048 => pub gfsr: ReadWrite<u32, GFSR::Register>),
        (0x04c => _reserved2),
        /// sGFSYNR0.
        (0x050 => pub gfsynr0: ReadOnly<u32, GFSYNR0::Register>),
        /// sGFSYNR1.
        (0x054 => pub gfsynr1: ReadOnly<u32, GFSYNR1::Register>),
        (0x058 => _reserved3),
        /// TLBIVMID: invalidate by VMID.
        (0x064 => pub tlbivmid: WriteOnly<u32, TLBIVMID::Register>),
        /// TLBIALLNSNH: invalidate everything.
        (0x068 => pub tlbiallnsnh: WriteOnly<u32>),
        (0x06c => _reserved4),
        /// sTLBGSYNC: start a global sync.
        (0x070 => pub tlbgsync: WriteOnly<u32>),
        /// sTLBGSTATUS.
        (0x074 => pub tlbgstatus: ReadOnly<u32, TLBGSTATUS::Register>),
        (0x078 => _reserved5),
        /// SMR n.
        (0x800 => pub smr: [ReadWrite<u32, SMR::Register>; STREAM_MATCH_GROUPS]),
        (0x8c0 => _reserved6),
        /// S2CR n.
        (0xc00 => pub s2cr: [ReadWrite<u32, S2CR::Register>; STREAM_MATCH_GROUPS]),
        (0xcc0 => _reserved7),
        (0x1000 => @END),
    }
}

register_structs! {
    /// Global register space 1: per-bank attributes.
    pub Gr1Registers {
        /// CBAR n.
        (0x000 => pub cbar: [ReadWrite<u32, CBAR::Register>; CONTEXT_BANKS]),
        (0x040 => _reserved0),
        /// CBFRSYNRA n.
        (0x400 => pub cbfrsynra: [ReadOnly<u32, CBFRSYNRA::Register>; CONTEXT_BANKS]),
        (0x440 => _reserved1),
        /// CBA2R n.
        (0x800 => pub cba2r: [ReadWrite<u32, CBA2R::Register>; CONTEXT_BANKS]),
        (0x840 => _reserved2),
        (0x1000 => @END),
    }
}

register_structs! {
    /// One translation context bank.
    pub ContextBankRegisters {
        /// SCTLR.
        (0x000 => pub sctlr: ReadWrite<u32, SCTLR::Register>),
        (0x004 => _reserved0),
        /// RESUME: retry or terminate stalled transactions.
        (0x008 => pub resume: WriteOnly<u32, RESUME::Register>),
        (0x00c => _reserved1),
        /// TCR2.
        (0x010 => pub tcr2: ReadWrite<u32, TCR2::Register>),
        (0x014 => _reserved2),
        /// TTBR0: root table and ASID.
        (0x020 => pub ttbr0: ReadWrite<u64, TTBR::Register>),
        (0x028 => _reserved3),
        /// TCR.
        (0x030 => pub tcr: ReadWrite<u32, TCR::Register>),
        (0x034 => _reserved4),
        /// MAIR0 = MAIR_EL1[31:0].
        (0x038 => pub mair0: ReadWrite<u32>),
        /// MAIR1 = MAIR_EL1[63:32].
        (0x03c => pub mair1: ReadWrite<u32>),
        (0x040 => _reserved5),
        /// FSR: context fault status (write 1 to clear).
        (0x058 => pub fsr: ReadWrite<u32, FSR::Register>),
        (0x05c => _reserved6),
        /// FAR: address of the recorded fault.
        (0x060 => pub far: ReadOnly<u64>),
        /// FSYNR0.
        (0x068 => pub fsynr0: ReadOnly<u32, FSYNR0::Register>),
        (0x06c => _reserved7),
        /// TLBIVA: invalidate by address and ASID.
        (0x600 => pub tlbiva: WriteOnly<u64, TLBIVA::Register>),
        (0x608 => _reserved8),
        /// TLBIASID: invalidate by ASID.
        (0x610 => pub tlbiasid: WriteOnly<u32, TLBIASID::Register>),
        (0x614 => _reserved9),
        /// TLBIALL: invalidate the bank.
        (0x618 => pub tlbiall: WriteOnly<u32>),
        (0x61c => _reserved10),
        /// TLBSYNC: start the bank's sync.
        (0x7f0 => pub tlbsync: WriteOnly<u32>),
        /// TLBSTATUS.
        (0x7f4 => pub tlbstatus: ReadOnly<u32, TLBSTATUS::Register>),
        (0x7f8 => _reserved11),
        (0x1000 => @END),
    }
}

register_structs! {
    /// The whole SMMU: 16 global pages, then 16 context bank pages.
    pub Smmu500Registers {
        /// Global register space 0.
        (0x00000 => pub gr0: Gr0Registers),
        /// Global register space 1.
        (0x01000 => pub gr1: Gr1Registers),
        (0x02000 => _reserved0),
        /// Context bank n at `0x10000 + n * 0x1000`.
        (0x10000 => pub cb: [ContextBankRegisters; CONTEXT_BANKS]),
        (0x20000 => @END),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc_table;
    use core::mem::{offset_of, size_of};

    const DOC: &str = include_str!("../../../docs/hw/smmu.md");

    fn rows(fields: &[(&str, usize)]) -> std::vec::Vec<(std::string::String, usize)> {
        fields.iter().map(|(n, o)| ((*n).into(), *o)).collect()
    }

    /// Offsets of ARM IHI 0062 / Linux `arm-smmu.h`, written out independently of the structs.
    #[test]
    fn offsets_match_the_architecture() {
        assert_eq!(offset_of!(Gr0Registers, gfsr), 0x48);
        assert_eq!(offset_of!(Gr0Registers, tlbiallnsnh), 0x68);
        assert_eq!(offset_of!(Gr0Registers, tlbgstatus), 0x74);
        assert_eq!(offset_of!(Gr0Registers, smr) + 4 * 47, 0x8bc);
        assert_eq!(offset_of!(Gr0Registers, s2cr), 0xc00);
        assert_eq!(offset_of!(Gr1Registers, cba2r) + 4 * 15, 0x83c);
        assert_eq!(offset_of!(ContextBankRegisters, resume), 0x08);
        assert_eq!(offset_of!(ContextBankRegisters, fsr), 0x58);
        assert_eq!(offset_of!(ContextBankRegisters, far), 0x60);
        assert_eq!(offset_of!(ContextBankRegisters, fsynr0), 0x68);
        assert_eq!(offset_of!(ContextBankRegisters, tlbiasid), 0x610);
        assert_eq!(offset_of!(ContextBankRegisters, tlbstatus), 0x7f4);
        assert_eq!(size_of::<Gr0Registers>(), PAGE_BYTES);
        assert_eq!(size_of::<ContextBankRegisters>(), PAGE_BYTES);
        // UG1087: context bank 8's SCTLR at 0xFD81_8000.
        assert_eq!(offset_of!(Smmu500Registers, cb) + 8 * size_of::<ContextBankRegisters>(), 0x18000);
        assert_eq!(offset_of!(Smmu500Registers, cb), CONTEXT_BANK_BASE);
        assert_eq!(size_of::<Smmu500Registers>(), 0x20000);
    }

    /// Every register row of the tables in `docs/hw/smmu.md` names the offset the struct has.
    #[test]
    fn offsets_match_the_doc() {
        let gr0 = [
            ("scr0", offset_of!(Gr0Registers, scr0)),
            ("idr0", offset_of!(Gr0Registers, idr0)),
            ("idr1", offset_of!(Gr0Registers, idr1)),
            ("idr2", offset_of!(Gr0Registers, idr2)),
            ("gfar", offset_of!(Gr0Registers, gfar)),
            ("gfsr", offset_of!(Gr0Registers, gfsr)),
            ("gfsynr0", offset_of!(Gr0Registers, gfsynr0)),
            ("gfsynr1", offset_of!(Gr0Registers, gfsynr1)),
            ("tlbivmid", offset_of!(Gr0Registers, tlbivmid)),
            ("tlbiallnsnh", offset_of!(Gr0Registers, tlbiallnsnh)),
            ("tlbgsync", offset_of!(Gr0Registers, tlbgsync)),
            ("tlbgstatus", offset_of!(Gr0Registers, tlbgstatus)),
            ("smr", offset_of!(Gr0Registers, smr)),
            ("s2cr", offset_of!(Gr0Registers, s2cr)),
        ];
        let gr1 = [
            ("cbar", offset_of!(Gr1Registers, cbar)),
            ("cbfrsynra", offset_of!(Gr1Registers, cbfrsynra)),
            ("cba2r", offset_of!(Gr1Registers, cba2r)),
        ];
        let cb = [
            ("sctlr", offset_of!(ContextBankRegisters, sctlr)),
            ("resume", offset_of!(ContextBankRegisters, resume)),
            ("tcr2", offset_of!(ContextBankRegisters, tcr2)),
            ("ttbr0", offset_of!(ContextBankRegisters, ttbr0)),
            ("tcr", offset_of!(ContextBankRegisters, tcr)),
            ("mair0", offset_of!(ContextBankRegisters, mair0)),
            ("mair1", offset_of!(ContextBankRegisters, mair1)),
            ("fsr", offset_of!(ContextBankRegisters, fsr)),
            ("far", offset_of!(ContextBankRegisters, far)),
            ("fsynr0", offset_of!(ContextBankRegisters, fsynr0)),
            ("tlbiva", offset_of!(ContextBankRegisters, tlbiva)),
            ("tlbiasid", offset_of!(ContextBankRegisters, tlbiasid)),
            ("tlbiall", offset_of!(ContextBankRegisters, tlbiall)),
            ("tlbsync", offset_of!(ContextBankRegisters, tlbsync)),
            ("tlbstatus", offset_of!(ContextBankRegisters, tlbstatus)),
        ];
        let block = [
            ("gr0", offset_of!(Smmu500Registers, gr0)),
            ("gr1", offset_of!(Smmu500Registers, gr1)),
            ("cb", offset_of!(Smmu500Registers, cb)),
        ];
        assert_eq!(doc_table(DOC, "GR0 registers"), rows(&gr0));
        assert_eq!(doc_table(DOC, "GR1 registers"), rows(&gr1));
        assert_eq!(doc_table(DOC, "Context bank registers"), rows(&cb));
        assert_eq!(doc_table(DOC, "Block map"), rows(&block));
    }

    fn bits(mask: u32, shift: usize) -> u32 {
        mask << shift
    }

    #[test]
    fn field_positions() {
        assert_eq!(bits(SCR0::CLIENTPD.mask, SCR0::CLIENTPD.shift), 1);
        assert_eq!(bits(SCR0::USFCFG.mask, SCR0::USFCFG.shift), 1 << 10);
        assert_eq!(bits(SCR0::PTM.mask, SCR0::PTM.shift), 1 << 12);
        assert_eq!(bits(IDR0::NUMSMRG.mask, IDR0::NUMSMRG.shift), 0xff);
        assert_eq!(bits(IDR0::NUMSIDB.mask, IDR0::NUMSIDB.shift), 0x1e00);
        assert_eq!(bits(IDR1::NUMPAGENDXB.mask, IDR1::NUMPAGENDXB.shift), 0x7000_0000);
        assert_eq!(bits(IDR1::PAGESIZE.mask, IDR1::PAGESIZE.shift), 1 << 31);
        assert_eq!(bits(IDR2::PTFS_4K.mask, IDR2::PTFS_4K.shift), 1 << 12);
        assert_eq!(bits(SMR::MASK.mask, SMR::MASK.shift), 0x7fff_0000);
        assert_eq!(bits(S2CR::TYPE.mask, S2CR::TYPE.shift), 0x3_0000);
        assert_eq!(bits(S2CR::PRIVCFG.mask, S2CR::PRIVCFG.shift), 0x300_0000);
        assert_eq!(bits(CBAR::TYPE.mask, CBAR::TYPE.shift), 0x3_0000);
        assert_eq!(bits(CBAR::IRPTNDX.mask, CBAR::IRPTNDX.shift), 0xff00_0000);
        assert_eq!(
            [SCTLR::M.shift, SCTLR::AFE.shift, SCTLR::CFRE.shift, SCTLR::CFIE.shift, SCTLR::CFCFG.shift],
            [0, 2, 5, 6, 7]
        );
        assert_eq!((SCTLR::HUPCF.shift, SCTLR::ASIDPNE.shift), (8, 12));
        assert_eq!(bits(TCR2::SEP.mask, TCR2::SEP.shift), 0x3_8000);
        assert_eq!((TCR::TG0.shift, TCR::EPD1.shift), (14, 23));
        assert_eq!([FSR::TF.shift, FSR::AFF.shift, FSR::PF.shift, FSR::EF.shift, FSR::ASF.shift], [1, 2, 3, 4, 7]);
        assert_eq!((FSR::SS.shift, FSR::MULTI.shift), (30, 31));
        assert_eq!((FSYNR0::WNR.shift, FSYNR0::PTWF.shift), (4, 10));
        assert_eq!(TTBR::ASID.shift, 48);
        assert_eq!(TLBIVA::PAGE.mask, (1 << 44) - 1);
    }
}
