//! The R5's RDMA requests on the target: the checks of RDMA_CONFIG, RDMA_STATS, RDMA_REGISTER
//! and RDMA_UNREGISTER. Transfers go through the kernel's front end and user processes
//! (`rdma.rs`).

use crate::ensure;
use crate::testkit::{Test, TestResult};
use a53_kernel::rpu;
use board::Board as _;
use board::layout::PLDMA_QUEUES;
use proto::ipc::op;
use proto::rdma::ipc::RdmaStatus;

pub const TESTS: &[Test] = &[Test::new("rpu", "rdma_requests_are_answered", requests)];

/// A PD no process uses while the tests run.
const PD: u16 = 15;

fn status(reply: &proto::ipc::Message) -> Option<RdmaStatus> {
    RdmaStatus::from_raw(reply.args[0])
}

fn requests() -> TestResult {
    ensure(rpu::is_started(), "the RPU did not start")?;
    let config = rpu::call(op::RDMA_CONFIG, [0; 7]).map_err(|_| "no reply to RDMA_CONFIG")?;
    ensure(status(&config) == Some(RdmaStatus::Ok), "RDMA_CONFIG refused")?;
    ensure(config.args[1] == a53_kernel::Board::RDMA_TIMEOUT_US, "not the board's timeout")?;
    ensure(config.args[2] == 2, "not the default window of 2")?;
    let stats = rpu::call(op::RDMA_STATS, [proto::rdma::ipc::STATS_PAGES, 0, 0, 0, 0, 0, 0])
        .map_err(|_| "no reply to RDMA_STATS")?;
    ensure(stats.op == op::UNKNOWN, "a page that does not exist is unknown")?;
    let bad = rpu::call(op::RDMA_REGISTER, [u64::from(PD), PLDMA_QUEUES + 8, 0, 0, 0, 0, 0]).map_err(|_| "no reply")?;
    ensure(status(&bad) == Some(RdmaStatus::BadQueueAddress), "a misaligned queue set was taken")?;
    let bad = rpu::call(op::RDMA_UNREGISTER, [16, 0, 0, 0, 0, 0, 0]).map_err(|_| "no reply")?;
    ensure(status(&bad) == Some(RdmaStatus::BadPd), "PD 16 was taken")
}
