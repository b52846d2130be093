//! RDMA between process address spaces: every node's engine translates through its platform's
//! SMMU model, which the kernel's driver (`hal::smmu500`) programs through forwarded accesses,
//! with context bank 3 on the stage-1 tables of PD 3's process (`docs/hw/smmu.md`,
//! `docs/hw/pldma.md`). The R5 side is the real scheduler; a stand-in for the kernel maps pages
//! and answers faults as both contracts ask.

mod common;

use common::node::{Node, PATIENT_TIMEOUT_US, Process};
use common::*;
use hal::pldma::codes::{FaultCode, RapfAction};
use hal::pldma::fault::FaultEntry;
use hal::pldma::rapf::RapfRequest;
use hal::smmu500::{Access, ContextBank, FaultPolicy, Reg, Regime, RegisterPort, Resume, Smmu500, StreamId};
use proto::rdma::queue::{Cqe, CqeStatus, Direction, Wqe};
use qemu_virt::platform::Platform;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The driver's accesses, forwarded as the guest's are.
struct Forwarded(Arc<Platform>);

impl Forwarded {
    fn access(&self, write: bool, size: u32, reg: Reg, data: u128) -> u128 {
        let addr = board::SMMU_BASE + reg.offset() as u64;
        let r = self.0.forwarded_one(write, size, addr, data);
        r.unwrap_or_else(|s| panic!("{addr:#x}: {s:?}"))
    }
}

impl RegisterPort for Forwarded {
    fn read32(&self, reg: Reg) -> u32 {
        self.access(false, 4, reg, 0) as u32
    }
    fn write32(&mut self, reg: Reg, value: u32) {
        self.access(true, 4, reg, value.into());
    }
    fn read64(&self, reg: Reg) -> u64 {
        self.access(false, 8, reg, 0) as u64
    }
    fn write64(&mut self, reg: Reg, value: u64) {
        self.access(true, 8, reg, value.into());
    }
}

/// The kernel's TCR_EL1 and MAIR_EL1: 39-bit VA, 4 KiB granule, 40-bit PA.
const TCR: u64 = 25 | 0b01 << 8 | 0b01 << 10 | 0b11 << 12 | 0b010 << 32;
const MAIR: u64 = 0x44_ff_04;
/// A user read/write page descriptor's attributes (AF, inner shareable, EL0 RW, nG).
const USER_RW: u64 = 0b11 | 1 << 2 | 1 << 6 | 0b11 << 8 | 1 << 10 | 1 << 11;
/// Process memory of PD 3: VA `USER_VA + x` is PA `frames(node) + x`, for 2 MiB.
const USER_VA: u64 = 0x4000_0000;
const PD: u16 = 3;
/// Page tables of the process in the node's DDR: L1, L2, L3.
const TABLES: u64 = 0x30_0000;

fn frames(node: usize) -> u64 {
    0x60_0000 + node as u64 * 0x20_0000
}

/// What the kernel keeps of a node: its SMMU driver.
struct Kernel {
    smmu: Smmu500<Forwarded>,
    bank: ContextBank,
}

impl Kernel {
    /// The process's tables with every page mapped, and bank 3 on them.
    fn boot(rig: &Rig, node: usize, policy: FaultPolicy) -> Self {
        let ddr = &rig.ddrs[node];
        ddr.write(TABLES + (USER_VA >> 30) * 8, 8, u128::from((TABLES + 0x1000) | 0b11)).unwrap();
        ddr.write(TABLES + 0x1000, 8, u128::from((TABLES + 0x2000) | 0b11)).unwrap();
        let k = Self {
            smmu: Smmu500::with_port(Forwarded(rig.platforms[node].clone())),
            bank: ContextBank::of_domain(PD as u8).unwrap(),
        };
        for page in 0..512 {
            k.map(rig, node, USER_VA + page * 4096);
        }
        let mut k = k;
        k.smmu.reset().unwrap();
        let regime = Regime { ttbr0: TABLES | 7 << 48, tcr: TCR, mair: MAIR };
        k.smmu.attach(k.bank, StreamId::pldma(PD as u8).unwrap(), &regime, policy).unwrap();
        k
    }

