//! A node's DDR as the SMMU's table walker reads it: through the fabric, so that a walk after
//! the node's QEMU has gone reads nothing (an external fault) instead of a stale mapping.

use crate::fabric::Fabric;
use crate::models::smmu::GuestMemory;
use std::sync::Arc;

pub(super) struct NodeMemory {
    pub fabric: Arc<Fabric>,
    pub node: usize,
}

impl GuestMemory for NodeMemory {
    fn read_u64(&self, pa: u64) -> Option<u64> {
        self.fabric.ddr(self.node)?.read_u64(pa)
    }
}
