//! `cargo xtask qemu` and `cargo xtask run`: boot the emulated cluster and show every node's A53
//! console and R5 trace, decoded and prefixed.
//!
//! With a terminal on stdin, `qemu` keeps the system running after the demo: keys go to node 0's
//! console (the terminal is raw meanwhile) until `q` there or Ctrl-C. Otherwise the nodes end
//! their run together (`docs/hw/sysblock.md`) and the command ends with them. Either way it ends
//! with a summary, and exits non-zero when a process failed, a node crashed or the run timed out.

use crate::outcome::{KernelNote, NodeEnd, NodeOutcome, ProcessEnd, RunReport};
use crate::{images, setup, shmem_launch, terminal};
use anyhow::{Context, bail};
use qemu_virt::{Cluster, ClusterSpec, Event, LinkConfig, NodeSpec, Source};
use std::io::{IsTerminal, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub const GDB_BASE_PORT: u16 = 1234;
/// The nodes `--nodes` accepts (the global window and the platform have room for more; eight
/// QEMUs are as many as a laptop runs).
pub const MAX_NODES: usize = 8;

/// What `cargo xtask qemu` and `cargo xtask run` have in common.
#[derive(Clone, Debug)]
pub struct ClusterOptions {
    pub nodes: usize,
    pub release: bool,
    pub trace: Option<PathBuf>,
    pub link: LinkConfig,
    /// How long a run that is not interactive may take.
    pub timeout: Duration,
    /// The MPI ranks the nodes are spread over (`qemu` only; 1: one process, as always).
    pub ranks: usize,
    /// The hosts of the ranks (an Open MPI hostfile); this host without it.
    pub hosts: Option<PathBuf>,
}

impl ClusterOptions {
    /// Whether the cluster runs over MPI ranks.
    pub fn over_ranks(&self) -> bool {
        self.ranks > 1 || self.hosts.is_some()
    }

    /// Refuses `--ranks`/`--hosts` where a command has no use for them.
    pub fn on_one_process(&self, command: &str) -> anyhow::Result<()> {
        if self.over_ranks() {
            bail!("`{command}` runs on one process: --ranks and --hosts are for `cargo xtask qemu`");
        }
        Ok(())
    }
}

pub struct Options {
    pub cluster: ClusterOptions,
    pub gdb: bool,
    pub boot_args: Option<String>,
}

pub struct RunOptions {
    pub cluster: ClusterOptions,
    /// Start QEMU's gdb stub, paused, as `qemu --gdb` does.
    pub gdb: bool,
    /// Boot arguments for every node, before the run's own.
    pub boot_args: Option<String>,
    pub program: String,
    /// The node to run it on; every node without one.
    pub on: Option<usize>,
    pub args: Vec<String>,
}

/// A per-process directory for sockets and files; removed when dropped.
pub struct RuntimeDir(pub PathBuf);

impl RuntimeDir {
    pub fn new(tag: &str) -> anyhow::Result<Self> {
        let dir = Self::path_of(std::process::id(), tag);
        std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        Ok(Self(dir))
    }

    /// The directory process `pid` has (or had) for `tag`.
    pub fn path_of(pid: u32, tag: &str) -> PathBuf {
        std::env::temp_dir().join(format!("unimem-{pid}-{tag}"))
    }
}

impl Drop for RuntimeDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn prefix(node: usize, source: Source) -> String {
    let who = match source {
        Source::Console => "a53",
        Source::R5Trace => "r5 ",
    };
    format!("node{node} {who} |")
}

fn print_gdb_help(images: &images::Images, nodes: usize) {
    println!("QEMU is paused with its gdb stub open. Attach with gdb-multiarch:");
    for n in 0..nodes {
        let port = GDB_BASE_PORT + n as u16;
        println!("  node{n} A53: gdb-multiarch {} -ex 'target extended-remote :{port}'", images.kernel.display());
        println!(
            "  node{n} R5:  gdb-multiarch {} -ex 'target extended-remote :{port}' -ex 'add-inferior' -ex 'inferior 2' -ex 'attach 2'",
            images.r5.display()
        );
    }
    println!("The A53 cluster is inferior 1 (threads 1-4), the RPU inferior 2. `continue` starts the node.");
}

/// What every node of a run loads: an A53 image (the kernel or the test image), the R5's (none:
/// the node has the A53s alone) and the program store.
#[derive(Clone, Copy, Debug)]
pub struct Load<'a> {
    pub kernel: &'a Path,
    pub r5: Option<&'a Path>,
    pub store: &'a Path,
}

