//! One node's emulated PL: the devices at their physical addresses, the server that answers
//! the node's forwarded accesses, and the wire that carries its PL interrupt lines
//! (`docs/hw/forwarding.md`).

mod address_map;

pub use address_map::{AddressMap, MapError};

use crate::counters::NodeCounters;
use crate::fabric::Fabric;
use crate::models::{sysblock::Sysblock, window::Window};
use crate::trace::AccessRecord;
use board::Board as _;
use board::pl;
use hal::forward::{Request, Slots, Status};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

type QemuBoard = board::zcu102_qemu::Zcu102Qemu;

pub struct Platform {
    node: usize,
    map: AddressMap,
    irq_out: Mutex<(UnixStream, u16)>,
    fabric: Arc<Fabric>,
}

impl Platform {
    /// The standard set of PL blocks of node `node`.
    pub fn new(node: usize, fabric: Arc<Fabric>, irq_out: UnixStream) -> Result<Arc<Self>, MapError> {
        let net = &fabric.interconnect;
        let c = net.coordinates(node);
        let coordinates = hal::sysblock::Coordinates { x: c.x, y: c.y, z: c.z };
        let mut map = AddressMap::new();
        map.insert(
            pl::SYSBLOCK_BASE,
            hal::sysblock::regs::WINDOW_SIZE,
            Sysblock::new(node as u16, coordinates, net.nodes() as u16, pl::irq_line::SYSBLOCK),
        )?;
        map.insert(pl::GLOBAL_WINDOW_BASE, pl::GLOBAL_WINDOW_SIZE, Window::new(node, fabric.clone()))?;
        Ok(Arc::new(Self { node, map, irq_out: Mutex::new((irq_out, 0)), fabric }))
    }

    pub fn map(&self) -> &AddressMap {
        &self.map
    }

    /// Serves one forwarded access.
    pub fn access(&self, req: &Request) -> Result<u128, Status> {
        let (device, offset) = self.map.lookup(req.addr, req.size).ok_or(Status::Unmapped)?;
        let mut device = device.lock().unwrap();
        if req.write { device.write(offset, req.size, req.data).map(|()| 0) } else { device.read(offset, req.size) }
    }

    /// Sends a byte for every PL line that rose, and, after a write (the guest may just have
    /// acknowledged one source of a shared line), for every line still high: the guest's
    /// handler then looks again. Extra interrupts are harmless; a lost one is not.
    pub fn update_irqs(&self, after_write: bool) {
        let levels = self.map.irq_levels();
        let mut out = self.irq_out.lock().unwrap();
        let rising = levels & !out.1;
        let send = if after_write { levels } else { rising };
        out.1 = levels;
        for line in (0..16u8).filter(|l| send & (1 << l) != 0) {
            if out.0.write_all(&[line]).is_ok() {
                NodeCounters::bump(&self.fabric.counters[self.node].interrupts);
                if let Some(t) = &self.fabric.trace {
                    t.interrupt(self.node, line);
                }
            }
        }
    }

    /// Serves the node's forwarding kicks until its QEMU goes away.
    pub fn spawn_server(self: &Arc<Self>, mut kicks: UnixStream) -> JoinHandle<()> {
        let me = self.clone();
        std::thread::spawn(move || {
            let Some(ddr) = me.fabric.ddr(me.node) else { return };
            let slots_pa = QemuBoard::FORWARDING.expect("the QEMU board forwards").slots;
            // SAFETY: the slots are atomics; any bit pattern is valid.
            let Some(slots) = (unsafe { ddr.view::<Slots>(slots_pa) }) else { return };
            let counters = &me.fabric.counters[me.node];
            let mut kick = [0u8; 1];
            while kicks.read_exact(&mut kick).is_ok() {
                let Some(slot) = slots.0.get(usize::from(kick[0])) else { continue };
                let Some(req) = slot.take_request() else { continue };
                let started = me.fabric.trace.as_ref().map(|t| t.now_us());
                let result = me.access(&req);
                slot.complete(req.seq, result);
                NodeCounters::bump(if req.write { &counters.forwarded_writes } else { &counters.forwarded_reads });
                if result.is_err() {
                    NodeCounters::bump(&counters.forward_errors);
                }
                if let (Some(t), Some(start)) = (&me.fabric.trace, started) {
                    let value = result.unwrap_or(0) | if req.write { req.data } else { 0 };
                    t.access(&AccessRecord {
                        node: me.node,
                        cpu: usize::from(kick[0]),
                        start_us: start,
                        write: req.write,
                        size: req.size,
                        addr: req.addr,
                        value,
                        ok: result.is_ok(),
                    });
                }
                me.update_irqs(req.write);
            }
        })
    }
}
