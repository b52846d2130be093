//! Virtualized mailbox (seed §5.1, `docs/hw/vmbox.md`): 64 hardware FIFOs of 128-bit words.

pub mod driver;
pub mod regs;

/// What a read of DATA returns when the FIFO is empty (seed §5.1.1, spelled ...BEAF there; the
/// API's `_EMPTY_THREAD_ARGUMENT_` ...BEEF is a different value).
pub const EMPTY_SENTINEL: u128 = 0xCAFE_BEBE_DEAD_BEAF_CAFE_BEBE_DEAD_BEAF;
/// FIFO word: 128 bits.
pub const WORD_BYTES: usize = 16;
/// Depth of the reference configuration in words; software reads DEPTH instead of assuming it.
pub const REFERENCE_DEPTH: u16 = 512;
/// Bytes per MIF page.
pub const PAGE_BYTES: u64 = 0x1000;
/// Offset of the control page from the block's base.
pub const CONTROL_OFFSET: u64 = 0x40000;
/// ID register: "VB" and version 1.
pub const ID_MAGIC: u16 = 0x5642;
/// Version in the ID register.
pub const ID_VERSION: u16 = 1;
