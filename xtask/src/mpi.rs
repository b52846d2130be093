//! Running a program on several MPI ranks of this one host as if each were a host of its own, and
//! the MPI link's check (`qemu-virt/examples/mpi_link_check.rs`): its runs for `cargo xtask test`
//! and its figures for `cargo xtask bench mpi-link`.

use crate::images::workspace_root;
use crate::testing::parser::Failure;
use anyhow::{Context, bail};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `mpirun` for `ranks` processes of `program` on this host, forced over TCP. Open MPI's options:
///
/// - `--mca pml ob1 --mca btl tcp,self`: messages between ranks go through the TCP transport,
///   never shared memory (`vader`) or UCX, exactly as between two hosts; `self` is a rank
///   talking to itself. `btl_tcp_if_include lo`: over loopback, which every host has (Open MPI
///   leaves it out by default, as useless between hosts).
/// - `--enable-recovery`: a rank that dies does not take the job down with it, so that the
///   others can find it lost and say so (without it `mpirun` kills them all at once).
/// - `--oversubscribe --bind-to none`: more ranks than cores, none pinned to one.
/// - `OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM)`: Open MPI refuses to run as root without both.
pub fn single_host(ranks: usize, program: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new("mpirun");
    cmd.args(["-np", &ranks.to_string(), "--oversubscribe", "--bind-to", "none", "--enable-recovery"]);
    cmd.args(["--mca", "pml", "ob1", "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", "lo"]);
    cmd.arg(program).args(args);
    cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1").env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    cmd
}

/// `mpirun` for `ranks` processes of `program` on the hosts of `hosts` (an Open MPI hostfile),
/// over TCP as [`single_host`]'s but on whatever interfaces the hosts share; on this host alone
/// without one.
pub fn launch(ranks: usize, hosts: Option<&Path>, program: &Path, args: &[&str]) -> Command {
    let Some(hosts) = hosts else { return single_host(ranks, program, args) };
    let mut cmd = Command::new("mpirun");
    cmd.args(["-np", &ranks.to_string(), "--bind-to", "none", "--enable-recovery"]);
    cmd.arg("--hostfile").arg(hosts);
    cmd.args(["--mca", "pml", "ob1", "--mca", "btl", "tcp,self"]);
    cmd.arg(program).args(args);
    cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1").env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    cmd
}

/// Builds xtask with MPI (the `rank` command; Open MPI installed first if it can be) and copies
/// it to `target/ranks/xtask`, its path. It is built in the workspace's own target directory,
/// where it shares what the other host builds compiled (a directory of its own compiled every
/// dependency again: a minute on 2 cores). That build links `target/debug/xtask` to the MPI
/// xtask, so the plain one is linked back after the copy (fresh: cargo only links it; a running
/// xtask keeps its own file either way).
pub fn build_ranks() -> anyhow::Result<PathBuf> {
    let mpi = crate::setup::ensure_mpi()?;
    println!("ranks: using {mpi}");
    let build = |features: &[&str]| -> anyhow::Result<()> {
        let status = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
            .current_dir(workspace_root())
            .args(["build", "--quiet", "-p", "xtask"])
            .args(features)
            .status()
            .context("cannot run cargo build")?;
        anyhow::ensure!(status.success(), "building xtask {features:?} failed");
        Ok(())
    };
    build(&["--features", "mpi"])?;
    let ranks = workspace_root().join("target/ranks");
    std::fs::create_dir_all(&ranks)?;
    let program = ranks.join("xtask");
    // A copy, not a link: the next build of xtask replaces the file it builds.
    let _ = std::fs::remove_file(&program);
    std::fs::copy(workspace_root().join("target/debug/xtask"), &program)
        .with_context(|| format!("cannot copy the MPI xtask to {}", program.display()))?;
    build(&[])?;
    Ok(program)
}

