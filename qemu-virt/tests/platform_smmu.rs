//! The SMMU as a node's platform serves it: the kernel's driver programs it through forwarded
//! accesses at 0xFD80_0000 (`Platform::access`, as the guest's trapped loads and stores arrive),
//! a PL bus master translates through `Platform::smmu`, walking page tables in the node's DDR
//! file, and a fault it finds sends the SMMU line's byte to the guest at once.

use std::io::{ErrorKind, Read};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use board::pl::irq_line;
use hal::smmu500::{ContextBank, FaultKind, FaultPolicy, Reg, Regime, RegisterPort, Resume, Smmu500, StreamId};
use qemu_virt::fabric::Fabric;
use qemu_virt::interconnect::{Interconnect, LinkConfig, qfdb_coordinates};
use qemu_virt::models::iommu::{Access, IoTranslate, StallOutcome, Translation};
use qemu_virt::platform::Platform;
use qemu_virt::shm::Ddr;
use tempfile::NamedTempFile;

/// The driver's accesses, forwarded as the guest's are.
struct Forwarded(Arc<Platform>);

impl Forwarded {
    fn access(&self, write: bool, size: u32, reg: Reg, data: u128) -> u128 {
        let addr = board::SMMU_BASE + reg.offset() as u64;
        self.0.access_one(write, size, addr, data).unwrap_or_else(|s| panic!("{addr:#x}: {s:?}"))
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

/// The kernel's TCR_EL1 and MAIR_EL1 (`boot::a53`): 39-bit VA, 4 KiB, 40-bit PA.
const TCR: u64 = 25 | 0b01 << 8 | 0b01 << 10 | 0b11 << 12 | 0b010 << 32;
const MAIR: u64 = 0x44_ff_04;
const USER_RW: u64 = 0b11 | 1 << 2 | 1 << 6 | 0b11 << 8 | 1 << 10 | 1 << 11;

fn wait_for_byte(wire: &mut UnixStream) -> Option<u8> {
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut byte = [0u8];
    while Instant::now() < deadline {
        match wire.read(&mut byte) {
            Ok(1) => return Some(byte[0]),
            Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(1)),
            _ => return None,
        }
    }
    None
}

#[test]
fn the_kernels_driver_programs_the_platforms_smmu_and_faults_reach_the_guest() {
    let file = NamedTempFile::new().unwrap();
    file.as_file().set_len(1 << 20).unwrap();
    let ddr = Arc::new(Ddr::open(file.path()).unwrap());
    let net = Interconnect::new(vec![qfdb_coordinates(0)], LinkConfig::default());
    let fabric = Arc::new(Fabric::new(
        net,
        vec![ddr.clone()],
        vec![Arc::new(AtomicBool::new(true))],
        Arc::default(),
        vec![Arc::default()],
        None,
    ));
    let (host, mut guest) = UnixStream::pair().unwrap();
    guest.set_nonblocking(true).unwrap();
    let platform = Platform::new(fabric.local(0), fabric.clone(), host).unwrap();
    fabric.set_endpoints(std::slice::from_ref(&platform)).unwrap();

    // The process's tables in DDR: L1 0x1000 -> L2 0x2000 -> L3 0x3000, VA 0x4000 -> 0x8_0000.
    ddr.write(0x1000, 8, 0x2000 | 0b11).unwrap();
    ddr.write(0x2000, 8, 0x3000 | 0b11).unwrap();
    ddr.write(0x3000 + 4 * 8, 8, u128::from(0x8_0000 | USER_RW)).unwrap();

    let mut smmu = Smmu500::with_port(Forwarded(platform.clone()));
    let geometry = smmu.reset().unwrap();
    assert_eq!(geometry.context_banks, 16);
    let (bank, stream) = (ContextBank::of_domain(3).unwrap(), StreamId::pldma(3).unwrap());
    let regime = Regime { ttbr0: 0x1000 | 4 << 48, tcr: TCR, mair: MAIR };
    smmu.attach(bank, stream, &regime, FaultPolicy::STALL).unwrap();

    let iommu: Arc<dyn IoTranslate> = platform.smmu().clone();
    assert_eq!(iommu.translate(stream.get(), 0x4abc, Access::Write), Translation::Ok(0x8_0abc));
    assert_eq!(iommu.translate(0x0e85, 0x4abc, Access::Read), Translation::Fault, "another PD's stream");
    smmu.clear_global_fault(&smmu.global_fault().unwrap());

    // A source page that is not resident: the engine's read stalls and the guest is told.
    let Translation::Stalled(id) = iommu.translate(stream.get(), 0x5000, Access::Read) else { panic!("no stall") };
    assert_eq!(wait_for_byte(&mut guest), Some(irq_line::SMMU_CONTEXT));
    let fault = smmu.next_fault().unwrap();
    assert_eq!((fault.bank, fault.kind, fault.address, fault.stalled), (bank, FaultKind::Translation, 0x5000, true));
    smmu.clear_fault(&fault);
    ddr.write(0x3000 + 5 * 8, 8, u128::from(0x9_0000 | USER_RW)).unwrap();
    smmu.resume(bank, Resume::Retry);
    assert_eq!(iommu.stall_outcome(id), StallOutcome::Retry);
    assert_eq!(iommu.translate(stream.get(), 0x5008, Access::Read), Translation::Ok(0x9_0008));

    // Unmap, and the driver's invalidation through the forwarded path.
    ddr.write(0x3000 + 4 * 8, 8, 0).unwrap();
    assert_eq!(iommu.translate(stream.get(), 0x4000, Access::Read), Translation::Ok(0x8_0000), "stale until the TLBI");
    smmu.invalidate_page(bank, 0x4000).unwrap();
    assert!(matches!(iommu.translate(stream.get(), 0x4000, Access::Read), Translation::Stalled(_)));
    smmu.detach(bank).unwrap();
}
