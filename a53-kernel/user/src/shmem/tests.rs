//! Whole jobs of N PEs on the fake cluster (`fake.rs`): launch, heap, RMA, atomics, waits,
//! collectives, locks, finalize, and the bad cases (bad PE, non-symmetric address, foreign
//! free, a PE that died, global exit), each ending with a clear error and never a hang.

use std::vec::Vec;

use proto::gsas::{VaOp, VaWidth};
use proto::rdma::queue::Direction;

use super::fake::{Cluster, FakeTransport, Outcome};
use super::wait::Wait;
use super::*;

const HEAP: u64 = 4 << 20;

fn start(t: FakeTransport) -> Result<Pe<FakeTransport>, ShmemError> {
    let mut pe = Pe::start(t, HEAP)?;
    pe.liveness_period_us = 20_000;
    Ok(pe)
}

/// Every PE ended with `Ok(0)`.
fn all_ok(out: &Outcome, n: u16) {
    for pe in 0..usize::from(n) {
        assert_eq!(out.results[pe], Some(Ok(0)), "PE {pe}: {:?}", out.results);
    }
}

/// `result`, after a pause when it is an error: a PE that meets a dead one ends too, and the
/// others should meet the first death, not this one (on target, a process also takes a while
/// to log its error and end).
fn linger<R>(result: Result<R, ShmemError>) -> Result<R, ShmemError> {
    if result.is_err() {
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    result
}

/// A slice of `len` bytes at `address` (a symmetric object of this PE).
fn bytes<'a>(address: u64, len: usize) -> &'a mut [u8] {
    // SAFETY: the tests give addresses of live arenas of this PE.
    unsafe { core::slice::from_raw_parts_mut(address as *mut u8, len) }
}

fn word(address: u64) -> u64 {
    // SAFETY: as above.
    unsafe { core::ptr::read_volatile(address as *const u64) }
}

fn set_word(address: u64, v: u64) {
    // SAFETY: as above.
    unsafe { core::ptr::write_volatile(address as *mut u64, v) }
}

#[test]
fn pe_zero_launches_every_other_pe_with_its_tag_and_all_agree() {
    for n in [1u16, 2, 4] {
        let out = Cluster::run(n, move |t| {
            let mut pe = start(t)?;
            let me = pe.my_pe();
            assert_eq!(pe.n_pes(), n);
            let a = pe.malloc(100, 16)?.unwrap();
            let b = pe.malloc(64, 256)?.unwrap();
            let (base, _) = pe.heap_range();
            pe.finalize()?;
            // The same offsets on every PE: the allocator is deterministic.
            Ok(((a - base) << 20 | (b - base)) ^ (u64::from(me) << 60) ^ (u64::from(me) << 60))
        });
        let first = out.results[0].unwrap().unwrap();
        assert!(out.results.iter().all(|r| *r == Some(Ok(first))), "{:?}", out.results);
        assert_eq!(out.spawns, (1..n).map(|k| (k, launch::tag(k, n))).collect::<Vec<_>>());
    }
}

#[test]
fn put_get_nbi_strided_and_signals_move_the_right_bytes() {
    let n = 3;
    let out = Cluster::run(n, |t| {
        let mut pe = start(t)?;
        let me = i64::from(pe.my_pe());
        let next = (me + 1) % 3;
        let buf = pe.calloc(4, 1024)?.unwrap();
        let sig = pe.calloc(1, 8)?.unwrap();
        let src: Vec<u8> = (0..1000).map(|i| (i as u8) ^ (me as u8)).collect();
        pe.putmem(buf, &src, next)?;
        pe.barrier_all()?;
        let prev = (me + 2) % 3;
        let want: Vec<u8> = (0..1000).map(|i| (i as u8) ^ (prev as u8)).collect();
        assert_eq!(&bytes(buf, 1000)[..], &want[..], "the previous PE's put");
        let mut back = std::vec![0u8; 1000];
        pe.getmem(&mut back, buf, next)?;
        assert_eq!(back, src, "get of what I put there");
        // nbi: nothing before the quiet, everything after.
        let other = std::vec![0xabu8; 512];
        // SAFETY: `other` lives until the quiet.
        unsafe { pe.putmem_nbi(buf + 2048, other.as_ptr() as u64, 512, next)? };
        let mut got = std::vec![0u8; 512];
        // SAFETY: `got` is not used until the quiet.
        unsafe { pe.getmem_nbi(got.as_mut_ptr() as u64, buf + 2048, 512, next)? };
        pe.quiet()?;
        assert_eq!(got, other, "nbi transfers complete in order at quiet");
        // Local PE: a plain copy, at once.
        pe.putmem(buf + 3072, &[9, 8, 7], me)?;
        assert_eq!(&bytes(buf + 3072, 3)[..], &[9, 8, 7]);
        pe.barrier_all()?;
        // Strided: every 3rd u32 of a local array into every 2nd slot there.
        let values: Vec<u32> = (0..30).map(|i| i * 10 + me as u32).collect();
        let dest = buf + 1024;
        // SAFETY: `values` is live memory of this process.
        unsafe { pe.strided(Direction::Write, dest, values.as_ptr() as u64, 2, 3, 10, 4, next)? };
        pe.barrier_all()?;
        let landed: Vec<u32> =
            (0..10).map(|k| u32::from_le_bytes(bytes(dest + 8 * k, 4).try_into().unwrap())).collect();
        assert_eq!(landed, (0..10).map(|k| 30 * k + prev as u32).collect::<Vec<_>>());
        let mut fetched = [0u32; 5];
        // SAFETY: `fetched` is live memory of this process.
        unsafe { pe.strided(Direction::Read, fetched.as_mut_ptr() as u64, dest, 1, 4, 5, 4, me)? };
        assert_eq!(fetched, [0, 60, 120, 180, 240].map(|v| v + prev as u32));
        pe.barrier_all()?;
        // put_signal: the data is there when the signal is.
        let payload = [me as u8 + 1; 256];
        pe.put_signal(buf, &payload, sig, 7, false, next)?;
        let w = Wait {
            kind: Kind { width: 8, signed: false },
            mode: Mode::All,
            ivars: sig,
            n: 1,
            status: None,
            cmp: Cmp::Ge,
            values: None,
            value: 7,
        };
        pe.wait(&w, true, None)?;
        assert!(bytes(buf, 256).iter().all(|&b| b == prev as u8 + 1));
        pe.put_signal(buf, &payload, sig, 5, true, next)?;
        pe.barrier_all()?;
        assert_eq!(pe.signal_fetch(sig)?, 12, "set 7, then add 5");
        pe.finalize()?;
        Ok(0)
    });
    all_ok(&out, n);
}

#[test]
fn atomics_of_every_op_and_width_on_remote_and_local_pes() {
    let n = 4;
    let out = Cluster::run(n, |t| {
        let mut pe = start(t)?;
        let me = i64::from(pe.my_pe());
        let counter = pe.calloc(2, 8)?.unwrap();
        for _ in 0..25 {
            pe.atomic(VaOp::FetchAdd, VaWidth::W64, counter, 1, 0, 0)?;
            pe.atomic(VaOp::FetchAdd, VaWidth::W32, counter + 8, u64::from(u32::MAX), 0, 0)?;
        }
        pe.barrier_all()?;
        assert_eq!(pe.atomic(VaOp::Fetch, VaWidth::W64, counter, 0, 0, 0)?, 100);
        assert_eq!(pe.atomic(VaOp::Fetch, VaWidth::W32, counter + 8, 0, 0, 0)?, u64::from(u32::MAX - 99), "-1 x 100");
        pe.barrier_all()?;
        // Each PE works on its own word of PE (me + 1) and on its own word here.
        let mine = pe.calloc(4, 8)?.unwrap();
        for target in [(me + 1) % 4, me] {
            let w = mine + 8 * me as u64 % 32;
            let at = |pe: &mut Pe<FakeTransport>, op, a1, a2| pe.atomic(op, VaWidth::W64, w, a1, a2, target);
            assert_eq!(at(&mut pe, VaOp::Set, 0b1100, 0)?, 0);
            assert_eq!(at(&mut pe, VaOp::FetchAnd, 0b1010, 0)?, 0b1100);
            assert_eq!(at(&mut pe, VaOp::FetchOr, 0b0001, 0)?, 0b1000);
            assert_eq!(at(&mut pe, VaOp::FetchXor, 0b1111, 0)?, 0b1001);
            assert_eq!(at(&mut pe, VaOp::CompareSwap, 1, 2)?, 0b0110, "no match");
            assert_eq!(at(&mut pe, VaOp::CompareSwap, 0b0110, 42)?, 0b0110);
            assert_eq!(at(&mut pe, VaOp::Swap, 0, 0)?, 42);
            let typed: i32 = pe.atomic_typed(VaOp::FetchAdd, w, -3i32, 0, target)?;
            assert_eq!(typed, 0);
            let typed: i32 = pe.atomic_typed(VaOp::Fetch, w, 0i32, 0, target)?;
            assert_eq!(typed, -3, "sign kept through the 32-bit form");
            pe.atomic(VaOp::Set, VaWidth::W64, w, 0, 0, target)?;
        }
        pe.finalize()?;
        Ok(0)
    });
    all_ok(&out, n);
}

fn wait_all(ivars: u64, n: usize, cmp: Cmp, value: u64) -> Wait<'static> {
    Wait { kind: Kind { width: 4, signed: true }, mode: Mode::All, ivars, n, status: None, cmp, values: None, value }
}

