//! `va-atomics NODE`: process atomics (`docs/hw/gsas-packets.md`, "Process atomics") from this
//! process on a copy of itself on node NODE (the thread argument), which a remote spawn puts in
//! this process's PD, so that the same globals are at the same addresses in both:
//!
//! - `PROGRAM_NAME` names this program, and `MAP_FIXED` places a region at
//!   `layout::SYMMETRIC_HEAP` and refuses what the ABI refuses (overlap, unaligned, outside the
//!   regions range, with `MAP_DEVICE`); `MAP` places its regions clear of it.
//! - The copy maps the same three pages at `layout::SYMMETRIC_HEAP` (touching none) and says it
//!   is ready (channel 8). Then both add 1 to a word of the third page at once, each the page's
//!   first touch (the copy's CPU faults it in while the service may be giving it a frame), and
//!   the copy adds 1 to its global `COUNTER` `LOCAL_ADDS` times with its own CPU atomics while
//!   this process adds 1 there `REMOTE_ADDS` times with `VaFetchAdd64`.
//! - Every op once at both widths on the copy's globals (`WORD`, and the low half of `PAIR`,
//!   whose high half must not change), each answering the old value; a page of the copy's
//!   heap never touched (`VaFetchAdd` finds zeros there); an unmapped address and the device
//!   window (`Unmapped`); a read-only page (`PermissionDenied` for a swap, its value for a
//!   fetch); a 32-bit form's argument above 32 bits (`BadArgument`); the same request to this
//!   node reaches this process's own globals.
//! - Released (channel 9, with `REMOTE_ADDS`), the copy checks with its own loads that it sees
//!   what the atomics wrote (the counter, the heap words, 2 in the raced word) and reports
//!   (channel 10); once it has
//!   ended, a process atomic there answers `NoProcess`.
//!
//! The copy's thread argument is `COPY | NODE` (this node). Exit status: 0; 1..=0x3f a failed
//! check (logged); otherwise an error status (`README.md`).
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use proto::gsas::{VaOp, VaWidth, va_opcode};
use proto::syscall::{MAP_DEVICE, MAP_FIXED, MAP_WRITABLE, layout, nr};
use unimem_user::channel::{send, take};
use unimem_user::{
    Error, ErrorCode, GlobalAddress, PAGE_SIZE, SysError, arguments, board_id, ensure, log, register, remote_spawn,
    request, sys, thread_argument, with_client,
};

unimem_user::entry!(main);

/// A copy's thread argument: this bit, and the node of the process that spawned it.
const COPY: u64 = 1 << 40;
const OP_READY: u8 = 8;
const OP_RELEASE: u8 = 9;
const OP_REPORT: u8 = 10;
/// Increments by the copy's CPU, and by this process's process atomics, on `COUNTER`.
const LOCAL_ADDS: u64 = 2_000_000;
const REMOTE_ADDS: u64 = 64;
/// Pages of the symmetric heap both map; the last is the one both touch first at once.
const HEAP_PAGES: u64 = 3;
/// The word both add to first.
const RACED: u64 = layout::SYMMETRIC_HEAP + (HEAP_PAGES - 1) * PAGE_SIZE + 24;
/// A VA no process maps (below the image, above the null page).
const UNMAPPED: u64 = 0x10_0000;
/// How long a copy that has ended may still answer (its exit is being collected).
const GONE_WITHIN_US: u64 = 10_000_000;

const INITIAL_WORD: u64 = 0x0123_4567_89ab_cdef;
const INITIAL_LOW: u32 = 0x8765_4321;
const HIGH: u32 = 0x5a5a_a5a5;

static WORD: AtomicU64 = AtomicU64::new(INITIAL_WORD);
/// A 64-bit word whose low half the 32-bit forms work on.
#[repr(C, align(8))]
struct Pair {
    low: AtomicU32,
    high: AtomicU32,
}
static PAIR: Pair = Pair { low: AtomicU32::new(INITIAL_LOW), high: AtomicU32::new(HIGH) };
static COUNTER: AtomicU64 = AtomicU64::new(0);
/// In `.rodata`: read-only for the process, and so for process atomics that write.
static READ_ONLY: u64 = 0x0bad_c0de_0bad_c0de;

