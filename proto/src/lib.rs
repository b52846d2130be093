//! The protocols and ABIs between the parts of the Unimem stack.
//!
//! `hal` describes hardware blocks and drives them; this crate describes what the software on
//! either side of a boundary agrees on, once, for both sides and for the `qemu-virt` models:
//!
//! - [`syscall`]: the user/kernel ABI (`docs/hw/syscalls.md`);
//! - [`gsas`]: the global shared address space's packets and the atomic service's static checks,
//!   run by the requesting library and by the service alike (`docs/hw/gsas-packets.md`);
//! - [`ipc`]: the A53/R5 request and reply rings (`docs/hw/ipc.md`);
//! - [`r5_sleep`]: how the R5 sleeps and how the A53 and the engine wake it without losing a
//!   wake-up (`docs/hw/ipc.md`, "Waking the R5");
//! - [`trace_ring`]: the R5's defmt trace ring that the host drains (`docs/hw/ipc.md`);
//! - [`forward`]: the slots through which a trapped access reaches the emulated PL
//!   (`docs/hw/forwarding.md`). Shared memory, not a register block: guest and host exchange
//!   requests in it, so it is a protocol like the rings;
//! - [`boot_args`]: what the loader hands the kernel (`docs/hw/boot-args.md`);
//! - [`store`]: the program store, the user programs the loader places beside the kernel and
//!   the kernel finds by name (`docs/hw/program-store.md`); [`checksum`] is the two blocks'
//!   checksum;
//! - [`rand`]: the deterministic generator the fuzzers on both sides of these formats share;
//! - [`rdma`]: user-level RDMA's queues (process and R5), the engine's rings (R5 and engine), and
//!   the RDMA requests of the A53/R5 ring (`docs/hw/pldma.md`).
//!
//! Packet layouts that the hardware itself defines (the packetizer's 256-bit packet, PID
//! stamping) stay in `hal::packetizer`; this crate builds on them.
#![cfg_attr(not(test), no_std)]

pub mod boot_args;
pub mod checksum;
pub mod forward;
pub mod gsas;
pub mod ipc;
pub mod r5_sleep;
pub mod rand;
pub mod rdma;
pub mod socket;
pub mod store;
pub mod syscall;
pub mod trace_ring;
