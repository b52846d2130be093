//! `cargo xtask test`: host unit tests of every crate, then the on-target runs in QEMU (or on a
//! board over its serial port). Prints one line per test and ends with `N passed, N failed`.

mod command_tests;
mod commands;
pub mod parser;
mod rank_runs;
pub mod runs;
pub mod serial;
mod store;

use crate::qemu_run::{Load, RuntimeDir, node_specs};
use crate::{images, setup};
use anyhow::Context;
use parser::{Failure, Outcome, Parsed, Parser, RunEnd};
use qemu_virt::{Cluster, ClusterSpec, Decoder, Event, Source};
use runs::{Expect, RUNS, TargetRun};
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub struct Options {
    pub filter: Option<String>,
    pub list: bool,
    pub release: bool,
    pub host: bool,
    pub target: bool,
    pub serial: Option<PathBuf>,
    pub baud: u32,
    pub trace_dir: Option<PathBuf>,
}

#[derive(Default)]
struct Totals {
    passed: usize,
    failed: usize,
    failures: Vec<Failure>,
}

impl Totals {
    fn record(&mut self, name: &str, outcome: Outcome) {
        match outcome {
            Outcome::Passed => self.passed += 1,
            Outcome::Failed => self.failed += 1,
        }
        let verdict = if outcome == Outcome::Passed { "ok" } else { "FAILED" };
        println!("test {name} ... {verdict}");
    }

    /// The runner's own check `name`: passed, or failed for the reason given.
    fn record_check(&mut self, name: &str, verdict: Result<(), String>) {
        self.record(name, if verdict.is_ok() { Outcome::Passed } else { Outcome::Failed });
        if let Err(reason) = verdict {
            self.failures.push(Failure { test: name.into(), reason, log: vec![] });
        }
    }

    /// Takes the run's failures: a test already reported FAILED is not counted twice, a test
    /// reported ok that failed afterwards (an unmet expectation) moves from passed to failed,
    /// and a failure outside any reported test (crash, hang, truncation) counts as one more.
    fn add_failures(&mut self, run: &str, failures: Vec<Failure>, results: &[parser::TestRecord]) {
        for mut f in failures {
            match results.iter().find(|r| r.name == f.test).map(|r| r.outcome) {
                Some(Outcome::Failed) => {}
                Some(Outcome::Passed) => {
                    self.passed -= 1;
                    self.failed += 1;
                    println!("test {} ... FAILED ({})", f.test, f.reason);
                }
                None => {
                    self.failed += 1;
                    println!("test {} ... FAILED ({})", f.test, f.reason);
                }
            }
            f.reason = format!("{}, in run {run}", f.reason);
            self.failures.push(f);
        }
    }
}

