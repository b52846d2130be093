//! Translation, the TLB, and terminate-mode faults: recording, W1C, MULTI, HUPCF, permissions,
//! global faults.

use super::*;
use hal::smmu500::{Access as HalAccess, FaultKind, FaultMode, GlobalFaultKind};

#[test]
fn translates_through_the_process_tables_and_caches_the_walk() {
    let node = Node::with_domain(3, FaultPolicy::TERMINATE);
    node.tables.map(0x40_0000, DATA, USER_RW);
    node.tables.map(0x40_1000, DATA + 0x5000, USER_RW);
    assert_eq!(node.read(3, 0x40_0123), Translation::Ok(DATA + 0x123));
    assert_eq!(node.write(3, 0x40_1ff8), Translation::Ok(DATA + 0x5ff8));
    assert_eq!(node.read(3, 0x40_0800), Translation::Ok(DATA + 0x800));
    assert_eq!((node.model.stats().walks, node.model.tlb_entries(3)), (2, 2));
    assert_eq!(node.read(2, 0x40_0000), Translation::Fault, "PD 2 has no bank attached");
}

#[test]
fn a_missing_tlbi_leaves_a_stale_translation() {
    let mut node = Node::with_domain(0, FaultPolicy::TERMINATE);
    node.tables.map(0x1000, DATA, USER_RW);
    assert_eq!(node.read(0, 0x1000), Translation::Ok(DATA));
    // The kernel unmaps the page and gives the frame to someone else, but forgets the SMMU.
    node.tables.unmap(0x1000);
    assert_eq!(node.read(0, 0x1000), Translation::Ok(DATA), "stale: the frame is still reachable");
    node.tables.map(0x1000, DATA + 0x1000, USER_RW);
    assert_eq!(node.read(0, 0x1000), Translation::Ok(DATA), "stale across a remap too");
    node.smmu.invalidate_page(bank(0), 0x1000).unwrap();
    assert_eq!(node.read(0, 0x1000), Translation::Ok(DATA + 0x1000));
}

#[test]
fn an_invalidation_takes_effect_only_at_its_sync() {
    let node = Node::with_domain(1, FaultPolicy::TERMINATE);
    node.tables.map(0x2000, DATA, USER_RW);
    assert_eq!(node.read(1, 0x2000), Translation::Ok(DATA));
    node.tables.unmap(0x2000);
    node.model.write(cb(1, TLBIVA), 8, (2u128) | 2 << 48).unwrap();
    assert_eq!(node.read(1, 0x2000), Translation::Ok(DATA), "TLBIVA without TLBSYNC");
    node.w32(cb(1, TLBSYNC), 0);
    assert_eq!(node.read(1, 0x2000), Translation::Fault);
    // A TLBI of another ASID, or a global TLBI completed only by a bank sync, does nothing.
    node.tables.map(0x3000, DATA, USER_RW);
    assert_eq!(node.read(1, 0x3000), Translation::Ok(DATA));
    node.tables.unmap(0x3000);
    node.model.write(cb(1, TLBIVA), 8, 3u128 | 7 << 48).unwrap();
    node.w32(0x68, 0);
    node.w32(cb(1, TLBSYNC), 0);
    assert_eq!(node.read(1, 0x3000), Translation::Ok(DATA));
    node.w32(0x70, 0);
    assert_eq!(node.model.tlb_entries(1), 0, "sTLBGSYNC completed TLBIALLNSNH");
}

