//! Host fakes of the atomic service's backends, for the unit tests, the integration tests and
//! the fuzz driver. They detect service bugs (double frees, accesses outside frames) instead of
//! hiding them.

use alloc::boxed::Box;
use alloc::collections::BTreeSet;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::num::NonZeroU64;

use crate::gsas::mailbox::DeliverError;
use crate::gsas::service::{
    Env, FrameAllocator, LocalMemory, MemoryFault, NotificationSink, SpawnError, SpawnRequest, Spawner, Width,
};
use crate::gsas::softmmu::Frame;
use proto::gsas::{Notification, PAGE_SIZE, Pid};

const PAGE: usize = PAGE_SIZE as usize;

/// `frames` frames of RAM at physical `base`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FakeMemory {
    base: u64,
    bytes: Vec<u8>,
}

impl FakeMemory {
    pub fn new(base: u64, frames: usize) -> Self {
        Self { base, bytes: alloc::vec![0; frames * PAGE] }
    }

    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub fn frame_bytes(&self, frame: Frame) -> Option<&[u8]> {
        let start = usize::try_from(frame.addr().checked_sub(self.base)?).ok()?;
        self.bytes.get(start..start + PAGE)
    }

    fn range(&mut self, pa: u64, len: usize, align: u64) -> Result<&mut [u8], MemoryFault> {
        if !pa.is_multiple_of(align) {
            return Err(MemoryFault);
        }
        let start = usize::try_from(pa.checked_sub(self.base).ok_or(MemoryFault)?).map_err(|_| MemoryFault)?;
        self.bytes.get_mut(start..start.checked_add(len).ok_or(MemoryFault)?).ok_or(MemoryFault)
    }

    fn rmw64(&mut self, pa: u64, f: impl FnOnce(u64) -> u64) -> Result<u64, MemoryFault> {
        let cell = self.range(pa, 8, 8)?;
        let old = u64::from_le_bytes(cell.try_into().map_err(|_| MemoryFault)?);
        cell.copy_from_slice(&f(old).to_le_bytes());
        Ok(old)
    }
}

impl LocalMemory for FakeMemory {
    fn load(&mut self, pa: u64, width: Width) -> Result<u64, MemoryFault> {
        let n = width.bytes();
        let cell = self.range(pa, n, n as u64)?;
        let mut word = [0; 8];
        word[..n].copy_from_slice(cell);
        Ok(u64::from_le_bytes(word))
    }

    fn store(&mut self, pa: u64, width: Width, value: u64) -> Result<(), MemoryFault> {
        let n = width.bytes();
        self.range(pa, n, n as u64)?.copy_from_slice(&value.to_le_bytes()[..n]);
        Ok(())
    }

    fn store128(&mut self, pa: u64, value: u128) -> Result<(), MemoryFault> {
        self.range(pa, 16, 8)?.copy_from_slice(&value.to_le_bytes());
        Ok(())
    }

    fn compare_exchange64(&mut self, pa: u64, expected: u64, new: u64) -> Result<bool, MemoryFault> {
        let old = self.rmw64(pa, |old| if old == expected { new } else { old })?;
        Ok(old == expected)
    }

    fn fetch_add64(&mut self, pa: u64, addend: u64) -> Result<u64, MemoryFault> {
        self.rmw64(pa, |old| old.wrapping_add(addend))
    }

    fn swap64(&mut self, pa: u64, new: u64) -> Result<u64, MemoryFault> {
        self.rmw64(pa, |_| new)
    }

    fn read_frame(&mut self, frame: Frame, out: &mut [u8; PAGE]) -> Result<(), MemoryFault> {
        out.copy_from_slice(self.range(frame.addr(), PAGE, PAGE_SIZE)?);
        Ok(())
    }

    fn zero_frame(&mut self, frame: Frame) -> Result<(), MemoryFault> {
        self.range(frame.addr(), PAGE, PAGE_SIZE)?.fill(0);
        Ok(())
    }
}

/// Hands out the frames it was given, lowest address first; counts double and foreign frees.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FakeFrames {
    free: BTreeSet<Frame>,
    used: BTreeSet<Frame>,
    pub bad_frees: usize,
}

impl FakeFrames {
    pub fn new(frames: impl IntoIterator<Item = Frame>) -> Self {
        Self { free: frames.into_iter().collect(), ..Self::default() }
    }

    /// `count` frames from physical `base`.
    pub fn contiguous(base: u64, count: usize) -> Self {
        Self::new((0..count as u64).filter_map(|i| Frame::new(base + i * PAGE_SIZE)))
    }

    pub fn free_count(&self) -> usize {
        self.free.len()
    }

    pub fn used(&self) -> impl Iterator<Item = Frame> + '_ {
        self.used.iter().copied()
    }
}

impl FrameAllocator for FakeFrames {
    fn allocate(&mut self) -> Option<Frame> {
        let frame = self.free.pop_first()?;
        self.used.insert(frame);
        Some(frame)
    }

    fn free(&mut self, frame: Frame) {
        if self.used.remove(&frame) {
            self.free.insert(frame);
        } else {
            self.bad_frees += 1;
        }
    }
}

/// Knows some image names; records what it started.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FakeSpawner {
    pub images: Vec<String>,
    pub spawned: Vec<(Pid, String, u64)>,
    pub out_of_resources: bool,
}

impl FakeSpawner {
    pub fn new(images: &[&str]) -> Self {
        Self { images: images.iter().map(|s| s.to_string()).collect(), ..Self::default() }
    }
}

impl Spawner for FakeSpawner {
    fn spawn(&mut self, request: &SpawnRequest<'_>) -> Result<NonZeroU64, SpawnError> {
        if !self.images.iter().any(|i| i == request.image) {
            return Err(SpawnError::UnknownImage);
        }
        if self.out_of_resources {
            return Err(SpawnError::NoResources);
        }
        self.spawned.push((request.parent, request.image.to_string(), request.argument));
        NonZeroU64::new(self.spawned.len() as u64 + 100).ok_or(SpawnError::NoResources)
    }
}

/// Accepts or refuses every notification as told; records the accepted ones.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecordingSink {
    pub refuse: Option<DeliverError>,
    pub received: Vec<(Pid, Notification)>,
}

impl NotificationSink for RecordingSink {
    fn notify(&mut self, from: Pid, notification: Notification) -> Result<(), DeliverError> {
        if let Some(e) = self.refuse {
            return Err(e);
        }
        self.received.push((from, notification));
        Ok(())
    }
}

/// All four fakes over one RAM region.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FakeBackends {
    pub memory: FakeMemory,
    pub frames: FakeFrames,
    pub spawner: FakeSpawner,
    pub sink: RecordingSink,
}

impl FakeBackends {
    pub const RAM_BASE: u64 = 0x4000_0000;

    pub fn new(frames: usize) -> Self {
        Self {
            memory: FakeMemory::new(Self::RAM_BASE, frames),
            frames: FakeFrames::contiguous(Self::RAM_BASE, frames),
            spawner: FakeSpawner::new(&["worker"]),
            sink: RecordingSink::default(),
        }
    }

    pub fn env(&mut self) -> Env<'_> {
        Env {
            memory: &mut self.memory,
            frames: &mut self.frames,
            spawner: &mut self.spawner,
            notifications: &mut self.sink,
        }
    }

    /// A copy of a frame's bytes.
    pub fn frame(&self, frame: Frame) -> Box<[u8]> {
        self.memory.frame_bytes(frame).unwrap_or(&[]).into()
    }
}
