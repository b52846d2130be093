//! How the driver reaches the SMMU's registers.
//!
//! The driver is generic over a [`RegisterPort`]: on the A53 it is [`MmioPort`], volatile
//! accesses to the mapped block (monomorphised and inlined, so it costs what direct register
//! accesses cost); in host tests it is the `qemu-virt` SMMU model, so the driver's real write
//! sequences run against the model's register semantics.

use super::config::ContextBank;
use super::regs::{ContextBankRegisters, Gr0Registers, Gr1Registers, Smmu500Registers};
use crate::mmio::Mmio;
use core::mem::{offset_of, size_of};

/// A register of the SMMU: its byte offset from the SMMU's base. Only this crate makes them,
/// from the `regs` layouts and checked bank and group indices, so every `Reg` names a register
/// inside the block, aligned to its width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reg(usize);

impl Reg {
    /// The byte offset from the SMMU's base.
    pub const fn offset(self) -> usize {
        self.0
    }

    /// A GR0 register (`offset` inside [`Gr0Registers`]).
    pub(crate) const fn gr0(offset: usize) -> Self {
        Self(offset_of!(Smmu500Registers, gr0) + offset)
    }

    /// A GR1 register.
    pub(crate) const fn gr1(offset: usize) -> Self {
        Self(offset_of!(Smmu500Registers, gr1) + offset)
    }

    /// Register `offset` of context bank `bank`.
    pub(crate) const fn cb(bank: ContextBank, offset: usize) -> Self {
        Self(offset_of!(Smmu500Registers, cb) + bank.index() * size_of::<ContextBankRegisters>() + offset)
    }

    /// SMR of group `group` (< `STREAM_MATCH_GROUPS`, checked by the caller).
    pub(crate) const fn smr(group: usize) -> Self {
        Self::gr0(offset_of!(Gr0Registers, smr) + 4 * group)
    }

    /// S2CR of group `group`.
    pub(crate) const fn s2cr(group: usize) -> Self {
        Self::gr0(offset_of!(Gr0Registers, s2cr) + 4 * group)
    }

    /// GR1 CBAR of `bank`.
    pub(crate) const fn cbar(bank: ContextBank) -> Self {
        Self::gr1(offset_of!(Gr1Registers, cbar) + 4 * bank.index())
    }

    /// GR1 CBA2R of `bank`.
    pub(crate) const fn cba2r(bank: ContextBank) -> Self {
        Self::gr1(offset_of!(Gr1Registers, cba2r) + 4 * bank.index())
    }

    /// GR1 CBFRSYNRA of `bank`.
    pub(crate) const fn cbfrsynra(bank: ContextBank) -> Self {
        Self::gr1(offset_of!(Gr1Registers, cbfrsynra) + 4 * bank.index())
    }
}

/// 32- and 64-bit accesses to SMMU registers. 64-bit accesses are single accesses (the kernel
/// runs on the A53; the SMMU takes them for TTBR0, FAR and TLBIVA).
pub trait RegisterPort {
    /// Reads a 32-bit register.
    fn read32(&self, reg: Reg) -> u32;
    /// Writes a 32-bit register.
    fn write32(&mut self, reg: Reg, value: u32);
    /// Reads a 64-bit register.
    fn read64(&self, reg: Reg) -> u64;
    /// Writes a 64-bit register.
    fn write64(&mut self, reg: Reg, value: u64);
    /// Makes the caller's earlier stores to normal memory (page tables) visible to the SMMU's
    /// table walker before the next register write (Linux's `wmb()` before a TLBI).
    fn publish_tables(&mut self) {}
}

/// The SMMU's register block, mapped at its (virtual) address.
pub struct MmioPort {
    regs: Mmio<Smmu500Registers>,
}

impl MmioPort {
    /// # Safety
    ///
    /// `base` must map the whole SMMU block (`size_of::<Smmu500Registers>()` bytes) as device
    /// memory for the rest of the program, and the caller must be its only user.
    pub const unsafe fn new(base: usize) -> Self {
        // SAFETY: forwarded from the caller.
        Self { regs: unsafe { Mmio::new(base) } }
    }

    fn ptr<T>(&self, reg: Reg) -> *mut T {
        (self.regs.addr() + reg.offset()) as *mut T
    }
}

impl RegisterPort for MmioPort {
    #[inline]
    fn read32(&self, reg: Reg) -> u32 {
        // SAFETY: `Reg`s are offsets of registers inside the block, aligned to their width;
        // `new`'s caller promised the block is mapped.
        unsafe { self.ptr::<u32>(reg).read_volatile() }
    }

    #[inline]
    fn write32(&mut self, reg: Reg, value: u32) {
        // SAFETY: as in `read32`.
        unsafe { self.ptr::<u32>(reg).write_volatile(value) }
    }

    #[inline]
    fn read64(&self, reg: Reg) -> u64 {
        // SAFETY: as in `read32`; 64-bit registers sit at 8-byte aligned offsets.
        unsafe { self.ptr::<u64>(reg).read_volatile() }
    }

    #[inline]
    fn write64(&mut self, reg: Reg, value: u64) {
        // SAFETY: as in `read64`.
        unsafe { self.ptr::<u64>(reg).write_volatile(value) }
    }

    #[inline]
    fn publish_tables(&mut self) {
        // Stores to the tables must complete before the SMMU sees the invalidation; the walker
        // is outside the A53s' inner-shareable domain, so the barrier covers the full system.
        #[cfg(target_arch = "aarch64")]
        aarch64_cpu::asm::barrier::dsb(aarch64_cpu::asm::barrier::ST);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers_land_where_the_block_has_them() {
        let b = ContextBank::new(15).unwrap();
        assert_eq!(Reg::cb(b, offset_of!(ContextBankRegisters, tlbstatus)).offset(), 0x1f7f4);
        assert_eq!(Reg::smr(47).offset(), 0x8bc);
        assert_eq!(Reg::s2cr(0).offset(), 0xc00);
        assert_eq!(Reg::cbar(b).offset(), 0x103c);
        assert_eq!(Reg::cbfrsynra(b).offset(), 0x143c);
        assert_eq!(Reg::cba2r(b).offset(), 0x183c);
        assert_eq!(Reg::gr0(offset_of!(Gr0Registers, tlbgstatus)).offset(), 0x74);
    }
}