pub fn run(opts: Options) -> anyhow::Result<()> {
    let mut totals = Totals::default();
    if opts.host && opts.serial.is_none() {
        host_tests(&opts, &mut totals)?;
        mpi_link_runs(&opts, &mut totals)?;
    }
    if opts.target {
        let images = images::build_all(images::Options { release: opts.release, qfdb: false })?;
        match &opts.serial {
            Some(port) => serial_run(port, opts.baud, &images.ktest, &mut totals)?,
            None => {
                let qemu = setup::ensure_qemu()?;
                for run in RUNS.iter().filter(|r| r.selected(opts.filter.as_deref())) {
                    target_run(run, &qemu, &images, &opts, &mut totals)?;
                }
                let rank_runs: Vec<_> =
                    rank_runs::RANK_RUNS.iter().filter(|r| r.selected(opts.filter.as_deref())).collect();
                if !rank_runs.is_empty() {
                    let program = if opts.list { PathBuf::new() } else { crate::mpi::build_ranks()? };
                    for run in rank_runs {
                        rank_runs::run_one(run, &program, &qemu, &images, &opts, &mut totals)?;
                    }
                }
                if opts.filter.as_deref().is_none_or(|f| SERIAL_CHECK.contains(f)) {
                    if opts.list {
                        println!("test {SERIAL_CHECK}");
                    } else {
                        serial_pty_check(&qemu, &images, &mut totals)?;
                    }
                }
                if opts.filter.as_deref().is_none_or(|f| COUNTS_CHECK.contains(f)) {
                    if opts.list {
                        println!("test {COUNTS_CHECK}");
                    } else {
                        counts_check(&qemu, &images, opts.release, &mut totals);
                    }
                }
                for (name, check) in store::CHECKS {
                    if opts.filter.as_deref().is_none_or(|f| name.contains(f)) {
                        if opts.list {
                            println!("test {name}");
                        } else {
                            totals.record_check(name, check(&qemu, &images, opts.release));
                        }
                    }
                }
                if opts.filter.as_deref().is_none_or(|f| IDLE_CHECK.contains(f)) {
                    if opts.list {
                        println!("test {IDLE_CHECK}");
                    } else {
                        idle_check(&qemu, &images, &mut totals);
                    }
                }
                command_tests(&opts, &mut totals);
            }
        }
    }
    if opts.list {
        return Ok(());
    }
    for f in &totals.failures {
        println!("\n---- {} ({}) ----", f.test, f.reason);
        for line in &f.log {
            println!("    {line}");
        }
    }
    println!("\n{} passed, {} failed", totals.passed, totals.failed);
    anyhow::ensure!(totals.failed == 0, "{} test(s) failed", totals.failed);
    // A run that checked nothing proves nothing: a filter that selects no test is an error.
    anyhow::ensure!(
        totals.passed > 0,
        "no test ran: {}",
        opts.filter
            .as_deref()
            .map_or("nothing was selected".into(), |f| format!("the filter `{f}` selects none (try --list)"))
    );
    Ok(())
}