fn main() -> Result<u64, Error> {
    // `cargo xtask run` passes it as the first argument.
    let argument = match thread_argument() {
        Err(Error::NoArgument) => arguments()?.number(0)?,
        other => other?,
    };
    let node = u16::try_from(argument & 0xffff).map_err(|_| Error::NoArgument)?;
    match argument & !0xffff {
        0 => initiator(node),
        COPY => copy(node),
        _ => Err(Error::NoArgument),
    }
}

/// The service's answer to a process atomic: the old value, or its error code.
type Answer = Result<u64, ErrorCode>;

/// A process atomic to `node` at `va`.
fn va(node: u16, op: VaOp, width: VaWidth, va: u64, arg1: u64, arg2: u64) -> Result<Answer, Error> {
    let address = GlobalAddress::new(node, va).map_err(|_| Error::NoArgument)?;
    let raw = request(va_opcode(op, width), address, arg1, arg2);
    let response = with_client(|g| g.call_raw(node, &raw))?;
    Ok(match response.error {
        None => Ok(response.result),
        Some(code) => Err(code),
    })
}

fn bad_argument() -> u64 {
    SysError::BadArgument as i64 as u64
}

fn map_fixed(len: u64, flags: u64, at: u64) -> u64 {
    sys::raw(nr::MAP, [len, flags, at, 0, 0, 0])[0]
}

fn heap() -> u64 {
    map_fixed(HEAP_PAGES * PAGE_SIZE, MAP_FIXED | MAP_WRITABLE, layout::SYMMETRIC_HEAP)
}

fn name_is_ours() -> bool {
    let mut name = [0u8; 32];
    let len = sys::raw(nr::PROGRAM_NAME, [name.as_mut_ptr() as u64, name.len() as u64, 0, 0, 0, 0])[0];
    let mut short = [0xffu8; 4];
    let whole = sys::raw(nr::PROGRAM_NAME, [short.as_mut_ptr() as u64, 2, 0, 0, 0, 0])[0];
    let ours = env!("CARGO_BIN_NAME").as_bytes();
    len == ours.len() as u64 && &name[..ours.len()] == ours && whole == len && short == [ours[0], ours[1], 0xff, 0xff]
}

fn initiator(target: u16) -> Result<u64, Error> {
    let me = board_id()?;
    ensure!(name_is_ours(), 1, "PROGRAM_NAME did not name this program");
    ensure!(heap() == layout::SYMMETRIC_HEAP, 2, "MAP_FIXED did not place the heap where asked");
    let rw_fixed = MAP_FIXED | MAP_WRITABLE;
    let refused = [
        (PAGE_SIZE, rw_fixed, layout::SYMMETRIC_HEAP + PAGE_SIZE),
        (PAGE_SIZE, rw_fixed, layout::SYMMETRIC_HEAP - PAGE_SIZE / 2),
        (PAGE_SIZE, rw_fixed, layout::IMAGE_BASE),
        (2 * PAGE_SIZE, rw_fixed, layout::REGIONS_END - PAGE_SIZE),
        (PAGE_SIZE, MAP_FIXED | MAP_DEVICE, layout::DEVICE_REGIONS_START),
    ];
    for (len, flags, at) in refused {
        ensure!(map_fixed(len, flags, at) == bad_argument(), 3, "MAP_FIXED took {:#x} ({} bytes)", at, len);
    }
    let placed = sys::map(PAGE_SIZE, true)?;
    let heap_end = layout::SYMMETRIC_HEAP + HEAP_PAGES * PAGE_SIZE;
    ensure!(!(layout::SYMMETRIC_HEAP - PAGE_SIZE..heap_end + PAGE_SIZE).contains(&placed), 4, "MAP at {:#x}", placed);

    register(unimem_user::channel::op(OP_READY))?;
    register(unimem_user::channel::op(OP_REPORT))?;
    remote_spawn(env!("CARGO_BIN_NAME"), COPY | u64::from(me), target)?;
    ensure!(take(OP_READY)? == 1, 5, "the copy could not map the heap or name itself");
    let raced = va(target, VaOp::FetchAdd, VaWidth::W64, RACED, 1, 0)?;
    ensure!(matches!(raced, Ok(0 | 1)), 14, "the raced first touch answered {:?}", raced);

    // While the copy adds with its CPU.
    let counter = COUNTER.as_ptr() as u64;
    for _ in 0..REMOTE_ADDS {
        ensure!(va(target, VaOp::FetchAdd, VaWidth::W64, counter, 1, 0)?.is_ok(), 6, "a remote add failed");
    }

    if let Some(status) = every_op(target)? {
        return Ok(status);
    }
    if let Some(status) = errors_and_fresh_pages(target)? {
        return Ok(status);
    }
    // The same request to this node reaches this process's own globals (never changed here).
    let own = va(me, VaOp::Fetch, VaWidth::W64, WORD.as_ptr() as u64, 0, 0)?;
    ensure!(own == Ok(INITIAL_WORD), 7, "a fetch from this node read {:?}", own);

    send(target, OP_RELEASE, REMOTE_ADDS)?;
    let report = take(OP_REPORT)?;
    ensure!(report == 0, 8, "the copy saw other values than the atomics left: check {}", report);
    let word = WORD.as_ptr() as u64;
    let mut gone = false;
    let give_up = sys::time_us()? + GONE_WITHIN_US;
    while !gone && sys::time_us()? < give_up {
        match va(target, VaOp::Fetch, VaWidth::W64, word, 0, 0)? {
            Err(ErrorCode::NoProcess) => gone = true,
            Ok(_) => sys::sleep_us(10_000)?,
            Err(code) => {
                log!("a fetch at a copy that is ending answered {:?}", code);
                return Ok(9);
            }
        }
    }
    ensure!(gone, 10, "the copy has ended but its PD still answers process atomics");
    log!("process atomics: every op, both widths, every refusal, {} + {} adds", LOCAL_ADDS, REMOTE_ADDS);
    Ok(0)
}