impl<'a> Load<'a> {
    /// The kernel image with the R5 firmware.
    pub fn kernel(images: &'a images::Images) -> Self {
        Self { kernel: &images.kernel, r5: Some(&images.r5), store: &images.store }
    }

    /// The test image, with the R5 firmware or without.
    pub fn ktest(images: &'a images::Images, r5: bool) -> Self {
        Self { kernel: &images.ktest, r5: r5.then_some(images.r5.as_path()), store: &images.store }
    }
}

/// The node specs of a cluster where every node loads `load`, each with its own boot arguments.
pub fn node_specs_with(load: Load<'_>, boot_args: &[String]) -> Vec<NodeSpec> {
    boot_args
        .iter()
        .enumerate()
        .map(|(index, args)| NodeSpec {
            index,
            kernel: load.kernel.to_path_buf(),
            r5: load.r5.map(Path::to_path_buf),
            program_store: Some(load.store.to_path_buf()),
            boot_args: Some(args.trim().to_string()),
            ..NodeSpec::default()
        })
        .collect()
}

/// The node specs of a cluster where every node loads `load`, with the same boot arguments.
pub fn node_specs(nodes: usize, load: Load<'_>, boot_args: &str) -> Vec<NodeSpec> {
    node_specs_with(load, &vec![boot_args.to_string(); nodes])
}

pub fn check_nodes(nodes: usize) -> anyhow::Result<()> {
    if !(1..=MAX_NODES).contains(&nodes) {
        bail!("--nodes {nodes}: a cluster has 1 to {MAX_NODES} nodes");
    }
    Ok(())
}

/// `cargo xtask qemu`.
pub fn qemu(opts: Options) -> anyhow::Result<()> {
    if opts.cluster.over_ranks() {
        return qemu_over_ranks(&opts);
    }
    check_nodes(opts.cluster.nodes)?;
    let interactive = std::io::stdin().is_terminal() && !opts.gdb;
    let mut boot_args = opts.boot_args.clone().unwrap_or_default();
    if !interactive {
        boot_args.push_str(" exit");
    }
    let session =
        Session { opts: &opts.cluster, boot_args: vec![boot_args; opts.cluster.nodes], gdb: opts.gdb, images: None };
    let report = session.run(interactive)?;
    finish(&report, i32::from(report.failed()))
}

/// `cargo xtask qemu --ranks H`: the demo on every node, the nodes spread over `H` MPI ranks
/// (`crate::mpi::launch`), each a `rank` of xtask built with MPI (`crate::rank_run`), with the
/// links' injection and the trace as on one process (`crate::mpi::run_cluster` merges the ranks'
/// traces). Rank 0 prints the summary; the exit status is `crate::mpi::exit_code`'s.
fn qemu_over_ranks(opts: &Options) -> anyhow::Result<()> {
    let (nodes, ranks) = (opts.cluster.nodes, opts.cluster.ranks);
    if nodes == 0 || nodes as u64 > board::pl::MAX_NODES {
        bail!("--nodes {nodes}: a cluster over ranks has 1 to {} nodes", board::pl::MAX_NODES);
    }
    if ranks == 0 || ranks > nodes {
        bail!("--ranks {ranks}: every rank runs at least one of the {nodes} nodes");
    }
    if opts.gdb {
        bail!("--gdb runs on one process: not with --ranks");
    }
    let qemu = setup::ensure_qemu()?;
    let images = images::build_all(images::Options { release: opts.cluster.release, qfdb: false })?;
    let boot_args = format!("{} exit", opts.boot_args.as_deref().unwrap_or_default());
    // Absolute: the ranks may not start where this command did.
    let trace = match &opts.cluster.trace {
        Some(trace) => Some(std::path::absolute(trace).with_context(|| format!("--trace {}", trace.display()))?),
        None => None,
    };
    let code = crate::mpi::run_cluster(&crate::mpi::ClusterRun {
        nodes,
        ranks,
        hosts: opts.cluster.hosts.as_deref(),
        qemu: &qemu,
        load: Load::kernel(&images),
        boot_args: boot_args.trim(),
        link: opts.cluster.link,
        trace: trace.as_deref(),
        timeout: opts.cluster.timeout,
    })?;
    if code != 0 {
        std::process::exit(code);
    }
    Ok(())
}