    fn pte(va: u64) -> u64 {
        TABLES + 0x2000 + ((va - USER_VA) >> 12) * 8
    }

    fn map(&self, rig: &Rig, node: usize, va: u64) {
        let pa = frames(node) + (va - USER_VA) / 4096 * 4096;
        rig.ddrs[node].write(Self::pte(va), 8, u128::from(pa | USER_RW)).unwrap();
    }

    /// Unmaps (the pages were never walked, so no TLB entry needs invalidating; a real unmap
    /// would invalidate).
    fn unmap_fresh(rig: &Rig, node: usize, va: u64) {
        rig.ddrs[node].write(Self::pte(va), 8, 0).unwrap();
    }
}

fn pa(node: usize, va: u64) -> u64 {
    frames(node) + (va - USER_VA)
}

fn run_until(nodes: &mut [Node<'_>], mut done: impl FnMut(&mut [Node<'_>]) -> bool) {
    let until = Instant::now() + LONG * 3;
    while !done(nodes) {
        assert!(Instant::now() < until, "the transfer did not finish");
        for n in nodes.iter_mut() {
            n.step();
        }
        std::thread::sleep(Duration::from_micros(50));
    }
}

fn completion(nodes: &mut [Node<'_>], p: &Process<'_>) -> Cqe {
    let mut got = Vec::new();
    run_until(nodes, |_| {
        got.extend(p.completions());
        !got.is_empty()
    });
    assert_eq!(got.len(), 1);
    got[0]
}

/// Two nodes whose timeouts cannot fire before a fault is resolved.
fn patient_nodes(rig: &Rig) -> Vec<Node<'_>> {
    vec![Node::with_timeout(rig, 0, PATIENT_TIMEOUT_US), Node::with_timeout(rig, 1, PATIENT_TIMEOUT_US)]
}

fn write(len: u32, local: u64, remote: u64) -> Wqe {
    Wqe { direction: Direction::Write, node: 1, len, local, remote, tag: 1, notify: None }
}

#[test]
fn a_transfer_between_address_spaces_translates_at_both_ends() {
    let rig = Rig::with_smmus(2);
    let _kernels = [Kernel::boot(&rig, 0, FaultPolicy::TERMINATE), Kernel::boot(&rig, 1, FaultPolicy::TERMINATE)];
    let mut nodes = vec![Node::start(&rig, 0), Node::start(&rig, 1)];
    let p0 = nodes[0].register(PD);
    nodes[1].register(PD);
    let (local, remote) = (USER_VA + 0x100, USER_VA + 0x1_2345);
    let data = pattern(4, 100_000);
    rig.fill(0, pa(0, local), &data);
    assert!(p0.submit(&write(100_000, local, remote)));
    assert_eq!(
        completion(&mut nodes, &p0),
        Cqe::Local { tag: 1, wq_index: 0, len: 100_000, status: CqeStatus::Ok, node: 1 }
    );
    assert_eq!(rig.bytes(1, pa(1, remote), 100_000), data, "at the process's frames, not at its VAs");
}