/// A cluster run over MPI ranks: every rank runs `rank` of the xtask [`build_ranks`] builds.
pub struct ClusterRun<'a> {
    pub nodes: usize,
    pub ranks: usize,
    pub hosts: Option<&'a Path>,
    pub qemu: &'a Path,
    pub load: crate::qemu_run::Load<'a>,
    pub boot_args: &'a str,
    pub link: qemu_virt::LinkConfig,
    /// The trace the user asked for (an absolute path: every rank writes its own beside it,
    /// [`rank_trace`], and [`run_cluster`] merges them into it).
    pub trace: Option<&'a Path>,
    /// How long the nodes may take: then they count as hung; the whole run is killed a while
    /// after.
    pub timeout: Duration,
}

impl ClusterRun<'_> {
    /// The `rank` command's arguments.
    pub fn rank_args(&self) -> Vec<String> {
        let mut args = vec!["rank".to_string(), "--nodes".into(), self.nodes.to_string()];
        let mut path = |flag: &str, p: &Path| args.extend([flag.to_string(), p.display().to_string()]);
        path("--qemu", self.qemu);
        path("--kernel", self.load.kernel);
        if let Some(r5) = self.load.r5 {
            path("--r5", r5);
        }
        path("--store", self.load.store);
        args.extend(["--boot-args".into(), self.boot_args.to_string()]);
        args.extend(["--timeout".into(), self.timeout.as_secs().to_string()]);
        if let Some(trace) = self.trace {
            args.extend(["--trace".into(), trace.display().to_string()]);
        }
        let link = self.link;
        for (flag, value) in [
            ("--latency-us", link.latency_us.to_string()),
            ("--loss", link.loss.to_string()),
            ("--duplicate", link.duplicate.to_string()),
            ("--reorder", link.reorder.to_string()),
            ("--seed", link.seed.to_string()),
            ("--lose-first", link.lose_first.to_string()),
        ] {
            args.extend([flag.to_string(), value]);
        }
        args
    }

    /// The whole run's bound: the nodes' timeout, the ranks' start and the gathering of their
    /// verdicts.
    pub fn bound(&self) -> Duration {
        self.timeout + Duration::from_secs(240)
    }

    /// Its mpirun command.
    pub fn command(&self, program: &Path) -> Command {
        let args = self.rank_args();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut cmd = launch(self.ranks, self.hosts, program, &args);
        // Its own process group, so that a run that hangs is killed with every rank.
        cmd.process_group(0).stdin(Stdio::null());
        cmd
    }
}

/// The line rank 0 ends a clean run with (`crate::rank_run`).
pub const CLEAN: &str = "every node finished cleanly";

/// The line each rank prints once its nodes' QEMUs have started, so that whoever watches the
/// run knows its processes (the suite's run that kills a rank): `rank R: process P, QEMUs Q...`.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))] // The ranks print it: `crate::rank_run`.
pub fn started_line(rank: usize, pid: u32, qemus: &[u32]) -> String {
    let qemus: Vec<String> = qemus.iter().map(u32::to_string).collect();
    format!("rank {rank}: process {pid}, QEMUs {}", qemus.join(" "))
}

/// A rank's [`started_line`], read back: (rank, its process, its QEMUs).
pub fn parse_started(line: &str) -> Option<(usize, u32, Vec<u32>)> {
    let (rank, rest) = line.strip_prefix("rank ")?.split_once(": process ")?;
    let (pid, qemus) = rest.split_once(", QEMUs")?;
    let qemus: Option<Vec<u32>> = qemus.split_whitespace().map(|q| q.parse().ok()).collect();
    Some((rank.parse().ok()?, pid.parse().ok()?, qemus?))
}

/// The tag of rank `rank`'s runtime directory (`crate::qemu_run::RuntimeDir`).
pub fn rank_dir_tag(rank: usize) -> String {
    format!("rank{rank}")
}

