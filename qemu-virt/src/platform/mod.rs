//! One node's emulated PL: the devices at their physical addresses, the server that answers
//! the node's forwarded accesses, and the wire that carries its PL interrupt lines
//! (`docs/hw/forwarding.md`).

mod address_map;
mod irq_wire;
mod looker;
mod node_memory;
mod routing;

pub use address_map::{AddressMap, MapError};
pub use looker::{Looker, Nudge};

use crate::counters::NodeCounters;
use crate::models::devices::{PacketizerDevice, VmboxDevice};
use crate::models::iommu::IoTranslate;
use crate::models::ipi::IpiModel;
use crate::models::packetizer::PacketizerModel;
use crate::models::pldma::PldmaDevice;
use crate::models::smmu::{Smmu500Model, SmmuDevice};
use crate::models::vmbox::VmboxModel;
use crate::models::{NodeHooks, sysblock::Sysblock, window::Window};
use crate::r5_wake::{Cause, R5Wake};
use crate::trace::AccessRecord;
use crate::transport::{Local, Transport};
use board::Board as _;
use board::pl;
use irq_wire::IrqWire;
use node_memory::NodeMemory;
use proto::forward::{Access, Failure, Request, Slot, Slots, Status, serve_posted};
use std::io::Read;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::thread::JoinHandle;
use std::time::Instant;

type QemuBoard = board::zcu102_qemu::Zcu102Qemu;

pub struct Platform {
    map: AddressMap,
    /// Also in `map`; kept typed so that the transport can deliver packets to it (`Endpoint::packet`).
    vmbox: Arc<Mutex<VmboxDevice>>,
    /// Also in `map`; bus masters of the PL (the PLDMA engine) translate through it.
    smmu: Arc<Smmu500Model>,
    /// Bit n: this node's packetizer reached node n's vmbox since the last access finished, so
    /// node n's PL lines may have changed (set by the packetizer's sink, `routing`).
    touched: Arc<AtomicU64>,
    /// The PL line levels last sampled; its lock orders the samples (see `update_irqs`).
    irq_levels: Mutex<u16>,
    irq_wire: IrqWire,
    /// The node's own DDR, counters and trace.
    local: Local,
    /// Everything beyond the node.
    transport: Arc<dyn Transport>,
    /// Where datagrams for this node go: its PLDMA engine (`routing`, `Endpoint::datagram`).
    pldma_inbox: crate::interconnect::Receiver,
    /// The node's R5 wake-up line, once its QEMU runs with an R5 (shared with the IPI model).
    r5: Arc<OnceLock<Arc<R5Wake>>>,
}

impl Platform {
    /// The standard set of PL blocks of node `local.node`; the PLDMA translates through the
    /// node's SMMU model. Everything beyond the node goes through `transport`, which reaches
    /// this platform as an `Endpoint` once it is told (`Fabric::set_endpoints` in one process).
    pub fn new(local: Local, transport: Arc<dyn Transport>, irq_out: UnixStream) -> Result<Arc<Self>, MapError> {
        Self::build(local, transport, irq_out, None)
    }

    /// The same, with the PLDMA's accesses translated by `iommu` instead of the SMMU model
    /// (tests: a stand-in that faults or stalls where they say).
    pub fn with_iommu(
        local: Local,
        transport: Arc<dyn Transport>,
        irq_out: UnixStream,
        iommu: Arc<dyn IoTranslate>,
    ) -> Result<Arc<Self>, MapError> {
        Self::build(local, transport, irq_out, Some(iommu))
    }

