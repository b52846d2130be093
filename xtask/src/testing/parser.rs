//! The serial-output parser: turns the decoded lines of a test image (from QEMU or a board's
//! serial port) into test results, and judges the run.
//!
//! The protocol (`a53_ktest::testkit`, `a53-kernel/ktest/src/testkit.rs`):
//!
//! ```text
//! running <suite>::<name>              before each test
//! test <suite>::<name> ... ok|FAILED   after each test
//! test <suite>::<name>                 one per test, with boot argument `list`
//! expect r5-trace: <text>              the running test also needs <text> in the R5 trace
//! N passed, N failed                   once, at the end
//! ```
//!
//! A panic or an unhandled exception (on either processor), a missing summary, a summary that
//! disagrees with the result lines, an unmet expectation, a non-zero exit and a timeout are all
//! failures, attributed to the test that was running.

use qemu_virt::{Level, Line, Source};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Passed,
    Failed,
}

/// What a line meant, for live reporting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Parsed {
    Started(String),
    Finished(String, Outcome),
    Listed(String),
    Summary(usize, usize),
    Crash(String),
    Other,
}

/// A test's result and the lines it printed.
#[derive(Clone, Debug)]
pub struct TestRecord {
    pub name: String,
    pub outcome: Outcome,
    pub log: Vec<String>,
}

/// A failure of the run, attributed to a test where possible.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    pub test: String,
    pub reason: String,
    pub log: Vec<String>,
}

#[derive(Clone, Debug)]
struct Expectation {
    test: String,
    text: String,
    met: bool,
}

/// How the run ended, as seen by whoever ran it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunEnd {
    /// The image exited with this status (QEMU semihosting).
    Exited(i32),
    /// The process was killed by a signal or the connection dropped.
    Lost,
    /// The runner gave up waiting.
    TimedOut,
    /// A board: the output simply stopped after the summary (there is no exit status).
    Quiet,
}

#[derive(Debug, Default)]
pub struct Parser {
    running: Option<String>,
    running_log: Vec<String>,
    pub results: Vec<TestRecord>,
    pub listed: Vec<String>,
    pub summary: Option<(usize, usize)>,
    pub crash: Option<String>,
    crash_log: Vec<String>,
    expectations: Vec<Expectation>,
    r5_trace: Vec<String>,
    /// Every line, in order, for reports of crashed runs.
    pub log: Vec<String>,
}

/// The first line of a crash report, on either processor.
fn is_crash(line: &Line) -> bool {
    line.level == Some(Level::Error)
        && (line.text.starts_with("panicked")
            || line.text.contains(": unhandled ")
            || line.text.contains(": unexpected ")
            || line.text.contains(" abort at PC ")
            || line.text.starts_with("undefined instruction at PC"))
}

fn test_name(rest: &str) -> Option<&str> {
    let name = rest.trim();
    (name.contains("::") && !name.contains(' ')).then_some(name)
}

impl Parser {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn line(&mut self, source: Source, line: &Line) -> Parsed {
        let rendered = match source {
            Source::Console => line.to_string(),
            Source::R5Trace => format!("[r5] {line}"),
        };
        self.log.push(rendered.clone());
        if self.running.is_some() {
            self.running_log.push(rendered.clone());
        }
        if self.crash.is_some() {
            self.crash_log.push(rendered.clone());
        }
        if is_crash(line) {
            if self.crash.is_none() {
                self.crash = Some(rendered.clone());
                self.crash_log.push(rendered);
            }
            return Parsed::Crash(line.text.clone());
        }
        if source == Source::R5Trace {
            for e in self.expectations.iter_mut().filter(|e| !e.met) {
                e.met = line.text == e.text;
            }
            self.r5_trace.push(line.text.clone());
            return Parsed::Other;
        }
        // Only level-less (println) console lines carry the protocol.
        if line.level.is_some() {
            return Parsed::Other;
        }
        let text = line.text.trim_end();
        if let Some(rest) = text.strip_prefix("running ")
            && let Some(name) = test_name(rest)
        {
            self.running = Some(name.to_string());
            self.running_log = vec![rendered];
            return Parsed::Started(name.to_string());
        }
        if let Some(rest) = text.strip_prefix("test ") {
            if let Some((name, verdict)) = rest.split_once(" ... ") {
                let outcome = match verdict {
                    "ok" => Outcome::Passed,
                    "FAILED" => Outcome::Failed,
                    _ => return Parsed::Other,
                };
                let log =
                    if self.running.as_deref() == Some(name) { std::mem::take(&mut self.running_log) } else { vec![] };
                self.running = None;
                self.results.push(TestRecord { name: name.to_string(), outcome, log });
                return Parsed::Finished(name.to_string(), outcome);
            }
            if let Some(name) = test_name(rest) {
                self.listed.push(name.to_string());
                return Parsed::Listed(name.to_string());
            }
        }
        if let Some(expected) = text.strip_prefix("expect r5-trace: ") {
            let test = self.running.clone().unwrap_or_default();
            let met = self.r5_trace.iter().any(|l| l == expected);
            self.expectations.push(Expectation { test, text: expected.to_string(), met });
            return Parsed::Other;
        }
        if let Some((p, f)) = parse_summary(text) {
            self.summary = Some((p, f));
            return Parsed::Summary(p, f);
        }
        Parsed::Other
    }

