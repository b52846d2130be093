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

/// `op` bit 0: the access writes.
pub const OP_WRITE: u32 = 1 << 0;
/// `op` bit 1: a pair: a second access of the same size at `addr + size`, after the first.
pub const OP_PAIR: u32 = 1 << 1;
/// `op` bits 15:8: the size of each access in bytes.
pub const OP_SIZE_SHIFT: u32 = 8;

/// `status` bit 8: the pair's second access failed (its first was made).
pub const STATUS_SECOND: u32 = 1 << 8;

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
    /// [`OP_WRITE`], [`OP_PAIR`] and the size (1, 2, 4, 8 or 16 bytes) at [`OP_SIZE_SHIFT`].
    pub op: AtomicU32,
    /// Host: nanoseconds its device model spent on this request (for the breakdown of
    /// `cargo xtask bench platform`; the guest may ignore it).
    pub model_ns: AtomicU32,
    /// Physical address.
    pub addr: AtomicU64,
    /// Write data, or the read result: the first access's 16 bytes (low word first), then the
    /// pair's second.
    pub data: [AtomicU64; 4],
    /// A [`Status`], and [`STATUS_SECOND`] if a pair's second access is the one that failed.
    pub status: AtomicU32,
    pub done_seq: AtomicU32,
}

/// One access or a pair of them, as a guest asks for it and the host serves it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    pub write: bool,
    /// Bytes of each access: 1, 2, 4, 8 or 16.
    pub size: u32,
    /// Physical address of the first access.
    pub addr: u64,
    /// A second access of `size` bytes at `addr + size` (one LDP/STP, LDRD/STRD): served right
    /// after the first, as one bus burst.
    pub pair: bool,
    /// Write data (the second for a pair's second access).
    pub data: [u128; 2],
}

impl Access {
    /// One access of `size` bytes.
    pub fn single(write: bool, size: u32, addr: u64, data: u128) -> Self {
        Self { write, size, addr, pair: false, data: [data, 0] }
    }

    /// The physical address of the pair's second access.
    pub fn second_addr(&self) -> u64 {
        self.addr.wrapping_add(u64::from(self.size))
    }
}

/// How a forwarded access failed, as the host reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Failure {
    pub status: Status,
    /// The pair's second access failed (its first was made).
    pub second: bool,
}

/// One request, as the host takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub seq: u32,
    pub access: Access,
}

fn store_data(words: &[AtomicU64; 4], data: [u128; 2]) {
    for (i, w) in words.iter().enumerate() {
        w.store((data[i / 2] >> (64 * (i % 2))) as u64, Ordering::Relaxed);
    }
}

fn load_data(words: &[AtomicU64; 4]) -> [u128; 2] {
    let w = |i: usize| u128::from(words[i].load(Ordering::Relaxed));
    [w(0) | w(1) << 64, w(2) | w(3) << 64]
}

impl Slot {
    /// Guest: posts an access. The caller then kicks the host and waits with [`Slot::finished`].
    pub fn post(&self, access: &Access) -> u32 {
        let seq = self.seq.load(Ordering::Relaxed).wrapping_add(1);
        self.seq.store(seq, Ordering::Relaxed);
        let flags = if access.write { OP_WRITE } else { 0 } | if access.pair { OP_PAIR } else { 0 };
        self.op.store(flags | access.size << OP_SIZE_SHIFT, Ordering::Relaxed);
        self.addr.store(access.addr, Ordering::Relaxed);
        if access.write {
            store_data(&self.data, access.data);
        }
        system_barrier();
        self.state.store(REQUEST, Ordering::Release);
        seq
    }

