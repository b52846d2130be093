//! The cluster runs of `cargo xtask test` with the nodes spread over MPI ranks of this host,
//! forced over TCP (`crate::mpi::launch`, `crate::rank_run`): the same test image and boot
//! arguments as a one-process run, the nodes' lines read back from the ranks' output
//! (`nodeK a53 | ...`) and judged as there, and the runner's own check that every rank started
//! and rank 0's summary is clean (so a run cannot pass by vanishing). One run kills a rank's
//! process in the middle ([`RankKill`]) and checks that the cluster loses its nodes as it loses a
//! killed node.

use super::parser::{Failure, Outcome, Parsed, Parser, RunEnd, TestRecord};
use super::runs::{Expect, Links, TargetRun};
use super::{Options, Totals, boot_args_of};
use crate::images;
use crate::mpi::ClusterRun;
use crate::qemu_run::Load;
use anyhow::Context;
use qemu_virt::ranks::NodeMap;
use qemu_virt::{Level, Line, Source};
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// A cluster run over ranks.
#[derive(Clone, Copy, Debug)]
pub struct RankRun {
    pub run: TargetRun,
    pub ranks: usize,
    /// A rank to kill mid-run; the run is then judged by [`judge_kill`].
    pub kill: Option<RankKill>,
}

/// Kill rank `rank`'s process (SIGKILL, as a host that dies) once one of its nodes prints a line
/// containing `when`; `test` is the runner's check of what follows.
#[derive(Clone, Copy, Debug)]
pub struct RankKill {
    pub rank: usize,
    pub when: &'static str,
    pub test: &'static str,
}

/// How long the survivors may take to end once a rank is killed: the ranks find it lost after
/// 4 s of silence (`crate::rank_run`), then the survivors finish their test and end together.
const SURVIVORS_END: Duration = Duration::from_secs(60);

/// Cluster tests of each kind on 4 nodes with their R5s, as the one-process runs run them:
/// the global window (every access size), GSAS atomics from every node to every node, every
/// kernel pinging every other, RDMA of every size (after the R5s' own check) and sockets over
/// RDMA. A subset: every cluster test over 4 ranks takes 8 minutes here (2-core host), which
/// the suite cannot afford. Most of that is the 16,000 FADs of `gsas_fad_from_four_processes...`
/// (3 s in one process, 76 s over 2 ranks, 175 s over 4 on a loaded host: every cross-rank packet
/// is a round trip over the link), whose mesh form here makes 640, and
/// `gsas_write128_and_read4k...` (27 s over 4 ranks, loaded).
macro_rules! cluster_4_tests {
    () => {
        "remote_accesses_of_every_size|gsas_fad_mesh|gsas_every_kernel_pings|rdma_the_r5|rdma_write_and_read_every_size|rdma_sockets_echo"
    };
}

/// [`cluster_4_tests`] on clean links.
const CLUSTER_4: TargetRun = TargetRun {
    name: "ranks::cluster-4",
    nodes: 4,
    kill: None,
    trace_check: None,
    r5: true,
    virtualization: false,
    links: Links::Clean,
    boot_args: concat!("cluster cluster-only cluster-filter=", cluster_4_tests!()),
    timeout: Duration::from_secs(600),
    expect: Expect::Summary,
};

/// [`CLUSTER_4`] over lossy links (`Links::Lossy`): each rank's links lose, duplicate and
/// reorder what its nodes send, the links between ranks among them.
const CLUSTER_4_LOSSY: TargetRun = TargetRun {
    links: Links::Lossy,
    boot_args: concat!("cluster cluster-only lossy cluster-filter=", cluster_4_tests!()),
    ..CLUSTER_4
};

/// A host that dies: every node adds to counters on every node (`fad_mesh`, no R5s: small and
/// quick); rank 1 is killed, with nodes 2 and 3, once node 2 is halfway. The survivors must
/// find both unreachable (within 6 s: the ranks find a silent rank lost after 4 s), still count
/// exactly, and end.
const CLUSTER_4_KILL_RANK: TargetRun = TargetRun {
    name: "ranks::cluster-4-kill-rank",
    r5: false,
    boot_args: "cluster cluster-only cluster-filter=fad_mesh victim=2,3 unreachable-within-ms=6000",
    timeout: Duration::from_secs(180),
    ..CLUSTER_4
};

