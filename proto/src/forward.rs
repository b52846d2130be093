//! MMIO trap and forward: the per-CPU request slots through which a trapped load or store
//! reaches `qemu-virt` (`docs/hw/forwarding.md`; `docs/architecture.md`, "MMIO trap and forward").
//!
//! The guest's abort handler fills its CPU's slot, sets `state` to [`REQUEST`], and kicks the
//! host by writing the slot's index as one byte to UART1. The host serves the access against
//! its device models, writes the result and status, and sets `state` to [`DONE`]; the guest,
//! spinning on `state`, takes the result and sets the slot back to [`IDLE`].

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::ipc::system_barrier;

pub const IDLE: u32 = 0;
pub const REQUEST: u32 = 1;
pub const DONE: u32 = 2;

/// `kind`.
pub const READ: u32 = 0;
pub const WRITE: u32 = 1;

/// Slots: one per A53 core (0..4), then one per R5 core (4, 5).
pub const SLOTS: usize = 8;
pub const R5_SLOT: usize = 4;

/// What became of a forwarded access.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Ok = 0,
    /// No device model at this address.
    Unmapped = 1,
    /// The device does not accept this size or alignment at this register.
    Rejected = 2,
    /// The device model failed (a remote node is gone, ...).
    DeviceError = 3,
}

impl Status {
    pub fn from_raw(raw: u32) -> Self {
        match raw {
            0 => Status::Ok,
            1 => Status::Unmapped,
            2 => Status::Rejected,
            _ => Status::DeviceError,
        }
    }
}

#[repr(C, align(64))]
pub struct Slot {
    pub state: AtomicU32,
    /// Incremented by the guest for each request; the host echoes it in `done_seq`.
    pub seq: AtomicU32,
    pub kind: AtomicU32,
    /// Bytes: 1, 2, 4, 8 or 16.
    pub size: AtomicU32,
    /// Physical address.
    pub addr: AtomicU64,
    /// Write data, or the read result; 128-bit accesses use both words (low first).
    pub data: [AtomicU64; 2],
    pub status: AtomicU32,
    pub done_seq: AtomicU32,
    _reserved: [u32; 4],
}

/// One access, as the host sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub seq: u32,
    pub write: bool,
    pub size: u32,
    pub addr: u64,
    pub data: u128,
}

impl Slot {
    /// Guest: posts an access. The caller then kicks the host and waits with [`Slot::finished`].
    pub fn post(&self, write: bool, size: u32, addr: u64, data: u128) -> u32 {
        let seq = self.seq.load(Ordering::Relaxed).wrapping_add(1);
        self.seq.store(seq, Ordering::Relaxed);
        self.kind.store(if write { WRITE } else { READ }, Ordering::Relaxed);
        self.size.store(size, Ordering::Relaxed);
        self.addr.store(addr, Ordering::Relaxed);
        self.data[0].store(data as u64, Ordering::Relaxed);
        self.data[1].store((data >> 64) as u64, Ordering::Relaxed);
        system_barrier();
        self.state.store(REQUEST, Ordering::Release);
        seq
    }

    /// Guest: the result of request `seq` once the host has served it.
    pub fn finished(&self, seq: u32) -> Option<Result<u128, Status>> {
        if self.state.load(Ordering::Acquire) != DONE || self.done_seq.load(Ordering::Relaxed) != seq {
            return None;
        }
        system_barrier();
        let status = Status::from_raw(self.status.load(Ordering::Relaxed));
        let data =
            u128::from(self.data[0].load(Ordering::Relaxed)) | u128::from(self.data[1].load(Ordering::Relaxed)) << 64;
        self.state.store(IDLE, Ordering::Release);
        Some(if status == Status::Ok { Ok(data) } else { Err(status) })
    }

    /// Host: the posted request, if any.
    pub fn take_request(&self) -> Option<Request> {
        if self.state.load(Ordering::Acquire) != REQUEST {
            return None;
        }
        let data =
            u128::from(self.data[0].load(Ordering::Relaxed)) | u128::from(self.data[1].load(Ordering::Relaxed)) << 64;
        Some(Request {
            seq: self.seq.load(Ordering::Relaxed),
            write: self.kind.load(Ordering::Relaxed) == WRITE,
            size: self.size.load(Ordering::Relaxed),
            addr: self.addr.load(Ordering::Relaxed),
            data,
        })
    }

