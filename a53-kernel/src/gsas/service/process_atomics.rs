//! Process atomics (opcodes 0x50..=0x5F, `docs/hw/gsas-packets.md`, "Process atomics"): the
//! address is a virtual address in the process of the sender's protection domain on this node,
//! not a shared page of the software MMU.
//!
//! Checks, after `proto::gsas::static_check` (opcode and reserved byte, node, alignment, unused
//! arguments zero, the arguments fit the width: 32-bit forms both at most `0xffff_ffff`, else
//! `BadArgument`), in this order: the sender has a job's PD (not a kernel domain, not PD 15:
//! else `NoProcess`); a live process of that PD is on this node (`NoProcess`); the address is its
//! user memory (`Unmapped`); a write (every op but `Fetch`) is to a writable page
//! (`PermissionDenied`); a page not resident yet gets its frame as at a first touch
//! (`OutOfMemory` when none is left). Then the op, one atomic read-modify-write.

use super::{Env, VaFault};
use hal::pldma::Pd;
use proto::gsas::{ErrorCode, Pid, Request, VaOp, VaWidth};
use proto::rdma::domain::{NO_RDMA, PD_BITS, pd_of_domain};

/// Serves process atomic `op` at `width` (`r`'s opcode, after the static checks): the old value.
/// The software MMU has no part in it.
pub(super) fn serve(r: &Request, op: VaOp, width: VaWidth, env: &mut Env<'_>) -> Result<u64, ErrorCode> {
    let pd = job_pd(r.sender).ok_or(ErrorCode::NoProcess)?;
    let Env { memory, processes, .. } = env;
    let (arg1, arg2) = (r.arg1, r.arg2);
    let mut apply = |pa: u64| memory.va_atomic(pa, op, width, arg1, arg2);
    processes.with_word(pd, r.address.offset(), op != VaOp::Fetch, &mut apply).map_err(|fault| match fault {
        VaFault::NoProcess => ErrorCode::NoProcess,
        VaFault::Unmapped => ErrorCode::Unmapped,
        VaFault::ReadOnly => ErrorCode::PermissionDenied,
        VaFault::NoFrame => ErrorCode::OutOfMemory,
        VaFault::Memory => ErrorCode::MemoryFault,
    })
}