/// Removes what rank `rank` (process `pid`) of a cluster of `map` leaves on this host if it is
/// killed: its runtime directory and its nodes' DDR files in `/dev/shm` (a rank that ends
/// removes them itself: then there is nothing to do).
pub fn remove_leftovers(map: &qemu_virt::ranks::NodeMap, rank: usize, pid: u32) {
    let dir = crate::qemu_run::RuntimeDir::path_of(pid, &rank_dir_tag(rank));
    for node in map.nodes_of(rank) {
        let _ = std::fs::remove_file(qemu_virt::node::memory_file(&dir, node));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Where rank `rank` writes its own trace when the run's is `trace`: `t.json` gives
/// `t.rank1.json`, `t` gives `t.rank1`.
pub fn rank_trace(trace: &Path, rank: usize) -> PathBuf {
    let stem = trace.file_stem().unwrap_or_default().to_string_lossy();
    let name = match trace.extension() {
        Some(ext) => format!("{stem}.rank{rank}.{}", ext.to_string_lossy()),
        None => format!("{stem}.rank{rank}"),
    };
    trace.with_file_name(name)
}

/// Merges the traces of the `ranks` ranks of a run into `trace` as `cargo xtask trace-merge`
/// does (`qemu_virt::trace::merge`: one time line; a dead rank's file as far as it goes) and
/// removes them; how many events it holds. A rank's file missing (written on another host,
/// without a file system they share) is an error that says how to merge them by hand.
pub fn merge_rank_traces(trace: &Path, ranks: usize) -> anyhow::Result<usize> {
    let files: Vec<PathBuf> = (0..ranks).map(|rank| rank_trace(trace, rank)).collect();
    let missing: Vec<String> = files.iter().filter(|f| !f.exists()).map(|f| f.display().to_string()).collect();
    if !missing.is_empty() {
        let all: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
        bail!(
            "no trace file {} here (written on another host?): copy the ranks' files here, then \
             cargo xtask trace-merge -o {} {}",
            missing.join(", "),
            trace.display(),
            all.join(" ")
        );
    }
    let inputs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let events = qemu_virt::trace::merge(&inputs, trace)?;
    for file in &files {
        let _ = std::fs::remove_file(file);
    }
    Ok(events)
}

/// How an mpirun that [`wait_or_kill_group`] waited for ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// On its own: its exit code (`None` if a signal ended it).
    Exited(Option<i32>),
    /// Killed, with its process group, when its time was up: it hung.
    Killed,
}

/// Waits up to `bound` for `child`, which leads a process group of its own (mpirun and every
/// rank it started); past it, kills the whole group, so that a run that hangs leaves nothing.
pub fn wait_or_kill_group(child: &mut std::process::Child, bound: Duration) -> std::io::Result<Ended> {
    let deadline = Instant::now() + bound;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Ended::Exited(status.code()));
        }
        if Instant::now() > deadline {
            // SAFETY: kill with the process group this child leads.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            return Ok(Ended::Killed);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The launcher's exit status from mpirun's and whether rank 0 said every node finished
/// cleanly. (Under `--enable-recovery` mpirun's status is 0 whatever the ranks did: the verdict
/// is rank 0's summary.)
pub fn exit_code(mpirun: i32, clean: bool) -> i32 {
    match (mpirun, clean) {
        (0, true) => 0,
        (0, false) => 1,
        (code, _) => code,
    }
}

/// Runs `run` with the ranks' output passed on as it comes, then merges the ranks' traces if it
/// has one; its [`exit_code`] (1 as well if the trace could not be made).
pub fn run_cluster(run: &ClusterRun) -> anyhow::Result<i32> {
    let program = build_ranks()?;
    let hosts = run.hosts.map_or(String::new(), |h| format!(" on the hosts of {}", h.display()));
    println!("{} nodes over {} ranks{hosts}", run.nodes, run.ranks);
    Ok(run_built(run, &program, Output::Echo)?.0)
}

/// What [`run_built`] does with the ranks' output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// Prints each line as it comes.
    Echo,
    /// Keeps every line, for the caller to read.
    Keep,
}

