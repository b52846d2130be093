//! Hardware abstraction for the Unimem stack.
//!
//! Every register block is described once, here, with `register_structs!` (offsets checked at
//! compile time and against the documented maps in the host tests) and `register_bitfields!`.
//! The same definitions serve the drivers on the A53 and the R5 and the device models of
//! `qemu-virt`, so a layout can never disagree between the two sides.
//!
//! `hal` is drivers and register blocks only. The protocols that software builds on top of
//! them (system calls, GSAS packets, the A53/R5 rings, boot arguments, the forwarding slots)
//! are in the `proto` crate.
//!
//! Every driver gets its block in an `unsafe fn new` whose caller promises to be the block's
//! only user; the kernel builds each one once at boot and hands it to its owner
//! (`docs/architecture.md`, "Who owns a device").
#![cfg_attr(not(test), no_std)]
#![warn(missing_docs)]

#[cfg(feature = "doc-tables")]
extern crate std;

#[cfg(target_arch = "aarch64")]
mod arch;
pub mod cadence_uart;
pub mod generic_timer;
pub mod gic400;
pub mod mmio;
pub mod packetizer;
pub mod pldma;
pub mod smmu500;
pub mod sysblock;
/// Decoding and emulation of trapped loads and stores (MMIO trap and forward).
pub use mmio_trap;
pub mod vmbox;
pub mod zynqmp_ipi;

/// Interfaces per packetizer and per vmbox (seed §2.2.1): packetizer interface n and mailbox
/// interface n form the pair a PID names.
pub const INTERFACES: usize = 64;

/// The register rows of the Markdown table under the heading that contains `title` in one of the
/// `docs/hw/` pages: rows whose first cell is an offset (`` `0x...` ``) and whose second cell is
/// a register name. The register-block tests check the structs against these tables.
#[cfg(any(test, feature = "doc-tables"))]
pub fn doc_table(doc: &str, title: &str) -> std::vec::Vec<(std::string::String, usize)> {
    let mut rows = std::vec::Vec::new();
    let mut inside = false;
    for line in doc.lines() {
        if line.starts_with('#') {
            inside = line.contains(title);
            continue;
        }
        let cells: std::vec::Vec<&str> = line.split('|').map(|c| c.trim().trim_matches('`')).collect();
        if inside && cells.len() > 3 && cells[1].starts_with("0x") {
            let offset = usize::from_str_radix(&cells[1][2..].replace('_', ""), 16).expect("offset cell");
            rows.push((cells[2].into(), offset));
        }
    }
    rows
}

/// The bit-field rows of the Markdown table under the heading that contains `title`: rows whose
/// first cell is a bit range (`[hi:lo]` or `[n]`) and whose second cell names the field, as
/// (name, (hi, lo)).
#[cfg(test)]
pub(crate) fn doc_bits(doc: &str, title: &str) -> std::vec::Vec<(std::string::String, (u32, u32))> {
    let mut rows = std::vec::Vec::new();
    let mut inside = false;
    for line in doc.lines() {
        if line.starts_with('#') {
            inside = line.contains(title);
            continue;
        }
        let cells: std::vec::Vec<&str> = line.split('|').map(|c| c.trim().trim_matches('`')).collect();
        if inside && cells.len() > 3 && cells[1].starts_with('[') && cells[1].ends_with(']') {
            let range = &cells[1][1..cells[1].len() - 1];
            let (hi, lo) = range.split_once(':').unwrap_or((range, range));
            rows.push((cells[2].into(), (hi.parse().expect("bit number"), lo.parse().expect("bit number"))));
        }
    }
    rows
}