#[test]
fn waits_and_tests_over_vectors_in_every_mode() {
    let n = 2;
    let out = Cluster::run(n, |t| {
        let mut pe = start(t)?;
        let me = pe.my_pe();
        let flags = pe.calloc(8, 4)?.unwrap();
        if me == 1 {
            for i in 0..8u64 {
                pe.putmem(flags + 4 * i, &(-(i as i32) - 1).to_le_bytes(), 0)?;
            }
        } else {
            // Signed: every flag becomes negative.
            assert_eq!(pe.wait(&wait_all(flags, 8, Cmp::Lt, 0), true, None)?, 1);
            let any = Wait { mode: Mode::Any, ..wait_all(flags, 8, Cmp::Eq, (-5i64) as u64) };
            let seen: Vec<i32> =
                (0..8).map(|i| i32::from_le_bytes(bytes(flags + 4 * i, 4).try_into().unwrap())).collect();
            assert_eq!(pe.wait(&any, false, None)?, 4, "{seen:?}");
            let status = [1, 0, 0, 0, 1, 0, 0, 0];
            let any = Wait { mode: Mode::Any, status: Some(&status), ..wait_all(flags, 8, Cmp::Eq, (-5i64) as u64) };
            assert_eq!(pe.wait(&any, false, None)?, usize::MAX, "the one that matches is skipped");
            let mut found = [0usize; 8];
            let some = Wait { mode: Mode::Some, status: Some(&status), ..wait_all(flags, 8, Cmp::Le, (-3i64) as u64) };
            assert_eq!(pe.wait(&some, true, Some(&mut found))?, 5);
            assert_eq!(&found[..5], &[2, 3, 5, 6, 7]);
            let values: Vec<i32> = (0..8).map(|i| -i - 1).collect();
            let each = Wait { values: Some(values.as_ptr() as u64), ..wait_all(flags, 8, Cmp::Eq, 0) };
            assert_eq!(pe.wait(&each, false, None)?, 1, "each against its own value");
            let unsigned = Wait { kind: Kind { width: 4, signed: false }, ..wait_all(flags, 8, Cmp::Gt, 0x7fff_ffff) };
            assert_eq!(pe.wait(&unsigned, false, None)?, 1, "unsigned: all are above 2^31");
            assert_eq!(pe.wait(&wait_all(flags, 8, Cmp::Gt, 0), false, None)?, 0, "test: not met");
            let none = [1; 8];
            let skip = Wait { mode: Mode::Any, status: Some(&none), ..wait_all(flags, 8, Cmp::Eq, 0) };
            assert_eq!(pe.wait(&skip, true, None)?, usize::MAX, "all skipped: at once");
            let some = Wait { mode: Mode::Some, ..wait_all(flags, 8, Cmp::Eq, 0) };
            assert_eq!(pe.wait(&some, true, None), Err(ShmemError::BadArgument("wait SOME without indices")));
        }
        pe.finalize()?;
        Ok(0)
    });
    all_ok(&out, n);
}