/// `cargo xtask run`.
pub fn run(opts: RunOptions) -> anyhow::Result<()> {
    opts.cluster.on_one_process("run")?;
    check_nodes(opts.cluster.nodes)?;
    let programs = images::programs()?;
    if !programs.contains(&opts.program) {
        bail!("no program `{}`; the programs are: {}", opts.program, programs.join(", "));
    }
    if let Some(on) = opts.on.filter(|&n| n >= opts.cluster.nodes) {
        bail!("--on {on}: the nodes are 0 to {}", opts.cluster.nodes - 1);
    }
    // The program's ELF says how it starts (an OpenSHMEM program: on node 0 alone).
    let images = images::build_all(images::Options { release: opts.cluster.release, qfdb: false })?;
    let store = std::fs::read(&images.store).with_context(|| format!("cannot read {}", images.store.display()))?;
    let elf = images::store_program(&store, &opts.program)?
        .with_context(|| format!("the program store has no `{}`", opts.program))?;
    let shmem = shmem_launch::is_shmem_program(&elf);
    let run_words = run_boot_words(&opts.program, &opts.args);
    let extra = opts.boot_args.as_deref().map_or("", str::trim);
    let boot_args = shmem_launch::boot_args(&opts.program, shmem, opts.cluster.nodes, opts.on, &run_words, extra)?;
    if shmem {
        println!("{} is an OpenSHMEM program: PE 0 on node 0 starts PEs 1..{}", opts.program, opts.cluster.nodes - 1);
    }
    let session = Session { opts: &opts.cluster, boot_args, gdb: opts.gdb, images: Some(images) };
    let report = session.run(false)?;
    if shmem {
        for line in shmem_launch::pe_failures(&report, &opts.program) {
            println!("OpenSHMEM {line}");
        }
        return finish(&report, shmem_launch::exit_code(&report, &opts.program));
    }
    finish(&report, report.program_exit_code(&opts.program))
}

/// `run=PROGRAM arg=...`, each argument escaped into one word (`docs/hw/boot-args.md`).
pub fn run_boot_words(program: &str, args: &[String]) -> String {
    let mut words = format!("run={program}");
    for arg in args {
        let escaped: Vec<u8> = proto::boot_args::escaped(arg.as_bytes()).collect();
        words.push_str(" arg=");
        words.push_str(&String::from_utf8_lossy(&escaped));
    }
    words
}

fn finish(report: &RunReport, code: i32) -> anyhow::Result<()> {
    let failures = report.failures();
    if failures.is_empty() {
        println!("every node finished cleanly");
    } else {
        println!("the run failed:");
        for line in &failures {
            println!("  {line}");
        }
    }
    if code != 0 {
        std::process::exit(code);
    }
    Ok(())
}

/// Set by Ctrl-C (the handler is installed once per process).
fn stop_flag() -> anyhow::Result<&'static AtomicBool> {
    static STOP: AtomicBool = AtomicBool::new(false);
    static INSTALLED: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    INSTALLED
        .get_or_init(|| ctrlc::set_handler(|| STOP.store(true, Ordering::SeqCst)).map_err(|e| e.to_string()))
        .clone()
        .map_err(|e| anyhow::anyhow!("cannot install the Ctrl-C handler: {e}"))?;
    Ok(&STOP)
}

