//! The global shared address space, kernel side (seed 000, sections 2, 3.2 and 5): the atomic
//! service and its software MMU, the mailbox notification service, and the interface/PID
//! bookkeeping of the atomicity driver. All logic, no register access: the kernel's drivers feed
//! them (`docs/hw/gsas-packets.md`).

#[cfg(any(test, feature = "fakes"))]
pub mod fakes;
pub mod interfaces;
pub mod mailbox;
pub mod node;
pub mod service;
pub mod softmmu;
