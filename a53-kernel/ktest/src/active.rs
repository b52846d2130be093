//! Active Access on target (`docs/hw/active-access.md`), on every node count the cluster runs
//! have (2 nodes; 4 over lossy links in SMMU stall mode):
//!
//! - `active-aa` on node 0 against an owner on the last node (a neighbour on 2 nodes, two hops
//!   away on 4): every semantic checked through the owner's log and memory (active put, put
//!   logging, get logging and counting, E = 0, the active flush, back-pressure of a full log,
//!   the kernel's refusals); `active-notify` (the log telling its owner in read, signal and
//!   event mode) and `active-aa`'s `Closer` (`ACTIVE_CLOSE`: IUIDs given back and taken again,
//!   a closed log unmapped);
//! - the seed's use cases, each an owner on node 0 with a member on every other node (one on 2
//!   nodes, three on 4): `active-dht` (Listings 2 and 3 at 5 % and 25 % collisions, both tables
//!   checked exactly), `active-checkpoint` (the dirty pages of each round are exactly the pages
//!   written, and the checkpoint holds their bytes) and `active-count` (gets counted per page
//!   and per object exactly, a retried get's copies once).
//!
//! Each passes only if its program ran on node 0 and ended with 0: a program that cannot start,
//! fails a check, or has no other node to work with fails the test.

use crate::cluster_support::{barrier, barrier_within, whoami};
use crate::gsas::run;
use crate::rdma::expect_zero;
use crate::testkit::{Test, TestResult};
use a53_kernel::rdma_node;
use unimem_user::args::{active_aa, active_checkpoint, active_count, active_dht, active_notify};

pub const CLUSTER_TESTS: &[Test] = &[
    Test::new("cluster", "rdma_active_access_every_semantic_against_the_last_node", every_semantic),
    Test::new("cluster", "rdma_active_access_dht_one_put_against_cas_both_tables_exact", dht),
    Test::new("cluster", "rdma_active_access_checkpoint_dirty_pages_are_exactly_the_pages_written", checkpoint),
    Test::new("cluster", "rdma_active_access_get_counting_counts_every_get_once_per_page_and_object", count),
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
        let role = active_aa::pack(active_aa::Role::Semantics { node: n - 1 });
        expect_zero("active-aa", run("active-aa", role)?)
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

/// Runs `program` with `arg` on node 0, an owner with a member on every other node; the others
/// wait for it (their members run there meanwhile).
fn on_node_0_with_members(generation: u64, program: &str, args: &[u64]) -> TestResult {
    let (me, n) = whoami()?;
    barrier(generation)?;
    let check = || {
        crate::ensure(rdma_node::available(), "this node has no RDMA")?;
        crate::ensure(n >= 2, "the program needs another node for its members")?;
        args.iter().try_for_each(|&arg| expect_zero(program, run(program, arg)?))
    };
    let result = if me == 0 { check() } else { Ok(()) };
    barrier_within(generation + 1, 600)?;
    result
}

/// The seed's DHT (Listings 2 and 3) at 5 % and 25 % collisions: both volumes are checked
/// exactly by their owner, and the remote operations counted.
fn dht() -> TestResult {
    let role = |collide_pct| active_dht::pack(active_dht::Role::Run { collide_pct });
    on_node_0_with_members(3002, "active-dht", &[role(5), role(25)])
}

/// Incremental checkpointing: four rounds of writes by every other node.
fn checkpoint() -> TestResult {
    let role = active_checkpoint::pack(active_checkpoint::Role::Run { rounds: 4 });
    on_node_0_with_members(3004, "active-checkpoint", &[role])
}

/// Get counting: 100 gets from every other node, counted per page and per object.
fn count() -> TestResult {
    let role = active_count::pack(active_count::Role::Run { reads: 100 });
    on_node_0_with_members(3006, "active-count", &[role])
}

/// A log's notices (`ACTIVE_NOTIFY`): `active-notify` on node 0 against an owner on the last
/// node, told of one put each in read mode (a blocked `Log::wait`), signal mode (a sleep ended)
/// and event mode (`MAILBOX_EVENT`), and of nothing once polled again; the owner's node counts
/// the notices its kernel delivered.
fn notices() -> TestResult {
    let (me, n) = whoami()?;
    let before = rdma_node::log_notices();
    barrier(3010)?;
    let check = || {
        crate::ensure(rdma_node::available(), "this node has no RDMA")?;
        expect_zero(
            "active-notify",
            run("active-notify", active_notify::pack(active_notify::Role::Initiator { node: n - 1 }))?,
        )
    };
    let result = if me == 0 { check() } else { Ok(()) };
    barrier_within(3011, 600)?;
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
    barrier(3012)?;
    let check = || {
        crate::ensure(rdma_node::available(), "this node has no RDMA")?;
        match run("active-aa", active_aa::pack(active_aa::Role::Closer))? {
            Exit::Fault { far, .. } if (ACTIVE_LOGS..active_log(16)).contains(&far) => Ok(()),
            other => {
                defmt::println!("active-aa closer ended with {}", defmt::Debug2Format(&other));
                Err("the closer was not killed reading its closed log")
            }
        }
    };
    let result = if me == 0 { check() } else { Ok(()) };
    barrier_within(3013, 600)?;
    result
}
