//! `cargo xtask qemu`: boot the emulated cluster and show every node's A53 console and R5
//! trace, decoded and prefixed.
//!
//! With a terminal on stdin the system keeps running after the demo (type `h` for the kernel's
//! console commands) until Ctrl-C; otherwise it ends when every node has finished its demo, and
//! a node that does not finish in time is reported as hung.

use crate::{images, setup};
use anyhow::Context;
use qemu_virt::{Cluster, ClusterSpec, Event, LinkConfig, NodeSpec, Source};
use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub struct Options {
    pub nodes: usize,
    pub release: bool,
    pub gdb: bool,
    pub boot_args: Option<String>,
    pub trace: Option<PathBuf>,
    pub link: LinkConfig,
}

pub const GDB_BASE_PORT: u16 = 1234;
/// How long a non-interactive run may take before unfinished nodes count as hung.
const RUN_TIMEOUT: Duration = Duration::from_secs(180);

/// A per-process directory for sockets and files; removed when dropped.
pub struct RuntimeDir(pub PathBuf);

impl RuntimeDir {
    pub fn new(tag: &str) -> anyhow::Result<Self> {
        let dir = std::env::temp_dir().join(format!("unimem-{}-{tag}", std::process::id()));
        std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        Ok(Self(dir))
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

/// The node specs of a cluster running one image.
pub fn node_specs(
    nodes: usize,
    kernel: &std::path::Path,
    r5: Option<&std::path::Path>,
    boot_args: &str,
) -> Vec<NodeSpec> {
    (0..nodes)
        .map(|index| NodeSpec {
            index,
            kernel: kernel.to_path_buf(),
            r5: r5.map(std::path::Path::to_path_buf),
            boot_args: Some(boot_args.trim().to_string()),
            ..NodeSpec::default()
        })
        .collect()
}

pub fn run(opts: Options) -> anyhow::Result<()> {
    anyhow::ensure!((1..=8).contains(&opts.nodes), "--nodes must be between 1 and 8");
    let qemu = setup::ensure_qemu()?;
    let images = images::build_all(images::Options { release: opts.release, qfdb: false })?;
    let interactive = std::io::stdin().is_terminal();
    let mut boot_args = opts.boot_args.clone().unwrap_or_default();
    if !interactive {
        boot_args.push_str(" exit");
    }

    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst)).context("cannot install the Ctrl-C handler")?;
    }
    let dir = RuntimeDir::new("qemu")?;
    let (tx, rx) = mpsc::channel();
    let mut nodes = node_specs(opts.nodes, &images.kernel, Some(&images.r5), &boot_args);
    if opts.gdb {
        for node in &mut nodes {
            node.gdb_port = Some(GDB_BASE_PORT + node.index as u16);
        }
    }
    let spec = ClusterSpec { nodes, link: opts.link, trace: opts.trace.clone(), paused: opts.gdb };
    let cluster = Cluster::start(&spec, &qemu, &dir.0, tx)?;
    if opts.gdb {
        print_gdb_help(&images, opts.nodes);
    }
    if interactive {
        println!("(Ctrl-C stops QEMU; keys go to node0's console: try h)");
        let mut input = cluster.nodes()[0].console_input()?;
        std::thread::spawn(move || {
            let mut buf = [0u8; 64];
            while let Ok(n @ 1..) = std::io::stdin().read(&mut buf) {
                if input.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        });
    }

    let deadline = (!interactive && !opts.gdb).then(|| Instant::now() + RUN_TIMEOUT);
    let mut finished = vec![false; opts.nodes];
    let mut failed = Vec::new();
    while finished.iter().any(|f| !f) {
        if stop.load(Ordering::SeqCst) {
            println!("stopping");
            break;
        }
        if deadline.is_some_and(|d| Instant::now() > d) {
            for (node, _) in finished.iter().enumerate().filter(|(_, f)| !**f) {
                println!("node{node} is hung: no end after {RUN_TIMEOUT:?}");
                failed.push(node);
            }
            break;
        }
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(Event::Line { node, source, line }) => println!("{} {line}", prefix(node, source)),
            Ok(Event::Exited { node, status }) => {
                finished[node] = true;
                match status {
                    Some(0) => println!("node{node} finished"),
                    Some(code) => {
                        println!("node{node} ended with status {code}");
                        failed.push(node);
                    }
                    None => {
                        println!("node{node} crashed: QEMU was killed");
                        failed.push(node);
                    }
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    for (node, counters) in cluster.shut_down().iter().enumerate() {
        println!("node{node} counters: {counters}");
    }
    if let Some(path) = &opts.trace {
        println!("trace written to {} (open it in https://ui.perfetto.dev)", path.display());
    }
    anyhow::ensure!(failed.is_empty(), "nodes {failed:?} did not finish cleanly");
    Ok(())
}
