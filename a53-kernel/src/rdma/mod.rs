//! User-level RDMA, the kernel's logic (`docs/hw/pldma.md`, "What the kernel and the user library
//! do"): how a fault the engine reports is answered. Plain logic, host-tested; `rdma_node` runs
//! it on the hardware (the engine's pages, the SMMU, the R5).

pub mod answer;
