//! Active Access on target (`docs/hw/active-access.md`): `active-aa` on node 0 against an owner
//! on the last node (a neighbour on 2 nodes, two hops away on 4), every semantic of the seed's
//! checked through the owner's log and memory: active put, put logging, get logging and
//! counting, E = 0, incremental checkpointing, the active flush, back-pressure of a full log,
//! and the kernel's refusals (a foreign IUID, the log itself, an unknown action); and
//! `ACTIVE_CLOSE` (`active-aa`'s `Closer`): IUIDs given back and taken again, and a closed log
//! unmapped.

use crate::cluster_support::{barrier, barrier_within, whoami};
use crate::gsas::run;
use crate::rdma::expect_zero;
use crate::testkit::{Test, TestResult};
use a53_kernel::rdma_node;
use unimem_user::args::active_aa::{Role, pack};
use unimem_user::args::active_notify::{Role as NotifyRole, pack as notify_pack};

pub const CLUSTER_TESTS: &[Test] = &[
    Test::new("cluster", "rdma_active_access_every_semantic_against_the_last_node", every_semantic),
    Test::new("cluster", "rdma_active_access_dht_one_put_against_cas_both_tables_exact", dht),
    Test::new("cluster", "rdma_active_access_logs_tell_their_owner_in_read_signal_and_event_mode", notices),
    Test::new("cluster", "rdma_active_access_a_closed_log_is_unmapped_and_its_iuid_taken_again", closed),
];

fn every_semantic() -> TestResult {
    let (me, n) = whoami()?;
    rdma_node::drain_kernel_log();
    let kernel_log = rdma_node::kernel_log_entries();
    barrier(3000)?;
    let check = || {
        crate::ensure(rdma_node::available(), "this node has no RDMA")?;
        expect_zero("active-aa", run("active-aa", pack(Role::Semantics { node: n - 1 }))?)
    };
    let result = if me == 0 { check() } else { Ok(()) };
    barrier_within(3001, 600)?;
    // The owner's node took the one E = 0 active put into its kernel fault log.
    rdma_node::drain_kernel_log();
    let taken = rdma_node::kernel_log_entries() - kernel_log;
    if me == n - 1 && result.is_ok() {
        crate::ensure(taken == 1, "the owner's kernel fault log did not take exactly the E=0 put")?;
    } else if me != n - 1 {
        crate::ensure(taken == 0, "a kernel fault log entry on a node no test aimed at")?;
    }
    result
}

/// The seed's DHT (Listings 2 and 3) at 5 % and 25 % collisions, against the last node: both
/// volumes are checked exactly by their owner, and the remote operations counted.
fn dht() -> TestResult {
    let (me, n) = whoami()?;
    barrier(3002)?;
    let check = || {
        crate::ensure(rdma_node::available(), "this node has no RDMA")?;
        for pct in [5, 25] {
            expect_zero("active-aa dht", run("active-aa", pack(Role::Dht { node: n - 1, collide_pct: pct }))?)?;
        }
        Ok(())
    };
    let result = if me == 0 { check() } else { Ok(()) };
    barrier_within(3003, 600)?;
    result
}

/// A log's notices (`ACTIVE_NOTIFY`): `active-notify` on node 0 against an owner on the last
/// node, told of one put each in read mode (a blocked `Log::wait`), signal mode (a sleep ended)
/// and event mode (`MAILBOX_EVENT`), and of nothing once polled again; the owner's node counts
/// the notices its kernel delivered.
fn notices() -> TestResult {
    let (me, n) = whoami()?;
    let before = rdma_node::log_notices();
    barrier(3004)?;
    let check = || {
        crate::ensure(rdma_node::available(), "this node has no RDMA")?;
        expect_zero("active-notify", run("active-notify", notify_pack(NotifyRole::Initiator { node: n - 1 }))?)
    };
    let result = if me == 0 { check() } else { Ok(()) };
    barrier_within(3005, 600)?;
    if me == n - 1 && result.is_ok() {
        let told = rdma_node::log_notices() - before;
        crate::ensure(told >= 3, "the owner's kernel delivered fewer than the three notices")?;
    }
    result
}

/// `ACTIVE_CLOSE` on node 0: `active-aa`'s `Closer` takes every IUID, gives one back and takes it
/// again, gives them all back, and is killed reading the first one's old log address.
fn closed() -> TestResult {
    use a53_kernel::process::table::Exit;
    use proto::syscall::layout::{ACTIVE_LOGS, active_log};
    let (me, _) = whoami()?;
    barrier(3006)?;
    let check = || {
        crate::ensure(rdma_node::available(), "this node has no RDMA")?;
        match run("active-aa", pack(Role::Closer))? {
            Exit::Fault { far, .. } if (ACTIVE_LOGS..active_log(16)).contains(&far) => Ok(()),
            other => {
                defmt::println!("active-aa closer ended with {}", defmt::Debug2Format(&other));
                Err("the closer was not killed reading its closed log")
            }
        }
    };
    let result = if me == 0 { check() } else { Ok(()) };
    barrier_within(3007, 600)?;
    result
}
