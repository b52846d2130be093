//! The carve-up of low DDR that both boards share (the A53 physical view):
//!
//! ```text
//! 0x0000_0000 +-----------------------------+
//!             | R5 image (QEMU has no TCM:  |  ATCM 0x0_0000 64 KiB, BTCM 0x2_0000 64 KiB,
//!             | the R5 runs from DDR here)  |  exactly as the TCMs appear to the R5
//! 0x0010_0000 +-----------------------------+
//!             | IPC area | R5 trace ring    |  shared, uncached on both sides
//! 0x0020_0000 +-----------------------------+
//!             | platform area:              |  boot args, forwarded-MMIO slots (QEMU), test
//!             |                             |  rendezvous and buffer, R5 event word (QEMU)
//! 0x0040_0000 +-----------------------------+
//!             | A53 kernel image, stacks    |  linked at KERNEL_VA_OFFSET + this address
//! 0x0100_0000 +-----------------------------+
//!             | kernel heap                 |
//! 0x0500_0000 +-----------------------------+
//!             | PLDMA area: engine rings,   |  shared with the R5 and the PLDMA engine,
//!             | per-PD RDMA queue sets      |  uncached on both sides (docs/hw/pldma.md)
//! 0x0520_0000 +-----------------------------+
//!             | program store               |  the user programs, placed by the loader
//!             |                             |  (docs/hw/program-store.md)
//! 0x0720_0000 +-----------------------------+
//!             | page frames                 |  processes, page tables, shared pages
//!    DDR end  +-----------------------------+
//! ```

/// The kernel runs in the upper half (TTBR1_EL1, 39-bit VA); TTBR0_EL1 belongs to the running
/// process. Two views of physical memory live there:
///
/// - the linear map: VA = `KERNEL_VA_OFFSET + PA` for all of physical memory (512 GiB);
/// - the kernel image: linked and mapped at VA = `KERNEL_IMAGE_VA_OFFSET + PA`, in the top
///   2 GiB, so that PC-relative addressing (ADRP, +-4 GiB) reaches both the image and the small
///   absolute addresses defmt uses for its interned strings.
pub const KERNEL_VA_OFFSET: u64 = 0xffff_ff80_0000_0000;
pub const KERNEL_IMAGE_VA_OFFSET: u64 = 0xffff_ffff_8000_0000;

/// Kernel stack per A53 core, and the unmapped guard page below each.
pub const KERNEL_STACK_SIZE: u64 = 64 * 1024;
pub const KERNEL_STACK_GUARD: u64 = 4096;

/// RPU cores in a node.
pub const R5_CORES: u32 = 2;

/// The R5's tightly-coupled memories in its own view (split mode, R5-0), and the stand-in
/// region in DDR used on QEMU.
pub const R5_ATCM: (u64, u64) = (0x0000_0000, 64 * 1024);
pub const R5_BTCM: (u64, u64) = (0x0002_0000, 64 * 1024);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DdrLayout {
    pub kernel_image: u64,
    pub kernel_image_max: u64,
    pub heap: u64,
    pub heap_size: u64,
    /// The program store's region (`proto::store`): the loader places the store at its start.
    pub program_store: u64,
    pub program_store_size: u64,
    pub frames: u64,
    pub frames_end: u64,
}

pub const SHARED_BASE: u64 = 0x0010_0000;
pub const SHARED_SIZE: u64 = 0x0010_0000;
pub const IPC_BASE: u64 = SHARED_BASE;
/// The IPC rings take 9 KiB; the trace ring starts at the next 64 KiB.
pub const TRACE_RING_BASE: u64 = SHARED_BASE + 0x1_0000;

pub const PLATFORM_BASE: u64 = 0x0020_0000;
pub const PLATFORM_SIZE: u64 = 0x0020_0000;
pub const BOOT_ARGS_BASE: u64 = PLATFORM_BASE;
/// The second page holds the forwarded-access slots (QEMU board).
pub const FORWARD_SLOTS_BASE: u64 = PLATFORM_BASE + 0x1000;
/// Rendezvous words of the multi-node tests (barriers, roll call), 64 KiB.
pub const TEST_RENDEZVOUS: u64 = PLATFORM_BASE + 0x1_0000;
/// A buffer the multi-node tests write into through the global window, 256 KiB.
pub const TEST_BUFFER: u64 = PLATFORM_BASE + 0x2_0000;
pub const TEST_BUFFER_SIZE: u64 = 0x4_0000;