/// `cargo xtask soak demo`: the demo of `cargo xtask qemu` (without a terminal), `runs` times.
/// Prints each run's verdict and ends with `soak demo: N runs on M nodes, F failed`, N the runs
/// made (Ctrl-C stops early, and says so); fails if any failed or it stopped early.
pub fn soak_demo(cluster: ClusterOptions, runs: usize) -> anyhow::Result<()> {
    check_nodes(cluster.nodes)?;
    let (mut made, mut failed) = (0, 0);
    for run in 1..=runs {
        let session =
            Session { opts: &cluster, boot_args: vec!["exit".into(); cluster.nodes], gdb: false, images: None };
        let report = session.run(false)?;
        let failures = report.failures();
        made += 1;
        println!("soak run {run}/{runs}: {}", if failures.is_empty() { "ok" } else { "FAILED" });
        for line in &failures {
            println!("  {line}");
        }
        failed += usize::from(!failures.is_empty());
        if stop_flag()?.load(Ordering::SeqCst) {
            break;
        }
    }
    let stopped = if made < runs { format!(" (stopped early: {runs} asked for)") } else { String::new() };
    println!("soak demo: {made} runs on {} nodes, {failed} failed{stopped}", cluster.nodes);
    anyhow::ensure!(failed == 0, "{failed} of {made} runs failed");
    anyhow::ensure!(made == runs, "stopped after {made} of {runs} runs");
    Ok(())
}

struct Session<'a> {
    opts: &'a ClusterOptions,
    boot_args: Vec<String>,
    gdb: bool,
    /// The images, when the caller built them already.
    images: Option<images::Images>,
}

impl Session<'_> {
    fn run(&self, interactive: bool) -> anyhow::Result<RunReport> {
        let qemu = setup::ensure_qemu()?;
        let images = match &self.images {
            Some(images) => images.clone(),
            None => images::build_all(images::Options { release: self.opts.release, qfdb: false })?,
        };
        let stop = stop_flag()?;
        let dir = RuntimeDir::new("qemu")?;
        let (tx, rx) = mpsc::channel();
        let mut nodes = node_specs_with(Load::kernel(&images), &self.boot_args);
        if self.gdb {
            for node in &mut nodes {
                node.gdb_port = Some(GDB_BASE_PORT + node.index as u16);
            }
        }
        let spec = ClusterSpec { nodes, link: self.opts.link, trace: self.opts.trace.clone(), paused: self.gdb };
        let cluster = Cluster::start(&spec, &qemu, &dir.0, tx)?;
        if self.gdb {
            print_gdb_help(&images, self.boot_args.len());
        }
        let keyboard = if interactive {
            println!("(keys go to node0's console: try h; q or Ctrl-C stops)");
            let raw = terminal::RawMode::enter(std::io::stdin().as_raw_fd()).context("cannot make the terminal raw")?;
            Some((raw, Keyboard::spawn(cluster.nodes()[0].console_input()?)))
        } else {
            None
        };
        let deadline = (!interactive && !self.gdb).then(|| Instant::now() + self.opts.timeout);
        let nodes = self.boot_args.len();
        let report = watch(&rx, 0..nodes, nodes, stop, deadline, interactive, keyboard.as_ref().map(|k| &k.1));
        for (node, end) in report.nodes.iter().enumerate() {
            if end.end == NodeEnd::Hung {
                cluster.kill(node);
            }
        }
        drop(keyboard);
        for (node, counters) in cluster.shut_down().iter().enumerate() {
            println!("node{node} counters: {counters}");
        }
        if let Some(path) = &self.opts.trace {
            println!("trace written to {} (open it in https://ui.perfetto.dev)", path.display());
        }
        Ok(report)
    }
}