pub const RANK_RUNS: [RankRun; 3] = [
    RankRun { run: CLUSTER_4_LOSSY, ranks: 2, kill: None },
    RankRun { run: CLUSTER_4, ranks: 4, kill: None },
    RankRun {
        run: CLUSTER_4_KILL_RANK,
        ranks: 2,
        kill: Some(RankKill {
            rank: 1,
            when: "fad-mesh: halfway",
            test: "a_killed_rank_loses_its_nodes_fast_and_the_survivors_end_naming_them",
        }),
    },
];

impl RankRun {
    /// Its name, the prefix of its tests' names: `ranks::cluster-4-over-2-ranks`.
    pub fn name(&self) -> String {
        format!("{}-over-{}-ranks", self.run.name, self.ranks)
    }

    /// The runner's check that the run happened: every rank started and every node ended well
    /// (or, with a kill, [`RankKill::test`]).
    pub fn check_name(&self) -> String {
        let check = self.kill.map_or("every_rank_starts_and_rank_0_reports_every_node_finished_cleanly", |k| k.test);
        format!("{}/{check}", self.name())
    }

    /// A fixed script, selected by its name (a filter of the image's tests selects the
    /// one-process runs, not these).
    pub fn selected(&self, filter: Option<&str>) -> bool {
        filter.is_none_or(|f| self.check_name().contains(f))
    }
}

/// Rebuilds a console line from how a rank printed it (`Line`'s display: a timestamp if the
/// line has one, then a level if it has one, then the text).
pub fn parse_line(printed: &str) -> Line {
    let mut rest = printed.trim_start();
    let mut timestamp = None;
    if let Some((first, after)) = rest.split_once(' ')
        && first.parse::<f64>().is_ok()
    {
        timestamp = Some(first.to_string());
        rest = after;
    }
    let levels = [Level::Trace, Level::Debug, Level::Info, Level::Warn, Level::Error];
    let level = levels.into_iter().find(|l| rest.split_once(' ').is_some_and(|(word, _)| word == l.as_str()));
    let text = match level {
        Some(l) => rest[l.as_str().len()..].trim_start(),
        None => rest,
    };
    Line { level, timestamp, text: text.to_string(), location: None }
}

/// A line the ranks printed of one node (`nodeK ...`): K and what follows the space.
fn node_line(line: &str) -> Option<(usize, &str)> {
    let (node, rest) = line.strip_prefix("node")?.split_once(' ')?;
    Some((node.parse().ok()?, rest))
}

/// What the ranks printed of node `node`'s end.
fn node_end(line: &str) -> Option<(usize, RunEnd)> {
    let (node, rest) = node_line(line)?;
    let end = match rest {
        "finished" => RunEnd::Exited(0),
        "crashed: QEMU was killed" => RunEnd::Lost,
        other => RunEnd::Exited(other.strip_prefix("ended with status ")?.parse().ok()?),
    };
    Some((node, end))
}

/// What a run over ranks printed, read back.
pub struct RunOutput {
    pub parsers: Vec<Parser>,
    pub ends: Vec<RunEnd>,
    pub summary_clean: bool,
    pub lines: Vec<String>,
}

/// Reads the ranks' output: each node's lines to its parser, its end, rank 0's summary.
pub fn read_back(nodes: usize, output: &str, mut on_test: impl FnMut(usize, &str, Outcome)) -> RunOutput {
    let mut parsers: Vec<Parser> = (0..nodes).map(|_| Parser::new()).collect();
    let mut ends = vec![RunEnd::TimedOut; nodes];
    let mut summary_clean = false;
    for line in output.lines() {
        if line == crate::mpi::CLEAN {
            summary_clean = true;
        }
        if let Some((node, end)) = node_end(line).filter(|(n, _)| *n < nodes) {
            ends[node] = end;
            continue;
        }
        let Some((node, rest)) = node_line(line).filter(|(n, _)| *n < nodes) else { continue };
        let (source, printed) = if let Some(p) = rest.strip_prefix("a53 | ") {
            (Source::Console, p)
        } else if let Some(p) = rest.strip_prefix("r5  | ") {
            (Source::R5Trace, p)
        } else {
            continue;
        };
        if let Parsed::Finished(test, outcome) = parsers[node].line(source, &parse_line(printed)) {
            on_test(node, &test, outcome);
        }
    }
    RunOutput { parsers, ends, summary_clean, lines: output.lines().map(String::from).collect() }
}