    pub fn passed(&self) -> usize {
        self.results.iter().filter(|r| r.outcome == Outcome::Passed).count()
    }

    /// Judges a run that was expected to end with a summary line.
    pub fn failures(&self, end: RunEnd) -> Vec<Failure> {
        let mut failures = Vec::new();
        let mut ended_early = false;
        for r in self.results.iter().filter(|r| r.outcome == Outcome::Failed) {
            failures.push(Failure { test: r.name.clone(), reason: "failed".into(), log: r.log.clone() });
        }
        for e in self.expectations.iter().filter(|e| !e.met) {
            failures.push(Failure {
                test: e.test.clone(),
                reason: format!("the R5 trace never showed \"{}\"", e.text),
                log: self.r5_trace.iter().rev().take(20).rev().map(|l| format!("[r5] {l}")).collect(),
            });
        }
        let unfinished = self.running.clone().unwrap_or_else(|| "<outside any test>".into());
        if let Some(crash) = &self.crash {
            ended_early = true;
            let mut log = self.running_log.clone();
            let extra: Vec<String> = self.crash_log.iter().filter(|l| !log.contains(l)).cloned().collect();
            log.extend(extra);
            failures.push(Failure { test: unfinished.clone(), reason: format!("crashed: {crash}"), log });
        }
        match end {
            RunEnd::TimedOut if !ended_early => {
                failures.push(Failure {
                    test: unfinished.clone(),
                    reason: "timed out (hang)".into(),
                    log: self.running_log.clone(),
                });
                ended_early = true;
            }
            RunEnd::Lost if !ended_early => {
                failures.push(Failure {
                    test: unfinished.clone(),
                    reason: "the output was cut off".into(),
                    log: self.running_log.clone(),
                });
                ended_early = true;
            }
            _ => {}
        }
        match self.summary {
            None if !ended_early => failures.push(Failure {
                test: unfinished,
                reason: "no summary line: the output is truncated".into(),
                log: self.log.iter().rev().take(20).rev().cloned().collect(),
            }),
            Some((p, f)) if (p, f) != (self.passed(), self.results.len() - self.passed()) => failures.push(Failure {
                test: "<summary>".into(),
                reason: format!(
                    "the summary says {p} passed, {f} failed, but the output showed {} passed, {} failed",
                    self.passed(),
                    self.results.len() - self.passed()
                ),
                log: vec![],
            }),
            _ => {}
        }
        if let RunEnd::Exited(status) = end {
            let tests_failed = self.results.iter().any(|r| r.outcome == Outcome::Failed);
            if status != 0 && !tests_failed && !ended_early {
                failures.push(Failure {
                    test: "<image>".into(),
                    reason: format!("exited with status {status}"),
                    log: vec![],
                });
            }
        }
        failures
    }
}

