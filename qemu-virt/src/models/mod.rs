//! Device models of the PL blocks. Each keeps the exact register semantics of its `hal`
//! register block (offsets and fields come from those definitions), because every guest access
//! reaches it through MMIO forwarding.

pub mod sysblock;
pub mod window;

use hal::forward::Status;

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
