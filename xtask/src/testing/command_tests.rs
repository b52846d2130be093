//! The runner's tests of user commands (`commands.rs` runs them): the README's commands on the
//! node counts it shows, the documented example program, the C programs that check the C API,
//! failures that must make a command exit non-zero, one-line errors for bad input, and the
//! console in a terminal.

use super::commands::{Finished, OnTerminal, run};
use std::time::Duration;

/// Why a command test failed, with the log to show.
pub struct Failed {
    pub reason: String,
    pub log: Vec<String>,
}

pub type Verdict = Result<(), Failed>;

pub struct CommandTest {
    pub name: &'static str,
    pub run: fn() -> Verdict,
}

pub const TESTS: &[CommandTest] = &[
    CommandTest { name: "runner::demo_boots_all_cores_and_the_r5_and_runs_processes", run: demo_one_node },
    CommandTest { name: "runner::qemu_on_four_nodes_runs_the_demo_and_ends_together", run: demo_four_nodes },
    CommandTest {
        name: "runner::readme_qemu_over_two_mpi_ranks_runs_the_demo_on_four_nodes_lossy_and_traced",
        run: demo_over_ranks,
    },
    CommandTest { name: "runner::readme_example_program_runs_on_four_nodes", run: readme_example },
    CommandTest { name: "runner::readme_c_example_compiles_and_runs_on_four_nodes", run: readme_c_example },
    CommandTest { name: "runner::a_c_program_checks_its_c_library", run: libc_check },
    CommandTest { name: "runner::a_c_program_of_several_files_is_named_after_the_first", run: several_c_files },
    CommandTest { name: "runner::c_programs_that_fail_end_with_their_message_and_status", run: failing_c_programs },
    CommandTest { name: "runner::c_api_rdma_pair_moves_every_size_between_two_nodes", run: c_rdma_pair },
    CommandTest { name: "runner::c_api_active_access_logs_puts_and_gets_between_two_nodes", run: c_active },
    CommandTest { name: "runner::c_api_gsas_system_and_mailbox_calls_on_two_nodes", run: c_api_calls },
    CommandTest { name: "runner::a_c_program_echoes_over_bsd_sockets_on_two_nodes", run: c_sock_echo },
    CommandTest {
        name: "runner::openshmem_c_program_reaches_every_routine_on_four_nodes_and_starts_on_two",
        run: c_shmem,
    },
    CommandTest { name: "runner::openshmem_c_program_errors_end_every_pe_with_a_message", run: c_shmem_errors },
    CommandTest {
        name: "runner::openshmem_rust_program_reaches_every_routine_and_a_failed_pe_ends_the_job",
        run: rust_shmem,
    },
    CommandTest { name: "runner::readme_socket_programs_run_on_the_node_counts_shown", run: readme_sockets },
    CommandTest { name: "runner::readme_bench_commands_print_their_figures", run: readme_benches },
    CommandTest { name: "runner::readme_trace_merge_makes_one_time_line_of_the_ranks_traces", run: trace_merge },
    CommandTest {
        name: "runner::readme_size_reports_the_kernel_and_the_program_store_within_budget",
        run: readme_size,
    },
    CommandTest { name: "runner::a_failing_program_makes_run_exit_with_its_status", run: failing_program },
    CommandTest { name: "runner::run_passes_boot_args_and_exits_with_the_programs_status", run: run_with_boot_args },
    CommandTest { name: "runner::a_run_that_times_out_exits_non_zero_and_names_the_nodes", run: timed_out_run },
    CommandTest { name: "runner::bad_input_to_xtask_gets_a_one_line_error", run: bad_input },
    CommandTest { name: "runner::console_keys_reach_the_node_without_enter", run: console_keys },
];

const CLUSTER_RUN: Duration = Duration::from_secs(240);

fn check(finished: &Finished, status: i32, must_contain: &[&str]) -> Verdict {
    let missing: Vec<&str> = must_contain.iter().copied().filter(|m| !finished.stdout.contains(m)).collect();
    if finished.status == Some(status) && missing.is_empty() {
        return Ok(());
    }
    Err(Failed {
        reason: format!("exit status {:?} (expected {status}), missing {missing:?}", finished.status),
        log: finished.log(),
    })
}

fn start(args: &[&str], timeout: Duration) -> Result<Finished, Failed> {
    run(args, timeout)
        .map_err(|e| Failed { reason: format!("cannot run cargo xtask {}: {e}", args.join(" ")), log: vec![] })
}

/// `cargo xtask qemu`, the README's first command, without a terminal.
fn demo_one_node() -> Verdict {
    let done = start(&["qemu"], CLUSTER_RUN)?;
    check(
        &done,
        0,
        &[
            "entered at EL1",
            "4 A53 cores online",
            "R5 firmware",
            "RPU firmware 0x100 is up",
            "R5 answered ping",
            "] hello from node 0 of 1",
            "process hello exited with status 0",
            "process alloc-free exited with status 0",
            "demo finished",
            "every node finished cleanly",
        ],
    )
}

/// `cargo xtask qemu --nodes 4`: every node runs the demo against every other, and none leaves
/// while the others may still need it.
fn demo_four_nodes() -> Verdict {
    let done = start(&["qemu", "--nodes", "4"], CLUSTER_RUN)?;
    check(&done, 0, &["every node finished cleanly"])?;
    let finished = done.stdout.lines().filter(|l| l.contains("process alloc-free exited with status 0")).count();
    if finished != 4 {
        return Err(Failed { reason: format!("{finished} of 4 alloc-free processes exited with 0"), log: done.log() });
    }
    Ok(())
}

