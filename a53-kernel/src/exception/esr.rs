//! Decoding of the Exception Syndrome Register (ESR_EL1) for reports and fault handlers: the
//! saved value read through `aarch64-cpu`'s ESR_EL1 fields as a `LocalRegisterCopy`, so that it
//! is decoded (and tested) on the host as well.
//!
//! Source: ARM DDI 0487, D17.2.37 (ESR_EL1) and the ISS encodings for data and instruction
//! aborts.

use aarch64_cpu::registers::ESR_EL1;
use core::fmt;
use tock_registers::LocalRegisterCopy;

/// A saved ESR_EL1 value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Esr(pub u64);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExceptionClass {
    Unknown,
    TrappedWfx,
    SimdFpAccess,
    IllegalState,
    Svc64,
    TrappedSysReg,
    InstructionAbortLower,
    InstructionAbortSame,
    PcAlignment,
    DataAbortLower,
    DataAbortSame,
    SpAlignment,
    FpException,
    SError,
    Breakpoint,
    SoftwareStep,
    Watchpoint,
    Brk,
    Other(u8),
}

impl ExceptionClass {
    pub fn name(self) -> &'static str {
        use ExceptionClass::*;
        match self {
            Unknown => "unknown reason (undefined instruction)",
            TrappedWfx => "trapped WFI/WFE",
            SimdFpAccess => "trapped SIMD/FP access",
            IllegalState => "illegal execution state",
            Svc64 => "SVC",
            TrappedSysReg => "trapped system register access",
            InstructionAbortLower => "instruction abort from EL0",
            InstructionAbortSame => "instruction abort",
            PcAlignment => "PC alignment fault",
            DataAbortLower => "data abort from EL0",
            DataAbortSame => "data abort",
            SpAlignment => "SP alignment fault",
            FpException => "floating-point exception",
            SError => "SError",
            Breakpoint => "breakpoint",
            SoftwareStep => "software step",
            Watchpoint => "watchpoint",
            Brk => "BRK instruction",
            Other(_) => "other",
        }
    }
}

/// Fault status code of an instruction or data abort (ISS bits [5:0]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultStatus {
    AddressSize { level: u8 },
    Translation { level: u8 },
    AccessFlag { level: u8 },
    Permission { level: u8 },
    SyncExternal,
    Alignment,
    TlbConflict,
    Other(u8),
}

impl fmt::Display for FaultStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::AddressSize { level } => write!(f, "address size fault, level {level}"),
            Self::Translation { level } => write!(f, "translation fault, level {level}"),
            Self::AccessFlag { level } => write!(f, "access flag fault, level {level}"),
            Self::Permission { level } => write!(f, "permission fault, level {level}"),
            Self::SyncExternal => f.write_str("synchronous external abort"),
            Self::Alignment => f.write_str("alignment fault"),
            Self::TlbConflict => f.write_str("TLB conflict abort"),
            Self::Other(code) => write!(f, "fault status {code:#04x}"),
        }
    }
}

/// The bits of an abort's ISS the kernel reads (ARM DDI 0487, "ISS encoding for an exception
/// from a Data Abort"). ESR_EL1's own fields (EC, IL, ISS) come from `aarch64-cpu`.
mod abort_iss {
    #![allow(missing_docs)]
    tock_registers::register_bitfields! [u64,
        pub ABORT_ISS [
            /// Fault status code: the kind of fault and, for most, the table level.
            FSC OFFSET(0) NUMBITS(6) [],
            /// Data aborts: the access was a write.
            WNR OFFSET(6) NUMBITS(1) [],
            /// Data aborts: FAR is not valid.
            FNV OFFSET(10) NUMBITS(1) []
        ]
    ];
}
use abort_iss::ABORT_ISS;

impl Esr {
    fn syndrome(self) -> LocalRegisterCopy<u64, ESR_EL1::Register> {
        LocalRegisterCopy::new(self.0)
    }

    fn abort(self) -> LocalRegisterCopy<u64, ABORT_ISS::Register> {
        LocalRegisterCopy::new(self.0)
    }

    #[inline]
    pub fn class(self) -> ExceptionClass {
        use ESR_EL1::EC::Value as Ec;
        use ExceptionClass::*;
        match self.syndrome().read_as_enum(ESR_EL1::EC) {
            Some(Ec::Unknown) => Unknown,
            Some(Ec::TrappedWFIorWFE) => TrappedWfx,
            Some(Ec::TrappedFP) => SimdFpAccess,
            Some(Ec::IllegalExecutionState) => IllegalState,
            Some(Ec::SVC64) => Svc64,
            Some(Ec::TrappedMsrMrs) => TrappedSysReg,
            Some(Ec::InstrAbortLowerEL) => InstructionAbortLower,
            Some(Ec::InstrAbortCurrentEL) => InstructionAbortSame,
            Some(Ec::PCAlignmentFault) => PcAlignment,
            Some(Ec::DataAbortLowerEL) => DataAbortLower,
            Some(Ec::DataAbortCurrentEL) => DataAbortSame,
            Some(Ec::SPAlignmentFault) => SpAlignment,
            Some(Ec::TrappedFP64) => FpException,
            Some(Ec::SError) => SError,
            Some(Ec::BreakpointLowerEL | Ec::BreakpointCurrentEL) => Breakpoint,
            Some(Ec::SoftwareStepLowerEL | Ec::SoftwareStepCurrentEL) => SoftwareStep,
            Some(Ec::WatchpointLowerEL | Ec::WatchpointCurrentEL) => Watchpoint,
            Some(Ec::Brk64) => Brk,
            _ => Other(self.ec()),
        }
    }

