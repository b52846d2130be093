//! On-target tests: a registry of test functions and the line protocol `xtask` parses.
//!
//! A test image prints, for every test it runs, exactly one line
//!
//! ```text
//! test <suite>::<name> ... ok
//! test <suite>::<name> ... FAILED
//! ```
//!
//! and at the end one summary line `N passed, N failed`, then exits (semihosting on QEMU). With
//! boot argument `list` it prints `test <suite>::<name>` lines without running anything. The
//! same lines are read from QEMU's console and from a real board's serial port.

/// What a test reports: `Ok(())` or a short reason.
pub type TestResult = Result<(), &'static str>;

#[derive(Clone, Copy)]
pub struct Test {
    pub suite: &'static str,
    pub name: &'static str,
    pub run: fn() -> TestResult,
}

impl Test {
    pub const fn new(suite: &'static str, name: &'static str, run: fn() -> TestResult) -> Self {
        Self { suite, name, run }
    }

    /// A test is selected when `suite::name` contains every filter (like `cargo test`, with
    /// several filters meaning "all of them").
    /// Every filter matches: its text, or one of its `|`-separated alternatives, is in
    /// `suite::name`.
    pub fn matches(&self, filters: &[&str]) -> bool {
        filters.iter().all(|f| f.split('|').any(|alt| contains_joined(self.suite, self.name, alt)))
    }
}

/// `suite::name` contains `needle`, without building the joined string.
fn contains_joined(suite: &str, name: &str, needle: &str) -> bool {
    let joined_len = suite.len() + 2 + name.len();
    (0..=joined_len.saturating_sub(needle.len()))
        .any(|start| needle.bytes().enumerate().all(|(i, b)| joined_byte(suite, name, start + i) == Some(b)))
}

fn joined_byte(suite: &str, name: &str, i: usize) -> Option<u8> {
    let s = suite.as_bytes();
    if i < s.len() {
        Some(s[i])
    } else if i < s.len() + 2 {
        Some(b':')
    } else {
        name.as_bytes().get(i - s.len() - 2).copied()
    }
}

/// Where results go: the image prints them (defmt on the console, or the R5 trace).
pub trait Reporter {
    fn listed(&mut self, test: &Test);
    fn started(&mut self, test: &Test);
    fn finished(&mut self, test: &Test, result: TestResult);
    fn summary(&mut self, passed: usize, failed: usize);
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub passed: usize,
    pub failed: usize,
}

/// Runs (or lists) the selected tests in order, reports each, and ends with the summary.
pub fn run(tests: &[Test], filters: &[&str], list_only: bool, out: &mut impl Reporter) -> Summary {
    let summary = run_without_summary(tests, filters, list_only, out);
    if !list_only {
        out.summary(summary.passed, summary.failed);
    }
    summary
}

/// Like [`run`], for one of several groups of tests: no summary line.
pub fn run_without_summary(tests: &[Test], filters: &[&str], list_only: bool, out: &mut impl Reporter) -> Summary {
    let mut summary = Summary::default();
    for test in tests.iter().filter(|t| t.matches(filters)) {
        if list_only {
            out.listed(test);
            continue;
        }
        out.started(test);
        let result = (test.run)();
        if result.is_ok() {
            summary.passed += 1;
        } else {
            summary.failed += 1;
        }
        out.finished(test, result);
    }
    summary
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::{string::String, vec::Vec};

    fn pass() -> TestResult {
        Ok(())
    }
    fn fail() -> TestResult {
        Err("no")
    }

    const TESTS: &[Test] = &[
        Test::new("exceptions", "data_abort_recovered", pass),
        Test::new("exceptions", "undefined_recovered", fail),
        Test::new("smp", "sgi_matrix", pass),
    ];

    #[derive(Default)]
    struct Lines(Vec<String>);
    impl Reporter for Lines {
        fn listed(&mut self, t: &Test) {
            self.0.push(format!("test {}::{}", t.suite, t.name));
        }
        fn started(&mut self, _: &Test) {}
        fn finished(&mut self, t: &Test, r: TestResult) {
            let verdict = if r.is_ok() { "ok" } else { "FAILED" };
            self.0.push(format!("test {}::{} ... {verdict}", t.suite, t.name));
        }
        fn summary(&mut self, p: usize, f: usize) {
            self.0.push(format!("{p} passed, {f} failed"));
        }
    }

    #[test]
    fn runs_all_and_counts() {
        let mut out = Lines::default();
        assert_eq!(run(TESTS, &[], false, &mut out), Summary { passed: 2, failed: 1 });
        assert_eq!(out.0.last().unwrap(), "2 passed, 1 failed");
        assert_eq!(out.0[1], "test exceptions::undefined_recovered ... FAILED");
    }

    #[test]
    fn filters_like_cargo_test() {
        let names = |f| {
            let mut out = Lines::default();
            run(TESTS, &[f], true, &mut out);
            out.0
        };
        assert_eq!(names("smp").len(), 1);
        assert_eq!(names("exceptions").len(), 2);
        assert_eq!(names("abort").len(), 1);
        assert_eq!(names("exceptions::undef").len(), 1);
        assert_eq!(names("s::data").len(), 1);
        assert_eq!(names("nothing").len(), 0);
        let mut out = Lines::default();
        run(TESTS, &["exceptions", "undef"], true, &mut out);
        assert_eq!(out.0, ["test exceptions::undefined_recovered"], "filters combine");
    }
}