#[test]
fn collectives_over_the_world_and_over_strided_sets() {
    let n = 4;
    let out = Cluster::run(n, |t| {
        let mut pe = start(t)?;
        let me = pe.my_pe();
        let world = ActiveSet::world(4);
        let src = pe.malloc(256, 16)?.unwrap();
        let dest = pe.calloc(4, 256)?.unwrap();
        for i in 0..256 {
            bytes(src, 256)[i] = (i as u8).wrapping_add(me as u8 * 16);
        }
        // Broadcast from member 2, with and without the root's own dest.
        bytes(dest, 64).fill(0xee);
        pe.broadcast(dest, src, 64, 2, false, world)?;
        let from2: Vec<u8> = (0..64).map(|i| i as u8 + 32).collect();
        if me == 2 {
            assert!(bytes(dest, 64).iter().all(|&b| b == 0xee), "root's dest untouched");
        } else {
            assert_eq!(&bytes(dest, 64)[..], &from2[..]);
        }
        pe.broadcast(dest, src, 64, 2, true, world)?;
        assert_eq!(&bytes(dest, 64)[..], &from2[..]);
        // fcollect: 16 bytes each; collect: me + 1 bytes each.
        pe.fcollect(dest, src, 16, world)?;
        for j in 0..4usize {
            assert_eq!(bytes(dest + 16 * j as u64, 1)[0], j as u8 * 16);
        }
        pe.collect(dest, src, usize::from(me) + 1, world)?;
        let want: Vec<u8> = (0..4u8).flat_map(|j| (0..=j).map(move |i| i + j * 16)).collect();
        assert_eq!(&bytes(dest, want.len())[..], &want[..]);
        // alltoall: block j of my src to PE j.
        pe.alltoall(dest, src, 8, world)?;
        for j in 0..4u8 {
            assert_eq!(bytes(dest + 8 * u64::from(j), 1)[0], 8 * me as u8 + 16 * j, "block {j}");
        }
        // alltoalls with strides 2 (dest) and 3 (src), 2 elements of 4 bytes.
        bytes(dest, 1024).fill(0);
        pe.alltoalls(dest, src, 2, 3, 2, 4, world)?;
        for j in 0..4u64 {
            let block = dest + j * 2 * 2 * 4;
            let s = |k: u64| (me as u64 * 2 * 3 + 3 * k) * 4 + j * 16;
            assert_eq!(bytes(block, 1)[0] as u64, s(0) % 256);
            assert_eq!(bytes(block + 8, 1)[0] as u64, s(1) % 256);
        }
        // A set of PEs 1 and 3 (start 1, stride 2): the others do not take part.
        if me % 2 == 1 {
            let odd = ActiveSet { start: 1, stride: 2, size: 2 };
            pe.sync(odd)?;
            pe.fcollect(dest, src, 4, odd)?;
            assert_eq!(bytes(dest, 8)[..], [16, 17, 18, 19, 48, 49, 50, 51]);
            assert!(matches!(
                pe.sync(ActiveSet { start: 0, stride: 2, size: 2 }),
                Err(ShmemError::BadActiveSet { .. })
            ));
        }
        assert!(matches!(pe.sync(ActiveSet { start: 0, stride: 1, size: 5 }), Err(ShmemError::BadActiveSet { .. })));
        pe.barrier_all()?;
        // Reductions: in place, integer, float and complex, and more than one scratch chunk.
        let big = 10_000usize;
        let ints = pe.malloc((8 * big) as u64, 8)?.unwrap();
        for i in 0..big {
            bytes(ints + 8 * i as u64, 8).copy_from_slice(&((i as i64) * (me as i64 + 1) - 7).to_le_bytes());
        }
        pe.reduce(ReduceOp::Sum, ReduceType::Signed(8), ints, ints, big, world)?;
        for i in [0usize, 1, 4095, 4096, 9999] {
            let v = i64::from_le_bytes(bytes(ints + 8 * i as u64, 8).try_into().unwrap());
            assert_eq!(v, 10 * i as i64 - 28, "element {i}");
        }
        let f = pe.malloc(16, 8)?.unwrap();
        bytes(f, 8).copy_from_slice(&(me as f64 + 0.5).to_le_bytes());
        pe.reduce(ReduceOp::Max, ReduceType::Float(8), f + 8, f, 1, world)?;
        assert_eq!(f64::from_le_bytes(bytes(f + 8, 8).try_into().unwrap()), 3.5);
        let z = pe.malloc(32, 8)?.unwrap();
        bytes(z, 8).copy_from_slice(&[0f32.to_le_bytes(), 1f32.to_le_bytes()].concat());
        pe.reduce(ReduceOp::Prod, ReduceType::Complex(8), z + 16, z, 1, world)?;
        let re = f32::from_le_bytes(bytes(z + 16, 4).try_into().unwrap());
        assert_eq!(re, 1.0, "i^4 = 1");
        let u = pe.malloc(8, 8)?.unwrap();
        bytes(u, 2).copy_from_slice(&(1u16 << me).to_le_bytes());
        pe.reduce(ReduceOp::Or, ReduceType::Unsigned(2), u + 4, u, 1, world)?;
        assert_eq!(u16::from_le_bytes(bytes(u + 4, 2).try_into().unwrap()), 0b1111);
        assert_eq!(
            pe.reduce(ReduceOp::Xor, ReduceType::Float(4), u, u, 1, world),
            Err(ShmemError::BadArgument("bitwise reduction of floating point"))
        );
        pe.finalize()?;
        Ok(0)
    });
    all_ok(&out, n);
}