/// Random maps, unmaps, remaps and permission changes, each followed by the driver's
/// invalidation: every translation the model gives always equals what the tables say now.
#[test]
fn the_driver_sequences_never_leave_a_stale_translation() {
    let mut node = Node::with_domain(5, FaultPolicy { mode: FaultMode::Terminate, hit_under_fault: true });
    let pages = 24u64;
    let mut truth: Vec<Option<(u64, bool)>> = vec![None; pages as usize];
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let va = |p: u64| 0x7f_0000_0000 + p * 0x1000;
    for step in 0..2000 {
        let p = next(pages);
        match next(6) {
            0 | 1 => {
                let (pa, writable) = (DATA + next(64) * 0x1000, next(2) == 0);
                node.tables.map(va(p), pa, if writable { USER_RW } else { USER_RO });
                if truth[p as usize].is_some() {
                    node.smmu.invalidate_page(bank(5), va(p)).unwrap();
                }
                truth[p as usize] = Some((pa, writable));
            }
            2 => {
                node.tables.unmap(va(p));
                node.smmu.invalidate_pages(bank(5), va(p), 1).unwrap();
                truth[p as usize] = None;
            }
            3 => {
                // Unmap a run of pages at once: more than 16 become one TLBIASID.
                let n = 1 + next(20);
                for q in p..(p + n).min(pages) {
                    node.tables.unmap(va(q));
                    truth[q as usize] = None;
                }
                node.smmu.invalidate_pages(bank(5), va(p), n as usize).unwrap();
            }
            // Now and then a new address space with the same ASID (the process exec'd).
            4 if next(20) == 0 => node.attach(5, FaultPolicy::TERMINATE),
            _ => {}
        }
        if node.smmu.next_fault().map(|f| node.smmu.clear_fault(&f)).is_some() {
            assert!(node.smmu.next_fault().is_none());
        }
        for q in 0..pages {
            let expected_read = truth[q as usize].map_or(Translation::Fault, |(pa, _)| Translation::Ok(pa + 8));
            let expected_write = match truth[q as usize] {
                Some((pa, true)) => Translation::Ok(pa + 8),
                _ => Translation::Fault,
            };
            assert_eq!(node.read(5, va(q) + 8), expected_read, "step {step}, page {q}");
            assert_eq!(node.write(5, va(q) + 8), expected_write, "step {step}, page {q}");
            if let Some(f) = node.smmu.next_fault() {
                node.smmu.clear_fault(&f);
            }
        }
    }
}

#[test]
fn a_fault_is_recorded_in_full_and_cleared_by_writing_one() {
    let mut node = Node::with_domain(6, FaultPolicy::TERMINATE);
    node.tables.map(0x40_0000, DATA, USER_RW);
    assert_eq!(node.write(6, 0x40_1238), Translation::Fault);
    assert!(node.model.irq());
    assert_eq!(node.r32(cb(6, FSR)), TF);
    assert_eq!(node.model.read(cb(6, FAR), 8), Ok(0x40_1238));
    assert_eq!(node.r32(cb(6, FSYNR0)), 1 << 4 | 3, "WNR, level 3");
    assert_eq!(node.r32(0x1400 + 4 * 6), u32::from(stream(6)), "CBFRSYNRA");
    node.w32(cb(6, FSR), 0);
    node.w32(cb(6, FSR), PF);
    assert_eq!(node.r32(cb(6, FSR)), TF, "only the written ones clear, only TF is set");
    let f = node.smmu.next_fault().unwrap();
    assert_eq!(
        (f.bank, f.kind, f.address, f.access, f.level),
        (bank(6), FaultKind::Translation, 0x40_1238, HalAccess::Write, 3)
    );
    assert_eq!((f.multiple, f.stalled, f.stream), (false, false, stream(6)));
    node.smmu.clear_fault(&f);
    assert_eq!((node.r32(cb(6, FSR)), node.model.irq(), node.smmu.next_fault()), (0, false, None));
    // An empty level-2 entry stops the walk at level 2; a read has WNR = 0.
    assert_eq!(node.read(6, 0x20_0000), Translation::Fault);
    let f = node.smmu.next_fault().unwrap();
    assert_eq!((f.access, f.level), (HalAccess::Read, 2));
}

#[test]
fn a_second_fault_only_sets_multi() {
    let mut node = Node::with_domain(7, FaultPolicy::TERMINATE);
    assert_eq!(node.read(7, 0x1000), Translation::Fault);
    assert_eq!(node.write(7, 0x9000), Translation::Fault);
    assert_eq!(node.r32(cb(7, FSR)), TF | MULTI);
    assert_eq!(node.model.read(cb(7, FAR), 8), Ok(0x1000), "the first fault's details stay");
    assert_eq!(node.r32(cb(7, FSYNR0)) & 1 << 4, 0);
    let f = node.smmu.next_fault().unwrap();
    assert!(f.multiple);
    node.smmu.clear_fault(&f);
    assert_eq!(node.r32(cb(7, FSR)), 0, "MULTI cleared with the record");
    assert_eq!(node.write(7, 0x9000), Translation::Fault);
    assert_eq!(node.model.read(cb(7, FAR), 8), Ok(0x9000), "recorded in full again");
    // Faults of different banks are recorded independently.
    node.attach(8, FaultPolicy::TERMINATE);
    assert_eq!(node.read(8, 0x3000), Translation::Fault);
    assert_eq!((node.r32(cb(7, FSR)), node.r32(cb(8, FSR))), (TF, TF));
}

