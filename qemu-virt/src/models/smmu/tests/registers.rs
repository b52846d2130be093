//! Register semantics reached through forwarded accesses: reset values, refusals, 64-bit halves,
//! sync status, the device's interrupt line.

use super::*;
use crate::models::MmioDevice;
use crate::models::ModelError;
use crate::models::smmu::{SmmuDevice, idr0, idr1, idr2};
use board::pl::irq_line;
use proto::forward::Status;

#[test]
fn out_of_reset_every_stream_bypasses_and_the_ids_are_the_zynqmp_ones() {
    let model = Smmu500Model::new(Memory::new(4096));
    assert_eq!(model.translate(0x0e80, 0x1234_5678, Access::Write), Translation::Ok(0x1234_5678));
    assert_eq!(model.read(0x0, 4), Ok(1), "sCR0.CLIENTPD");
    assert_eq!(model.read(0x20, 4), Ok(u128::from(idr0())));
    assert_eq!(model.read(0x24, 4), Ok(u128::from(idr1())));
    assert_eq!(model.read(0x28, 4), Ok(u128::from(idr2())));
    // The same values the contract documents (docs/hw/smmu.md, GR0 registers).
    let doc = include_str!("../../../../../docs/hw/smmu.md");
    for (name, value) in [("idr0", idr0()), ("idr1", idr1()), ("idr2", idr2())] {
        let row = doc.lines().find(|l| l.contains(&format!("| `{name}` |"))).unwrap();
        let hex = format!("{:04X}_{:04X}", value >> 16, value & 0xffff);
        assert!(row.contains(&hex), "{name}: {row} should say {hex}");
    }
}

#[test]
fn bad_accesses_are_refused_and_change_nothing() {
    let node = Node::with_domain(1, FaultPolicy::TERMINATE);
    let m = &node.model;
    let sctlr = cb(1, SCTLR);
    let before = m.read(sctlr, 4).unwrap();
    for offset in [0x4, 0x8c0, 0x1040, 0x2000, 0x8000, cb(1, 0x4), cb(1, 0x800), 0x20000] {
        assert_eq!(m.read(offset, 4), Err(ModelError::Unmapped { offset }), "{offset:#x}");
        assert_eq!(m.write(offset, 4, 0), Err(ModelError::Unmapped { offset }), "{offset:#x}");
    }
    for (offset, size) in [(sctlr, 8), (sctlr, 2), (sctlr + 1, 1), (cb(1, 0x20), 2), (cb(1, 0x22), 4)] {
        assert_eq!(m.write(offset, size, 0), Err(ModelError::AccessSize { offset, size }));
    }
    assert_eq!(m.write(cb(1, TLBIVA), 4, 0), Err(ModelError::AccessSize { offset: cb(1, TLBIVA), size: 4 }));
    for offset in [0x20, 0x24, 0x28, 0x50, 0x54, 0x74, 0x1404, cb(1, FAR), cb(1, FSYNR0), cb(1, TLBSTATUS)] {
        assert_eq!(m.write(offset, 4, 0), Err(ModelError::ReadOnly { offset }), "{offset:#x}");
    }
    for offset in [0x64, 0x68, 0x70, cb(1, RESUME), cb(1, 0x610), cb(1, 0x618), cb(1, TLBSYNC)] {
        assert_eq!(m.read(offset, 4), Err(ModelError::WriteOnly { offset }), "{offset:#x}");
    }
    assert_eq!(m.read(cb(1, TLBIVA), 8), Err(ModelError::WriteOnly { offset: cb(1, TLBIVA) }));
    assert_eq!(m.read(sctlr, 4), Ok(before));
}

