//! Tests that run on every node of a cluster at once (boot argument `cluster`): each node
//! finds the others through the global address window.

use crate::cluster_support::{FLAGS, ROLL_CALL, barrier, local, remote, rendezvous, wait_for, whoami};
use crate::ensure;
use crate::testkit::{Test, TestResult};
use board::layout::TEST_BUFFER;
use hal::mmio::{read_u128, write_u128};

pub const TESTS: &[Test] = &[
    Test::new("cluster", "every_node_sees_every_id", roll_call),
    Test::new("cluster", "window_copies_64k_to_the_next_node_which_verifies_it", ring_copy),
    Test::new("cluster", "remote_accesses_of_every_size_round_trip", remote_sizes),
    Test::new("cluster", "gsas_fad_from_four_processes_on_every_node_counts_exactly", gsas::fad),
    Test::new("cluster", "gsas_cas_spin_lock_keeps_a_shared_structure_consistent", gsas::cas_lock),
    Test::new("cluster", "gsas_alloc_and_free_on_every_node_from_every_node", gsas::alloc_free),
    Test::new("cluster", "gsas_write128_and_read4k_round_trip_to_the_next_node", gsas::write128_read4k),
    Test::new("cluster", "gsas_remote_spawn_tree_of_depth_3_with_arguments", gsas::spawn_tree),
    Test::new("cluster", "gsas_another_nodes_process_cannot_touch_a_private_page", gsas::remote_intruder),
    Test::new("cluster", "gsas_a_notification_crosses_nodes", gsas::notification),
    Test::new("cluster", "gsas_a_signal_mode_notification_from_another_node_ends_a_sleep", gsas::signal_across),
    Test::new("cluster", "gsas_every_kernel_pings_every_other_kernel", gsas::kernel_pings),
    Test::new("cluster", "gsas_fad_mesh_counts_exactly_and_a_dead_node_is_unreachable_at_once", gsas::fad_mesh),
];

/// The global shared address space across nodes (seed D3.6 section 2): every node runs these
/// together; one node sets a scene, publishes an address, and all take part.
mod gsas {
    use crate::cluster_support::{barrier, publish, published, sees_alive, wait_for, whoami};
    use crate::ensure;
    use crate::gsas::{expect_status, expect_status_with_args, finish, notify_arg, result_of, run_together};
    use crate::testkit::TestResult;
    use a53_kernel::process::lifecycle;
    use a53_kernel::process::table::{Exit, Reap};
    use alloc::format;
    use alloc::string::String;
    use alloc::vec::Vec;
    use unimem_user::args::spawn_tree;

    const SECONDS: u64 = 180;

    fn home(n: u16) -> u16 {
        2.min(n - 1)
    }

    /// Four processes on every node each add 1 to one counter 1000 times.
    pub fn fad() -> TestResult {
        const PER_NODE: u64 = 4;
        const ADDS: u64 = 1000;
        let (me, n) = whoami()?;
        barrier(200)?;
        if me == home(n) {
            let counter = result_of("alloc-counter", u64::from(me))?;
            ensure(counter >> 48 == u64::from(me), "the counter is not on its home node")?;
            publish(0, counter);
        }
        barrier(201)?;
        let counter = published(0);
        let mine = run_together("fad-worker", counter, PER_NODE as usize, SECONDS);
        barrier(202)?;
        mine?;
        if me == home(n) {
            let total = result_of("read64", counter)?;
            defmt::println!("counter on node {=u16}: {=u64}", me, total);
            ensure(total == PER_NODE * ADDS * u64::from(n), "the counter is not exactly the number of adds")?;
        }
        barrier(203)
    }

    /// Two processes per node update two counters under one CAS spin lock.
    pub fn cas_lock() -> TestResult {
        const PER_NODE: u64 = 2;
        const ITERATIONS: u64 = unimem_user::args::cas_lock::ITERATIONS as u64;
        let (me, n) = whoami()?;
        barrier(300)?;
        if me == 0 {
            publish(1, result_of("alloc-counter", 0)?);
        }
        barrier(301)?;
        let page = published(1);
        let mine = run_together("cas-lock", page, PER_NODE as usize, SECONDS);
        barrier(302)?;
        mine?;
        if me == 0 {
            let (a, b) = (result_of("read64", page + 8)?, result_of("read64", page + 16)?);
            let lock = result_of("read64", page)?;
            defmt::println!("counters {=u64} and {=u64}, lock {=u64:#x}", a, b, lock);
            ensure(a == b && a == PER_NODE * ITERATIONS * u64::from(n), "the protected counters disagree")?;
            ensure(lock == 0, "the lock was left held")?;
        }
        barrier(303)
    }

