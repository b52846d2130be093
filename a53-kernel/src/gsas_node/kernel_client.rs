//! The kernel's own request interface on the hardware (`docs/hw/gsas-packets.md`,
//! "Notifications"): `gsas::node::client` over the PIF/MIF pair domain 0 holds, counting into the
//! statics that tests and benchmarks read.

use crate::gsas::node::client::{self, Tally};
use core::sync::atomic::AtomicU64;
use hal::packetizer::driver::Pif;
use hal::vmbox::driver::{MifIrq, MifReader};

pub use crate::gsas::node::client::SendError;

/// Kernel notifications the target's service accepted, and refused (its status reply).
pub static DELIVERED: AtomicU64 = AtomicU64::new(0);
pub static REFUSED: AtomicU64 = AtomicU64::new(0);

/// The kernel's client over its own PIF and the reading half of its MIF.
pub type KernelClient = client::KernelClient<'static, Pif, MifReader>;

/// The client of pair `index`, granted to the kernel (domain 0) in the PIDT.
pub fn new(index: u8, pif: Pif, replies: MifReader) -> KernelClient {
    KernelClient::new(index, pif, replies, Tally { delivered: &DELIVERED, refused: &REFUSED })
}

/// Re-arms the reply MIF's interrupt for the next reply (one packet: two words).
pub fn arm(irq: &mut MifIrq) {
    irq.arm(2);
}