/// Runs `run` with `program` (what [`build_ranks`] built): its verdict as [`run_cluster`]'s,
/// and the ranks' lines if `output` keeps them.
pub fn run_built(run: &ClusterRun, program: &Path, output: Output) -> anyhow::Result<(i32, Vec<String>)> {
    let mut child = run.command(program).stdout(Stdio::piped()).spawn().context("cannot run mpirun")?;
    let out = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        let (mut clean, mut started, mut kept) = (false, Vec::new(), Vec::new());
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            clean |= line == CLEAN;
            started.extend(parse_started(&line).map(|(rank, pid, _)| (rank, pid)));
            match output {
                Output::Echo => println!("{line}"),
                Output::Keep => kept.push(line),
            }
        }
        (clean, started, kept)
    });
    let status = match wait_or_kill_group(&mut child, run.bound())? {
        Ended::Exited(code) => code.unwrap_or(1),
        Ended::Killed => {
            println!("the run failed: killed after {:?}, it hung", run.bound());
            1
        }
    };
    let (clean, started, kept) = reader.join().unwrap_or_default();
    // Every rank has ended: what a killed one left here goes (on other hosts it stays).
    if run.hosts.is_none()
        && let Ok(map) = qemu_virt::ranks::NodeMap::blocks(run.nodes, run.ranks)
    {
        for (rank, pid) in started {
            remove_leftovers(&map, rank, pid);
        }
    }
    let mut code = exit_code(status, clean);
    if let Some(trace) = run.trace {
        match merge_rank_traces(trace, run.ranks) {
            Ok(events) => println!(
                "trace written to {} ({events} events of {} ranks; open it in https://ui.perfetto.dev)",
                trace.display(),
                run.ranks
            ),
            Err(e) => {
                println!("the trace: {e:#}");
                code = code.max(1);
            }
        }
    }
    Ok((code, kept))
}

/// Builds a check program (an example of `qemu-virt` with feature `mpi`; Open MPI installed first
/// if it can be); its path.
pub fn build_check(check: &Check) -> anyhow::Result<PathBuf> {
    let mpi = crate::setup::ensure_mpi()?;
    println!("{}: using {mpi}", check.example);
    let status = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .current_dir(workspace_root())
        .args(["build", "--quiet", "-p", "qemu-virt", "--features", "mpi", "--example", check.example])
        .status()
        .context("cannot run cargo build")?;
    if !status.success() {
        bail!("building {} (qemu-virt, feature mpi) failed", check.example);
    }
    Ok(workspace_root().join("target/debug/examples").join(check.example))
}

/// A program run on several ranks that reports its checks (`rank R/N: check NAME ... ok`).
#[derive(Debug, PartialEq, Eq)]
pub struct Check {
    /// The example of `qemu-virt`, and the first part of its tests' names.
    pub example: &'static str,
    /// Its checks, in its order, and who reports each.
    checks: &'static [(&'static str, Reporters)],
}

/// The MPI link itself (`qemu-virt/examples/mpi_link_check.rs`).
pub const MPI_LINK: Check = Check { example: "mpi_link_check", checks: &LINK_CHECKS };

/// The ranks' transport over the MPI link (`qemu-virt/examples/ranks_over_mpi.rs`).
pub const RANKS_OVER_MPI: Check = Check { example: "ranks_over_mpi", checks: &RANKS_CHECKS };

/// One run of the check under `mpirun`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckRun {
    pub check: &'static Check,
    /// Its part of the tests' names.
    pub name: &'static str,
    pub ranks: usize,
    /// The last rank kills itself after the shared checks.
    pub lose_last: bool,
}