/// Every op once at each width on the copy's `WORD` and `PAIR.low`, in sequence: each answers
/// the value the previous ones left. `None` when all did.
fn every_op(target: u16) -> Result<Option<u64>, Error> {
    for width in [VaWidth::W64, VaWidth::W32] {
        let (address, mut value) = match width {
            VaWidth::W64 => (WORD.as_ptr() as u64, INITIAL_WORD),
            VaWidth::W32 => (PAIR.low.as_ptr() as u64, u64::from(INITIAL_LOW)),
        };
        let cut = |v: u64| if width == VaWidth::W32 { v & 0xffff_ffff } else { v };
        // (op, arg1, arg2): a compare-swap that misses, then one that hits.
        let steps = [
            (VaOp::Fetch, 0, 0),
            (VaOp::Set, cut(0xfedc_ba98_7654_3210), 0),
            (VaOp::CompareSwap, cut(0x1111), cut(0x2222)),
            (VaOp::CompareSwap, cut(0xfedc_ba98_7654_3210), cut(0x0f0f_0f0f_f0f0_f0f0)),
            (VaOp::Swap, cut(0x8000_0000_8000_0001), 0),
            (VaOp::FetchAdd, cut(0xffff_ffff_ffff_ffff), 0),
            (VaOp::FetchAnd, cut(0xf0f0_f0f0_ffff_00ff), 0),
            (VaOp::FetchOr, cut(0x0101_0101_0000_0f00), 0),
            (VaOp::FetchXor, cut(0xffff_0000_ffff_0000), 0),
            (VaOp::Fetch, 0, 0),
        ];
        for (op, arg1, arg2) in steps {
            let got = va(target, op, width, address, arg1, arg2)?;
            if got != Ok(value) {
                log!("{:?} {:?} answered {:?}, not the old value {:#x}", op, width, got, value);
                return Ok(Some(11));
            }
            value = op.apply(value, arg1, arg2, width).unwrap_or(value);
        }
    }
    let pair = va(target, VaOp::Fetch, VaWidth::W64, PAIR.low.as_ptr() as u64, 0, 0)?;
    let high = pair.map(|p| (p >> 32) as u32);
    if high != Ok(HIGH) {
        log!("the 32-bit ops changed the word's other half: {:?}", pair);
        return Ok(Some(12));
    }
    Ok(None)
}