/// `cargo test` over the workspace's host crates, streaming its test lines. The MPI link is
/// built and tested with them (feature `qemu-virt/mpi`), so Open MPI is installed first (or the
/// run fails saying how).
fn host_tests(opts: &Options, totals: &mut Totals) -> anyhow::Result<()> {
    setup::ensure_mpi()?;
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(images::workspace_root()).args(["test", "--workspace", "--features", "qemu-virt/mpi"]);
    cmd.arg("--");
    if opts.list {
        cmd.arg("--list");
    }
    if let Some(f) = &opts.filter {
        cmd.arg(f);
    }
    cmd.stdout(Stdio::piped());
    let mut child = cmd.spawn().context("cannot run cargo test")?;
    let stdout = child.stdout.take().unwrap();
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        if opts.list {
            if let Some(name) = line.strip_suffix(": test") {
                println!("test {name}");
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix("test ")
            && let Some((name, verdict)) = rest.rsplit_once(" ... ")
        {
            match verdict {
                "ok" => totals.record(name, Outcome::Passed),
                "FAILED" => totals.record(name, Outcome::Failed),
                _ => println!("{line}"),
            }
        } else if line.starts_with("---- ") || line.starts_with("thread ") || line.contains("panicked") {
            println!("{line}");
        }
    }
    let status = child.wait()?;
    if !status.success() && totals.failed == 0 {
        totals.failed += 1;
        totals.failures.push(Failure {
            test: "<host build>".into(),
            reason: "cargo test failed to build or run".into(),
            log: vec![],
        });
    }
    Ok(())
}

/// The MPI link and the ranks' transport over it on 2 and 4 ranks of this host over TCP (`crate::mpi`): each run whose tests the
/// filter selects, once; a test passes when every rank that owes it reported it ok.
fn mpi_link_runs(opts: &Options, totals: &mut Totals) -> anyhow::Result<()> {
    let selected = |name: &str| opts.filter.as_deref().is_none_or(|f| name.contains(f));
    let runs: Vec<_> =
        crate::mpi::CHECK_RUNS.iter().filter(|run| run.tests().iter().any(|(name, _)| selected(name))).collect();
    if opts.list {
        runs.iter().flat_map(|run| run.tests()).filter(|(name, _)| selected(name)).for_each(|(name, _)| {
            println!("test {name}");
        });
        return Ok(());
    }
    if runs.is_empty() {
        return Ok(());
    }
    let mut built: Vec<(&str, std::path::PathBuf)> = Vec::new();
    for run in runs {
        let check = match built.iter().find(|(example, _)| *example == run.check.example) {
            Some((_, path)) => path.clone(),
            None => {
                let path = crate::mpi::build_check(run.check)?;
                built.push((run.check.example, path.clone()));
                path
            }
        };
        let started = std::time::Instant::now();
        let output = run.run(&check)?;
        println!("{} over {} ranks: {:.1} s", run.check.example, run.ranks, started.elapsed().as_secs_f64());
        for figure in crate::mpi::figures(&output) {
            println!("mpi link, {}: {figure}", run.name);
        }
        for (name, ranks) in run.tests().into_iter().filter(|(name, _)| selected(name)) {
            match crate::mpi::judge(&name, &ranks, run.ranks, &output) {
                Ok(()) => totals.record(&name, Outcome::Passed),
                Err(failure) => {
                    totals.record(&name, Outcome::Failed);
                    totals.failures.push(failure);
                }
            }
        }
    }
    Ok(())
}

/// A test's name in the totals: multi-node runs prefix it with the node.
fn test_name(run: &TargetRun, node: usize, test: &str) -> String {
    if run.nodes > 1 { format!("node{node}/{test}") } else { test.to_string() }
}

/// The run's boot arguments, with the filter and `list` where the run reports tests.
fn boot_args_of(run: &TargetRun, opts: &Options) -> String {
    let mut boot_args = run.boot_args.to_string();
    if run.r5 {
        // The image then expects the R5 up, and fails its tests if it is not.
        boot_args.push_str(" r5");
    }
    if run.expect.is_summary() && run.kill.is_none() {
        // A filter that selects the run's trace check runs the whole run: the check needs the
        // traffic of all its tests (`runner::` would otherwise leave it none to look at).
        let whole_run = |f: &String| run.trace_check.is_some_and(|t| t.contains(f.as_str()));
        if let Some(f) = opts.filter.as_ref().filter(|f| !whole_run(f)) {
            boot_args.push_str(&format!(" filter={f} cluster-filter={f}"));
        }
        if opts.list {
            boot_args.push_str(" list");
        }
    }
    boot_args
}

/// Follows the run's consoles until every node has ended or the run's time is up (then the
/// nodes left are killed): records each test as it finishes, kills a node when the run says
/// so. Returns how each node ended, `None` for the ones that did not.
fn watch(
    run: &TargetRun,
    cluster: &Cluster,
    rx: &mpsc::Receiver<Event>,
    parsers: &mut [Parser],
    totals: &mut Totals,
) -> Vec<Option<RunEnd>> {
    let mut ends: Vec<Option<RunEnd>> = vec![None; run.nodes];
    let deadline = Instant::now() + run.timeout;
    while ends.iter().any(Option::is_none) {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Event::Line { node, source, line }) => {
                if let Some(kill) = run.kill
                    && kill.node == node
                    && line.text.contains(kill.when)
                {
                    println!("(killing node{node} now, as planned)");
                    cluster.kill(node);
                }
                match parsers[node].line(source, &line) {
                    Parsed::Finished(test, outcome) if run.expect.is_summary() => {
                        totals.record(&test_name(run, node, &test), outcome)
                    }
                    Parsed::Listed(test) => println!("test {test}"),
                    _ => {}
                }
            }
            Ok(Event::Exited { node, status }) => ends[node] = Some(status.map_or(RunEnd::Lost, RunEnd::Exited)),
            Err(_) => break,
        }
    }
    if ends.iter().any(Option::is_none) {
        for (node, _) in ends.iter().enumerate().filter(|(_, e)| e.is_none()) {
            cluster.kill(node);
        }
        // Take the lines that arrived until QEMU went away.
        while let Ok(Event::Line { node, source, line }) = rx.recv_timeout(Duration::from_secs(2)) {
            parsers[node].line(source, &line);
        }
    }
    ends
}