pub const CHECK_RUNS: [CheckRun; 5] = [
    CheckRun { check: &MPI_LINK, name: "2_ranks", ranks: 2, lose_last: false },
    CheckRun { check: &MPI_LINK, name: "2_ranks_losing_one", ranks: 2, lose_last: true },
    CheckRun { check: &MPI_LINK, name: "4_ranks_losing_one", ranks: 4, lose_last: true },
    CheckRun { check: &RANKS_OVER_MPI, name: "2_ranks_losing_one", ranks: 2, lose_last: true },
    CheckRun { check: &RANKS_OVER_MPI, name: "4_ranks_losing_one", ranks: 4, lose_last: true },
];

/// Who must report a check ok.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reporters {
    /// Every rank, the one lost too (it dies after them).
    Every,
    /// Every rank that is not lost.
    Survivors,
    /// Rank 0 only.
    First,
    /// The survivors, in a run that loses a rank (not run otherwise).
    SurvivorsOfALoss,
}

/// The MPI link's checks.
const LINK_CHECKS: [(&str, Reporters); 8] = [
    ("every_rank_greets_and_calls_every_other", Reporters::Every),
    ("calls_from_16_threads_come_back_to_their_callers", Reporters::Every),
    ("a_1_mib_payload_crosses_intact_both_ways", Reporters::Every),
    ("a_held_request_times_out_and_a_missing_rank_is_refused", Reporters::Every),
    ("figures_of_the_link", Reporters::First),
    ("a_rank_busy_receiving_for_longer_than_lost_after_is_not_lost", Reporters::First),
    ("a_call_to_a_lost_rank_fails_when_it_is_found_lost_then_at_once", Reporters::SurvivorsOfALoss),
    ("shutdown_waits_for_every_rank_and_names_the_lost", Reporters::Survivors),
];

/// The ranks' transport's checks.
const RANKS_CHECKS: [(&str, Reporters); 7] = [
    ("every_rank_hears_every_other", Reporters::Every),
    ("liveness_and_run_done_are_the_clusters_on_every_rank", Reporters::Every),
    ("packets_cross_ranks_and_arrive_intact", Reporters::Every),
    ("window_stores_and_loads_cross_ranks_in_order", Reporters::Every),
    ("datagrams_arrive_in_order_from_every_node", Reporters::Every),
    ("a_lost_ranks_nodes_are_unreachable_without_a_hang", Reporters::SurvivorsOfALoss),
    ("shutdown_names_the_lost", Reporters::Survivors),
];

impl CheckRun {
    /// The run's tests: `EXAMPLE::RUN::CHECK`, with the ranks that must report each ok.
    pub fn tests(&self) -> Vec<(String, Vec<usize>)> {
        let survivors = if self.lose_last { self.ranks - 1 } else { self.ranks };
        self.check
            .checks
            .iter()
            .filter_map(|&(check, who)| {
                let ranks: Vec<usize> = match who {
                    Reporters::Every => (0..self.ranks).collect(),
                    Reporters::Survivors => (0..survivors).collect(),
                    Reporters::First => vec![0],
                    Reporters::SurvivorsOfALoss if self.lose_last => (0..survivors).collect(),
                    Reporters::SurvivorsOfALoss => return None,
                };
                Some((format!("{}::{}::{check}", self.check.short_name(), self.name), ranks))
            })
            .collect()
    }

    /// Runs it: everything the ranks printed (stdout, then stderr), or why it could not run.
    pub fn run(&self, check: &Path) -> anyhow::Result<String> {
        const TIMEOUT: Duration = Duration::from_secs(180);
        let args: &[&str] = if self.lose_last { &["--lose-last-rank"] } else { &[] };
        let mut cmd = single_host(self.ranks, check, args);
        // Its own process group, so that a run that hangs is killed with every rank.
        cmd.process_group(0).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().context("cannot run mpirun")?;
        let drain = |mut from: Box<dyn Read + Send>| {
            std::thread::spawn(move || {
                let mut text = String::new();
                let _ = from.read_to_string(&mut text);
                text
            })
        };
        let out = drain(Box::new(child.stdout.take().expect("piped")));
        let err = drain(Box::new(child.stderr.take().expect("piped")));
        let ended = wait_or_kill_group(&mut child, TIMEOUT)?;
        let text = format!("{}{}", out.join().unwrap_or_default(), err.join().unwrap_or_default());
        if ended == Ended::Killed {
            return Ok(format!("{text}\n(killed after {TIMEOUT:?}: the run hung)"));
        }
        Ok(text)
    }
}

