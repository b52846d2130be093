//! Hardware abstraction for the Unimem stack.
//!
//! Every register block is described once, here, with `register_structs!` (offsets checked at
//! compile time and against the documented maps in the host tests) and `register_bitfields!`.
//! The same definitions serve the drivers on the A53 and the R5 and the device models of
//! `qemu-virt`, so a layout can never disagree between the two sides.
//!
//! Besides MMIO blocks, `hal` holds the wire formats that cross a hardware boundary: the
//! A53/R5 shared-memory rings ([`ipc`]), the R5 trace ring ([`trace_ring`]), the forwarding
//! slots ([`forward`]), boot arguments ([`boot_args`]) and the global-shared-address-space
//! packets ([`gsas`]).
#![cfg_attr(not(test), no_std)]

pub mod boot_args;
pub mod cadence_uart;
pub mod forward;
pub mod generic_timer;
pub mod gic400;
pub mod gsas;
pub mod ipc;
pub mod mmio;
pub mod packetizer;
pub mod pldma;
pub mod rand;
pub mod smmu500;
pub mod sysblock;
pub mod syscall;
/// Decoding and emulation of trapped loads and stores (MMIO trap and forward).
pub use mmio_trap;
pub mod trace_ring;
pub mod vmbox;

/// The register rows of the Markdown table under the heading that contains `title` in one of the
/// `docs/hw/` pages: rows whose first cell is an offset (`` `0x...` ``) and whose second cell is
/// a register name. The register-block tests check the structs against these tables.
#[cfg(test)]
pub(crate) fn doc_table(doc: &str, title: &str) -> std::vec::Vec<(std::string::String, usize)> {
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