    /// Host: completes request `seq`.
    pub fn complete(&self, seq: u32, result: Result<u128, Status>) {
        let (data, status) = match result {
            Ok(d) => (d, Status::Ok),
            Err(s) => (0, s),
        };
        self.data[0].store(data as u64, Ordering::Relaxed);
        self.data[1].store((data >> 64) as u64, Ordering::Relaxed);
        self.status.store(status as u32, Ordering::Relaxed);
        self.done_seq.store(seq, Ordering::Relaxed);
        system_barrier();
        self.state.store(DONE, Ordering::Release);
    }
}

/// Why a forwarded access failed, as the guest sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ForwardError {
    /// The host answered with this status.
    Host(Status),
    /// The host never answered (a platform that is gone must not hang the guest).
    TimedOut,
}

/// Guest: one forwarded access, start to end. `kick` tells the host (one UART byte), and
/// `timed_out` is polled while waiting.
pub fn forward(
    slot: &Slot,
    write: bool,
    size: u32,
    pa: u64,
    data: u128,
    kick: impl FnOnce(),
    mut timed_out: impl FnMut() -> bool,
) -> Result<u128, ForwardError> {
    /// Looks at the slot between two looks at the clock: reading the clock is an exit to the
    /// emulator, the slot is plain memory.
    const SPINS_PER_CLOCK: u32 = 64;
    let seq = slot.post(write, size, pa, data);
    kick();
    let mut spins = 0u32;
    loop {
        if let Some(result) = slot.finished(seq) {
            return result.map_err(ForwardError::Host);
        }
        spins = spins.wrapping_add(1);
        if spins.is_multiple_of(SPINS_PER_CLOCK) && timed_out() {
            return Err(ForwardError::TimedOut);
        }
        core::hint::spin_loop();
    }
}

impl ForwardError {
    /// The emulator's view of the failure.
    pub fn bus_error(self) -> mmio_trap::BusError {
        match self {
            ForwardError::Host(Status::Unmapped) => mmio_trap::BusError::Unmapped,
            ForwardError::Host(Status::Rejected) => mmio_trap::BusError::Rejected,
            ForwardError::Host(status) => mmio_trap::BusError::Other(status as u32),
            ForwardError::TimedOut => mmio_trap::BusError::Timeout,
        }
    }
}

/// The slot array at the board's forwarding address.
#[repr(C)]
pub struct Slots(pub [Slot; SLOTS]);

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::{offset_of, size_of};

    #[test]
    fn layout_matches_docs_hw_forwarding() {
        assert_eq!(size_of::<Slot>(), 64);
        assert_eq!(offset_of!(Slot, addr), 0x10);
        assert_eq!(offset_of!(Slot, data), 0x18);
        assert_eq!(offset_of!(Slot, status), 0x28);
        assert_eq!(offset_of!(Slot, done_seq), 0x2c);
    }

    #[test]
    fn request_and_completion_round_trip() {
        // SAFETY: all-zero is an idle slot.
        let slot: Slot = unsafe { core::mem::zeroed() };
        let seq = slot.post(true, 16, 0x8000_0010, u128::MAX - 5);
        assert_eq!(slot.finished(seq), None, "not served yet");
        let req = slot.take_request().unwrap();
        assert_eq!(req, Request { seq, write: true, size: 16, addr: 0x8000_0010, data: u128::MAX - 5 });
        slot.complete(req.seq, Ok(0));
        assert_eq!(slot.finished(seq), Some(Ok(0)));
        assert_eq!(slot.take_request(), None, "the slot is idle again");
        let seq = slot.post(false, 4, 0x8050_0000, 0);
        slot.complete(seq, Err(Status::Unmapped));
        assert_eq!(slot.finished(seq), Some(Err(Status::Unmapped)));
    }

    #[test]
    fn a_stale_completion_is_not_taken_for_a_new_request() {
        // SAFETY: all-zero is an idle slot.
        let slot: Slot = unsafe { core::mem::zeroed() };
        let old = slot.post(false, 4, 0, 0);
        slot.complete(old, Ok(1));
        let new = old.wrapping_add(1);
        assert_eq!(slot.finished(new), None);
    }
}