    pub fn ec(self) -> u8 {
        self.syndrome().read(ESR_EL1::EC) as u8
    }

    pub fn iss(self) -> u32 {
        self.syndrome().read(ESR_EL1::ISS) as u32
    }

    /// The immediate of an SVC or BRK.
    pub fn imm16(self) -> u16 {
        self.iss() as u16
    }

    pub fn is_abort(self) -> bool {
        matches!(
            self.class(),
            ExceptionClass::DataAbortLower
                | ExceptionClass::DataAbortSame
                | ExceptionClass::InstructionAbortLower
                | ExceptionClass::InstructionAbortSame
        )
    }

    /// For aborts: the fault status code.
    #[inline]
    pub fn fault_status(self) -> FaultStatus {
        let code = self.abort().read(ABORT_ISS::FSC) as u8;
        let level = code & 0b11;
        match code {
            0b00_0000..=0b00_0011 => FaultStatus::AddressSize { level },
            0b00_0100..=0b00_0111 => FaultStatus::Translation { level },
            0b00_1001..=0b00_1011 => FaultStatus::AccessFlag { level },
            0b00_1101..=0b00_1111 => FaultStatus::Permission { level },
            0b01_0000 => FaultStatus::SyncExternal,
            0b10_0001 => FaultStatus::Alignment,
            0b11_0000 => FaultStatus::TlbConflict,
            _ => FaultStatus::Other(code),
        }
    }

    /// Data aborts: the access was a write (WnR).
    pub fn is_write(self) -> bool {
        self.abort().is_set(ABORT_ISS::WNR)
    }

    /// Data aborts: FAR is not valid (FnV).
    pub fn far_not_valid(self) -> bool {
        self.abort().is_set(ABORT_ISS::FNV)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_a_translation_fault_on_a_load() {
        // EC 0x25, IL, DFSC translation fault level 1, read (captured from QEMU).
        let esr = Esr(0x9600_0005);
        assert_eq!(esr.class(), ExceptionClass::DataAbortSame);
        assert_eq!(esr.fault_status(), FaultStatus::Translation { level: 1 });
        assert!(!esr.is_write());
        assert!(esr.is_abort());
    }

    #[test]
    fn decodes_a_write_permission_fault() {
        let esr = Esr(0x9600_004f);
        assert_eq!(esr.fault_status(), FaultStatus::Permission { level: 3 });
        assert!(esr.is_write());
        assert_eq!(format!("{}", esr.fault_status()), "permission fault, level 3");
    }

    #[test]
    fn decodes_undefined_svc_and_brk() {
        assert_eq!(Esr(0x0200_0000).class(), ExceptionClass::Unknown);
        let svc = Esr(0x5600_002a);
        assert_eq!(svc.class(), ExceptionClass::Svc64);
        assert_eq!(svc.imm16(), 42);
        assert_eq!(Esr(0xf200_0001).class(), ExceptionClass::Brk);
        assert_eq!(Esr(0xfc00_0000).class(), ExceptionClass::Other(0x3f));
    }

    #[test]
    fn every_class_has_its_architectural_code() {
        use ExceptionClass::*;
        let table = [
            (0x00, Unknown),
            (0x01, TrappedWfx),
            (0x07, SimdFpAccess),
            (0x0e, IllegalState),
            (0x15, Svc64),
            (0x18, TrappedSysReg),
            (0x20, InstructionAbortLower),
            (0x21, InstructionAbortSame),
            (0x22, PcAlignment),
            (0x24, DataAbortLower),
            (0x25, DataAbortSame),
            (0x26, SpAlignment),
            (0x2c, FpException),
            (0x2f, SError),
            (0x30, Breakpoint),
            (0x31, Breakpoint),
            (0x32, SoftwareStep),
            (0x33, SoftwareStep),
            (0x34, Watchpoint),
            (0x35, Watchpoint),
            (0x3c, Brk),
            (0x16, Other(0x16)),
        ];
        for (ec, class) in table {
            let esr = Esr(ec << 26 | 1 << 25);
            assert_eq!(esr.class(), class, "EC {ec:#x}");
            assert_eq!(esr.ec(), ec as u8);
        }
        let abort = Esr(0x9200_0445);
        assert!(abort.far_not_valid() && abort.is_write());
        assert_eq!(abort.iss(), 0x445);
    }
}
