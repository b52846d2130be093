//! The cluster runs of `cargo xtask test` with the nodes spread over MPI ranks of this host,
//! forced over TCP (`crate::mpi::launch`, `crate::rank_run`): the same test image and boot
//! arguments as a one-process run, the nodes' lines read back from the ranks' output
//! (`nodeK a53 | ...`) and judged as there, and the runner's own check that every rank started
//! and rank 0's summary is clean (so a run cannot pass by vanishing).

use super::parser::{Failure, Outcome, Parsed, Parser, RunEnd, TestRecord};
use super::runs::{Expect, Links, TargetRun};
use super::{Options, Totals, boot_args_of};
use crate::images;
use crate::mpi::ClusterRun;
use crate::qemu_run::Load;
use anyhow::Context;
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
}

/// Cluster tests of each kind on 4 nodes with their R5s, as the one-process runs run them:
/// the global window (every access size), GSAS atomics from every node to every node, every
/// kernel pinging every other, RDMA of every size (after the R5s' own check) and sockets over
/// RDMA. A subset: every cluster test over 4 ranks takes 8 minutes here (2-core host), which
/// the suite cannot afford. Most of that is the 16,000 FADs of `gsas_fad_from_four_processes...`
/// (3 s in one process, 76 s over 2 ranks, 175 s over 4: every cross-rank packet is a round trip
/// over the link), whose mesh form here makes 640, and `gsas_write128_and_read4k...` (27 s over
/// 4 ranks).
const CLUSTER_4: TargetRun = TargetRun {
    name: "ranks::cluster-4",
    nodes: 4,
    kill: None,
    trace_check: None,
    r5: true,
    virtualization: false,
    links: Links::Clean,
    boot_args: "cluster cluster-only cluster-filter=remote_accesses_of_every_size|gsas_fad_mesh|gsas_every_kernel_pings|rdma_the_r5|rdma_write_and_read_every_size|rdma_sockets_echo",
    timeout: Duration::from_secs(600),
    expect: Expect::Summary,
};

pub const RANK_RUNS: [RankRun; 2] = [RankRun { run: CLUSTER_4, ranks: 2 }, RankRun { run: CLUSTER_4, ranks: 4 }];

impl RankRun {
    /// Its name, the prefix of its tests' names: `ranks::cluster-4-over-2-ranks`.
    pub fn name(&self) -> String {
        format!("{}-over-{}-ranks", self.run.name, self.ranks)
    }

    /// The runner's check that the run happened: every rank started and every node ended well.
    pub fn check_name(&self) -> String {
        format!("{}/every_rank_starts_and_rank_0_reports_every_node_finished_cleanly", self.name())
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

/// What the ranks printed of node `node`'s end.
fn node_end(line: &str) -> Option<(usize, RunEnd)> {
    let rest = line.strip_prefix("node")?;
    let digits = rest.find(|c: char| !c.is_ascii_digit())?;
    let node = rest[..digits].parse().ok()?;
    let end = match &rest[digits..] {
        " finished" => RunEnd::Exited(0),
        " crashed: QEMU was killed" => RunEnd::Lost,
        other => RunEnd::Exited(other.strip_prefix(" ended with status ")?.parse().ok()?),
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
        let Some(rest) = line.strip_prefix("node") else { continue };
        let Some((node, rest)) = rest.split_once(' ') else { continue };
        let Some(node) = node.parse::<usize>().ok().filter(|&n| n < nodes) else { continue };
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
        timeout: run.timeout,
    };
    let started = Instant::now();
    let (output, status) = capture(&cluster, program)?;
    super::took(&name, started);
    let tests = |node: usize, test: &str| format!("{name}/node{node}/{test}");
    let read = read_back(run.nodes, &output, |node, test, outcome| totals.record(&tests(node, test), outcome));
    for (node, parser) in read.parsers.iter().enumerate() {
        let mut failures = parser.failures(read.ends[node]);
        for f in &mut failures {
            f.test = tests(node, &f.test);
        }
        let results: Vec<TestRecord> =
            parser.results.iter().map(|r| TestRecord { name: tests(node, &r.name), ..r.clone() }).collect();
        totals.add_failures(&name, failures, &results);
    }
    let verdict = judge(&read, status, rank_run.ranks);
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

/// Runs it with the output captured (and stderr after it), bounded: (output, mpirun's status).
fn capture(cluster: &ClusterRun, program: &Path) -> anyhow::Result<(String, Option<i32>)> {
    let mut child =
        cluster.command(program).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().context("cannot run mpirun")?;
    let out = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            text.push_str(&line);
            text.push('\n');
        }
        text
    });
    let mut err = child.stderr.take().expect("piped");
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = err.read_to_string(&mut text);
        text
    });
    let deadline = Instant::now() + cluster.bound();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status.code();
        }
        if Instant::now() > deadline {
            // SAFETY: kill with the process group this child leads.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut output = reader.join().unwrap_or_default();
    output.push_str(&errors.join().unwrap_or_default());
    Ok((output, status))
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
}
