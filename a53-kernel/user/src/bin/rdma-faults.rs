//! `rdma-faults`: RDMA transfers on demand-paged memory (`docs/hw/pldma.md`, "Fault handling").
//! The thread argument is `args::rdma_faults::pack(role)`:
//!
//! - `Local`: two regions (`sys::map`), a source and a destination of 1 MiB. For every size of
//!   the seed's matrix (16 B to 1 MiB) and every case (the source, the destination or both with
//!   pages evicted, `sys::evict`), the source is filled with a pattern and the destination with
//!   0xEE, the pages of the case are evicted (every other page, or the one page of a small
//!   transfer; in a fourth case every page of both sides), and the source is written to the
//!   destination through the engine. The transfer must complete, and the destination must hold
//!   the source's bytes: the pattern where the source page stayed resident, zeros where it was
//!   evicted (a page faulted in is zeroed).
//!   Then the error cases: a write into a read-only region and a write from an address outside
//!   every region each end in FaultLocal, and the process goes on: a last transfer completes.
//!
//! - `Remote { node }` / `Peer { node }`: the same matrix between two nodes. The peer (a remote
//!   spawn: same PD, same program, so its regions have the same addresses) maps the same two
//!   regions; before each write the writer asks it (opcode 8, payload: length and case) to fill
//!   its destination with 0xEE and evict the case's pages, and after it (opcode 10) to check the
//!   bytes; the peer answers each (opcodes 9 and 11, payload 0 when right). Opcode 12 ends it.
//!   Destination faults are resolved by the peer's kernel (a RAPF to the writer's R5), source
//!   faults by the writer's.
//!
//! - `Time { log2, side, faulting, tag }` (`cargo xtask bench pagefault`): `TIME_REPS` writes of
//!   2^`log2` bytes between its regions, each after evicting every page of `side` (or none);
//!   logs `bench pagefault_<tag>_<side>_<bytes>b_<faulting|resident>_us: <median> us`.
//!
//! The test around it (`a53-kernel/ktest/src/rdma.rs`) checks that no timeout fired.
//!
//! Exit status: 0; 1..=0x3f a failed check (logged); otherwise an error status (`README.md`).
#![no_std]
#![no_main]

use unimem_user::args::rdma_faults::{Role, Side, pack, unpack};
use unimem_user::rdma::{CqeStatus, Direction, HwDoorbell, Rdma, Status};
use unimem_user::{Error, board_id, ensure, log, receive, register, remote_spawn, sys, thread_argument};

use unimem_user::channel::{op, send, take};

unimem_user::entry!(main);

const PAGE: usize = 4096;
const REGION: usize = 1 << 20;
/// The seed's sizes (chapter 4).
const SIZES: [usize; 9] = [16, 64, 256, 1024, 4096, 16 << 10, 32 << 10, 64 << 10, 1 << 20];
const TRANSFER_US: u64 = 60_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Case {
    Source,
    Destination,
    Both,
    /// Every page of both sides non-resident: the destination must read zeros.
    All,
}

fn main() -> Result<u64, Error> {
    match unpack(thread_argument()?).ok_or(Error::NoArgument)? {
        Role::Local => local(),
        Role::Remote { node } => remote(node),
        Role::Peer { node } => peer(node),
        Role::Time { log2, side, faulting, tag } => time(1 << log2, side, faulting, tag),
    }
}

/// Writes a `Time` run makes; the median is logged.
const TIME_REPS: usize = 9;

fn time(len: usize, side: Side, faulting: bool, tag: u8) -> Result<u64, Error> {
    let me = board_id()?;
    let rdma = unimem_user::rdma::open()?;
    let src = sys::map(REGION as u64, true)?;
    let dst = sys::map(REGION as u64, true)?;
    let mut us = [0u64; TIME_REPS];
    for t in &mut us {
        // SAFETY: the regions are this process's; no other reference to them lives.
        unsafe { bytes(src, len) }.iter_mut().enumerate().for_each(|(i, b)| *b = pattern(i));
        // SAFETY: as above.
        unsafe { bytes(dst, len) }.fill(0xee);
        if faulting {
            evict_all(if side == Side::Source { src } else { dst }, len)?;
        }
        // SAFETY: as above; the engine reads the source while this slice lives.
        let source = unsafe { bytes(src, len) };
        let t0 = sys::time_us()?;
        let done = rdma.write(source, me, dst)?.wait(TRANSFER_US);
        *t = sys::time_us()? - t0;
        ensure!(done == Ok(len as u32), 30, "a timed write of {} B: {:?}", len, done);
    }
    us.sort_unstable();
    let side = if side == Side::Source { "source" } else { "destination" };
    let state = if faulting { "faulting" } else { "resident" };
    log!("bench pagefault_{}_{}_{}b_{}_us: {} us", tag, side, len, state, us[TIME_REPS / 2]);
    Ok(0)
}

const OP_PREPARE: u8 = 8;
const OP_PREPARED: u8 = 9;
const OP_CHECK: u8 = 10;
const OP_CHECKED: u8 = 11;
const OP_DONE: u8 = 12;

const CASES: [Case; 4] = [Case::Source, Case::Destination, Case::Both, Case::All];

fn job(len: usize, case: Case) -> u64 {
    len as u64 | (case as u64) << 32
}

fn unjob(payload: u64) -> Option<(usize, Case)> {
    let case = *CASES.get(usize::try_from(payload >> 32).ok()?)?;
    let len = (payload & 0xffff_ffff) as usize;
    (len > 0 && len <= REGION).then_some((len, case))
}