#[test]
fn a_bank_is_only_enabled_in_the_configuration_the_model_translates() {
    let node = Node::with_domain(2, FaultPolicy::TERMINATE);
    let sctlr = cb(2, SCTLR);
    let enabled = node.r32(sctlr);
    let refused = |node: &Node| {
        assert_eq!(node.model.write(sctlr, 4, enabled.into()), Err(ModelError::Unsupported { offset: sctlr }));
    };
    node.w32(sctlr, 0);
    node.w32(0x1000 + 8, 0); // CBAR: stage 2 only
    refused(&node);
    node.w32(0x1000 + 8, 1 << 16);
    node.w32(0x1800 + 8, 0); // CBA2R: AArch32
    refused(&node);
    node.w32(0x1800 + 8, 1);
    let tcr = node.r32(cb(2, 0x30));
    node.w32(cb(2, 0x30), tcr | 0b01 << 14); // 64 KiB granule
    refused(&node);
    node.w32(cb(2, 0x30), tcr);
    assert_eq!(
        node.model.write(sctlr, 4, (enabled & !(1 << 5)).into()),
        Err(ModelError::Unsupported { offset: sctlr }),
        "CFRE = 0"
    );
    assert_eq!(node.r32(sctlr), 0, "refused writes leave SCTLR alone");
    node.w32(sctlr, enabled);
    node.tables.map(0x1000, DATA, USER_RW);
    assert_eq!(node.read(2, 0x1000), Translation::Ok(DATA));
}

#[test]
fn sixty_four_bit_registers_take_whole_or_half_accesses() {
    let model = Smmu500Model::new(Memory::new(4096));
    let ttbr0 = cb(0, 0x20);
    model.write(ttbr0, 8, 0x0001_0000_8765_4000).unwrap();
    assert_eq!(model.read(ttbr0, 4), Ok(0x8765_4000));
    assert_eq!(model.read(ttbr0 + 4, 4), Ok(0x0001_0000));
    model.write(ttbr0 + 4, 4, 0x0002_0000).unwrap();
    model.write(ttbr0, 4, 0x1000).unwrap();
    assert_eq!(model.read(ttbr0, 8), Ok(0x0002_0000_0000_1000));
    model.write(0x40, 8, 0xdead_beef_0000).unwrap();
    assert_eq!(model.read(0x44, 4), Ok(0xdead));
}

#[test]
fn sync_status_is_busy_for_the_configured_reads() {
    let node = Node::new();
    node.model.set_sync_busy_reads(2);
    node.w32(cb(3, TLBSYNC), 0);
    let reads: Vec<u32> = (0..3).map(|_| node.r32(cb(3, TLBSTATUS))).collect();
    assert_eq!(reads, [1, 1, 0]);
    node.w32(0x70, 0);
    let reads: Vec<u32> = (0..3).map(|_| node.r32(0x74)).collect();
    assert_eq!(reads, [1, 1, 0]);
}

#[test]
fn the_device_drives_the_smmu_line_and_reports_statuses() {
    let node = Node::with_domain(4, FaultPolicy::TERMINATE);
    let mut device = SmmuDevice::new(node.model.clone(), irq_line::SMMU_CONTEXT);
    assert_eq!(device.irq_lines(), 0);
    assert_eq!(node.read(4, 0x5000), Translation::Fault);
    assert_eq!(device.irq_lines(), 1 << irq_line::SMMU_CONTEXT);
    assert_eq!(device.read(cb(4, FSR), 4), Ok(u128::from(TF)));
    device.write(cb(4, FSR), 4, TF.into()).unwrap();
    assert_eq!(device.irq_lines(), 0);
    // Without CFIE a fault is recorded but does not interrupt.
    let sctlr = node.r32(cb(4, SCTLR));
    node.w32(cb(4, SCTLR), sctlr & !(1 << 6));
    assert_eq!(node.read(4, 0x5000), Translation::Fault);
    assert_eq!((node.r32(cb(4, FSR)), device.irq_lines()), (TF, 0));
    assert_eq!(device.read(0x4, 4), Err(Status::Unmapped));
    assert_eq!(device.write(0x20, 4, 0), Err(Status::Rejected));
    assert_eq!(device.read(0x68, 4), Err(Status::Rejected));
    assert_eq!(device.read(0x0, 8), Err(Status::Rejected));
    assert_eq!(device.name(), "smmu");
}

#[test]
fn the_window_and_line_match_the_board() {
    assert_eq!(board::SMMU_SIZE, core::mem::size_of::<hal::smmu500::regs::Smmu500Registers>() as u64);
    let forwarding = include_str!("../../../../../docs/hw/forwarding.md");
    let line = forwarding.lines().find(|l| l.contains("SMMU context fault")).unwrap();
    assert!(line.starts_with(&format!("| {} |", irq_line::SMMU_CONTEXT)), "{line}");
}
