//! `shmem-bench`: the measurements of `cargo xtask bench shmem` (`xtask/src/bench/shmem.rs`), an
//! OpenSHMEM program (run on node 0: PE 0 starts the others). PE 0 measures, the other PEs take
//! part in the barriers and wait for `finalize`. Each figure is logged as
//! `bench NAME: VALUE us`, the median of its repetitions, in microseconds:
//!
//! - on 2 PEs only (PE 0 to PE 1), each shmem call beside the raw layer under it, in the same run
//!   and between the same buffers (a 4 MiB symmetric array on PE 1; PE 0's source and
//!   destination are 4 MiB symmetric arrays too), the two alternating rep by rep so that both see
//!   the same load:
//!   - `shmem_putmem_{B}b_us` / `raw_write_{B}b_us`: one blocking `putmem` of B bytes, one RDMA
//!     write of them waited for (`shmem::with_rdma`, the library's own queues);
//!   - `shmem_getmem_{B}b_us` / `raw_read_{B}b_us`: the same, reading; the bytes read back are
//!     checked against those written;
//!   - for B = 8 and 4 KiB .. 4 MiB (each four times the last);
//!   - `shmem_fetch_add_us` / `gsas_fad64_us`: one `shmem_long_atomic_fetch_add` (`i64`) on
//!     PE 1's symmetric word, one GSAS FAD64 on a shared page allocated on node 1;
//! - on every run: `shmem_barrier_all_us`, one `barrier_all` of every PE, and
//!   `shmem_atomic_round_trip_us`, one remote atomic fetch (`shmem_long_atomic_fetch`) from
//!   PE 0 to PE 1, batches of each alternating.
//!
//! Repetitions: after a warm-up, each pair is repeated until it has taken `BUDGET_US` (at least
//! `MIN_REPS`, at most `MAX_REPS` times); operations shorter than a millisecond are timed in
//! batches of `BATCH` (the value is a batch's time over `BATCH`: `time_us` counts whole
//! microseconds). The barriers, which every PE makes, are a fixed count. The argument `quick`
//! makes every count and budget small: the runner's test that the program prints every line
//! the harness needs (`runner::shmem_bench_prints_every_line`).
//!
//! Exit status: 0; 1 = fewer than 2 PEs; 2 = the bytes read back are not those written;
//! otherwise the error's status (`README.md`).
#![no_std]
#![no_main]

use unimem_user::shmem::{self, ShmemError, Symmetric, World, with_pe};
use unimem_user::{ensure, log, sys};

unimem_user::entry!(main);

/// The largest transfer.
const MAX_BYTES: usize = 4 << 20;
/// At most this many repetitions of one measurement.
const MAX_REPS: usize = 201;
/// How long to wait for one raw transfer (the R5 ends each long before).
const TRANSFER_US: u64 = 60_000_000;

/// How much to measure: PE 0 decides (its arguments) and puts it into every PE's `CONFIG`.
#[derive(Clone, Copy)]
#[repr(C)]
struct Config {
    /// Time to spend on one pair of measurements (µs).
    budget_us: u64,
    min_reps: u64,
    /// Operations per timed batch for the short ones.
    batch: u64,
    /// Timed batches of barriers (every PE makes `BATCH` barriers per batch).
    barrier_batches: u64,
}

const FULL: Config = Config { budget_us: 5_000_000, min_reps: 9, batch: 10, barrier_batches: 51 };
const QUICK: Config = Config { budget_us: 20_000, min_reps: 3, batch: 2, barrier_batches: 3 };

/// A global, so symmetric: PE 0 writes the configuration into every PE's copy.
static mut CONFIG: [u64; 4] = [0; 4];

fn config_address() -> u64 {
    core::ptr::addr_of!(CONFIG) as u64
}

fn read_config() -> Config {
    // SAFETY: the global, read afresh after the barrier that follows PE 0's puts.
    let w = |i: u64| unsafe { core::ptr::read_volatile((config_address() + 8 * i) as *const u64) };
    Config { budget_us: w(0), min_reps: w(1), batch: w(2), barrier_batches: w(3) }
}

