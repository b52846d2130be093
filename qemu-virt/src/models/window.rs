//! The global address window (`board::pl`, `docs/hw/global-address.md`): an uncached load or
//! store at `GLOBAL_WINDOW_BASE + n * NODE_SLICE + offset` reaches byte `offset` of node `n`'s
//! DDR, through the interconnect (Unimem remote load/store; no software on the target node).

use super::MmioDevice;
use crate::counters::NodeCounters;
use crate::fabric::Fabric;
use crate::interconnect::channel;
use board::pl::{GLOBAL_WINDOW_BASE, window_target};
use proto::forward::Status;
use std::sync::Arc;

pub struct Window {
    node: usize,
    fabric: Arc<Fabric>,
}

impl Window {
    pub fn new(node: usize, fabric: Arc<Fabric>) -> Self {
        Self { node, fabric }
    }

    /// Resolves a window offset to the target node and the byte in its DDR, and crosses the
    /// links: a load waits for its data to come back; a store is posted (Unimem remote stores
    /// are: the CPU goes on once the store has left), so it does not wait the round trip.
    fn target(&self, offset: u64, size: u32, store: bool) -> Result<(usize, u64), Status> {
        let (node, at) = window_target(GLOBAL_WINDOW_BASE + offset).ok_or(Status::Unmapped)?;
        let node = usize::from(node);
        if node >= self.fabric.nodes() {
            return Err(Status::Unmapped);
        }
        // An access may not run off the end of the node's slice into the next node.
        if window_target(GLOBAL_WINDOW_BASE + offset + u64::from(size) - 1).map(|(n, _)| usize::from(n)) != Some(node) {
            return Err(Status::Rejected);
        }
        NodeCounters::bump(&self.fabric.counters[self.node].window_accesses);
        let net = &self.fabric.interconnect;
        let lost = if store { net.transact_posted(self.node, node) } else { net.transact(self.node, node) };
        if let Some(t) = &self.fabric.trace {
            t.packet(
                self.node,
                node,
                channel::WINDOW,
                size as usize,
                if lost > 0 { "window access (retried)" } else { "window access" },
            );
        }
        Ok((node, at))
    }
}

impl MmioDevice for Window {
    fn name(&self) -> &'static str {
        "global window"
    }

    fn read(&mut self, offset: u64, size: u32) -> Result<u128, Status> {
        let (node, at) = self.target(offset, size, false)?;
        let ddr = self.fabric.ddr(node).ok_or(Status::DeviceError)?;
        ddr.read(at, size).ok_or(Status::Unmapped)
    }

    fn write(&mut self, offset: u64, size: u32, value: u128) -> Result<(), Status> {
        let (node, at) = self.target(offset, size, true)?;
        let ddr = self.fabric.ddr(node).ok_or(Status::DeviceError)?;
        ddr.write(at, size, value).ok_or(Status::Unmapped)
    }
}
