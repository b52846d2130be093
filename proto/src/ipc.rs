//! Request/response channel between the A53 kernel and the R5 firmware.
//!
//! Two single-producer single-consumer rings of fixed 64-byte messages live in the shared DDR
//! region the board reserves for them (`docs/hw/ipc.md`): `to_r5` carries requests, `to_a53`
//! carries responses and events. The A53 kernel initialises the area before it starts the R5.
//!
//! Only loads, stores and barriers are used on the shared memory (no read-modify-write), so the
//! protocol works on memory that is non-cacheable on both sides and shared by cores that are not
//! in one coherency domain, as the A53 cluster and the RPU are on the ZynqMP.

use crate::r5_sleep::{A53WakeLine, SleepLine};
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicU32, Ordering};

/// Set in the sequence number of a post (a request whose reply nobody waits for: the kernel's
/// fault answers). The A53 discards such replies when it reads them, and the R5 drops one when
/// its reply ring is full instead of waiting for room (`docs/hw/ipc.md`).
pub const POSTED: u32 = 1 << 31;

/// Identifies an initialised [`IpcArea`] (ASCII "UIPC").
pub const MAGIC: u32 = 0x4350_4955;
pub const VERSION: u32 = 2;

/// Slots per ring. A power of two, so the free-running indices wrap cleanly.
pub const RING_SLOTS: usize = 64;

/// One message: an operation, a sequence number chosen by the sender, and seven arguments whose
/// meaning the operation defines (see [`op`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Message {
    pub op: u32,
    pub seq: u32,
    pub args: [u64; 7],
}

impl Message {
    pub const fn new(op: u32, seq: u32, args: [u64; 7]) -> Self {
        Self { op, seq, args }
    }
}

/// Operation codes. Requests travel A53 -> R5, replies carry the request's op with
/// [`op::REPLY`] set.
pub mod op {
    /// Set in the op of every reply.
    pub const REPLY: u32 = 0x8000_0000;
    /// Liveness check; the reply carries the firmware's message counters in args[0..2].
    pub const PING: u32 = 0x01;
    /// Echo: the reply carries the same sequence number and arguments.
    pub const ECHO: u32 = 0x02;
    /// Write a trace line that carries args[0] (a nonce), so the host can check that the R5
    /// trace reaches it; the reply comes after the line was written.
    pub const TRACE_NONCE: u32 = 0x03;
    /// The R5 reaches the PL: it reads the system block's ID and node id, writes args[0] to the
    /// scratch register and reads it back, then times args[1] (at most 1024) reads of it. The
    /// reply: [node id, scratch read back, ID register, reads timed, median cycles, p99 cycles].
    pub const PL_PROBE: u32 = 0x04;
    /// Reads timed by one PL_PROBE at most.
    pub const PL_PROBE_MAX_READS: u64 = 1024;
    /// Self-test of the firmware's fault path: with args[0] == [`FAULT_TEST_KEY`] the
    /// firmware loads from args[1], an address its MPU must refuse, and reports the abort in
    /// its trace (it does not reply, and stops). Without the key it answers UNKNOWN.
    pub const FAULT_TEST: u32 = 0x7e;
    pub const FAULT_TEST_KEY: u64 = 0xfa17_7e57_fa17_7e57;
    /// RDMA: register PD args[0]'s queue set at PA args[1] (`crate::pldma::ipc`).
    pub const RDMA_REGISTER: u32 = 0x10;
    /// RDMA: forget PD args[0]'s queues and transfers.
    pub const RDMA_UNREGISTER: u32 = 0x11;
    /// RDMA: a fault of transaction (PD args[0], tid args[1], seq args[2]) owned by this node
    /// is resolved; args[3] = the action (0 retry, 1 abort).
    pub const RDMA_FAULT_RESOLVED: u32 = 0x12;
    /// RDMA: set the scheduler's parameters; 0 keeps one.
    pub const RDMA_CONFIG: u32 = 0x13;
    /// RDMA: page args[0] of the scheduler's counters.
    pub const RDMA_STATS: u32 = 0x14;
    /// Sent by the firmware, unasked, for every kernel boot it sees: args[0] = firmware version,
    /// args[1] = the boot nonce it answers.
    pub const READY: u32 = REPLY | 0x7fff_0001;
    /// A request with an op the firmware does not know is answered with this op and the
    /// unknown op in args[0].
    pub const UNKNOWN: u32 = REPLY | 0x7fff_ffff;
}