fn parse_summary(text: &str) -> Option<(usize, usize)> {
    let (p, rest) = text.split_once(" passed, ")?;
    let f = rest.strip_suffix(" failed")?;
    Some((p.parse().ok()?, f.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(parser: &mut Parser, text: &str) {
        for l in text.lines() {
            let (source, body) = match l.strip_prefix("r5: ") {
                Some(rest) => (Source::R5Trace, rest),
                None => (Source::Console, l),
            };
            let line = match body.split_once("| ") {
                Some(("ERROR", t)) => Line { level: Some(Level::Error), ..Line::plain(t) },
                Some(("INFO", t)) => Line { level: Some(Level::Info), ..Line::plain(t) },
                _ => Line::plain(body),
            };
            parser.line(source, &line);
        }
    }

    const GOOD: &str =
        "INFO| booting\nrunning a::one\ntest a::one ... ok\nrunning a::two\ntest a::two ... ok\n2 passed, 0 failed";

    #[test]
    fn good_run_passes() {
        let mut p = Parser::new();
        feed(&mut p, GOOD);
        assert_eq!(p.passed(), 2);
        assert_eq!(p.summary, Some((2, 0)));
        assert!(p.failures(RunEnd::Exited(0)).is_empty());
    }

    #[test]
    fn failing_test_is_reported_with_its_log() {
        let mut p = Parser::new();
        feed(&mut p, "running a::one\na::one: wrong value\ntest a::one ... FAILED\n0 passed, 1 failed");
        let f = p.failures(RunEnd::Exited(1));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].test, "a::one");
        assert!(f[0].log.iter().any(|l| l.contains("wrong value")));
    }

    #[test]
    fn panic_fails_the_running_test() {
        let mut p = Parser::new();
        feed(&mut p, "running a::one\ntest a::one ... ok\nrunning a::two\nERROR| panicked at src/x.rs:3:5: boom");
        let f = p.failures(RunEnd::Exited(101));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].test, "a::two");
        assert!(f[0].reason.contains("panicked at src/x.rs:3:5: boom"));
    }

    #[test]
    fn r5_abort_is_a_failure_too() {
        let mut p = Parser::new();
        feed(
            &mut p,
            "running a::one\nr5: ERROR| data abort at PC 0x00001234: DFAR 0x80000000, DFSR 0x00000008\ntest a::one ... ok\n1 passed, 0 failed",
        );
        assert_eq!(p.failures(RunEnd::Exited(0)).len(), 1);
    }

    #[test]
    fn truncated_output_is_a_failure() {
        let mut p = Parser::new();
        feed(&mut p, "running a::one\ntest a::one ... ok\nrunning a::two");
        let f = p.failures(RunEnd::Exited(0));
        assert_eq!(f.len(), 1);
        assert!(f[0].reason.contains("truncated"));
        assert_eq!(f[0].test, "a::two");
        let mut p = Parser::new();
        feed(&mut p, "test a::one ... ok\n1 passed, 0 fa");
        assert_eq!(p.failures(RunEnd::Exited(0)).len(), 1, "a cut summary line is no summary");
    }

    #[test]
    fn hang_is_reported_against_the_running_test() {
        let mut p = Parser::new();
        feed(&mut p, "running a::stuck");
        let f = p.failures(RunEnd::TimedOut);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].test, "a::stuck");
        assert!(f[0].reason.contains("timed out"));
    }

    #[test]
    fn summary_must_agree_with_the_results() {
        let mut p = Parser::new();
        feed(&mut p, "test a::one ... ok\n2 passed, 0 failed");
        assert_eq!(p.failures(RunEnd::Exited(0)).len(), 1);
    }

    #[test]
    fn nonzero_exit_without_failures_is_a_failure() {
        let mut p = Parser::new();
        feed(&mut p, GOOD);
        assert_eq!(p.failures(RunEnd::Exited(3)).len(), 1);
        assert_eq!(p.failures(RunEnd::Lost).len(), 1);
    }

    #[test]
    fn expectations_on_the_r5_trace() {
        let mut met = Parser::new();
        feed(
            &mut met,
            "running t::x\nr5: INFO| trace nonce 0x12\nexpect r5-trace: trace nonce 0x12\ntest t::x ... ok\n1 passed, 0 failed",
        );
        assert!(met.failures(RunEnd::Exited(0)).is_empty());
        let mut late = Parser::new();
        feed(
            &mut late,
            "running t::x\nexpect r5-trace: trace nonce 0x12\ntest t::x ... ok\nr5: INFO| trace nonce 0x12\n1 passed, 0 failed",
        );
        assert!(late.failures(RunEnd::Exited(0)).is_empty(), "the trace may arrive after the expectation");
        let mut unmet = Parser::new();
        feed(&mut unmet, "running t::x\nexpect r5-trace: trace nonce 0x12\ntest t::x ... ok\n1 passed, 0 failed");
        let f = unmet.failures(RunEnd::Exited(0));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].test, "t::x");
    }

    #[test]
    fn listing() {
        let mut p = Parser::new();
        feed(&mut p, "test a::one\ntest b::two\nINFO| test x::y is not a listing");
        assert_eq!(p.listed, ["a::one", "b::two"]);
    }
}
