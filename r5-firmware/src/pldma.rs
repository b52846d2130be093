//! The R5's side of the PLDMA engine (`docs/hw/pldma.md`, "Starting the engine"): the rings in
//! the PLDMA area, the control registers it owns, and the queue sets the scheduler may reach.

use crate::rdma::{self, area::is_queue_set_address};
use board::layout::PLDMA_RINGS;
use board::pl::PLDMA_BASE;
use hal::pldma::Pd;
use hal::pldma::descriptor::RawDescriptor;
use hal::pldma::driver::{EngineControl, EngineError};
use hal::pldma::event::RawEvent;
use proto::ipc::Consumer;
use proto::rdma::queue::QueueSet;
use proto::rdma::rings::{DescriptorPoster, EVENT_ENTRIES, EngineRings};

/// The engine as the scheduler sees it.
pub struct Pldma {
    control: EngineControl,
    poster: DescriptorPoster<'static>,
    events: Consumer<'static, RawEvent, EVENT_ENTRIES>,
}

impl Pldma {
    /// Starts the engine on its rings; its node id comes back. Call once.
    pub fn start() -> Result<(Self, u16), EngineError> {
        // SAFETY: the control page of the PLDMA (forwarded on QEMU, device on the board); the
        // firmware owns its R5 registers and builds this handle once.
        let mut control = unsafe { EngineControl::new(PLDMA_BASE as usize) };
        let node = control.identify()?;
        control.stop();
        // SAFETY: the board reserves `PLDMA_RINGS` for the rings, mapped by the MPU; every bit
        // pattern is valid for their atomics and cells.
        let rings: &'static EngineRings = unsafe { &*(PLDMA_RINGS as usize as *const EngineRings) };
        // SAFETY: the firmware is the only producer of descriptors and consumer of events.
        let (poster, mut events) = unsafe { (DescriptorPoster::new(rings), rings.events.consumer()) };
        events.discard_pending();
        control.start(PLDMA_RINGS)?;
        Ok((Self { control, poster, events }, node))
    }

    pub fn next_event(&mut self) -> Option<RawEvent> {
        self.events.pop()
    }

    /// Whether the engine has posted events not taken yet.
    pub fn has_events(&self) -> bool {
        self.events.has_pending()
    }

    /// The doorbell, if descriptors went out while the engine said it sleeps.
    pub fn flush(&mut self) {
        if self.poster.take_kick() {
            self.control.kick();
        }
    }
}

impl rdma::Engine for Pldma {
    fn post(&mut self, d: &RawDescriptor) -> bool {
        self.poster.post_raw(d).is_ok()
    }

    fn notify_cq(&mut self, pd: Pd) {
        self.control.notify_cq(pd);
    }
}

/// Queue sets in the PLDMA area, at the same address for the R5 as in physical memory.
pub struct QueueArea;

impl rdma::QueueMemory<'static> for QueueArea {
    fn queue_set(&self, pa: u64) -> Option<&'static QueueSet> {
        if !is_queue_set_address(pa) {
            return None;
        }
        // SAFETY: checked to lie in the queue half of the PLDMA area, which the MPU maps and
        // the board reserves for queue sets; their atomics and cells take any bit pattern.
        Some(unsafe { &*(pa as usize as *const QueueSet) })
    }
}
