//! Error types.

use core::fmt;

use crate::types::{Kind, Size};

/// Instruction set of a decoded word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Isa {
    /// AArch64 A64.
    A64,
    /// AArch32 A32 (ARM state).
    A32,
}

/// Why an instruction word was not accepted by a decoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Reason {
    /// Not in the load/store encoding space at all.
    NotLoadStore,
    /// Unallocated, reserved, or an extension this library does not know.
    Unallocated,
    /// LDXR/LDAXR/LDXP (A64) or LDREX family (A32).
    LoadExclusive,
    /// STXR/STLXR/STXP (A64) or STREX family (A32).
    StoreExclusive,
    /// CAS/CASP family (FEAT_LSE).
    CompareAndSwap,
    /// LDADD/SWP/... atomic memory operations (FEAT_LSE).
    AtomicMemoryOp,
    /// LDLAR/STLLR (FEAT_LOR).
    LoRegion,
    /// LDAPUR/STLUR family (FEAT_LRCPC2).
    RcpcUnscaled,
    /// LDR (literal) and other PC-relative addressing.
    PcRelative,
    /// PRFM/PRFUM (A64), PLD/PLI (A32).
    Prefetch,
    /// LD1..LD4 / ST1..ST4 structure loads/stores.
    SimdStructure,
    /// Memory Tagging Extension instructions (LDG, STG, STGP, ...).
    MemoryTag,
    /// LDRAA/LDRAB.
    PointerAuth,
    /// CPY*/SET* (FEAT_MOPS).
    MemoryCopySet,
    /// LDTR/STTR (A64), LDRT/STRT/LDRHT/... (A32), or the A32 P=0,W=1 form.
    Unprivileged,
    /// A load pair whose two destinations are the same register.
    PairSameRegister,
    /// Write-back to a base register that is also a transfer register.
    WritebackOverlap,
    /// A should-be-one / should-be-zero field has the wrong value.
    ReservedFieldValue,
    /// A32 LDRD/STRD with an odd Rt.
    PairOddRegister,
    /// A32 LDRD/STRD with Rt = r14 (Rt2 would be the PC).
    PairIntoPc,
    /// A32 LDRD (register) with Rm equal to Rt or Rt2.
    OffsetOverlap,
    /// A32 load with the PC as destination.
    LoadIntoPc,
    /// A32 store of the PC.
    StoreOfPc,
    /// A32 register offset with Rm = PC.
    PcOffsetRegister,
    /// A32 LDM/STM/PUSH/POP.
    LoadStoreMultiple,
    /// A32 SWP/SWPB.
    Swap,
    /// A32 coprocessor instructions (LDC/STC/MCR/MRC/...).
    Coprocessor,
    /// A32 unconditional space (cond = 0b1111): PLD, RFE, SRS, BLX, ...
    Unconditional,
    /// A32 media/multiply instructions sharing an encoding region with loads.
    MediaOrMultiply,
}

