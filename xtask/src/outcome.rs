//! What a cluster run came to: how each node ended, which processes failed on it, and the exit
//! status `cargo xtask qemu` and `cargo xtask run` give. Process ends are read from the kernel's
//! console lines (`docs/hw/console.md`, "Process ends").

use std::fmt;

/// How one process the kernel image started ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessEnd {
    pub program: String,
    pub how: End,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum End {
    Status(u64),
    /// A fault, a kill, a timeout or a failure to start: the kernel's words.
    Abnormal(String),
}

impl ProcessEnd {
    /// The process end a console line reports, if it reports one.
    pub fn parse(text: &str) -> Option<Self> {
        let rest = text.strip_prefix("process ")?;
        let (program, how) = rest.split_once(' ')?;
        let how = if let Some(status) = how.strip_prefix("exited with status ") {
            End::Status(status.trim().parse().ok()?)
        } else if how.starts_with("ended: ") || how.starts_with("did not finish") || how.starts_with("cannot start") {
            End::Abnormal(how.to_string())
        } else {
            return None;
        };
        Some(Self { program: program.to_string(), how })
    }

    pub fn failed(&self) -> bool {
        self.how != End::Status(0)
    }
}

impl fmt::Display for ProcessEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.how {
            End::Status(s) => write!(f, "{} exited with status {s} ({s:#x})", self.program),
            End::Abnormal(how) => write!(f, "{} {how}", self.program),
        }
    }
}

/// A kernel line about a process that is no [`ProcessEnd`] (which the kernel prints only for
/// the processes it started itself): an unresolved exception that killed a process
/// (`process killed: ...`), or a job's end reaching this node (`job exit from node F: PD p,
/// status s: n process(es) ended`). An OpenSHMEM run reads them for its PEs on other nodes
/// (`shmem_launch`), whose processes are remote spawns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KernelNote {
    /// The kernel's words after `process killed: `.
    Killed(String),
    /// A job's end: its status, and how many of its processes ended on this node.
    JobExit { status: u64, ended: u64 },
    /// How a process a remote spawn started here ended (`remote process NAME ...`): its spawner
    /// is on another node, so this is not one of the node's own process ends.
    RemoteEnd(ProcessEnd),
}

impl KernelNote {
    /// The note a console line gives, if it gives one.
    pub fn parse(text: &str) -> Option<Self> {
        if let Some(how) = text.strip_prefix("process killed: ") {
            return Some(Self::Killed(how.to_string()));
        }
        if let Some(end) = text.strip_prefix("remote ") {
            return ProcessEnd::parse(end).map(Self::RemoteEnd);
        }
        let rest = text.strip_prefix("job exit from node ")?;
        let (_, rest) = rest.split_once(", status ")?;
        let (status, rest) = rest.split_once(": ")?;
        let ended = rest.strip_suffix(" process(es) ended")?;
        Some(Self::JobExit { status: status.trim().parse().ok()?, ended: ended.trim().parse().ok()? })
    }
}

/// How a node's QEMU ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeEnd {
    Exited(i32),
    /// Killed by a signal: a crash, or killed on purpose.
    Crashed,
    /// Still running when the run timed out (then killed).
    Hung,
    /// Still running when the user stopped the run (Ctrl-C, `q` on node 0).
    Stopped,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeOutcome {
    pub end: NodeEnd,
    pub processes: Vec<ProcessEnd>,
    /// The kernel's other lines about processes (they do not make the node fail by
    /// themselves: a node's own ends are in `processes`).
    pub notes: Vec<KernelNote>,
}

impl NodeOutcome {
    pub fn failed(&self) -> bool {
        matches!(self.end, NodeEnd::Exited(c) if c != 0)
            || matches!(self.end, NodeEnd::Crashed | NodeEnd::Hung)
            || self.processes.iter().any(ProcessEnd::failed)
    }
}

/// Every node's outcome, by node index.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunReport {
    pub nodes: Vec<NodeOutcome>,
}

impl RunReport {
    pub fn failed(&self) -> bool {
        self.nodes.iter().any(NodeOutcome::failed)
    }

    /// One line per node that failed, saying how and which processes.
    pub fn failures(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for (n, node) in self.nodes.iter().enumerate().filter(|(_, o)| o.failed()) {
            let how = match node.end {
                NodeEnd::Exited(0) => "finished".to_string(),
                NodeEnd::Exited(code) => format!("ended with status {code}"),
                NodeEnd::Crashed => "crashed (QEMU was killed)".to_string(),
                NodeEnd::Hung => "hung: no end before the timeout".to_string(),
                NodeEnd::Stopped => "stopped".to_string(),
            };
            let bad: Vec<String> = node.processes.iter().filter(|p| p.failed()).map(ToString::to_string).collect();
            if bad.is_empty() {
                lines.push(format!("node{n} {how}"));
            } else {
                lines.push(format!("node{n} {how}; process {}", bad.join("; process ")));
            }
        }
        lines
    }

