//! Drivers of the PLDMA pages (`docs/hw/pldma.md`). The control page has two owners with
//! disjoint registers: the R5 ([`EngineControl`]: rings, its doorbell, completion
//! notifications) and the kernel ([`EngineAdmin`]: PD enables, interrupts); the kernel also owns
//! the fault page ([`FaultFifo`]) and every PD page ([`PdPage`], one of which each process holds).

use super::Pd;
use super::fault::{FaultEntry, FaultEntryError};
use super::rapf::{RapfError, RapfRequest};
use super::regs::{CTRL, ControlRegisters, Counter, FaultRegisters, ID, ID_VALUE, IRQ, PD_STATUS, PdRegisters};
use crate::mmio::Mmio;
use tock_registers::LocalRegisterCopy;
use tock_registers::interfaces::{Readable, Writeable};

/// Why the engine could not be identified or started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineError {
    /// `id` does not read `ID_VALUE`: no engine at the address (or a different bitstream).
    BadId(u32),
    /// The engine refused the rings' address (misaligned or outside memory).
    RingsRefused(u64),
}

/// The R5's registers of the control page.
pub struct EngineControl {
    regs: Mmio<ControlRegisters>,
}

impl EngineControl {
    /// The R5's handle on the control page at `base`.
    ///
    /// # Safety
    ///
    /// `base` must map the PLDMA control page, and only the R5's firmware may use these
    /// registers (`ctrl`, `rings_*`, `desc_doorbell`, `cq_notify`), through this one handle.
    pub const unsafe fn new(base: usize) -> Self {
        // SAFETY: forwarded from the caller.
        Self { regs: unsafe { Mmio::new(base) } }
    }

    /// The engine's node id, once its identity checks out.
    pub fn identify(&self) -> Result<u16, EngineError> {
        let id = self.regs.id.get();
        if id != ID_VALUE || self.regs.id.read(ID::VERSION) != 1 {
            return Err(EngineError::BadId(id));
        }
        Ok(self.regs.node.get() as u16)
    }

    /// Step 1 of "Starting the engine": after this the engine posts no event and takes no
    /// descriptor; the caller then drops the events it finds.
    pub fn stop(&mut self) {
        self.regs.ctrl.set(0);
    }

    /// Steps 2 and 3: the rings at `rings_pa`, and run.
    pub fn start(&mut self, rings_pa: u64) -> Result<(), EngineError> {
        self.regs.rings_lo.set(rings_pa as u32);
        self.regs.rings_hi.set((rings_pa >> 32) as u32);
        self.regs.ctrl.write(CTRL::ENABLE::SET);
        let ctrl = self.regs.ctrl.extract();
        if ctrl.is_set(CTRL::ERROR) || !ctrl.is_set(CTRL::ENABLE) {
            return Err(EngineError::RingsRefused(rings_pa));
        }
        Ok(())
    }

    /// Wakes an engine that said it sleeps (`rings::DescriptorPoster::take_kick`).
    pub fn kick(&mut self) {
        self.regs.desc_doorbell.set(1);
    }

    /// Asks the kernel to wake PD `pd`'s process (its CQ was armed).
    pub fn notify_cq(&mut self, pd: Pd) {
        self.regs.cq_notify.set(u32::from(pd.raw()));
    }

    /// The current value of counter `c` (it wraps).
    pub fn counter(&self, c: Counter) -> u64 {
        self.regs.counters[c.index()].get()
    }
}

/// The kernel's registers of the control page.
pub struct EngineAdmin {
    regs: Mmio<ControlRegisters>,
}

impl EngineAdmin {
    /// The kernel's handle on the control page at `base`.
    ///
    /// # Safety
    ///
    /// `base` must map the PLDMA control page; only the kernel may use these registers
    /// (`pd_enable`, `pd_busy`, `irq_*`, `cq_pending`), through this one handle.
    pub const unsafe fn new(base: usize) -> Self {
        // SAFETY: forwarded from the caller.
        Self { regs: unsafe { Mmio::new(base) } }
    }

    /// Sets or clears `pd_enable` bit `pd` (the engine accepts, or drops, the PD's work).
    pub fn set_pd_enabled(&mut self, pd: Pd, enabled: bool) {
        let now = self.regs.pd_enable.get();
        self.regs.pd_enable.set(if enabled { now | pd.bit() } else { now & !pd.bit() });
    }

