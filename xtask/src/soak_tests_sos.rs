//! `cargo xtask soak tests-sos --dir DIR`: the OpenSHMEM project's unit tests (tests-sos,
//! fetched by the user, never kept here: `a53-kernel/user/crt/README.md`, "The OpenSHMEM test
//! suite") run one after the other, each as `cargo xtask run FILE --nodes N` would run it, and
//! each named with its verdict: passed, failed (with the run's last lines), did not compile, or
//! left out (it needs threads, which this system does not have). Ends with
//! `soak tests-sos: R run on N nodes, P passed, F failed, C did not compile, S left out` and
//! fails when any failed or none ran.

use anyhow::{Context, bail};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The unit tests that use POSIX threads (`pthread.h`), which this system does not have.
fn needs_threads(source: &str) -> bool {
    source.contains("#include <pthread.h>")
}

/// What became of one unit test.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Passed,
    Failed(String),
    DidNotCompile,
    LeftOut(&'static str),
}

/// The C files of the suite's `test/unit`, sorted, each with what it needs.
pub fn unit_tests(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let unit = dir.join("test/unit");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&unit)
        .with_context(|| {
            format!(
                "{}: no tests-sos unit tests here (git clone https://github.com/openshmem-org/tests-sos {})",
                unit.display(),
                dir.display()
            )
        })?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "c"))
        .collect();
    files.sort();
    if files.is_empty() {
        bail!("{}: no C file", unit.display());
    }
    Ok(files)
}

/// The verdict of a finished `cargo xtask run` of one test: its exit status, what it printed
/// (the nodes' lines and the run's verdict) and its errors (the build's).
pub fn judge(status: Option<i32>, stdout: &str, stderr: &str) -> Verdict {
    if stderr.contains("error: ") && stderr.contains(".c:") && !stdout.contains("node0 a53 |") {
        return Verdict::DidNotCompile;
    }
    match status {
        Some(0) if stdout.contains("every node finished cleanly") => Verdict::Passed,
        _ => {
            // The run's own verdict (`the run failed:` and its lines) says why.
            let why = stdout.split_once("the run failed:").map_or(stdout, |(_, after)| after);
            let tail: Vec<&str> = why.lines().map(str::trim).filter(|l| !l.is_empty()).rev().take(3).collect();
            Verdict::Failed(tail.into_iter().rev().collect::<Vec<_>>().join(" / "))
        }
    }
}

/// Runs one unit test (a copy named `sos-NAME.c` in `scratch`, so that no test takes the name
/// of a program of this repository, such as `hello`).
fn run_one(test: &Path, scratch: &Path, nodes: usize, timeout_s: u64) -> anyhow::Result<Verdict> {
    let source = std::fs::read_to_string(test).with_context(|| format!("cannot read {}", test.display()))?;
    if needs_threads(&source) {
        return Ok(Verdict::LeftOut("POSIX threads"));
    }
    let name = test.file_name().and_then(|n| n.to_str()).context("a UTF-8 file name")?;
    let copy = scratch.join(format!("sos-{name}"));
    std::fs::write(&copy, &source)?;
    let out = Command::new(crate::started_as())
        .arg("run")
        .arg(&copy)
        .args(["--nodes", &nodes.to_string(), "--timeout", &timeout_s.to_string()])
        .current_dir(crate::images::workspace_root())
        .output()
        .context("cannot start cargo xtask run")?;
    Ok(judge(out.status.code(), &String::from_utf8_lossy(&out.stdout), &String::from_utf8_lossy(&out.stderr)))
}

/// `cargo xtask soak tests-sos`.
pub fn run(dir: &Path, nodes: usize, timeout_s: u64, only: Option<&str>) -> anyhow::Result<()> {
    let tests = unit_tests(dir)?;
    // The tests that time themselves include "tests_sos/wtime.h" from the suite's include dir.
    let scratch = std::env::temp_dir().join(format!("unimem-tests-sos-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;
    let link = scratch.join("tests_sos");
    if !link.exists() {
        std::os::unix::fs::symlink(dir.join("test/include/tests_sos"), &link)?;
    }
    let (mut passed, mut failed, mut broken, mut left_out) = (0, 0, 0, 0);
    let selected: Vec<&PathBuf> =
        tests.iter().filter(|t| only.is_none_or(|o| t.to_string_lossy().contains(o))).collect();
    if selected.is_empty() {
        bail!("no unit test of {} matches {only:?}", dir.display());
    }
    for test in selected {
        let name = test.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let started = Instant::now();
        let verdict = run_one(test, &scratch, nodes, timeout_s)?;
        let took = started.elapsed().as_secs_f64();
        match &verdict {
            Verdict::Passed => passed += 1,
            Verdict::Failed(_) => failed += 1,
            Verdict::DidNotCompile => broken += 1,
            Verdict::LeftOut(_) => left_out += 1,
        }
        match verdict {
            Verdict::Passed => println!("{name}: passed ({took:.0} s)"),
            Verdict::Failed(how) => println!("{name}: FAILED ({took:.0} s): {how}"),
            Verdict::DidNotCompile => println!("{name}: did not compile"),
            Verdict::LeftOut(why) => println!("{name}: left out ({why})"),
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    let ran = passed + failed + broken;
    println!(
        "soak tests-sos: {ran} run on {nodes} nodes, {passed} passed, {failed} failed, {broken} did not compile, {left_out} left out"
    );
    if failed + broken > 0 || passed == 0 {
        bail!("tests-sos: {failed} failed, {broken} did not compile, {passed} passed");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_passes_only_when_it_exits_0_and_every_node_finished() {
        assert_eq!(judge(Some(0), "node0 a53 | ok\nevery node finished cleanly\n", ""), Verdict::Passed);
        assert!(matches!(judge(Some(0), "node0 a53 | ok\n", ""), Verdict::Failed(_)), "no clean end");
        let out = "node0 a53 | x\nthe run failed:\n  node0 hung\n  OpenSHMEM PE 1 (node 1): p exited with status 3\n";
        let failed = judge(Some(1), out, "using QEMU\n");
        assert_eq!(failed, Verdict::Failed("node0 hung / OpenSHMEM PE 1 (node 1): p exited with status 3".into()));
        let hung = judge(Some(1), "node0 a53 | a\nnode0 a53 | b\nnode0 a53 | c\nnode0 a53 | d\n", "");
        assert_eq!(hung, Verdict::Failed("node0 a53 | b / node0 a53 | c / node0 a53 | d".into()), "the last lines");
        let compile = judge(Some(1), "", "/tmp/x/sos-a.c:3:1: error: unknown type name\n");
        assert_eq!(compile, Verdict::DidNotCompile);
    }

    #[test]
    fn the_thread_tests_are_left_out_and_an_empty_suite_is_an_error() {
        assert!(needs_threads("#include <shmem.h>\n#include <pthread.h>\n"));
        assert!(!needs_threads("#include <shmem.h>\n"));
        let dir = std::env::temp_dir().join(format!("tests-sos-empty-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("test/unit")).unwrap();
        assert!(unit_tests(&dir).unwrap_err().to_string().contains("no C file"));
        assert!(unit_tests(&dir.join("nowhere")).unwrap_err().to_string().contains("git clone"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