/// The job PD of the sender: none for a kernel domain (serial 0, `proto::rdma::domain`) or for
/// PD 15 (`NO_RDMA`, which unrelated jobs share).
pub fn job_pd(sender: Pid) -> Option<Pd> {
    let domain = sender.domain();
    let pd = pd_of_domain(domain);
    (domain >> PD_BITS != 0 && pd != NO_RDMA).then_some(pd)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gsas::fakes::FakeBackends;
    use crate::gsas::service::{AtomicService, LocalMemory, Outcome, ServiceConfig, Width};
    use ErrorCode::*;
    use proto::gsas::{GlobalAddress, Opcode, PAGE_SIZE, Response, va_opcode};
    use proto::rdma::domain::domain_of;
    use std::vec::Vec;

    const NODE: u16 = 1;
    const JOB: Pd = match Pd::new(3) {
        Some(pd) => pd,
        None => panic!(),
    };
    /// A page of the process: resident, writable.
    const DATA: u64 = 0x0041_0000;
    /// Resident, read-only.
    const RODATA: u64 = 0x0040_1000;
    /// Not resident yet, writable.
    const FRESH: u64 = 0x10_0000_0000;

    fn pid(node: u16, domain: u16) -> Pid {
        Pid::new(node, domain, 0, 5).unwrap()
    }

    /// A sender of PD `pd` (serial 2), on node 0.
    fn member(pd: Pd) -> Pid {
        pid(0, domain_of(pd, 2).unwrap())
    }

    struct T {
        svc: AtomicService,
        be: FakeBackends,
        /// The frame of `DATA`.
        data: u64,
    }

    impl T {
        /// A node with one process of `JOB` (pages `DATA`, `RODATA`, `FRESH`).
        fn new() -> Self {
            let config = ServiceConfig { node: NODE, max_alloc_pages: 8, mmu_bucket_bits: 3, mmu_capacity: 12 };
            let mut be = FakeBackends::new(4);
            let p = be.processes.add(JOB);
            let data = be.processes.spare.pop().unwrap();
            let rodata = be.processes.spare.pop().unwrap();
            be.processes.page(p, DATA, Some(data), true);
            be.processes.page(p, RODATA, Some(rodata), false);
            be.processes.page(p, FRESH, None, true);
            Self { svc: AtomicService::new(config).unwrap(), be, data }
        }

        fn call(&mut self, sender: Pid, opcode: Opcode, va: u64, arg1: u64, arg2: u64) -> Result<u64, ErrorCode> {
            let address = GlobalAddress::new(NODE, va).unwrap();
            let req = Request { sender, opcode, address, arg1, arg2 };
            let Outcome::Reply(r) = self.svc.handle(&req.encode(), &mut self.be.env()) else { panic!("dropped") };
            assert_eq!(r.len(), 1, "one status reply");
            let s = r.status();
            match s.error {
                None => Ok(s.result),
                Some(e) => {
                    assert_eq!(s, Response::err(e), "errors carry 0");
                    Err(e)
                }
            }
        }

        fn word(&mut self, pa: u64) -> u64 {
            self.be.memory.load(pa, Width::U64).unwrap()
        }
    }

    #[test]
    fn every_op_at_both_widths_returns_the_old_value_and_leaves_what_the_protocol_says() {
        let mut t = T::new();
        let who = member(JOB);
        for width in [VaWidth::W32, VaWidth::W64] {
            let mask = if width == VaWidth::W32 { 0xffff_ffff } else { u64::MAX };
            for op in VaOp::ALL {
                for (arg1, arg2) in [(0x0f0f_0f0f_0000_ffffu64 & mask, 0x7777 & mask), (0x1111_2222 & mask, 5)] {
                    // The 32-bit word is the low half of the 64-bit one (little-endian): its
                    // high half must stay as it was.
                    let before = 0xdead_beef_1111_2222u64;
                    t.be.memory.store(t.data + 8, Width::U64, before).unwrap();
                    let uses = va_opcode(op, width).uses_args();
                    let (a1, a2) = (if uses.0 { arg1 } else { 0 }, if uses.1 { arg2 } else { 0 });
                    let got = t.call(who, va_opcode(op, width), DATA + 8, a1, a2);
                    assert_eq!(got, Ok(before & mask), "{op:?} {width:?}: the old value, zero-extended");
                    let new = op.apply(before & mask, a1, a2, width).unwrap_or(before & mask);
                    let expect = (before & !mask) | new;
                    assert_eq!(t.word(t.data + 8), expect, "{op:?} {width:?} {a1:#x} {a2:#x}");
                }
            }
        }
        assert_eq!(t.be.processes.applied, 2 * 8 * 2);
    }

    #[test]
    fn compare_swap_swaps_only_on_a_match_and_answers_the_old_value() {
        let mut t = T::new();
        let who = member(JOB);
        let cas = va_opcode(VaOp::CompareSwap, VaWidth::W64);
        t.be.memory.store(t.data, Width::U64, 7).unwrap();
        assert_eq!(t.call(who, cas, DATA, 6, 9), Ok(7), "no match: the old value");
        assert_eq!(t.word(t.data), 7);
        assert_eq!(t.call(who, cas, DATA, 7, 9), Ok(7), "a match: the old value too");
        assert_eq!(t.word(t.data), 9);
    }

    #[test]
    fn a_page_not_resident_gets_its_frame_at_the_first_atomic() {
        let mut t = T::new();
        let who = member(JOB);
        let spare = t.be.processes.spare.len();
        let add = va_opcode(VaOp::FetchAdd, VaWidth::W64);
        assert_eq!(t.call(who, add, FRESH + 0x10, 5, 0), Ok(0), "a fresh page reads zero");
        assert_eq!(t.call(who, add, FRESH + 0x10, 5, 0), Ok(5), "the same frame the second time");
        assert_eq!(t.be.processes.spare.len(), spare - 1, "one frame for the page");
        t.be.processes.spare.clear();
        t.be.processes.page(0, FRESH + PAGE_SIZE, None, true);
        assert_eq!(t.call(who, add, FRESH + PAGE_SIZE, 1, 0), Err(OutOfMemory), "no frame left");
    }

    #[test]
    fn every_error_in_its_order() {
        let mut t = T::new();
        let who = member(JOB);
        let set32 = va_opcode(VaOp::Set, VaWidth::W32);
        let cas32 = va_opcode(VaOp::CompareSwap, VaWidth::W32);
        let fetch = va_opcode(VaOp::Fetch, VaWidth::W64);
        let swap = va_opcode(VaOp::Swap, VaWidth::W64);
        let kernel = pid(0, 0);
        let no_rdma = member(NO_RDMA);
        let other_job = member(Pd::new(4).unwrap());
        let cases: &[(Pid, Opcode, u64, u64, u64, ErrorCode)] = &[
            // The static checks come first (`proto::gsas::static_check`).
            (who, fetch, DATA + 4, 0, 0, Unaligned),
            (who, fetch, DATA, 1, 0, BadArgument),
            (who, set32, DATA, 0, 1, BadArgument),
            // The width of the arguments, before anything about the sender.
            (kernel, set32, DATA, 1 << 32, 0, BadArgument),
            (who, cas32, DATA, 1, 1 << 32, BadArgument),
            // The sender's PD and its process here.
            (kernel, fetch, DATA, 0, 0, NoProcess),
            (pid(0, 3), fetch, DATA, 0, 0, NoProcess),
            (no_rdma, fetch, DATA, 0, 0, NoProcess),
            (other_job, fetch, DATA, 0, 0, NoProcess),
            // The address in that process, then the right to write it.
            (other_job, fetch, 0x20_0000_0000, 0, 0, NoProcess),
            (who, fetch, 0x20_0000_0000, 0, 0, Unmapped),
            (who, swap, RODATA, 1, 0, PermissionDenied),
        ];
        for &(sender, opcode, va, a1, a2, code) in cases {
            assert_eq!(t.call(sender, opcode, va, a1, a2), Err(code), "{sender:?} {opcode:?} {va:#x} {a1:#x} {a2:#x}");
        }
        assert_eq!(t.be.processes.applied, 0, "no refused request reached memory");
        assert_eq!(t.call(who, fetch, RODATA, 0, 0), Ok(0), "a fetch only reads: a read-only page serves it");
        assert_eq!(t.call(who, set32, DATA, u64::from(u32::MAX), 0), Ok(0), "the widest 32-bit argument");
    }

    #[test]
    fn a_process_that_ended_answers_no_process() {
        let mut t = T::new();
        let who = member(JOB);
        let fetch = va_opcode(VaOp::Fetch, VaWidth::W64);
        assert_eq!(t.call(who, fetch, DATA, 0, 0), Ok(0));
        t.be.processes.processes[0].alive = false;
        assert_eq!(t.call(who, fetch, DATA, 0, 0), Err(NoProcess));
    }

    #[test]
    fn the_senders_job_is_the_pd_of_its_domain_only_for_processes_of_a_job() {
        let pds: Vec<Option<u16>> =
            [0u16, 3, 0x13, 0x1f, 0x1e, 0xfff3].iter().map(|&d| job_pd(pid(2, d)).map(Pd::raw)).collect();
        assert_eq!(pds, [None, None, Some(3), None, Some(14), Some(3)]);
    }
}
