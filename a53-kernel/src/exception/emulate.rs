//! Serving a trapped access to a forwarded region (`docs/hw/forwarding.md`): which faults are
//! forwarded accesses, the instruction decoded and emulated against the saved frame, the bus its
//! accesses go to, and what a failure is reported as. Plain logic, host-tested; `forward` owns
//! the channel the accesses travel on.

use super::esr::{ExceptionClass, FaultStatus};
use super::fault::{Fault, FaultNote, Resolution};
use boot::frame::ExceptionFrame;
use hal::mmio_trap::{BusError, EmulateError, a64};
use proto::forward::{Access, ForwardError, SlotBus};

/// Where a trapped access may go, and how it gets there.
pub struct Forwarding<T, P, R> {
    /// The faulting context's virtual address to physical: the kernel's linear map, or the
    /// running process's interface pages.
    pub translate: T,
    /// Whether the platform serves a physical address.
    pub is_forwarded: P,
    /// Sends one access (or pair) through this core's slot.
    pub request: R,
}

/// The saved frame as the emulator's register file.
struct FrameRegs<'a> {
    frame: &'a mut ExceptionFrame,
    from_user: bool,
}

impl a64::RegisterFile for FrameRegs<'_> {
    fn x(&self, n: u8) -> u64 {
        self.frame.x[n as usize]
    }
    fn set_x(&mut self, n: u8, value: u64) {
        self.frame.x[n as usize] = value;
    }
    fn sp(&self) -> u64 {
        if self.from_user {
            self.frame.sp_el0
        } else {
            // SP_EL1 before the exception: the vectors pushed exactly one frame.
            self.frame as *const ExceptionFrame as u64 + size_of::<ExceptionFrame>() as u64
        }
    }
    fn set_sp(&mut self, value: u64) {
        // Kernel SP write-back is refused before emulation (see `serve`).
        if self.from_user {
            self.frame.sp_el0 = value;
        }
    }
    fn v(&self, n: u8) -> u128 {
        self.frame.q[n as usize]
    }
    fn set_v(&mut self, n: u8, value: u128) {
        self.frame.q[n as usize] = value;
    }
}

fn note(what: &'static str, addr: u64) -> Resolution {
    Resolution::Failed(FaultNote { what, addr })
}

impl<T, P, R> Forwarding<T, P, R>
where
    T: Fn(u64) -> Option<u64>,
    P: Fn(u64) -> bool,
    R: FnMut(&Access) -> Result<[u128; 2], ForwardError>,
{
    /// Serves `fault` if it is a translation fault on a forwarded address: decodes `word` (the
    /// instruction at ELR), emulates it against `frame` and resumes after it; an instruction
    /// the emulator does not know is reported to `undecodable` and fails the fault.
    pub fn serve(
        &mut self,
        frame: &mut ExceptionFrame,
        fault: &Fault,
        word: impl FnOnce() -> u32,
        undecodable: impl FnOnce(&dyn core::fmt::Display),
    ) -> Resolution {
        use ExceptionClass::{DataAbortLower, DataAbortSame};
        if !matches!(fault.esr.class(), DataAbortSame | DataAbortLower)
            || !matches!(fault.esr.fault_status(), FaultStatus::Translation { .. })
        {
            return Resolution::NotMine;
        }
        // The kernel's own views (linear map), or a process's interface pages, which it holds
        // and may access; any other user address is a real fault.
        match (self.translate)(fault.far) {
            Some(pa) if (self.is_forwarded)(pa) => {}
            _ => return Resolution::NotMine,
        }
        let access = match a64::decode(fault.elr, word()) {
            Ok(a) => a,
            Err(e) => {
                undecodable(&e);
                return note("forwarded access with an unsupported instruction", fault.elr);
            }
        };
        if access.rn == 31 && access.addressing.writeback() && !fault.from_user {
            return note("forwarded access with SP write-back in the kernel", fault.elr);
        }
        let mut regs = FrameRegs { frame, from_user: fault.from_user };
        let (translate, is_forwarded) = (&self.translate, &self.is_forwarded);
        let mut bus = SlotBus { translate: |va| translate(va).filter(|&pa| is_forwarded(pa)), request: &mut self.request };
        match a64::execute(&access, &mut regs, &mut bus) {
            Ok(done) => {
                frame.elr += done.pc_advance;
                Resolution::Resume
            }
            Err(EmulateError::Bus { addr, error, .. }) => {
                let pa = (self.translate)(addr).unwrap_or(addr);
                match error {
                    BusError::Unmapped => note("forwarded access to an address no device model serves", pa),
                    BusError::Rejected => note("forwarded access the device rejected (size or alignment)", pa),
                    BusError::Timeout => note("forwarded access the platform never answered", pa),
                    _ => note("forwarded access the device failed", pa),
                }
            }
            Err(_) => note("forwarded access failed", (self.translate)(fault.far).unwrap_or(fault.far)),
        }
    }
}