/// A page never touched, the refusals. `None` when all went as the protocol says.
fn errors_and_fresh_pages(target: u16) -> Result<Option<u64>, Error> {
    let heap = layout::SYMMETRIC_HEAP;
    let cases: [(VaOp, VaWidth, u64, u64, u64, Answer); 10] = [
        (VaOp::FetchAdd, VaWidth::W64, heap + PAGE_SIZE + 8, 5, 0, Ok(0)),
        (VaOp::Fetch, VaWidth::W64, heap + PAGE_SIZE + 8, 0, 0, Ok(5)),
        (VaOp::FetchAdd, VaWidth::W32, heap + 16, 7, 0, Ok(0)),
        (VaOp::Fetch, VaWidth::W64, heap + HEAP_PAGES * PAGE_SIZE, 0, 0, Err(ErrorCode::Unmapped)),
        (VaOp::Fetch, VaWidth::W64, UNMAPPED, 0, 0, Err(ErrorCode::Unmapped)),
        (VaOp::Fetch, VaWidth::W32, layout::PIF_PAGE, 0, 0, Err(ErrorCode::Unmapped)),
        (VaOp::Swap, VaWidth::W64, core::ptr::addr_of!(READ_ONLY) as u64, 1, 0, Err(ErrorCode::PermissionDenied)),
        (VaOp::Fetch, VaWidth::W64, core::ptr::addr_of!(READ_ONLY) as u64, 0, 0, Ok(read_only())),
        (VaOp::Set, VaWidth::W32, PAIR.low.as_ptr() as u64, 1 << 32, 0, Err(ErrorCode::BadArgument)),
        (VaOp::CompareSwap, VaWidth::W32, PAIR.low.as_ptr() as u64, 0, 1 << 32, Err(ErrorCode::BadArgument)),
    ];
    for (op, width, address, arg1, arg2, expected) in cases {
        let got = va(target, op, width, address, arg1, arg2)?;
        if got != expected {
            log!("{:?} {:?} at {:#x}: {:?}, not {:?}", op, width, address, got, expected);
            return Ok(Some(13));
        }
    }
    Ok(None)
}

fn read_only() -> u64 {
    // SAFETY: a static's own address, read once.
    unsafe { core::ptr::addr_of!(READ_ONLY).read_volatile() }
}

/// The copy on the target node: maps the heap, adds with its CPU, then checks with its own
/// loads what the atomics left, and reports the first check that failed (0: none).
fn copy(initiator: u16) -> Result<u64, Error> {
    register(unimem_user::channel::op(OP_RELEASE))?;
    let ready = heap() == layout::SYMMETRIC_HEAP && name_is_ours();
    send(initiator, OP_READY, u64::from(ready))?;
    // SAFETY: a word of the heap mapped above (its first touch, the initiator's may race it).
    unsafe { AtomicU64::from_ptr(RACED as *mut u64) }.fetch_add(1, Ordering::SeqCst);
    for _ in 0..LOCAL_ADDS {
        COUNTER.fetch_add(1, Ordering::SeqCst);
    }
    let remote_adds = take(OP_RELEASE)?;
    let heap = layout::SYMMETRIC_HEAP as *const u64;
    // SAFETY: the heap's two pages are this process's region (mapped above); plain loads.
    let (fresh64, fresh32) =
        unsafe { (heap.add(PAGE_SIZE as usize / 8 + 1).read_volatile(), heap.add(2).read_volatile()) };
    // SAFETY: a word of the heap mapped above.
    let raced = unsafe { (RACED as *const u64).read_volatile() };
    let report = if COUNTER.load(Ordering::SeqCst) != LOCAL_ADDS + remote_adds {
        1
    } else if fresh64 != 5 {
        2
    } else if fresh32 != 7 {
        3
    } else if PAIR.high.load(Ordering::SeqCst) != HIGH {
        4
    } else if raced != 2 {
        5
    } else {
        0
    };
    if report != 0 {
        let counter = COUNTER.load(Ordering::SeqCst);
        log!("check {} failed: counter {}, heap {}, {} and {}", report, counter, fresh64, fresh32, raced);
    }
    send(initiator, OP_REPORT, report)?;
    Ok(report)
}
