//! The firmware's defmt logger: frames go into the trace ring in shared DDR, which the host
//! drains and decodes with this ELF (`proto::trace_ring`).
//!
//! The firmware runs on one core with interrupts off, so the only concurrency is an abort
//! taken while a frame is being written: such a nested frame is dropped rather than mixed into
//! the open one (its handler still records the abort in the ring afterwards via `report`).

use crate::Board;
use board::Board as _;
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, Ordering};
use proto::trace_ring::TraceRing;

fn ring() -> &'static TraceRing {
    // SAFETY: the board reserves this shared region for the trace ring; the R5 maps it at the
    // same address and is its only writer.
    unsafe { &*(Board::TRACE_RING_BASE as *const TraceRing) }
}

/// Frames are staged and written to the ring in one go, so the host never sees half a frame
/// after the ring's write counter moved.
struct Buffer {
    bytes: [u8; 512],
    len: usize,
}

impl Buffer {
    fn push(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.len == self.bytes.len() {
                ring().write(&self.bytes);
                self.len = 0;
            }
            self.bytes[self.len] = b;
            self.len += 1;
        }
    }

    fn flush(&mut self) {
        ring().write(&self.bytes[..self.len]);
        self.len = 0;
    }
}

struct Staging {
    encoder: defmt::Encoder,
    buffer: Buffer,
}

struct Shared(UnsafeCell<Staging>);
// SAFETY: one core, and `BUSY` keeps nested use out.
unsafe impl Sync for Shared {}

static STAGING: Shared =
    Shared(UnsafeCell::new(Staging { encoder: defmt::Encoder::new(), buffer: Buffer { bytes: [0; 512], len: 0 } }));
static BUSY: AtomicBool = AtomicBool::new(false);
static NESTED: AtomicBool = AtomicBool::new(false);

/// Marks the ring valid and empty; before the first log line.
pub fn init() {
    ring().init();
}

/// Runs `f` on the staging state unless this frame is a nested one being dropped.
fn with_staging(f: impl FnOnce(&mut defmt::Encoder, &mut Buffer)) {
    if NESTED.load(Ordering::Relaxed) {
        return;
    }
    // SAFETY: BUSY is held (taken in acquire) and this is the only core.
    let staging = unsafe { &mut *STAGING.0.get() };
    f(&mut staging.encoder, &mut staging.buffer)
}

#[defmt::global_logger]
struct Logger;

// SAFETY: frames are bracketed by acquire/release, and nested frames are dropped.
unsafe impl defmt::Logger for Logger {
    fn acquire() {
        if BUSY.swap(true, Ordering::Acquire) {
            NESTED.store(true, Ordering::Relaxed);
            return;
        }
        with_staging(|encoder, buffer| encoder.start_frame(|b| buffer.push(b)));
    }

    unsafe fn flush() {}

    unsafe fn release() {
        if NESTED.swap(false, Ordering::Relaxed) {
            return;
        }
        with_staging(|encoder, buffer| {
            encoder.end_frame(|b| buffer.push(b));
            buffer.flush();
        });
        BUSY.store(false, Ordering::Release);
    }

    unsafe fn write(bytes: &[u8]) {
        with_staging(|encoder, buffer| encoder.write(bytes, |b| buffer.push(b)));
    }
}
