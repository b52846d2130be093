//! System block driver.

pub mod regs;

use crate::mmio::Mmio;
use regs::{COORD, IRQ, NODE_WORDS, RUN_DONE, SysblockRegisters};
use tock_registers::LocalRegisterCopy;
use tock_registers::interfaces::{Readable, Writeable};

/// A set of nodes, as the NODES_DONE and NODES_ALIVE bitmaps hold them (node `n` is bit `n`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeSet(pub u128);

impl NodeSet {
    /// Nodes `0..count`.
    pub fn first(count: u16) -> Self {
        Self(if count >= 128 { u128::MAX } else { (1u128 << count) - 1 })
    }

    /// Whether `node` is in the set.
    pub fn contains(self, node: u16) -> bool {
        node < 128 && self.0 & (1 << node) != 0
    }

    /// The set with `node` added.
    pub fn with(self, node: u16) -> Self {
        if node < 128 { Self(self.0 | 1 << node) } else { self }
    }

    /// The nodes of `self` that are not in `other`.
    pub fn without(self, other: NodeSet) -> Self {
        Self(self.0 & !other.0)
    }

    /// Whether no node is in the set.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The nodes in the set, in increasing order.
    pub fn iter(self) -> impl Iterator<Item = u16> {
        (0..128u16).filter(move |&n| self.contains(n))
    }

    /// From the four 32-bit register words.
    pub fn from_words(words: [u32; NODE_WORDS]) -> Self {
        Self(words.iter().rev().fold(0u128, |acc, &w| acc << 32 | u128::from(w)))
    }

    /// As the four 32-bit register words.
    pub fn words(self) -> [u32; NODE_WORDS] {
        core::array::from_fn(|i| (self.0 >> (32 * i)) as u32)
    }
}

/// The interrupt bits that were pending (and are now acknowledged).
pub type Pending = LocalRegisterCopy<u32, IRQ::Register>;

/// A node's place in the system.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Coordinates {
    /// Position along X.
    pub x: u8,
    /// Position along Y.
    pub y: u8,
    /// Position along Z.
    pub z: u8,
}

/// Who a node is, as its system block says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Identity {
    /// This node's id.
    pub node: u16,
    /// Where it sits in the interconnect.
    pub coordinates: Coordinates,
    /// Nodes in the system.
    pub node_count: u16,
}

/// What can be wrong with a system block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SysblockError {
    /// The block does not identify itself: wrong bitstream, or nothing at the address.
    BadId(u32),
}

/// The system block: one owner, every change through `&mut self`.
pub struct Sysblock {
    regs: Mmio<SysblockRegisters>,
}

impl Sysblock {
    /// # Safety
    ///
    /// `base` must be the mapped (or forwarded) system block, used through this handle only.
    pub const unsafe fn new(base: usize) -> Self {
        // SAFETY: forwarded from the caller.
        Self { regs: unsafe { Mmio::new(base) } }
    }

    /// Who this node is; an error if the block does not identify itself.
    pub fn identity(&self) -> Result<Identity, SysblockError> {
        let id = self.regs.id.get();
        if id != regs::ID_VALUE {
            return Err(SysblockError::BadId(id));
        }
        let coord = self.regs.coord.extract();
        Ok(Identity {
            node: self.regs.node_id.get() as u16,
            coordinates: Coordinates {
                x: coord.read(COORD::X) as u8,
                y: coord.read(COORD::Y) as u8,
                z: coord.read(COORD::Z) as u8,
            },
            node_count: self.regs.node_count.get() as u16,
        })
    }

    /// SCRATCH, a register for tests.
    pub fn scratch(&self) -> u32 {
        self.regs.scratch.get()
    }

    /// Writes SCRATCH.
    pub fn set_scratch(&mut self, value: u32) {
        self.regs.scratch.set(value);
    }

    /// SCRATCH64, read with one 64-bit access.
    pub fn scratch64(&self) -> u64 {
        self.regs.scratch64.get()
    }

    /// SCRATCH64, written with one 64-bit access.
    pub fn set_scratch64(&mut self, value: u64) {
        self.regs.scratch64.set(value);
    }

    /// Lets the doorbell raise the interrupt line, keeping the other enables.
    pub fn enable_doorbell_irq(&mut self) {
        self.regs.irq_enable.set(self.regs.irq_enable.get() | IRQ::DOORBELL::SET.value);
    }

    /// Rings the self-test doorbell: raises the block's interrupt line.
    pub fn ring_doorbell(&mut self) {
        self.regs.irq_raise.write(IRQ::DOORBELL::SET);
    }

    /// Says this node's own work is done (`RUN_DONE`): peers see it in NODES_DONE.
    pub fn report_done(&mut self) {
        self.regs.run_done.write(RUN_DONE::DONE::SET);
    }

    /// NODES_DONE: the nodes that reported their run done.
    pub fn nodes_done(&self) -> NodeSet {
        NodeSet::from_words(core::array::from_fn(|i| self.regs.nodes_done[i].get()))
    }

    /// NODES_ALIVE: the nodes this one can reach.
    pub fn nodes_alive(&self) -> NodeSet {
        NodeSet::from_words(core::array::from_fn(|i| self.regs.nodes_alive[i].get()))
    }

    /// Enables the cluster interrupts (`ALL_DONE`, `PEER_LOST`) besides the doorbell.
    pub fn enable_cluster_irqs(&mut self) {
        self.regs.irq_enable.write(IRQ::DOORBELL::SET + IRQ::ALL_DONE::SET + IRQ::PEER_LOST::SET);
    }

    /// Acknowledges every pending interrupt bit and returns them.
    pub fn take_pending(&mut self) -> Pending {
        let pending = self.regs.irq_status.extract();
        if pending.get() != 0 {
            self.regs.irq_status.set(pending.get());
        }
        pending
    }

    /// Acknowledges the doorbell; returns whether it was pending.
    pub fn take_doorbell(&mut self) -> bool {
        let pending = self.regs.irq_status.is_set(IRQ::DOORBELL);
        if pending {
            self.regs.irq_status.write(IRQ::DOORBELL::SET);
        }
        pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_sets_round_trip_through_the_register_words() {
        let set = NodeSet::default().with(0).with(31).with(32).with(111);
        assert_eq!(set.words(), [0x8000_0001, 1, 0, 1 << 15]);
        assert_eq!(NodeSet::from_words(set.words()), set);
        assert_eq!(set.iter().collect::<std::vec::Vec<_>>(), [0, 31, 32, 111]);
        assert!(set.contains(111) && !set.contains(112) && !set.contains(500));
        assert_eq!(NodeSet::first(4), NodeSet(0b1111));
        assert_eq!(NodeSet::first(4).without(set), NodeSet(0b1110));
        assert_eq!(NodeSet::first(200), NodeSet(u128::MAX));
        assert!(NodeSet::first(0).is_empty());
    }
}
