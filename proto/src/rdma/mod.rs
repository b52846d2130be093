//! User-level RDMA in memory (`docs/hw/pldma.md`): the per-PD work and completion queues that a
//! process and the R5 share, the rings the R5 and the PLDMA engine share, and the RDMA requests
//! of the A53/R5 ring. The engine's register block, its entry formats (descriptors, events,
//! packets, fault entries) and its drivers are hardware, in `hal::pldma`.

pub mod domain;
pub mod ipc;
pub mod queue;
pub mod rings;

#[cfg(test)]
mod tests;