/// Full-system barrier: orders this core's accesses to shared memory as seen by the other
/// processor cluster (inner-shareable barriers do not reach the RPU).
#[inline(always)]
pub fn system_barrier() {
    #[cfg(target_arch = "aarch64")]
    aarch64_cpu::asm::barrier::dmb(aarch64_cpu::asm::barrier::SY);
    #[cfg(target_arch = "arm")]
    aarch32_cpu::asm::dmb(); // DMB with the default option, SY
    #[cfg(not(any(target_arch = "aarch64", target_arch = "arm")))]
    core::sync::atomic::fence(Ordering::SeqCst);
}

/// A single-producer single-consumer ring in shared memory.
///
/// `head` counts messages ever produced and is written by the producer only; `tail` counts
/// messages ever consumed and is written by the consumer only. Each sits in its own 64-byte
/// line so the two sides never write the same cache line.
#[repr(C, align(64))]
pub struct Ring<T: Copy, const N: usize> {
    head: AtomicU32,
    _pad0: [u32; 15],
    tail: AtomicU32,
    _pad1: [u32; 15],
    slots: [UnsafeCell<T>; N],
}

// SAFETY: slots are only written by the single producer before it publishes them with `head`,
// and only read by the single consumer before it releases them with `tail` (see Producer and
// Consumer, which are the only way in).
unsafe impl<T: Copy + Send, const N: usize> Sync for Ring<T, N> {}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Full;

impl<T: Copy, const N: usize> Ring<T, N> {
    const CHECK: () = assert!(N.is_power_of_two() && N <= 1 << 16);

    #[cfg(test)]
    fn reset_at(&self, start: u32) {
        self.head.store(start, Ordering::Relaxed);
        self.tail.store(start, Ordering::Relaxed);
    }

    pub fn len(&self) -> usize {
        self.head.load(Ordering::Acquire).wrapping_sub(self.tail.load(Ordering::Acquire)) as usize
    }

    /// Indices that no correct producer/consumer pair can produce (stale memory from an earlier
    /// boot): the ring then reads as empty and refuses pushes until its consumer discards.
    fn is_inconsistent(head: u32, tail: u32) -> bool {
        head.wrapping_sub(tail) as usize > N
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Entries ever produced (the producer's index).
    pub fn produced(&self) -> u32 {
        self.head.load(Ordering::Acquire)
    }

    /// Entries ever consumed (the consumer's index).
    pub fn consumed(&self) -> u32 {
        self.tail.load(Ordering::Acquire)
    }

    /// # Safety
    ///
    /// At most one `Producer` may exist for a ring at any time, across both processors.
    pub unsafe fn producer(&self) -> Producer<'_, T, N> {
        Producer { ring: self }
    }

    /// # Safety
    ///
    /// At most one `Consumer` may exist for a ring at any time, across both processors.
    pub unsafe fn consumer(&self) -> Consumer<'_, T, N> {
        Consumer { ring: self }
    }
}

pub struct Producer<'a, T: Copy, const N: usize> {
    ring: &'a Ring<T, N>,
}

impl<T: Copy, const N: usize> Producer<'_, T, N> {
    /// Queues `value`, or returns [`Full`] and leaves the ring unchanged.
    pub fn push(&mut self, value: T) -> Result<(), Full> {
        let () = Ring::<T, N>::CHECK;
        let head = self.ring.head.load(Ordering::Relaxed);
        let tail = self.ring.tail.load(Ordering::Acquire);
        if head.wrapping_sub(tail) as usize >= N {
            return Err(Full);
        }
        let slot = self.ring.slots[head as usize % N].get();
        // SAFETY: the slot is outside [tail, head), so the consumer does not read it until we
        // publish it below; we are the only producer. A plain write, not a volatile one: the
        // barrier and the release of `head` publish it all the same, and the compiler may then
        // build the value in the slot itself instead of on the stack and copying it field by
        // field (the R5 posts a 64-byte descriptor per RDMA block).
        unsafe { slot.write(value) };
        system_barrier();
        self.ring.head.store(head.wrapping_add(1), Ordering::Release);
        Ok(())
    }
}

