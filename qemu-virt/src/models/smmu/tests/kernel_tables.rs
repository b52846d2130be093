//! The bank walks the kernel's own process tables (`a53_kernel::mm::user_space`, built with
//! `aarch64-paging`) through the space's DMA view: the engine sees what the process sees, but
//! for the device window.

use super::*;
use a53_kernel::elf::Permissions;
use a53_kernel::mm::frames::FramePool;
use a53_kernel::mm::user_space::{AddressSpace, FrameSource, Touch};
use hal::smmu500::FaultKind;
use proto::syscall::layout;
use std::cell::RefCell;

/// The kernel's frame pool over the test memory: physical addresses are offsets into it.
struct Frames {
    mem: Arc<Memory>,
    pool: RefCell<FramePool>,
}

impl FrameSource for &Frames {
    fn alloc_zeroed(&self) -> Option<u64> {
        self.alloc_table()
    }
    fn alloc_table(&self) -> Option<u64> {
        let pa = self.pool.borrow_mut().take().ok()?.pa;
        (0..512).for_each(|i| self.mem.set(pa + 8 * i, 0));
        Some(pa)
    }
    fn free(&self, pa: u64) {
        self.pool.borrow_mut().free(pa).unwrap();
    }
    fn virt(&self, pa: u64) -> *mut u8 {
        self.mem.ptr(pa)
    }
    fn uncache(&self, _pa: u64) {
        // The model's memory has no caches.
    }
}

#[test]
fn the_bank_walks_the_kernels_process_tables() {
    let mem = Memory::new(4 << 20);
    let frames = Frames { mem: mem.clone(), pool: RefCell::new(FramePool::new(0x10_0000, 0x40_0000)) };
    let mut space = AddressSpace::new(5, &frames);
    let rw = Permissions { read: true, write: true, execute: false };
    let rx = Permissions { read: true, write: false, execute: true };
    let code = space.map_page(layout::IMAGE_BASE, rx).unwrap();
    let data = space.map_page(layout::IMAGE_BASE + 0x1000, rw).unwrap();
    let stack_top = space.map_stack().unwrap();
    let stack = space.page(stack_top - 8).unwrap().pa;
    space.map_device(layout::PIF_PAGE, 0x8010_1000).unwrap();
    let device = space.map_region(0x1000, rw, true).unwrap();
    space.touch(device, true, Touch::Page).unwrap();

    let model = Arc::new(Smmu500Model::new(mem.clone()));
    let mut smmu = Smmu500::with_port(ModelPort(model.clone()));
    smmu.reset().unwrap();
    let regime = Regime { ttbr0: space.dma_ttbr0(), tcr: KERNEL_TCR, mair: KERNEL_MAIR };
    smmu.attach(bank(4), StreamId::pldma(4).unwrap(), &regime, FaultPolicy::TERMINATE).unwrap();
    assert_eq!(smmu.asid(bank(4)), Some(5), "the process's ASID");

    let s = stream(4);
    let at = |va: u64, access| model.translate(s, va, access);
    assert_eq!(at(layout::IMAGE_BASE + 0x10, Access::Read), Translation::Ok(code + 0x10));
    assert_eq!(at(layout::IMAGE_BASE + 0x1ff0, Access::Write), Translation::Ok(data + 0xff0));
    assert_eq!(at(stack_top - 8, Access::Write), Translation::Ok(stack + 0xff8));
    assert_eq!(at(layout::IMAGE_BASE, Access::Write), Translation::Fault, "text is read-only");
    assert_eq!(smmu.next_fault().map(|f| f.kind), Some(FaultKind::Permission));
    smmu.clear_fault(&smmu.next_fault().unwrap());
    // The process's PIF page and its device region are mapped for the CPU, not for the engine.
    let out_of_reach = [layout::PIF_PAGE + 0x20, device + 8];
    let unmapped = [layout::IMAGE_BASE + 0x2000, stack_top - layout::STACK_SIZE - 8, layout::USER_END - 8];
    for unmapped in out_of_reach.into_iter().chain(unmapped) {
        assert_eq!(at(unmapped, Access::Read), Translation::Fault, "{unmapped:#x}");
        let f = smmu.next_fault().unwrap();
        assert_eq!((f.kind, f.address), (FaultKind::Translation, unmapped));
        smmu.clear_fault(&f);
    }
    assert_eq!(at(layout::USER_END, Access::Read), Translation::Fault, "beyond the 39-bit space");
    // The CPU's own tables do map both: walked from its TTBR0, the same bank reaches them.
    let cpu = Regime { ttbr0: space.ttbr0(), ..regime };
    smmu.attach(bank(5), StreamId::pldma(5).unwrap(), &cpu, FaultPolicy::TERMINATE).unwrap();
    let device_pa = space.page(device).unwrap().pa;
    assert_eq!(model.translate(stream(5), layout::PIF_PAGE + 0x20, Access::Write), Translation::Ok(0x8010_1020));
    assert_eq!(model.translate(stream(5), device + 8, Access::Write), Translation::Ok(device_pa + 8));
    drop(space);
}