#[test]
fn zero_length_collectives_take_any_address_and_still_synchronise() {
    let n = 2;
    let out = Cluster::run(n, |t| {
        let mut pe = start(t)?;
        let world = ActiveSet::world(2);
        // NULL buffers, as tests-sos `nop_collectives` passes them.
        pe.broadcast(0, 0, 0, 0, true, world)?;
        pe.fcollect(0, 0, 0, world)?;
        pe.collect(0, 0, 0, world)?;
        pe.alltoall(0, 0, 0, world)?;
        pe.reduce(ReduceOp::Sum, ReduceType::Signed(8), 0, 0, 0, world)?;
        pe.putmem(0, &[], 1 - pe.my_pe() as i64)?;
        // A length makes the address matter again.
        assert_eq!(pe.fcollect(0, 0, 8, world), Err(ShmemError::NotSymmetric(0, 16)));
        pe.barrier_all()?;
        Ok(0)
    });
    all_ok(&out, n);
}

#[test]
fn a_lock_makes_read_modify_write_by_rma_exclusive() {
    let n = 4;
    let out = Cluster::run(n, |t| {
        let mut pe = start(t)?;
        let lock = pe.calloc(1, 8)?.unwrap();
        let total = pe.calloc(1, 8)?.unwrap();
        for _ in 0..20 {
            pe.set_lock(lock)?;
            let mut v = [0u8; 8];
            pe.getmem(&mut v, total, 0)?;
            std::thread::yield_now();
            pe.putmem(total, &(u64::from_le_bytes(v) + 1).to_le_bytes(), 0)?;
            pe.clear_lock(lock)?;
        }
        pe.barrier_all()?;
        if pe.my_pe() == 0 {
            assert_eq!(word(total), 80, "no update lost");
            assert_eq!(pe.test_lock(lock)?, 0, "free: taken");
            assert_eq!(pe.test_lock(lock)?, 1, "held");
            pe.clear_lock(lock)?;
            assert_eq!(pe.clear_lock(lock), Err(ShmemError::BadArgument("shmem_clear_lock of a lock nobody holds")));
        }
        pe.finalize()?;
        Ok(0)
    });
    all_ok(&out, n);
}

