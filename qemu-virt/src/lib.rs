//! The emulated Unimem platform.
//!
//! `qemu-virt` starts one QEMU `xlnx-zcu102` process per node, with the node's DDR in a shared
//! memory file, its console on a socket, and its second UART as
//! the channel for forwarded MMIO and PL interrupts. It decodes every node's console and R5
//! trace (defmt) and hands the lines to its user — `xtask` for `cargo xtask qemu` and the test
//! runner.
//!
//! The library is the API; the CLI lives in `xtask`.

pub mod cluster;
pub mod console;
pub mod counters;
pub mod fabric;
pub mod host_priority;
pub mod interconnect;
pub mod models;
#[cfg(feature = "mpi")]
pub mod mpi_link;
pub mod node;
pub mod platform;
pub mod qemu;
pub mod qmp;
pub mod r5_wake;
pub mod ranks;
pub mod shm;
pub mod signal;
pub mod trace;
pub mod transport;

pub use cluster::{Cluster, ClusterError, ClusterSpec};
pub use console::{Decoder, Level, Line};
pub use interconnect::LinkConfig;
pub use node::{Event, Node, NodeSpec, Source};