    /// Guest: the result of request `seq` once the host has served it: the values read (the
    /// second is the pair's second).
    pub fn finished(&self, seq: u32) -> Option<Result<[u128; 2], Failure>> {
        if self.state.load(Ordering::Acquire) != DONE || self.done_seq.load(Ordering::Relaxed) != seq {
            return None;
        }
        system_barrier();
        let raw = self.status.load(Ordering::Relaxed);
        let status = Status::from_raw(raw & !STATUS_SECOND);
        let data = load_data(&self.data);
        self.state.store(IDLE, Ordering::Release);
        Some(if status == Status::Ok { Ok(data) } else { Err(Failure { status, second: raw & STATUS_SECOND != 0 }) })
    }

    /// Host: the posted request, if any, taken for this thread alone.
    pub fn take_request(&self) -> Option<Request> {
        // The plain load first: most looks find nothing, and need no locked instruction.
        if self.state.load(Ordering::Acquire) != REQUEST
            || self.state.compare_exchange(REQUEST, TAKEN, Ordering::AcqRel, Ordering::Acquire).is_err()
        {
            return None;
        }
        let op = self.op.load(Ordering::Relaxed);
        let write = op & OP_WRITE != 0;
        Some(Request {
            seq: self.seq.load(Ordering::Relaxed),
            access: Access {
                write,
                size: (op >> OP_SIZE_SHIFT) & 0xff,
                addr: self.addr.load(Ordering::Relaxed),
                pair: op & OP_PAIR != 0,
                data: if write { load_data(&self.data) } else { [0; 2] },
            },
        })
    }

    /// Host: completes request `seq`, which its model served in `model_ns`.
    pub fn complete(&self, seq: u32, result: Result<[u128; 2], Failure>, model_ns: u32) {
        let status = match result {
            Ok(data) => {
                store_data(&self.data, data);
                Status::Ok as u32
            }
            Err(f) => f.status as u32 | if f.second { STATUS_SECOND } else { 0 },
        };
        self.status.store(status, Ordering::Relaxed);
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
    /// The host answered with this failure.
    Host(Failure),
    /// The host never answered (a platform that is gone must not hang the guest).
    TimedOut,
}

/// Guest: one forwarded access (or pair) through slot `index`, start to end: the values read.
/// `kick` tells the host (one UART byte) when no host thread looks, and `timed_out` is polled
/// while waiting.
#[inline]
pub fn forward(
    slots: &Slots,
    index: usize,
    access: &Access,
    kick: impl FnMut(),
    timed_out: impl FnMut() -> bool,
) -> Result<[u128; 2], ForwardError> {
    forward_timed(slots, index, access, Patience::default(), (kick, timed_out), || 0).0
}

/// How a guest waits for its slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Patience {
    /// Looks at a slot that no host thread has taken before the guest kicks although a looker
    /// said it looks (`None`: never): a looking host thread that lost its core to others (a
    /// busy host) would otherwise leave the request until it runs again, while a kick wakes
    /// the node's server at once.
    pub late_kick: Option<u32>,
}

impl Default for Patience {
    fn default() -> Self {
        Self { late_kick: Some(LATE_KICK_SPINS) }
    }
}

/// Where one forwarded access spent its time, in the units of the `now` given to
/// [`forward_timed`] (timer ticks, or instructions under `-icount`), besides the host's own
/// figure.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timing {
    /// The host was asleep: the guest kicked it.
    pub kicked: bool,
    /// A looker said it looked, but the request was still untaken after
    /// [`Patience::late_kick`] looks: the guest kicked then.
    pub kicked_late: bool,
    /// Writing the kick.
    pub kick: u64,
    /// From the end of the kick (or the post, if none) to the result.
    pub wait: u64,
    /// Nanoseconds the host's device model took (host clock).
    pub model_ns: u32,
}

/// Looks at the slot between two looks at the clock: reading the clock is an exit to the
/// emulator, the slot is plain memory.
const SPINS_PER_CLOCK: u32 = 64;
/// [`Patience::late_kick`]'s default: a few tens of microseconds of looks.
pub const LATE_KICK_SPINS: u32 = 256;