impl Check {
    /// The first part of its tests' names (`mpi_link`, `ranks_over_mpi`).
    pub fn short_name(&self) -> &'static str {
        self.example.strip_suffix("_check").unwrap_or(self.example)
    }
}

/// The verdict of test `name` on what a run printed: every rank of `ranks` reported it ok.
pub fn judge(name: &str, ranks: &[usize], total: usize, output: &str) -> Result<(), Failure> {
    let check = name.rsplit("::").next().unwrap_or(name);
    let missing: Vec<usize> = ranks
        .iter()
        .copied()
        .filter(|r| !output.lines().any(|l| l == format!("rank {r}/{total}: check {check} ... ok")))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let failed: Vec<&str> = output.lines().filter(|l| l.contains(&format!(": check {check} ... FAILED"))).collect();
    let reason = if failed.is_empty() { format!("rank(s) {missing:?} did not report it") } else { failed.join("; ") };
    Err(Failure { test: name.into(), reason, log: output.lines().map(String::from).collect() })
}

/// The figure lines of a run (`NAME: VALUE UNIT (how)`).
pub fn figures(output: &str) -> Vec<&str> {
    output.lines().filter_map(|l| l.split_once(": figure ").map(|(_, figure)| figure)).collect()
}

/// `cargo xtask bench mpi-link`: the 2-rank run's figures.
pub fn bench() -> anyhow::Result<()> {
    let check = build_check(&MPI_LINK)?;
    let run = CHECK_RUNS[0];
    let output = run.run(&check)?;
    let figures = figures(&output);
    if figures.len() != 2 {
        bail!("the check printed {} figures, not 2:\n{output}", figures.len());
    }
    for figure in figures {
        println!("{figure}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_RANKS_LOSING_ONE: &str = "rank 0/2: check every_rank_greets_and_calls_every_other ... ok
rank 1/2: check every_rank_greets_and_calls_every_other ... ok
rank 1/2: check calls_from_16_threads_come_back_to_their_callers ... FAILED: thread 3, call 7: rank 0 did not answer within 60s
rank 0/2: figure mpi_link_64b_round_trip_median: 19.8 us (2000 calls of 64 B to rank 1, p99 28.8 us)
rank 1/2: leaving without a word, as planned
rank 0/2: check a_call_to_a_lost_rank_fails_when_it_is_found_lost_then_at_once ... ok
";

    #[test]
    fn a_check_passes_only_when_every_rank_that_owes_it_says_ok() {
        let run = CHECK_RUNS[1];
        let tests = run.tests();
        let ranks_of = |check: &str| tests.iter().find(|(n, _)| n.ends_with(check)).map(|(_, r)| r.clone()).unwrap();
        let greet = "mpi_link::2_ranks_losing_one::every_rank_greets_and_calls_every_other";
        assert_eq!(
            judge(greet, &ranks_of("greets_and_calls_every_other"), 2, TWO_RANKS_LOSING_ONE).map_err(|f| f.reason),
            Ok(())
        );
        let threads = "mpi_link::2_ranks_losing_one::calls_from_16_threads_come_back_to_their_callers";
        let failed = judge(threads, &[0, 1], 2, TWO_RANKS_LOSING_ONE).unwrap_err();
        assert!(failed.reason.contains("thread 3, call 7"), "{}", failed.reason);
        // Silence is a failure too, naming who kept it.
        let big = "mpi_link::2_ranks_losing_one::a_1_mib_payload_crosses_intact_both_ways";
        assert_eq!(
            judge(big, &[0, 1], 2, TWO_RANKS_LOSING_ONE).unwrap_err().reason,
            "rank(s) [0, 1] did not report it"
        );
        // The lost rank owes no report of its own loss.
        let lost = "mpi_link::2_ranks_losing_one::a_call_to_a_lost_rank_fails_when_it_is_found_lost_then_at_once";
        assert_eq!(ranks_of("lost_then_at_once"), [0]);
        assert!(judge(lost, &[0], 2, TWO_RANKS_LOSING_ONE).is_ok());
    }

    #[test]
    fn every_run_has_its_tests_and_only_a_losing_run_checks_a_loss() {
        for run in CHECK_RUNS {
            let tests = run.tests();
            let all = run.check.checks.len();
            assert_eq!(tests.len(), if run.lose_last { all } else { all - 1 }, "{run:?}");
            let shutdown = tests.iter().find(|(n, _)| n.ends_with("names_the_lost")).unwrap();
            assert_eq!(shutdown.1.len(), run.ranks - usize::from(run.lose_last));
            let prefix = format!("{}::{}::", run.check.short_name(), run.name);
            assert!(tests.iter().all(|(n, _)| n.starts_with(&prefix)));
        }
    }

    #[test]
    fn figures_are_read_from_the_ranks_lines() {
        assert_eq!(
            figures(TWO_RANKS_LOSING_ONE),
            ["mpi_link_64b_round_trip_median: 19.8 us (2000 calls of 64 B to rank 1, p99 28.8 us)"]
        );
    }

    /// A cluster run passes every rank the whole cluster's nodes, images and links; with a
    /// hostfile it runs there instead of on loopback.
    #[test]
    fn a_cluster_run_gives_each_rank_what_it_needs() {
        let (kernel, r5, store) = (Path::new("/k"), Path::new("/r5"), Path::new("/s"));
        let run = ClusterRun {
            nodes: 16,
            ranks: 4,
            hosts: Some(Path::new("/hosts")),
            qemu: Path::new("/q"),
            load: crate::qemu_run::Load { kernel, r5: Some(r5), store },
            boot_args: "cluster exit",
            link: qemu_virt::LinkConfig { loss: 0.01, seed: 7, lose_first: 3, ..qemu_virt::LinkConfig::default() },
            trace: Some(Path::new("/t.json")),
            timeout: Duration::from_secs(60),
        };
        let line = run.rank_args().join(" ");
        for wanted in [
            "rank --nodes 16",
            "--qemu /q",
            "--kernel /k",
            "--r5 /r5",
            "--store /s",
            "--timeout 60",
            "--loss 0.01",
            "--seed 7",
            "--lose-first 3",
            "--trace /t.json",
        ] {
            assert!(line.contains(wanted), "{wanted} not in {line}");
        }
        let args = run.rank_args();
        let at = args.iter().position(|a| a == "--boot-args").unwrap();
        assert_eq!(args[at + 1], "cluster exit", "one argument");
        let cmd = run.command(Path::new("/x"));
        let mpirun: Vec<String> = cmd.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
        let mpirun = mpirun.join(" ");
        assert!(
            mpirun.contains("--hostfile /hosts") && mpirun.contains("-np 4") && !mpirun.contains("btl_tcp_if_include"),
            "{mpirun}"
        );
    }

    #[test]
    fn a_ranks_start_line_is_read_back() {
        let line = started_line(1, 4242, &[17, 18]);
        assert_eq!(line, "rank 1: process 4242, QEMUs 17 18");
        assert_eq!(parse_started(&line), Some((1, 4242, vec![17, 18])));
        assert_eq!(parse_started("rank 0: process 9, QEMUs"), Some((0, 9, vec![])));
        assert_eq!(parse_started("node1 a53 | rank 1: process 9, QEMUs 3"), None);
        assert_eq!(parse_started("rank x: process 9, QEMUs 3"), None);
    }

    #[test]
    fn each_rank_traces_beside_the_runs_trace() {
        assert_eq!(rank_trace(Path::new("/d/t.json"), 1), Path::new("/d/t.rank1.json"));
        assert_eq!(rank_trace(Path::new("/d/trace"), 0), Path::new("/d/trace.rank0"));
        assert_eq!(rank_trace(Path::new("a.b.json"), 3), Path::new("a.b.rank3.json"));
    }

    /// The ranks' traces become the one the user asked for, with every rank's events, and are
    /// removed; a rank's missing file is an error that says how to merge by hand.
    #[test]
    fn the_ranks_traces_are_merged_into_the_runs() {
        let dir = std::env::temp_dir().join(format!("unimem-rank-traces-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let trace = dir.join("t.json");
        for rank in 0..2 {
            let writer = qemu_virt::trace::TraceWriter::create(&rank_trace(&trace, rank), 4).unwrap();
            writer.packet(2 * rank, 3 - 2 * rank, 0, 64, "packet");
            if rank == 0 {
                writer.finish();
            }
            // Rank 1's is left unfinished, as a rank that died leaves it.
        }
        assert!(merge_rank_traces(&trace, 2).unwrap() > 2);
        let merged = std::fs::read_to_string(&trace).unwrap();
        assert!(merged.contains("packet 0->3") && merged.contains("packet 2->1"), "{merged}");
        assert!(!rank_trace(&trace, 0).exists() && !rank_trace(&trace, 1).exists());
        let missing = merge_rank_traces(&dir.join("none.json"), 2).unwrap_err().to_string();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(missing.contains("none.rank0.json") && missing.contains("cargo xtask trace-merge -o"), "{missing}");
    }

    /// A killed rank's runtime directory and DDR files go; another rank's stay.
    #[test]
    fn a_killed_ranks_leftovers_are_removed() {
        let map = qemu_virt::ranks::NodeMap::blocks(4, 2).unwrap();
        // A process id no process has (above the kernel's limit).
        let pid = 4_000_000_000 - std::process::id();
        let dir = |rank| crate::qemu_run::RuntimeDir::path_of(pid, &rank_dir_tag(rank));
        let files: Vec<PathBuf> = (0..4).map(|n| qemu_virt::node::memory_file(&dir(n / 2), n)).collect();
        for rank in 0..2 {
            std::fs::create_dir_all(dir(rank)).unwrap();
        }
        for file in &files {
            std::fs::write(file, b"ddr").unwrap();
        }
        remove_leftovers(&map, 1, pid);
        let left: Vec<bool> = files.iter().map(|f| f.exists()).collect();
        let dirs_left = (dir(0).exists(), dir(1).exists());
        remove_leftovers(&map, 0, pid);
        assert_eq!(left, [true, true, false, false]);
        assert_eq!(dirs_left, (true, false));
        assert!(!files[0].exists() && !dir(0).exists());
    }

    #[test]
    fn the_launchers_verdict_is_rank_0s_summary_and_mpiruns_status() {
        assert_eq!(exit_code(0, true), 0);
        assert_eq!(exit_code(0, false), 1, "a rank lost: mpirun under --enable-recovery says 0");
        assert_eq!(exit_code(137, true), 137);
    }

    /// The launcher keeps the ranks on TCP and lets a rank die alone.
    #[test]
    fn the_single_host_launch_forces_tcp_and_survives_a_lost_rank() {
        let cmd = single_host(4, Path::new("/bin/true"), &["--x"]);
        let args: Vec<String> = cmd.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
        let line = args.join(" ");
        for wanted in ["-np 4", "--mca pml ob1", "--mca btl tcp,self", "--enable-recovery", "/bin/true --x"] {
            assert!(line.contains(wanted), "{wanted} not in {line}");
        }
    }
}
