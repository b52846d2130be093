//! Drivers: a mailbox interface page (MIF) and the block's control page. `docs/hw/vmbox.md`.

use super::EMPTY_SENTINEL;
use super::regs::{ControlRegisters, IRQ, MifRegisters, STATUS, THRESHOLD};
use crate::mmio::{Mmio, read_u128_pair, write_u32_pair};
use tock_registers::interfaces::{Readable, Writeable};

/// A mailbox interface page, whole: [`split`](Mif::split) it between the reader that dequeues
/// and the owner of its interrupt.
pub struct Mif {
    regs: Mmio<MifRegisters>,
}

impl Mif {
    /// # Safety
    ///
    /// `base` must map a MIF page; reads of DATA and PACKET dequeue, so only one reader may use it.
    pub const unsafe fn new(base: usize) -> Self {
        // SAFETY: forwarded from the caller.
        Self { regs: unsafe { Mmio::new(base) } }
    }

    /// The two halves of the page: [`MifReader`] dequeues (PACKET), [`MifIrq`] owns the interrupt
    /// registers and reads COUNT. A reader that sleeps on the interrupt and the interrupt
    /// handler that disarms it then never wait for each other's accesses.
    pub fn split(self) -> (MifReader, MifIrq) {
        let addr = self.regs.addr();
        // SAFETY: the same page, owned by `self` (consumed here); the halves write disjoint
        // registers and only read the shared STATUS.
        let (reader, irq) = unsafe { (Mmio::new(addr), Mmio::new(addr)) };
        (MifReader { regs: reader }, MifIrq { regs: irq, armed: false, depth: None })
    }
}

/// The dequeuing half of a MIF page.
pub struct MifReader {
    regs: Mmio<MifRegisters>,
}

impl MifReader {
    /// Dequeues a whole packet (two words), if one is there: one pair read of PACKET, which
    /// is the status read too (`docs/hw/vmbox.md`, "PACKET": a packet's first word is never
    /// the empty sentinel).
    pub fn read_packet(&mut self) -> Option<[u128; 2]> {
        // SAFETY: the PACKET registers of this page (32 bytes, 16-byte aligned), read with one
        // pair access as the contract asks.
        let words = unsafe { read_u128_pair(core::ptr::addr_of!(self.regs.packet) as *const u128) };
        (words[0] != EMPTY_SENTINEL).then_some(words)
    }
}

/// The interrupt half of a MIF page: threshold, enable, status; COUNT and DEPTH.
pub struct MifIrq {
    regs: Mmio<MifRegisters>,
    /// The interrupt is enabled: [`arm`](Self::arm) was the last of `arm` and `disarm`.
    armed: bool,
    /// DEPTH, once read (it never changes).
    depth: Option<u32>,
}

impl MifIrq {
    /// Words queued.
    pub fn count(&self) -> u32 {
        self.regs.status.read(STATUS::COUNT)
    }

    /// Words the FIFO can hold (DEPTH; read once).
    pub fn depth(&mut self) -> u32 {
        let regs = &self.regs;
        *self.depth.get_or_insert_with(|| regs.depth.get() & 0xffff)
    }

    /// Raise the interrupt once `words` are queued (`words` >= 1): a stale THRESHOLD status is
    /// cleared and the level set with one pair store (`irq_status`, then `threshold`), then the
    /// interrupt is enabled.
    pub fn arm(&mut self, words: u32) {
        let level = THRESHOLD::LEVEL.val(words.clamp(1, 0xffff)).value;
        // SAFETY: irq_status (0x1c) and threshold (0x20) of this page, adjacent and aligned.
        unsafe {
            write_u32_pair(core::ptr::addr_of!(self.regs.irq_status) as *mut u32, [IRQ::THRESHOLD::SET.value, level])
        };
        self.regs.irq_enable.write(IRQ::THRESHOLD::SET);
        self.armed = true;
    }

    /// Stops interrupting and acknowledges what was pending: one pair store (`irq_enable`
    /// cleared, then every `irq_status` bit written 1).
    pub fn disarm(&mut self) {
        let all = (IRQ::THRESHOLD::SET + IRQ::NOT_EMPTY::SET + IRQ::REFUSED::SET).value;
        // SAFETY: irq_enable (0x18) and irq_status (0x1c) of this page, adjacent and aligned.
        unsafe { write_u32_pair(core::ptr::addr_of!(self.regs.irq_enable) as *mut u32, [0, all]) };
        self.armed = false;
    }

    /// [`disarm`](Self::disarm), if [`arm`](Self::arm) was the last of the two (an interrupt
    /// handler usually disarmed it already).
    pub fn disarm_if_armed(&mut self) {
        if self.armed {
            self.disarm();
        }
    }
}

/// The vmbox's control page: the interrupt summary and the ID.
pub struct VmboxControl {
    regs: Mmio<ControlRegisters>,
}

impl VmboxControl {
    /// # Safety
    ///
    /// `base` must map the vmbox control page.
    pub const unsafe fn new(base: usize) -> Self {
        // SAFETY: forwarded from the caller.
        Self { regs: unsafe { Mmio::new(base) } }
    }

    /// Bit n: MIF n asserts its interrupt.
    pub fn asserting(&self) -> u64 {
        self.regs.irq_summary.get()
    }
}
