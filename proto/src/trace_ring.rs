//! The R5 trace ring: a byte ring in shared DDR that the R5 firmware fills with defmt frames
//! and the host drains (remoteproc-style trace buffer, `docs/hw/ipc.md`).
//!
//! The writer never waits: when the reader falls behind, old bytes are overwritten and the
//! reader learns how many it lost. Frames are rzCOBS-encoded and end in a zero byte, so the
//! decoder resynchronises at the next frame after a loss.

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicU32, Ordering};

use crate::ipc::system_barrier;

/// ASCII "TRCE".
pub const MAGIC: u32 = 0x4543_5254;

/// Capacity of the ring's data area in bytes (a power of two).
pub const SIZE: usize = 32 * 1024;

#[repr(C, align(64))]
pub struct TraceRing {
    pub magic: AtomicU32,
    pub size: AtomicU32,
    /// Bytes ever written (free-running, wraps at 2^32). Written by the R5 only.
    pub written: AtomicU32,
    _reserved: [u32; 13],
    data: [UnsafeCell<u8>; SIZE],
}

// SAFETY: data bytes are written by the single writer and read by readers that detect, through
// `written`, any byte that was overwritten while they read it.
unsafe impl Sync for TraceRing {}

impl TraceRing {
    /// Marks the ring valid and empty. Called by its writer at start.
    pub fn init(&self) {
        self.written.store(0, Ordering::Relaxed);
        self.size.store(SIZE as u32, Ordering::Relaxed);
        system_barrier();
        self.magic.store(MAGIC, Ordering::Release);
    }

    pub fn is_valid(&self) -> bool {
        self.magic.load(Ordering::Acquire) == MAGIC && self.size.load(Ordering::Relaxed) == SIZE as u32
    }

    /// Appends `bytes`. Only the single writer may call this.
    pub fn write(&self, bytes: &[u8]) {
        let mut written = self.written.load(Ordering::Relaxed);
        for &b in bytes {
            // SAFETY: single writer; readers tolerate torn data via `written` (see TraceReader).
            unsafe { self.data[written as usize % SIZE].get().write_volatile(b) };
            written = written.wrapping_add(1);
        }
        system_barrier();
        self.written.store(written, Ordering::Release);
    }

    fn byte(&self, pos: u32) -> u8 {
        // SAFETY: plain read of a shared byte; staleness is detected by the reader.
        unsafe { self.data[pos as usize % SIZE].get().read_volatile() }
    }
}

/// Host-side cursor over a [`TraceRing`].
#[derive(Debug, Default)]
pub struct TraceReader {
    next: u32,
    /// Bytes overwritten before this reader could read them.
    pub lost: u64,
}

impl TraceReader {
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends every byte written since the last call to `out` and returns how many.
    pub fn poll(&mut self, ring: &TraceRing, out: &mut impl Extend<u8>) -> usize {
        let end = ring.written.load(Ordering::Acquire);
        let mut start = self.next;
        let pending = end.wrapping_sub(start) as usize;
        if pending > SIZE {
            self.lost += (pending - SIZE) as u64;
            start = end.wrapping_sub(SIZE as u32);
        }
        let n = end.wrapping_sub(start) as usize;
        let mut copy = [0u8; SIZE];
        for (i, b) in copy[..n].iter_mut().enumerate() {
            *b = ring.byte(start.wrapping_add(i as u32));
        }
        system_barrier();
        // The byte at position p was overwritten while we copied it if the writer has since
        // moved more than SIZE past it.
        let now = ring.written.load(Ordering::Acquire);
        let overwritten = (now.wrapping_sub(start) as usize).saturating_sub(SIZE).min(n);
        self.lost += overwritten as u64;
        self.next = end;
        out.extend(copy[overwritten..n].iter().copied());
        n - overwritten
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::offset_of;
    use std::{boxed::Box, vec::Vec};

    fn new_ring() -> Box<TraceRing> {
        // SAFETY: all-zero bytes are a valid (not yet initialised) ring.
        let ring: Box<TraceRing> = unsafe { Box::new(core::mem::zeroed()) };
        ring.init();
        ring
    }

    #[test]
    fn layout_matches_docs_hw_ipc() {
        assert_eq!(offset_of!(TraceRing, written), 8);
        assert_eq!(offset_of!(TraceRing, data), 64);
    }

    #[test]
    fn reader_sees_everything_written_in_order() {
        let ring = new_ring();
        let mut reader = TraceReader::new();
        let mut out = Vec::new();
        for chunk in 0..100u32 {
            let bytes: Vec<u8> = (0..(chunk % 37)).map(|i| (chunk + i) as u8).collect();
            ring.write(&bytes);
            assert_eq!(reader.poll(&ring, &mut out), bytes.len());
            assert_eq!(&out[out.len() - bytes.len()..], &bytes[..]);
        }
        assert_eq!(reader.lost, 0);
    }

    #[test]
    fn slow_reader_counts_overwritten_bytes_and_keeps_the_newest() {
        let ring = new_ring();
        let mut reader = TraceReader::new();
        let all: Vec<u8> = (0..(SIZE + 1000)).map(|i| (i % 251) as u8).collect();
        ring.write(&all);
        let mut out = Vec::new();
        assert_eq!(reader.poll(&ring, &mut out), SIZE);
        assert_eq!(reader.lost, 1000);
        assert_eq!(&out[..], &all[1000..]);
    }

    #[test]
    fn counter_wraps_around_u32() {
        let ring = new_ring();
        ring.written.store(u32::MAX - 10, Ordering::Relaxed);
        let mut reader = TraceReader { next: u32::MAX - 10, lost: 0 };
        let mut out = Vec::new();
        ring.write(b"across the wrap");
        reader.poll(&ring, &mut out);
        assert_eq!(&out[..], b"across the wrap");
    }
}
