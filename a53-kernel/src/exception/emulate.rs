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
        let mut bus =
            SlotBus { translate: |va| translate(va).filter(|&pa| is_forwarded(pa)), request: &mut self.request };
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exception::esr::Esr;
    use proto::forward::{Failure, Status};
    use std::vec::Vec;

    /// The forwarded page: virtual `VA`, physical `PA`.
    const VA: u64 = 0x1000_0000;
    const PA: u64 = 0x8_8000_0000;
    const ELR: u64 = 0x40_1000;
    /// Translation faults, level 3: from EL0 (a read), from EL1 (a read and a write).
    const USER_READ: Esr = Esr(0x9200_0007);
    const KERNEL_READ: Esr = Esr(0x9600_0007);
    const KERNEL_WRITE: Esr = Esr(0x9600_0047);
    const LDR_X1_X0: u32 = 0xf940_0001;
    const STR_X1_X0: u32 = 0xf900_0001;
    const LDP_X1_X2_X0: u32 = 0xa940_0801;
    const LDR_X1_SP_POST_8: u32 = 0xf840_87e1;
    const NOP: u32 = 0xd503_201f;

    /// Serves one fault on `VA` (the page at `VA` maps to `PA`, which the platform serves) with
    /// instruction `word`; the device answers `answer`. Returns the resolution, the accesses
    /// made and what was reported undecodable.
    fn serve(
        frame: &mut ExceptionFrame,
        esr: Esr,
        from_user: bool,
        word: u32,
        answer: Result<[u128; 2], ForwardError>,
    ) -> (Resolution, Vec<Access>, bool) {
        let mut accesses = Vec::new();
        let mut reported = false;
        let fault = Fault { esr, far: frame.x[0], elr: ELR, from_user };
        let resolution = Forwarding {
            translate: |va: u64| (va & !0xfff == VA).then(|| PA + (va & 0xfff)),
            is_forwarded: |pa: u64| pa & !0xfff == PA,
            request: |a: &Access| {
                accesses.push(*a);
                answer
            },
        }
        .serve(frame, &fault, || word, |_| reported = true);
        (resolution, accesses, reported)
    }

    fn frame_at(addr: u64) -> ExceptionFrame {
        let mut frame = ExceptionFrame { elr: ELR, ..ExceptionFrame::default() };
        frame.x[0] = addr;
        frame
    }

    #[test]
    fn a_load_reads_through_the_slot_and_resumes_after_the_instruction() {
        let mut frame = frame_at(VA + 8);
        let (resolution, accesses, _) = serve(&mut frame, KERNEL_READ, false, LDR_X1_X0, Ok([0x1234, 0]));
        assert_eq!(resolution, Resolution::Resume);
        assert_eq!(accesses, [Access::single(false, 8, PA + 8, 0)]);
        assert_eq!((frame.x[1], frame.elr), (0x1234, ELR + 4));
    }

    #[test]
    fn a_store_sends_its_register_and_a_pair_goes_as_one_burst() {
        let mut frame = frame_at(VA);
        frame.x[1] = 0xdead_beef;
        let (resolution, accesses, _) = serve(&mut frame, KERNEL_WRITE, false, STR_X1_X0, Ok([0, 0]));
        assert_eq!(resolution, Resolution::Resume);
        assert_eq!(accesses, [Access::single(true, 8, PA, 0xdead_beef)]);

        let mut frame = frame_at(VA);
        let (_, accesses, _) = serve(&mut frame, USER_READ, true, LDP_X1_X2_X0, Ok([7, 9]));
        assert_eq!(accesses.len(), 1);
        assert!(accesses[0].pair && accesses[0].addr == PA);
        assert_eq!((frame.x[1], frame.x[2]), (7, 9));
    }

    #[test]
    fn faults_that_are_not_forwarded_accesses_are_left_to_the_other_handlers() {
        let permission = Esr(0x9600_004f);
        let instruction_abort = Esr(0x8600_0007);
        for (esr, addr) in [(permission, VA), (instruction_abort, VA), (KERNEL_READ, VA + 0x1000)] {
            let mut frame = frame_at(addr);
            let (resolution, accesses, _) = serve(&mut frame, esr, false, LDR_X1_X0, Ok([0, 0]));
            assert_eq!((resolution, accesses.len(), frame.elr), (Resolution::NotMine, 0, ELR), "{esr:?} at {addr:#x}");
        }
    }

    #[test]
    fn an_instruction_the_emulator_does_not_know_is_reported_and_fails_at_elr() {
        let mut frame = frame_at(VA);
        let (resolution, accesses, reported) = serve(&mut frame, KERNEL_READ, false, NOP, Ok([0, 0]));
        assert_eq!(resolution, note("forwarded access with an unsupported instruction", ELR));
        assert!(reported && accesses.is_empty());
    }

    #[test]
    fn sp_write_back_is_refused_in_the_kernel_and_done_for_a_process() {
        let mut frame = frame_at(VA);
        let (resolution, accesses, _) = serve(&mut frame, KERNEL_READ, false, LDR_X1_SP_POST_8, Ok([0, 0]));
        assert_eq!(resolution, note("forwarded access with SP write-back in the kernel", ELR));
        assert!(accesses.is_empty());

        let mut frame = frame_at(VA);
        frame.sp_el0 = VA + 16;
        let (resolution, accesses, _) = serve(&mut frame, USER_READ, true, LDR_X1_SP_POST_8, Ok([5, 0]));
        assert_eq!(resolution, Resolution::Resume);
        assert_eq!(accesses, [Access::single(false, 8, PA + 16, 0)]);
        assert_eq!((frame.x[1], frame.sp_el0), (5, VA + 24));
    }

    #[test]
    fn a_device_failure_fails_the_fault_with_its_physical_address() {
        let answers = [
            (Status::Unmapped, "forwarded access to an address no device model serves"),
            (Status::Rejected, "forwarded access the device rejected (size or alignment)"),
            (Status::DeviceError, "forwarded access the device failed"),
        ];
        for (status, what) in answers {
            let mut frame = frame_at(VA + 0x10);
            let failure = Err(ForwardError::Host(Failure { status, second: false }));
            let (resolution, _, _) = serve(&mut frame, KERNEL_READ, false, LDR_X1_X0, failure);
            assert_eq!(resolution, note(what, PA + 0x10));
            assert_eq!(frame.elr, ELR, "the instruction is not skipped");
        }
    }
}
