//! Model of the PLDMA engine (`docs/hw/pldma.md`): the register block, served from forwarded
//! accesses with the `hal::pldma` layouts, and the engine itself, which runs on a thread of its
//! own per node: it takes the R5's descriptors from DDR, reads sources and writes destinations
//! through the node's SMMU ([`IoTranslate`], stream = PD), sends 256 B packets over the
//! interconnect as datagrams, and posts events into the R5's ring.
//!
//! - `regs`: register semantics; `fault_fifo`: the receiver fault FIFO;
//! - `sender`: descriptors to packets; `receiver`: packets to memory, ACKs and events;
//! - `engine`: the thread, and what it shares with the register side.

mod active;
mod ctx;
mod engine;
mod fault_fifo;
mod rapf_gate;
mod receiver;
mod regs;
mod sender;
mod shares;

pub use fault_fifo::{FaultFifo, Push};

use super::MmioDevice;
use super::NodeHooksSlot;
use super::iommu::IoTranslate;
use crate::counters::NodeCounters;
use crate::interconnect::{Datagram, channel};
use crate::transport::{Local, Transport};
use engine::{Inbound, Shared};
use hal::pldma::event::TxnRef;
use hal::pldma::packet::{MAX_BYTES, Packet, Route};
use hal::pldma::regs::Counter;
use proto::forward::Status;
use proto::rdma::rings::EngineRings;
use regs::Effect;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;

/// The PLDMA block of one node.
pub struct PldmaDevice {
    shared: Arc<Shared>,
    local: Local,
    transport: Arc<dyn Transport>,
    line: u8,
    thread: Option<JoinHandle<()>>,
}

impl PldmaDevice {
    /// The engine of node `local.node`, translating through `iommu`, driving PL line `line`,
    /// sending its packets through `transport`, and telling its platform through `hooks` when
    /// its line may have changed or its R5 has news. Its thread starts at once; packets reach it
    /// once [`PldmaDevice::receiver`] is installed.
    pub fn new(
        local: Local,
        transport: Arc<dyn Transport>,
        iommu: Arc<dyn IoTranslate>,
        line: u8,
        hooks: NodeHooksSlot,
    ) -> Self {
        let node = local.node;
        let shared = Arc::new(Shared::new(node as u16, transport.nodes() as u16));
        let thread = {
            let (shared, local, transport) = (shared.clone(), local.clone(), transport.clone());
            std::thread::Builder::new()
                .name(format!("node{node} pldma"))
                .spawn(move || engine::run(shared, local, transport, iommu, hooks))
                .expect("a thread for the PLDMA engine")
        };
        Self { shared, local, transport, line, thread: Some(thread) }
    }

    /// What the interconnect calls with this node's datagrams.
    pub fn receiver(&self) -> crate::interconnect::Receiver {
        let shared = self.shared.clone();
        let counters = self.local.counters.clone();
        Box::new(move |d: Datagram| {
            if d.channel == channel::PLDMA && !shared.deliver(d.src as u16, d.payload) {
                // Dropped at the door (engine off or buffers full), as a link would.
                counters.pldma(Counter::PacketsReceived).fetch_add(1, Ordering::Relaxed);
            }
        })
    }

    fn rings_fit(&self, pa: u64) -> bool {
        let end = pa.checked_add(size_of::<EngineRings>() as u64);
        match (self.local.ddr(), end) {
            (Some(ddr), Some(end)) => end <= ddr.len() as u64,
            _ => false,
        }
    }

    fn apply(&self, effect: Effect) {
        let node = self.shared.node;
        match effect {
            Effect::None => return,
            Effect::Kick | Effect::Disabled => self.shared.state().kicked = true,
            Effect::Enabled => {
                let mut st = self.shared.state();
                if let Some(r) = self.local.ddr().and_then(|ddr| engine::rings(ddr, st.regs.rings())) {
                    // SAFETY: the engine's consumer; the engine thread only consumes under this
                    // lock, which is held.
                    unsafe { r.desc.consumer() }.discard_pending();
                    r.engine_idle.store(0, Ordering::SeqCst);
                }
                st.kicked = true;
            }
            Effect::LogEnabled(log) => {
                if let Some(ddr) = self.local.ddr() {
                    let _ = ddr.write(log.header + hal::pldma::active::header::PRODUCED, 4, 0);
                    let _ = ddr.write(log.header + hal::pldma::active::header::FULL, 4, 0);
                }
                return;
            }
            Effect::PdsDisabled(pds) => self.shared.state().dropped_pds |= pds,
            Effect::Doorbell { pd, value } => {
                self.local.counters.pldma(Counter::Doorbells).fetch_add(1, Ordering::Relaxed);
                self.shared.state().inbox.push_back(Inbound::Doorbell { pd, value });
            }
            Effect::Rapf { pd, request } => {
                let packet = Packet::Rapf {
                    route: Route { src: node, owner: request.node },
                    txn: TxnRef { pd, tid: request.tid, seq: request.seq },
                    claimed: request.claimed_pd,
                    action: request.action,
                };
                let mut bytes = [0u8; MAX_BYTES];
                let len = packet.encode(&mut bytes);
                self.local.counters.pldma(Counter::PacketsSent).fetch_add(1, Ordering::Relaxed);
                self.transport.send_datagrams(vec![Datagram {
                    src: self.local.node,
                    dst: usize::from(request.node),
                    channel: channel::PLDMA,
                    payload: bytes[..len].to_vec(),
                }]);
                return;
            }
        }
        self.shared.notify();
    }
}

impl MmioDevice for PldmaDevice {
    fn name(&self) -> &'static str {
        "pldma"
    }

    fn read(&mut self, offset: u64, size: u32) -> Result<u128, Status> {
        let counters = &self.local.counters;
        let mut st = self.shared.state();
        let engine::State { regs, fifo, .. } = &mut *st;
        Ok(regs.read(fifo, counters, offset, size as usize)?)
    }

    fn write(&mut self, offset: u64, size: u32, value: u128) -> Result<(), Status> {
        let (effect, refused) = {
            let mut st = self.shared.state();
            let before = st.regs.gate.refused_total();
            let effect = st.regs.write(offset, size as usize, value, |pa| self.rings_fit(pa))?;
            (effect, st.regs.gate.refused_total() != before)
        };
        if refused {
            NodeCounters::bump(&self.local.counters.rapf_refused);
        }
        self.apply(effect);
        Ok(())
    }

    fn irq_lines(&self) -> u16 {
        let st = self.shared.state();
        if st.regs.irq(&st.fifo) { 1 << self.line } else { 0 }
    }
}

impl Drop for PldmaDevice {
    fn drop(&mut self) {
        self.shared.stop();
        // The engine thread itself may drop the last platform (it briefly holds one to update
        // the interrupt lines); it then ends on its own.
        if let Some(t) = self.thread.take()
            && t.thread().id() != std::thread::current().id()
        {
            let _ = t.join();
        }
    }
}