#[test]
fn realloc_keeps_contents_and_free_of_a_foreign_pointer_is_an_error_others_see() {
    let n = 3;
    let out = Cluster::run(n, |t| {
        let mut pe = start(t)?;
        let a = pe.malloc(32, 16)?.unwrap();
        let b = pe.malloc(32, 16)?.unwrap();
        bytes(a, 32).fill(5);
        let grown = pe.realloc(a, 4096)?.unwrap();
        assert_ne!(grown, a, "b was in the way");
        assert!(bytes(grown, 32).iter().all(|&x| x == 5));
        assert_eq!(pe.realloc(b, 0)?, None);
        assert_eq!(pe.allocations(), 1);
        assert_eq!(pe.malloc(0, 16)?, None);
        assert_eq!(pe.malloc(HEAP, 16)?, None, "no room: NULL everywhere");
        assert_eq!(pe.calloc(u64::MAX, 2)?, None, "an impossible size too");
        pe.free(grown)?;
        assert_eq!(pe.allocations(), 0);
        // PE 1 frees something malloc did not return; the others meet it in their barrier.
        if pe.my_pe() == 1 {
            let stack = [0u8; 16];
            let bad = stack.as_ptr() as u64;
            assert_eq!(pe.free(bad), Err(ShmemError::ForeignFree(bad)));
            assert_eq!(pe.free(grown + 16), Err(ShmemError::ForeignFree(grown + 16)));
            return Ok(7);
        }
        let started = std::time::Instant::now();
        let e = linger(pe.barrier_all()).unwrap_err();
        assert!(started.elapsed() < std::time::Duration::from_secs(10), "no hang");
        Err(e)
    });
    assert_eq!(out.results[1], Some(Ok(7)));
    for pe in [0, 2] {
        assert_eq!(out.results[pe], Some(Err(ShmemError::PeGone(1))), "PE {pe}: {:?}", out.results);
    }
}

