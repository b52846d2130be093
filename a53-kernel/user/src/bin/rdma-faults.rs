//! `rdma-faults`: RDMA transfers on demand-paged memory (`docs/hw/pldma.md`, "Fault handling").
//! The thread argument is `args::rdma_faults::pack(role)`:
//!
//! - `Local`: two regions (`sys::map`), a source and a destination of 1 MiB. For every size of
//!   the seed's matrix (16 B to 1 MiB) and every case (the source, the destination or both with
//!   pages evicted, `sys::evict`), the source is filled with a pattern and the destination with
//!   0xEE, the pages of the case are evicted (every other page, or the one page of a small
//!   transfer), and the source is written to the destination through the engine. The transfer
//!   must complete, and the destination must hold the source's bytes: the pattern where the
//!   source page stayed resident, zeros where it was evicted (a page faulted in is zeroed).
//!   Then the error cases: a write into a read-only region and a write from an address outside
//!   every region each end in FaultLocal, and the process goes on: a last transfer completes.
//!
//! The test around it (`a53-kernel/ktest/src/rdma.rs`) checks that no timeout fired.
//!
//! Exit status: 0; 1..=0x3f a failed check (logged); otherwise an error status (`README.md`).
#![no_std]
#![no_main]

use unimem_user::args::rdma_faults::{Role, unpack};
use unimem_user::rdma::{CqeStatus, Direction, HwDoorbell, Rdma, Status};
use unimem_user::{Error, board_id, ensure, log, sys, thread_argument};

unimem_user::entry!(main);

const PAGE: usize = 4096;
const REGION: usize = 1 << 20;
/// The seed's sizes (chapter 4).
const SIZES: [usize; 9] = [16, 64, 256, 1024, 4096, 16 << 10, 32 << 10, 64 << 10, 1 << 20];
const TRANSFER_US: u64 = 60_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Case {
    Source,
    Destination,
    Both,
}

fn main() -> Result<u64, Error> {
    match unpack(thread_argument()?).ok_or(Error::NoArgument)? {
        Role::Local => local(),
    }
}

fn pattern(i: usize) -> u8 {
    (i.wrapping_mul(167) ^ (i >> 9)) as u8 | 1
}

/// The region's bytes at `va`.
///
/// # Safety
///
/// `[va, va + len)` lies in a region of this process, and no other reference to it lives.
unsafe fn bytes<'a>(va: u64, len: usize) -> &'a mut [u8] {
    // SAFETY: forwarded from the caller.
    unsafe { core::slice::from_raw_parts_mut(va as *mut u8, len) }
}

/// Whether byte `i` of a `len`-byte transfer lies in a page [`evict_pages`] evicts: the pages
/// whose index has parity `odd`, or the only page of a transfer within one page.
fn evicted(len: usize, odd: bool, i: usize) -> bool {
    len <= PAGE || ((i / PAGE) % 2 == 1) == odd
}

/// Evicts those pages of `[va, va + len)`; returns how many of them were resident.
fn evict_pages(va: u64, len: usize, odd: bool) -> Result<u64, Error> {
    let mut resident = 0;
    for page in (0..len.div_ceil(PAGE)).filter(|&p| evicted(len, odd, p * PAGE)) {
        resident += sys::evict(va + (page * PAGE) as u64, PAGE as u64)?;
    }
    Ok(resident)
}

fn local() -> Result<u64, Error> {
    let me = board_id()?;
    let rdma = unimem_user::rdma::open()?;
    let src = sys::map(REGION as u64, true)?;
    let dst = sys::map(REGION as u64, true)?;
    let mut faults = 0usize;
    for len in SIZES {
        for case in [Case::Source, Case::Destination, Case::Both] {
            // SAFETY: both ranges lie in this process's regions; the slices are dropped before
            // the pages are evicted (the kernel changes them behind no live reference).
            unsafe { bytes(src, len) }.iter_mut().enumerate().for_each(|(i, b)| *b = pattern(i));
            // SAFETY: as above.
            unsafe { bytes(dst, len) }.fill(0xee);
            let source_faults = matches!(case, Case::Source | Case::Both);
            let pages = len.div_ceil(PAGE);
            if source_faults {
                let resident = evict_pages(src, len, true)?;
                let expected = (0..pages).filter(|&p| evicted(len, true, p * PAGE)).count();
                ensure!(resident as usize == expected, 6, "{} of {} source pages were resident", resident, expected);
            }
            if matches!(case, Case::Destination | Case::Both) {
                evict_pages(dst, len, false)?;
            }
            faults += 1;
            // SAFETY: as above; the engine reads the source while this slice lives.
            let source = unsafe { bytes(src, len) };
            let t = rdma.write(source, me, dst)?;
            let done = t.wait(TRANSFER_US);
            drop(t);
            ensure!(done == Ok(len as u32), 1, "{:?} write of {} B: {:?}", case, len, done);
            // SAFETY: as above; the transfer has ended.
            let landed = unsafe { bytes(dst, len) };
            let wrong = landed
                .iter()
                .enumerate()
                .position(|(i, &b)| b != if source_faults && evicted(len, true, i) { 0 } else { pattern(i) });
            ensure!(wrong.is_none(), 2, "{:?} write of {} B: byte {:?} wrong", case, len, wrong);
        }
    }
    log!("{} faulting writes of 16 B to 1 MiB: every byte right", faults);
    errors(&rdma, me, src, dst)
}

/// A write into a read-only region and one from outside every region end in FaultLocal; then
/// a transfer between the regions still completes.
fn errors(rdma: &Rdma<HwDoorbell>, me: u16, src: u64, dst: u64) -> Result<u64, Error> {
    let read_only = sys::map(PAGE as u64, false)?;
    // SAFETY: the source region; no other reference lives.
    let source = unsafe { bytes(src, 256) };
    let e = rdma.write(source, me, read_only)?.wait(TRANSFER_US);
    ensure!(e == Err(Error::Transfer(CqeStatus::FaultLocal)), 3, "a write into a read-only region: {:?}", e);
    let outside = proto::syscall::layout::REGIONS_END - PAGE as u64;
    // SAFETY: the engine reads nothing it may not: the address is in no region (that is the test).
    let tag = unsafe { rdma.with_queues(|q| q.post(Direction::Write, outside, 256, me, dst)) }?;
    let e = rdma.with_queues(|q| q.wait(tag, TRANSFER_US));
    rdma.with_queues(|q| q.release(tag));
    ensure!(e == Ok(Status::Failed(CqeStatus::FaultLocal)), 4, "a write from outside every region: {:?}", e);
    let e = rdma.write(source, me, dst)?.wait(TRANSFER_US);
    ensure!(e == Ok(256), 5, "a transfer after the errors: {:?}", e);
    sys::unmap(read_only, PAGE as u64)?;
    log!("a read-only destination and a source outside every region: FaultLocal; the process goes on");
    Ok(0)
}
