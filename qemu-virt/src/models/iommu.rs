//! How a bus master of the PL (the PLDMA engine) sees memory: through the node's SMMU, by
//! stream ID. The SMMU model implements [`IoTranslate`]; the engine model only calls it.
//!
//! A translation covers one access inside one 4 KiB page. It either gives the physical address,
//! or the transaction is terminated (the initiator gets an error and the fault is recorded in the
//! context bank), or it is stalled: held in the SMMU until software writes the context bank's
//! RESUME register, which either retries it (the engine translates again) or terminates it.

/// Read or write, as the SMMU sees it (FSYNR0.WNR).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

/// A stalled transaction, named so that its resumption can be waited for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StallId(pub u64);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Translation {
    /// The physical address of the access.
    Ok(u64),
    /// Terminated: the access does not happen; the initiator sees a slave error.
    Fault,
    /// Held by the SMMU until software resumes it ([`IoTranslate::stall_outcome`]).
    Stalled(StallId),
}

/// What software decided for a stalled transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StallOutcome {
    /// Not resumed yet.
    Pending,
    /// RESUME with retry: translate again.
    Retry,
    /// RESUME with terminate (or the context bank was reset): the access fails.
    Terminate,
}

pub trait IoTranslate: Send + Sync {
    /// Translates `iova` for `access` by stream `stream`.
    fn translate(&self, stream: u16, iova: u64, access: Access) -> Translation;

    /// The fate of a stalled transaction. Each [`StallId`] reports `Retry` or `Terminate` once;
    /// after that it is forgotten (and reports `Terminate`).
    fn stall_outcome(&self, stall: StallId) -> StallOutcome;
}

/// No SMMU (or an SMMU in bypass): every I/O virtual address is the physical address.
#[derive(Clone, Copy, Debug, Default)]
pub struct Bypass;

impl IoTranslate for Bypass {
    fn translate(&self, _stream: u16, iova: u64, _access: Access) -> Translation {
        Translation::Ok(iova)
    }

    fn stall_outcome(&self, _stall: StallId) -> StallOutcome {
        StallOutcome::Terminate
    }
}