#[test]
fn bad_pes_and_non_symmetric_addresses_are_refused_and_lose_nothing() {
    let n = 2;
    let out = Cluster::run(n, |t| {
        let mut pe = start(t)?;
        let me = i64::from(pe.my_pe());
        let buf = pe.calloc(1, 64)?.unwrap();
        let stack = [1u8; 8];
        let local = stack.as_ptr() as u64;
        assert_eq!(pe.putmem(buf, &stack, 2), Err(ShmemError::NoSuchPe(2)));
        assert_eq!(pe.putmem(buf, &stack, -1), Err(ShmemError::NoSuchPe(-1)));
        assert_eq!(pe.putmem(local, &stack, 1 - me), Err(ShmemError::NotSymmetric(local, 8)));
        let (base, len) = pe.heap_range();
        assert_eq!(pe.putmem(base + len - 4, &stack, 1 - me), Err(ShmemError::NotSymmetric(base + len - 4, 8)));
        assert_eq!(pe.atomic(VaOp::FetchAdd, VaWidth::W64, local, 1, 0, 0), Err(ShmemError::NotSymmetric(local, 8)));
        assert_eq!(
            pe.atomic(VaOp::FetchAdd, VaWidth::W64, buf + 4, 1, 0, 0),
            Err(ShmemError::BadArgument("atomic address not aligned to its width"))
        );
        assert_eq!(pe.atomic(VaOp::Fetch, VaWidth::W64, buf, 0, 0, 9), Err(ShmemError::NoSuchPe(9)));
        assert_eq!(pe.set_lock(local), Err(ShmemError::NotSymmetric(local, 8)));
        assert!(!pe.addr_accessible(local, 0));
        assert!(pe.addr_accessible(buf, 1));
        assert_eq!(pe.ptr(buf, me), Some(buf));
        assert_eq!(pe.ptr(buf, 1 - me), None);
        assert!(pe.pe_accessible(1 - me)?);
        assert!(!pe.pe_accessible(5)?);
        // The globals (the image) are symmetric too.
        let (image, _) = pe.transport().image();
        pe.barrier_all()?;
        pe.putmem(image + 8, &[me as u8 + 1; 8], 1 - me)?;
        pe.barrier_all()?;
        assert_eq!(word(image + 8), u64::from_le_bytes([(1 - me) as u8 + 1; 8]));
        assert!(bytes(buf, 64).iter().all(|&b| b == 0), "nothing refused was written");
        pe.finalize()?;
        Ok(0)
    });
    all_ok(&out, n);
}