/// Runs `rank_run` and records its tests and its check.
pub fn run_one(
    rank_run: &RankRun,
    program: &Path,
    qemu: &Path,
    images: &images::Images,
    opts: &Options,
    totals: &mut Totals,
) -> anyhow::Result<()> {
    let run = &rank_run.run;
    let name = rank_run.name();
    if opts.list {
        println!("test {}", rank_run.check_name());
        return Ok(());
    }
    // The run's own boot arguments: the filter selected the run, not the image's tests.
    let unfiltered = Options {
        filter: None,
        list: false,
        release: opts.release,
        host: opts.host,
        target: opts.target,
        serial: None,
        baud: opts.baud,
        trace_dir: None,
    };
    let boot_args = boot_args_of(run, &unfiltered);
    let cluster = ClusterRun {
        nodes: run.nodes,
        ranks: rank_run.ranks,
        hosts: None,
        qemu,
        load: Load::ktest(images, run.r5),
        boot_args: &boot_args,
        link: run.links.config(),
        trace: None,
        timeout: run.timeout,
    };
    let map = NodeMap::blocks(run.nodes, rank_run.ranks)?;
    let mut kill = rank_run.kill.map(|plan| KillWatch::new(plan, &map));
    let started = Instant::now();
    let (output, status) = capture(&cluster, program, |line| {
        if let Some(watch) = kill.as_mut() {
            watch.line(line, Instant::now(), kill_rank);
        }
    })?;
    super::took(&name, started);
    // What the killed rank left on this host.
    if let Some(watch) = &kill
        && let Some((pid, _)) = &watch.started
    {
        crate::mpi::remove_leftovers(&map, watch.plan.rank, *pid);
    }
    let tests = |node: usize, test: &str| format!("{name}/node{node}/{test}");
    let read = read_back(run.nodes, &output, |node, test, outcome| totals.record(&tests(node, test), outcome));
    // The killed rank's nodes were cut off on purpose: their check is the kill's.
    let killed = rank_run.kill.map_or(0..0, |k| map.nodes_of(k.rank));
    for (node, parser) in read.parsers.iter().enumerate().filter(|(node, _)| !killed.contains(node)) {
        let mut failures = parser.failures(read.ends[node]);
        for f in &mut failures {
            f.test = tests(node, &f.test);
        }
        let results: Vec<TestRecord> =
            parser.results.iter().map(|r| TestRecord { name: tests(node, &r.name), ..r.clone() }).collect();
        totals.add_failures(&name, failures, &results);
    }
    let verdict = match &kill {
        Some(watch) => judge_kill(&read, status, watch),
        None => judge(&read, status, rank_run.ranks),
    };
    if let Err(why) = &verdict {
        totals.failures.push(Failure { test: rank_run.check_name(), reason: why.clone(), log: read.lines.clone() });
    }
    totals.record(&rank_run.check_name(), if verdict.is_ok() { Outcome::Passed } else { Outcome::Failed });
    Ok(())
}

/// The run happened and went well: mpirun succeeded, every node ran tests and finished, and
/// rank 0 says so for the whole cluster.
pub fn judge(read: &RunOutput, status: Option<i32>, ranks: usize) -> Result<(), String> {
    if status != Some(0) {
        return Err(format!("mpirun ended with {status:?} ({ranks} ranks)"));
    }
    let silent: Vec<usize> = (0..read.parsers.len()).filter(|&n| read.parsers[n].results.is_empty()).collect();
    if !silent.is_empty() {
        return Err(format!("nodes {silent:?} reported no test: their rank did not run them"));
    }
    let unfinished: Vec<usize> = (0..read.ends.len()).filter(|&n| read.ends[n] != RunEnd::Exited(0)).collect();
    if !unfinished.is_empty() {
        return Err(format!("nodes {unfinished:?} did not finish: {:?}", read.ends));
    }
    if !read.summary_clean {
        return Err("rank 0 did not report every node finished cleanly".into());
    }
    Ok(())
}

