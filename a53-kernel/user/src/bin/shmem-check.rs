//! Every OpenSHMEM routine of `unimem_user::shmem` on every PE (run on node 0: PE 0 starts
//! the others; `cargo xtask run shmem-check --nodes 4`): RMA to globals and to the symmetric
//! heap, blocking, non-blocking and strided; every atomic at both widths on another PE and on
//! this one; waits and tests of one variable and of vectors; signals; collectives over the
//! world and over a strided set; locks; the heap's collective calls; the refusals. PE 0 logs
//! one verdict; each PE's exit status is 0, or the number of the first check that failed
//! (its own line says which), or the error's status.
#![no_std]
#![no_main]

use unimem_user::shmem::wait::Wait;
use unimem_user::shmem::{ActiveSet, Cmp, Kind, Mode, ReduceOp, ReduceType, ShmemError, Symmetric, World, with_pe};
use unimem_user::{VaOp, ensure, log};

unimem_user::entry!(main);

/// A global: symmetric, at the same address in every PE.
static mut GLOBAL: [u64; 16] = [0; 16];

fn global() -> u64 {
    core::ptr::addr_of!(GLOBAL) as u64
}

fn global_word(i: usize) -> u64 {
    // SAFETY: a word of the global, read afresh (other PEs write it).
    unsafe { core::ptr::read_volatile((global() + 8 * i as u64) as *const u64) }
}

fn main() -> Result<u64, ShmemError> {
    let world = unimem_user::shmem::init()?;
    let status = checks(world)?;
    if status != 0 {
        return Ok(status);
    }
    world.finalize()?;
    if world.my_pe() == 0 {
        log!("shmem-check: ok ({} PEs)", world.n_pes());
    }
    Ok(0)
}

