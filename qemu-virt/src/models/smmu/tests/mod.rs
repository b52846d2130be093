//! Tests of the SMMU model, most of them driving it with the `hal` driver itself (through
//! [`ModelPort`]), so that what is tested is the kernel's real register sequences against the
//! model's register semantics.

mod driver;
mod faults;
mod kernel_tables;
mod registers;
mod stall;

use super::{GuestMemory, Smmu500Model};
use crate::models::iommu::{Access, IoTranslate, Translation};
use hal::smmu500::{ContextBank, FaultPolicy, Reg, Regime, RegisterPort, Smmu500, StreamId};
use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The kernel's TCR_EL1 (`boot::a53::BOOT_TCR_EL1`, which exists only on the target): 39-bit
/// VA in both halves, 4 KiB granules, inner-shareable write-back walks, 40-bit PA.
pub const KERNEL_TCR: u64 = 25
    | 0b01 << 8
    | 0b01 << 10
    | 0b11 << 12
    | 25 << 16
    | 0b01 << 24
    | 0b01 << 26
    | 0b11 << 28
    | 0b10 << 30
    | 0b010 << 32;
/// The kernel's MAIR_EL1 (`boot::a53::MAIR_EL1`): device-nGnRE, normal WB, normal NC.
pub const KERNEL_MAIR: u64 = 0x04 | 0xff << 8 | 0x44 << 16;

// Stage-1 descriptor bits (ARM DDI 0487, D8.3).
const VALID_PAGE: u64 = 0b11;
const ATTR_NORMAL: u64 = 1 << 2;
const AP1_EL0: u64 = 1 << 6;
const AP2_RO: u64 = 1 << 7;
const SH_INNER: u64 = 0b11 << 8;
pub const AF: u64 = 1 << 10;
const NG: u64 = 1 << 11;
pub const APTABLE1_RO: u64 = 1 << 62;

/// A page the process may read and write.
pub const USER_RW: u64 = VALID_PAGE | ATTR_NORMAL | AP1_EL0 | SH_INNER | AF | NG;
/// A page the process may only read.
pub const USER_RO: u64 = USER_RW | AP2_RO;
/// A page only the kernel may access.
pub const KERNEL_RW: u64 = USER_RW & !AP1_EL0;

/// Guest physical memory: words that tests write and the model's walker reads.
pub struct Memory {
    words: Box<[AtomicU64]>,
}

impl Memory {
    pub fn new(bytes: usize) -> Arc<Self> {
        Arc::new(Self { words: (0..bytes / 8).map(|_| AtomicU64::new(0)).collect() })
    }

    pub fn set(&self, pa: u64, value: u64) {
        self.words[(pa / 8) as usize].store(value, Ordering::Relaxed);
    }

    pub fn get(&self, pa: u64) -> u64 {
        self.words[(pa / 8) as usize].load(Ordering::Relaxed)
    }

    pub fn bytes(&self) -> u64 {
        self.words.len() as u64 * 8
    }

    /// A pointer to `pa`, for code that writes frames itself (the kernel's page tables).
    pub fn ptr(&self, pa: u64) -> *mut u8 {
        // Writing through it is allowed: the words are atomics (interior mutability).
        self.words.as_ptr().cast::<u8>().cast_mut().wrapping_add(pa as usize)
    }
}

impl GuestMemory for Memory {
    fn read_u64(&self, pa: u64) -> Option<u64> {
        (pa.is_multiple_of(8) && pa < self.bytes()).then(|| self.get(pa))
    }
}

/// Where test page tables start, and the data frames tests map.
pub const ROOT: u64 = 0x10_0000;
pub const DATA: u64 = 0x40_0000;

/// A process's tables for a 39-bit VA (three levels from level 1), built in [`Memory`].
pub struct Tables {
    pub mem: Arc<Memory>,
    pub root: u64,
    next: Cell<u64>,
}

impl Tables {
    pub fn new(mem: Arc<Memory>, root: u64) -> Self {
        Self { mem, root, next: Cell::new(root + 0x1000) }
    }

    /// The address of `va`'s descriptor at `level`, creating the tables above it.
    fn slot(&self, va: u64, level: u32) -> u64 {
        let mut table = self.root;
        for l in 1..level {
            let slot = table + 8 * ((va >> (12 + 9 * (3 - l))) & 0x1ff);
            if self.mem.get(slot) & 1 == 0 {
                let next = self.next.get();
                self.next.set(next + 0x1000);
                self.mem.set(slot, next | VALID_PAGE);
            }
            table = self.mem.get(slot) & 0xff_ffff_f000;
        }
        table + 8 * ((va >> (12 + 9 * (3 - level))) & 0x1ff)
    }