/// A run that reports tests: every node's failures (but the node killed on purpose), and for a
/// kill run, whether the kill was seen and the others finished.
fn judge_summary(run: &TargetRun, parsers: &[Parser], ends: &[RunEnd], may_be_empty: bool, totals: &mut Totals) {
    for (node, parser) in parsers.iter().enumerate() {
        if run.kill.is_some_and(|k| k.node == node) {
            continue;
        }
        if !may_be_empty && parser.results.is_empty() && ends[node] == RunEnd::Exited(0) {
            // A run whose own filters select nothing passes vacuously: that is a broken run.
            let test = test_name(run, node, "<the run's tests>");
            totals.record(&test, Outcome::Failed);
            totals.failures.push(Failure {
                test,
                reason: "the run reported no test: its boot arguments' filters select none".into(),
                log: vec![],
            });
        }
        let mut failures = parser.failures(ends[node]);
        for f in &mut failures {
            f.test = test_name(run, node, &f.test);
        }
        let results: Vec<_> = parser
            .results
            .iter()
            .map(|r| parser::TestRecord { name: test_name(run, node, &r.name), ..r.clone() })
            .collect();
        totals.add_failures(run.name, failures, &results);
    }
    if let Some(kill) = run.kill {
        let killed = ends[kill.node] == RunEnd::Lost;
        let others_finished = ends
            .iter()
            .enumerate()
            .all(|(n, e)| n == kill.node || *e == RunEnd::Exited(0) && parsers[n].summary.is_some());
        let verdict = if killed && others_finished {
            Ok(())
        } else {
            Err(format!("node{} ended {:?} (expected a kill), others ended {ends:?}", kill.node, ends[kill.node]))
        };
        totals.record_check(kill.test, verdict);
    }
}

/// A run judged by its output: every node's exit status and the lines it must print.
fn judge_output(
    test: &'static str,
    status: i32,
    must_contain: &[&str],
    parsers: &[Parser],
    ends: &[RunEnd],
    totals: &mut Totals,
) {
    let log: Vec<&String> = parsers.iter().flat_map(|p| &p.log).collect();
    let missing: Vec<&str> = must_contain.iter().copied().filter(|m| !log.iter().any(|l| l.contains(m))).collect();
    let ok = ends.iter().all(|e| *e == RunEnd::Exited(status)) && missing.is_empty();
    totals.record(test, if ok { Outcome::Passed } else { Outcome::Failed });
    if !ok {
        totals.failures.push(Failure {
            test: test.into(),
            reason: format!("ended {ends:?} (expected exit {status}), missing {missing:?}"),
            log: log.into_iter().cloned().collect(),
        });
    }
}

fn target_run(
    run: &TargetRun,
    qemu: &std::path::Path,
    images: &images::Images,
    opts: &Options,
    totals: &mut Totals,
) -> anyhow::Result<()> {
    if opts.list && (run.nodes > 1 || !run.expect.is_summary()) {
        // Multi-node runs repeat the image's tests per node; list the runner's own.
        if let Some(test) = run.runner_test() {
            println!("test {test}");
        }
        return Ok(());
    }
    let boot_args = boot_args_of(run, opts);
    let mut nodes = node_specs(run.nodes, Load::ktest(images, run.r5), &boot_args);
    for node in &mut nodes {
        node.virtualization = run.virtualization;
    }
    let dir = RuntimeDir::new(run.name)?;
    // The trace check needs the run's full set of tests: only without a filter, or when asked for.
    let trace_check = run.trace_check.filter(|t| opts.filter.as_deref().is_none_or(|f| t.contains(f)));
    let trace = match &opts.trace_dir {
        Some(d) => {
            std::fs::create_dir_all(d)?;
            Some(d.join(format!("{}.json", run.name)))
        }
        None => trace_check.map(|_| dir.0.join("trace.json")),
    };
    let link = run.links.config();
    let (tx, rx) = mpsc::channel();
    let started = Instant::now();
    let cluster =
        Cluster::start(&ClusterSpec { nodes, trace: trace.clone(), link, ..ClusterSpec::default() }, qemu, &dir.0, tx)?;
    let mut parsers: Vec<Parser> = (0..run.nodes).map(|_| Parser::new()).collect();
    let ends = watch(run, &cluster, &rx, &mut parsers, totals);
    let dropped: u64 = cluster.counters().iter().map(|c| c.packets_dropped).sum();
    drop(cluster);
    if opts.list {
        return Ok(());
    }
    took(run.name, started);
    if let (Some(test), Some(path)) = (trace_check, &trace) {
        totals.record_check(test, check_trace(path, run.nodes));
    }
    if run.links == runs::Links::Lossy
        && run.r5
        && opts.filter.as_deref().is_none_or(|f| LOSSY_TIMEOUTS_TEST.contains(f))
    {
        totals.record_check(LOSSY_TIMEOUTS_TEST, check_lossy_timeouts(&parsers, dropped, opts.filter.is_none()));
    }
    let ends: Vec<RunEnd> = ends.into_iter().map(|e| e.unwrap_or(RunEnd::TimedOut)).collect();
    match run.expect {
        Expect::Summary => judge_summary(run, &parsers, &ends, opts.filter.is_some() || opts.list, totals),
        Expect::Output { test, status, must_contain } => {
            judge_output(test, status, must_contain, &parsers, &ends, totals)
        }
    }
    Ok(())
}

