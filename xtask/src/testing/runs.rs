//! The on-target runs `cargo xtask test` makes: which image, how QEMU is set up, what the run
//! must show.

use std::time::Duration;

#[derive(Clone, Copy, Debug)]
pub enum Expect {
    /// The image runs its tests (selected by the filter) and ends with the summary line.
    Summary,
    /// A single runner-level test: the run must end with `status` and its output (console and
    /// R5 trace, which arrive interleaved) must contain every one of `must_contain`.
    Output { test: &'static str, status: i32, must_contain: &'static [&'static str] },
}

/// Kill a node's QEMU when it prints a line containing `when`, as a crash would.
#[derive(Clone, Copy, Debug)]
pub struct Kill {
    pub node: usize,
    pub when: &'static str,
    /// The runner-level test that checks the kill was reported and the others finished.
    pub test: &'static str,
}

#[derive(Clone, Copy, Debug)]
pub struct TargetRun {
    pub name: &'static str,
    /// Nodes in the cluster (each runs the image); test names get a `nodeN/` prefix when > 1.
    pub nodes: usize,
    pub kill: Option<Kill>,
    /// Write a Chrome trace and check it (this runner test's name).
    pub trace_check: Option<&'static str>,
    /// Load and start the R5 firmware (QEMU -smp 6); without it only the A53s exist.
    pub r5: bool,
    /// Enter the kernel at EL2 (`virtualization=on`).
    pub virtualization: bool,
    /// What the links do to the datagrams.
    pub links: Links,
    pub boot_args: &'static str,
    pub timeout: Duration,
    pub expect: Expect,
}

impl TargetRun {
    /// Whether the run has anything selected by `filter` (summary runs decide on target, unless
    /// the filter names a runner-level test). A run with a kill plan is a fixed script: it is
    /// selected by its runner test's name.
    pub fn selected(&self, filter: Option<&str>) -> bool {
        let Some(f) = filter else { return true };
        match (self.expect, self.kill) {
            (_, Some(kill)) => kill.test.contains(f),
            (Expect::Summary, None) => !f.starts_with("runner::") || self.trace_check.is_some_and(|t| t.contains(f)),
            (Expect::Output { test, .. }, None) => test.contains(f),
        }
    }

    /// The runner-level test this run stands for, if it is not a plain test-image run.
    pub fn runner_test(&self) -> Option<&'static str> {
        match (self.expect, self.kill) {
            (_, Some(kill)) => Some(kill.test),
            (Expect::Output { test, .. }, None) => Some(test),
            (Expect::Summary, None) => None,
        }
    }
}

/// What a run's links do to the datagrams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Links {
    /// Nothing: every datagram arrives once, in order.
    Clean,
    /// [`LOSSY_LINKS`]: 1% lost, duplicated and reordered each.
    Lossy,
    /// The first this many datagrams are lost, the rest arrive (`LinkConfig::lose_first`).
    LoseFirst(u64),
}

impl Links {
    pub fn config(self) -> qemu_virt::LinkConfig {
        match self {
            Links::Clean => qemu_virt::LinkConfig::default(),
            Links::Lossy => LOSSY_LINKS,
            Links::LoseFirst(n) => qemu_virt::LinkConfig { lose_first: n, ..qemu_virt::LinkConfig::default() },
        }
    }
}

/// The links of a `Links::Lossy` run: 1% loss, 1% duplication, 1% reordering per link.
pub const LOSSY_LINKS: qemu_virt::LinkConfig =
    qemu_virt::LinkConfig { latency_us: 1.0, loss: 0.01, duplicate: 0.01, reorder: 0.01, seed: 11, lose_first: 0 };