/// `cargo xtask qemu --nodes 4 --ranks 2 --loss 0.01 --trace t.json`, as the README shows it
/// (the trace in a directory of its own): every node of both ranks runs the demo over lossy
/// links and rank 0 reports them all clean; the one trace has every node's events and the
/// ranks' own files are gone.
fn demo_over_ranks() -> Verdict {
    let dir = std::env::temp_dir().join(format!("unimem-ranks-trace-{}", std::process::id()));
    let failed = |reason: String, log: Vec<String>| Failed { reason, log };
    std::fs::create_dir_all(&dir).map_err(|e| failed(format!("{}: {e}", dir.display()), vec![]))?;
    let trace = dir.join("t.json");
    let trace_arg = trace.to_string_lossy().into_owned();
    let args: Vec<&str> = README_RANKS.iter().map(|&a| if a == "t.json" { trace_arg.as_str() } else { a }).collect();
    let done = start(&args, CLUSTER_RUN)?;
    let merged = std::fs::read_to_string(&trace).unwrap_or_default();
    let left: Vec<String> = std::fs::read_dir(&dir)
        .map(|entries| entries.filter_map(Result::ok).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    check(&done, 0, &["every node finished cleanly", "trace written to"])?;
    let finished = done.stdout.lines().filter(|l| l.contains("process alloc-free exited with status 0")).count();
    if finished != 4 {
        return Err(failed(format!("{finished} of 4 alloc-free processes exited with 0"), done.log()));
    }
    if left != ["t.json"] {
        return Err(failed(format!("the trace's directory holds {left:?}, not t.json alone"), done.log()));
    }
    let traced = nodes_traced(&merged);
    if traced != [0, 1, 2, 3] {
        return Err(failed(format!("the trace has events of nodes {traced:?}, not of all 4"), done.log()));
    }
    Ok(())
}

/// The README's command over ranks (`demo_over_ranks` writes its trace elsewhere).
const README_RANKS: &[&str] = &["qemu", "--nodes", "4", "--ranks", "2", "--loss", "0.01", "--trace", "t.json"];

/// The nodes a Chrome trace has events of (not only names), in order.
fn nodes_traced(trace: &str) -> Vec<u64> {
    let doc: serde_json::Value = serde_json::from_str(trace).unwrap_or_default();
    let events = doc["traceEvents"].as_array().cloned().unwrap_or_default();
    let nodes: std::collections::BTreeSet<u64> =
        events.iter().filter(|e| e["ph"] != "M").filter_map(|e| e["pid"].as_u64()).collect();
    nodes.into_iter().collect()
}

/// The command of the README's "Write your own program", on its program.
fn readme_example() -> Verdict {
    let done = start(&["run", "shared-counter", "--nodes", "4"], CLUSTER_RUN)?;
    check(&done, 0, &["every node finished cleanly"])?;
    let counted = done.stdout.lines().filter(|l| l.contains("counted to 100 on node")).count();
    if counted != 4 {
        return Err(Failed { reason: format!("{counted} of 4 nodes counted to 100"), log: done.log() });
    }
    Ok(())
}

/// The README's C example, given as a source file as the README shows it: compiled, then run on
/// four nodes, each of which counts to 100 on the next.
fn readme_c_example() -> Verdict {
    let done = start(&["run", "a53-kernel/user/c-programs/c-shared-counter.c", "--nodes", "4"], CLUSTER_RUN)?;
    check(&done, 0, &["every node finished cleanly"])?;
    let counted = (0..4).filter(|n| done.stdout.contains(&format!("node {n}: counted to 100 on node"))).count();
    if counted != 4 {
        return Err(Failed { reason: format!("{counted} of 4 nodes counted to 100"), log: done.log() });
    }
    Ok(())
}

/// The C library on this system, checked by a C program (`libc-check`): formatted output, 64 MiB
/// through malloc, qsort, getopt over its arguments, the clock, sleep(1) about a second.
fn libc_check() -> Verdict {
    let done = start(&["run", "libc-check", "--", "-n", "3", "-v", "word"], CLUSTER_RUN)?;
    check(&done, 0, &["libc-check: 0 checks failed", "every node finished cleanly"])
}

/// A C program that aborts or fails an assert exits 134 with its message; one that dereferences
/// NULL is reported and killed; one that does not compile shows the compiler's message and
/// makes `run` exit non-zero before any node boots.
fn failing_c_programs() -> Verdict {
    let abort = start(&["run", "c-crash", "--", "abort"], CLUSTER_RUN)?;
    check(&abort, 134, &["terminated by signal 6", "process c-crash exited with status 134"])?;
    let assert = start(&["run", "c-crash", "--", "assert"], CLUSTER_RUN)?;
    check(&assert, 134, &["assertion \"argc == 1", "failed: file", "process c-crash exited with status 134"])?;
    let null = start(&["run", "c-crash", "--", "null"], CLUSTER_RUN)?;
    check(&null, 1, &["process killed: data abort from EL0", "FAR 0x0", "process c-crash ended: Fault"])?;

    let sources = TempSources::new("broken", &[("broken.c", "int main(void) { return undefined_thing; }\n")])?;
    let done = start(&["run", &sources.path("broken.c")], CLUSTER_RUN)?;
    let shown =
        done.stderr.contains("undefined_thing") && done.stderr.contains("compiling the C program `broken` failed");
    if done.status != Some(1) || !shown || done.stdout.contains("node0") {
        return Err(Failed {
            reason: format!("a compile error: exit status {:?}, compiler's message shown: {shown}", done.status),
            log: done.log(),
        });
    }
    Ok(())
}

/// C sources written for one test into a directory of their own, removed when dropped.
struct TempSources(std::path::PathBuf);

impl TempSources {
    fn new(tag: &str, files: &[(&str, &str)]) -> Result<Self, Failed> {
        let dir = std::env::temp_dir().join(format!("unimem-c-{tag}-{}", std::process::id()));
        let sources = Self(dir);
        let failed =
            |e: std::io::Error| Failed { reason: format!("cannot write {}: {e}", sources.0.display()), log: vec![] };
        std::fs::create_dir_all(&sources.0).map_err(failed)?;
        for (name, text) in files {
            std::fs::write(sources.0.join(name), text).map_err(failed)?;
        }
        Ok(sources)
    }

    /// The path of file `name`, as a command-line word.
    fn path(&self, name: &str) -> String {
        self.0.join(name).to_string_lossy().into_owned()
    }
}

impl Drop for TempSources {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `cargo xtask run main.c util.c`, as the README shows it: the files make one program, named
/// after the first, which calls into the second.
fn several_c_files() -> Verdict {
    let sources = TempSources::new(
        "several",
        &[
            (
                "main.c",
                "#include <stdio.h>\nint twice(int);\nint main(void)\n{\n    printf(\"twice 21 is %d\\n\", twice(21));\n    return twice(21) == 42 ? 0 : 1;\n}\n",
            ),
            ("util.c", "int twice(int x)\n{\n    return 2 * x;\n}\n"),
        ],
    )?;
    let done = start(&["run", &sources.path("main.c"), &sources.path("util.c")], CLUSTER_RUN)?;
    check(&done, 0, &["] twice 21 is 42", "process main exited with status 0", "every node finished cleanly"])
}

/// A C program's verdict: its line says that no check of `program` failed, and no check
/// printed a failure (`FAIL ...`, on any node: the peers print theirs there).
fn no_check_failed(done: &Finished, program: &str) -> Verdict {
    let held = done.stdout.contains(&format!("] {program}: 0 of "));
    let failures: Vec<&str> = done.stdout.lines().filter(|l| l.contains("] FAIL ")).collect();
    if held && failures.is_empty() {
        return Ok(());
    }
    Err(Failed { reason: format!("{program}: verdict line found: {held}, failures: {failures:?}"), log: done.log() })
}

/// `c-rdma-pair` (the C twin of the Rust `rdma-pair` sweep, through `unim_dma.h`): between a
/// process on node 0 and its remote fork on node 1, every size from 1 B to 1 MiB written and
/// read back into untouched pages, hashed on both sides; then polled writes, a wait that runs
/// out, a failing transfer and the documented refusals.
fn c_rdma_pair() -> Verdict {
    let done = start(&["run", "c-rdma-pair", "--nodes", "2", "--on", "0"], CLUSTER_RUN)?;
    check(
        &done,
        0,
        &["84 transfers of 1 B to 1 MiB with node 1, each into untouched pages", "every node finished cleanly"],
    )?;
    no_check_failed(&done, "c-rdma-pair")
}

/// `c-active` (Active Access through `unimem_active.h`): an owner on node 1 opens a log and marks
/// pages of its buffer; the initiator on node 0 writes and reads them over RDMA; the owner takes
/// its log entry by entry (an active put not written and logged with its data, a logged put
/// written, a logged get with its data, counted gets) and checks the documented refusals; then
/// the initiator's flush returns only after the owner's handler took its put, the initiator's
/// node runs out of IUIDs and gets one back by closing one, and the owner's closed log leaves
/// its page plain.
fn c_active() -> Verdict {
    let done = start(&["run", "c-active", "--nodes", "2", "--on", "0"], CLUSTER_RUN)?;
    let lines = [
        "owner on node 1: 9 entries taken from log",
        "flush completed after",
        "initiator on node 0: 16 IUIDs taken before Busy",
        "every node finished cleanly",
    ];
    check(&done, 0, &lines)?;
    no_check_failed(&done, "c-active")
}

/// `c-gsas-calls` and `c-mailbox` on two nodes: every call of `unimem.h`, `unimem_sys.h` and
/// `unimem_mailbox.h` with its result checked (with `c-rdma-pair` and the README's example,
/// every function the headers declare). `c-gsas-calls`'s child on node 1 ends as the seed's
/// calls end on an invalid address: the call, the address and the status logged, then exit.
fn c_api_calls() -> Verdict {
    let done = start(&["run", "c-gsas-calls", "--nodes", "2", "--on", "0", "--", "one", "two words"], CLUSTER_RUN)?;
    check(
        &done,
        0,
        &["this line went out through unimem_sys_log", "c-gsas-calls child: 0 of", "every node finished cleanly"],
    )?;
    no_check_failed(&done, "c-gsas-calls")?;
    let exit_line = done.stdout.lines().any(|l| {
        l.starts_with("node1 ")
            && l.contains("[c-gsas-calls ")
            && l.contains("] READ64(0x")
            && l.ends_with("): Local(Unaligned), exit status 0x182")
    });
    if !exit_line {
        return Err(Failed { reason: "no exit line from READ64 of an unaligned address".into(), log: done.log() });
    }
    let done = start(&["run", "c-mailbox", "--nodes", "2", "--on", "0"], CLUSTER_RUN)?;
    check(&done, 0, &["every node finished cleanly"])?;
    no_check_failed(&done, "c-mailbox")
}

/// `c-shmem` (`shmem.h`, OpenSHMEM 1.5 from C): started on node 0 only, its PE 0 starts one PE
/// on every other node; every routine, family by family, checked on every PE of 4 nodes (as the
/// README shows it); the deprecated start-up (`start_pes`) on 2; `--on` other than 0 refused for
/// it. (Every routine on 2 PEs: `shmem-check`, the Rust API over the same implementation, in
/// `rust_shmem`; the C run on 2 nodes too cost the suite 20 s.)
fn c_shmem() -> Verdict {
    const NODES: usize = 4;
    let done = start(&["run", "c-shmem", "--nodes", &NODES.to_string(), "--timeout", "540"], SHMEM_RUN)?;
    let mut wanted = vec!["c-shmem is an OpenSHMEM program".to_string(), "every node finished cleanly".to_string()];
    wanted.extend((0..NODES).map(|pe| format!("] c-shmem PE {pe}: 0 of ")));
    wanted.extend((0..NODES).map(|pe| format!("c-shmem PE {pe} of {NODES}: mode all")));
    check(&done, 0, &wanted.iter().map(String::as_str).collect::<Vec<_>>())?;
    shmem_pes_on_their_nodes(&done, NODES)?;
    let failures: Vec<&str> = done.stdout.lines().filter(|l| l.contains("] FAIL ")).collect();
    if !failures.is_empty() {
        return Err(Failed { reason: format!("{NODES} nodes: failed checks {failures:?}"), log: done.log() });
    }
    let done = start(&["run", "c-shmem", "--nodes", "2", "--", "start-pes"], CLUSTER_RUN)?;
    check(&done, 0, &["c-shmem PE 0 of 2: mode start-pes", "] c-shmem PE 0: 0 of ", "] c-shmem PE 1: 0 of "])?;
    let done = start(&["run", "c-shmem", "--nodes", "4", "--on", "2"], CLUSTER_RUN)?;
    let refused = done
        .stderr
        .lines()
        .any(|l| l.starts_with("error: --on 2: `c-shmem` is an OpenSHMEM program") && l.contains("PEs 1..3"));
    if done.status != Some(1) || !refused || done.stdout.contains("node0 a53") {
        return Err(Failed { reason: "--on 2 for an OpenSHMEM program: no clear refusal".into(), log: done.log() });
    }
    Ok(())
}

/// `shmem-check` (`unimem_user::shmem`, the Rust API over the same implementation): every
/// routine on every PE, on 2 and on 4 nodes; then `shmem-fail` on 2 nodes: PE 1 frees what
/// `shmem_malloc` did not return and ends with that error's status, which its node's kernel
/// reports and the runner names; PE 0, in a barrier PE 1 never reaches, finds it gone instead
/// of hanging, and the run fails.
fn rust_shmem() -> Verdict {
    for nodes in [2, 4] {
        let n = nodes.to_string();
        let done = start(&["run", "shmem-check", "--nodes", &n], SHMEM_RUN)?;
        let verdict = format!("shmem-check: ok ({nodes} PEs)");
        check(&done, 0, &["shmem-check is an OpenSHMEM program", &verdict, "every node finished cleanly"])?;
    }
    let done = start(&["run", "shmem-fail", "--nodes", "2"], CLUSTER_RUN)?;
    check(
        &done,
        1,
        &[
            "shmem-fail: ok: PE 1 found gone after ",
            "OpenSHMEM PE 1 (node 1): shmem-fail exited with status 868 (0x364)",
        ],
    )
}

/// A run of every routine of `c-shmem` (some 1,900 checks per PE, each a round trip or a
/// barrier): 30 s on four nodes of an idle machine, three times that on a busy one.
const SHMEM_RUN: Duration = Duration::from_secs(600);

/// Each PE k of an OpenSHMEM run prints from node k (PE number = node number).
fn shmem_pes_on_their_nodes(done: &Finished, nodes: usize) -> Verdict {
    for pe in 0..nodes {
        let on_its_node = done.stdout.lines().any(|l| {
            l.starts_with(&format!("node{pe} a53 |")) && l.contains(&format!("] c-shmem PE {pe} of {nodes}: "))
        });
        if !on_its_node {
            return Err(Failed { reason: format!("PE {pe} did not print from node {pe}"), log: done.log() });
        }
    }
    Ok(())
}

/// How OpenSHMEM programs end: `shmem_global_exit(7)` on the last PE ends every PE with 7 (the
/// others sleep: only the job's end stops them; every node's kernel says it ended its PE, and
/// names PEs 1 and 2)
/// and the run exits with 7; the C layer's own error (SHMEM_CTX_INVALID) prints its line and
/// ends PE 0 with 0x401; the library's errors (a put to an address that is not symmetric, a PE
/// out of range, shmem_free of a malloc'd pointer) end PE 0 with a message naming the routine,
/// and the other PE, in a barrier, ends too instead of hanging; a barrier with a PE gone (it
/// exited with 3, which its node's kernel reports: `remote process ...`) ends PE 0. The failed
/// PEs are named, and no run hangs.
fn c_shmem_errors() -> Verdict {
    let ended = |done: &Finished, what: &str| -> Verdict {
        let returned = done.stdout.lines().any(|l| l.contains("] c-shmem PE ") && l.ends_with(" returned"));
        if done.timed_out || done.stdout.contains("hung: no end before the timeout") || returned {
            return Err(Failed {
                reason: format!("{what}: a PE went on or hung (returned: {returned})"),
                log: done.log(),
            });
        }
        Ok(())
    };
    let done = start(&["run", "c-shmem", "--nodes", "4", "--", "global-exit"], CLUSTER_RUN)?;
    check(
        &done,
        7,
        &["c-shmem PE 3: shmem_global_exit(7)", "OpenSHMEM PE 0 (node 0): c-shmem exited with status 7 (0x7)"],
    )?;
    // Every node's kernel served the job's exit before it stopped (node 0 is told last, and a
    // node serves what reached it before it stops: `docs/hw/sysblock.md`).
    for node in 0..4 {
        let served = done.stdout.lines().any(|l| {
            l.starts_with(&format!("node{node} a53 |"))
                && l.contains("job exit from node 3: PD ")
                && l.ends_with(", status 7: 1 process(es) ended")
        });
        if !served {
            return Err(Failed { reason: format!("global-exit: node {node} did not end its PE"), log: done.log() });
        }
    }
    // PEs 1 and 2 by their ends (or, should the run stop before their kernels said them, by the
    // job's end reaching their nodes).
    for pe in [1, 2] {
        let by_end = format!("OpenSHMEM PE {pe} (node {pe}): c-shmem exited with status 7 (0x7)");
        let by_job = format!("OpenSHMEM PE {pe} (node {pe}): ended by the job's exit with status 7");
        if !done.stdout.contains(&by_end) && !done.stdout.contains(&by_job) {
            return Err(Failed { reason: format!("global-exit: PE {pe} is not named"), log: done.log() });
        }
    }
    ended(&done, "global-exit")?;

    let done = start(&["run", "c-shmem", "--nodes", "2", "--", "bad-ctx"], CLUSTER_RUN)?;
    check(
        &done,
        255,
        &[
            "c-shmem PE 0: next: shmem_ctx_int_p on SHMEM_CTX_INVALID",
            "] shmem_ctx_int_p: SHMEM_CTX_INVALID, exit status 0x401",
            "OpenSHMEM PE 0 (node 0): c-shmem exited with status 1025 (0x401)",
        ],
    )?;
    ended(&done, "bad-ctx")?;

    for (mode, announced) in [
        ("bad-put", "shmem_putmem to a non-symmetric address"),
        ("bad-pe", "shmem_int_p to PE n_pes"),
        ("bad-free", "shmem_free of a malloc'd pointer"),
    ] {
        let done = start(&["run", "c-shmem", "--nodes", "2", "--", mode], CLUSTER_RUN)?;
        let next = format!("c-shmem PE 0: next: {announced}");
        let named = ["OpenSHMEM PE 0 (node 0): c-shmem", next.as_str()];
        let missing: Vec<&&str> = named.iter().filter(|m| !done.stdout.contains(**m)).collect();
        // The library's message: a line of PE 0's process after the announcement, naming a
        // routine of OpenSHMEM.
        let after = done.stdout.split_once(next.as_str()).map_or("", |(_, rest)| rest);
        let message =
            after.lines().any(|l| l.starts_with("node0 a53 |") && l.contains("[c-shmem ") && l.contains("shmem_"));
        if done.status == Some(0) || done.status.is_none() || !missing.is_empty() || !message {
            return Err(Failed {
                reason: format!(
                    "{mode}: exit status {:?}, missing {missing:?}, the library's message: {message}",
                    done.status
                ),
                log: done.log(),
            });
        }
        ended(&done, mode)?;
    }

    let done = start(&["run", "c-shmem", "--nodes", "2", "--", "dead-barrier"], CLUSTER_RUN)?;
    let named = [
        "c-shmem PE 1: exits with status 3",
        "c-shmem PE 0: next: shmem_barrier_all with a PE gone",
        "OpenSHMEM PE 0 (node 0): c-shmem",
        "OpenSHMEM PE 1 (node 1): c-shmem exited with status 3 (0x3)",
    ];
    let missing: Vec<&&str> = named.iter().filter(|m| !done.stdout.contains(**m)).collect();
    if done.status == Some(0) || done.status.is_none() || !missing.is_empty() {
        return Err(Failed {
            reason: format!("dead-barrier: exit status {:?}, missing {missing:?}", done.status),
            log: done.log(),
        });
    }
    ended(&done, "dead-barrier")
}

/// The C twin of `sock-echo` (`c-sock-echo`), with BSD sockets only: its server spawned on node
/// 1, every size echoed whole past the end of the ring, a non-blocking socket and poll (over the
/// socket and the mailbox event counter's descriptor), and the errno of a C programmer's
/// mistakes; the server's count of the bytes it echoed reaches the client.
fn c_sock_echo() -> Verdict {
    let done = start(&["run", "c-sock-echo", "--nodes", "2", "--on", "0"], CLUSTER_RUN)?;
    check(
        &done,
        0,
        &[
            "c-sock-echo server: echoed 707848 bytes to node 0",
            "bytes in all (the ring wrapped)",
            "error cases gave their errno",
            "process c-sock-echo exited with status 0",
            "every node finished cleanly",
        ],
    )
}

/// The README's three socket commands, as it shows them.
fn readme_sockets() -> Verdict {
    for (args, verdict) in [
        (&["run", "sock-echo", "--nodes", "2", "--on", "0"][..], "echoed whole"),
        (&["run", "sock-perf", "--nodes", "2", "--on", "0"][..], "sock-perf: every hash matches"),
        (&["run", "sock-kv", "--nodes", "4", "--on", "0"][..], "every reply of every client was right"),
    ] {
        let done = start(args, CLUSTER_RUN)?;
        check(&done, 0, &["every node finished cleanly", verdict])?;
    }
    Ok(())
}

/// The README's benchmark commands: each ends well and prints its figures (what they measure is
/// the benchmarks' business; this checks that the commands work and print what they promise).
/// `bench platform` runs once, with every flag (`--breakdown`, `--trace-dir`, and `--quick` for
/// its part over MPI ranks): a superset of the plain command, which the suite cannot afford to
/// run twice; `bench idle` with `--quick` too (2 s a measure, not 10) and `--dev`, with which it
/// builds nothing the suite has not built; `bench shmem` with `--quick` (a few repetitions of
/// each measure).
fn readme_benches() -> Verdict {
    let trace_dir = std::env::temp_dir().join(format!("unimem-bench-trace-{}", std::process::id()));
    let trace_arg = trace_dir.to_string_lossy().into_owned();
    let cases: [(&[&str], &[&str]); 9] = [
        (
            &["bench", "gsas"],
            &[
                "build: release",
                "gsas_fad64_throughput_1_requesting_nodes:",
                "gsas_fad64_throughput_4_requesting_nodes:",
                "gsas_service_instructions_per_fad_median:",
            ],
        ),
        (&["bench", "rdma"], &["rdma_r5_instructions_per_16kib_block:", "rdma_16mib_write_vs_host_memcpy:"]),
        (&["bench", "sockets"], &["sockets_stream_vs_raw_rdma:", "sockets_64b_round_trip_instructions:"]),
        (
            &["bench", "pagefault"],
            &["pagefault_source_65536b_touch_ahead_gain:", "a53_instructions_per_fault_interrupt:"],
        ),
        (
            &["bench", "idle", "--dev", "--quick"],
            &[
                "build: dev",
                "idle_1_nodes_r5_vcpus:",
                "idle_4_nodes_host_cpu_per_node:",
                "idle_4_nodes_memory_per_node:",
                "busy_2_nodes_host_cpu_per_node:",
            ],
        ),
        (&["bench", "mpi-link"], &["mpi_link_64b_round_trip_median:", "mpi_link_64kib_message_throughput:"]),
        (
            &["bench", "shmem", "--quick"],
            &[
                "shmem_putmem_65536b_bandwidth:",
                "shmem_long_atomic_fetch_add_rate:",
                "shmem_barrier_all_2_nodes:",
                "shmem_barrier_all_4_nodes:",
            ],
        ),
        (
            &["bench", "active"],
            &[
                "active_dht_5pct_inserts_per_s:",
                "active_dht_25pct_remote_ops_per_insert:",
                "active_put_logging_overhead:",
                "active_handler_instructions_per_entry:",
            ],
        ),
        (
            &["bench", "platform", "--breakdown", "--trace-dir", &trace_arg, "--quick"],
            &[
                "a53_forwarded_round_trip_median:",
                "r5_forwarded_round_trip_p99:",
                "timer_alarm_latency_p99:",
                "r5_wake_latency_median:",
                "global_window_vs_host_memcpy:",
                "boot_to_ready_4_nodes:",
                "a53_forward_reads_that_kicked_late:",
                "a53_forward_guest_trap_decode_return:",
                "fad_within_rank_median:",
                "fad_across_vs_within_ratio:",
                "rdma_64kib_write_across_ranks_median:",
                "rdma_64kib_write_across_vs_within_ratio:",
            ],
        ),
    ];
    for (args, figures) in cases {
        let done = start(args, CLUSTER_RUN)?;
        check(&done, 0, figures)?;
    }
    let traces = std::fs::read_dir(&trace_dir).map(|d| d.count()).unwrap_or(0);
    let _ = std::fs::remove_dir_all(&trace_dir);
    if traces == 0 {
        return Err(Failed { reason: format!("bench --trace-dir wrote no trace into {trace_arg}"), log: vec![] });
    }
    Ok(())
}

/// `cargo xtask trace-merge`, as the README shows it: two ranks' trace files, written by the
/// emulator's own trace writer, become one file holding both ranks' events (`qemu-virt`'s
/// tests of `trace::merge` cover unfinished files and the time line).
fn trace_merge() -> Verdict {
    let dir = std::env::temp_dir().join(format!("unimem-trace-merge-{}", std::process::id()));
    let failed = |reason: String| Failed { reason, log: vec![] };
    std::fs::create_dir_all(&dir).map_err(|e| failed(format!("{}: {e}", dir.display())))?;
    let files: Vec<_> = (0..2).map(|rank| dir.join(format!("rank{rank}.json"))).collect();
    for (rank, file) in files.iter().enumerate() {
        let trace = qemu_virt::trace::TraceWriter::create(file, 2).map_err(|e| failed(format!("{e}")))?;
        trace.packet(rank, 1 - rank, 0, 64, "packet");
        trace.finish();
    }
    let output = dir.join("all.json");
    let paths: Vec<String> = files.iter().map(|f| f.to_string_lossy().into_owned()).collect();
    let out = output.to_string_lossy().into_owned();
    let done = start(&["trace-merge", "-o", &out, &paths[0], &paths[1]], Duration::from_secs(120))?;
    check(&done, 0, &["events in"])?;
    let merged = std::fs::read_to_string(&output).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    match ["packet 0->1", "packet 1->0"].iter().find(|event| !merged.contains(*event)) {
        None => Ok(()),
        Some(missing) => Err(failed(format!("the merged trace lacks `{missing}`"))),
    }
}

/// `cargo xtask size`, as the README shows it: the kernel (without the programs) and the R5
/// within their budgets, and the program store counted apart, against its region.
fn readme_size() -> Verdict {
    let done = start(&["size"], CLUSTER_RUN)?;
    check(
        &done,
        0,
        &["a53-kernel", "r5-firmware", "program-store", "within budget", "user programs in the program store"],
    )?;
    let store_row = done.stdout.lines().find(|l| l.starts_with("program-store")).unwrap_or_default();
    let budget = board::layout::PROGRAM_STORE_SIZE.to_string();
    if !store_row.split_whitespace().any(|cell| cell == budget) {
        return Err(Failed {
            reason: format!("the store's row does not show its region's {budget} bytes"),
            log: done.log(),
        });
    }
    Ok(())
}

/// A program that fails on one node: `run` exits with its status and names node and process.
fn failing_program() -> Verdict {
    let done = start(&["run", "exit-with", "--nodes", "2", "--on", "1", "--", "7"], CLUSTER_RUN)?;
    check(&done, 7, &["the run failed:", "node1 ended with status 1; process exit-with exited with status 7"])?;
    if done.stdout.contains("node0 ended") {
        return Err(Failed { reason: "node 0 only served, yet it is reported as failed".into(), log: done.log() });
    }
    Ok(())
}

/// `run` takes `qemu`'s `--boot-args`: a program runs in SMMU stall mode, and the command still
/// exits with the program's status.
fn run_with_boot_args() -> Verdict {
    let done = start(&["run", "exit-with", "--boot-args", "smmu-stall", "--", "5"], CLUSTER_RUN)?;
    check(&done, 5, &["smmu-stall: SMMU banks stall faulting accesses", "process exit-with exited with status 5"])
}

/// A run that cannot finish in time (its program never ends): the command exits non-zero and
/// names every node as hung.
fn timed_out_run() -> Verdict {
    let done = start(&["run", "spin", "--nodes", "2", "--timeout", "5"], CLUSTER_RUN)?;
    let hung = ["node0 hung: no end before the timeout", "node1 hung: no end before the timeout"];
    check(&done, 1, &hung)
}

/// Each bad input gets exactly one line on stderr, `error: ...`, and a non-zero exit; no panic.
fn bad_input() -> Verdict {
    let cases: [(&[&str], &str); 6] = [
        (&["run", "no-such-program"], "no program `no-such-program`; the programs are: "),
        (&["bench", "gsas", "--quick"], "--quick shortens `ranks`"),
        (&["qemu", "--nodes", "0"], "--nodes 0: a cluster has 1 to 8 nodes"),
        (&["qemu", "--nodes", "99"], "--nodes 99: a cluster has 1 to 8 nodes"),
        (&["run", "hello", "--nodes", "2", "--on", "2"], "--on 2: the nodes are 0 to 1"),
        (
            &["bootbin", "--fsbl", "/nonexistent/fsbl.elf", "-o", "/tmp/unimem-never.bin"],
            "cannot read /nonexistent/fsbl.elf",
        ),
    ];
    for (args, message) in cases {
        let done = start(args, Duration::from_secs(120))?;
        let lines: Vec<&str> = done.stderr.lines().collect();
        let one_line = lines.len() == 1 && lines[0].starts_with("error: ") && lines[0].contains(message);
        if done.status == Some(0) || done.status.is_none() || !one_line || done.stderr.contains("panicked") {
            return Err(Failed {
                reason: format!("cargo xtask {}: not one clear error line", args.join(" ")),
                log: done.log(),
            });
        }
    }
    Ok(())
}

/// In a terminal, one key (no Enter) reaches node 0's console and is answered; `q` ends the run
/// at once, and the terminal is back in line mode afterwards.
fn console_keys() -> Verdict {
    let fail =
        |reason: String, term: &OnTerminal| Failed { reason, log: term.output().lines().map(String::from).collect() };
    let mut term = OnTerminal::spawn(&["qemu"])
        .map_err(|e| Failed { reason: format!("cannot start cargo xtask qemu on a terminal: {e}"), log: vec![] })?;
    let ready = term.expect("console ready", 0, CLUSTER_RUN).map_err(|e| fail(e, &term))?;
    term.type_keys(b"c").map_err(|e| fail(e.to_string(), &term))?;
    let cores = term.expect("cores online: 0b1111", ready, Duration::from_secs(30)).map_err(|e| fail(e, &term))?;
    // `l` lists the program store: the Rust programs and the C ones.
    term.type_keys(b"l").map_err(|e| fail(e.to_string(), &term))?;
    let listed = term.expect("  c-shared-counter", cores, Duration::from_secs(30)).map_err(|e| fail(e, &term))?;
    term.expect("  shared-counter", listed, Duration::from_secs(30)).map_err(|e| fail(e, &term))?;
    term.type_keys(b"q").map_err(|e| fail(e.to_string(), &term))?;
    let (status, timed_out) = term.wait(Duration::from_secs(30)).map_err(|e| fail(e.to_string(), &term))?;
    if timed_out || status != Some(0) {
        return Err(fail(format!("after q: exit status {status:?}, timed out: {timed_out}"), &term));
    }
    if !term.line_mode_restored() {
        return Err(fail("the terminal was left in raw mode".into(), &term));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// The README's "Write your own program" shows the program file exactly, and the command
    /// that `readme_example` runs.
    #[test]
    fn the_readme_example_is_the_program_the_suite_runs() {
        let root = crate::images::workspace_root();
        let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
        let section = readme.split("## Write your own program").nth(1).unwrap().split("\n## ").next().unwrap();
        let code = section.split("```rust\n").nth(1).unwrap().split("```").next().unwrap();
        let program = std::fs::read_to_string(root.join("a53-kernel/user/src/bin/shared-counter.rs")).unwrap();
        assert_eq!(code, program);
        assert!(section.contains("```sh\ncargo xtask run shared-counter --nodes 4\n```"));
    }

    /// The README's "Write your program in C" shows the C program file exactly, and the command
    /// that `readme_c_example` runs.
    #[test]
    fn the_readme_c_example_is_the_program_the_suite_runs() {
        let root = crate::images::workspace_root();
        let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
        let section = readme.split("## Write your program in C").nth(1).unwrap().split("\n## ").next().unwrap();
        let code = section.split("```c\n").nth(1).unwrap().split("```").next().unwrap();
        let program = std::fs::read_to_string(root.join("a53-kernel/user/c-programs/c-shared-counter.c")).unwrap();
        assert_eq!(code, program);
        let command = "cargo xtask run a53-kernel/user/c-programs/c-shared-counter.c --nodes 4";
        assert!(section.contains(&format!("```sh\n{command}\n```")));
        // The files of `several_c_files`.
        assert!(section.contains("`cargo xtask run main.c util.c`"));
    }

    /// The README's command over MPI ranks is the one `demo_over_ranks` runs.
    #[test]
    fn the_readme_command_over_ranks_is_the_one_the_suite_runs() {
        let readme = std::fs::read_to_string(crate::images::workspace_root().join("README.md")).unwrap();
        let command = format!("```sh\ncargo xtask {}\n```", super::README_RANKS.join(" "));
        assert!(readme.contains(&command), "{command}");
    }

    #[test]
    fn a_trace_names_the_nodes_it_has_events_of() {
        let trace = r#"{"traceEvents":[{"ph":"M","pid":3},{"ph":"X","pid":1},{"ph":"i","pid":0},{"ph":"i","pid":1}]}"#;
        assert_eq!(super::nodes_traced(trace), [0, 1]);
        assert!(super::nodes_traced("not json").is_empty());
    }

    /// The size command `readme_size` runs is the README's, which describes what it reports.
    #[test]
    fn the_readme_size_command_is_the_one_the_suite_runs() {
        let readme = std::fs::read_to_string(crate::images::workspace_root().join("README.md")).unwrap();
        let row = readme.lines().find(|l| l.starts_with("| `cargo xtask size")).expect("a row for cargo xtask size");
        assert!(row.contains("program store"), "{row}");
    }

    /// The socket commands the README shows are the ones `readme_sockets` and `c_sock_echo` run.
    #[test]
    fn the_readme_socket_commands_are_the_ones_the_suite_runs() {
        let readme = std::fs::read_to_string(crate::images::workspace_root().join("README.md")).unwrap();
        for command in [
            "cargo xtask run sock-echo --nodes 2 --on 0",
            "cargo xtask run sock-perf --nodes 2 --on 0",
            "cargo xtask run sock-kv --nodes 4 --on 0",
            "cargo xtask run c-sock-echo --nodes 2 --on 0",
        ] {
            assert!(readme.contains(&format!("{command}\n")), "{command}");
        }
    }

    /// The OpenSHMEM command the README shows is one `c_shmem` runs, and the tests-sos one runs
    /// a file of the suite's unit tests as `cargo xtask run` takes a C file.
    #[test]
    fn the_readme_openshmem_commands_are_the_ones_the_suite_runs() {
        let root = crate::images::workspace_root();
        let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
        assert!(readme.contains("```sh\ncargo xtask run c-shmem --nodes 4\n```"));
        assert!(readme.contains("cargo xtask run /tmp/tests-sos/test/unit/put1.c --nodes 4\n"));
        let crt = std::fs::read_to_string(root.join("a53-kernel/user/crt/README.md")).unwrap();
        assert!(crt.contains("cargo xtask run /tmp/tests-sos/test/unit/put1.c --nodes 4\n"));
        assert!(crt.contains("cargo xtask run c-shmem --nodes 4\n"));
    }
}