/// Says how long a run or a runner test took: where the suite's time goes, in every log.
fn took(name: &str, started: Instant) {
    println!("{name}: {:.1} s", started.elapsed().as_secs_f64());
}

/// The tests that run `cargo xtask` commands as a user would (`command_tests.rs`).
fn command_tests(opts: &Options, totals: &mut Totals) {
    for test in command_tests::TESTS.iter().filter(|t| opts.filter.as_deref().is_none_or(|f| t.name.contains(f))) {
        if opts.list {
            println!("test {}", test.name);
            continue;
        }
        let started = Instant::now();
        let verdict = (test.run)();
        took(test.name, started);
        match verdict {
            Ok(()) => totals.record(test.name, Outcome::Passed),
            Err(failed) => {
                totals.record(test.name, Outcome::Failed);
                totals.failures.push(Failure { test: test.name.into(), reason: failed.reason, log: failed.log });
            }
        }
    }
}

/// The runner's check of a lossy run with RDMA (`runs::LOSSY_LINKS`).
const LOSSY_TIMEOUTS_TEST: &str = "runner::lossy_rdma_timeouts_fire_only_for_packets_the_links_dropped";

/// Every R5 timeout resends a block one of whose packets (data, ACK or PF-NACK) was lost, so
/// over a lossy run the nodes' timeouts (each node prints its count at the end) cannot exceed
/// the datagrams the links dropped. Over the `whole_run` the links must have dropped some, or the
/// run proves nothing (a filtered run may have sent no RDMA packet at all).
fn check_lossy_timeouts(parsers: &[Parser], dropped: u64, whole_run: bool) -> Result<(), String> {
    const LINE: &str = proto::rdma::ipc::TIMEOUTS_LINE;
    let mut timeouts = 0;
    for (node, parser) in parsers.iter().enumerate() {
        let count = parser
            .log
            .iter()
            .find_map(|l| l.split_once(LINE).and_then(|(_, n)| n.trim().parse::<u64>().ok()))
            .ok_or_else(|| format!("node{node} printed no `{LINE}` line"))?;
        timeouts += count;
    }
    if whole_run && dropped == 0 {
        return Err("the links dropped no packet: the run was not lossy".into());
    }
    if timeouts > dropped {
        return Err(format!("{timeouts} timeouts for {dropped} dropped datagrams: some fired for nothing"));
    }
    println!("lossy run: {timeouts} RDMA timeouts, {dropped} datagrams dropped by the links");
    Ok(())
}

/// The trace of a cluster run must be valid JSON with forwarded accesses, interrupts and
/// interconnect packets from every node.
fn check_trace(path: &std::path::Path, nodes: usize) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("no trace file: {e}"))?;
    let doc: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("the trace is not valid JSON: {e}"))?;
    let events = doc["traceEvents"].as_array().ok_or("no traceEvents array")?;
    for node in 0..nodes as u64 {
        for category in ["mmio", "irq", "interconnect"] {
            if !events.iter().any(|e| e["cat"] == category && e["pid"] == node) {
                return Err(format!("no {category} event from node{node}"));
            }
        }
    }
    Ok(())
}

