//! The ZynqMP's SMMU-500 (ARM SMMUv2), owned by the A53 kernel: one context bank per protection
//! domain, walking that domain's process's own stage-1 tables, so that the PLDMA sees exactly
//! the process's virtual addresses (`docs/hw/smmu.md`; seed 002 §1.3.1.4 and §3.2.1).
//!
//! # Using the driver
//!
//! The board hands the SMMU out once; the kernel creates the driver at boot and keeps it (behind
//! its own lock) for the rest of the run:
//!
//! ```ignore
//! // SAFETY: the SMMU block, mapped once, used only through this driver.
//! let mut smmu = unsafe { Smmu500::new(smmu_va) };
//! smmu.reset()?;                                   // nothing translates, every stream faults
//!
//! // A process becomes protection domain `pd` (spawn, or a new address space on exec):
//! let bank = ContextBank::of_domain(pd)?;
//! let regime = Regime { ttbr0: space.ttbr0(), tcr: BOOT_TCR_EL1, mair: MAIR_EL1 };
//! smmu.attach(bank, StreamId::pldma(pd)?, &regime, FaultPolicy::STALL)?;
//!
//! // Every unmap, eviction or permission change of its pages (after the CPU's TLBI):
//! smmu.invalidate_pages(bank, va, pages)?;         // TLBIVA..., TLBSYNC, poll TLBSTATUS
//!
//! // The context-fault interrupt (SPI 155 on the QFDB, PL line SMMU_CONTEXT on QEMU):
//! while let Some(fault) = smmu.next_fault() {
//!     smmu.clear_fault(&fault);                    // W1C; the bank can record the next one
//!     // fault.bank -> PD, fault.address, fault.access (Read = source, Write = destination),
//!     // fault.kind, fault.multiple (MULTI: more faults were not recorded), fault.stalled
//!     ...map the pages (touch-ahead)...
//!     smmu.resume(fault.bank, Resume::Retry);      // stall mode; Resume::Terminate if invalid
//! }
//! if let Some(g) = smmu.global_fault() { smmu.clear_global_fault(&g); }
//!
//! // The process exits:
//! smmu.detach(bank)?;
//! ```
//!
//! Mapping a page that was not mapped needs no invalidation (the SMMU caches no invalid
//! descriptors); everything else that changes a descriptor does. Every invalidation waits for
//! its sync, bounded by [`SYNC_POLLS`], and fails with [`SmmuError::SyncTimeout`].
//!
//! # Layers
//!
//! - [`regs`]: the register blocks (`register_structs!`, checked against `docs/hw/smmu.md`).
//! - [`config`]: the register values of a configured SMMU, pure logic.
//! - [`fault`]: context and global faults decoded from the raw registers.
//! - [`port`]: how the driver reaches the registers; [`MmioPort`] on the target.
//! - [`driver`]: [`Smmu500`], the sequences.

pub mod config;
pub mod driver;
pub mod error;
pub mod fault;
pub mod port;
pub mod regs;

pub use config::{BankRegisters, ContextBank, FaultMode, FaultPolicy, PROTECTION_DOMAINS, Regime, Resume, StreamId};
pub use driver::{Geometry, SYNC_POLLS, Scan, Smmu500};
pub use error::{Missing, RegimeError, SmmuError};
pub use fault::{Access, ContextFault, FaultKind, GlobalFault, GlobalFaultKind};
pub use port::{MmioPort, Reg, RegisterPort};