    /// The status of the program `cargo xtask run` started: the first node's (in node order)
    /// that is not 0, as a process exit code (1..=255; a status that does not fit is 255);
    /// 1 when the program did not exit normally or a node failed otherwise; 0 when all is well.
    pub fn program_exit_code(&self, program: &str) -> i32 {
        let statuses = self.nodes.iter().flat_map(|n| &n.processes).filter(|p| p.program == program);
        for p in statuses {
            match p.how {
                End::Status(0) => {}
                End::Status(s) => return i32::try_from(s).ok().filter(|&s| s <= 255).unwrap_or(255),
                End::Abnormal(_) => return 1,
            }
        }
        i32::from(self.failed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn end(text: &str) -> ProcessEnd {
        ProcessEnd::parse(text).unwrap()
    }

    #[test]
    fn process_ends_are_read_from_the_kernel_lines() {
        assert_eq!(
            end("process hello exited with status 0"),
            ProcessEnd { program: "hello".into(), how: End::Status(0) }
        );
        assert_eq!(end("process alloc-free exited with status 768").how, End::Status(0x300));
        assert!(end("process spin ended: Killed").failed());
        assert!(end("process spin did not finish within 60 s: killed").failed());
        assert!(end("process nope cannot start: UnknownImage").failed());
        assert_eq!(ProcessEnd::parse("process hello is fine"), None);
        assert_eq!(ProcessEnd::parse("[hello 1] process x exited with status 3"), None, "a program's own words");
        assert_eq!(ProcessEnd::parse("process hello exited with status many"), None);
    }

    fn report(nodes: Vec<(NodeEnd, &[&str])>) -> RunReport {
        RunReport {
            nodes: nodes
                .into_iter()
                .map(|(e, lines)| NodeOutcome {
                    end: e,
                    processes: lines.iter().map(|l| end(l)).collect(),
                    notes: Vec::new(),
                })
                .collect(),
        }
    }

    #[test]
    fn a_run_fails_on_a_failed_process_a_crash_or_a_hang() {
        let ok = report(vec![(NodeEnd::Exited(0), &["process hello exited with status 0"]); 2]);
        assert!(!ok.failed());
        assert!(ok.failures().is_empty());
        assert_eq!(ok.program_exit_code("hello"), 0);
        let bad = report(vec![
            (NodeEnd::Exited(0), &["process hello exited with status 0"]),
            (NodeEnd::Exited(1), &["process hello exited with status 0", "process alloc-free exited with status 768"]),
            (NodeEnd::Crashed, &[]),
            (NodeEnd::Hung, &[]),
        ]);
        assert!(bad.failed());
        assert_eq!(
            bad.failures(),
            [
                "node1 ended with status 1; process alloc-free exited with status 768 (0x300)",
                "node2 crashed (QEMU was killed)",
                "node3 hung: no end before the timeout",
            ]
        );
    }

    #[test]
    fn faults_and_job_exits_are_read_from_the_kernel_lines() {
        assert_eq!(
            KernelNote::parse("process killed: data abort from EL0 at ELR 0x40001234, FAR 0x0, ESR 0x92000006"),
            Some(KernelNote::Killed("data abort from EL0 at ELR 0x40001234, FAR 0x0, ESR 0x92000006".into()))
        );
        assert_eq!(
            KernelNote::parse("job exit from node 3: PD 1, status 7: 1 process(es) ended"),
            Some(KernelNote::JobExit { status: 7, ended: 1 })
        );
        assert_eq!(KernelNote::parse("job exit of PD 1: node 2 was not told"), None);
        assert_eq!(
            KernelNote::parse("remote process p exited with status 3"),
            Some(KernelNote::RemoteEnd(ProcessEnd { program: "p".into(), how: End::Status(3) }))
        );
        assert_eq!(
            KernelNote::parse("remote process p ended: Killed"),
            Some(KernelNote::RemoteEnd(ProcessEnd { program: "p".into(), how: End::Abnormal("ended: Killed".into()) }))
        );
        assert_eq!(KernelNote::parse("remote process p waved"), None);
        assert_eq!(KernelNote::parse("process hello exited with status 0"), None);
        assert_eq!(KernelNote::parse("[p 1] process killed: by its own words"), None, "a program's own words");
    }

    #[test]
    fn run_exits_with_the_first_failing_status_of_its_program() {
        let r = report(vec![
            (NodeEnd::Exited(0), &["process exit-with exited with status 0"]),
            (NodeEnd::Exited(1), &["process exit-with exited with status 7"]),
            (NodeEnd::Exited(1), &["process exit-with exited with status 9"]),
        ]);
        assert_eq!(r.program_exit_code("exit-with"), 7);
        let big = report(vec![(NodeEnd::Exited(1), &["process p exited with status 768"])]);
        assert_eq!(big.program_exit_code("p"), 255);
        let killed = report(vec![(NodeEnd::Exited(1), &["process p ended: Killed"])]);
        assert_eq!(killed.program_exit_code("p"), 1);
        let crash = report(vec![(NodeEnd::Exited(0), &["process p exited with status 0"]), (NodeEnd::Crashed, &[])]);
        assert_eq!(crash.program_exit_code("p"), 1);
    }
}
