//! Where the Unimem blocks sit in the programmable logic, the same on both boards
//! (`docs/hw/global-address.md`). On the QFDB they are real; on QEMU they are `qemu-virt`'s
//! device models, reached through MMIO trap and forward.
//!
//! ```text
//! 0x00_8000_0000  system block        4 KiB     (M_AXI_HPM0_LPD: A53 and R5)
//! 0x00_8010_0000  packetizer          0x41000   (64 interface pages + trusted page)
//! 0x00_8020_0000  virtualized mailbox 0x41000   (64 interface pages + control page)
//! 0x00_8030_0000  PLDMA engine        128 KiB   (control, fault FIFO, 16 PD pages)
//! 0x10_0000_0000  global address window, 224 GiB (M_AXI_HPM0_FPD high):
//!                 node n's DDR at 0x10_0000_0000 + n * 2 GiB
//! ```

pub const SYSBLOCK_BASE: u64 = 0x8000_0000;
pub const SYSBLOCK_SIZE: u64 = 0x1000;
pub const PACKETIZER_BASE: u64 = 0x8010_0000;
/// 64 PIF pages and the TIF page (`hal::packetizer::regs::PacketizerRegisters`).
pub const PACKETIZER_SIZE: u64 = 0x4_1000;
pub const VMBOX_BASE: u64 = 0x8020_0000;
/// 64 MIF pages and the control page at 0x40000 (`hal::vmbox::regs::VmboxRegisters`).
pub const VMBOX_SIZE: u64 = 0x4_1000;
pub const PLDMA_BASE: u64 = 0x8030_0000;
/// The control page, the fault page and one page per PD (`hal::pldma::regs::PldmaRegisters`).
pub const PLDMA_SIZE: u64 = 0x2_0000;

// The blocks follow each other without overlapping (each ends before the next begins).
const _: () = assert!(SYSBLOCK_BASE + SYSBLOCK_SIZE <= PACKETIZER_BASE);
const _: () = assert!(PACKETIZER_BASE + PACKETIZER_SIZE <= VMBOX_BASE);
const _: () = assert!(VMBOX_BASE + VMBOX_SIZE <= PLDMA_BASE);

/// The global address window: uncached loads and stores here reach another node's DDR.
pub const GLOBAL_WINDOW_BASE: u64 = 0x10_0000_0000;
pub const GLOBAL_WINDOW_SIZE: u64 = 224 << 30;
/// Each node's slice of the window: its whole DDR.
pub const NODE_SLICE: u64 = 2 << 30;
/// Nodes the window can address.
pub const MAX_NODES: u64 = GLOBAL_WINDOW_SIZE / NODE_SLICE;

/// The window address of byte `offset` of node `node`'s DDR.
pub const fn window_address(node: u16, offset: u64) -> Option<u64> {
    if (node as u64) < MAX_NODES && offset < NODE_SLICE {
        Some(GLOBAL_WINDOW_BASE + node as u64 * NODE_SLICE + offset)
    } else {
        None
    }
}

/// The (node, offset) a window address names.
pub const fn window_target(pa: u64) -> Option<(u16, u64)> {
    if pa >= GLOBAL_WINDOW_BASE && pa < GLOBAL_WINDOW_BASE + GLOBAL_WINDOW_SIZE {
        let rel = pa - GLOBAL_WINDOW_BASE;
        Some(((rel / NODE_SLICE) as u16, rel % NODE_SLICE))
    } else {
        None
    }
}

/// PL-to-PS interrupt lines (pl_ps_irq0[7:0], pl_ps_irq1[7:0]) and their GIC interrupt IDs
/// (UG1085 table 13-1: SPI 89-96 and 104-111).
pub const PL_IRQ_LINES: usize = 16;
pub const fn pl_irq_intid(line: u8) -> u32 {
    if line < 8 { 121 + line as u32 } else { 136 + (line as u32 - 8) }
}

/// Which block raises which line.
pub mod irq_line {
    pub const SYSBLOCK: u8 = 0;
    pub const VMBOX: u8 = 1;
    pub const PACKETIZER: u8 = 2;
    pub const PLDMA: u8 = 3;
    pub const SMMU_CONTEXT: u8 = 4;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_addresses_round_trip() {
        assert_eq!(window_address(0, 0), Some(GLOBAL_WINDOW_BASE));
        assert_eq!(window_address(3, 0x1234), Some(0x11_8000_1234));
        assert_eq!(window_target(0x11_8000_1234), Some((3, 0x1234)));
        assert_eq!(window_address(1, NODE_SLICE), None);
        assert_eq!(window_address(MAX_NODES as u16, 0), None);
        assert_eq!(window_target(GLOBAL_WINDOW_BASE - 1), None);
        assert_eq!(MAX_NODES, 112);
    }

    #[test]
    fn pl_lines_map_to_the_documented_spis() {
        assert_eq!(pl_irq_intid(0), 32 + 89);
        assert_eq!(pl_irq_intid(7), 32 + 96);
        assert_eq!(pl_irq_intid(8), 32 + 104);
        assert_eq!(pl_irq_intid(15), 32 + 111);
    }
}