pub struct Consumer<'a, T: Copy, const N: usize> {
    ring: &'a Ring<T, N>,
}

impl<T: Copy, const N: usize> Consumer<'_, T, N> {
    pub fn pop(&mut self) -> Option<T> {
        let tail = self.ring.tail.load(Ordering::Relaxed);
        let head = self.ring.head.load(Ordering::Acquire);
        if head == tail || Ring::<T, N>::is_inconsistent(head, tail) {
            return None;
        }
        system_barrier();
        let slot = self.ring.slots[tail as usize % N].get();
        // SAFETY: the slot is inside [tail, head): published by the producer, which will not
        // touch it until we release it below; we are the only consumer. A plain read (the
        // barriers around it order it): the compiler may then read the fields where they are
        // used instead of copying the whole value first.
        let value = unsafe { slot.read() };
        system_barrier();
        self.ring.tail.store(tail.wrapping_add(1), Ordering::Release);
        Some(value)
    }

    /// Whether [`Consumer::pop`] would return a value.
    pub fn has_pending(&self) -> bool {
        let head = self.ring.head.load(Ordering::Acquire);
        let tail = self.ring.tail.load(Ordering::Relaxed);
        head != tail && !Ring::<T, N>::is_inconsistent(head, tail)
    }

    /// Drops whatever the ring holds (messages of an earlier boot), by moving this side's own
    /// index; the producer's is never touched, so a producer still running is not disturbed.
    pub fn discard_pending(&mut self) -> usize {
        let head = self.ring.head.load(Ordering::Acquire);
        let tail = self.ring.tail.load(Ordering::Relaxed);
        self.ring.tail.store(head, Ordering::Release);
        system_barrier();
        head.wrapping_sub(tail) as usize
    }
}

pub type MessageRing = Ring<Message, RING_SLOTS>;

/// The shared-DDR area both processors map at the board's IPC address.
#[repr(C, align(64))]
pub struct IpcArea {
    pub magic: AtomicU32,
    pub version: AtomicU32,
    /// Chosen afresh by the kernel at every boot; the firmware's READY echoes it, so neither
    /// side mistakes stale DDR (a warm reset, an R5 the FSBL started earlier) for a live peer.
    pub boot_nonce: AtomicU32,
    _reserved: [u32; 13],
    /// Whether the R5 sleeps, and in which sleep (written by the R5 only, and never by
    /// [`IpcArea::init`]: the R5 may sleep before the kernel's first boot).
    pub r5_sleep: SleepLine,
    /// The kernel's memory of the sleep it last woke (written by the A53 only).
    pub a53_wake: A53WakeLine,
    /// Requests, A53 -> R5.
    pub to_r5: MessageRing,
    /// Replies and events, R5 -> A53.
    pub to_a53: MessageRing,
}

impl IpcArea {
    /// Kernel: marks the area valid for boot `nonce` (non-zero), after dropping replies of an
    /// earlier boot with `replies` (the kernel's consumer of `to_a53`).
    ///
    /// Each side only ever moves its own index (docs/hw/ipc.md): the firmware, which may
    /// already run (the FSBL starts it on hardware), drops stale requests when it sees a nonce
    /// it has not answered. The kernel sends nothing before the firmware's READY for `nonce`.
    pub fn init(&self, nonce: u32, replies: &mut Consumer<'_, Message, RING_SLOTS>) {
        self.magic.store(0, Ordering::Relaxed);
        system_barrier();
        replies.discard_pending();
        self.a53_wake.reset();
        self.version.store(VERSION, Ordering::Relaxed);
        self.boot_nonce.store(nonce, Ordering::Relaxed);
        system_barrier();
        self.magic.store(MAGIC, Ordering::Release);
    }

    pub fn is_valid(&self) -> bool {
        self.magic.load(Ordering::Acquire) == MAGIC && self.version.load(Ordering::Relaxed) == VERSION
    }