    pub fn alloc_free() -> TestResult {
        barrier(400)?;
        let mine = expect_status("alloc-free", 0, 0);
        barrier(401)?;
        mine
    }

    pub fn write128_read4k() -> TestResult {
        let (me, n) = whoami()?;
        barrier(500)?;
        let mine = expect_status("write128-read4k", u64::from((me + 1) % n), 0);
        barrier(501)?;
        mine
    }

    /// Node 0 spawns a tree: every process adds 1 to a counter and spawns two children on other
    /// nodes until depth 0 (1 + 2 + 4 + 8 = 15 processes for depth 3).
    pub fn spawn_tree() -> TestResult {
        const DEPTH: u8 = 3;
        const PROCESSES: u64 = 15;
        let (me, _) = whoami()?;
        barrier(600)?;
        let mut result = Ok(());
        if me == 0 {
            result = (|| {
                let counter = result_of("alloc-counter", 0)?;
                let counter_address = proto::gsas::GlobalAddress::from_raw(counter);
                let arg = spawn_tree::pack(counter_address, DEPTH).ok_or("the counter is not a page")?;
                expect_status("spawn-tree", arg, 0)?;
                // The children run on their own nodes, reaped there: watch the counter.
                let give_up = a53_kernel::timer::now() + SECONDS * a53_kernel::timer::hz();
                loop {
                    let count = result_of("read64", counter)?;
                    if count == PROCESSES {
                        return Ok(());
                    }
                    ensure(count < PROCESSES, "more processes than the tree has")?;
                    ensure(a53_kernel::timer::now() < give_up, "the tree did not complete")?;
                }
            })();
        }
        barrier(601)?;
        result
    }

    /// A process of node 1 tries a private page of node 0's process.
    pub fn remote_intruder() -> TestResult {
        let (me, _) = whoami()?;
        barrier(700)?;
        if me == 0 {
            publish(2, result_of("private-owner", 0)?);
        }
        barrier(701)?;
        let result = if me == 1 { expect_status("intruder", published(2), 0) } else { sees_alive(&[0, 1]) };
        barrier(702)?;
        result
    }

    /// Every node adds to a counter on every node (`fad-mesh`), then each checks its own counter
    /// exactly (`fad-mesh-check`). With `victim=N` among the boot arguments (or `victim=N,M`),
    /// node N is killed halfway (the runner does it when N says so): every request to it must
    /// then end in `NodeUnreachable` within a second (`unreachable-within-ms=MS`: within that,
    /// for a cluster over MPI ranks, whose dead rank is found by its silence), and the live
    /// nodes' counts must still be exact.
    pub fn fad_mesh() -> TestResult {
        const ROUNDS: u64 = 40;
        /// `VALUES` slots of the counter pages: `PAGES + node`.
        const PAGES: u16 = 16;
        let (me, n) = whoami()?;
        let victim = a53_kernel::kernel::boot_args().value("victim").unwrap_or("-");
        barrier(900)?;
        publish(PAGES + me, result_of("alloc-counter", u64::from(me))?);
        barrier(901)?;
        let pages: Vec<String> = (0..n).map(|i| format!("{:#x}", published(PAGES + i))).collect();
        let rounds = format!("{ROUNDS}");
        let within = a53_kernel::kernel::boot_args().value("unreachable-within-ms");
        let args: Vec<&str> =
            [rounds.as_str(), victim].into_iter().chain(pages.iter().map(String::as_str)).chain(within).collect();
        let worked = expect_status_with_args("fad-mesh", &args, 0);
        barrier(902)?;
        worked?;
        let checked = expect_status_with_args("fad-mesh-check", &args[1..], 0);
        barrier(903)?;
        checked
    }