pub const RUNS: &[TargetRun] = &[
    TargetRun {
        name: "ktest",
        nodes: 1,
        kill: None,
        trace_check: None,
        r5: true,
        virtualization: false,
        links: Links::Clean,
        boot_args: "",
        timeout: Duration::from_secs(240),
        expect: Expect::Summary,
    },
    // The hardware entry path: ATF enters the kernel at EL2. QEMU with virtualization=on does
    // the same, but cannot start the R5 then, so this run has the A53s only.
    TargetRun {
        name: "ktest-el2",
        nodes: 1,
        kill: None,
        trace_check: None,
        r5: false,
        virtualization: true,
        links: Links::Clean,
        boot_args: "filter=boot:: expect-el=2",
        timeout: Duration::from_secs(120),
        expect: Expect::Summary,
    },
    // Two nodes: the cluster tests (global window both ways, every access size), then each node's
    // own suite.
    TargetRun {
        name: "cluster-2",
        nodes: 2,
        kill: None,
        trace_check: Some("runner::trace_file_holds_accesses_interrupts_and_packets_of_every_node"),
        r5: true,
        virtualization: false,
        links: Links::Clean,
        boot_args: "cluster rdma-stress filter=platform::",
        timeout: Duration::from_secs(480),
        expect: Expect::Summary,
    },
    // A QFDB's worth of nodes: the cluster tests, the global shared address space among them.
    TargetRun {
        name: "cluster-4",
        nodes: 4,
        kill: None,
        trace_check: None,
        r5: false,
        virtualization: false,
        links: Links::Clean,
        boot_args: "cluster cluster-only",
        timeout: Duration::from_secs(600),
        expect: Expect::Summary,
    },
    // Four nodes see each other; then node 2 dies in the middle of its own tests and the
    // others must still finish theirs.
    TargetRun {
        name: "cluster-4-kill",
        nodes: 4,
        trace_check: None,
        kill: Some(Kill {
            node: 2,
            when: "running heap::",
            test: "runner::a_killed_node_is_reported_and_the_others_finish",
        }),
        r5: false,
        virtualization: false,
        links: Links::Clean,
        boot_args: "cluster cluster-filter=every_node filter=heap::",
        timeout: Duration::from_secs(300),
        expect: Expect::Summary,
    },
    // A node killed in the middle of real work: four nodes add to counters on every node;
    // node 2 dies halfway. The survivors must get NodeUnreachable for it at once, finish, and
    // count exactly among themselves.
    TargetRun {
        name: "cluster-4-kill-workload",
        nodes: 4,
        trace_check: None,
        kill: Some(Kill {
            node: 2,
            when: "fad-mesh: halfway",
            test: "runner::a_node_killed_mid_workload_is_unreachable_and_the_survivors_count_exactly",
        }),
        r5: false,
        virtualization: false,
        links: Links::Clean,
        boot_args: "cluster cluster-only cluster-filter=fad_mesh victim=2",
        timeout: Duration::from_secs(300),
        expect: Expect::Summary,
    },
    // User-level RDMA on a QFDB's worth of nodes over bad links: every size between two nodes,
    // a PD that reaches no other's memory, and 1,024 random transfers from a process on every
    // node. (Test filters are ANDed: one filter names them all.) The nodes boot in SMMU stall
    // mode: page faults across nodes are stalled and resumed here (cluster-2 terminates them).
    TargetRun {
        name: "cluster-4-rdma",
        nodes: 4,
        kill: None,
        trace_check: None,
        r5: true,
        virtualization: false,
        links: Links::Lossy,
        boot_args: "cluster cluster-only rdma-stress lossy smmu-stall cluster-filter=cluster::rdma_",
        timeout: Duration::from_secs(600),
        expect: Expect::Summary,
    },
    // Sockets over RDMA on a QFDB's worth of nodes, where the links lose nothing: 64 MiB
    // streamed from node 0 to node 3 and 32 connections into one polling process (the lossy
    // run above has the socket tests that move little: echo, the key-value server, a peer
    // killed mid-stream).
    TargetRun {
        name: "cluster-4-sockets",
        nodes: 4,
        kill: None,
        trace_check: None,
        r5: true,
        virtualization: false,
        links: Links::Clean,
        boot_args: "cluster cluster-only cluster-filter=cluster::sockets_",
        timeout: Duration::from_secs(600),
        expect: Expect::Summary,
    },
    // A node dies in the middle of a socket stream: node 1 is killed while its sink reads, and
    // node 0's writer must get ConnectionReset, never hang.
    TargetRun {
        name: "cluster-2-sockets-kill",
        nodes: 2,
        trace_check: None,
        kill: Some(Kill {
            node: 1,
            when: "sock-check sink: 1 MiB in",
            test: "runner::a_node_killed_mid_stream_resets_its_sockets_and_the_other_finishes",
        }),
        r5: true,
        virtualization: false,
        links: Links::Clean,
        boot_args: "cluster cluster-only cluster-filter=sockets_a_node_dying victim=1",
        timeout: Duration::from_secs(300),
        expect: Expect::Summary,
    },
    // A node dies under an OpenSHMEM job: node 1, whose PE waits, is killed; node 0's PE, in a
    // barrier, must end it naming that PE, never hang.
    TargetRun {
        name: "cluster-2-shmem-kill",
        nodes: 2,
        trace_check: None,
        kill: Some(Kill {
            node: 1,
            when: "shmem-node-death: PE 1 waits to be killed",
            test: "runner::a_node_killed_under_an_openshmem_job_ends_it_with_the_pe_named",
        }),
        r5: true,
        virtualization: false,
        links: Links::Clean,
        boot_args: "cluster cluster-only cluster-filter=shmem_a_node_dying victim=1",
        timeout: Duration::from_secs(300),
        expect: Expect::Summary,
    },
    // A whole RDMA block lost on the links while the R5 sleeps: the first 64 datagrams (the
    // block's packets) never arrive, so only the block's retransmission timeout, armed as the
    // R5's timer before it sleeps, can bring the write to its end.
    TargetRun {
        name: "cluster-2-lost-block",
        nodes: 2,
        kill: None,
        trace_check: None,
        r5: true,
        virtualization: false,
        links: Links::LoseFirst(hal::pldma::BLOCK_BYTES / hal::pldma::PACKET_BYTES),
        boot_args: "cluster cluster-only lost-block cluster-filter=cluster::rdma_a_block_lost",
        timeout: Duration::from_secs(240),
        expect: Expect::Summary,
    },
    TargetRun {
        name: "crash-panic",
        nodes: 1,
        kill: None,
        trace_check: None,
        r5: false,
        virtualization: false,
        links: Links::Clean,
        boot_args: "crash=panic",
        timeout: Duration::from_secs(120),
        expect: Expect::Output {
            test: "runner::panic_prints_message_and_location",
            status: 101,
            must_contain: &[
                "panicked at a53-kernel/ktest/src/exceptions.rs:",
                "deliberate panic for the runner (value 42)",
            ],
        },
    },
    TargetRun {
        name: "crash-fault",
        nodes: 1,
        kill: None,
        trace_check: None,
        r5: false,
        virtualization: false,
        links: Links::Clean,
        boot_args: "crash=fault",
        timeout: Duration::from_secs(120),
        expect: Expect::Output {
            test: "runner::unhandled_data_abort_is_reported_with_registers",
            status: 102,
            must_contain: &[
                "unhandled data abort (translation fault, level 1) at ELR 0xffffffff8",
                "FAR 0xffffffc0000dead0, ESR 0x96000005",
                "x00 ",
                "x28 ",
                "elr ffffffff8",
            ],
        },
    },
    TargetRun {
        name: "crash-r5",
        nodes: 1,
        kill: None,
        trace_check: None,
        r5: true,
        virtualization: false,
        links: Links::Clean,
        boot_args: "crash=r5-fault",
        timeout: Duration::from_secs(120),
        expect: Expect::Output {
            test: "runner::r5_mpu_refuses_unlisted_memory_and_the_abort_is_reported",
            status: 0,
            must_contain: &[
                "fault self-test: loading from 0x40000000",
                "data abort at PC",
                "DFAR 0x40000000",
                "the R5 went silent",
            ],
        },
    },
];