    /// `pd_enable` bit `pd` is set.
    pub fn pd_enabled(&self, pd: Pd) -> bool {
        self.regs.pd_enable.get() & pd.bit() != 0
    }

    /// The engine still holds work of `pd` (tear-down waits for this to clear).
    pub fn pd_busy(&self, pd: Pd) -> bool {
        self.regs.pd_busy.get() & pd.bit() != 0
    }

    /// Writes `irq_enable`: the causes that drive PL line 3.
    pub fn set_irq_enable(&mut self, causes: LocalRegisterCopy<u32, IRQ::Register>) {
        self.regs.irq_enable.set(causes.get());
    }

    /// Reads `irq_status`: the pending causes.
    pub fn irq_status(&self) -> LocalRegisterCopy<u32, IRQ::Register> {
        self.regs.irq_status.extract()
    }

    /// Clears the sticky causes in `causes` (the level ones ignore the write).
    pub fn clear_sticky(&mut self, causes: LocalRegisterCopy<u32, IRQ::Register>) {
        self.regs.irq_status.set(causes.get());
    }

    /// Clears the `cq_pending` bits of `pds` (bit `p` for PD `p`), as `irq_status`'s
    /// `CQ_PENDING` copy read them: one access.
    pub fn clear_cq_pending(&mut self, pds: u16) {
        self.regs.cq_pending.set(u32::from(pds));
    }

    /// The current value of counter `c` (it wraps).
    pub fn counter(&self, c: Counter) -> u64 {
        self.regs.counters[c.index()].get()
    }
}

/// The receiver fault FIFO (seed 002 §3.2.3.1).
pub struct FaultFifo {
    regs: Mmio<FaultRegisters>,
}

impl FaultFifo {
    /// The kernel's handle on the fault page at `base`.
    ///
    /// # Safety
    ///
    /// `base` must map the PLDMA fault page, read by the kernel's fault path through this one
    /// handle (a stray read of `fifo_lo`/`fifo_hi` would pop an entry it never sees).
    pub const unsafe fn new(base: usize) -> Self {
        // SAFETY: forwarded from the caller.
        Self { regs: unsafe { Mmio::new(base) } }
    }

    /// The head entry, popped: `fifo_lo` then `fifo_hi`, in that order (the pop rule).
    pub fn pop(&mut self) -> Result<Option<FaultEntry>, FaultEntryError> {
        let lo = self.regs.fifo_lo.get();
        if lo & 1 == 0 {
            return Ok(None);
        }
        let hi = self.regs.fifo_hi.get();
        FaultEntry::decode(lo, hi)
    }

    /// Entries queued (`fifo_count`, 0..=512).
    pub fn len(&self) -> usize {
        self.regs.fifo_count.get() as usize
    }

    /// `fifo_count` reads 0.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Why a PD page write did not take effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PdPageError {
    /// The request does not encode; nothing was written.
    Rapf(RapfError),
    /// The engine refused the write: the PD is disabled, or a field is out of range.
    Refused,
}

/// One PD page: the process's doorbell and RAPF (the PD is the page's).
pub struct PdPage {
    regs: Mmio<PdRegisters>,
}

impl PdPage {
    /// A handle on the PD page at `base`.
    ///
    /// # Safety
    ///
    /// `base` must map a PLDMA PD page, used through this one handle.
    pub const unsafe fn new(base: usize) -> Self {
        // SAFETY: forwarded from the caller.
        Self { regs: unsafe { Mmio::new(base) } }
    }

    /// The page's PD.
    pub fn pd(&self) -> u32 {
        self.regs.pd.get()
    }

    /// `status.ENABLED`: `pd_enable` bit of the page's PD.
    pub fn enabled(&self) -> bool {
        self.regs.status.is_set(PD_STATUS::ENABLED)
    }

    /// Tells the R5 that the work queue's head is now `head`: one write, nothing read back (on
    /// QEMU each access is a forwarded round trip). A refusal shows in `refused`.
    pub fn ring(&mut self, head: u32) {
        self.regs.doorbell.set(head);
    }