/// Fills the source with the pattern and the destination with 0xEE, then evicts the pages of
/// `case` that lie on this side (`local_source`, `local_destination`).
fn prepare(
    src: u64,
    dst: u64,
    len: usize,
    case: Case,
    local_source: bool,
    local_destination: bool,
) -> Result<(), Error> {
    if local_source {
        // SAFETY: the source region is this process's; no other reference to it lives.
        unsafe { bytes(src, len) }.iter_mut().enumerate().for_each(|(i, b)| *b = pattern(i));
        match case {
            Case::Source | Case::Both => evict_pages(src, len, true)?,
            Case::All => evict_all(src, len)?,
            Case::Destination => {}
        }
    }
    if local_destination {
        // SAFETY: as above, the destination region.
        unsafe { bytes(dst, len) }.fill(0xee);
        match case {
            Case::Destination | Case::Both => evict_pages(dst, len, false)?,
            Case::All => evict_all(dst, len)?,
            Case::Source => {}
        }
    }
    Ok(())
}

/// Evicts every page of `[va, va + len)`, each of them resident.
fn evict_all(va: u64, len: usize) -> Result<(), Error> {
    let pages = len.div_ceil(PAGE) as u64;
    if sys::evict(va, len as u64)? != pages {
        return Err(Error::Syscall(unimem_user::SysError::BadArgument));
    }
    Ok(())
}

/// The first wrong byte of the destination after a write of `case`, if any.
fn first_wrong(dst: u64, len: usize, case: Case) -> Option<usize> {
    let source_faults = matches!(case, Case::Source | Case::Both);
    let expected = |i| match case {
        Case::All => 0,
        _ if source_faults && evicted(len, true, i) => 0,
        _ => pattern(i),
    };
    // SAFETY: the destination region is this process's; the transfer has ended.
    let landed = unsafe { bytes(dst, len) };
    landed.iter().enumerate().position(|(i, &b)| b != expected(i))
}

fn remote(node: u16) -> Result<u64, Error> {
    let rdma = unimem_user::rdma::open()?;
    let src = sys::map(REGION as u64, true)?;
    let dst = sys::map(REGION as u64, true)?;
    register(op(OP_PREPARED))?;
    register(op(OP_CHECKED))?;
    remote_spawn(env!("CARGO_BIN_NAME"), pack(Role::Peer { node: board_id()? }), node)?;
    let mut writes = 0;
    for len in SIZES {
        for case in CASES {
            send(node, OP_PREPARE, job(len, case))?;
            prepare(src, dst, len, case, true, false)?;
            ensure!(take(OP_PREPARED)? == 0, 20, "the peer could not prepare {} B", len);
            // SAFETY: the source region; the engine reads it while this slice lives.
            let source = unsafe { bytes(src, len) };
            let done = rdma.write(source, node, dst)?.wait(TRANSFER_US);
            ensure!(done == Ok(len as u32), 21, "{:?} write of {} B to node {}: {:?}", case, len, node, done);
            send(node, OP_CHECK, job(len, case))?;
            let wrong = take(OP_CHECKED)?;
            ensure!(wrong == 0, 22, "{:?} write of {} B to node {}: byte {} wrong", case, len, node, wrong - 1);
            writes += 1;
        }
    }
    send(node, OP_DONE, 0)?;
    log!("{} faulting writes of 16 B to 1 MiB to node {}: every byte right", writes, node);
    Ok(0)
}

fn peer(writer: u16) -> Result<u64, Error> {
    let src = sys::map(REGION as u64, true)?;
    let dst = sys::map(REGION as u64, true)?;
    for o in [OP_PREPARE, OP_CHECK, OP_DONE] {
        register(op(o))?;
    }
    loop {
        let (n, _) = receive(None, true)?;
        match (n.opcode().value(), unjob(n.payload())) {
            (OP_PREPARE, Some((len, case))) => {
                let answer = u64::from(prepare(src, dst, len, case, false, true).is_err());
                send(writer, OP_PREPARED, answer)?;
            }
            (OP_CHECK, Some((len, case))) => {
                let wrong = first_wrong(dst, len, case).map_or(0, |i| i as u64 + 1);
                send(writer, OP_CHECKED, wrong)?;
            }
            (OP_DONE, _) => return Ok(0),
            _ => return Err(Error::NoArgument),
        }
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

/// Evicts those pages of `[va, va + len)`, every one of them resident (they were just
/// written): anything else is an error.
fn evict_pages(va: u64, len: usize, odd: bool) -> Result<(), Error> {
    for page in (0..len.div_ceil(PAGE)).filter(|&p| evicted(len, odd, p * PAGE)) {
        if sys::evict(va + (page * PAGE) as u64, PAGE as u64)? != 1 {
            return Err(Error::Syscall(unimem_user::SysError::BadArgument));
        }
    }
    Ok(())
}

fn local() -> Result<u64, Error> {
    let me = board_id()?;
    let rdma = unimem_user::rdma::open()?;
    let src = sys::map(REGION as u64, true)?;
    let dst = sys::map(REGION as u64, true)?;
    let mut faults = 0usize;
    for len in SIZES {
        for case in CASES {
            prepare(src, dst, len, case, true, true)?;
            faults += 1;
            // SAFETY: as above; the engine reads the source while this slice lives.
            let source = unsafe { bytes(src, len) };
            let t = rdma.write(source, me, dst)?;
            let done = t.wait(TRANSFER_US);
            drop(t);
            ensure!(done == Ok(len as u32), 1, "{:?} write of {} B: {:?}", case, len, done);
            let wrong = first_wrong(dst, len, case);
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
