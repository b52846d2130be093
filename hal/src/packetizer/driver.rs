//! Drivers: a packetizer interface page (PIF, used by its thread or the atomic service) and the
//! trusted interface page (TIF, the kernel's). `docs/hw/packetizer.md`.

use super::regs::{PifRegisters, STATUS, TifRegisters};
use crate::mmio::{Mmio, write_u128_pair};
use tock_registers::LocalRegisterCopy;
use tock_registers::interfaces::{Readable, Writeable};

/// How a send ended (`docs/hw/packetizer.md`, "Status bits").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendStatus {
    /// The destination queued the whole packet.
    Ack,
    /// The destination's FIFO had no room: nothing was queued; send again later.
    Nack,
    /// The packet could not be sent (interface not enabled, bad destination): nothing was sent.
    Illegal,
    /// A write landed while a packet was pending on this interface (software error).
    Overwritten,
    /// The destination node is gone (died, or its links are down): nothing was delivered, and
    /// sending again will not help.
    Unreachable,
    /// PEND did not clear within the polls allowed.
    Stuck,
}

impl SendStatus {
    /// What a status read with `PEND` clear says of the last send. A dropped write comes
    /// first: whatever went (or did not), it was not what the writer meant to send.
    pub fn settled(status: LocalRegisterCopy<u32, STATUS::Register>) -> Self {
        if status.is_set(STATUS::OVERWR_BUF) {
            SendStatus::Overwritten
        } else if status.is_set(STATUS::ILLEGAL) {
            SendStatus::Illegal
        } else if status.is_set(STATUS::UNREACH) {
            SendStatus::Unreachable
        } else if status.is_set(STATUS::ACK) {
            SendStatus::Ack
        } else {
            // NACK, or PEND cleared without an answer (CLR_REQ): not delivered.
            SendStatus::Nack
        }
    }
}

/// Polls of `status` while a packet is pending before giving up.
const PEND_POLLS: u32 = 1_000_000;

/// A packetizer interface page: one sender.
pub struct Pif {
    regs: Mmio<PifRegisters>,
    /// The last send settled (PEND was seen clear), so the next needs no status read first.
    settled: bool,
}

impl Pif {
    /// # Safety
    ///
    /// `base` must map a PIF page that only the caller's thread uses (see [`Mmio::new`]).
    pub const unsafe fn new(base: usize) -> Self {
        // SAFETY: forwarded from the caller.
        Self { regs: unsafe { Mmio::new(base) }, settled: false }
    }

    /// Whether a packet is still on its way (STATUS.PEND).
    pub fn pending(&self) -> bool {
        self.regs.status.is_set(STATUS::PEND)
    }

    /// Sends one packet: `payload[0]`'s low 48 bits are replaced by the hardware's PID; waits
    /// for the destination's answer. Both payload registers are written with one pair store
    /// (`stp q, q`: one burst, `docs/hw/packetizer.md`).
    pub fn send(&mut self, payload: [u128; 2], destination: u64) -> SendStatus {
        let mut polls = 0;
        // Only this value sends through the page: after a send that settled, nothing is pending.
        while !self.settled && self.pending() {
            polls += 1;
            if polls > PEND_POLLS {
                return SendStatus::Stuck;
            }
        }
        self.settled = false;
        // SAFETY: payload0 and payload1 of this (mapped) page, adjacent and 16-byte aligned.
        unsafe { write_u128_pair(core::ptr::addr_of!(self.regs.payload0) as *mut u128, payload) };
        self.regs.destination.set(destination);
        loop {
            let status = self.regs.status.extract();
            if !status.is_set(STATUS::PEND) {
                self.settled = true;
                return SendStatus::settled(status);
            }
            polls += 1;
            if polls > PEND_POLLS {
                return SendStatus::Stuck;
            }
        }
    }
}

/// The trusted interface page: the PID table and the interface enables, the kernel's.
pub struct Tif {
    regs: Mmio<TifRegisters>,
}

impl Tif {
    /// # Safety
    ///
    /// `base` must map the TIF page, used by the kernel's atomicity driver only.
    pub const unsafe fn new(base: usize) -> Self {
        // SAFETY: forwarded from the caller.
        Self { regs: unsafe { Mmio::new(base) } }
    }

    /// The vmbox window every destination must be in (`super::base_dest`).
    pub fn set_base_dest(&mut self, base_dest: u64) {
        self.regs.base_dest.set(base_dest);
    }

    /// Interface `index` sends with `pid` from now on, and is enabled.
    pub fn grant(&mut self, index: usize, pid: u64) {
        self.regs.pidt[index].set(pid);
        let conf = self.regs.pid_conf.get();
        self.regs.pid_conf.set(conf | 1 << index);
    }

    /// Interface `index` can no longer send; whatever it had written or pending is dropped.
    pub fn revoke(&mut self, index: usize) {
        let conf = self.regs.pid_conf.get();
        self.regs.pid_conf.set(conf & !(1 << index));
        self.regs.clr_req.set(1 << index);
    }
}