/// Reads a test image's console from a serial port (a board's, or a pseudo-terminal) until
/// the summary (plus a moment for stragglers), a crash, silence, or the timeout. Test lines are
/// recorded with `prefix`.
fn serial_session(
    tty: &mut std::fs::File,
    elf: &std::path::Path,
    prefix: &str,
    timeout: Duration,
    totals: &mut Totals,
) -> anyhow::Result<(Parser, RunEnd)> {
    /// A board has no exit status: after the summary, wait this long for stragglers.
    const AFTER_SUMMARY: Duration = Duration::from_secs(1);
    let mut decoder = Decoder::for_elf(elf)?;
    let mut parser = Parser::new();
    let started = Instant::now();
    let mut ended_at = None;
    let mut buf = [0u8; 1024];
    let end = loop {
        if ended_at.is_some_and(|t: Instant| t.elapsed() > AFTER_SUMMARY) {
            break RunEnd::Quiet;
        }
        if started.elapsed() > timeout {
            break RunEnd::TimedOut;
        }
        let n = match tty.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => 0,
            // A port that goes away after the summary (a board reset, QEMU exiting) lost nothing.
            Err(_) if parser.summary.is_some() => break RunEnd::Quiet,
            Err(_) => break RunEnd::Lost,
        };
        for line in decoder.feed(&buf[..n]) {
            if let Parsed::Finished(name, outcome) = parser.line(Source::Console, &line) {
                totals.record(&format!("{prefix}{name}"), outcome);
            }
            if parser.summary.is_some() || parser.crash.is_some() {
                ended_at.get_or_insert_with(Instant::now);
            }
        }
    };
    Ok((parser, end))
}

/// The on-target tests on a board: the test image's console is read from `port`.
fn serial_run(port: &std::path::Path, baud: u32, elf: &std::path::Path, totals: &mut Totals) -> anyhow::Result<()> {
    let mut tty = serial::open(port, baud)?;
    println!("waiting for the test image on {} (reset the board now)", port.display());
    let (parser, end) = serial_session(&mut tty, elf, "", Duration::from_secs(600), totals)?;
    totals.add_failures("serial", parser.failures(end), &parser.results);
    Ok(())
}

/// The serial runner, checked without a board: QEMU puts the test image's console on a
/// pseudo-terminal and the runner reads it exactly as it reads `/dev/ttyUSB1`.
const SERIAL_CHECK: &str = "runner::serial_runner_reads_the_test_image_over_a_pty";

fn serial_pty_check(qemu: &std::path::Path, images: &images::Images, totals: &mut Totals) -> anyhow::Result<()> {
    let dir = RuntimeDir::new("serial")?;
    let (tx, _rx) = mpsc::channel();
    let mut nodes = node_specs(1, Load::ktest(images, true), "filter=boot::");
    nodes[0].console_pty = true;
    let mut cluster = Cluster::start(&ClusterSpec { nodes, paused: true, ..ClusterSpec::default() }, qemu, &dir.0, tx)?;
    let node = cluster.node_mut(0).context("no node")?;
    let pty = node.console_pty()?;
    let mut tty = serial::open(&pty, 115_200)?;
    node.resume()?;
    let (parser, end) = serial_session(&mut tty, &images.ktest, "serial/", Duration::from_secs(120), totals)?;
    drop(cluster);
    let failures = parser.failures(end);
    let ok = failures.is_empty() && parser.summary == Some((parser.results.len(), 0)) && parser.results.len() >= 4;
    totals.record(SERIAL_CHECK, if ok { Outcome::Passed } else { Outcome::Failed });
    if !ok {
        totals.failures.push(Failure {
            test: SERIAL_CHECK.into(),
            reason: format!(
                "over {}: ended {end:?}, summary {:?}, {} failures",
                pty.display(),
                parser.summary,
                failures.len()
            ),
            log: parser.log.clone(),
        });
    }
    Ok(())
}

/// The fast path's counts must not regress (issue: count them, do not time them): the atomic
/// service's instructions per FAD64 and the node's forwarded accesses per FAD64, measured under
/// `-icount` in the build the suite runs (`bench::service_counts`).
const COUNTS_CHECK: &str = "runner::atomic_service_instructions_and_forwarded_accesses_per_fad_do_not_rise";

/// The ceilings, on the release build (the one `cargo xtask bench` measures, and the one the
/// service's goal is for): instructions per FAD at the goal (`bench::SERVICE_INSTRUCTIONS_GOAL`;
/// 120 measured 2026-11-27); forwarded accesses per FAD at today's count with room for a few
/// background accesses (10.1-10.3 measured: the client's request and reply, the service's
/// request and reply, the vmbox interrupt and the waits' arming, and the process's spawn and
/// exit spread over its 1000 FADs; 19.8 before pairs and the vmbox's PACKET).
const FORWARDED_PER_FAD_CEILING: f64 = 10.5;

