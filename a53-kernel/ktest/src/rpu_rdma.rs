//! The R5's RDMA scheduler on the target, with the test doing by hand what the kernel's RDMA
//! front end is to do (`docs/hw/pldma.md`, "Registering a PD's queues", "Using the queues"): one
//! PD enabled on the engine, a queue set registered over the IPC ring, transfers from this node to
//! itself through the engine. No SMMU translates for the engine here, so VAs are PAs.

use crate::cluster_support::whoami;
use crate::ensure;
use crate::testkit::{Test, TestResult};
use a53_kernel::arch::phys_to_virt;
use a53_kernel::{rpu, timer};
use board::Board as _;
use board::layout::{PLDMA_QUEUES, TEST_BUFFER, TEST_BUFFER_SIZE};
use board::pl::PLDMA_BASE;
use hal::pldma::driver::{EngineAdmin, PdPage};
use hal::pldma::{Pd, regs};
use proto::ipc::op;
use proto::rdma::ipc::RdmaStatus;
use proto::rdma::queue::{Cqe, CqeStatus, Direction, QUEUE_SET_BYTES, QueueSet, Wqe};

pub const TESTS: &[Test] = &[
    Test::new("rpu", "rdma_requests_are_answered", requests),
    Test::new("rpu", "rdma_loopback_write_and_read_through_the_engine", loopback),
];

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
    let stats = rpu::call(op::RDMA_STATS, [3, 0, 0, 0, 0, 0, 0]).map_err(|_| "no reply to RDMA_STATS")?;
    ensure(stats.op == op::UNKNOWN, "a page that does not exist is unknown")?;
    let bad = rpu::call(op::RDMA_REGISTER, [u64::from(PD), PLDMA_QUEUES + 8, 0, 0, 0, 0, 0]).map_err(|_| "no reply")?;
    ensure(status(&bad) == Some(RdmaStatus::BadQueueAddress), "a misaligned queue set was taken")?;
    let bad = rpu::call(op::RDMA_UNREGISTER, [16, 0, 0, 0, 0, 0, 0]).map_err(|_| "no reply")?;
    ensure(status(&bad) == Some(RdmaStatus::BadPd), "PD 16 was taken")
}

fn loopback() -> TestResult {
    ensure(rpu::is_started(), "the RPU did not start")?;
    let (me, _) = whoami()?;
    let pd = Pd::new(PD).ok_or("bad PD")?;
    // SAFETY: the PLDMA control page (forwarded); nothing else uses `pd_enable` while the tests
    // run.
    let mut admin = unsafe { EngineAdmin::new(phys_to_virt(PLDMA_BASE)) };
    // SAFETY: PD page 15, used by this test only.
    let mut page =
        unsafe { PdPage::new(phys_to_virt(PLDMA_BASE + regs::PD_PAGES_OFFSET + u64::from(PD) * regs::PAGE)) };
    let set_pa = PLDMA_QUEUES + u64::from(PD) * QUEUE_SET_BYTES;
    let set_va = phys_to_virt(set_pa);
    // SAFETY: a queue-set slot of the PLDMA area, mapped uncached; zero bytes are a fresh set.
    let queues = unsafe {
        core::ptr::write_bytes(set_va as *mut u8, 0, QUEUE_SET_BYTES as usize);
        &*(set_va as *const QueueSet)
    };
    admin.set_pd_enabled(pd, true);
    let reply = rpu::call(op::RDMA_REGISTER, [u64::from(PD), set_pa, 0, 0, 0, 0, 0]).map_err(|_| "no reply")?;
    ensure(status(&reply) == Some(RdmaStatus::Ok), "RDMA_REGISTER refused")?;
    let result = transfers(me, queues, &mut page);
    let reply = rpu::call(op::RDMA_UNREGISTER, [u64::from(PD), 0, 0, 0, 0, 0, 0]).map_err(|_| "no reply")?;
    admin.set_pd_enabled(pd, false);
    result?;
    ensure(status(&reply) == Some(RdmaStatus::Ok), "RDMA_UNREGISTER refused")?;
    let stats = rpu::call(op::RDMA_STATS, [0; 7]).map_err(|_| "no reply to RDMA_STATS")?;
    ensure(stats.args[0] == 0, "a timeout fired on a clean loopback")
}

/// Three buffers of this fit the 256 KiB test buffer, 80 KiB apart.
const LEN: usize = 80_000;

const _: () = assert!(0x2_8000 + LEN as u64 <= TEST_BUFFER_SIZE && 0x1_4000 >= LEN);

fn transfers(me: u16, queues: &QueueSet, page: &mut PdPage) -> TestResult {
    let (src, dst, back) = (TEST_BUFFER, TEST_BUFFER + 0x1_4000, TEST_BUFFER + 0x2_8000);
    let byte = |i: usize| (i.wrapping_mul(31) ^ (i >> 8)) as u8;
    // SAFETY: the test buffer (256 KiB of the platform area), used by one test at a time.
    let buffer = |pa: u64| unsafe { core::slice::from_raw_parts_mut(phys_to_virt(pa) as *mut u8, LEN) };
    for (i, b) in buffer(src).iter_mut().enumerate() {
        *b = byte(i);
    }
    buffer(dst).fill(0);
    let write =
        Wqe { direction: Direction::Write, node: me, len: LEN as u32, local: src, remote: dst, tag: 7, notify: None };
    complete(queues, page, &write, 0)?;
    ensure(buffer(dst).iter().enumerate().all(|(i, &b)| b == byte(i)), "the write's bytes differ")?;
    let read = Wqe { direction: Direction::Read, local: back, remote: dst, tag: 8, ..write };
    buffer(back).fill(0);
    complete(queues, page, &read, 1)?;
    ensure(buffer(back).iter().enumerate().all(|(i, &b)| b == byte(i)), "the read's bytes differ")
}

/// Posts `w` and waits for its CQE.
fn complete(queues: &QueueSet, page: &mut PdPage, w: &Wqe, wq_index: u32) -> TestResult {
    // SAFETY: the test is the queue set's process: the only producer of its WQ.
    unsafe { queues.wq.producer() }.push(w.encode()).map_err(|_| "the WQ is full")?;
    page.ring(queues.wq.produced());
    let give_up = timer::now() + 10 * timer::hz();
    loop {
        // SAFETY: the only consumer of the CQ.
        if let Some(raw) = unsafe { queues.cq.consumer() }.pop() {
            let want = Cqe::Local { tag: w.tag, wq_index, len: w.len, status: CqeStatus::Ok, node: w.node };
            return ensure(Cqe::decode(&raw) == Ok(want), "not the expected completion");
        }
        if timer::now() > give_up {
            return Err("no completion");
        }
        core::hint::spin_loop();
    }
}
