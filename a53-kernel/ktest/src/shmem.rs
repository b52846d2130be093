//! OpenSHMEM's kernel side (issue #25) between nodes: process atomics on a remote-spawned copy
//! of a program, with `PROGRAM_NAME` and `MAP_FIXED` (`va-atomics`), and `JOB_EXIT` ending a job
//! on every node with its status (`job-exit`). Node 0 drives; node 1 hosts the copies and, for
//! the job's exit, checks how they ended; the others wait at the barriers.

use crate::cluster_support::{barrier, barrier_within, wait_for, whoami};
use crate::ensure;
use crate::gsas::run;
use crate::rdma::expect_zero;
use crate::testkit::{Test, TestResult};
use a53_kernel::process::hooks::{ExitedProcess, on_exit};
use a53_kernel::process::lifecycle::TABLE;
use a53_kernel::process::table::{Exit, State};
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Run only where a node is killed on purpose (boot argument `victim=N`).
pub const VICTIM_TESTS: &[Test] = &[Test::new("cluster", "shmem_a_node_dying_ends_the_job_with_pe_gone", node_dying)];

pub const CLUSTER_TESTS: &[Test] = &[
    Test::new("cluster", "shmem_process_atomics_on_a_remote_copy_every_op_both_widths_and_every_refusal", atomics),
    Test::new("cluster", "shmem_job_exit_ends_the_job_on_every_node_with_its_status", job_exit),
];

/// The node the copies run on.
const TARGET: u16 = 1;
/// The status the job ends with.
const JOB_STATUS: u64 = 0x5a;
const JOB_PROGRAM: &str = "job-exit";
/// How long node `TARGET` waits for the copies' ends after the job's initiator ended.
const COPIES_END_WITHIN_S: u64 = 10;

/// A job of one PE per node whose last node dies (the runner kills it when its PE says it
/// waits): node 0's PE, in a barrier, must end it naming that PE (`shmem-node-death`).
fn node_dying() -> TestResult {
    let (me, n) = whoami()?;
    let victim = a53_kernel::kernel::boot_args().value("victim").and_then(|v| v.parse::<u16>().ok());
    let victim = victim.ok_or("no victim=N boot argument: no node will die")?;
    if victim != n - 1 {
        return Err("the victim must be the last node, where the job's last PE runs");
    }
    barrier(2020)?;
    let result = if me == victim {
        // The runner kills this node while its PE waits; reaching the end is the failure.
        let _ = wait_for(PROGRAM_SECONDS, || false);
        Err("the node was not killed")
    } else if me == 0 {
        expect_zero("shmem-node-death", run("shmem-node-death", 0)?)
    } else {
        Ok(())
    };
    barrier_within(2021, PROGRAM_SECONDS)?;
    result
}

/// How long the job and the nodes waiting for it may take.
const PROGRAM_SECONDS: u64 = 120;

fn atomics() -> TestResult {
    let (me, _) = whoami()?;
    barrier(2000)?;
    let result = if me == 0 { expect_zero("va-atomics", run("va-atomics", u64::from(TARGET))?) } else { Ok(()) };
    barrier(2001)?;
    result
}

/// Exits of `job-exit` processes on this node: with the job's status, and otherwise.
static WITH_STATUS: AtomicU64 = AtomicU64::new(0);
static OTHERWISE: AtomicU64 = AtomicU64::new(0);
static WATCHING: AtomicBool = AtomicBool::new(false);

fn count_exit(process: ExitedProcess) {
    if process.name != JOB_PROGRAM {
        return;
    }
    match process.exit {
        Exit::Status(JOB_STATUS) => WITH_STATUS.fetch_add(1, Ordering::AcqRel),
        _ => OTHERWISE.fetch_add(1, Ordering::AcqRel),
    };
}

fn job_exit() -> TestResult {
    let (me, _) = whoami()?;
    if me == TARGET && !WATCHING.swap(true, Ordering::AcqRel) {
        on_exit(count_exit).map_err(|_| "no room for the test's exit hook")?;
    }
    barrier(2010)?;
    let initiator = if me == 0 {
        match run(JOB_PROGRAM, JOB_STATUS << 16 | u64::from(TARGET))? {
            Exit::Status(JOB_STATUS) => Ok(()),
            other => {
                defmt::println!("{=str} ended with {}", JOB_PROGRAM, defmt::Debug2Format(&other));
                Err("the job's initiator did not end with the job's status")
            }
        }
    } else {
        Ok(())
    };
    barrier(2011)?;
    let copies = if me == TARGET {
        let ended = wait_for(COPIES_END_WITHIN_S, || WITH_STATUS.load(Ordering::Acquire) >= 2);
        let alive =
            TABLE.lock().slots.iter().flatten().any(|p| p.name == JOB_PROGRAM && !matches!(p.state, State::Exited(_)));
        defmt::println!(
            "job exit on node {=u16}: {=u64} copies ended with the status, {=u64} otherwise",
            me,
            WITH_STATUS.load(Ordering::Acquire),
            OTHERWISE.load(Ordering::Acquire)
        );
        ended
            .map_err(|_| "the copies did not end with the job's status")
            .and_then(|()| ensure(OTHERWISE.load(Ordering::Acquire) == 0, "a copy ended otherwise"))
            .and_then(|()| ensure(!alive, "a copy still lives"))
    } else {
        Ok(())
    };
    barrier(2012)?;
    initiator.and(copies)
}
