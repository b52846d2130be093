//! MMIO trap and forward: the per-CPU request slots through which a trapped load or store
//! reaches `qemu-virt` (`docs/hw/forwarding.md`; `docs/architecture.md`, "MMIO trap and forward").
//!
//! The guest's abort handler fills its CPU's slot, sets `state` to [`REQUEST`], and, unless
//! some host thread says it is looking at the slots ([`HostFlags::lookers`]), kicks the host by
//! writing the slot's index as one byte to UART1. A host thread takes the request
//! ([`TAKEN`]), serves it against its device models, writes the result and status, and sets
//! `state` to [`DONE`]; the guest, spinning on `state`, takes the result and sets the slot back
//! to [`IDLE`].
//!
//! Host threads keep looking at the slots for a short while after each access before they
//! sleep, so a burst of accesses costs one kick and one wake-up. The two sides never both miss
//! a request: the guest stores `state`, then (after a full barrier) loads `lookers`; a host
//! thread that stops looking decrements `lookers`, then (after a full barrier) looks at every
//! slot once more.

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::ipc::system_barrier;

pub const IDLE: u32 = 0;
pub const REQUEST: u32 = 1;
pub const DONE: u32 = 2;
/// A host thread took the request and is serving it (two host threads may look at one slot;
/// only the one that moves it from [`REQUEST`] to `TAKEN` serves it).
pub const TAKEN: u32 = 3;

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
    /// Host: nanoseconds its device model spent on this request (for the breakdown of
    /// `cargo xtask bench platform`; the guest may ignore it).
    pub model_ns: AtomicU32,
    _reserved: [u32; 3],
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

    /// Host: the posted request, if any, taken for this thread alone.
    pub fn take_request(&self) -> Option<Request> {
        // The plain load first: most looks find nothing, and need no locked instruction.
        if self.state.load(Ordering::Acquire) != REQUEST
            || self.state.compare_exchange(REQUEST, TAKEN, Ordering::AcqRel, Ordering::Acquire).is_err()
        {
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

    /// Host: completes request `seq`, which its model served in `model_ns`.
    pub fn complete(&self, seq: u32, result: Result<u128, Status>, model_ns: u32) {
        let (data, status) = match result {
            Ok(d) => (d, Status::Ok),
            Err(s) => (0, s),
        };
        self.data[0].store(data as u64, Ordering::Relaxed);
        self.data[1].store((data >> 64) as u64, Ordering::Relaxed);
        self.status.store(status as u32, Ordering::Relaxed);
        self.done_seq.store(seq, Ordering::Relaxed);
        self.model_ns.store(model_ns, Ordering::Relaxed);
        system_barrier();
        self.state.store(DONE, Ordering::Release);
    }
}

/// Host: serves every request posted in `slots` now, each exactly once even if other threads
/// look too; `serve(slot index, slot, request)` must complete the request. Returns whether it
/// served any.
pub fn serve_posted(slots: &Slots, mut serve: impl FnMut(usize, &Slot, Request)) -> bool {
    let mut served = false;
    for (index, slot) in slots.slot.iter().enumerate() {
        if let Some(request) = slot.take_request() {
            serve(index, slot, request);
            served = true;
        }
    }
    served
}

/// Host: one looking session over the request areas `areas` (one per node): tells each area's
/// guests that it looks, serves whatever is posted in any of them until `keep_looking(idle
/// looks in a row)` says stop, then stops looking and looks once more.
/// `serve(area index, slot index, slot, request)` must complete the request.
pub fn look(
    areas: &[&Slots],
    mut serve: impl FnMut(usize, usize, &Slot, Request),
    mut keep_looking: impl FnMut(u32) -> bool,
) {
    for area in areas {
        area.host.begin_looking();
    }
    let mut serve_all = || {
        let mut served = false;
        for (a, area) in areas.iter().enumerate() {
            served |= serve_posted(area, |index, slot, request| serve(a, index, slot, request));
        }
        served
    };
    let mut idle_looks = 0;
    loop {
        if serve_all() {
            idle_looks = 0;
        } else if keep_looking(idle_looks) {
            idle_looks += 1;
        } else {
            break;
        }
    }
    for area in areas {
        area.host.end_looking();
    }
    serve_all();
}

/// Why a forwarded access failed, as the guest sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ForwardError {
    /// The host answered with this status.
    Host(Status),
    /// The host never answered (a platform that is gone must not hang the guest).
    TimedOut,
}

/// Guest: one forwarded access through slot `index`, start to end. `kick` tells the host (one
/// UART byte) when no host thread looks, and `timed_out` is polled while waiting.
#[allow(clippy::too_many_arguments)]
#[inline]
pub fn forward(
    slots: &Slots,
    index: usize,
    write: bool,
    size: u32,
    pa: u64,
    data: u128,
    kick: impl FnOnce(),
    timed_out: impl FnMut() -> bool,
) -> Result<u128, ForwardError> {
    forward_timed(slots, index, (write, size, pa, data), kick, timed_out, || 0).0
}

