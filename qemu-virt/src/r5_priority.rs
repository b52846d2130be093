//! The host priority of a node's R5 vCPU threads (`docs/hw/forwarding.md`, "The R5 on QEMU").
//!
//! QEMU's RPU has no interrupt controller, so the R5 firmware cannot sleep: it polls, and WFE
//! only yields. While it idles its threads run at the lowest priority (nice 19, weight 15
//! against an A53's 1024), so that the poll uses CPU time nothing else wants (the A53s sleep in
//! WFI and cost nothing when idle), and with a short slice, so that a vCPU that shares a core
//! with them waits little when they do run: at nice 10 two idle R5s took a fifth of the core a
//! busy A53 shared with them.
//!
//! An R5 that works runs at the A53s' priority: one that makes a forwarded access (it makes one
//! for every few blocks it schedules, and for every register it reads), or whose engine posts it
//! events (a doorbell, an ACK), until neither has happened for [`IDLE_AFTER`]. A starved R5
//! would make its forwarded accesses wait for its turn on the host (milliseconds instead of
//! microseconds), and its RDMA transfers time out.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The priority of an idle R5's threads.
const IDLE_NICE: libc::c_int = 19;
/// The priority of a working R5's threads: the A53s'.
const WORKING_NICE: libc::c_int = 0;
/// An R5 with no forwarded access and no engine event for this long counts as idle again (longer
/// than the RDMA retransmission timeout on QEMU, 100 ms, so that an R5 waiting to resend a
/// block is not starved).
pub const IDLE_AFTER: Duration = Duration::from_millis(250);

pub struct R5Threads {
    tids: Vec<libc::pid_t>,
    working: AtomicBool,
    epoch: Instant,
    /// Nanoseconds after `epoch` of the last forwarded access.
    last_access_ns: AtomicU64,
}

impl R5Threads {
    /// The R5 vCPU threads of QEMU process `pid` (QEMU names them `CPU n/TCG`; the R5s are CPUs
    /// 4 and 5), set to the idle priority.
    pub fn of_qemu(pid: u32) -> Self {
        let tids = std::fs::read_dir(format!("/proc/{pid}/task"))
            .into_iter()
            .flatten()
            .flatten()
            .filter(|task| {
                let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
                (4..4 + board::layout::R5_CORES).any(|cpu| comm.starts_with(&format!("CPU {cpu}/")))
            })
            .filter_map(|task| task.file_name().to_str()?.parse().ok())
            .collect();
        let threads = Self { tids, working: AtomicBool::new(false), epoch: Instant::now(), last_access_ns: 0.into() };
        threads.set_nice(IDLE_NICE);
        threads
    }

    /// No threads: priorities are left alone (platform tests without QEMU).
    pub fn none() -> Self {
        Self { tids: Vec::new(), working: AtomicBool::new(false), epoch: Instant::now(), last_access_ns: 0.into() }
    }

    /// The R5 made a forwarded access, or its engine posted it events: it works.
    pub fn working_now(&self) {
        self.last_access_ns.store(self.epoch.elapsed().as_nanos() as u64, Ordering::Relaxed);
        if !self.working.swap(true, Ordering::AcqRel) {
            self.set_nice(WORKING_NICE);
        }
    }

    /// Back to the idle priority if the R5 has not worked for [`IDLE_AFTER`] (called every few
    /// milliseconds).
    pub fn relax_if_idle(&self) {
        let since =
            self.epoch.elapsed().saturating_sub(Duration::from_nanos(self.last_access_ns.load(Ordering::Relaxed)));
        if since >= IDLE_AFTER && self.working.swap(false, Ordering::AcqRel) {
            self.set_nice(IDLE_NICE);
        }
    }

    /// Whether the threads run at the working priority now.
    pub fn working(&self) -> bool {
        self.working.load(Ordering::Acquire)
    }

    fn set_nice(&self, nice: libc::c_int) {
        let slice = if nice == IDLE_NICE { crate::host_priority::IDLE_SLICE_NS } else { 0 };
        for &tid in &self.tids {
            crate::host_priority::set_fair(tid, nice, slice);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_access_makes_it_work_and_quiet_makes_it_idle() {
        let r5 = R5Threads::none();
        assert!(!r5.working());
        r5.working_now();
        assert!(r5.working());
        r5.relax_if_idle();
        assert!(r5.working(), "it just worked");
        std::thread::sleep(IDLE_AFTER);
        r5.relax_if_idle();
        assert!(!r5.working());
    }
}