    fn build(
        local: Local,
        transport: Arc<dyn Transport>,
        irq_out: UnixStream,
        pldma_iommu: Option<Arc<dyn IoTranslate>>,
    ) -> Result<Arc<Self>, MapError> {
        let node = local.node;
        let c = transport.coordinates(node);
        let coordinates = hal::sysblock::Coordinates { x: c.x, y: c.y, z: c.z };
        let nodes = transport.nodes() as u16;
        let mut map = AddressMap::new();
        map.insert(
            pl::SYSBLOCK_BASE,
            hal::sysblock::regs::WINDOW_SIZE,
            Sysblock::new(node as u16, coordinates, nodes, pl::irq_line::SYSBLOCK, transport.clone()),
        )?;
        let touched = Arc::new(AtomicU64::new(0));
        let sink = routing::sink(node, transport.clone(), touched.clone());
        map.insert(
            pl::PACKETIZER_BASE,
            pl::PACKETIZER_SIZE,
            PacketizerDevice::new(PacketizerModel::new(node as u16, sink)),
        )?;
        let depth = hal::vmbox::REFERENCE_DEPTH;
        let vmbox = VmboxModel::new(depth).expect("the reference depth holds a packet");
        let vmbox = Arc::new(Mutex::new(VmboxDevice::new(vmbox, pl::irq_line::VMBOX)));
        map.insert_shared(pl::VMBOX_BASE, pl::VMBOX_SIZE, vmbox.clone())?;
        map.insert(pl::GLOBAL_WINDOW_BASE, pl::GLOBAL_WINDOW_SIZE, Window::new(local.clone(), transport.clone()))?;
        let smmu = Arc::new(Smmu500Model::new(Arc::new(NodeMemory(local.clone()))));
        let smmu_device = SmmuDevice::new(smmu.clone(), pl::irq_line::SMMU_CONTEXT);
        map.insert(QemuBoard::SMMU.base, board::SMMU_SIZE, smmu_device)?;
        let iommu = pldma_iommu.unwrap_or_else(|| smmu.clone());
        let hooks = Arc::new(OnceLock::new());
        let pldma = PldmaDevice::new(local.clone(), transport.clone(), iommu, pl::irq_line::PLDMA, hooks.clone());
        let pldma_inbox = pldma.receiver();
        map.insert(pl::PLDMA_BASE, pl::PLDMA_SIZE, pldma)?;
        let r5 = Arc::new(OnceLock::new());
        map.insert(board::zynqmp::IPI_APU, board::zynqmp::IPI_CHANNEL_SIZE, IpiModel::new(r5.clone()))?;
        let irq_wire = IrqWire::new(local.clone(), irq_out);
        let platform = Arc::new(Self {
            map,
            vmbox,
            smmu,
            touched,
            irq_levels: Mutex::new(0),
            irq_wire,
            local,
            transport,
            pldma_inbox,
            r5,
        });
        let _ = hooks.set(Arc::downgrade(&platform) as Weak<dyn NodeHooks>);
        // A fault found by a bus master's translation (not by a forwarded access, after which
        // the server updates the lines) raises the line at once. Only the wire's own lock is
        // taken, so the translating thread may hold any device lock (`routing`, lock order).
        let weak = Arc::downgrade(&platform);
        platform.smmu.set_irq_notifier(Box::new(move || {
            if let Some(platform) = weak.upgrade() {
                platform.irq_wire.raise(1 << pl::irq_line::SMMU_CONTEXT);
            }
        }));
        Ok(platform)
    }

    /// The node's R5 wake-up line (once, before the node runs).
    pub fn set_r5_wake(&self, wake: Arc<R5Wake>) {
        let _ = self.r5.set(wake);
    }

    /// The node's R5 wake-up line, if the node has an R5.
    pub fn r5_wake(&self) -> Option<&Arc<R5Wake>> {
        self.r5.get()
    }

    pub fn map(&self) -> &AddressMap {
        &self.map
    }

    pub(crate) fn vmbox(&self) -> &Arc<Mutex<VmboxDevice>> {
        &self.vmbox
    }

    /// The node's SMMU, as its PL bus masters see it (`models::iommu::IoTranslate`).
    pub fn smmu(&self) -> &Arc<Smmu500Model> {
        &self.smmu
    }

    /// Serves one forwarded access, or a pair: the second (at `access.second_addr()`) right
    /// after the first, and only if the first succeeded. A packet either sends to another node
    /// may raise that node's PL lines: they are updated before this returns. This node's own
    /// lines are the caller's to update (the server does after every access).
    pub fn access(&self, access: &Access) -> Result<[u128; 2], Failure> {
        self.access_and_lines(access).0
    }

    /// [`access`](Self::access), and the PL lines the accessed devices drive high afterwards.
    fn access_and_lines(&self, access: &Access) -> (Result<[u128; 2], Failure>, u16) {
        let Access { write, size, addr, pair, data } = *access;
        let (first, lines) = self.access_device(write, size, addr, data[0]);
        let first = match first {
            Ok(v) => v,
            Err(status) => return (Err(Failure { status, second: false }), lines),
        };
        if !pair {
            return (Ok([first, 0]), lines);
        }
        let (second, more) = self.access_device(write, size, access.second_addr(), data[1]);
        let result = second.map(|second| [first, second]).map_err(|status| Failure { status, second: true });
        (result, lines | more)
    }

    /// One access of `size` bytes at `addr` as the node's server makes it: the device, then the
    /// interrupt lines (a rise, or after a write the device's own lines still high, sends its
    /// byte).
    pub fn forwarded_one(&self, write: bool, size: u32, addr: u64, data: u128) -> Result<u128, Status> {
        let (result, lines) = self.access_device(write, size, addr, data);
        self.update_irqs(if write { lines } else { 0 });
        result
    }

    /// One access of `size` bytes at `addr`: the value read (0 for a write).
    pub fn access_one(&self, write: bool, size: u32, addr: u64, data: u128) -> Result<u128, Status> {
        self.access_device(write, size, addr, data).0
    }

