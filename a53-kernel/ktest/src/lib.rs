//! The kernel's on-target tests, run by the `a53-ktest` image (`src/main.rs`), and the test kit
//! they use (`testkit`).
//!
//! A crate of its own so that the kernel's normal build does not carry the tests, nor depend on
//! the user library (the tests take the argument packings of the programs they run from
//! `unimem_user::args`). The suites use the kernel through its public API only; the test kit is
//! plain logic and is tested on the host.
//!
//! Boot arguments: `cluster` runs the multi-node tests first (every node of the cluster runs
//! this image; `cluster-filter=TEXT` selects among them, `cluster-only` skips the single-node
//! tests), `filter=TEXT` runs the tests whose `suite::name` contains TEXT (repeated:
//! all of them), `list`
//! lists them, `expect-el=N` makes the boot test check the entry exception level, and
//! `bench=NAME` runs a benchmark instead of the tests;
//! `crash=panic|fault` ends the image in a deliberate panic or unhandled fault, and
//! `crash=r5-fault` makes the R5 take a data abort (the runner checks the reports).
#![cfg_attr(not(test), no_std)]

pub mod testkit;

#[cfg(target_arch = "aarch64")]
extern crate alloc;

#[cfg(target_arch = "aarch64")]
mod active;
#[cfg(target_arch = "aarch64")]
mod arch;
#[cfg(target_arch = "aarch64")]
mod bench;
#[cfg(target_arch = "aarch64")]
mod boot_checks;
#[cfg(target_arch = "aarch64")]
mod cluster;
#[cfg(target_arch = "aarch64")]
mod cluster_support;
#[cfg(target_arch = "aarch64")]
mod exceptions;
#[cfg(target_arch = "aarch64")]
mod gsas;
#[cfg(target_arch = "aarch64")]
mod heap;
#[cfg(target_arch = "aarch64")]
mod paging;
#[cfg(target_arch = "aarch64")]
mod platform;
#[cfg(target_arch = "aarch64")]
mod process;
#[cfg(target_arch = "aarch64")]
mod rdma;
#[cfg(target_arch = "aarch64")]
mod rpu;
#[cfg(target_arch = "aarch64")]
mod rpu_rdma;
#[cfg(target_arch = "aarch64")]
mod shmem;
#[cfg(target_arch = "aarch64")]
mod smp;
#[cfg(target_arch = "aarch64")]
mod sockets;
#[cfg(target_arch = "aarch64")]
mod suites;
#[cfg(target_arch = "aarch64")]
mod timer;

#[cfg(target_arch = "aarch64")]
use suites::ensure;
#[cfg(target_arch = "aarch64")]
pub use suites::{CLUSTER_TESTS, TESTS, run};
