//! How `cargo xtask run` starts an OpenSHMEM program (issue #25, "Launching"): one PE per node,
//! PE number = node number, all started by PE 0. A program is an OpenSHMEM program when its ELF
//! holds [`LAUNCH_MARK`], which the user library's `shmem_init` keeps referenced (a program
//! that never reaches it has none: programs are linked with `--gc-sections`). Such a program
//! runs on node 0 only (`run=` there, `serve` on the other nodes) and its `shmem_init` spawns
//! PEs 1..N-1; the run fails, naming the PE, when any PE's process fails, and exits with PE 0's
//! status (`shmem_global_exit(s)` ends every PE with `s`).
//!
//! What the kernel says of a PE's end (`docs/hw/console.md`, "Process ends"): PE 0's process is
//! the one `run=` started, whose end the kernel reports (`process NAME exited with status N`,
//! `... ended: ...`). PEs 1..N-1 are remote spawns, whose ends their nodes' kernels report as
//! `remote process NAME exited with status N` (or `... ended: ...`); besides, a fault
//! (`process killed: ...`) and a job's end reaching a node (`job exit from node F: PD p,
//! status s: n process(es) ended`). Each names the PE by the node it appears on.

use crate::outcome::{End, KernelNote, ProcessEnd, RunReport};
use anyhow::bail;

/// The bytes the Rust library's `unimem_user::shmem::LAUNCH_MARK` holds (the same literal:
/// `tests::the_mark_is_the_librarys` holds the two together).
pub const LAUNCH_MARK: &[u8] = b"unimem-shmem-launch:pe-per-node";

/// Whether the ELF `elf` is an OpenSHMEM program.
pub fn is_shmem_program(elf: &[u8]) -> bool {
    elf.windows(LAUNCH_MARK.len()).any(|w| w == LAUNCH_MARK)
}

/// Each node's boot words for `cargo xtask run` of a program whose `run=` words are
/// `run_words`, on `nodes` nodes, `on` one of them or all (None), after `extra` (the user's
/// `--boot-args`, trimmed, or empty). An OpenSHMEM program runs on node 0 alone, the other
/// nodes serve; `--on` other than 0 is refused for it.
pub fn boot_args(
    program: &str,
    shmem: bool,
    nodes: usize,
    on: Option<usize>,
    run_words: &str,
    extra: &str,
) -> anyhow::Result<Vec<String>> {
    let on = if shmem {
        match on {
            None | Some(0) => Some(0),
            Some(other) => bail!(
                "--on {other}: `{program}` is an OpenSHMEM program, which runs as PE 0 on node 0 and starts \
                 PEs 1..{} on the other nodes itself (leave --on out, or give --on 0)",
                nodes - 1
            ),
        }
    } else {
        on
    };
    let extra = if extra.is_empty() { String::new() } else { format!("{extra} ") };
    Ok((0..nodes)
        .map(|n| {
            let role = if on.is_none_or(|on| on == n) { run_words } else { "serve" };
            format!("{extra}{role} exit")
        })
        .collect())
}

/// One line per failed end of a PE: `PE k (node k): ...` with the kernel's words: its
/// process's end when the kernel said it; otherwise a fault, or the job's end with a status
/// other than 0.
pub fn pe_failures(report: &RunReport, program: &str) -> Vec<String> {
    let mut lines = Vec::new();
    for (pe, node) in report.nodes.iter().enumerate() {
        let remote_ends = node.notes.iter().filter_map(|note| match note {
            KernelNote::RemoteEnd(end) if end.program == program => Some(end),
            _ => None,
        });
        let ends: Vec<&ProcessEnd> =
            node.processes.iter().filter(|p| p.program == program).chain(remote_ends).collect();
        for end in ends.iter().filter(|e| e.failed()) {
            lines.push(format!("PE {pe} (node {pe}): {end}"));
        }
        if !ends.is_empty() {
            continue;
        }
        for note in &node.notes {
            match note {
                KernelNote::Killed(how) => lines.push(format!("PE {pe} (node {pe}): killed: {how}")),
                KernelNote::JobExit { status, ended } if *status != 0 && *ended > 0 => {
                    lines.push(format!("PE {pe} (node {pe}): ended by the job's exit with status {status}"));
                }
                KernelNote::JobExit { .. } | KernelNote::RemoteEnd(_) => {}
            }
        }
    }
    lines
}

