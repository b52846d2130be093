//! `cargo xtask qemu`: boot the emulated system and show every node's A53 console and R5
//! trace, decoded and prefixed.
//!
//! With a terminal on stdin the system keeps running after the demo (type `h` for the kernel's
//! console commands) until Ctrl-C; otherwise it ends when the demo has finished.

use crate::{images, setup};
use anyhow::Context;
use qemu_virt::{Event, Node, NodeSpec, Source};
use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

pub struct Options {
    pub nodes: usize,
    pub release: bool,
    pub gdb: bool,
    pub boot_args: Option<String>,
}

pub const GDB_BASE_PORT: u16 = 1234;

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
    let mut nodes = Vec::new();
    for index in 0..opts.nodes {
        let spec = NodeSpec {
            index,
            kernel: images.kernel.clone(),
            r5: Some(images.r5.clone()),
            boot_args: Some(boot_args.trim().to_string()),
            gdb_port: opts.gdb.then_some(GDB_BASE_PORT + index as u16),
            ..NodeSpec::default()
        };
        nodes.push(Node::start(&spec, &qemu, &dir.0, tx.clone())?);
    }
    drop(tx);
    if opts.gdb {
        print_gdb_help(&images, opts.nodes);
    } else {
        for node in &mut nodes {
            node.resume()?;
        }
    }
    if interactive {
        println!("(Ctrl-C stops QEMU; keys go to node0's console: try h)");
        let mut input = nodes[0].console_input()?;
        std::thread::spawn(move || {
            let mut buf = [0u8; 64];
            while let Ok(n @ 1..) = std::io::stdin().read(&mut buf) {
                if input.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        });
    }

    let mut running = opts.nodes;
    let mut failed = Vec::new();
    while running > 0 {
        if stop.load(Ordering::SeqCst) {
            println!("stopping");
            break;
        }
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(Event::Line { node, source, line }) => println!("{} {line}", prefix(node, source)),
            Ok(Event::Exited { node, status }) => {
                running -= 1;
                match status {
                    Some(0) => println!("node{node} finished"),
                    other => {
                        println!("node{node} ended with status {other:?}");
                        failed.push(node);
                    }
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    drop(nodes);
    anyhow::ensure!(failed.is_empty(), "nodes {failed:?} did not finish cleanly");
    Ok(())
}