    /// The kernel's current boot nonce, once the area is valid.
    pub fn nonce(&self) -> Option<u32> {
        self.is_valid().then(|| self.boot_nonce.load(Ordering::Acquire)).filter(|&n| n != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::{offset_of, size_of};
    use std::boxed::Box;

    fn new_ring<const N: usize>() -> Box<Ring<u64, N>> {
        // SAFETY: all-zero bytes are a valid empty ring of u64.
        unsafe { Box::new(core::mem::zeroed()) }
    }

    #[test]
    fn layout_matches_docs_hw_ipc() {
        assert_eq!(size_of::<Message>(), 64);
        assert_eq!(offset_of!(MessageRing, tail), 64);
        assert_eq!(offset_of!(MessageRing, slots), 128);
        assert_eq!(size_of::<MessageRing>(), 128 + 64 * RING_SLOTS);
        assert_eq!(offset_of!(IpcArea, r5_sleep), 0x40);
        assert_eq!(offset_of!(IpcArea, a53_wake), 0x80);
        assert_eq!(offset_of!(IpcArea, to_r5), 0xc0);
        assert_eq!(offset_of!(IpcArea, to_a53), 0xc0 + size_of::<MessageRing>());
    }

    #[test]
    fn discarding_moves_only_the_consumer_index() {
        let ring = new_ring::<8>();
        // SAFETY: one producer and one consumer in this test.
        let (mut tx, mut rx) = unsafe { (ring.producer(), ring.consumer()) };
        for i in 0..5 {
            tx.push(i).unwrap();
        }
        assert_eq!(rx.discard_pending(), 5);
        assert_eq!(rx.pop(), None);
        tx.push(77).unwrap();
        assert_eq!(rx.pop(), Some(77), "the producer goes on undisturbed");
    }

    #[test]
    fn stale_indices_read_as_empty_until_discarded() {
        let ring = new_ring::<8>();
        ring.head.store(3, Ordering::Relaxed);
        ring.tail.store(1000, Ordering::Relaxed);
        // SAFETY: one producer and one consumer in this test.
        let (mut tx, mut rx) = unsafe { (ring.producer(), ring.consumer()) };
        assert_eq!(rx.pop(), None, "no replay of stale slots");
        assert_eq!(tx.push(1), Err(Full), "no push into a ring in an impossible state");
        rx.discard_pending();
        tx.push(2).unwrap();
        assert_eq!(rx.pop(), Some(2));
    }

    #[test]
    fn full_ring_refuses_and_loses_nothing() {
        let ring = new_ring::<4>();
        // SAFETY: one producer and one consumer in this test.
        let (mut tx, mut rx) = unsafe { (ring.producer(), ring.consumer()) };
        for i in 0..4 {
            tx.push(i).unwrap();
        }
        assert_eq!(tx.push(99), Err(Full));
        assert_eq!(ring.len(), 4);
        for i in 0..4 {
            assert_eq!(rx.pop(), Some(i));
        }
        assert_eq!(rx.pop(), None);
    }

    #[test]
    fn indices_wrap_around_u32() {
        let ring = new_ring::<8>();
        ring.reset_at(u32::MAX - 3);
        // SAFETY: one producer and one consumer in this test.
        let (mut tx, mut rx) = unsafe { (ring.producer(), ring.consumer()) };
        for i in 0..100u64 {
            tx.push(i).unwrap();
            tx.push(i + 1000).unwrap();
            assert_eq!(rx.pop(), Some(i));
            assert_eq!(rx.pop(), Some(i + 1000));
        }
        assert!(ring.is_empty());
    }

    #[test]
    fn threads_pass_a_million_messages_in_order() {
        let ring: &'static Ring<u64, 64> = Box::leak(new_ring::<64>());
        const COUNT: u64 = 1_000_000;
        let producer = std::thread::spawn(move || {
            // SAFETY: the only producer.
            let mut tx = unsafe { ring.producer() };
            for i in 0..COUNT {
                while tx.push(i).is_err() {
                    std::hint::spin_loop();
                }
            }
        });
        // SAFETY: the only consumer.
        let mut rx = unsafe { ring.consumer() };
        let mut expected = 0;
        while expected < COUNT {
            if let Some(v) = rx.pop() {
                assert_eq!(v, expected);
                expected += 1;
            }
        }
        producer.join().unwrap();
    }
}