    pub fn map(&self, va: u64, pa: u64, flags: u64) {
        self.mem.set(self.slot(va, 3), pa | flags);
    }

    pub fn unmap(&self, va: u64) {
        self.mem.set(self.slot(va, 3), 0);
    }

    /// Sets bits of the level-1 table descriptor above `va`.
    pub fn restrict_table(&self, va: u64, bits: u64) {
        let slot = self.slot(va, 1);
        self.mem.set(slot, self.mem.get(slot) | bits);
    }

    /// The regime of a process with these tables and `asid`.
    pub fn regime(&self, asid: u16) -> Regime {
        Regime { ttbr0: self.root | u64::from(asid) << 48, tcr: KERNEL_TCR, mair: KERNEL_MAIR }
    }
}

/// The hal driver's register port onto the model: every access the driver makes is a forwarded
/// access the model serves (a refused one fails the test).
pub struct ModelPort(pub Arc<Smmu500Model>);

impl RegisterPort for ModelPort {
    fn read32(&self, reg: Reg) -> u32 {
        self.0.read(reg.offset() as u64, 4).unwrap_or_else(|e| panic!("read {reg:?}: {e:?}")) as u32
    }
    fn write32(&mut self, reg: Reg, value: u32) {
        self.0.write(reg.offset() as u64, 4, value.into()).unwrap_or_else(|e| panic!("write {reg:?}: {e:?}"));
    }
    fn read64(&self, reg: Reg) -> u64 {
        self.0.read(reg.offset() as u64, 8).unwrap_or_else(|e| panic!("read {reg:?}: {e:?}")) as u64
    }
    fn write64(&mut self, reg: Reg, value: u64) {
        self.0.write(reg.offset() as u64, 8, value.into()).unwrap_or_else(|e| panic!("write {reg:?}: {e:?}"));
    }
}

/// A node: memory, the model, the kernel's driver after `reset`, and one process's tables.
pub struct Node {
    pub model: Arc<Smmu500Model>,
    pub smmu: Smmu500<ModelPort>,
    pub tables: Tables,
}

impl Node {
    pub fn new() -> Self {
        let mem = Memory::new(16 << 20);
        let model = Arc::new(Smmu500Model::new(mem.clone()));
        let mut smmu = Smmu500::with_port(ModelPort(model.clone()));
        smmu.reset().expect("reset");
        Self { model, smmu, tables: Tables::new(mem, ROOT) }
    }

    /// A node with protection domain `pd` attached to the process's tables (ASID `pd + 1`).
    pub fn with_domain(pd: u8, faults: FaultPolicy) -> Self {
        let mut node = Self::new();
        node.attach(pd, faults);
        node
    }

    pub fn attach(&mut self, pd: u8, faults: FaultPolicy) {
        let regime = self.tables.regime(u16::from(pd) + 1);
        self.smmu.attach(bank(pd), StreamId::pldma(pd).unwrap(), &regime, faults).expect("attach");
    }

    pub fn read(&self, pd: u8, va: u64) -> Translation {
        self.model.translate(stream(pd), va, Access::Read)
    }

    pub fn write(&self, pd: u8, va: u64) -> Translation {
        self.model.translate(stream(pd), va, Access::Write)
    }

    /// A raw 32-bit register read.
    pub fn r32(&self, offset: u64) -> u32 {
        self.model.read(offset, 4).unwrap() as u32
    }

    /// A raw 32-bit register write.
    pub fn w32(&self, offset: u64, value: u32) {
        self.model.write(offset, 4, value.into()).unwrap();
    }
}

pub fn bank(pd: u8) -> ContextBank {
    ContextBank::of_domain(pd).unwrap()
}

pub fn stream(pd: u8) -> u16 {
    StreamId::pldma(pd).unwrap().get()
}

/// Offset of register `offset` of context bank `bank`.
pub fn cb(bank: u8, offset: u64) -> u64 {
    0x10000 + 0x1000 * u64::from(bank) + offset
}

pub const SCTLR: u64 = 0x00;
pub const RESUME: u64 = 0x08;
pub const FSR: u64 = 0x58;
pub const FAR: u64 = 0x60;
pub const FSYNR0: u64 = 0x68;
pub const TLBIVA: u64 = 0x600;
pub const TLBSYNC: u64 = 0x7f0;
pub const TLBSTATUS: u64 = 0x7f4;

pub const TF: u32 = 1 << 1;
pub const AFF: u32 = 1 << 2;
pub const PF: u32 = 1 << 3;
pub const EF: u32 = 1 << 4;
pub const SS: u32 = 1 << 30;
pub const MULTI: u32 = 1 << 31;