#[test]
fn permissions_are_the_processes_el0_permissions() {
    let node = Node::with_domain(0, FaultPolicy::TERMINATE);
    let t = &node.tables;
    t.map(0x1000, DATA, USER_RO);
    t.map(0x2000, DATA + 0x1000, KERNEL_RW);
    t.map(0x4000_0000, DATA + 0x2000, USER_RW);
    assert_eq!(node.read(0, 0x1000), Translation::Ok(DATA));
    assert_eq!(node.write(0, 0x1000), Translation::Fault, "read-only page");
    assert_eq!(node.r32(cb(0, FSR)), PF);
    assert_eq!(node.r32(cb(0, FSYNR0)), 1 << 4 | 3);
    node.w32(cb(0, FSR), PF);
    assert_eq!(node.read(0, 0x2000), Translation::Fault, "the kernel's page");
    node.w32(cb(0, FSR), PF);
    assert_eq!(node.write(0, 0x4000_0000), Translation::Ok(DATA + 0x2000));
    // APTable[1] above a writable page makes it read-only (after the TLBI the kernel owes).
    t.restrict_table(0x4000_0000, APTABLE1_RO);
    node.w32(cb(0, 0x618), 0);
    node.w32(cb(0, TLBSYNC), 0);
    assert_eq!(node.write(0, 0x4000_0000), Translation::Fault);
    assert_eq!(node.read(0, 0x4000_0000), Translation::Ok(DATA + 0x2000));
    node.w32(cb(0, FSR), PF);
    // S2CR.PRIVCFG = privileged makes the kernel's page reachable: the driver never sets it.
    let s2cr = node.r32(0xc00);
    node.w32(0xc00, s2cr | 3 << 24);
    assert_eq!(node.read(0, 0x2000), Translation::Ok(DATA + 0x1000));
}

#[test]
fn access_flag_faults_with_afe() {
    let node = Node::with_domain(2, FaultPolicy::TERMINATE);
    node.tables.map(0x1000, DATA, USER_RW & !AF);
    assert_eq!(node.read(2, 0x1000), Translation::Fault);
    assert_eq!(node.r32(cb(2, FSR)), AFF);
    assert_eq!(node.model.tlb_entries(2), 0, "a faulting descriptor is not cached");
    node.w32(cb(2, FSR), AFF);
    let sctlr = node.r32(cb(2, SCTLR));
    node.w32(cb(2, SCTLR), sctlr & !(1 << 2));
    assert_eq!(node.read(2, 0x1000), Translation::Ok(DATA), "AFE = 0: AF is not checked");
}

#[test]
fn terminate_mode_with_and_without_hit_under_fault() {
    let node = Node::with_domain(9, FaultPolicy::TERMINATE);
    node.tables.map(0x1000, DATA, USER_RW);
    assert_eq!(node.read(9, 0x8000), Translation::Fault);
    assert_eq!(node.read(9, 0x1000), Translation::Ok(DATA), "HUPCF = 1: hits proceed");
    assert_eq!(node.r32(cb(9, FSR)), TF);
    assert_eq!(node.read(9, 0x9000), Translation::Fault);
    assert_eq!(node.r32(cb(9, FSR)), TF | MULTI);

    let mut node = Node::new();
    node.attach(9, FaultPolicy { mode: FaultMode::Terminate, hit_under_fault: false });
    node.tables.map(0x1000, DATA, USER_RW);
    assert_eq!(node.read(9, 0x1000), Translation::Ok(DATA));
    assert_eq!(node.read(9, 0x8000), Translation::Fault);
    assert_eq!(node.read(9, 0x1000), Translation::Fault, "HUPCF = 0: everything aborts while the fault is pending");
    assert_eq!(node.r32(cb(9, FSR)), TF, "a translation that would have succeeded is not a fault");
    assert_eq!(node.model.stats().aborted_under_fault, 1);
    assert_eq!(node.write(9, 0x9000), Translation::Fault);
    assert_eq!(node.r32(cb(9, FSR)), TF | MULTI);
    let f = node.smmu.next_fault().unwrap();
    node.smmu.clear_fault(&f);
    assert_eq!(node.read(9, 0x1000), Translation::Ok(DATA), "cleared: hits proceed again");
}