fn now() -> Result<u64, ShmemError> {
    Ok(sys::time_us()?)
}

/// The median of the samples (sorted in place).
fn median(samples: &mut [f64]) -> f64 {
    samples.sort_unstable_by(|a, b| a.total_cmp(b));
    let n = samples.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        samples[n / 2]
    } else {
        (samples[n / 2 - 1] + samples[n / 2]) / 2.0
    }
}

/// Times `a` and `b` alternately, each first every other rep (one warm-up each before), each
/// call repeated `per` times per sample; returns the median time of one call of each, in microseconds.
fn pair(
    c: &Config,
    per: u64,
    mut a: impl FnMut() -> Result<(), ShmemError>,
    mut b: impl FnMut() -> Result<(), ShmemError>,
) -> Result<(f64, f64), ShmemError> {
    a()?;
    b()?;
    let (mut sa, mut sb) = ([0f64; MAX_REPS], [0f64; MAX_REPS]);
    let start = now()?;
    let mut reps = 0;
    while reps < MAX_REPS && (reps < c.min_reps as usize || now()? - start < c.budget_us) {
        // Each goes first every other rep: neither pays for what the other leaves behind.
        let mut order = [(&mut a as &mut dyn FnMut() -> Result<(), ShmemError>, &mut sa), (&mut b, &mut sb)];
        if reps % 2 == 1 {
            order.swap(0, 1);
        }
        for (f, samples) in order {
            let t0 = now()?;
            for _ in 0..per {
                f()?;
            }
            samples[reps] = (now()? - t0) as f64 / per as f64;
        }
        reps += 1;
    }
    Ok((median(&mut sa[..reps]), median(&mut sb[..reps])))
}

fn bench(name: &str, us: f64) {
    log!("bench {}: {:.2} us", name, us);
}

/// A byte of the source pattern.
fn pattern(i: usize) -> u8 {
    (i.wrapping_mul(131) ^ (i >> 11)) as u8
}

fn main() -> Result<u64, ShmemError> {
    let world = shmem::init()?;
    let (me, n) = (world.my_pe(), world.n_pes());
    ensure!(n >= 2, 1, "shmem-bench needs 2 PEs or more, has {n}");
    if me == 0 {
        let quick = unimem_user::arguments()?.iter().any(|a| a == "quick");
        let c = if quick { QUICK } else { FULL };
        let words = [c.budget_us, c.min_reps, c.batch, c.barrier_batches];
        // SAFETY: plain words viewed as their bytes.
        let bytes = unsafe { core::slice::from_raw_parts(words.as_ptr().cast::<u8>(), 32) };
        for pe in 0..n {
            with_pe(|p| p.putmem(config_address(), bytes, i64::from(pe)))?;
        }
        log!("shmem-bench: {} PEs, {}", n, if quick { "quick" } else { "full" });
    }
    world.barrier_all()?;
    let c = read_config();
    ensure!(c.batch > 0 && c.barrier_batches > 0, 1, "no configuration from PE 0");

    // Every PE allocates alike (collective); PE 1's `target` is the remote end.
    let mut source: Symmetric<u8> = world.alloc(MAX_BYTES)?;
    let mut dest: Symmetric<u8> = world.alloc(MAX_BYTES)?;
    let target: Symmetric<u8> = world.alloc(MAX_BYTES)?;
    let counter: Symmetric<i64> = world.alloc(1)?;
    for (i, b) in source.as_mut_slice().iter_mut().enumerate() {
        *b = pattern(i);
    }
    world.barrier_all()?;

    let mut status = 0;
    if me == 0 && n == 2 {
        status = point_to_point(world, &c, &source, &mut dest, &target, &counter)?;
    }
    world.barrier_all()?;
    if status != 0 {
        return Ok(status);
    }

    // Every PE: the barriers, each timed batch right after a batch of PE 0's remote atomic
    // fetches (the unit), so that both see the same load; an untimed barrier between them
    // starts every PE's batch together.
    for _ in 0..c.batch {
        world.barrier_all()?;
    }
    let (mut barriers, mut round_trips) = ([0f64; MAX_REPS], [0f64; MAX_REPS]);
    let batches = (c.barrier_batches as usize).min(MAX_REPS);
    for (barrier, round_trip) in barriers.iter_mut().zip(round_trips.iter_mut()).take(batches) {
        if me == 0 {
            let t0 = now()?;
            for _ in 0..c.batch {
                world.atomic_fetch(&counter, 0, 1)?;
            }
            *round_trip = (now()? - t0) as f64 / c.batch as f64;
        }
        world.barrier_all()?;
        let t0 = now()?;
        for _ in 0..c.batch {
            world.barrier_all()?;
        }
        *barrier = (now()? - t0) as f64 / c.batch as f64;
    }
    if me == 0 {
        bench("shmem_barrier_all_us", median(&mut barriers[..batches]));
        bench("shmem_atomic_round_trip_us", median(&mut round_trips[..batches]));
    }
    world.free(counter)?;
    world.free(target)?;
    world.free(dest)?;
    world.free(source)?;
    world.finalize()?;
    if me == 0 {
        log!("shmem-bench: done");
    }
    Ok(0)
}