/// [`forward`] with its patience, timed with `now` around the kick and the wait (`cargo xtask
/// bench platform --breakdown`). `(kick, timed_out)` are [`forward`]'s.
#[inline]
pub fn forward_timed(
    slots: &Slots,
    index: usize,
    access: &Access,
    patience: Patience,
    (mut kick, mut timed_out): (impl FnMut(), impl FnMut() -> bool),
    now: impl Fn() -> u64,
) -> (Result<[u128; 2], ForwardError>, Timing) {
    let slot = &slots.slot[index];
    let seq = slot.post(access);
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
        if Some(spins) == patience.late_kick && !timing.kicked && slot.state.load(Ordering::Acquire) == REQUEST {
            kick();
            timing.kicked_late = true;
        }
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
            ForwardError::Host(Failure { status: Status::Unmapped, .. }) => mmio_trap::BusError::Unmapped,
            ForwardError::Host(Failure { status: Status::Rejected, .. }) => mmio_trap::BusError::Rejected,
            ForwardError::Host(f) => mmio_trap::BusError::Other(f.status as u32),
            ForwardError::TimedOut => mmio_trap::BusError::Timeout,
        }
    }

    /// Whether the failed access was a pair's second.
    pub fn second(self) -> bool {
        matches!(self, ForwardError::Host(Failure { second: true, .. }))
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

/// The emulator's bus over one forwarding slot, for both guests (the A53 kernel's fault handler
/// and the R5's data-abort handler): `translate` gives an address's physical address if the
/// platform serves it, `request` sends one [`Access`] (or pair) through the slot and says, on
/// failure, whether it was a pair's second access. A pair (LDP/STP, LDRD/STRD) is one burst
/// when its second access is the next bytes of the same physical space, else two requests;
/// each address is translated once, and a failure names the address that failed.
pub struct SlotBus<T, R> {
    pub translate: T,
    pub request: R,
}

impl<T, R> SlotBus<T, R>
where
    T: FnMut(u64) -> Option<u64>,
    R: FnMut(&Access) -> Result<[u128; 2], ForwardError>,
{
    fn forwarded(&mut self, addr: u64) -> Result<u64, (u64, mmio_trap::BusError)> {
        (self.translate)(addr).ok_or((addr, mmio_trap::BusError::Unmapped))
    }

    /// `access`, made for the addresses `addrs` (the second is a pair's).
    fn send(&mut self, addrs: [u64; 2], access: &Access) -> Result<[u128; 2], (u64, mmio_trap::BusError)> {
        (self.request)(access).map_err(|e| (addrs[usize::from(e.second())], e.bus_error()))
    }

    fn single(&mut self, write: bool, addr: u64, size: u32, value: u128) -> Result<u128, (u64, mmio_trap::BusError)> {
        let access = Access::single(write, size, self.forwarded(addr)?, value);
        self.send([addr; 2], &access).map(|[v, _]| v)
    }

    fn pair(
        &mut self,
        write: bool,
        addrs: [u64; 2],
        size: u32,
        values: [u128; 2],
    ) -> Result<[u128; 2], (u64, mmio_trap::BusError)> {
        let (first, second) = (self.forwarded(addrs[0])?, self.forwarded(addrs[1]));
        let burst = Access { write, size, addr: first, pair: true, data: values };
        if second.is_ok_and(|pa| pa == burst.second_addr()) {
            return self.send(addrs, &burst);
        }
        let [a, _] = self.send([addrs[0]; 2], &Access::single(write, size, first, values[0]))?;
        let [b, _] = self.send([addrs[1]; 2], &Access::single(write, size, second?, values[1]))?;
        Ok([a, b])
    }
}

impl<T, R> mmio_trap::Bus for SlotBus<T, R>
where
    T: FnMut(u64) -> Option<u64>,
    R: FnMut(&Access) -> Result<[u128; 2], ForwardError>,
{
    fn read(&mut self, addr: u64, size: mmio_trap::Size) -> Result<u128, mmio_trap::BusError> {
        self.single(false, addr, size.bytes() as u32, 0).map_err(|(_, e)| e)
    }
    fn write(&mut self, addr: u64, size: mmio_trap::Size, value: u128) -> Result<(), mmio_trap::BusError> {
        self.single(true, addr, size.bytes() as u32, value).map(drop).map_err(|(_, e)| e)
    }
    fn read_pair(&mut self, addrs: [u64; 2], size: mmio_trap::Size) -> Result<[u128; 2], (u64, mmio_trap::BusError)> {
        self.pair(false, addrs, size.bytes() as u32, [0; 2])
    }
    fn write_pair(
        &mut self,
        addrs: [u64; 2],
        size: mmio_trap::Size,
        values: [u128; 2],
    ) -> Result<(), (u64, mmio_trap::BusError)> {
        self.pair(true, addrs, size.bytes() as u32, values).map(drop)
    }
}

#[cfg(test)]
mod tests {
    use mmio_trap::{Bus, BusError, Size};
    use std::vec::Vec;

    /// A bus whose platform serves [0x1000, 0x2000) (as physical = virtual + 0x10_0000) and
    /// fails requests at `failing`, recording every request.
    type SendFn<'a> = std::boxed::Box<dyn FnMut(&Access) -> Result<[u128; 2], ForwardError> + 'a>;

    fn bus_with(sent: &mut Vec<Access>, failing: Option<u64>) -> SlotBus<fn(u64) -> Option<u64>, SendFn<'_>> {
        SlotBus {
            translate: |va: u64| (0x1000..0x2000).contains(&va).then_some(va + 0x10_0000),
            request: std::boxed::Box::new(move |a: &Access| {
                sent.push(*a);
                let second = a.pair && Some(a.second_addr()) == failing;
                if Some(a.addr) == failing || second {
                    return Err(ForwardError::Host(Failure { status: Status::Rejected, second }));
                }
                Ok([a.addr as u128, a.second_addr() as u128])
            }),
        }
    }

    #[test]
    fn the_slot_bus_bursts_adjacent_pairs_splits_the_others_and_names_the_failing_address() {
        let mut sent = Vec::new();
        let mut bus = bus_with(&mut sent, None);
        assert_eq!(bus.read(0x1008, Size::B4), Ok(0x10_1008));
        assert_eq!(bus.read_pair([0x1010, 0x1018], Size::B8), Ok([0x10_1010, 0x10_1018]));
        assert_eq!(bus.read_pair([0x1ff8, 0x2000], Size::B8), Err((0x2000, BusError::Unmapped)), "second unserved");
        assert_eq!(bus.write(0x3000, Size::B1, 1), Err(BusError::Unmapped));
        drop(bus);
        assert_eq!(sent.len(), 3, "one single, one burst, one first half: {sent:?}");
        assert!(sent[1].pair && !sent[2].pair);
        let mut sent = Vec::new();
        let mut bus = bus_with(&mut sent, Some(0x10_1028));
        assert_eq!(bus.write_pair([0x1020, 0x1028], Size::B8, [1, 2]), Err((0x1028, BusError::Rejected)));
        assert_eq!(bus.write_pair([0x1020, 0x1020], Size::B8, [1, 2]), Ok(()), "not adjacent: two requests");
        drop(bus);
        assert_eq!(sent.len(), 3);
    }

    use super::*;
    use core::mem::{offset_of, size_of};

    #[test]
    fn layout_matches_docs_hw_forwarding() {
        assert_eq!(size_of::<Slot>(), 64);
        assert_eq!(offset_of!(Slot, op), 0x08);
        assert_eq!(offset_of!(Slot, model_ns), 0x0c);
        assert_eq!(offset_of!(Slot, addr), 0x10);
        assert_eq!(offset_of!(Slot, data), 0x18);
        assert_eq!(offset_of!(Slot, status), 0x38);
        assert_eq!(offset_of!(Slot, done_seq), 0x3c);
        assert_eq!(offset_of!(Slots, host), 0x200);
        assert_eq!(size_of::<Slots>(), 0x240);
    }

    #[test]
    fn request_and_completion_round_trip() {
        // SAFETY: all-zero is an idle slot.
        let slot: Slot = unsafe { core::mem::zeroed() };
        let write = Access::single(true, 16, 0x8000_0010, u128::MAX - 5);
        let seq = slot.post(&write);
        assert_eq!(slot.finished(seq), None, "not served yet");
        let req = slot.take_request().unwrap();
        assert_eq!(req, Request { seq, access: write });
        slot.complete(req.seq, Ok([0; 2]), 0);
        assert_eq!(slot.finished(seq), Some(Ok([0; 2])));
        assert_eq!(slot.take_request(), None, "the slot is idle again");
        let seq = slot.post(&Access::single(false, 4, 0x8050_0000, 0));
        let unmapped = Failure { status: Status::Unmapped, second: false };
        slot.complete(seq, Err(unmapped), 0);
        assert_eq!(slot.finished(seq), Some(Err(unmapped)));
    }

    #[test]
    fn a_pair_goes_as_one_request_and_says_which_access_failed() {
        // SAFETY: all-zero is an idle slot.
        let slot: Slot = unsafe { core::mem::zeroed() };
        let pair = Access { write: true, size: 16, addr: 0x8010_0000, pair: true, data: [u128::MAX, 7] };
        assert_eq!(pair.second_addr(), 0x8010_0010);
        let seq = slot.post(&pair);
        assert_eq!(slot.take_request(), Some(Request { seq, access: pair }));
        let failed = Failure { status: Status::Rejected, second: true };
        slot.complete(seq, Err(failed), 0);
        assert_eq!(slot.finished(seq), Some(Err(failed)));
        let read = Access { write: false, data: [0; 2], ..pair };
        let seq = slot.post(&read);
        assert_eq!(slot.take_request().unwrap().access, read);
        slot.complete(seq, Ok([3, u128::MAX - 1]), 0);
        assert_eq!(slot.finished(seq), Some(Ok([3, u128::MAX - 1])));
    }

    /// A guest whose host thread looks but never takes the request (it lost its core) kicks
    /// after a while, and the kicked server answers.
    #[test]
    fn a_request_nobody_takes_is_kicked_late() {
        let slots: &'static Slots = Box::leak(Box::new(
            // SAFETY: all-zero is idle slots and no host thread looking.
            unsafe { core::mem::zeroed() },
        ));
        slots.host.begin_looking();
        let (kick_tx, kick_rx) = std::sync::mpsc::channel();
        let server = std::thread::spawn(move || {
            kick_rx.recv().unwrap();
            serve_posted(slots, |_, slot, req| slot.complete(req.seq, Ok([req.access.addr.into(), 0]), 0));
        });
        let kick = || kick_tx.send(()).unwrap();
        let access = Access::single(false, 4, 42, 0);
        let (result, timing) = forward_timed(slots, 0, &access, Patience::default(), (kick, || false), || 0);
        assert_eq!(result, Ok([42, 0]));
        assert!(timing.kicked_late && !timing.kicked);
        server.join().unwrap();
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
        slot.post(&Access::single(false, 4, 0x100, 0));
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
                slot.complete(req.seq, Ok([req.access.data[0] + 1, 0]), 0);
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
                        let access = Access::single(true, 8, 0, u128::from(i));
                        // No late kick: it would rescue a request the protocol lost.
                        let never = Patience { late_kick: None };
                        let timed_out = || Instant::now() > give_up;
                        let r = forward_timed(&areas[node], index, &access, never, (kick, timed_out), || 0).0;
                        assert_eq!(r, Ok([u128::from(i) + 1, 0]), "access {i} of guest {g}");
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
        let old = slot.post(&Access::single(false, 4, 0, 0));
        slot.complete(old, Ok([1, 0]), 0);
        let new = old.wrapping_add(1);
        assert_eq!(slot.finished(new), None);
    }
}