    /// One access, and the PL lines its device drives high afterwards.
    fn access_device(&self, write: bool, size: u32, addr: u64, data: u128) -> (Result<u128, Status>, u16) {
        let Some((device, offset)) = self.map.lookup(addr, size) else { return (Err(Status::Unmapped), 0) };
        let (result, lines) = {
            let mut device = device.lock().unwrap();
            let result = if write { device.write(offset, size, data).map(|()| 0) } else { device.read(offset, size) };
            (result, device.irq_lines())
        };
        // Only now, with the device (maybe this node's packetizer) released: see `routing`.
        self.update_touched_nodes();
        (result, lines)
    }

    /// `update_irqs` of the other nodes this node's packets reached since the last access.
    fn update_touched_nodes(&self) {
        let mut touched = self.touched.swap(0, Ordering::AcqRel);
        while touched != 0 {
            let node = touched.trailing_zeros() as usize;
            touched &= touched - 1;
            if node != self.local.node {
                self.transport.resample_lines(node);
            }
        }
    }

    /// Sends a byte for every PL line that rose, and for every line of `again` still high: after
    /// a write to the device that drives it, the guest may just have acknowledged one source of
    /// a shared line, and its handler must look again. Extra interrupts are harmless; a lost one
    /// is not. The bytes go out at once if the socket takes them, else in the background
    /// (`irq_wire`): this never waits for the guest.
    ///
    /// Other nodes' packets call this too, concurrently with this node's server: the levels
    /// are sampled under one lock, so the recorded levels are always the latest sample and a
    /// stale sample can never hide a rise.
    pub fn update_irqs(&self, again: u16) {
        let mut recorded = self.irq_levels.lock().unwrap();
        let levels = self.map.irq_levels();
        let rising = levels & !*recorded;
        *recorded = levels;
        self.irq_wire.raise(rising | (levels & again));
    }

    /// Returns once every interrupt byte decided so far has been written to the guest's socket.
    pub fn settle_irqs(&self) {
        self.irq_wire.settle();
    }

    /// Serves the node's forwarded accesses until its QEMU goes away: sleeps until a guest
    /// kicks, serves what is posted, and has the cluster's looker (`looker`) look for the rest
    /// of the burst.
    pub fn spawn_server(self: &Arc<Self>, mut kicks: UnixStream, looker: Nudge) -> JoinHandle<()> {
        let me = self.clone();
        std::thread::spawn(move || {
            crate::host_priority::serve_promptly();
            let Some(ddr) = me.local.ddr() else { return };
            let slots_pa = QemuBoard::FORWARDING.expect("the QEMU board forwards").slots;
            // SAFETY: the slots and flags are atomics; any bit pattern is valid.
            let Some(slots) = (unsafe { ddr.view::<Slots>(slots_pa) }) else { return };
            // A kick only wakes the server, which serves whatever is posted: one read may
            // swallow several kicks.
            let mut kick = [0u8; 64];
            loop {
                match kicks.read(&mut kick) {
                    Ok(0) => return,
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => return,
                }
                serve_posted(slots, |cpu, slot, req| me.serve(cpu, slot, &req));
                looker.nudge();
            }
        })
    }

    /// One forwarded request of `cpu`, start to end: the model, the completion, the counters,
    /// the trace and the interrupt lines.
    pub(crate) fn serve(&self, cpu: usize, slot: &Slot, req: &Request) {
        let access = &req.access;
        let started = Instant::now();
        let started_us = self.local.trace.as_ref().map(|t| t.now_us());
        let (result, lines) = self.access_and_lines(access);
        let model_ns = u32::try_from(started.elapsed().as_nanos()).unwrap_or(u32::MAX);
        slot.complete(req.seq, result, model_ns);
        let counters = &self.local.counters;
        NodeCounters::bump(if access.write { &counters.forwarded_writes } else { &counters.forwarded_reads });
        if result.is_err() {
            NodeCounters::bump(&counters.forward_errors);
        }
        if let (Some(t), Some(start_us)) = (&self.local.trace, started_us) {
            let values = if access.write { access.data } else { result.unwrap_or_default() };
            let halves = if access.pair { 2 } else { 1 };
            for (i, addr) in [access.addr, access.second_addr()].into_iter().enumerate().take(halves) {
                let ok = match result {
                    Ok(_) => true,
                    Err(f) => i == 0 && f.second,
                };
                t.access(&AccessRecord {
                    node: self.local.node,
                    cpu,
                    start_us,
                    write: access.write,
                    size: access.size,
                    addr,
                    value: values[i],
                    ok,
                });
            }
        }
        self.update_irqs(if access.write { lines } else { 0 });
    }
}

/// What the node's PLDMA engine asks of its platform from its own thread.
impl NodeHooks for Platform {
    fn update_irqs(&self) {
        Platform::update_irqs(self, 0);
    }

    fn wake_r5(&self, cause: Cause) {
        if let Some(r5) = self.r5_wake() {
            r5.wake(cause);
        }
    }
}
