//! The system block model (`hal::sysblock`, `docs/hw/sysblock.md`).
//!
//! NODES_DONE and NODES_ALIVE are the cluster's state, not the block's: the model reads them
//! from a [`ClusterView`] (the transport) on every access, and derives `ALL_DONE` and `PEER_LOST`
//! from them, so that no event can be missed between two looks.

use super::MmioDevice;
use crate::reg_offset;
use hal::sysblock::regs::{COORD, ID_VALUE, IRQ, NODE_WORDS, RUN_DONE, SysblockRegisters as R, VERSION_VALUE};
use hal::sysblock::{Coordinates, NodeSet};
use proto::forward::Status;
use std::sync::Arc;
use tock_registers::LocalRegisterCopy;

pub use crate::transport::ClusterView;

pub struct Sysblock {
    node: u16,
    coordinates: Coordinates,
    node_count: u16,
    scratch: u32,
    scratch64: u64,
    doorbell: bool,
    irq_enable: LocalRegisterCopy<u32, IRQ::Register>,
    /// Lost nodes whose `PEER_LOST` was cleared.
    lost_acknowledged: NodeSet,
    all_done_acknowledged: bool,
    irq_line: u8,
    cluster: Arc<dyn ClusterView>,
}

impl Sysblock {
    pub fn new(
        node: u16,
        coordinates: Coordinates,
        node_count: u16,
        irq_line: u8,
        cluster: Arc<dyn ClusterView>,
    ) -> Self {
        Self {
            node,
            coordinates,
            node_count,
            scratch: 0,
            scratch64: 0,
            doorbell: false,
            irq_enable: LocalRegisterCopy::new(0),
            lost_acknowledged: NodeSet::default(),
            all_done_acknowledged: false,
            irq_line,
            cluster,
        }
    }

    fn coord(&self) -> u32 {
        let c = self.coordinates;
        (COORD::X.val(u32::from(c.x)) + COORD::Y.val(u32::from(c.y)) + COORD::Z.val(u32::from(c.z))).value
    }

    fn members(&self) -> NodeSet {
        NodeSet::first(self.node_count)
    }

    /// This node always reaches itself (its own block answers).
    fn alive(&self) -> NodeSet {
        self.cluster.alive().with(self.node)
    }

    fn lost(&self) -> NodeSet {
        self.members().without(self.alive())
    }

    fn all_done(&self) -> bool {
        self.members().without(self.cluster.done()).without(self.lost()).is_empty()
    }

    fn irq_status(&self) -> LocalRegisterCopy<u32, IRQ::Register> {
        let mut status = LocalRegisterCopy::new(0);
        if self.doorbell {
            status.modify(IRQ::DOORBELL::SET);
        }
        if self.all_done() && !self.all_done_acknowledged {
            status.modify(IRQ::ALL_DONE::SET);
        }
        if !self.lost().without(self.lost_acknowledged).is_empty() {
            status.modify(IRQ::PEER_LOST::SET);
        }
        status
    }

    fn clear(&mut self, bits: LocalRegisterCopy<u32, IRQ::Register>) {
        if bits.is_set(IRQ::DOORBELL) {
            self.doorbell = false;
        }
        if bits.is_set(IRQ::ALL_DONE) && self.all_done() {
            self.all_done_acknowledged = true;
        }
        if bits.is_set(IRQ::PEER_LOST) {
            self.lost_acknowledged = NodeSet(self.lost_acknowledged.0 | self.lost().0);
        }
    }

    fn bitmap_word(offset: u64, base: u64) -> Option<usize> {
        let word = offset.checked_sub(base)? / 4;
        (offset.is_multiple_of(4) && word < NODE_WORDS as u64).then_some(word as usize)
    }
}

