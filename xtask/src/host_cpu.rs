//! The host CPU a running cluster takes, per kind of thread, read from `/proc`.
//!
//! A thread's CPU time is its `utime + stime` in `/proc/<pid>/task/<tid>/stat`; the share is
//! that time over the same interval's ticks of all CPUs (`/proc/stat`), times the CPU count:
//! the percentage of one core. (A busy thread's ticks can exceed the wall-clock seconds on
//! these machines, so ticks per wall second would overstate it.)

use std::collections::HashMap;
use std::path::Path;

/// What a thread is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// An A53 vCPU ("CPU 0/TCG" to "CPU 3/TCG").
    A53,
    /// An R5 vCPU ("CPU 4/TCG", "CPU 5/TCG").
    R5,
    /// QEMU's other threads (its main loop, I/O threads).
    QemuOther,
    /// The emulated platform's threads (`qemu-virt`, in this process).
    Platform,
}

impl Kind {
    pub const ALL: [Kind; 4] = [Kind::A53, Kind::R5, Kind::QemuOther, Kind::Platform];

    pub fn name(self) -> &'static str {
        match self {
            Kind::A53 => "a53_vcpus",
            Kind::R5 => "r5_vcpus",
            Kind::QemuOther => "qemu_other_threads",
            Kind::Platform => "platform_threads",
        }
    }

    /// The kind of a QEMU thread named `comm` (QEMU names its vCPU threads with
    /// `-name ...,debug-threads=on`).
    pub fn of_qemu_thread(comm: &str) -> Kind {
        let vcpu = comm.strip_prefix("CPU ").and_then(|rest| rest.split('/').next()?.parse::<u32>().ok());
        match vcpu {
            Some(n) if n < 4 => Kind::A53,
            Some(_) => Kind::R5,
            None => Kind::QemuOther,
        }
    }
}

/// `utime + stime` of a `/proc/.../stat` line, in clock ticks. The name field may hold spaces
/// and parentheses, so the fields are counted from the last `)`.
pub fn stat_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state is field 3 of the line, utime 14 and stime 15.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// The sum of the `cpu` line of `/proc/stat`: all CPUs' ticks so far.
pub fn total_ticks(proc_stat: &str) -> Option<u64> {
    let line = proc_stat.lines().find(|l| l.starts_with("cpu "))?;
    Some(line.split_whitespace().skip(1).filter_map(|v| v.parse::<u64>().ok()).sum())
}

/// Every thread of `pid`: (tid, name, ticks).
fn threads(pid: u32) -> Vec<(u32, String, u64)> {
    let dir = format!("/proc/{pid}/task");
    let Ok(entries) = std::fs::read_dir(&dir) else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| {
            let tid: u32 = e.file_name().to_str()?.parse().ok()?;
            let comm = std::fs::read_to_string(e.path().join("comm")).ok()?.trim().to_string();
            let ticks = stat_ticks(&std::fs::read_to_string(e.path().join("stat")).ok()?)?;
            Some((tid, comm, ticks))
        })
        .collect()
}

/// One look at the cluster's threads.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    total: u64,
    /// (pid, tid) -> (node, kind, ticks); node `None` for the platform's threads.
    threads: HashMap<(u32, u32), (Option<usize>, Kind, u64)>,
}

impl Snapshot {
    /// The threads of every node's QEMU (`qemu_pids[n]` is node n's) and of this process.
    pub fn take(qemu_pids: &[u32]) -> anyhow::Result<Self> {
        let stat = std::fs::read_to_string(Path::new("/proc/stat"))?;
        let total = total_ticks(&stat).ok_or_else(|| anyhow::anyhow!("no cpu line in /proc/stat"))?;
        let mut snapshot = Self { total, threads: HashMap::new() };
        for (node, &pid) in qemu_pids.iter().enumerate() {
            for (tid, comm, ticks) in threads(pid) {
                snapshot.threads.insert((pid, tid), (Some(node), Kind::of_qemu_thread(&comm), ticks));
            }
        }
        for (tid, _, ticks) in threads(std::process::id()) {
            snapshot.threads.insert((std::process::id(), tid), (None, Kind::Platform, ticks));
        }
        Ok(snapshot)
    }

    /// Percent of one core each (node, kind) took between `self` and `later`, over `cpus`
    /// CPUs; threads of one kind add up. Threads that ended or began in between count from
    /// what both looks saw.
    pub fn shares(&self, later: &Snapshot, cpus: usize) -> HashMap<(Option<usize>, Kind), f64> {
        let interval = later.total.saturating_sub(self.total) as f64 / cpus.max(1) as f64;
        let mut shares = HashMap::new();
        for (key, &(node, kind, ticks)) in &later.threads {
            let before = self.threads.get(key).map_or(ticks, |t| t.2);
            let used = ticks.saturating_sub(before) as f64;
            *shares.entry((node, kind)).or_insert(0.0) += if interval > 0.0 { 100.0 * used / interval } else { 0.0 };
        }
        shares
    }
}

/// The host's CPU count (as `/proc/stat` counts its ticks).
pub fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_read_past_a_name_with_spaces_and_parentheses() {
        let line = "4242 (CPU 4/TCG) S 1 2 3 4 5 6 7 8 9 10 170 30 0 0 20 0 1 0 99";
        assert_eq!(stat_ticks(line), Some(200));
        let odd = "7 (a) b (c)) R 1 2 3 4 5 6 7 8 9 10 1 2 0 0";
        assert_eq!(stat_ticks(odd), Some(3));
        assert_eq!(stat_ticks("garbage"), None);
        assert_eq!(total_ticks("cpu  10 20 30 40 0 0 0 0 0 0\ncpu0 5 10 15 20\n"), Some(100));
    }

    #[test]
    fn threads_are_told_apart_by_their_qemu_names() {
        assert_eq!(Kind::of_qemu_thread("CPU 0/TCG"), Kind::A53);
        assert_eq!(Kind::of_qemu_thread("CPU 3/TCG"), Kind::A53);
        assert_eq!(Kind::of_qemu_thread("CPU 4/TCG"), Kind::R5);
        assert_eq!(Kind::of_qemu_thread("CPU 5/TCG"), Kind::R5);
        assert_eq!(Kind::of_qemu_thread("qemu-system-aar"), Kind::QemuOther);
        assert_eq!(Kind::of_qemu_thread("IO mon_iothread"), Kind::QemuOther);
    }

    #[test]
    fn shares_are_percent_of_one_core_over_all_cpus_ticks() {
        let mut a = Snapshot { total: 1000, ..Snapshot::default() };
        a.threads.insert((1, 10), (Some(0), Kind::R5, 50));
        a.threads.insert((1, 11), (Some(0), Kind::A53, 0));
        let mut b = Snapshot { total: 1200, ..Snapshot::default() };
        b.threads.insert((1, 10), (Some(0), Kind::R5, 150));
        b.threads.insert((1, 11), (Some(0), Kind::A53, 1));
        b.threads.insert((1, 12), (Some(0), Kind::A53, 7));
        let s = a.shares(&b, 2);
        // 200 ticks of 2 CPUs: 100 ticks of one core. The R5 took 100: 100 %.
        assert_eq!(s[&(Some(0), Kind::R5)], 100.0);
        assert_eq!(s[&(Some(0), Kind::A53)], 1.0, "a thread seen only later counts from then");
    }
}
