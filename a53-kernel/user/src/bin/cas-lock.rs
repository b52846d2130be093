//! `cas-lock`: `args::cas_lock::ITERATIONS` critical sections under a lock taken with CAS and released with SWAP.
//!
//! Argument: the GSAS address of a Shared page: word 0 = the lock (0 = free), word 1 and
//! word 2 = two counters. Each iteration: `cas64(lock, 0, tag)` until it succeeds (pausing
//! between tries), read both counters, write both + 1, `swap64(lock, 0)`, which must return our
//! tag. Waiters back off exponentially. A checker then finds counter 1 == counter 2 == all iterations of all workers.
//! Exit status: 0; 1 = the counters differed inside the lock; 2 = the lock did not hold our tag
//! at release; 3 = the lock stayed taken for 60 s; otherwise an error status (`README.md`).
#![no_std]
#![no_main]

use unimem_user::args::cas_lock::ITERATIONS;
use unimem_user::{
    Error, GlobalAddress, cas64, ensure, log, my_pid, offset, read64, swap64, sys, thread_argument, write64,
};

unimem_user::entry!(main);

const GIVE_UP_US: u64 = 60_000_000;

fn main() -> Result<u64, Error> {
    let lock = GlobalAddress::from_raw(thread_argument()?);
    let (c1, c2) = (offset(lock, 8), offset(lock, 16));
    // Unique among the processes of the system while we run, and never 0.
    let tag = my_pid()?.raw() | 1 << 48;
    let mut contended = 0u64;
    for i in 0..ITERATIONS {
        let start = sys::time_us()?;
        let mut tries = 0u32;
        while !cas64(lock, 0, tag)? {
            tries += 1;
            ensure!(sys::time_us()? - start < GIVE_UP_US, 3, "iteration {}: lock still taken after {} tries", i, tries);
            // Exponential backoff: waiters that hammer the service with failing CAS slow down
            // the holder's own requests (the service answers one request at a time).
            if tries < 2 { sys::yield_now() } else { sys::sleep_us(100 << (tries - 2).min(6))? }
        }
        contended += u64::from(tries);
        let (a, b) = (read64(c1)?, read64(c2)?);
        ensure!(a == b, 1, "iteration {}: counters {} and {} differ inside the lock", i, a, b);
        write64(c1, a + 1)?;
        write64(c2, b + 1)?;
        let held = swap64(lock, 0)?;
        ensure!(held == tag, 2, "iteration {}: the lock held {:#x}, not our tag {:#x}", i, held, tag);
    }
    log!("{} critical sections, {} failed CAS", ITERATIONS, contended);
    Ok(0)
}