/// The exit code of an OpenSHMEM run: PE 0's status (1..=255; above 255 is 255) when it is not
/// 0; 1 when PE 0 did not exit normally or did not end, or when another PE or a node failed;
/// 0 when every PE exited with 0 and every node finished cleanly.
pub fn exit_code(report: &RunReport, program: &str) -> i32 {
    let pe0 = report.nodes.first().and_then(|n| n.processes.iter().find(|p| p.program == program));
    match pe0.map(|p| &p.how) {
        Some(End::Status(0)) => i32::from(report.failed() || !pe_failures(report, program).is_empty()),
        Some(End::Status(s)) => i32::try_from(*s).ok().filter(|&s| s <= 255).unwrap_or(255),
        Some(End::Abnormal(_)) | None => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::{NodeEnd, NodeOutcome, ProcessEnd};

    #[test]
    fn a_program_is_an_openshmem_one_when_its_elf_holds_the_mark() {
        let mut elf = b"\x7fELF\x02\x01\x01 some code".to_vec();
        assert!(!is_shmem_program(&elf));
        elf.extend_from_slice(b"..unimem-shmem-launch:pe-per-nod");
        assert!(!is_shmem_program(&elf), "a part of the mark");
        elf.extend_from_slice(b"e.. more");
        assert!(is_shmem_program(&elf));
        assert!(!is_shmem_program(b""));
    }

    /// The mark is the literal the user README gives ("OpenSHMEM", "Launch and end"),
    /// which the Rust library keeps in `unimem_user::shmem::LAUNCH_MARK`.
    #[test]
    fn the_mark_is_the_librarys() {
        assert_eq!(LAUNCH_MARK, b"unimem-shmem-launch:pe-per-node");
        let src = crate::images::workspace_root().join("a53-kernel/user/src");
        let mut files = vec![src];
        let mut found = false;
        while let Some(path) = files.pop() {
            if path.is_dir() {
                files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                found |= text.contains("LAUNCH_MARK") && text.contains("\"unimem-shmem-launch:pe-per-node\"");
            }
        }
        assert!(found, "no LAUNCH_MARK of these bytes in a53-kernel/user/src (unimem_user::shmem)");
    }

    #[test]
    fn an_openshmem_program_runs_on_node_0_and_the_others_serve() {
        let words = "run=c-shmem arg=x";
        let args = boot_args("c-shmem", true, 4, None, words, "").unwrap();
        assert_eq!(args, ["run=c-shmem arg=x exit", "serve exit", "serve exit", "serve exit"]);
        assert_eq!(boot_args("c-shmem", true, 4, Some(0), words, "").unwrap(), args);
        let with = boot_args("c-shmem", true, 2, None, words, "trace").unwrap();
        assert_eq!(with, ["trace run=c-shmem arg=x exit", "trace serve exit"]);
        let refused = boot_args("c-shmem", true, 4, Some(2), words, "").unwrap_err().to_string();
        assert!(refused.contains("--on 2") && refused.contains("OpenSHMEM program"), "{refused}");
        // Other programs: on every node, or on the one --on names.
        assert_eq!(boot_args("hello", false, 2, None, "run=hello", "").unwrap(), ["run=hello exit"; 2]);
        assert_eq!(boot_args("hello", false, 2, Some(1), "run=hello", "").unwrap(), ["serve exit", "run=hello exit"]);
    }

    /// Each node's kernel lines: process ends and notes.
    fn report(nodes: &[&[&str]]) -> RunReport {
        RunReport {
            nodes: nodes
                .iter()
                .map(|lines| NodeOutcome {
                    end: NodeEnd::Exited(0),
                    processes: lines.iter().filter_map(|l| ProcessEnd::parse(l)).collect(),
                    notes: lines.iter().filter_map(|l| KernelNote::parse(l)).collect(),
                })
                .collect(),
        }
    }

    #[test]
    fn a_run_names_the_failed_pes_and_exits_with_pe_0s_status() {
        let ok = report(&[&["process p exited with status 0"], &["process p exited with status 0"]]);
        assert!(pe_failures(&ok, "p").is_empty());
        assert_eq!(exit_code(&ok, "p"), 0);
        // A remote spawn's end, on its node: the PE is named by it.
        let pe1 = report(&[&["process p exited with status 0"], &["remote process p exited with status 3"]]);
        assert_eq!(pe_failures(&pe1, "p"), ["PE 1 (node 1): p exited with status 3 (0x3)"]);
        assert_eq!(exit_code(&pe1, "p"), 1, "PE 0 exited with 0, PE 1 did not");
        let other = report(&[&["process p exited with status 0"], &["remote process q exited with status 3"]]);
        assert!(pe_failures(&other, "p").is_empty(), "another program's remote spawn is not a PE");
        // A remote spawn's fault: the kernel's kill line on its node, and its end, said once.
        let kill = "process killed: data abort from EL0 at ELR 0x40001000, FAR 0x0, ESR 0x92000006";
        let fault = report(&[&["process p exited with status 0"], &[], &[kill, "remote process p ended: Fault"]]);
        assert_eq!(pe_failures(&fault, "p"), ["PE 2 (node 2): p ended: Fault"]);
        assert_eq!(exit_code(&fault, "p"), 1, "PE 0 exited with 0, PE 2 faulted");
        let kill_only = report(&[&["process p exited with status 0"], &[], &[kill]]);
        assert_eq!(
            pe_failures(&kill_only, "p"),
            ["PE 2 (node 2): killed: data abort from EL0 at ELR 0x40001000, FAR 0x0, ESR 0x92000006"]
        );
        // shmem_global_exit(7) on PE 2: PE 0's process exits with 7, the job's end reaches the
        // others (PE 2 had ended already); the run exits with 7. Each PE is named once, by its
        // end when the kernel said it.
        let job = "job exit from node 2: PD 1, status 7: 1 process(es) ended";
        let gone = "job exit from node 2: PD 1, status 7: 0 process(es) ended";
        let global = report(&[
            &[job, "process p exited with status 7"],
            &[job, "remote process p exited with status 7"],
            &[gone, "remote process p exited with status 7"],
            &[job],
        ]);
        assert_eq!(
            pe_failures(&global, "p"),
            [
                "PE 0 (node 0): p exited with status 7 (0x7)",
                "PE 1 (node 1): p exited with status 7 (0x7)",
                "PE 2 (node 2): p exited with status 7 (0x7)",
                "PE 3 (node 3): ended by the job's exit with status 7",
            ]
        );
        assert_eq!(exit_code(&global, "p"), 7);
        let zero = report(&[
            &["process p exited with status 0"],
            &["job exit from node 1: PD 1, status 0: 1 process(es) ended"],
        ]);
        assert!(pe_failures(&zero, "p").is_empty(), "shmem_global_exit(0)");
        assert_eq!(exit_code(&zero, "p"), 0);
        let big = report(&[&["process p exited with status 1025"]]);
        assert_eq!(exit_code(&big, "p"), 255);
        let gone = report(&[&["process p ended: Killed"]]);
        assert_eq!(exit_code(&gone, "p"), 1);
        assert_eq!(exit_code(&report(&[&[]]), "p"), 1, "PE 0 never ended");
    }
}