/// Prints every line until every node of `nodes` (of a cluster of `total`) has ended (or node 0,
/// when interactive), the user stops, or the deadline passes; records how each node and each of
/// its processes ended (a node not in `nodes`: stopped, not a failure).
pub fn watch(
    rx: &mpsc::Receiver<Event>,
    nodes: std::ops::Range<usize>,
    total: usize,
    stop: &AtomicBool,
    deadline: Option<Instant>,
    interactive: bool,
    keyboard: Option<&Keyboard>,
) -> RunReport {
    let mut ends: Vec<Option<NodeEnd>> =
        (0..total).map(|n| if nodes.contains(&n) { None } else { Some(NodeEnd::Stopped) }).collect();
    let mut processes: Vec<Vec<ProcessEnd>> = vec![Vec::new(); total];
    let mut notes: Vec<Vec<KernelNote>> = vec![Vec::new(); total];
    loop {
        let all_ended = ends.iter().all(Option::is_some);
        if all_ended || (interactive && ends[0].is_some()) {
            break;
        }
        if stop.load(Ordering::SeqCst) {
            println!("stopping");
            break;
        }
        if deadline.is_some_and(|d| Instant::now() > d) {
            for end in ends.iter_mut().filter(|e| e.is_none()) {
                *end = Some(NodeEnd::Hung);
            }
            break;
        }
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(Event::Line { node, source, line }) => {
                println!("{} {line}", prefix(node, source));
                if source == Source::Console {
                    if let Some(end) = ProcessEnd::parse(&line.text) {
                        processes[node].push(end);
                    }
                    if let Some(note) = KernelNote::parse(&line.text) {
                        notes[node].push(note);
                    }
                    if let (0, Some(k)) = (node, keyboard) {
                        k.line_wanted(line.text.starts_with("line? "));
                    }
                }
            }
            Ok(Event::Exited { node, status }) => {
                ends[node] = Some(status.map_or(NodeEnd::Crashed, NodeEnd::Exited));
                match status {
                    Some(0) => println!("node{node} finished"),
                    Some(code) => println!("node{node} ended with status {code}"),
                    None => println!("node{node} crashed: QEMU was killed"),
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    let nodes = ends
        .into_iter()
        .zip(processes.into_iter().zip(notes))
        .map(|(end, (processes, notes))| NodeOutcome { end: end.unwrap_or(NodeEnd::Stopped), processes, notes })
        .collect();
    RunReport { nodes }
}

/// Forwards keys from the terminal to node 0's console, one at a time; when the node asks for a
/// line (`docs/hw/console.md`, "Asking for a line"), edits and echoes it here and sends it whole.
pub struct Keyboard {
    line: Arc<AtomicBool>,
}

impl Keyboard {
    fn spawn(mut console: UnixStream) -> Self {
        let line = Arc::new(AtomicBool::new(false));
        let wanted = line.clone();
        std::thread::spawn(move || {
            let mut typed = Vec::new();
            let mut key = [0u8; 1];
            while let Ok(1) = std::io::stdin().read(&mut key) {
                if !wanted.load(Ordering::SeqCst) {
                    if console.write_all(&key).is_err() {
                        break;
                    }
                    continue;
                }
                let mut out = std::io::stdout();
                match key[0] {
                    b'\r' | b'\n' => {
                        typed.push(b'\r');
                        let _ = writeln!(out);
                        wanted.store(false, Ordering::SeqCst);
                        if console.write_all(&typed).is_err() {
                            break;
                        }
                        typed.clear();
                    }
                    0x08 | 0x7f => {
                        if typed.pop().is_some() {
                            let _ = out.write_all(b"\x08 \x08");
                        }
                    }
                    byte => {
                        typed.push(byte);
                        let _ = out.write_all(&[byte]);
                    }
                }
                let _ = out.flush();
            }
        });
        Self { line }
    }

    fn line_wanted(&self, wanted: bool) {
        if wanted {
            print!("run> ");
            let _ = std::io::stdout().flush();
            self.line.store(true, Ordering::SeqCst);
        }
    }
}