impl MmioDevice for Sysblock {
    fn name(&self) -> &'static str {
        "sysblock"
    }

    fn read(&mut self, offset: u64, size: u32) -> Result<u128, Status> {
        let value = match (offset, size) {
            (o, 8) if o == reg_offset!(R, scratch64) => return Ok(u128::from(self.scratch64)),
            (_, 4) => match offset {
                o if o == reg_offset!(R, id) => ID_VALUE,
                o if o == reg_offset!(R, version) => VERSION_VALUE,
                o if o == reg_offset!(R, node_id) => u32::from(self.node),
                o if o == reg_offset!(R, coord) => self.coord(),
                o if o == reg_offset!(R, node_count) => u32::from(self.node_count),
                o if o == reg_offset!(R, scratch) => self.scratch,
                o if o == reg_offset!(R, irq_status) => self.irq_status().get(),
                o if o == reg_offset!(R, irq_enable) => self.irq_enable.get(),
                o if let Some(w) = Self::bitmap_word(o, reg_offset!(R, nodes_done)) => self.cluster.done().words()[w],
                o if let Some(w) = Self::bitmap_word(o, reg_offset!(R, nodes_alive)) => self.alive().words()[w],
                // Write-only and reserved registers read as zero.
                _ => 0,
            },
            _ => return Err(Status::Rejected),
        };
        Ok(u128::from(value))
    }

    fn write(&mut self, offset: u64, size: u32, value: u128) -> Result<(), Status> {
        match (offset, size) {
            (o, 8) if o == reg_offset!(R, scratch64) => self.scratch64 = value as u64,
            (_, 4) => {
                let v = value as u32;
                match offset {
                    o if o == reg_offset!(R, scratch) => self.scratch = v,
                    o if o == reg_offset!(R, irq_status) => self.clear(LocalRegisterCopy::new(v)),
                    o if o == reg_offset!(R, irq_enable) => {
                        let known = IRQ::DOORBELL::SET + IRQ::ALL_DONE::SET + IRQ::PEER_LOST::SET;
                        self.irq_enable.set(v & known.value)
                    }
                    o if o == reg_offset!(R, irq_raise) => self.doorbell |= v & IRQ::DOORBELL::SET.value != 0,
                    o if o == reg_offset!(R, run_done)
                        && LocalRegisterCopy::<u32, RUN_DONE::Register>::new(v).is_set(RUN_DONE::DONE) =>
                    {
                        self.cluster.report_done(self.node)
                    }
                    // Read-only and reserved registers ignore writes.
                    _ => {}
                }
            }
            _ => return Err(Status::Rejected),
        }
        Ok(())
    }

    fn irq_lines(&self) -> u16 {
        if self.irq_status().get() & self.irq_enable.get() != 0 { 1 << self.irq_line } else { 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::sync::Mutex;

    /// Four nodes, all alive, none done.
    #[derive(Default)]
    struct FakeCluster {
        done: Mutex<NodeSet>,
        dead: Mutex<NodeSet>,
    }

    impl ClusterView for FakeCluster {
        fn done(&self) -> NodeSet {
            *self.done.lock().unwrap()
        }
        fn alive(&self) -> NodeSet {
            NodeSet::first(4).without(*self.dead.lock().unwrap())
        }
        fn report_done(&self, node: u16) {
            let mut done = self.done.lock().unwrap();
            *done = done.with(node);
        }
    }

    fn block() -> Sysblock {
        Sysblock::new(3, Coordinates { x: 3, y: 0, z: 0 }, 4, 0, Arc::new(FakeCluster::default()))
    }

    fn block_in(cluster: &Arc<FakeCluster>, node: u16) -> Sysblock {
        Sysblock::new(node, Coordinates { x: node as u8, y: 0, z: 0 }, 4, 0, cluster.clone())
    }

    const ALL_DONE: u128 = 1 << 1;
    const PEER_LOST: u128 = 1 << 2;

    #[test]
    fn identity_registers() {
        let mut b = block();
        assert_eq!(b.read(reg_offset!(R, id), 4), Ok(u128::from(ID_VALUE)));
        assert_eq!(b.read(reg_offset!(R, node_id), 4), Ok(3));
        assert_eq!(b.read(reg_offset!(R, coord), 4), Ok(3));
        assert_eq!(b.read(reg_offset!(R, node_count), 4), Ok(4));
        assert_eq!(b.write(reg_offset!(R, node_id), 4, 9), Ok(()));
        assert_eq!(b.read(reg_offset!(R, node_id), 4), Ok(3), "read-only");
    }

    #[test]
    fn scratch_registers_keep_what_is_written() {
        let mut b = block();
        b.write(reg_offset!(R, scratch), 4, 0xdead_beef).unwrap();
        assert_eq!(b.read(reg_offset!(R, scratch), 4), Ok(0xdead_beef));
        b.write(reg_offset!(R, scratch64), 8, 0x0123_4567_89ab_cdef).unwrap();
        assert_eq!(b.read(reg_offset!(R, scratch64), 8), Ok(0x0123_4567_89ab_cdef));
        assert_eq!(b.read(reg_offset!(R, scratch), 2), Err(Status::Rejected));
        assert_eq!(b.write(reg_offset!(R, scratch), 16, 0), Err(Status::Rejected));
    }

    #[test]
    fn doorbell_raises_the_line_until_cleared() {
        let mut b = block();
        b.write(reg_offset!(R, irq_raise), 4, 1).unwrap();
        assert_eq!(b.irq_lines(), 0, "not enabled");
        b.write(reg_offset!(R, irq_enable), 4, 1).unwrap();
        assert_eq!(b.irq_lines(), 1);
        assert_eq!(b.read(reg_offset!(R, irq_status), 4), Ok(1));
        b.write(reg_offset!(R, irq_status), 4, 1).unwrap();
        assert_eq!(b.irq_lines(), 0, "write 1 to clear");
    }

    #[test]
    fn run_done_reaches_every_block_and_all_done_rises_once_everyone_is_done() {
        let cluster = Arc::new(FakeCluster::default());
        let mut blocks: Vec<_> = (0..4).map(|n| block_in(&cluster, n)).collect();
        blocks[1].write(reg_offset!(R, irq_enable), 4, ALL_DONE).unwrap();
        for n in 0..4 {
            assert_eq!(blocks[1].irq_lines(), 0, "not everyone is done yet");
            blocks[n].write(reg_offset!(R, run_done), 4, 1).unwrap();
            assert_eq!(blocks[0].read(reg_offset!(R, nodes_done), 4), Ok((1u128 << (n + 1)) - 1));
        }
        assert_eq!(blocks[1].irq_lines(), 1);
        assert_eq!(blocks[1].read(reg_offset!(R, irq_status), 4), Ok(ALL_DONE));
        blocks[1].write(reg_offset!(R, irq_status), 4, ALL_DONE).unwrap();
        assert_eq!(blocks[1].irq_lines(), 0, "cleared, and it does not rise again");
        assert_eq!(blocks[2].read(reg_offset!(R, irq_status), 4), Ok(ALL_DONE), "each block clears its own");
    }

    #[test]
    fn a_lost_node_raises_peer_lost_once_and_counts_as_done() {
        let cluster = Arc::new(FakeCluster::default());
        let mut b = block_in(&cluster, 0);
        b.write(reg_offset!(R, irq_enable), 4, PEER_LOST | ALL_DONE).unwrap();
        assert_eq!(b.read(reg_offset!(R, nodes_alive), 4), Ok(0b1111));
        *cluster.dead.lock().unwrap() = NodeSet(0b0100);
        assert_eq!(b.read(reg_offset!(R, nodes_alive), 4), Ok(0b1011));
        assert_eq!(b.read(reg_offset!(R, irq_status), 4), Ok(PEER_LOST));
        b.write(reg_offset!(R, irq_status), 4, PEER_LOST).unwrap();
        assert_eq!(b.irq_lines(), 0);
        *cluster.dead.lock().unwrap() = NodeSet(0b0110);
        assert_eq!(b.read(reg_offset!(R, irq_status), 4), Ok(PEER_LOST), "a second loss rises again");
        b.write(reg_offset!(R, irq_status), 4, PEER_LOST).unwrap();
        for n in [0, 3] {
            cluster.report_done(n);
        }
        assert_eq!(b.read(reg_offset!(R, irq_status), 4), Ok(ALL_DONE), "lost nodes need not report");
    }

    #[test]
    fn bitmaps_are_read_only_and_take_32_bit_accesses_only() {
        let cluster = Arc::new(FakeCluster::default());
        let mut b = block_in(&cluster, 0);
        b.write(reg_offset!(R, nodes_alive), 4, 0).unwrap();
        assert_eq!(b.read(reg_offset!(R, nodes_alive), 4), Ok(0b1111));
        assert_eq!(b.read(reg_offset!(R, nodes_alive) + 4, 4), Ok(0));
        assert_eq!(b.read(reg_offset!(R, nodes_done), 8), Err(Status::Rejected));
        b.write(reg_offset!(R, run_done), 4, 0).unwrap();
        assert_eq!(cluster.done(), NodeSet::default(), "bit 0 clear: not done");
        b.write(reg_offset!(R, irq_raise), 4, ALL_DONE | PEER_LOST).unwrap();
        assert_eq!(b.read(reg_offset!(R, irq_status), 4), Ok(0), "IRQ_RAISE only rings the doorbell");
    }
}