#[test]
fn a_destination_fault_is_seen_by_the_smmu_and_the_fifo_and_resolved_without_a_timeout() {
    let rig = Rig::with_smmus(2);
    let _k0 = Kernel::boot(&rig, 0, FaultPolicy::TERMINATE);
    let mut k1 = Kernel::boot(&rig, 1, FaultPolicy::TERMINATE);
    let mut nodes = patient_nodes(&rig);
    let p0 = nodes[0].register(PD);
    nodes[1].register(PD);
    let (local, remote) = (USER_VA, USER_VA + 0x4_0000);
    for page in 0..8 {
        Kernel::unmap_fresh(&rig, 1, remote + page * 4096);
    }
    let data = pattern(5, 32 * 1024);
    rig.fill(0, pa(0, local), &data);
    assert!(p0.submit(&write(32 * 1024, local, remote)));
    let mut smmu_faults = Vec::new();
    let mut got = Vec::new();
    run_until(&mut nodes, |_| {
        // The SMMU's context fault: recorded, then cleared (terminate mode: nothing is held).
        if let Some(f) = k1.smmu.next_fault() {
            smmu_faults.push(f);
            k1.smmu.clear_fault(&f);
        }
        // The FIFO: map the block's window (touch-ahead) and RAPF the owner.
        loop {
            let lo = rig.read(1, FIFO_LO, 8).unwrap() as u64;
            if lo & 1 == 0 {
                break;
            }
            let hi = rig.read(1, FIFO_HI, 8).unwrap() as u64;
            let e = FaultEntry::decode(lo, hi).unwrap().unwrap();
            assert_eq!((e.code, e.node, e.pd.raw()), (FaultCode::DestinationFault, 0, PD));
            let window = e.page_va() & !0x3fff;
            for page in 0..4 {
                k1.map(&rig, 1, window + page * 4096);
            }
            let rapf = RapfRequest { node: e.node, tid: e.tid, seq: e.seq, action: RapfAction::Retry, claimed_pd: PD };
            rig.write(1, pd_page(PD, PD_RAPF), 8, u128::from(rapf.encode().unwrap())).unwrap();
        }
        got.extend(p0.completions());
        !got.is_empty()
    });
    assert_eq!(got, [Cqe::Local { tag: 1, wq_index: 0, len: 32 * 1024, status: CqeStatus::Ok, node: 1 }]);
    assert_eq!(rig.bytes(1, pa(1, remote), 32 * 1024), data);
    assert!(!smmu_faults.is_empty(), "the SMMU recorded the fault");
    assert!(smmu_faults.iter().all(|f| f.access == Access::Write && f.bank.index() == PD as usize));
    assert_eq!(nodes[0].scheduler.stats().timeout_retransmits, 0);
}

#[test]
fn a_stalled_source_is_resumed_and_nothing_is_retransmitted() {
    let rig = Rig::with_smmus(2);
    let mut k0 = Kernel::boot(&rig, 0, FaultPolicy::STALL);
    let _k1 = Kernel::boot(&rig, 1, FaultPolicy::TERMINATE);
    let mut nodes = patient_nodes(&rig);
    let p0 = nodes[0].register(PD);
    nodes[1].register(PD);
    let (local, remote) = (USER_VA + 0x8000, USER_VA);
    let data = pattern(6, 12_000);
    rig.fill(0, pa(0, local), &data);
    Kernel::unmap_fresh(&rig, 0, local + 4096);
    assert!(p0.submit(&write(12_000, local, remote)));
    let mut resumed = 0;
    let mut got = Vec::new();
    run_until(&mut nodes, |_| {
        if let Some(f) = k0.smmu.next_fault() {
            assert!(f.stalled && f.access == Access::Read, "{f:?}");
            k0.map(&rig, 0, f.address);
            k0.smmu.clear_fault(&f);
            k0.smmu.resume(k0.bank, Resume::Retry);
            resumed += 1;
        }
        got.extend(p0.completions());
        !got.is_empty()
    });
    assert_eq!(got, [Cqe::Local { tag: 1, wq_index: 0, len: 12_000, status: CqeStatus::Ok, node: 1 }]);
    assert_eq!(rig.bytes(1, pa(1, remote), 12_000), data);
    assert!(resumed >= 1);
    let s = nodes[0].scheduler.stats();
    assert_eq!((s.timeout_retransmits, s.rapf_retransmits, s.local_retransmits), (0, 0, 0));
    assert_eq!(rig.reg(0, FIFO_COUNT), 0, "a stall needs no fault entry");
}