fn checks(world: World) -> Result<u64, ShmemError> {
    let (me, n) = (world.my_pe(), world.n_pes());
    let next = (me + 1) % n;
    let prev = (me + n - 1) % n;
    ensure!(n >= 2, 1, "shmem-check needs 2 nodes or more, has {n}");
    ensure!(unimem_user::board_id().ok() == Some(me), 2, "PE {me} is not its node");

    // RMA to a global of the next PE.
    world.barrier_all()?;
    let mine = [u64::from(me) << 32 | 0xabc; 4];
    with_pe(|p| p.putmem(global(), bytes_of(&mine), i64::from(next)))?;
    world.barrier_all()?;
    ensure!((0..4).all(|i| global_word(i) == u64::from(prev) << 32 | 0xabc), 3, "global put from PE {prev}");

    // Typed put/get/p/g on the heap.
    let mut data: Symmetric<u32> = world.alloc(1024)?;
    for (i, v) in data.as_mut_slice().iter_mut().enumerate() {
        *v = i as u32 * 3 + u32::from(me);
    }
    let out: Symmetric<u32> = world.alloc(1024)?;
    world.put(&out, 0, data.as_slice(), next)?;
    world.barrier_all()?;
    let wrong = out.as_slice().iter().enumerate().find(|&(i, &v)| v != i as u32 * 3 + u32::from(prev));
    ensure!(wrong.is_none(), 4, "put from PE {prev}: element {:?} (of {:#x})", wrong, out.address());
    let mut back = [0u32; 100];
    world.get(&mut back, &data, 900, next)?;
    ensure!(back.iter().enumerate().all(|(i, &v)| v == (900 + i as u32) * 3 + u32::from(next)), 5, "get");
    world.barrier_all()?; // the next PE has checked its `out` before this writes into it
    world.p(&out, 7, 0xdead_0000 + u32::from(me), next)?;
    world.barrier_all()?;
    ensure!(world.g(&out, 7, me)? == 0xdead_0000 + u32::from(prev), 6, "p/g");

    // Non-blocking, then quiet; fence; strided.
    world.barrier_all()?;
    let block = [me as u8 + 0x40; 3000];
    let mut got = [0u8; 3000];
    with_pe(|p| {
        // SAFETY: `block` and `got` live until the quiet below.
        unsafe {
            p.putmem_nbi(out.address(), block.as_ptr() as u64, 3000, i64::from(next))?;
            p.fence()?;
            p.getmem_nbi(got.as_mut_ptr() as u64, out.address(), 3000, i64::from(next))?;
        }
        p.quiet()
    })?;
    ensure!(got == block, 7, "nbi put then get");
    world.barrier_all()?;
    let strided: [u64; 12] = core::array::from_fn(|i| (i as u64) << 8 | u64::from(me));
    with_pe(|p| {
        // SAFETY: `strided` is live memory of this PE.
        unsafe {
            p.strided(
                unimem_user::rdma::Direction::Write,
                global(),
                strided.as_ptr() as u64,
                2,
                3,
                4,
                8,
                i64::from(next),
            )
        }
    })?;
    world.barrier_all()?;
    ensure!((0..4).all(|k| global_word(2 * k) == (3 * k as u64) << 8 | u64::from(prev)), 8, "iput");
    let mut fetched = [0u64; 4];
    with_pe(|p| {
        // SAFETY: `fetched` is live memory of this PE.
        unsafe {
            p.strided(
                unimem_user::rdma::Direction::Read,
                fetched.as_mut_ptr() as u64,
                global(),
                1,
                2,
                4,
                8,
                i64::from(next),
            )
        }
    })?;
    ensure!((0..4).all(|k| fetched[k] == (3 * k as u64) << 8 | u64::from(me)), 9, "iget");

    // Atomics: a counter on PE 0; every op and width on the next PE and on this one.
    let counter: Symmetric<u64> = world.alloc(4)?;
    for _ in 0..25 {
        world.atomic_fetch_add(&counter, 0, 1u64, 0)?;
    }
    let words: Symmetric<i32> = world.alloc(2 * usize::from(n))?;
    for target in [next, me] {
        let i = 2 * usize::from(me);
        let f = |op, v: i32, c: i32| world.atomic(op, &words, i, v, c, target);
        world.atomic_set(&words, i, -7i32, target)?;
        ensure!(f(VaOp::FetchAdd, 10, 0)? == -7, 10, "fetch_add 32 on {target}");
        ensure!(f(VaOp::FetchAnd, 0b110, 0)? == 3, 11, "fetch_and 32");
        ensure!(f(VaOp::FetchOr, 0b1000, 0)? == 2, 12, "fetch_or 32");
        ensure!(f(VaOp::FetchXor, 0b1111, 0)? == 10, 13, "fetch_xor 32");
        ensure!(world.atomic_compare_swap(&words, i, 99, 1, target)? == 5, 14, "failed compare_swap");
        ensure!(world.atomic_compare_swap(&words, i, 5, -1, target)? == 5, 15, "compare_swap");
        ensure!(world.atomic_swap(&words, i, 4, target)? == -1, 16, "swap");
        ensure!(world.atomic_fetch(&words, i, target)? == 4, 17, "fetch");
        let c64 = &counter;
        world.atomic_set(c64, 1 + (me as usize % 3), u64::MAX - 1, target)?;
        ensure!(world.atomic_fetch_add(c64, 1 + (me as usize % 3), 3u64, target)? == u64::MAX - 1, 18, "64-bit wrap");
        world.barrier_all()?;
    }
    ensure!(world.atomic_fetch(&counter, 0, 0)? == 25 * u64::from(n), 19, "fetch_add total on PE 0");

    // Waits: one variable, set by the previous PE; vectors (ALL, ANY, SOME; tests).
    let flags: Symmetric<i64> = world.alloc(8)?;
    world.barrier_all()?;
    world.atomic_set(&flags, 0, 1i64, next)?;
    world.wait_until(&flags, 0, Cmp::Eq, 1)?;
    for i in 1..8usize {
        world.p(&flags, i, -(i as i64), next)?;
    }
    let w = |mode, cmp, value: i64| Wait {
        kind: Kind { width: 8, signed: true },
        mode,
        ivars: flags.address() + 8,
        n: 7,
        status: None,
        cmp,
        values: None,
        value: value as u64,
    };
    with_pe(|p| p.wait(&w(Mode::All, Cmp::Lt, 0), true, None))?;
    let any = with_pe(|p| p.wait(&w(Mode::Any, Cmp::Eq, -4), false, None))?;
    ensure!(any == 3, 20, "test_any found {any}");
    let mut found = [0usize; 7];
    let some = with_pe(|p| p.wait(&w(Mode::Some, Cmp::Le, -5), true, Some(&mut found)))?;
    ensure!(some == 3 && found[..3] == [4, 5, 6], 21, "wait_some: {some}");
    let none = with_pe(|p| p.wait(&w(Mode::All, Cmp::Gt, 0), false, None))?;
    ensure!(none == 0, 22, "test_all met where it cannot be");

    // Signals: data first, then the signal.
    world.barrier_all()?;
    let payload = [me as u8 ^ 0x5a; 512];
    with_pe(|p| p.put_signal(out.address(), &payload, counter.address() + 24, 7, false, i64::from(next)))?;
    let w = Wait {
        kind: Kind { width: 8, signed: false },
        mode: Mode::All,
        ivars: counter.address() + 24,
        n: 1,
        status: None,
        cmp: Cmp::Eq,
        values: None,
        value: 7,
    };
    with_pe(|p| p.wait(&w, true, None))?;
    let arrived = bytes_of(&out.as_slice()[..128]).iter().all(|&b| b == prev as u8 ^ 0x5a);
    ensure!(arrived, 23, "put_signal: signal before the data");
    world.barrier_all()?;
    with_pe(|p| p.put_signal(out.address(), &payload, counter.address() + 24, 5, true, i64::from(next)))?;
    world.barrier_all()?;
    ensure!(with_pe(|p| p.signal_fetch(counter.address() + 24))? == 12, 24, "signal add");

    // Collectives over the world.
    let team = world.team();
    let src: Symmetric<u64> = world.alloc(4 * usize::from(n))?;
    let dst: Symmetric<u64> = world.alloc(4 * usize::from(n))?;
    let mut src = src;
    for (i, v) in src.as_mut_slice().iter_mut().enumerate() {
        *v = u64::from(me) << 16 | i as u64;
    }
    world.broadcast(&dst, &src, 1 % n, team)?;
    ensure!(dst.as_slice().iter().enumerate().all(|(i, &v)| v == u64::from(1 % n) << 16 | i as u64), 25, "broadcast");
    let quarter = |s: &Symmetric<u64>| (s.address(), 32usize);
    let (s_addr, s_bytes) = quarter(&src);
    with_pe(|p| p.fcollect(dst.address(), s_addr, s_bytes, team))?;
    ensure!((0..usize::from(n)).all(|j| dst.read(4 * j).ok() == Some((j as u64) << 16)), 26, "fcollect");
    with_pe(|p| p.collect(dst.address(), s_addr, 8 * (usize::from(me) % 2 + 1), team))?;
    let mut at = 0;
    for j in 0..u64::from(n) {
        for k in 0..(j % 2 + 1) {
            ensure!(dst.read(at)? == j << 16 | k, 27, "collect at {at}");
            at += 1;
        }
    }
    world.alltoall(&dst, &src, team)?;
    ensure!(
        (0..usize::from(n)).all(|j| dst.read(4 * j).ok() == Some(((j as u64) << 16) | (4 * u64::from(me)))),
        28,
        "alltoall"
    );
    with_pe(|p| p.alltoalls(dst.address(), src.address(), 2, 1, 2, 8, team))?;
    ensure!(
        (0..usize::from(n)).all(|j| dst.read(4 * j + 2).ok() == Some(((j as u64) << 16) | (2 * u64::from(me) + 1))),
        29,
        "alltoalls"
    );
    let sums: Symmetric<i64> = world.alloc(3000)?;
    let mut sums = sums;
    for (i, v) in sums.as_mut_slice().iter_mut().enumerate() {
        *v = i as i64 * (i64::from(me) + 1) - 5;
    }
    world.reduce(ReduceOp::Sum, &sums, &sums, team)?;
    let scale = i64::from(n) * (i64::from(n) + 1) / 2;
    ensure!(sums.as_slice().iter().enumerate().all(|(i, &v)| v == i as i64 * scale - 5 * i64::from(n)), 30, "sum");
    let mut reals: Symmetric<f64> = world.alloc(2)?;
    reals.as_mut_slice()[0] = f64::from(me) + 0.25;
    world.reduce(ReduceOp::Max, &reals, &reals, team)?;
    ensure!(reals.read(0)? == f64::from(n - 1) + 0.25, 31, "max f64");
    let mut z: Symmetric<f32> = world.alloc(2)?;
    z.as_mut_slice().copy_from_slice(&[0.0, 1.0]);
    with_pe(|p| p.reduce(ReduceOp::Prod, ReduceType::Complex(8), z.address(), z.address(), 1, team))?;
    let i_n = [[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]][usize::from(n) % 4];
    ensure!(z.as_slice() == i_n, 32, "complex prod: i^{n}");
    let mut bits: Symmetric<u16> = world.alloc(1)?;
    bits.as_mut_slice()[0] = 1 << me;
    world.reduce(ReduceOp::Or, &bits, &bits, team)?;
    ensure!(u32::from(bits.read(0)?) == (1u32 << n) - 1, 33, "or u16");
    let long_double =
        with_pe(|p| p.reduce(ReduceOp::Sum, ReduceType::from_raw(0x210)?, z.address(), z.address(), 1, team));
    ensure!(matches!(long_double, Err(ShmemError::BadArgument(_))), 34, "long double not refused");

    // A strided set: the even PEs (or PE 0 alone on 2 nodes... with stride 1 there).
    let evens = ActiveSet { start: 0, stride: 2, size: i64::from(n.div_ceil(2)) };
    if me % 2 == 0 {
        with_pe(|p| p.barrier(evens))?;
        with_pe(|p| p.fcollect(dst.address(), s_addr, 8, evens))?;
        ensure!(
            (0..evens.size as usize).all(|j| dst.read(j).ok() == Some((2 * j as u64) << 16)),
            35,
            "even set fcollect"
        );
    } else {
        ensure!(
            matches!(with_pe(|p| p.sync(evens)), Err(ShmemError::BadActiveSet { .. })),
            36,
            "odd PE in the even set"
        );
    }
    with_pe(|p| p.sync_all())?;

    // Locks: read-modify-write by RMA under the lock.
    let lock: Symmetric<i64> = world.alloc(1)?;
    let total: Symmetric<u64> = world.alloc(1)?;
    for _ in 0..10 {
        world.set_lock(&lock, 0)?;
        let v = world.g(&total, 0, 0)?;
        world.p(&total, 0, v + 1, 0)?;
        world.clear_lock(&lock, 0)?;
    }
    world.barrier_all()?;
    ensure!(world.g(&total, 0, 0)? == 10 * u64::from(n), 37, "lock lost an update");
    if me == 0 {
        ensure!(world.test_lock(&lock, 0)?, 38, "a free lock not taken");
        ensure!(!world.test_lock(&lock, 0)?, 39, "a held lock taken");
        world.clear_lock(&lock, 0)?;
    }
    world.barrier_all()?;

    // The heap's collective calls give the same address everywhere.
    let addrs: Symmetric<u64> = world.alloc(4 * usize::from(n))?;
    let a = with_pe(|p| p.malloc(100, 16))?.unwrap_or(0);
    let b = with_pe(|p| p.malloc(1000, 4096))?.unwrap_or(0);
    let c = with_pe(|p| p.realloc(a, 5000))?.unwrap_or(0);
    let d = with_pe(|p| p.calloc(10, 10))?.unwrap_or(0);
    ensure!(
        b.is_multiple_of(4096) && [a, b, c, d].iter().all(|&x| x != 0),
        40,
        "heap calls: {a:#x} {b:#x} {c:#x} {d:#x}"
    );
    let mine: Symmetric<u64> = world.alloc(4)?;
    let mut mine = mine;
    mine.as_mut_slice().copy_from_slice(&[a, b, c, d]);
    world.fcollect(&addrs, &mine, team)?;
    ensure!((0..usize::from(n)).all(|j| addrs.as_slice()[4 * j..4 * j + 4] == [a, b, c, d]), 41, "asymmetric heap");
    with_pe(|p| p.free(b))?;
    with_pe(|p| p.free(c))?;
    with_pe(|p| p.free(d))?;

    // Refusals, which lose nothing.
    let stack = [0u8; 8];
    ensure!(matches!(world.put(&out, 0, &[1], n), Err(ShmemError::NoSuchPe(_))), 42, "PE n accepted");
    let local = stack.as_ptr() as u64;
    let refused = with_pe(|p| p.putmem(local, &stack, i64::from(next)));
    ensure!(refused == Err(ShmemError::NotSymmetric(local, 8)), 43, "a stack address accepted: {refused:?}");
    ensure!(with_pe(|p| p.free(local)) == Err(ShmemError::ForeignFree(local)), 44, "a foreign free accepted");
    ensure!(
        with_pe(|p| Ok(p.addr_accessible(out.address(), i64::from(next)) && !p.addr_accessible(local, 0)))?,
        45,
        "addr_accessible"
    );
    ensure!(
        with_pe(|p| Ok(p.ptr(out.address(), i64::from(me)) == Some(out.address())
            && p.ptr(out.address(), i64::from(next)).is_none()))?,
        46,
        "ptr"
    );
    ensure!(with_pe(|p| p.pe_accessible(i64::from(next)))?, 47, "the next PE not accessible");
    world.free(data)?;
    Ok(0)
}

fn bytes_of<T: Copy>(values: &[T]) -> &[u8] {
    // SAFETY: plain integers viewed as their bytes.
    unsafe { core::slice::from_raw_parts(values.as_ptr().cast(), core::mem::size_of_val(values)) }
}