#[test]
fn a_wait_or_barrier_after_a_pe_died_names_it_instead_of_hanging() {
    let n = 3;
    let out = Cluster::run(n, |t| {
        let mut pe = start(t)?;
        let flag = pe.calloc(1, 8)?.unwrap();
        if pe.my_pe() == 2 {
            return Ok(9); // ends without finalize
        }
        let w = Wait {
            kind: Kind { width: 8, signed: false },
            mode: Mode::All,
            ivars: flag,
            n: 1,
            status: None,
            cmp: Cmp::Ne,
            values: None,
            value: 0,
        };
        if pe.my_pe() == 1 {
            return linger(pe.wait(&w, true, None).map(|_| 0));
        }
        // PE 0 waits for PE 2's sync signal.
        linger(pe.barrier_all().map(|_| 0))
    });
    assert_eq!(out.results[2], Some(Ok(9)));
    assert_eq!(out.results[0], Some(Err(ShmemError::PeGone(2))));
    assert_eq!(out.results[1], Some(Err(ShmemError::PeGone(2))));
}

#[test]
fn finalize_on_pe_zero_waits_for_the_others_to_end_and_global_exit_ends_all() {
    let out = Cluster::run(3, |t| {
        let mut pe = start(t)?;
        let me = pe.my_pe();
        let (image, _) = pe.transport().image();
        pe.finalize()?;
        if me != 0 {
            std::thread::sleep(std::time::Duration::from_millis(100));
            set_word(image, 1);
            return Ok(0);
        }
        Ok(pe.transport().cluster_alive_count())
    });
    assert_eq!(out.results[0], Some(Ok(1)), "only PE 0 itself was alive when its finalize returned");
    let out = Cluster::run(3, |t| {
        let mut pe = start(t)?;
        if pe.my_pe() == 1 {
            pe.global_exit(300);
        }
        let flag = pe.calloc(1, 8)?.unwrap();
        let w = Wait {
            kind: Kind { width: 8, signed: false },
            mode: Mode::All,
            ivars: flag,
            n: 1,
            status: None,
            cmp: Cmp::Eq,
            values: None,
            value: 1,
        };
        pe.wait(&w, true, None).map(|_| 0)
    });
    assert_eq!(out.job_exit, Some((1, 255)), "a status above 255 becomes 255");
    assert_eq!(out.results[1], Some(Ok(255)));
    assert!(matches!(out.results[0], Some(Err(ShmemError::PeGone(_)))));
}

#[test]
fn a_bad_launch_is_refused() {
    let out = Cluster::run(2, |t| {
        if t.node() == 0 {
            // PE 0 tags itself as PE 1: it is not on node 1.
            return Err(launch::role(Some(launch::tag(1, 2)), 0, 2).unwrap_err());
        }
        Ok(0)
    });
    assert_eq!(out.results[0], Some(Err(ShmemError::BadLaunch(0))));
    let out = Cluster::run(2, |t| Pe::start(t, 100).map(|_| 0));
    assert_eq!(out.results[0], Some(Err(ShmemError::BadArgument("symmetric heap size"))));
}
