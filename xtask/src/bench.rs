//! `cargo xtask bench NAME`: benchmarks that print their figures as `name: value unit` lines.
//! Figures measured in QEMU describe the emulator on this machine, not the board.

use crate::qemu_run::{RuntimeDir, node_specs};
use crate::{images, setup};
use anyhow::{Context, bail};
use qemu_virt::{Cluster, ClusterSpec, Event};
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

const RUN_TIMEOUT: Duration = Duration::from_secs(300);

/// Runs the test image on `nodes` nodes with `boot_args` and returns every `bench ...` line
/// (without the prefix), or the time until every node printed `node ready` when asked.
fn run_image(
    qemu: &Path,
    images: &images::Images,
    nodes: usize,
    boot_args: &str,
) -> anyhow::Result<(Vec<String>, Duration)> {
    let dir = RuntimeDir::new("bench")?;
    let (tx, rx) = mpsc::channel();
    let started = Instant::now();
    let specs = node_specs(nodes, &images.ktest, Some(&images.r5), boot_args);
    let _cluster = Cluster::start(&ClusterSpec { nodes: specs, ..ClusterSpec::default() }, qemu, &dir.0, tx)?;
    let (mut lines, mut ready, mut ended) = (Vec::new(), vec![None; nodes], 0);
    while ended < nodes {
        match rx.recv_timeout(RUN_TIMEOUT).context("a benchmark node hung")? {
            Event::Line { node, line, .. } => {
                if line.text == "node ready" {
                    ready[node].get_or_insert(started.elapsed());
                }
                if let Some(rest) = line.text.strip_prefix("bench ") {
                    if rest.starts_with("failed") {
                        bail!("node{node}: {rest}");
                    }
                    if rest != "done" {
                        lines.push(rest.to_string());
                    }
                }
            }
            Event::Exited { node, status } => {
                ended += 1;
                if status != Some(0) {
                    bail!("benchmark node{node} ended with {status:?}");
                }
            }
        }
    }
    let boot = ready.iter().map(|r| r.unwrap_or(RUN_TIMEOUT)).max().unwrap_or_default();
    Ok((lines, boot))
}

/// A plain host memcpy of `bytes`, bytes per second (best of a few runs).
fn host_memcpy_rate(bytes: usize) -> f64 {
    let src = vec![0x5au8; bytes];
    let mut dst = vec![0u8; bytes];
    (0..20)
        .map(|_| {
            let t0 = Instant::now();
            dst.copy_from_slice(std::hint::black_box(&src));
            std::hint::black_box(&dst);
            bytes as f64 / t0.elapsed().as_secs_f64()
        })
        .fold(0.0, f64::max)
}

fn value_of(lines: &[String], name: &str) -> Option<f64> {
    lines.iter().find_map(|l| l.strip_prefix(name)?.strip_prefix(": ")?.split(' ').next()?.parse().ok())
}

fn platform(qemu: &Path, images: &images::Images) -> anyhow::Result<()> {
    let (single, _) = run_image(qemu, images, 1, "bench=platform")?;
    for line in &single {
        println!("{line}");
    }
    let (window, _) = run_image(qemu, images, 2, "bench=platform-window")?;
    let (bytes, ns) = (value_of(&window, "window_copy_bytes"), value_of(&window, "window_copy_ns"));
    let (Some(bytes), Some(ns)) = (bytes, ns) else { bail!("the window benchmark printed no figures: {window:?}") };
    let window_rate = bytes / (ns / 1e9);
    let host_rate = host_memcpy_rate(bytes as usize);
    println!("global_window_copy_throughput: {:.1} KiB/s", window_rate / 1024.0);
    println!("host_memcpy_throughput: {:.1} MiB/s", host_rate / (1024.0 * 1024.0));
    println!("global_window_vs_host_memcpy: {:.3e} ratio", window_rate / host_rate);
    for nodes in [1, 2, 4] {
        let (_, boot) = run_image(qemu, images, nodes, "bench=boot")?;
        println!("boot_to_ready_{nodes}_nodes: {:.0} ms", boot.as_secs_f64() * 1000.0);
    }
    Ok(())
}

pub fn run(name: &str, release: bool) -> anyhow::Result<()> {
    let qemu = setup::ensure_qemu()?;
    let images = images::build_all(images::Options { release, qfdb: false })?;
    match name {
        "platform" => platform(&qemu, &images),
        other => bail!("unknown benchmark {other}: try `platform`"),
    }
}