#[test]
fn a_table_outside_memory_is_an_external_fault_of_the_walk() {
    let node = Node::with_domain(1, FaultPolicy::TERMINATE);
    node.tables.mem.set(ROOT + 8, 0x7000_0000 | 0b11); // level-1 entry 1 -> beyond the 16 MiB
    assert_eq!(node.read(1, 0x4000_0000), Translation::Fault);
    assert_eq!(node.r32(cb(1, FSR)), EF);
    assert_eq!(node.r32(cb(1, FSYNR0)), 1 << 10 | 2, "PTWF, level 2");
    assert_eq!(node.smmu.next_fault().map(|f| f.kind), Some(FaultKind::External));
}

#[test]
fn streams_that_reach_no_bank_are_global_faults() {
    let mut node = Node::with_domain(0, FaultPolicy::TERMINATE);
    assert_eq!(node.model.translate(0x0123, 0x4000, Access::Write), Translation::Fault);
    assert!(node.model.irq(), "sCR0.GFIE");
    let g = node.smmu.global_fault().unwrap();
    assert_eq!(
        (g.kind, g.stream, g.address, g.access),
        (GlobalFaultKind::UnidentifiedStream, 0x0123, 0x4000, HalAccess::Write)
    );
    assert_eq!(node.model.translate(0x0124, 0x5000, Access::Read), Translation::Fault);
    assert!(node.smmu.global_fault().unwrap().multiple);
    node.smmu.clear_global_fault(&node.smmu.global_fault().unwrap());
    assert_eq!((node.smmu.global_fault(), node.model.irq()), (None, false));
    // Two groups matching one stream: a conflict. The driver refuses it; raw writes do not.
    node.w32(0x800 + 4, 1 << 31 | u32::from(stream(0)));
    node.w32(0xc00 + 4, 1);
    assert_eq!(node.read(0, 0x1000), Translation::Fault);
    assert_eq!(node.smmu.global_fault().map(|g| g.kind), Some(GlobalFaultKind::StreamMatchConflict));
    node.w32(0x48, u32::MAX);
    node.w32(0x800 + 4, 0);
    // An S2CR of type fault, or one naming no bank.
    node.w32(0xc00, 2 << 16);
    assert_eq!(node.read(0, 0x1000), Translation::Fault);
    assert_eq!(node.smmu.global_fault().map(|g| g.kind), Some(GlobalFaultKind::InvalidContext));
    assert_eq!(node.r32(0x48), 1, "ICF");
    node.w32(0x48, 1);
    node.w32(0xc00, 20);
    assert_eq!(node.read(0, 0x1000), Translation::Fault);
    assert_eq!(node.r32(0x48), 1 << 3, "UCBF");
    node.w32(0x48, 1 << 3);
    // With USFCFG = 0 an unmatched stream bypasses; after detach, PD 0's stream is unmatched.
    node.smmu.detach(bank(0)).unwrap();
    assert_eq!(node.read(0, 0x1000), Translation::Fault);
    assert_eq!(node.smmu.global_fault().map(|g| g.kind), Some(GlobalFaultKind::UnidentifiedStream));
    let scr0 = node.r32(0);
    node.w32(0, scr0 & !(1 << 10));
    assert_eq!(node.read(0, 0x1000), Translation::Ok(0x1000));
    node.attach(0, FaultPolicy::TERMINATE);
    assert_eq!(node.read(0, 0x1000), Translation::Fault, "translated again, not mapped");
}

#[test]
fn walks_read_the_nodes_ddr_file() {
    let file = tempfile::NamedTempFile::new().unwrap();
    file.as_file().set_len(1 << 20).unwrap();
    let ddr = Arc::new(crate::shm::Ddr::open(file.path()).unwrap());
    // L1[0] -> 0x2000, L2[0] -> 0x3000, L3[5] -> 0x8_0000 (user, read-write).
    ddr.write(0x1000, 8, 0x2000 | 0b11).unwrap();
    ddr.write(0x2000, 8, 0x3000 | 0b11).unwrap();
    ddr.write(0x3000 + 5 * 8, 8, u128::from(0x8_0000 | USER_RW)).unwrap();
    let model = Arc::new(Smmu500Model::new(ddr));
    let mut smmu = Smmu500::with_port(ModelPort(model.clone()));
    smmu.reset().unwrap();
    let regime = Regime { ttbr0: 0x1000 | 1 << 48, tcr: KERNEL_TCR, mair: KERNEL_MAIR };
    smmu.attach(bank(0), StreamId::pldma(0).unwrap(), &regime, FaultPolicy::TERMINATE).unwrap();
    assert_eq!(model.translate(stream(0), 0x5abc, Access::Write), Translation::Ok(0x8_0abc));
    assert_eq!(model.translate(stream(0), 0x6000, Access::Read), Translation::Fault);
}