    /// Node 1's `mailbox-modes` Sleeper sleeps 30 s; node 0's Waker sends it an event-mode and
    /// a signal-mode notification: the signal ends the sleep (`Interrupted`) at once.
    pub fn signal_across() -> TestResult {
        use unimem_user::args::mailbox_modes::{Role, pack};
        let (me, _) = whoami()?;
        barrier(810)?;
        let sleeper = if me == 1 {
            Some(lifecycle::spawn("mailbox-modes", Some(pack(Role::Sleeper)), Reap::Wait).map_err(|_| "no sleeper")?)
        } else {
            None
        };
        let woke = if me == 0 {
            expect_status("mailbox-modes", pack(Role::Waker { node: 1 }), 0)
        } else {
            sees_alive(&[0, 1])
        };
        let slept = match sleeper {
            Some(h) => match finish(h, SECONDS) {
                Ok(Exit::Status(0)) => Ok(()),
                _ => Err("the sleeper was not woken by the signal"),
            },
            None => Ok(()),
        };
        barrier(811)?;
        woke.and(slept)
    }

    /// Every node's kernel sends a Ping (a kernel opcode) to every other node's kernel through
    /// its own request interface; each one's ping handler answers with a Pong the same way.
    pub fn kernel_pings() -> TestResult {
        use a53_kernel::gsas_node::{self, kernel_client};
        use core::sync::atomic::Ordering;
        let (me, n) = whoami()?;
        barrier(820)?;
        let delivered = kernel_client::DELIVERED.load(Ordering::Relaxed);
        let mut result = Ok(());
        for other in (0..n).filter(|&o| o != me) {
            match gsas_node::ping(other, core::time::Duration::from_secs(2)) {
                Ok(true) => {}
                Ok(false) => result = Err("a kernel's Pong did not come back within 2 s"),
                Err(_) => result = Err("the kernel could not send its Ping"),
            }
        }
        // Every Ping and every Pong got a status reply from its target's service.
        let replied = wait_for(5, || kernel_client::DELIVERED.load(Ordering::Relaxed) >= delivered + u64::from(n - 1));
        barrier(821)?;
        result.and(replied.map_err(|_| "the targets' services did not confirm the kernel's notifications"))
    }

    /// Node 1's process blocks on opcode 10; node 0's process notifies it.
    pub fn notification() -> TestResult {
        const OPCODE: u8 = 10;
        const PAYLOAD: u64 = 0xabc_def;
        let (me, _) = whoami()?;
        barrier(800)?;
        let receiver = if me == 1 {
            Some(lifecycle::spawn("notify-receiver", Some(u64::from(OPCODE)), Reap::Wait).map_err(|_| "no receiver")?)
        } else {
            None
        };
        // Let the receiver register before anyone sends.
        let t = a53_kernel::timer::now() + a53_kernel::timer::hz();
        a53_kernel::arch::cpu::idle_until(|| a53_kernel::timer::now() > t);
        barrier(801)?;
        let sent = if me == 0 {
            expect_status("notify-sender", notify_arg(1, OPCODE, PAYLOAD)?, 0)
        } else {
            sees_alive(&[0, 1])
        };
        let received = match receiver {
            Some(h) => match finish(h, SECONDS) {
                Ok(Exit::Status(p)) if p == PAYLOAD => Ok(()),
                _ => Err("the notification did not arrive"),
            },
            None => Ok(()),
        };
        barrier(802)?;
        sent.and(received)
    }
}

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
                unsafe { write_u128(dst, value) };
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
        write_u128(at(0x10) as *mut u128, q);
        ensure(at(0x00).read_volatile() == 0x5a ^ me as u8, "8-bit round trip")?;
        ensure((at(0x02) as *const u16).read_volatile() == 0x1234 ^ me, "16-bit round trip")?;
        ensure((at(0x04) as *const u32).read_volatile() == 0x89ab_cdef ^ u32::from(me), "32-bit round trip")?;
        ensure((at(0x08) as *const u64).read_volatile() == seed | 0x00ff_00ff_00ff, "64-bit round trip")?;
        let back = read_u128(at(0x10) as *const u128);
        ensure(back == q, "128-bit round trip")?;
        // The same bytes, read back one at a time: the 128-bit store landed byte-exact.
        for k in 0..16 {
            ensure(at(0x10 + k).read_volatile() == (q >> (8 * k)) as u8, "128-bit store not byte-exact")?;
        }
    }
    barrier(100)
}
