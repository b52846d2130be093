//! GIC-400 (GICv2) distributor and CPU interface register blocks.
//!
//! Source: ARM IHI 0048B (GICv2 architecture specification), tables 4-1 and 4-2, and the
//! CoreLink GIC-400 TRM (DDI 0471B) section 3.

use tock_registers::{
    register_structs,
    registers::{ReadOnly, ReadWrite, WriteOnly},
};

pub use fields::*;

// The items the macro generates (Register, SET, CLEAR, Value) cannot carry docs of their own;
// each register and field is documented where it is declared.
#[allow(missing_docs)]
mod fields {
    use tock_registers::register_bitfields;

    register_bitfields! [u32,
        pub GICD_CTLR [
            ENABLE_GRP0 OFFSET(0) NUMBITS(1) [],
            ENABLE_GRP1 OFFSET(1) NUMBITS(1) []
        ],
        pub GICD_TYPER [
            IT_LINES_NUMBER OFFSET(0) NUMBITS(5) [],
            CPU_NUMBER OFFSET(5) NUMBITS(3) [],
            SECURITY_EXTN OFFSET(10) NUMBITS(1) []
        ],
        pub GICD_SGIR [
            SGIINTID OFFSET(0) NUMBITS(4) [],
            NSATT OFFSET(15) NUMBITS(1) [],
            CPU_TARGET_LIST OFFSET(16) NUMBITS(8) [],
            TARGET_LIST_FILTER OFFSET(24) NUMBITS(2) [
                ListedCpus = 0b00,
                AllOthers = 0b01,
                Myself = 0b10
            ]
        ],
        pub GICC_CTLR [
            ENABLE_GRP0 OFFSET(0) NUMBITS(1) [],
            ENABLE_GRP1 OFFSET(1) NUMBITS(1) [],
            EOIMODE OFFSET(9) NUMBITS(1) []
        ],
        pub GICC_IAR [
            INTERRUPT_ID OFFSET(0) NUMBITS(10) [],
            CPUID OFFSET(10) NUMBITS(3) []
        ]
    ];
}

register_structs! {
    /// The GIC-400 distributor (GICD; ARM IHI 0048B, 4.1).
    pub DistributorRegisters {
        /// Control.
        (0x000 => pub ctlr: ReadWrite<u32, GICD_CTLR::Register>),
        /// Interrupt controller type (GICD_TYPER).
        (0x004 => pub typer: ReadOnly<u32, GICD_TYPER::Register>),
        /// Implementer identification.
        (0x008 => pub iidr: ReadOnly<u32>),
        (0x00c => _reserved0),
        /// Group of each interrupt, one bit each.
        (0x080 => pub igroupr: [ReadWrite<u32>; 32]),
        /// Set-enable, one bit each.
        (0x100 => pub isenabler: [ReadWrite<u32>; 32]),
        /// Clear-enable, one bit each.
        (0x180 => pub icenabler: [ReadWrite<u32>; 32]),
        /// Set-pending, one bit each.
        (0x200 => pub ispendr: [ReadWrite<u32>; 32]),
        /// Clear-pending, one bit each.
        (0x280 => pub icpendr: [ReadWrite<u32>; 32]),
        /// Set-active, one bit each.
        (0x300 => pub isactiver: [ReadWrite<u32>; 32]),
        /// Clear-active, one bit each.
        (0x380 => pub icactiver: [ReadWrite<u32>; 32]),
        /// Priority, one byte each.
        (0x400 => pub ipriorityr: [ReadWrite<u8>; 1020]),
        (0x7fc => _reserved1),
        /// Target cores of each SPI, one byte each.
        (0x800 => pub itargetsr: [ReadWrite<u8>; 1020]),
        (0xbfc => _reserved2),
        /// Level or edge, two bits each.
        (0xc00 => pub icfgr: [ReadWrite<u32>; 64]),
        (0xd00 => _reserved3),
        /// Software-generated interrupt register.
        (0xf00 => pub sgir: WriteOnly<u32, GICD_SGIR::Register>),
        (0xf04 => _reserved4),
        /// SGI clear-pending.
        (0xf10 => pub cpendsgir: [ReadWrite<u32>; 4]),
        /// SGI set-pending.
        (0xf20 => pub spendsgir: [ReadWrite<u32>; 4]),
        (0xf30 => _reserved5),
        (0x1000 => @END),
    }
}

