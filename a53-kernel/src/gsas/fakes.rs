//! Host fakes of the atomic service's backends, for the unit tests, the integration tests and
//! the fuzz driver. They detect service bugs (double frees, accesses outside frames) instead of
//! hiding them.

use alloc::boxed::Box;
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::num::NonZeroU64;

use crate::gsas::mailbox::DeliverError;
use crate::gsas::service::{
    Env, FrameAllocator, LocalMemory, MemoryFault, NotificationSink, ProcessMemory, SpawnError, SpawnRequest, Spawner,
    VaFault, Width,
};
use crate::gsas::softmmu::Frame;
use hal::pldma::Pd;
use proto::gsas::{Notification, PAGE_SIZE, Pid, VaOp, VaWidth};

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

    fn va_atomic(&mut self, pa: u64, op: VaOp, width: VaWidth, arg1: u64, arg2: u64) -> Result<u64, MemoryFault> {
        let n = width.bytes() as usize;
        let cell = self.range(pa, n, n as u64)?;
        let mut word = [0; 8];
        word[..n].copy_from_slice(cell);
        let old = u64::from_le_bytes(word);
        if let Some(new) = op.apply(old, arg1, arg2, width) {
            cell.copy_from_slice(&new.to_le_bytes()[..n]);
        }
        Ok(old)
    }
}

/// A page of a [`FakeProcess`]: its frame once resident, and whether the process may write it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FakePage {
    pub pa: Option<u64>,
    pub writable: bool,
}

/// A process as the service sees it: its PD, whether it is alive, its pages by address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FakeProcess {
    pub pd: Pd,
    pub alive: bool,
    pub pages: BTreeMap<u64, FakePage>,
}

/// The node's processes; a page that is not resident gets the next frame of `spare` at its
/// first touch. Counts the calls that found their word.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FakeProcesses {
    pub processes: Vec<FakeProcess>,
    pub spare: Vec<u64>,
    pub applied: usize,
}

impl FakeProcesses {
    /// Adds a live process of `pd` with no pages; its index.
    pub fn add(&mut self, pd: Pd) -> usize {
        self.processes.push(FakeProcess { pd, alive: true, pages: BTreeMap::new() });
        self.processes.len() - 1
    }

    /// Gives process `index` the page at `va` (page-aligned): resident at `pa`, or not yet.
    pub fn page(&mut self, index: usize, va: u64, pa: Option<u64>, writable: bool) {
        self.processes[index].pages.insert(va, FakePage { pa, writable });
    }
}

impl ProcessMemory for FakeProcesses {
    fn with_word(
        &mut self,
        pd: Pd,
        va: u64,
        write: bool,
        apply: &mut dyn FnMut(u64) -> Result<u64, MemoryFault>,
    ) -> Result<u64, VaFault> {
        let p = self.processes.iter_mut().find(|p| p.pd == pd && p.alive).ok_or(VaFault::NoProcess)?;
        let page = p.pages.get_mut(&(va & !(PAGE_SIZE - 1))).ok_or(VaFault::Unmapped)?;
        if write && !page.writable {
            return Err(VaFault::ReadOnly);
        }
        let frame = match page.pa {
            Some(pa) => pa,
            None => {
                let pa = self.spare.pop().ok_or(VaFault::NoFrame)?;
                page.pa = Some(pa);
                pa
            }
        };
        let old = apply(frame + (va & (PAGE_SIZE - 1)))?;
        self.applied += 1;
        Ok(old)
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

/// All five fakes over one RAM region: `frames` frames for shared pages, then
/// [`PROCESS_FRAMES`](Self::PROCESS_FRAMES) for the processes' pages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FakeBackends {
    pub memory: FakeMemory,
    pub frames: FakeFrames,
    pub spawner: FakeSpawner,
    pub sink: RecordingSink,
    pub processes: FakeProcesses,
}

impl FakeBackends {
    pub const RAM_BASE: u64 = 0x4000_0000;
    /// Frames after the shared pages' for the processes: the spare ones of [`FakeProcesses`].
    pub const PROCESS_FRAMES: usize = 8;

    pub fn new(frames: usize) -> Self {
        let process_base = Self::RAM_BASE + frames as u64 * PAGE_SIZE;
        let spare = (0..Self::PROCESS_FRAMES as u64).rev().map(|i| process_base + i * PAGE_SIZE).collect();
        Self {
            memory: FakeMemory::new(Self::RAM_BASE, frames + Self::PROCESS_FRAMES),
            frames: FakeFrames::contiguous(Self::RAM_BASE, frames),
            spawner: FakeSpawner::new(&["worker"]),
            sink: RecordingSink::default(),
            processes: FakeProcesses { spare, ..FakeProcesses::default() },
        }
    }

    pub fn env(&mut self) -> Env<'_> {
        Env {
            memory: &mut self.memory,
            frames: &mut self.frames,
            spawner: &mut self.spawner,
            notifications: &mut self.sink,
            processes: &mut self.processes,
        }
    }

    /// A copy of a frame's bytes.
    pub fn frame(&self, frame: Frame) -> Box<[u8]> {
        self.memory.frame_bytes(frame).unwrap_or(&[]).into()
    }
}
