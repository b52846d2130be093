//! User-level RDMA, the kernel's logic (and Active Access's IUIDs and marked pages, `active`) (`docs/hw/pldma.md`, "What the kernel and the user library
//! do"): how a fault the engine reports is answered (`answer`), and what the engine's and the
//! SMMU's interrupts do (`front`: the fault entries taken and answered, the causes cleared and
//! counted, the completion queues' holders woken, the stalled accesses resumed). Plain logic over
//! traits, host-tested; `rdma_node` implements the traits on the hardware (the engine's pages,
//! the SMMU, the R5, the process table) and registers the handlers.

pub mod active;
pub mod answer;
pub mod front;