/// PE 0's measurements against PE 1: RMA beside raw RDMA, atomics beside GSAS FAD64. The
/// program's status (0, or 2 when bytes read back are wrong).
fn point_to_point(
    world: World,
    c: &Config,
    source: &Symmetric<u8>,
    dest: &mut Symmetric<u8>,
    target: &Symmetric<u8>,
    counter: &Symmetric<i64>,
) -> Result<u64, ShmemError> {
    const PE: u16 = 1;
    let remote = target.address();
    let sizes = core::iter::once(8usize).chain((0..6).map(|k| 4096usize << (2 * k)));
    for bytes in sizes {
        // Short operations in batches, the others one by one.
        let per = if bytes <= 64 << 10 { c.batch } else { 1 };
        let src = &source.as_slice()[..bytes];
        let (put, write) = pair(
            c,
            per,
            || with_pe(|p| p.putmem(remote, src, i64::from(PE))),
            || shmem::with_rdma(|rdma| rdma.write(src, PE, remote)?.wait(TRANSFER_US).map(drop))?.map_err(Into::into),
        )?;
        bench(&fmt_name("shmem_putmem", bytes), put);
        bench(&fmt_name("raw_write", bytes), write);

        dest.as_mut_slice()[..bytes].fill(0);
        let dst = dest.address();
        let (get, read) = pair(
            c,
            per,
            || {
                // SAFETY: `dest` is this PE's array, not otherwise used during the call.
                let d = unsafe { core::slice::from_raw_parts_mut(dst as *mut u8, bytes) };
                with_pe(|p| p.getmem(d, remote, i64::from(PE)))
            },
            || {
                // SAFETY: as above.
                let d = unsafe { core::slice::from_raw_parts_mut(dst as *mut u8, bytes) };
                shmem::with_rdma(|rdma| rdma.read(d, PE, remote)?.wait(TRANSFER_US).map(drop))?.map_err(Into::into)
            },
        )?;
        bench(&fmt_name("shmem_getmem", bytes), get);
        bench(&fmt_name("raw_read", bytes), read);
        ensure!(dest.as_slice()[..bytes] == source.as_slice()[..bytes], 2, "the {bytes} bytes read back are wrong");
    }

    let page = unimem_user::alloc_shared(1, PE)?;
    let (fetch_add, fad) = pair(
        c,
        c.batch,
        || world.atomic_fetch_add(counter, 0, 1i64, PE).map(drop),
        || unimem_user::fad64(page, 1).map(drop).map_err(Into::into),
    )?;
    unimem_user::free_shared(page)?;
    bench("shmem_fetch_add_us", fetch_add);
    bench("gsas_fad64_us", fad);
    Ok(0)
}

/// `{prefix}_{bytes}b_us`, without an allocator.
fn fmt_name(prefix: &str, bytes: usize) -> heapless::String<48> {
    use core::fmt::Write;
    let mut s = heapless::String::new();
    let _ = write!(s, "{prefix}_{bytes}b_us");
    s
}
