//! What can go wrong when programming the SMMU.

use super::config::{ContextBank, StreamId};

/// An SMMU driver error. Bad arguments are refused before any register is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmmuError {
    /// A context bank index outside `0..CONTEXT_BANKS`.
    NoSuchBank(u8),
    /// A protection domain without a context bank (`>= PROTECTION_DOMAINS`).
    NoSuchDomain(u8),
    /// A stream ID wider than the SMMU's 15 bits.
    StreamIdTooWide(u16),
    /// The stream already reaches another bank (one SMR may match it, or the SMMU reports a
    /// stream match conflict).
    StreamInUse {
        /// The stream.
        stream: StreamId,
        /// The bank it reaches.
        bank: ContextBank,
    },
    /// The bank has no address space (never configured, or disabled): nothing to invalidate.
    BankNotConfigured(ContextBank),
    /// The process's translation regime cannot be shared with a context bank.
    Regime(RegimeError),
    /// The SMMU lacks something the driver relies on (read from IDR0-2).
    Unsupported(Missing),
    /// A TLB sync did not complete within the polls allowed (`None`: the global sync).
    SyncTimeout(Option<ContextBank>),
}

/// Why a process's stage-1 regime (TTBR0_EL1, TCR_EL1) cannot drive a context bank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegimeError {
    /// TCR_EL1.TG0 is not the 4 KiB granule (the raw TG0 value).
    Granule(u8),
    /// TCR_EL1.T0SZ outside 16..=39, the input sizes a 4 KiB walk supports.
    InputSize(u8),
    /// TCR_EL1.IPS names no physical address size an SMMUv2 has (the raw value).
    OutputSize(u8),
    /// The root table is not a whole 4 KiB frame below the output address size.
    TableAddress(u64),
}

/// A feature the driver needs that the ID registers do not report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Missing {
    /// IDR0.S1TS: stage-1 translation.
    Stage1,
    /// IDR0.SMS with at least one SMR per context bank.
    StreamMatching,
    /// IDR1: 4 KiB register pages with 16 global pages, as `regs::Smmu500Registers` lays them out.
    RegisterLayout,
    /// IDR1.NUMCB: at least `CONTEXT_BANKS` banks.
    ContextBanks,
    /// IDR2.PTFS_4K: AArch64 tables with the 4 KiB granule.
    Granule4K,
}

impl From<RegimeError> for SmmuError {
    fn from(e: RegimeError) -> Self {
        SmmuError::Regime(e)
    }
}
