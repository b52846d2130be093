//! Tests that run on every node of a cluster at once (boot argument `cluster`): each node
//! finds the others through the global address window.

use super::cluster_support::{FLAGS, ROLL_CALL, barrier, local, remote, rendezvous, wait_for, whoami};
use super::ensure;
use board::layout::TEST_BUFFER;
use boot::testkit::{Test, TestResult};
use core::arch::asm;

pub const TESTS: &[Test] = &[
    Test::new("cluster", "every_node_sees_every_id", roll_call),
    Test::new("cluster", "window_copies_64k_to_the_next_node_which_verifies_it", ring_copy),
    Test::new("cluster", "remote_accesses_of_every_size_round_trip", remote_sizes),
];

const PRESENT: u64 = 0xc0de_0000;

fn roll_call() -> TestResult {
    let (me, n) = whoami()?;
    ensure(n >= 2, "a cluster test needs two nodes or more")?;
    // SAFETY: node 0's rendezvous page is reserved for these words.
    unsafe { remote::<u64>(0, rendezvous(ROLL_CALL, me)).write_volatile(PRESENT | u64::from(me)) };
    barrier(1)?;
    for i in 0..n {
        // SAFETY: as above.
        let entry = unsafe { remote::<u64>(0, rendezvous(ROLL_CALL, i)).read_volatile() };
        ensure(entry == PRESENT | u64::from(i), "a node's id is missing from the roll call")?;
    }
    defmt::println!("node {=u16} sees all {=u16} nodes", me, n);
    Ok(())
}

const COPY_BYTES: u64 = 64 * 1024;

fn pattern(sender: u16, i: u64) -> u128 {
    let x = (u64::from(sender) + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ i.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    u128::from(x) << 64 | u128::from(!x ^ i)
}

fn ring_copy() -> TestResult {
    let (me, n) = whoami()?;
    // One sender at a time: node s writes into node s+1, which verifies; then the next.
    for sender in 0..n {
        let receiver = (sender + 1) % n;
        if me == sender {
            for i in 0..COPY_BYTES / 16 {
                let dst = remote::<u128>(receiver, TEST_BUFFER + i * 16);
                let value = pattern(sender, i);
                // SAFETY: the receiver's TEST_BUFFER is reserved for this test; 128-bit stores
                // through the window.
                unsafe {
                    asm!("ldr {t:q}, [{src}]", "str {t:q}, [{dst}]", src = in(reg) &value, dst = in(reg) dst, t = out(vreg) _)
                };
            }
            // SAFETY: the receiver's flag word for this sender.
            unsafe { remote::<u64>(receiver, rendezvous(FLAGS, sender)).write_volatile(1) };
        }
        if me == receiver {
            // SAFETY: our own flag word, set remotely by the sender.
            wait_for(60, || unsafe { local::<u64>(rendezvous(FLAGS, sender)).read_volatile() } == 1)?;
            for i in 0..COPY_BYTES / 16 {
                // SAFETY: our own TEST_BUFFER, written by the sender.
                let got = unsafe { local::<u128>(TEST_BUFFER + i * 16).read_volatile() };
                ensure(got == pattern(sender, i), "the copied data differs")?;
            }
        }
        barrier(10 + u64::from(sender))?;
    }
    Ok(())
}

fn remote_sizes() -> TestResult {
    let (me, n) = whoami()?;
    let next = (me + 1) % n;
    let base = TEST_BUFFER + 0x3_8000 + u64::from(me) * 0x100;
    let at = |off: u64| remote::<u8>(next, base + off);
    let seed = u64::from(me) << 56;
    // SAFETY: each node uses its own 256-byte slice of the next node's TEST_BUFFER.
    unsafe {
        at(0x00).write_volatile(0x5a ^ me as u8);
        (at(0x02) as *mut u16).write_volatile(0x1234 ^ me);
        (at(0x04) as *mut u32).write_volatile(0x89ab_cdef ^ u32::from(me));
        (at(0x08) as *mut u64).write_volatile(seed | 0x00ff_00ff_00ff);
        let q: u128 = u128::from(seed | 1) << 64 | u128::from(seed | 2);
        asm!("ldr {t:q}, [{src}]", "str {t:q}, [{dst}]", src = in(reg) &q, dst = in(reg) at(0x10), t = out(vreg) _);
        ensure(at(0x00).read_volatile() == 0x5a ^ me as u8, "8-bit round trip")?;
        ensure((at(0x02) as *const u16).read_volatile() == 0x1234 ^ me, "16-bit round trip")?;
        ensure((at(0x04) as *const u32).read_volatile() == 0x89ab_cdef ^ u32::from(me), "32-bit round trip")?;
        ensure((at(0x08) as *const u64).read_volatile() == seed | 0x00ff_00ff_00ff, "64-bit round trip")?;
        let mut back: u128 = 0;
        asm!("ldr {t:q}, [{src}]", "str {t:q}, [{dst}]", src = in(reg) at(0x10), dst = in(reg) &mut back, t = out(vreg) _);
        ensure(back == q, "128-bit round trip")?;
        // The same bytes, read back one at a time: the 128-bit store landed byte-exact.
        for k in 0..16 {
            ensure(at(0x10 + k).read_volatile() == (q >> (8 * k)) as u8, "128-bit store not byte-exact")?;
        }
    }
    barrier(100)
}