/// The PLDMA area (`docs/hw/pldma.md`, "Where the rings and queues live"): the engine's
/// descriptor and event rings (`proto::rdma::rings::EngineRings`) at its start, the per-PD RDMA
/// queue sets (`proto::rdma::queue::QueueSet`, 8 KiB each) in its second half. The kernel takes
/// queue sets from this area only (never from the frame pool), maps them into processes
/// non-cacheable, and the R5's MPU covers exactly this area besides its own memory.
pub const PLDMA_AREA_BASE: u64 = 0x0500_0000;
pub const PLDMA_AREA_SIZE: u64 = 0x0020_0000;
/// Where the R5 places the engine's rings.
pub const PLDMA_RINGS: u64 = PLDMA_AREA_BASE;
/// Active Access's logs (`docs/hw/active-access.md`, "Who owns what"): 17 slots of 20 KiB, one
/// per IUID and the kernel fault log last; a slot is a 16 KiB ring, then its 4 KiB header page.
/// In the rings' MiB, after the engine rings (which take 33 KiB).
pub const ACTIVE_LOGS: u64 = PLDMA_AREA_BASE + 0x8_0000;
/// The stride of `ACTIVE_LOGS`' slots.
pub const ACTIVE_LOG_SLOT: u64 = 0x5000;
/// A slot's ring: its first 16 KiB.
pub const ACTIVE_LOG_RING: u64 = 0x4000;
/// Slots in `ACTIVE_LOGS`.
pub const ACTIVE_LOG_SLOTS: u64 = 17;
const _: () = assert!(ACTIVE_LOGS + ACTIVE_LOG_SLOTS * ACTIVE_LOG_SLOT <= PLDMA_AREA_BASE + 0x10_0000);
/// Queue sets live in `[PLDMA_QUEUES, PLDMA_QUEUES + PLDMA_QUEUES_SIZE)`: 128 of 8 KiB.
pub const PLDMA_QUEUES: u64 = PLDMA_AREA_BASE + 0x0010_0000;
pub const PLDMA_QUEUES_SIZE: u64 = 0x0010_0000;

/// The program store (`docs/hw/program-store.md`): the user programs, outside the kernel image,
/// in one block that QEMU's loader or a BOOT.bin data partition places here and the kernel reads
/// through its linear map. 32 MiB is some 30 times what the Rust programs take today, with room
/// for C programs and test suites.
pub const PROGRAM_STORE_BASE: u64 = PLDMA_AREA_BASE + PLDMA_AREA_SIZE;
pub const PROGRAM_STORE_SIZE: u64 = 32 << 20;

/// Low DDR of a 2 GiB node (`-m 2G` in QEMU; the QFDB has 4 GiB per MPSoC, of which the low
/// 2 GiB sit here and the rest above 0x8_0000_0000).
pub const DDR_LOW_END: u64 = 0x8000_0000;

pub const DDR_LAYOUT: DdrLayout = DdrLayout {
    kernel_image: 0x0040_0000,
    kernel_image_max: 0x00c0_0000,
    heap: 0x0100_0000,
    heap_size: 0x0400_0000,
    program_store: PROGRAM_STORE_BASE,
    program_store_size: PROGRAM_STORE_SIZE,
    frames: PROGRAM_STORE_BASE + PROGRAM_STORE_SIZE,
    frames_end: DDR_LOW_END,
};

// The linear map is the whole 39-bit upper range (512 GiB of physical addresses); the image
// view is its top 2 GiB, so the kernel image must sit below 2 GiB physical; the R5's TCM
// stand-ins must end before the shared area.
const _: () = assert!(KERNEL_VA_OFFSET.wrapping_neg() == 1 << 39);
const _: () = assert!(KERNEL_IMAGE_VA_OFFSET.wrapping_neg() == 2 << 30);
const _: () = assert!(DDR_LAYOUT.kernel_image + DDR_LAYOUT.kernel_image_max <= 2 << 30);
const _: () = assert!(R5_BTCM.0 + R5_BTCM.1 <= SHARED_BASE);
const _: () = assert!(TEST_BUFFER + TEST_BUFFER_SIZE <= PLATFORM_BASE + PLATFORM_SIZE - 4096);
// The PLDMA area sits between the heap and the frames, as one R5 MPU region (power-of-two
// size, aligned to it) that an A53 2 MiB block can map.
const _: () = assert!(DDR_LAYOUT.heap + DDR_LAYOUT.heap_size <= PLDMA_AREA_BASE);
const _: () = assert!(PLDMA_AREA_SIZE.is_power_of_two() && PLDMA_AREA_BASE.is_multiple_of(PLDMA_AREA_SIZE));
const _: () = assert!(PLDMA_QUEUES + PLDMA_QUEUES_SIZE == PLDMA_AREA_BASE + PLDMA_AREA_SIZE);
// The program store has its region to itself, between the PLDMA area and the frames, in whole
// 2 MiB blocks of the kernel's linear map; its size fits the store's 32-bit lengths.
const _: () = assert!(PLDMA_AREA_BASE + PLDMA_AREA_SIZE <= DDR_LAYOUT.program_store);
const _: () = assert!(DDR_LAYOUT.program_store + DDR_LAYOUT.program_store_size <= DDR_LAYOUT.frames);
const _: () = assert!(DDR_LAYOUT.program_store.is_multiple_of(2 << 20) && PROGRAM_STORE_SIZE.is_multiple_of(2 << 20));
const _: () = assert!(PROGRAM_STORE_SIZE <= u32::MAX as u64);
