//! The suites, in the order they run, and the runner that the image calls.

use crate::{
    active, bench, boot_checks, cluster, exceptions, gsas, heap, paging, platform, process, rdma, rpu, rpu_rdma, shmem,
    smp, sockets, timer,
};

use crate::testkit::{self, Reporter, Test, TestResult};
use a53_kernel::kernel::{Stop, boot_args};

/// Every kernel test, in the order they run.
pub const TESTS: &[&[Test]] = &[
    boot_checks::TESTS,
    exceptions::TESTS,
    smp::TESTS,
    timer::TESTS,
    heap::TESTS,
    paging::TESTS,
    rpu::TESTS,
    rpu_rdma::TESTS,
    rdma::TESTS,
    platform::TESTS,
    gsas::TESTS,
    process::TESTS,
    sockets::TESTS,
];

/// The tests every node of a cluster runs together (boot argument `cluster`), before the
/// single-node ones. Their barriers' generations grow in this order: a list adds to its end.
pub const CLUSTER_TESTS: &[&[Test]] =
    &[cluster::TESTS, rdma::CLUSTER_TESTS, sockets::CLUSTER_TESTS, shmem::CLUSTER_TESTS, active::CLUSTER_TESTS];

/// The same, where a node is killed on purpose (boot argument `victim=N`).
const CLUSTER_TESTS_WITH_VICTIM: &[&[Test]] =
    &[cluster::TESTS, rdma::CLUSTER_TESTS, sockets::CLUSTER_TESTS, sockets::VICTIM_TESTS, shmem::VICTIM_TESTS];

/// The same, with the RDMA stress (boot argument `rdma-stress`).
const CLUSTER_TESTS_WITH_STRESS: &[&[Test]] = &[
    cluster::TESTS,
    rdma::CLUSTER_TESTS,
    sockets::CLUSTER_TESTS,
    rdma::STRESS_TESTS,
    shmem::CLUSTER_TESTS,
    active::CLUSTER_TESTS,
];

/// The same, on links that lose one block on purpose (boot argument `lost-block`).
const CLUSTER_TESTS_WITH_LOST_BLOCK: &[&[Test]] = &[cluster::TESTS, rdma::CLUSTER_TESTS, rdma::LOST_BLOCK_TESTS];

/// The cluster tests of a run that does not load the R5 firmware (no boot argument `r5`), which
/// RDMA needs: they are not run there (not passed without checking anything); the runs with the
/// R5 have them. A run that loads it chooses by that, not by whether the R5 came up: an R5 that
/// did not start fails its tests instead of taking them away.
const CLUSTER_TESTS_WITHOUT_R5: &[&[Test]] = &[cluster::TESTS];

struct ConsoleReporter;

impl Reporter for ConsoleReporter {
    fn listed(&mut self, t: &Test) {
        defmt::println!("test {=str}::{=str}", t.suite, t.name);
    }
    fn started(&mut self, t: &Test) {
        defmt::println!("running {=str}::{=str}", t.suite, t.name);
    }
    fn finished(&mut self, t: &Test, result: TestResult) {
        match result {
            Ok(()) => defmt::println!("test {=str}::{=str} ... ok", t.suite, t.name),
            Err(why) => {
                defmt::println!("{=str}::{=str}: {=str}", t.suite, t.name, why);
                defmt::println!("test {=str}::{=str} ... FAILED", t.suite, t.name);
            }
        }
    }
    fn summary(&mut self, passed: usize, failed: usize) {
        defmt::println!("{=usize} passed, {=usize} failed", passed, failed);
    }
}

/// Runs the selected tests; the returned value ends the run.
pub fn run() -> Stop {
    let args = boot_args();
    match args.value("crash") {
        Some("panic") => exceptions::deliberate_panic(),
        Some("fault") => exceptions::deliberate_unhandled_fault(),
        Some("r5-fault") => return rpu::r5_fault_self_test(),
        _ => {}
    }
    if let Some(name) = args.value("bench") {
        return bench::run(name);
    }
    let filters: heapless::Vec<&str, 8> = args.values("filter").take(8).collect();
    let cluster_filters: heapless::Vec<&str, 8> = args.values("cluster-filter").take(8).collect();
    let list = args.flag("list");
    let mut summary = testkit::Summary::default();
    let cluster: &[&[Test]] = match (args.flag("cluster"), args.flag("r5")) {
        (false, _) => &[],
        (true, true) if args.flag("rdma-stress") => CLUSTER_TESTS_WITH_STRESS,
        (true, true) if args.flag("lost-block") => CLUSTER_TESTS_WITH_LOST_BLOCK,
        (true, true) if args.value("victim").is_some() => CLUSTER_TESTS_WITH_VICTIM,
        (true, true) => CLUSTER_TESTS,
        (true, false) => CLUSTER_TESTS_WITHOUT_R5,
    };
    let local: &[&[Test]] = if args.flag("cluster-only") { &[] } else { TESTS };
    let suites = cluster.iter().map(|s| (s, &cluster_filters)).chain(local.iter().map(|s| (s, &filters)));
    for (suite, filters) in suites {
        let s = testkit::run_without_summary(suite, filters, list, &mut ConsoleReporter);
        summary.passed += s.passed;
        summary.failed += s.failed;
    }
    if list {
        return Stop::Success;
    }
    if args.flag("lossy") {
        crate::rdma::report_timeouts();
    }
    ConsoleReporter.summary(summary.passed, summary.failed);
    if summary.failed == 0 { Stop::Success } else { Stop::Failure }
}

/// `Err(msg)` unless `cond`.
pub fn ensure(cond: bool, msg: &'static str) -> TestResult {
    if cond { Ok(()) } else { Err(msg) }
}
