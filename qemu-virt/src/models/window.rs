//! The global address window (`board::pl`, `docs/hw/global-address.md`): an uncached load or
//! store at `GLOBAL_WINDOW_BASE + n * NODE_SLICE + offset` reaches byte `offset` of node n's
//! DDR, through the interconnect (Unimem remote load/store; no software on the target node).

use super::MmioDevice;
use crate::counters::NodeCounters;
use crate::transport::{Local, Transport};
use board::pl::{GLOBAL_WINDOW_BASE, window_target};
use proto::forward::Status;
use std::sync::Arc;

pub struct Window {
    local: Local,
    transport: Arc<dyn Transport>,
}

impl Window {
    /// The window of node `local.node`, whose accesses `transport` carries.
    pub fn new(local: Local, transport: Arc<dyn Transport>) -> Self {
        Self { local, transport }
    }

    /// Resolves a window offset to the target node and the byte in its DDR, and counts the
    /// access.
    fn target(&self, offset: u64, size: u32) -> Result<(usize, u64), Status> {
        let (node, at) = window_target(GLOBAL_WINDOW_BASE + offset).ok_or(Status::Unmapped)?;
        let node = usize::from(node);
        if node >= self.transport.nodes() {
            return Err(Status::Unmapped);
        }
        // An access may not run off the end of the node's slice into the next node.
        if window_target(GLOBAL_WINDOW_BASE + offset + u64::from(size) - 1).map(|(n, _)| usize::from(n)) != Some(node) {
            return Err(Status::Rejected);
        }
        NodeCounters::bump(&self.local.counters.window_accesses);
        Ok((node, at))
    }
}

impl MmioDevice for Window {
    fn name(&self) -> &'static str {
        "global window"
    }

    fn read(&mut self, offset: u64, size: u32) -> Result<u128, Status> {
        let (node, at) = self.target(offset, size)?;
        self.transport.remote_load(self.local.node, node, at, size)
    }

    fn write(&mut self, offset: u64, size: u32, value: u128) -> Result<(), Status> {
        let (node, at) = self.target(offset, size)?;
        self.transport.remote_store(self.local.node, node, at, size, value)
    }
}
