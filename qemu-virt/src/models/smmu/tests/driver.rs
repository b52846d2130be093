//! The hal driver against the model: every register it programs reads back as the contract
//! says, and its syncs poll until the model reports them done.

use super::*;
use hal::smmu500::{FaultMode, SmmuError};

#[test]
fn the_driver_probes_the_models_geometry() {
    let node = Node::new();
    let g = node.smmu.probe().unwrap();
    assert_eq!((g.context_banks, g.stream_match_groups, g.stream_id_bits), (16, 48, 15));
    assert_eq!((g.input_bits, g.output_bits, g.coherent_walk), (49, 48, false));
}

#[test]
fn reset_leaves_every_register_the_driver_uses_in_its_documented_state() {
    let node = Node::new();
    // sCR0: GFRE, GFIE, GCFGFRE, GCFGFIE, USFCFG, VMIDPNE, PTM; CLIENTPD clear.
    assert_eq!(node.r32(0x0), 0b11 << 1 | 0b11 << 4 | 0b111 << 10);
    for g in 0..48 {
        assert_eq!((node.r32(0x800 + 4 * g), node.r32(0xc00 + 4 * g)), (0, 2 << 16), "group {g}");
    }
    for b in 0..16 {
        assert_eq!((node.r32(cb(b, SCTLR)), node.r32(cb(b, FSR))), (0, 0), "bank {b}");
    }
    assert_eq!(node.r32(0x48), 0);
}

#[test]
fn attach_programs_the_bank_as_the_contract_says() {
    let mut node = Node::new();
    node.attach(11, FaultPolicy { mode: FaultMode::Stall, hit_under_fault: false });
    let root = node.tables.root;
    assert_eq!(node.r32(0x1000 + 4 * 11), 1 << 16 | 11, "CBAR: stage 1, VMID 11");
    assert_eq!(node.r32(0x1800 + 4 * 11), 1, "CBA2R.VA64");
    assert_eq!(node.r32(cb(11, 0x10)), 0b010 | 0b111 << 15, "TCR2: 40-bit PA, 8-bit ASID");
    assert_eq!(node.r32(cb(11, 0x30)), 25 | 1 << 8 | 1 << 10 | 3 << 12 | 1 << 23, "TCR");
    assert_eq!(node.model.read(cb(11, 0x20), 8), Ok(u128::from(root | 12 << 48)), "TTBR0: root, ASID 12");
    assert_eq!((node.r32(cb(11, 0x38)), node.r32(cb(11, 0x3c))), (KERNEL_MAIR as u32, 0));
    assert_eq!(
        node.r32(cb(11, SCTLR)),
        1 | 1 << 2 | 1 << 5 | 1 << 6 | 1 << 7 | 1 << 12,
        "M AFE CFRE CFIE CFCFG ASIDPNE"
    );
    assert_eq!(node.r32(0x800 + 4 * 11), 1 << 31 | u32::from(stream(11)));
    assert_eq!(node.r32(0xc00 + 4 * 11), 2 << 24 | 11);
    assert_eq!((node.smmu.asid(bank(11)), node.smmu.stream(bank(11))), (Some(12), StreamId::pldma(11).ok()));
    node.smmu.detach(bank(11)).unwrap();
    assert_eq!((node.r32(0x800 + 4 * 11), node.r32(0xc00 + 4 * 11), node.r32(cb(11, SCTLR))), (0, 2 << 16, 0));
    assert_eq!(node.smmu.invalidate_page(bank(11), 0), Err(SmmuError::BankNotConfigured(bank(11))));
}

#[test]
fn syncs_poll_until_done_and_time_out_on_a_stuck_smmu() {
    let mut node = Node::with_domain(1, FaultPolicy::TERMINATE);
    node.tables.map(0x1000, DATA, USER_RW);
    assert_eq!(node.read(1, 0x1000), Translation::Ok(DATA));
    node.model.set_sync_busy_reads(5);
    node.tables.unmap(0x1000);
    node.smmu.invalidate_page(bank(1), 0x1000).unwrap();
    assert_eq!(node.read(1, 0x1000), Translation::Fault);
    node.smmu.invalidate_all().unwrap();
    node.model.set_sync_busy_reads(u32::MAX);
    assert_eq!(node.smmu.invalidate_bank(bank(1)), Err(SmmuError::SyncTimeout(Some(bank(1)))));
    assert_eq!(node.smmu.invalidate_all(), Err(SmmuError::SyncTimeout(None)));
}

#[test]
fn a_new_address_space_drops_every_translation_of_the_old_one() {
    let mut node = Node::with_domain(2, FaultPolicy::TERMINATE);
    node.tables.map(0x1000, DATA, USER_RW);
    assert_eq!(node.read(2, 0x1000), Translation::Ok(DATA));
    // exec: new tables elsewhere, same ASID.
    let other = Tables::new(node.tables.mem.clone(), 0x30_0000);
    other.map(0x1000, DATA + 0x3000, USER_RO);
    node.smmu.attach(bank(2), StreamId::pldma(2).unwrap(), &other.regime(3), FaultPolicy::TERMINATE).unwrap();
    assert_eq!(node.read(2, 0x1000), Translation::Ok(DATA + 0x3000));
    assert_eq!(node.write(2, 0x1000), Translation::Fault);
    // The stream cannot be given to a second bank while attached.
    let err = node.smmu.attach(bank(3), StreamId::pldma(2).unwrap(), &other.regime(4), FaultPolicy::TERMINATE);
    assert_eq!(err, Err(SmmuError::StreamInUse { stream: StreamId::pldma(2).unwrap(), bank: bank(2) }));
}