    /// The last doorbell or RAPF write was refused (the PD is disabled, a field was bad, or no
    /// fault of the PD awaited that answer).
    pub fn refused(&self) -> bool {
        self.regs.status.is_set(PD_STATUS::REFUSED)
    }

    /// Events of the page's PD the engine could not post: its share of the event ring was full
    /// (wraps).
    pub fn events_lost(&self) -> u32 {
        self.regs.events_lost.get()
    }

    /// `rapf` writes the engine refused (wraps).
    pub fn rapf_refused(&self) -> u32 {
        self.regs.rapf_refused.get()
    }

    /// Writes `request` to the `rapf` register, then reads `status` to see whether it was refused.
    pub fn rapf(&mut self, request: &RapfRequest) -> Result<(), PdPageError> {
        self.write_rapf(request)?;
        self.settled()
    }

    /// Writes `request` to the `rapf` register and reads nothing back (a refusal shows in
    /// `refused` and `rapf_refused`).
    pub fn write_rapf(&mut self, request: &RapfRequest) -> Result<(), PdPageError> {
        self.regs.rapf.set(request.encode().map_err(PdPageError::Rapf)?);
        Ok(())
    }

    fn settled(&self) -> Result<(), PdPageError> {
        if self.refused() { Err(PdPageError::Refused) } else { Ok(()) }
    }
}

/// The kernel's handle on Active Access's two pages (`docs/hw/active-access.md`): the
/// access-log table (`active`) and the active page table (`apt`).
pub struct ActivePages {
    active: Mmio<super::active::ActiveRegisters>,
    apt: Mmio<super::active::AptRegisters>,
}

impl ActivePages {
    /// The kernel's handle on the `active` page at `active` and the `apt` page at `apt`.
    ///
    /// # Safety
    ///
    /// The addresses must map those two pages of the PLDMA, and only the kernel may use them,
    /// through this one handle.
    pub const unsafe fn new(active: usize, apt: usize) -> Self {
        // SAFETY: forwarded from the caller.
        unsafe { Self { active: Mmio::new(active), apt: Mmio::new(apt) } }
    }

    /// Programs log `log` (0..=16): invalid first, then base and header, then `ctrl`.
    pub fn open_log(&mut self, log: usize, ctrl: super::active::LogCtrl, base: u64, header: u64) {
        let Some(regs) = self.active.logs.get(log) else { return };
        regs.ctrl.set(0);
        regs.base.set(base);
        regs.header.set(header);
        regs.ctrl.set(ctrl.encode());
    }

    /// Makes log `log` invalid.
    pub fn close_log(&mut self, log: usize) {
        if let Some(regs) = self.active.logs.get(log) {
            regs.ctrl.set(0);
        }
    }

    /// Rewrites valid log `log`'s `ctrl` with `ctrl` (the engine keeps the log: only NOTIFY
    /// changes while VALID stays 1).
    pub fn set_ctrl(&mut self, log: usize, ctrl: super::active::LogCtrl) {
        if let Some(regs) = self.active.logs.get(log) {
            regs.ctrl.set(ctrl.encode());
        }
    }

    /// Takes `appended` (bit `i`: log `i` took an entry while NOTIFY was set): read, then
    /// cleared by writing back the bits read, so that an entry appended between the two raises
    /// the cause again.
    pub fn take_appended(&mut self) -> u32 {
        let bits = self.active.appended.get();
        if bits != 0 {
            self.active.appended.set(bits);
        }
        bits
    }

    /// Log `log`'s (`produced`, `entries`, `full`).
    pub fn log_counts(&self, log: usize) -> Option<(u32, u32, u32)> {
        self.active.logs.get(log).map(|r| (r.produced.get(), r.entries.get(), r.full.get()))
    }

    /// Writes APT entry `index`: `attr`, then `tag` (a tag of 0 frees the entry).
    pub fn write_apt(&mut self, index: usize, tag: u64, attr: u32) {
        if let Some(e) = self.apt.entries.get(index) {
            if tag == 0 {
                e.tag.set(0);
            }
            e.attr.set(attr);
            e.tag.set(tag);
        }
    }