/// Where one forwarded access spent its time, in the units of the `now` given to
/// [`forward_timed`] (timer ticks, or instructions under `-icount`), besides the host's own
/// figure.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timing {
    /// The host was asleep: the guest kicked it.
    pub kicked: bool,
    /// Writing the kick.
    pub kick: u64,
    /// From the end of the kick (or the post, if none) to the result.
    pub wait: u64,
    /// Nanoseconds the host's device model took (host clock).
    pub model_ns: u32,
}

/// [`forward`], timed with `now` around the kick and the wait (`cargo xtask bench platform
/// --breakdown`). The access is `(write, size, pa, data)`.
#[inline]
pub fn forward_timed(
    slots: &Slots,
    index: usize,
    (write, size, pa, data): (bool, u32, u64, u128),
    kick: impl FnOnce(),
    mut timed_out: impl FnMut() -> bool,
    now: impl Fn() -> u64,
) -> (Result<u128, ForwardError>, Timing) {
    /// Looks at the slot between two looks at the clock: reading the clock is an exit to the
    /// emulator, the slot is plain memory.
    const SPINS_PER_CLOCK: u32 = 64;
    let slot = &slots.slot[index];
    let seq = slot.post(write, size, pa, data);
    let mut timing = Timing::default();
    let mut t = now();
    if slots.host.needs_kick() {
        kick();
        let after = now();
        timing = Timing { kicked: true, kick: after.wrapping_sub(t), ..timing };
        t = after;
    }
    let mut spins = 0u32;
    let result = loop {
        if let Some(result) = slot.finished(seq) {
            break result.map_err(ForwardError::Host);
        }
        spins = spins.wrapping_add(1);
        if spins.is_multiple_of(SPINS_PER_CLOCK) && timed_out() {
            break Err(ForwardError::TimedOut);
        }
        core::hint::spin_loop();
    };
    timing.wait = now().wrapping_sub(t);
    timing.model_ns = slot.model_ns.load(Ordering::Relaxed);
    (result, timing)
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

/// What the host tells the guests, in the line after the slots.
#[repr(C, align(64))]
pub struct HostFlags {
    /// Host threads looking at the slots by themselves: while it is not 0, a posted request
    /// needs no kick.
    pub lookers: AtomicU32,
    _reserved: [u32; 15],
}

impl HostFlags {
    /// Guest, after posting: whether the host must be kicked. The barrier orders the post
    /// before the look at `lookers` (see the module's text).
    pub fn needs_kick(&self) -> bool {
        system_barrier();
        self.lookers.load(Ordering::Acquire) == 0
    }

    /// Host: this thread looks at the slots by itself from now on.
    pub fn begin_looking(&self) {
        self.lookers.fetch_add(1, Ordering::SeqCst);
    }

    /// Host: this thread stops looking. After this returns it must look at every slot once
    /// more ([`serve_posted`]): a guest that saw it looking did not kick.
    pub fn end_looking(&self) {
        self.lookers.fetch_sub(1, Ordering::SeqCst);
        system_barrier();
    }
}

/// The request area at the board's forwarding address: the slots, then the host's flags.
#[repr(C)]
pub struct Slots {
    pub slot: [Slot; SLOTS],
    pub host: HostFlags,
}

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
        assert_eq!(offset_of!(Slot, model_ns), 0x30);
        assert_eq!(offset_of!(Slots, host), 0x200);
        assert_eq!(size_of::<Slots>(), 0x240);
    }

    #[test]
    fn request_and_completion_round_trip() {
        // SAFETY: all-zero is an idle slot.
        let slot: Slot = unsafe { core::mem::zeroed() };
        let seq = slot.post(true, 16, 0x8000_0010, u128::MAX - 5);
        assert_eq!(slot.finished(seq), None, "not served yet");
        let req = slot.take_request().unwrap();
        assert_eq!(req, Request { seq, write: true, size: 16, addr: 0x8000_0010, data: u128::MAX - 5 });
        slot.complete(req.seq, Ok(0), 0);
        assert_eq!(slot.finished(seq), Some(Ok(0)));
        assert_eq!(slot.take_request(), None, "the slot is idle again");
        let seq = slot.post(false, 4, 0x8050_0000, 0);
        slot.complete(seq, Err(Status::Unmapped), 0);
        assert_eq!(slot.finished(seq), Some(Err(Status::Unmapped)));
    }

    #[test]
    fn a_looked_at_area_is_not_kicked_an_unwatched_one_is() {
        // SAFETY: all-zero is idle slots and no host thread looking.
        let slots: Slots = unsafe { core::mem::zeroed() };
        assert!(slots.host.needs_kick());
        slots.host.begin_looking();
        slots.host.begin_looking();
        slots.host.end_looking();
        assert!(!slots.host.needs_kick(), "one thread still looks");
        slots.host.end_looking();
        assert!(slots.host.needs_kick());
    }

    #[test]
    fn a_request_is_taken_by_one_host_thread_only() {
        // SAFETY: all-zero is an idle slot.
        let slot: Slot = unsafe { core::mem::zeroed() };
        slot.post(false, 4, 0x100, 0);
        assert!(slot.take_request().is_some());
        assert_eq!(slot.take_request(), None, "already taken");
    }

    /// Two guests on each of two nodes race the host as `qemu-virt` arranges it: a server per
    /// node that sleeps until kicked, serves and wakes the looker, and one looker for both
    /// nodes that looks in short sessions. Every access is served exactly once and none waits
    /// for a kick that never comes (the guest would time out).
    #[test]
    fn no_request_is_missed_while_the_host_falls_asleep() {
        use std::sync::atomic::AtomicBool;
        use std::sync::mpsc;
        use std::sync::{Arc, Condvar, Mutex};
        use std::time::{Duration, Instant};
        const ACCESSES: u64 = 10_000;
        const NODES: usize = 2;
        let areas: &'static [Slots; NODES] = Box::leak(Box::new(
            // SAFETY: as above.
            unsafe { core::mem::zeroed() },
        ));
        let served = Arc::new(AtomicU64::new(0));
        let answer = {
            let served = served.clone();
            move |slot: &Slot, req: Request| {
                served.fetch_add(1, Ordering::Relaxed);
                slot.complete(req.seq, Ok(req.data + 1), 0);
            }
        };
        let nudge = Arc::new((Mutex::new(false), Condvar::new()));
        let done = Arc::new(AtomicBool::new(false));
        let looker = {
            let (nudge, done, answer) = (nudge.clone(), done.clone(), answer.clone());
            std::thread::spawn(move || {
                let all: Vec<&Slots> = areas.iter().collect();
                let (lock, wake) = &*nudge;
                loop {
                    let mut nudged = wake.wait_while(lock.lock().unwrap(), |n| !*n).unwrap();
                    *nudged = false;
                    drop(nudged);
                    if done.load(Ordering::Relaxed) {
                        return;
                    }
                    // Short sessions, so that the looker falls asleep often; a pause after the
                    // last look (as if the host thread lost its core there) widens the window
                    // in which a guest sees it looking although it has looked for the last time.
                    let keep_looking = |idle| {
                        if idle < 3 {
                            return true;
                        }
                        std::thread::sleep(Duration::from_micros(50));
                        false
                    };
                    look(&all, |_, _, slot, req| answer(slot, req), keep_looking);
                }
            })
        };
        let mut kick_txs = Vec::new();
        let servers: Vec<_> = (0..NODES)
            .map(|node| {
                let (tx, rx) = mpsc::channel::<u8>();
                kick_txs.push(tx);
                let (nudge, answer) = (nudge.clone(), answer.clone());
                std::thread::spawn(move || {
                    while rx.recv().is_ok() {
                        serve_posted(&areas[node], |_, slot, req| answer(slot, req));
                        let (lock, wake) = &*nudge;
                        *lock.lock().unwrap() = true;
                        wake.notify_one();
                    }
                })
            })
            .collect();
        let guests: Vec<_> = (0..NODES * 2)
            .map(|g| {
                let (node, index) = (g / 2, g % 2);
                let kick_tx = kick_txs[node].clone();
                std::thread::spawn(move || {
                    let mut kicks = 0u64;
                    for i in 0..ACCESSES {
                        let give_up = Instant::now() + Duration::from_secs(2);
                        let kick = || {
                            kicks += 1;
                            kick_tx.send(index as u8).unwrap();
                        };
                        let r =
                            forward(&areas[node], index, false, 8, 0, u128::from(i), kick, || Instant::now() > give_up);
                        assert_eq!(r, Ok(u128::from(i) + 1), "access {i} of guest {g}");
                    }
                    kicks
                })
            })
            .collect();
        let kicks: u64 = guests.into_iter().map(|g| g.join().unwrap()).sum();
        drop(kick_txs);
        servers.into_iter().for_each(|s| s.join().unwrap());
        done.store(true, Ordering::Relaxed);
        *nudge.0.lock().unwrap() = true;
        nudge.1.notify_one();
        looker.join().unwrap();
        assert_eq!(served.load(Ordering::Relaxed), NODES as u64 * 2 * ACCESSES);
        assert!(kicks < NODES as u64 * 2 * ACCESSES, "a looked-at area was kicked for every access");
        assert!(areas.iter().all(|a| a.host.lookers.load(Ordering::Relaxed) == 0), "every looker stopped looking");
    }

    #[test]
    fn a_stale_completion_is_not_taken_for_a_new_request() {
        // SAFETY: all-zero is an idle slot.
        let slot: Slot = unsafe { core::mem::zeroed() };
        let old = slot.post(false, 4, 0, 0);
        slot.complete(old, Ok(1), 0);
        let new = old.wrapping_add(1);
        assert_eq!(slot.finished(new), None);
    }
}
