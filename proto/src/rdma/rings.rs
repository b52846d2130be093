//! The rings the R5 and the engine share (`docs/hw/pldma.md`, "The engine's rings"), and the
//! R5's side of posting descriptors with doorbell suppression.

use crate::ipc::{Full, Producer, Ring, system_barrier};
use core::sync::atomic::{AtomicU32, Ordering};
use hal::pldma::descriptor::{Descriptor, RawDescriptor};
use hal::pldma::event::RawEvent;

pub const DESC_ENTRIES: usize = 256;
pub const EVENT_ENTRIES: usize = 512;

pub type DescriptorRing = Ring<RawDescriptor, DESC_ENTRIES>;
pub type EventRing = Ring<RawEvent, EVENT_ENTRIES>;

/// At `board::layout::PLDMA_RINGS`; its PA goes into `rings_lo`/`rings_hi`.
#[repr(C, align(64))]
pub struct EngineRings {
    /// The R5 produces, the engine consumes.
    pub desc: DescriptorRing,
    /// The engine produces, the R5 consumes.
    pub events: EventRing,
    /// Written by the engine: 1 while it sleeps and needs `desc_doorbell`.
    pub engine_idle: AtomicU32,
    _pad: [u32; 15],
}

/// The R5's producer of descriptors.
pub struct DescriptorPoster<'a> {
    producer: Producer<'a, RawDescriptor, DESC_ENTRIES>,
    rings: &'a EngineRings,
    posted: bool,
}

impl<'a> DescriptorPoster<'a> {
    /// # Safety
    ///
    /// At most one producer of `rings.desc` may exist at any time (the R5 is the only one).
    pub unsafe fn new(rings: &'a EngineRings) -> Self {
        // SAFETY: forwarded from the caller.
        Self { producer: unsafe { rings.desc.producer() }, rings, posted: false }
    }

    pub fn post(&mut self, d: &Descriptor) -> Result<(), Full> {
        self.post_raw(&d.encode())
    }

    /// Posts a descriptor exactly as given (tests use it for malformed ones).
    pub fn post_raw(&mut self, raw: &RawDescriptor) -> Result<(), Full> {
        self.producer.push(*raw)?;
        self.posted = true;
        Ok(())
    }

    /// Descriptors posted since the last call: does the engine need `desc_doorbell`? Only if it
    /// said it sleeps (read after the descriptors were published, with a full barrier between).
    pub fn take_kick(&mut self) -> bool {
        if !core::mem::take(&mut self.posted) {
            return false;
        }
        system_barrier();
        self.rings.engine_idle.load(Ordering::Acquire) != 0
    }

    /// Free descriptor slots.
    pub fn room(&self) -> usize {
        DESC_ENTRIES.saturating_sub(self.rings.desc.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hal::doc_table;
    use hal::pldma::codes::NackCode;
    const DOC: &str = include_str!("../../../docs/hw/pldma.md");
    use core::mem::offset_of;
    use hal::pldma::{Pd, descriptor::Descriptor};
    use std::boxed::Box;
    use std::string::String;
    use std::vec::Vec;

    fn rings() -> Box<EngineRings> {
        // SAFETY: all-zero bytes are two empty rings and a clear idle word.
        unsafe { Box::new(core::mem::zeroed()) }
    }

    #[test]
    fn layout_matches_the_doc() {
        let fields = [
            ("desc", offset_of!(EngineRings, desc)),
            ("events", offset_of!(EngineRings, events)),
            ("engine_idle", offset_of!(EngineRings, engine_idle)),
        ];
        let expected: Vec<(String, usize)> = fields.iter().map(|(n, o)| ((*n).into(), *o)).collect();
        assert_eq!(doc_table(DOC, "The engine's rings"), expected);
        assert_eq!(size_of::<DescriptorRing>(), 0x4080);
        assert_eq!(size_of::<EventRing>(), 0x4080);
        assert!(size_of::<EngineRings>() as u64 <= 0x10_0000, "fits the rings' half of the PLDMA area");
    }

    #[test]
    fn the_poster_kicks_only_a_sleeping_engine() {
        let r = rings();
        // SAFETY: the only producer and consumer in this test.
        let (mut poster, mut engine) = unsafe { (DescriptorPoster::new(&r), r.desc.consumer()) };
        assert!(!poster.take_kick(), "nothing posted");
        let d = Descriptor::Nack { vc: 0, pd: Pd::new(1).unwrap(), tid: 1, seq: 1, node: 0, code: NackCode::NoPd };
        poster.post(&d).unwrap();
        assert!(!poster.take_kick(), "the engine is awake");
        r.engine_idle.store(1, Ordering::Release);
        poster.post(&d).unwrap();
        assert!(poster.take_kick());
        assert!(!poster.take_kick(), "one kick per batch");
        assert_eq!(poster.room(), DESC_ENTRIES - 2);
        assert_eq!(engine.pop().map(|raw| Descriptor::decode(&raw)), Some(Ok(d)));
        for _ in 0..DESC_ENTRIES - 1 {
            poster.post(&d).unwrap();
        }
        assert_eq!(poster.post(&d), Err(Full), "a full ring refuses");
    }
}
