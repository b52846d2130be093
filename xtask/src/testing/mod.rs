//! `cargo xtask test`: host unit tests of every crate, then the on-target runs in QEMU (or on a
//! board over its serial port). Prints one line per test and ends with `N passed, N failed`.

pub mod parser;
pub mod runs;
pub mod serial;

use crate::qemu_run::RuntimeDir;
use crate::{images, setup};
use anyhow::Context;
use parser::{Failure, Outcome, Parsed, Parser, RunEnd};
use qemu_virt::{Decoder, Event, Node, NodeSpec, Source};
use runs::{Expect, Image, RUNS, TargetRun};
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
    Ok(())
}

/// `cargo test` over the workspace's host crates, streaming its test lines.
fn host_tests(opts: &Options, totals: &mut Totals) -> anyhow::Result<()> {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(images::workspace_root()).args(["test", "--workspace"]);
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

fn target_run(
    run: &TargetRun,
    qemu: &std::path::Path,
    images: &images::Images,
    opts: &Options,
    totals: &mut Totals,
) -> anyhow::Result<()> {
    let mut boot_args = run.boot_args.to_string();
    if run.expect.is_summary() {
        if let Some(f) = &opts.filter {
            boot_args.push_str(&format!(" filter={f}"));
        }
        if opts.list {
            boot_args.push_str(" list");
        }
    } else if opts.list {
        if let Expect::Output { test, .. } = run.expect {
            println!("test {test}");
        }
        return Ok(());
    }
    let spec = NodeSpec {
        index: 0,
        kernel: match run.image {
            Image::Ktest => images.ktest.clone(),
            Image::Kernel => images.kernel.clone(),
        },
        r5: run.r5.then(|| images.r5.clone()),
        boot_args: Some(boot_args.trim().to_string()),
        virtualization: run.virtualization,
        ..NodeSpec::default()
    };
    let dir = RuntimeDir::new(run.name)?;
    let (tx, rx) = mpsc::channel();
    let mut node = Node::start(&spec, qemu, &dir.0, tx)?;
    node.resume()?;
    let mut parser = Parser::new();
    let deadline = Instant::now() + run.timeout;
    let end = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Event::Line { source, line, .. }) => match parser.line(source, &line) {
                Parsed::Finished(name, outcome) if run.expect.is_summary() => totals.record(&name, outcome),
                Parsed::Listed(name) => println!("test {name}"),
                _ => {}
            },
            Ok(Event::Exited { status, .. }) => break status.map_or(RunEnd::Lost, RunEnd::Exited),
            Err(_) => {
                node.kill();
                // Take the lines that arrived until QEMU went away.
                while let Ok(Event::Line { source, line, .. }) = rx.recv_timeout(Duration::from_secs(2)) {
                    parser.line(source, &line);
                }
                break RunEnd::TimedOut;
            }
        }
    };
    drop(node);
    if opts.list {
        return Ok(());
    }
    match run.expect {
        Expect::Summary => totals.add_failures(run.name, parser.failures(end), &parser.results),
        Expect::Output { test, status, must_contain } => {
            let missing: Vec<&str> =
                must_contain.iter().copied().filter(|m| !parser.log.iter().any(|l| l.contains(m))).collect();
            let ok = end == RunEnd::Exited(status) && missing.is_empty();
            totals.record(test, if ok { Outcome::Passed } else { Outcome::Failed });
            if !ok {
                totals.failures.push(Failure {
                    test: test.into(),
                    reason: format!("ended {end:?} (expected exit {status}), missing {missing:?}"),
                    log: parser.log.clone(),
                });
            }
        }
    }
    Ok(())
}

/// The on-target tests on a board: the test image's console is read from `port`.
fn serial_run(port: &std::path::Path, baud: u32, elf: &std::path::Path, totals: &mut Totals) -> anyhow::Result<()> {
    /// A board has no exit status: after the summary, wait this long for stragglers.
    const AFTER_SUMMARY: Duration = Duration::from_secs(1);
    const TIMEOUT: Duration = Duration::from_secs(600);
    let mut tty = serial::open(port, baud)?;
    let mut decoder = Decoder::for_elf(elf)?;
    let mut parser = Parser::new();
    println!("waiting for the test image on {} (reset the board now)", port.display());
    let started = Instant::now();
    let mut summary_at = None;
    let mut buf = [0u8; 1024];
    let end = loop {
        if summary_at.is_some_and(|t: Instant| t.elapsed() > AFTER_SUMMARY) {
            break RunEnd::Quiet;
        }
        if started.elapsed() > TIMEOUT {
            break RunEnd::TimedOut;
        }
        let n = match tty.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => 0,
            Err(_) => break RunEnd::Lost,
        };
        for line in decoder.feed(&buf[..n]) {
            if let Parsed::Finished(name, outcome) = parser.line(Source::Console, &line) {
                totals.record(&name, outcome);
            }
            if parser.summary.is_some() && summary_at.is_none() {
                summary_at = Some(Instant::now());
            }
            if parser.crash.is_some() {
                summary_at.get_or_insert_with(Instant::now);
            }
        }
    };
    totals.add_failures("serial", parser.failures(end), &parser.results);
    Ok(())
}

impl Expect {
    fn is_summary(&self) -> bool {
        matches!(self, Expect::Summary)
    }
}
