//! `regions MODE`: demand-paged regions from the CPU's side (`docs/hw/syscalls.md`, `MAP`,
//! `UNMAP`, `EVICT`). The mode is the thread argument, else the first argument:
//!
//! - 0: maps a writable region of 64 pages and a read-only one; each first touch faults a
//!   zeroed page in; writes stay; `EVICT` of a few pages makes them zero again at the next
//!   touch (the others keep their bytes); the read-only region reads zeros; bad calls
//!   (length 0, unknown flags, a range past its region, a partial `UNMAP`) are refused; `UNMAP`
//!   returns how many pages were resident. A `MAP_DEVICE` region lies in the device window and
//!   keeps what is written to it, in aligned 64-bit words; a system call given a pointer into
//!   it is refused (`BadPointer`: the kernel copies through its cached view). Exits 0.
//! - 1: writes to a read-only region: the kernel must kill it (a report, exit `Fault`).
//! - 2: touches a region after unmapping it: the kernel must kill it.
//!
//! Exit status: 0; 1..=0x3f a failed check (logged); otherwise an error status (`README.md`).
#![no_std]
#![no_main]

use proto::syscall::{MAP_DEVICE, MAP_WRITABLE, layout};
use unimem_user::{Error, SysError, arguments, ensure, log, sys, thread_argument};

unimem_user::entry!(main);

const PAGE: usize = 4096;
const PAGES: usize = 64;

fn main() -> Result<u64, Error> {
    let mode = match thread_argument() {
        Ok(mode) => mode,
        Err(Error::NoArgument) => arguments()?.number(0)?,
        Err(e) => return Err(e),
    };
    match mode {
        0 => checks(),
        1 => {
            let ro = sys::map(PAGE as u64, false)?;
            // SAFETY: not safe: the store is meant to fault and end the process.
            unsafe { (ro as *mut u8).write_volatile(1) };
            Ok(40)
        }
        2 => {
            let rw = sys::map(PAGE as u64, true)?;
            sys::unmap(rw, PAGE as u64)?;
            // SAFETY: not safe: the load is meant to fault and end the process.
            let v = unsafe { (rw as *const u8).read_volatile() };
            Ok(41 + u64::from(v))
        }
        _ => Err(Error::NoArgument),
    }
}

fn checks() -> Result<u64, Error> {
    let rw = sys::map((PAGES * PAGE) as u64, true)?;
    let ro = sys::map(PAGE as u64, false)?;
    // SAFETY: the region is this process's, `PAGES` pages long, and nothing else refers to it.
    let bytes = unsafe { core::slice::from_raw_parts_mut(rw as *mut u8, PAGES * PAGE) };
    ensure!(bytes.iter().all(|&b| b == 0), 1, "a fresh region is not zero");
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = (i / PAGE) as u8 + 1;
    }
    let evicted = sys::evict(rw + (3 * PAGE) as u64, (2 * PAGE) as u64)?;
    ensure!(evicted == 2, 2, "EVICT of two resident pages said {}", evicted);
    ensure!(sys::evict(rw + (3 * PAGE) as u64, PAGE as u64)? == 0, 3, "an evicted page is still resident");
    for (i, &b) in bytes.iter().enumerate() {
        let page = i / PAGE;
        let expected = if page == 3 || page == 4 { 0 } else { page as u8 + 1 };
        ensure!(b == expected, 4, "byte {} is {}, not {}", i, b, expected);
    }
    // SAFETY: the read-only region is this process's.
    let read_only = unsafe { core::slice::from_raw_parts(ro as *const u8, PAGE) };
    ensure!(read_only.iter().all(|&b| b == 0), 5, "a read-only region reads zeros");
    let refused = |r: Result<u64, Error>| r == Err(Error::Syscall(SysError::BadArgument));
    ensure!(refused(sys::map(0, true)), 6, "a region of 0 bytes");
    ensure!(refused(sys::map_with_flags(PAGE as u64, MAP_DEVICE << 1)), 7, "unknown MAP flags");
    ensure!(refused(sys::evict(rw, ((PAGES + 1) * PAGE) as u64)), 8, "EVICT past the region");
    ensure!(refused(sys::unmap(rw, PAGE as u64)), 9, "a partial UNMAP");
    ensure!(refused(sys::evict(0x1000, PAGE as u64)), 10, "EVICT outside every region");
    let freed = sys::unmap(rw, (PAGES * PAGE) as u64)?;
    ensure!(freed == PAGES as u64, 11, "UNMAP freed {} pages", freed);
    sys::unmap(ro, PAGE as u64)?;
    let status = device_region()?;
    if status != 0 {
        return Ok(status);
    }
    log!("regions: pages come on first touch, go on EVICT and UNMAP; bad calls refused");
    Ok(0)
}

fn device_region() -> Result<u64, Error> {
    const WORDS: usize = 2 * PAGE / 8;
    let va = sys::map_with_flags((2 * PAGE) as u64, MAP_WRITABLE | MAP_DEVICE)?;
    ensure!(layout::in_device_window(va), 12, "a device region at {:#x}, outside the device window", va);
    let word = |i: usize| (va as *mut u64).wrapping_add(i);
    for i in 0..WORDS {
        // SAFETY: an aligned word of this process's writable device region.
        unsafe { word(i).write_volatile(i as u64 * 3 + 1) };
    }
    // SAFETY: as above, read back.
    let kept = (0..WORDS).all(|i| unsafe { word(i).read_volatile() } == i as u64 * 3 + 1);
    ensure!(kept, 13, "a device region lost what was written");
    // SAFETY: bytes of this process's device region; the kernel must refuse to read them.
    let line = unsafe { core::slice::from_raw_parts(va as *const u8, 8) };
    let e = sys::log(line);
    ensure!(e == Err(Error::Syscall(SysError::BadPointer)), 14, "LOG from a device region: {:?}", e);
    let freed = sys::unmap(va, (2 * PAGE) as u64)?;
    ensure!(freed == 2, 15, "UNMAP of a device region freed {} pages", freed);
    Ok(0)
}