impl Reason {
    /// Human-readable description.
    pub const fn as_str(self) -> &'static str {
        match self {
            Reason::NotLoadStore => "not a load/store instruction",
            Reason::Unallocated => "unallocated or unsupported load/store encoding",
            Reason::LoadExclusive => "load-exclusive",
            Reason::StoreExclusive => "store-exclusive",
            Reason::CompareAndSwap => "compare-and-swap",
            Reason::AtomicMemoryOp => "atomic memory operation",
            Reason::LoRegion => "LORegion load-acquire/store-release (LDLAR/STLLR)",
            Reason::RcpcUnscaled => "RCpc immediate-offset acquire/release (LDAPUR/STLUR)",
            Reason::PcRelative => "PC-relative (literal) addressing",
            Reason::Prefetch => "prefetch hint",
            Reason::SimdStructure => "SIMD structure load/store (LD1-LD4/ST1-ST4)",
            Reason::MemoryTag => "memory tagging instruction",
            Reason::PointerAuth => "pointer-authenticated load (LDRAA/LDRAB)",
            Reason::MemoryCopySet => "memory copy/set (CPY*/SET*)",
            Reason::Unprivileged => "unprivileged load/store (LDTR/STTR/LDRT/STRT family)",
            Reason::PairSameRegister => "CONSTRAINED UNPREDICTABLE: load pair with Rt == Rt2",
            Reason::WritebackOverlap => "UNPREDICTABLE: write-back with base register equal to a transfer register",
            Reason::ReservedFieldValue => "UNPREDICTABLE: should-be-one/should-be-zero field mismatch",
            Reason::PairOddRegister => "UNPREDICTABLE: LDRD/STRD with odd Rt",
            Reason::PairIntoPc => "UNPREDICTABLE: LDRD/STRD with Rt = r14 (Rt2 = PC)",
            Reason::OffsetOverlap => "UNPREDICTABLE: LDRD offset register equal to Rt or Rt2",
            Reason::LoadIntoPc => "load into PC",
            Reason::StoreOfPc => "store of PC",
            Reason::PcOffsetRegister => "UNPREDICTABLE: PC as offset register",
            Reason::LoadStoreMultiple => "load/store multiple (LDM/STM)",
            Reason::Swap => "swap (SWP/SWPB)",
            Reason::Coprocessor => "coprocessor or supervisor-call instruction",
            Reason::Unconditional => "unconditional-space instruction (cond = 0b1111)",
            Reason::MediaOrMultiply => "media or multiply instruction",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An instruction word that the decoder does not accept.
///
/// Displays as `unsupported instruction 0xc85f7c20 at pc 0xffffff8000401234:
/// load-exclusive` (A64) or `unsupported A32 instruction 0xe1923f9f at pc
/// 0x00001000: load-exclusive` (A32).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DecodeError {
    /// Instruction set the word was decoded as.
    pub isa: Isa,
    /// Address of the instruction.
    pub pc: u64,
    /// The instruction word.
    pub word: u32,
    /// Why it was rejected.
    pub reason: Reason,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.isa {
            Isa::A64 => write!(f, "unsupported instruction {:#010x} at pc {:#x}: {}", self.word, self.pc, self.reason),
            Isa::A32 => {
                write!(f, "unsupported A32 instruction {:#010x} at pc {:#010x}: {}", self.word, self.pc, self.reason)
            }
        }
    }
}

impl core::error::Error for DecodeError {}

/// Failure reported by a [`Bus`](crate::Bus) implementation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BusError {
    /// No device model claims the address.
    Unmapped,
    /// The device model rejected the access (e.g. unsupported size or
    /// alignment).
    Rejected,
    /// The host did not answer.
    Timeout,
    /// Implementation-defined error code.
    Other(u32),
}

impl fmt::Display for BusError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BusError::Unmapped => f.write_str("no device at address"),
            BusError::Rejected => f.write_str("access rejected by device"),
            BusError::Timeout => f.write_str("bus timeout"),
            BusError::Other(code) => write!(f, "bus error {code:#x}"),
        }
    }
}

impl core::error::Error for BusError {}

/// Failure to emulate a decoded access.
///
/// On any error no register has been modified. For a store pair the first
/// write may already have reached the bus when the second one fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EmulateError {
    /// A bus access failed.
    Bus {
        /// Address of the failed access.
        addr: u64,
        /// Its size.
        size: Size,
        /// Load or store.
        kind: Kind,
        /// What the bus reported.
        error: BusError,
    },
    /// A32: CPSR.E is set (big-endian data); only little-endian is supported.
    BigEndian,
    /// A32: CPSR.T is set; the word cannot be an A32 instruction.
    ThumbState,
}

impl fmt::Display for EmulateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmulateError::Bus { addr, size, kind, error } => {
                let what = match kind {
                    Kind::Load => "read",
                    Kind::Store => "write",
                };
                write!(f, "bus {what} of {} bytes at {addr:#x} failed: {error}", size.bytes())
            }
            EmulateError::BigEndian => f.write_str("big-endian data access (CPSR.E = 1) not supported"),
            EmulateError::ThumbState => f.write_str("CPSR.T = 1: not in ARM state"),
        }
    }
}

impl core::error::Error for EmulateError {}