/// Runs it with the output captured (and stderr after it), each line of the output handed to
/// `on_line` as it comes, bounded: (output, mpirun's status).
fn capture(
    cluster: &ClusterRun,
    program: &Path,
    mut on_line: impl FnMut(&str) + Send,
) -> anyhow::Result<(String, Option<i32>)> {
    let mut child =
        cluster.command(program).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().context("cannot run mpirun")?;
    let out = child.stdout.take().expect("piped");
    let mut err = child.stderr.take().expect("piped");
    std::thread::scope(|scope| {
        let reader = scope.spawn(move || {
            let mut text = String::new();
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                on_line(&line);
                text.push_str(&line);
                text.push('\n');
            }
            text
        });
        let errors = scope.spawn(move || {
            let mut text = String::new();
            let _ = err.read_to_string(&mut text);
            text
        });
        let status = match crate::mpi::wait_or_kill_group(&mut child, cluster.bound())? {
            crate::mpi::Ended::Exited(code) => code,
            crate::mpi::Ended::Killed => None,
        };
        let mut output = reader.join().unwrap_or_default();
        output.push_str(&errors.join().unwrap_or_default());
        Ok((output, status))
    })
}

/// What the runner saw of a run that kills a rank, line by line.
#[derive(Debug)]
pub struct KillWatch {
    plan: RankKill,
    /// The killed rank's nodes.
    victims: std::ops::Range<usize>,
    nodes: usize,
    /// The killed rank's process and QEMUs, as it said when it started.
    started: Option<(u32, Vec<u32>)>,
    killed_at: Option<Instant>,
    /// Whether the killed rank's QEMUs were gone soon after it.
    qemus_gone: Option<bool>,
    /// When each node said it ended.
    ended_at: Vec<Option<Instant>>,
}

impl KillWatch {
    pub fn new(plan: RankKill, map: &NodeMap) -> Self {
        let nodes = map.nodes();
        Self {
            plan,
            victims: map.nodes_of(plan.rank),
            nodes,
            started: None,
            killed_at: None,
            qemus_gone: None,
            ended_at: vec![None; nodes],
        }
    }

    /// Looks at one line of the run's output, seen at `now`: kills the rank (`kill(process,
    /// QEMUs)`, which says whether the QEMUs died with it) when the plan says so.
    pub fn line(&mut self, line: &str, now: Instant, kill: impl FnOnce(u32, &[u32]) -> bool) {
        if let Some((rank, pid, qemus)) = crate::mpi::parse_started(line)
            && rank == self.plan.rank
        {
            self.started = Some((pid, qemus));
        }
        if let Some((node, _)) = node_end(line).filter(|(n, _)| *n < self.nodes) {
            self.ended_at[node].get_or_insert(now);
        }
        let from_victim = node_line(line).is_some_and(|(node, _)| self.victims.contains(&node));
        if from_victim
            && line.contains(self.plan.when)
            && self.killed_at.is_none()
            && let Some((pid, qemus)) = &self.started
        {
            self.qemus_gone = Some(kill(*pid, qemus));
            self.killed_at = Some(now);
        }
    }
}

/// SIGKILL to a rank's process, as a host that dies; whether its QEMUs died with it (within a
/// few seconds: they are the kernel's to kill, `qemu_virt::node`).
fn kill_rank(pid: u32, qemus: &[u32]) -> bool {
    // SAFETY: a signal to a process of this run, which the rank named itself.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        if !qemus.iter().any(|&q| process_runs(q)) {
            return true;
        }
        if Instant::now() > until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether process `pid` exists and is not a zombie (one that died, whose parent has not
/// reaped it yet).
fn process_runs(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the name, which is in parentheses and may hold anything.
        Ok(stat) => stat.rsplit_once(") ").is_some_and(|(_, rest)| !rest.starts_with(['Z', 'X'])),
        Err(_) => false,
    }
}

