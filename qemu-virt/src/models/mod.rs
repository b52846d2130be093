//! Device models of the PL blocks. Each keeps the exact register semantics of its `hal`
//! register block (offsets and fields come from those definitions), because every guest access
//! reaches it through MMIO forwarding.

pub mod devices;
pub mod iommu;
pub mod ipi;
pub mod packetizer;
pub mod pldma;
pub mod smmu;
pub mod sysblock;
pub mod vmbox;
pub mod window;

use proto::forward::Status;

/// A register block the platform forwards accesses to. `offset` is relative to the block's
/// base; `size` is 1, 2, 4, 8 or 16 bytes.
pub trait MmioDevice: Send {
    fn name(&self) -> &'static str;
    fn read(&mut self, offset: u64, size: u32) -> Result<u128, Status>;
    fn write(&mut self, offset: u64, size: u32, value: u128) -> Result<(), Status>;
    /// The PL interrupt lines this device drives high, as a bit mask.
    fn irq_lines(&self) -> u16 {
        0
    }
}

/// Offset of a `register_structs!` field, for matching accesses against the hal layout.
#[macro_export]
macro_rules! reg_offset {
    ($block:ty, $field:ident) => {
        core::mem::offset_of!($block, $field) as u64
    };
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelError {
    /// No register at this offset.
    Unmapped {
        offset: u64,
    },
    /// The register exists but does not take this access size.
    AccessSize {
        offset: u64,
        size: usize,
    },
    /// Write to a read-only register.
    ReadOnly {
        offset: u64,
    },
    /// Read of a write-only register (its value is unknown on the silicon).
    WriteOnly {
        offset: u64,
    },
    /// A value the model does not implement (it would behave differently from the hardware).
    Unsupported {
        offset: u64,
    },
    /// `complete` for a packet that is not outstanding (already completed or aborted by CLR_REQ).
    NoPendingPacket {
        pif: u8,
        seq: u64,
    },
    InvalidConfig,
}

/// How a model's refusal reaches the guest through the forwarding slot.
impl From<ModelError> for Status {
    fn from(error: ModelError) -> Self {
        match error {
            ModelError::Unmapped { .. } => Status::Unmapped,
            ModelError::AccessSize { .. } => Status::Rejected,
            // Choice (the docs only say "R"): a store to a read-only register is a driver bug, so
            // it is refused like a wrong size: the register does not change (as on the board),
            // and the guest takes a data abort that names the address instead of carrying on.
            ModelError::ReadOnly { .. } => Status::Rejected,
            ModelError::WriteOnly { .. } | ModelError::Unsupported { .. } => Status::Rejected,
            // Not answers to an access; listed so that a new variant has to be placed here.
            ModelError::NoPendingPacket { .. } | ModelError::InvalidConfig => Status::DeviceError,
        }
    }
}

pub use crate::transport::Delivery;

/// What a PL block that works on a thread of its own (the PLDMA engine) asks of its own node's
/// platform, off the forwarded-access path. The platform is built after its blocks and owns
/// them, so a block holds it weakly, in a [`NodeHooksSlot`] the platform fills once it exists.
pub trait NodeHooks: Send + Sync {
    /// Samples the node's PL lines (a block's line may have changed) and sends a byte for each
    /// that rose.
    fn update_irqs(&self);
    /// The node's R5 has news: it wakes if it sleeps (`docs/hw/ipi.md`).
    fn wake_r5(&self, cause: crate::r5_wake::Cause);
}

/// Where a block finds its node's [`NodeHooks`] once the platform exists.
pub type NodeHooksSlot = std::sync::Arc<std::sync::OnceLock<std::sync::Weak<dyn NodeHooks>>>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Completion {
    Ack,
    Nack,
}

pub(crate) fn check_size(offset: u64, size: usize, allowed: &[usize]) -> Result<(), ModelError> {
    if allowed.contains(&size) { Ok(()) } else { Err(ModelError::AccessSize { offset, size }) }
}

/// `value` cut to `size` bytes.
pub(crate) fn truncate(value: u128, size: usize) -> u128 {
    if size >= 16 { value } else { value & ((1u128 << (size * 8)) - 1) }
}
