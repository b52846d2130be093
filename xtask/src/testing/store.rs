//! The runner's checks of the program store (`docs/hw/program-store.md`): that the programs are
//! no input of the kernel's build, and that a node whose store is damaged boots without them
//! and says so.

use crate::images::{self, Images};
use crate::qemu_run::{Load, RuntimeDir, node_specs};
use qemu_virt::{Cluster, ClusterSpec, Event};
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

/// A check: its test name, and what it runs on QEMU, the images and the build flavour.
pub type Check = (&'static str, fn(&Path, &Images, bool) -> Result<(), String>);

pub const CHECKS: [Check; 2] = [
    ("runner::a_program_change_rebuilds_no_kernel", rebuild),
    ("runner::a_node_with_a_damaged_program_store_boots_and_says_it_has_no_programs", damaged),
];

/// Cargo's record of the kernel images' last build (the suite has just built them) names no
/// user program, nor the directory or store that gathers them.
fn rebuild(_qemu: &Path, _images: &Images, release: bool) -> Result<(), String> {
    let checked =
        images::check_kernel_inputs(images::Options { release, qfdb: false }).map_err(|e| format!("{e:#}"))?;
    println!("rebuild: none of the kernel images' {checked} recorded inputs is a user program");
    Ok(())
}

/// The kernel on one node with its store's last byte flipped: the kernel refuses the store in
/// its boot line, boots all the same, and the demo says there is nothing to run and fails the
/// run (exit status 1), with no panic.
fn damaged(qemu: &Path, images: &Images, _release: bool) -> Result<(), String> {
    const MUST_SAY: [&str; 3] =
        ["program store refused: BadChecksum; this node has no programs", "node ready", "no programs to run"];
    let dir = RuntimeDir::new("damaged-store").map_err(|e| format!("{e:#}"))?;
    let mut store = std::fs::read(&images.store).map_err(|e| format!("{}: {e}", images.store.display()))?;
    *store.last_mut().ok_or("an empty store file")? ^= 0xff;
    let damaged = dir.0.join("program-store.bin");
    std::fs::write(&damaged, &store).map_err(|e| e.to_string())?;
    let nodes = node_specs(1, Load { store: &damaged, ..Load::kernel(images) }, "exit");
    let (tx, rx) = mpsc::channel();
    let cluster = Cluster::start(&ClusterSpec { nodes, ..ClusterSpec::default() }, qemu, &dir.0, tx)
        .map_err(|e| format!("{e:#}"))?;
    let (mut log, mut status) = (Vec::new(), None);
    while let Ok(event) = rx.recv_timeout(Duration::from_secs(120)) {
        match event {
            Event::Line { line, .. } => log.push(line.text),
            Event::Exited { status: s, .. } => {
                status = Some(s);
                break;
            }
        }
    }
    drop(cluster);
    let missing: Vec<&str> = MUST_SAY.into_iter().filter(|m| !log.iter().any(|l| l.contains(m))).collect();
    let panicked = log.iter().any(|l| l.contains("panicked"));
    if status == Some(Some(1)) && missing.is_empty() && !panicked {
        return Ok(());
    }
    Err(format!("ended {status:?} (expected exit 1), missing {missing:?}, panicked: {panicked}; log: {log:?}"))
}