/// A run that killed a rank went as a host's death must: the rank started (a run that never
/// happened fails) and was killed while its nodes ran, its QEMUs died with it, every other
/// node ran its tests and ended well soon after, and rank 0's summary names each of the killed
/// rank's nodes as lost, so that the launcher exits non-zero.
pub fn judge_kill(read: &RunOutput, status: Option<i32>, watch: &KillWatch) -> Result<(), String> {
    let rank = watch.plan.rank;
    if watch.started.is_none() {
        return Err(format!("rank {rank} never said it started: the run did not happen ({status:?})"));
    }
    let Some(killed_at) = watch.killed_at else {
        return Err(format!("no node of rank {rank} printed `{}`: the rank was never killed", watch.plan.when));
    };
    if watch.qemus_gone != Some(true) {
        return Err(format!("rank {rank}'s QEMUs outlived it"));
    }
    let Some(status) = status else {
        return Err("mpirun did not end: the survivors hung and the run was killed".into());
    };
    for node in (0..watch.nodes).filter(|n| !watch.victims.contains(n)) {
        if read.parsers[node].results.is_empty() {
            return Err(format!("node{node} survived but reported no test"));
        }
        if read.ends[node] != RunEnd::Exited(0) {
            return Err(format!("node{node} survived but ended {:?}", read.ends[node]));
        }
        let took = watch.ended_at[node].map(|t| t.saturating_duration_since(killed_at));
        if took.is_none_or(|t| t > SURVIVORS_END) {
            return Err(format!("node{node} took {took:?} to end after the kill, more than {SURVIVORS_END:?}"));
        }
    }
    let summary = read.lines.iter().skip_while(|l| *l != "the run failed:");
    let named: Vec<&String> = summary.filter(|l| l.trim_start().starts_with("node")).collect();
    for node in watch.victims.clone() {
        let lost = format!("node{node}: its rank {rank} was lost");
        if !named.iter().any(|l| l.trim_start().starts_with(&lost)) {
            return Err(format!("rank 0's summary does not say `{lost}`: {named:?}"));
        }
    }
    if crate::mpi::exit_code(status, read.summary_clean) == 0 {
        return Err("the launcher would exit 0".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ranks_lines_are_read_back_as_the_nodes_printed_them() {
        let defmt = parse_line("  0.012852 INFO  unimem kernel 0.1.0");
        assert_eq!(
            (defmt.level, defmt.timestamp.as_deref(), defmt.text.as_str()),
            (Some(Level::Info), Some("0.012852"), "unimem kernel 0.1.0")
        );
        let plain = parse_line("  0.234671 test cluster::gsas_fad ... ok");
        assert_eq!((plain.level, plain.text.as_str()), (None, "test cluster::gsas_fad ... ok"));
        let r5 = parse_line("INFO  serving requests");
        assert_eq!((r5.level, r5.timestamp, r5.text.as_str()), (Some(Level::Info), None, "serving requests"));
        assert_eq!(node_end("node3 finished"), Some((3, RunEnd::Exited(0))));
        assert_eq!(node_end("node12 ended with status 2"), Some((12, RunEnd::Exited(2))));
        assert_eq!(node_end("node1 crashed: QEMU was killed"), Some((1, RunEnd::Lost)));
        assert_eq!(node_end("node1 a53 | finished"), None);
    }

    const CLEAN: &str = "node0 a53 | test cluster::a ... ok
node1 a53 | test cluster::a ... ok
node1 finished
node0 finished
every node finished cleanly
";

    #[test]
    fn a_run_passes_only_when_every_node_ran_tests_and_rank_0_says_all_is_well() {
        let mut seen = Vec::new();
        let read = read_back(2, CLEAN, |node, test, outcome| seen.push((node, test.to_string(), outcome)));
        assert_eq!(seen.len(), 2);
        assert_eq!(judge(&read, Some(0), 2), Ok(()));
        assert!(judge(&read, Some(1), 2).is_err(), "mpirun failed");
        // A rank that never started: its node ran nothing; no clean summary.
        let vanished = read_back(2, "node0 a53 | test cluster::a ... ok\nnode0 finished\n", |_, _, _| {});
        assert!(judge(&vanished, Some(0), 2).unwrap_err().contains("[1]"));
        let unsummarised = read_back(2, &CLEAN.replace("every node finished cleanly\n", ""), |_, _, _| {});
        assert!(judge(&unsummarised, Some(0), 2).unwrap_err().contains("rank 0"));
    }

    const KILLED: &str = "rank 0: process 100, QEMUs 101 102
rank 1: process 200, QEMUs 201 202
node0 a53 | test cluster::fad_mesh ... ok
node1 a53 | test cluster::fad_mesh ... ok
node0 finished
node1 finished
the run failed:
  node2: its rank 1 was lost (its host or process is gone)
  node3: its rank 1 was lost (its host or process is gone)
";

    /// Feeds `output` to a watch of the suite's kill run, the halfway line after the ranks'
    /// start; the kill "succeeds" as `qemus_die` says. The lines' times: one second apart.
    fn watched(output: &str, halfway: Option<&str>, qemus_die: bool) -> (KillWatch, Vec<(u32, Vec<u32>)>) {
        let run = RANK_RUNS.iter().find(|r| r.kill.is_some()).unwrap();
        let mut watch = KillWatch::new(run.kill.unwrap(), &NodeMap::blocks(4, 2).unwrap());
        let mut kills = Vec::new();
        let start = Instant::now();
        let mut lines: Vec<&str> = output.lines().collect();
        if let Some(line) = halfway {
            lines.insert(lines.len().min(2), line);
        }
        for (i, line) in lines.into_iter().enumerate() {
            watch.line(line, start + Duration::from_secs(i as u64), |pid, qemus| {
                kills.push((pid, qemus.to_vec()));
                qemus_die
            });
        }
        (watch, kills)
    }

    #[test]
    fn a_killed_rank_passes_only_when_its_nodes_are_named_lost_and_the_others_end() {
        let halfway = Some("node2 a53 |   1.5 [fad-mesh] fad-mesh: halfway");
        let read = read_back(4, KILLED, |_, _, _| {});
        let (watch, kills) = watched(KILLED, halfway, true);
        assert_eq!(kills, [(200, vec![201, 202])], "rank 1's process is killed once, with its QEMUs named");
        assert_eq!(judge_kill(&read, Some(0), &watch), Ok(()));
        // A node of another rank saying the same does not kill rank 1.
        let (watch, kills) = watched(KILLED, Some("node0 a53 | fad-mesh: halfway"), true);
        assert!(kills.is_empty() && judge_kill(&read, Some(0), &watch).unwrap_err().contains("never killed"));
        // A run that never started.
        let (watch, _) = watched("", halfway, true);
        assert!(judge_kill(&read_back(4, "", |_, _, _| {}), None, &watch).unwrap_err().contains("did not happen"));
        let (watch, _) = watched(KILLED, halfway, false);
        assert!(judge_kill(&read, Some(0), &watch).unwrap_err().contains("QEMUs outlived"));
        let (watch, _) = watched(KILLED, halfway, true);
        assert!(judge_kill(&read, None, &watch).unwrap_err().contains("hung"));
        let unnamed = KILLED.replace("  node3: its rank 1 was lost (its host or process is gone)\n", "");
        let (watch, _) = watched(&unnamed, halfway, true);
        let err = judge_kill(&read_back(4, &unnamed, |_, _, _| {}), Some(0), &watch).unwrap_err();
        assert!(err.contains("node3: its rank 1 was lost"), "{err}");
        let survivor_hung = KILLED.replace("node1 finished\n", "");
        let (watch, _) = watched(&survivor_hung, halfway, true);
        let err = judge_kill(&read_back(4, &survivor_hung, |_, _, _| {}), Some(0), &watch).unwrap_err();
        assert!(err.contains("node1"), "{err}");
    }
}
