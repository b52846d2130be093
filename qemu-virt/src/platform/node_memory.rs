//! A node's DDR as the SMMU's table walker reads it: the node's own memory, and only while the
//! node's QEMU runs, so that a walk after it has gone reads nothing (an external fault) instead
//! of a stale mapping.

use crate::models::smmu::GuestMemory;
use crate::transport::Local;

pub(super) struct NodeMemory(pub Local);

impl GuestMemory for NodeMemory {
    fn read_u64(&self, pa: u64) -> Option<u64> {
        self.0.ddr()?.read_u64(pa)
    }
}