/// Builds the release images (unless the suite runs them already) and counts, on one node under
/// `-icount`, the service's instructions and the node's forwarded accesses per FAD.
fn counts_check(qemu: &std::path::Path, images: &images::Images, release: bool, totals: &mut Totals) {
    const GOAL: u64 = crate::bench::SERVICE_INSTRUCTIONS_GOAL;
    let release_images;
    let images = if release {
        images
    } else {
        match images::build_all(images::Options { release: true, qfdb: false }) {
            Ok(built) => {
                release_images = built;
                &release_images
            }
            Err(e) => {
                totals.record_check(COUNTS_CHECK, Err(format!("the release build failed: {e:#}")));
                return;
            }
        }
    };
    let verdict = crate::bench::service_counts(qemu, images).and_then(|c| {
        let line = format!(
            "release build: {} instructions per FAD (ceiling {GOAL}), {:.2} forwarded accesses per FAD (ceiling {:.2})",
            c.instructions_median, c.forwarded_per_fad, FORWARDED_PER_FAD_CEILING
        );
        anyhow::ensure!(c.instructions_median <= GOAL && c.forwarded_per_fad <= FORWARDED_PER_FAD_CEILING, "{line}");
        Ok(line)
    });
    if let Ok(line) = &verdict {
        println!("counts: {line}");
    }
    totals.record_check(COUNTS_CHECK, verdict.map(drop).map_err(|e| format!("{e:#}")));
}

const IDLE_CHECK: &str = "runner::an_idle_nodes_r5_and_a53s_sleep_at_under_a_fifth_of_a_core";
/// The bound of the idle check: a resource bound with a wide margin (an idle node's R5 and its
/// A53s take about 0 % each; an R5 that polls takes a whole core).
const IDLE_CEILING_PERCENT: f64 = 20.0;

/// One node boots the kernel and waits at its prompt; over 5 s its R5 vCPU and its four A53
/// vCPUs together must each stay under a fifth of a core (`bench::idle`).
fn idle_check(qemu: &std::path::Path, images: &images::Images, totals: &mut Totals) {
    use crate::host_cpu::Kind;
    let verdict = crate::bench::idle::measure(qemu, images, 1, std::time::Duration::from_secs(5)).and_then(|shares| {
        let (r5, a53) = (shares.max_on_a_node(Kind::R5), shares.max_on_a_node(Kind::A53));
        let line = format!(
            "an idle node's R5 took {r5:.1} % and its A53s {a53:.1} % of a core over 5 s (ceiling {IDLE_CEILING_PERCENT} % each)"
        );
        anyhow::ensure!(r5 <= IDLE_CEILING_PERCENT && a53 <= IDLE_CEILING_PERCENT, "{line}");
        Ok(line)
    });
    if let Ok(line) = &verdict {
        println!("idle: {line}");
    }
    totals.record_check(IDLE_CHECK, verdict.map(drop).map_err(|e| format!("{e:#}")));
}

impl Expect {
    fn is_summary(&self) -> bool {
        matches!(self, Expect::Summary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_filter(filter: &str) -> Options {
        Options {
            filter: Some(filter.into()),
            list: false,
            release: false,
            host: false,
            target: true,
            serial: None,
            baud: 115_200,
            trace_dir: None,
        }
    }

    /// A filter goes to a run's tests, unless it selects the run's trace check, which needs the
    /// traffic of the whole run.
    #[test]
    fn a_filter_that_selects_a_trace_check_runs_the_whole_run() {
        let run = runs::RUNS.iter().find(|r| r.trace_check.is_some()).expect("a run with a trace check");
        assert!(boot_args_of(run, &with_filter("platform::")).contains("filter=platform:: cluster-filter=platform::"));
        for selects_the_check in ["runner::", "runner::trace_file"] {
            assert!(
                !boot_args_of(run, &with_filter(selects_the_check)).contains("cluster-filter="),
                "{selects_the_check}"
            );
        }
    }
}