    /// `apt_refused`: accesses to marked pages not served for want of log room.
    pub fn refused(&self) -> u32 {
        self.active.apt_refused.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pldma::codes::{FaultCode, RapfAction};
    use crate::pldma::regs::FaultRegisters;
    use std::boxed::Box;

    /// A register page in RAM: the drivers' accesses land where the layout says.
    fn page<T>() -> Box<T> {
        // SAFETY: the register blocks are made of integer cells; all-zero bytes are valid.
        unsafe { Box::new(core::mem::zeroed()) }
    }

    fn addr<T>(b: &T) -> usize {
        b as *const T as usize
    }

    /// What a write-only register of a RAM page holds.
    fn peek<R, T: Copy>(reg: &R) -> T {
        // SAFETY: a register cell of a RAM page, as wide as `T`.
        unsafe { (reg as *const R as *const T).read_volatile() }
    }

    #[test]
    fn the_control_drivers_touch_their_registers() {
        let regs = page::<ControlRegisters>();
        // SAFETY: the RAM page stands for the control page in this test; one handle each.
        let (mut r5, mut kernel) = unsafe { (EngineControl::new(addr(&*regs)), EngineAdmin::new(addr(&*regs))) };
        assert_eq!(r5.identify(), Err(EngineError::BadId(0)));
        r5.kick();
        assert_eq!(peek::<_, u32>(&regs.desc_doorbell), 1);
        r5.notify_cq(Pd::new(9).unwrap());
        assert_eq!(peek::<_, u32>(&regs.cq_notify), 9);
        assert_eq!(r5.start(0x1_2345_6000), Ok(()), "RAM keeps ENABLE as written");
        assert_eq!((regs.rings_lo.get(), regs.rings_hi.get()), (0x2345_6000, 1));
        r5.stop();
        assert_eq!(regs.ctrl.get(), 0);
        kernel.set_pd_enabled(Pd::new(3).unwrap(), true);
        kernel.set_pd_enabled(Pd::new(5).unwrap(), true);
        kernel.set_pd_enabled(Pd::new(3).unwrap(), false);
        assert_eq!(regs.pd_enable.get(), 1 << 5);
        assert!(kernel.pd_enabled(Pd::new(5).unwrap()));
        regs.irq_status.set(IRQ::CQ::SET.value | 0x0005_0000);
        assert_eq!(kernel.irq_status().read(IRQ::CQ_PENDING), 5, "irq_status carries the PDs to wake");
        kernel.clear_cq_pending(0xffff);
        assert_eq!(regs.cq_pending.get(), 0xffff, "RAM keeps what the write-1-to-clear write was");
    }

    #[test]
    fn the_fifo_driver_reads_low_then_high() {
        let regs = page::<FaultRegisters>();
        // SAFETY: the RAM page stands for the fault page in this test.
        let mut fifo = unsafe { FaultFifo::new(addr(&*regs)) };
        assert_eq!(fifo.pop(), Ok(None));
        let e = FaultEntry::new(FaultCode::DestinationFault, Pd::new(2).unwrap(), 1, 2, 3, 0x4000);
        let [lo, hi] = e.encode();
        // SAFETY: plain RAM standing for the read-only registers.
        unsafe {
            (core::ptr::addr_of!(regs.fifo_lo) as *mut u64).write_volatile(lo);
            (core::ptr::addr_of!(regs.fifo_hi) as *mut u64).write_volatile(hi);
        }
        assert_eq!(fifo.pop(), Ok(Some(e)));
    }

    #[test]
    fn the_pd_page_driver_encodes_rapf() {
        let regs = page::<PdRegisters>();
        // SAFETY: the RAM page stands for a PD page in this test.
        let mut pd = unsafe { PdPage::new(addr(&*regs)) };
        let req = RapfRequest { node: 1, tid: 2, seq: 3, action: RapfAction::Retry, claimed_pd: 4 };
        assert_eq!(pd.rapf(&req), Ok(()));
        assert_eq!(peek::<_, u64>(&regs.rapf), req.encode().unwrap());
        let bad = RapfRequest { tid: 0x4000, ..req };
        assert_eq!(pd.rapf(&bad), Err(PdPageError::Rapf(RapfError::BadTid(0x4000))));
        pd.ring(17);
        assert_eq!(peek::<_, u32>(&regs.doorbell), 17);
        assert!(!pd.refused());
    }
}