register_structs! {
    /// The GIC-400 CPU interface (GICC; ARM IHI 0048B, 4.1).
    pub CpuInterfaceRegisters {
        /// Control.
        (0x00 => pub ctlr: ReadWrite<u32, GICC_CTLR::Register>),
        /// Priority mask.
        (0x04 => pub pmr: ReadWrite<u32>),
        /// Binary point.
        (0x08 => pub bpr: ReadWrite<u32>),
        /// Interrupt acknowledge: reading it takes the interrupt.
        (0x0c => pub iar: ReadOnly<u32, GICC_IAR::Register>),
        /// End of interrupt.
        (0x10 => pub eoir: WriteOnly<u32>),
        /// Running priority.
        (0x14 => pub rpr: ReadOnly<u32>),
        /// Highest-priority pending interrupt.
        (0x18 => pub hppir: ReadOnly<u32>),
        (0x1c => _reserved0),
        /// Implementer identification.
        (0xfc => pub iidr: ReadOnly<u32>),
        (0x100 => @END),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::{offset_of, size_of};

    /// IHI 0048B table 4-1.
    #[test]
    fn distributor_offsets_match_gicv2_spec() {
        assert_eq!(offset_of!(DistributorRegisters, ctlr), 0x000);
        assert_eq!(offset_of!(DistributorRegisters, typer), 0x004);
        assert_eq!(offset_of!(DistributorRegisters, igroupr), 0x080);
        assert_eq!(offset_of!(DistributorRegisters, isenabler), 0x100);
        assert_eq!(offset_of!(DistributorRegisters, icenabler), 0x180);
        assert_eq!(offset_of!(DistributorRegisters, ispendr), 0x200);
        assert_eq!(offset_of!(DistributorRegisters, icpendr), 0x280);
        assert_eq!(offset_of!(DistributorRegisters, isactiver), 0x300);
        assert_eq!(offset_of!(DistributorRegisters, icactiver), 0x380);
        assert_eq!(offset_of!(DistributorRegisters, ipriorityr), 0x400);
        assert_eq!(offset_of!(DistributorRegisters, itargetsr), 0x800);
        assert_eq!(offset_of!(DistributorRegisters, icfgr), 0xc00);
        assert_eq!(offset_of!(DistributorRegisters, sgir), 0xf00);
        assert_eq!(offset_of!(DistributorRegisters, cpendsgir), 0xf10);
        assert_eq!(offset_of!(DistributorRegisters, spendsgir), 0xf20);
        assert_eq!(size_of::<DistributorRegisters>(), 0x1000);
    }

    /// IHI 0048B table 4-2.
    #[test]
    fn cpu_interface_offsets_match_gicv2_spec() {
        assert_eq!(offset_of!(CpuInterfaceRegisters, ctlr), 0x00);
        assert_eq!(offset_of!(CpuInterfaceRegisters, pmr), 0x04);
        assert_eq!(offset_of!(CpuInterfaceRegisters, bpr), 0x08);
        assert_eq!(offset_of!(CpuInterfaceRegisters, iar), 0x0c);
        assert_eq!(offset_of!(CpuInterfaceRegisters, eoir), 0x10);
        assert_eq!(offset_of!(CpuInterfaceRegisters, rpr), 0x14);
        assert_eq!(offset_of!(CpuInterfaceRegisters, hppir), 0x18);
        assert_eq!(offset_of!(CpuInterfaceRegisters, iidr), 0xfc);
    }
}
