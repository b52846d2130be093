use crate::{Board, RegionKind, qfdb::Qfdb, zcu102_qemu::Zcu102Qemu};

const PAGE: u64 = 4096;

fn check_board<B: Board>() {
    for pair in B::A53_MEMORY.windows(2) {
        assert!(pair[0].end() <= pair[1].base, "{}: {} overlaps {}", B::NAME, pair[0].name, pair[1].name);
    }
    for r in B::A53_MEMORY {
        assert_eq!(r.base % PAGE, 0, "{}: {} not page aligned", B::NAME, r.name);
        assert_eq!(r.size % PAGE, 0, "{}: {} size not whole pages", B::NAME, r.name);
    }
    // Cortex-R5 MPU regions: power-of-two size >= 32 bytes, base aligned to the size.
    for r in B::R5_MEMORY {
        assert!(r.size.is_power_of_two() && r.size >= 32, "{}: R5 {} size", B::NAME, r.name);
        assert_eq!(r.base % r.size, 0, "{}: R5 {} alignment", B::NAME, r.name);
    }
    let a53_region = |addr: u64| B::A53_MEMORY.iter().find(|r| r.contains(addr)).unwrap();
    let r5_region = |addr: u64| B::R5_MEMORY.iter().find(|r| r.contains(addr)).unwrap();
    // The PLDMA area: the engine's rings and the queue sets the R5 polls.
    let pldma_end = crate::layout::PLDMA_AREA_BASE + crate::layout::PLDMA_AREA_SIZE - 1;
    for shared in [B::IPC_BASE, B::TRACE_RING_BASE, crate::layout::PLDMA_RINGS, crate::layout::PLDMA_QUEUES, pldma_end]
    {
        assert_eq!(a53_region(shared).kind, RegionKind::SharedUncached);
        assert_eq!(r5_region(shared).kind, RegionKind::SharedUncached);
    }
    let d = B::DDR_LAYOUT;
    assert!(d.kernel_image + d.kernel_image_max <= d.heap);
    assert!(d.heap + d.heap_size <= d.frames);
    // The program store is a region of its own: the kernel maps it, nothing allocates from it.
    let store = a53_region(d.program_store);
    assert_eq!((store.name, store.base, store.size), ("program-store", d.program_store, d.program_store_size));
    assert_eq!(store.kind, RegionKind::Ram, "{}: the kernel reads the store cached", B::NAME);
    assert!(d.heap + d.heap_size <= d.program_store && d.program_store + d.program_store_size <= d.frames);
    assert!(d.frames < d.frames_end);
    for addr in [d.kernel_image, d.heap, d.frames, d.frames_end - 1] {
        assert_eq!(a53_region(addr).kind, RegionKind::Ram, "{}: {addr:#x}", B::NAME);
    }
    assert_eq!(a53_region(B::CONSOLE_UART.base).kind, RegionKind::Device);
    assert_eq!(a53_region(B::GIC_DISTRIBUTOR).kind, RegionKind::Device);
    let smmu = a53_region(B::SMMU.base);
    assert_eq!((smmu.name, smmu.base, smmu.size), ("smmu", crate::SMMU_BASE, crate::SMMU_SIZE), "{}", B::NAME);
    assert_ne!(smmu.kind, RegionKind::Ram, "{}: the SMMU is registers", B::NAME);
}

#[test]
fn zcu102_qemu_map_is_consistent() {
    check_board::<Zcu102Qemu>();
}

#[test]
fn qfdb_map_is_consistent() {
    check_board::<Qfdb>();
}

#[test]
fn boards_differ_only_where_qemu_forwards() {
    for (q, h) in Zcu102Qemu::A53_MEMORY.iter().zip(Qfdb::A53_MEMORY) {
        assert_eq!((q.name, q.base, q.size), (h.name, h.base, h.size));
        if q.kind == RegionKind::Forwarded {
            assert_eq!(h.kind, RegionKind::Device, "{} must be real device memory on the QFDB", q.name);
        } else {
            assert_eq!(q.kind, h.kind, "{}", q.name);
        }
    }
}

#[test]
fn ranges_of_merges_touching_regions_and_agrees_with_the_table() {
    const FORWARDED: [(u64, u64); 5] = crate::ranges_of(Zcu102Qemu::A53_MEMORY, RegionKind::Forwarded);
    // The PL windows HPM0-LPD, HPM0-FPD and HPM1-FPD touch: one range; then the SMMU, the APU's
    // IPI channel and the global window.
    assert_eq!(FORWARDED[0], (0x8000_0000, 0xc000_0000));
    assert_eq!(FORWARDED[1], (crate::SMMU_BASE, crate::SMMU_BASE + crate::SMMU_SIZE));
    assert_eq!(FORWARDED[2], (crate::zynqmp::IPI_APU, crate::zynqmp::IPI_APU + crate::zynqmp::IPI_CHANNEL_SIZE));
    assert_eq!(FORWARDED[4], (0, 0), "unused");
    let ipi_rpu0 = crate::zynqmp::IPI_RPU0;
    for addr in [
        0,
        0x7fff_ffff,
        0x8000_0000,
        0xbfff_ffff,
        0xc000_0000,
        crate::SMMU_BASE,
        ipi_rpu0,
        crate::pl::GLOBAL_WINDOW_BASE,
    ] {
        let in_table = Zcu102Qemu::A53_MEMORY.iter().any(|r| r.kind == RegionKind::Forwarded && r.contains(addr));
        assert_eq!(crate::in_ranges(&FORWARDED, addr), in_table, "{addr:#x}");
    }
    let none: [(u64, u64); 2] = crate::ranges_of(Qfdb::A53_MEMORY, RegionKind::Forwarded);
    assert_eq!(none, [(0, 0); 2], "the QFDB forwards nothing");
    assert!(!crate::in_ranges(&none, 0), "an unused entry holds no address");
}

/// `docs/hw/program-store.md` and `docs/hw/memory-map.md` give the store's region as the layout
/// has it.
#[test]
fn the_docs_place_the_program_store_where_the_layout_does() {
    use crate::layout::{PROGRAM_STORE_BASE, PROGRAM_STORE_SIZE};
    let grouped = |v: u64| format!("0x{:04x}_{:04x}", v >> 16, v & 0xffff);
    let range = format!("`{} - {}`", grouped(PROGRAM_STORE_BASE), grouped(PROGRAM_STORE_BASE + PROGRAM_STORE_SIZE - 1));
    let size = format!("({} MiB", PROGRAM_STORE_SIZE >> 20);
    let store = include_str!("../../docs/hw/program-store.md");
    assert!(store.contains(&range) && store.contains(&size), "program-store.md: {range} {size}");
    assert!(store.contains(&format!("addr={PROGRAM_STORE_BASE:#x},")), "program-store.md: the loader's address");
    let map = include_str!("../../docs/hw/memory-map.md");
    assert!(map.contains(&format!("| {range} | program store")), "memory-map.md: {range}");
}
