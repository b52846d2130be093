//! OpenSHMEM 1.5 on Unimem (issue #25; the C side's contract is `include/unimem_shmem.h`): one
//! implementation under the Rust API ([`World`]) and the C one (`unimem-c`, `src/shmem.rs`).
//!
//! - One PE per node, PE number = node number, one job = one protection domain. PE 0 (started
//!   by the runner on node 0) spawns this same program on nodes 1..N-1 ([`launch`]).
//! - Symmetric addresses are ordinary virtual addresses, the same in every PE: the program's
//!   image (its globals) and the symmetric heap, which every PE maps with `MAP_FIXED` at
//!   `layout::SYMMETRIC_HEAP` and allocates from deterministically ([`heap`]).
//! - RMA goes through the PLDMA (`crate::rdma`), atomics through process atomics
//!   (`crate::va_atomic`) for other PEs, CPU atomics for this one ([`rma`], [`atomic`]).
//! - Waits poll local memory with a backoff that sleeps, and end with [`ShmemError::PeGone`]
//!   naming a PE that has ended instead of hanging ([`wait`]); collectives, barriers and
//!   locks are built from these ([`collective`], [`lock`]).
//!
//! Everything is generic over a [`Transport`], so the host tests run whole jobs of N PEs as
//! threads against a fake cluster (`fake.rs`, `tests.rs`).

pub mod atomic;
pub mod collective;
mod error;
#[cfg(test)]
mod fake;
pub mod heap;
pub mod launch;
pub mod lock;
pub mod rma;
#[cfg(test)]
mod tests;
pub mod transport;
pub mod wait;
mod world;

pub use atomic::AtomicWord;
pub use collective::{ActiveSet, ReduceOp, ReduceType};
pub use error::{STATUS_BASE, ShmemError};
pub use heap::Reserved;
pub use launch::MAX_PES;
pub use transport::Transport;
pub use wait::{Cmp, Kind, Mode};
pub use world::{Reducible, Symmetric, World, finalize, init, init_with_heap, with_pe, with_rdma};

use heap::Heap;

/// The bytes the runner looks for in an ELF to know it is an OpenSHMEM program (user
/// README, "OpenSHMEM"; `xtask/src/shmem_launch.rs`). [`Pe::start`] reads it, so every program that can initialise holds it.
pub static LAUNCH_MARK: [u8; 31] = *b"unimem-shmem-launch:pe-per-node";

/// The symmetric heap's size unless the program asks for another ([`World`]'s
/// `init_with_heap`): address space only, pages become resident when touched.
pub const DEFAULT_HEAP_BYTES: u64 = 256 << 20;

/// The version of the specification implemented (`shmem_info_get_version`).
pub const VERSION: (i32, i32) = (1, 5);
/// The vendor string (`shmem_info_get_name`), shorter than `SHMEM_MAX_NAME_LEN` (256).
pub const NAME: &str = "Unimem OpenSHMEM (unimem-user)";

/// How long PE 0 and the others wait for each other to start (spawn, map, first barrier).
pub const STARTUP_TIMEOUT_US: u64 = 120_000_000;
/// A wait that has lasted this long starts checking that the PEs it depends on are alive, and
/// checks again every this long.
pub const LIVENESS_PERIOD_US: u64 = 500_000;

/// One PE's state: its place in the job, its heap, its sync counters, its transport.
pub struct Pe<T: Transport> {
    pub(crate) t: T,
    me: u16,
    n: u16,
    heap_base: u64,
    heap_len: u64,
    image: (u64, u64),
    heap: Heap,
    /// Sync signals consumed from each PE (`Reserved::ARRIVALS` counts those received): the
    /// private `Reserved::CONSUMED` words (kept off the stack, like the heap's table).
    consumed: &'static mut [u64],
    /// Until the first barrier has passed: a PE that is not there yet is waited for.
    starting_until: Option<u64>,
    pub(crate) liveness_period_us: u64,
}

impl<T: Transport> Pe<T> {
    /// `shmem_init`: finds this process's role, starts the other PEs (PE 0), maps the
    /// symmetric heap of `heap_bytes` and waits for every PE (a barrier).
    pub fn start(mut t: T, heap_bytes: u64) -> Result<Self, ShmemError> {
        // The runner finds OpenSHMEM programs by this mark: keep it in every image that starts.
        // SAFETY: a plain read of a static.
        let _ = unsafe { core::ptr::read_volatile(&LAUNCH_MARK[0]) };
        let (node, nodes) = t.node_info()?;
        let role = launch::role(t.argument(), node, nodes)?;
        if heap_bytes <= Reserved::END || heap_bytes > proto::syscall::layout::SYMMETRIC_HEAP_MAX {
            return Err(ShmemError::BadArgument("symmetric heap size"));
        }
        let heap_bytes = heap_bytes.next_multiple_of(proto::gsas::PAGE_SIZE);
        let heap_base = match t.map_heap(heap_bytes) {
            Ok(base) => base,
            Err(e) => {
                t.log(format_args!("shmem_init: cannot map the symmetric heap ({heap_bytes} bytes, MAP_FIXED): {e:?}"));
                return Err(e.into());
            }
        };
        if role.starts_the_others {
            for pe in 1..role.n_pes {
                if let Err(e) = t.spawn(launch::tag(pe, role.n_pes), pe) {
                    t.log(format_args!("shmem_init: cannot start PE {pe} on node {pe}: {e:?}"));
                    return Err(ShmemError::at(pe, e));
                }
            }
        }
        let image = t.image();
        let now = t.now_us();
        // SAFETY: the reserved area of the heap just mapped (zeroed, this PE's own), which
        // nothing else uses: the consumed counts and the allocator's table.
        let (consumed, table) = unsafe {
            (
                core::slice::from_raw_parts_mut((heap_base + Reserved::CONSUMED) as *mut u64, MAX_PES),
                core::slice::from_raw_parts_mut(
                    (heap_base + Reserved::TABLE) as *mut (u64, u64),
                    heap::MAX_ALLOCATIONS,
                ),
            )
        };
        let mut pe = Self {
            t,
            me: role.me,
            n: role.n_pes,
            heap_base,
            heap_len: heap_bytes,
            image,
            heap: Heap::new(heap_bytes, table),
            consumed,
            starting_until: Some(now + STARTUP_TIMEOUT_US),
            liveness_period_us: LIVENESS_PERIOD_US,
        };
        pe.barrier_all()?;
        pe.starting_until = None;
        Ok(pe)
    }

    pub fn my_pe(&self) -> u16 {
        self.me
    }

    pub fn n_pes(&self) -> u16 {
        self.n
    }

    /// The symmetric heap: `(base, length)`.
    pub fn heap_range(&self) -> (u64, u64) {
        (self.heap_base, self.heap_len)
    }

    pub fn transport(&mut self) -> &mut T {
        &mut self.t
    }

    /// `pe` as a PE number, or `NoSuchPe`.
    pub fn check_pe(&self, pe: i64) -> Result<u16, ShmemError> {
        u16::try_from(pe).ok().filter(|&p| p < self.n).ok_or(ShmemError::NoSuchPe(pe))
    }

    /// Whether `[address, address + len)` is symmetric: inside the image or the heap. An empty
    /// range names no memory and is (OpenSHMEM lets a zero-length transfer or collective take
    /// any address, NULL included: tests-sos `nop_collectives`).
    pub fn is_symmetric(&self, address: u64, len: u64) -> bool {
        if len == 0 {
            return true;
        }
        let Some(end) = address.checked_add(len) else { return false };
        let inside = |(start, stop): (u64, u64)| address >= start && end <= stop;
        inside(self.image) || inside((self.heap_base, self.heap_base + self.heap_len))
    }

    /// `NotSymmetric` unless [`is_symmetric`](Self::is_symmetric).
    pub fn check_symmetric(&self, address: u64, len: u64) -> Result<(), ShmemError> {
        if self.is_symmetric(address, len) { Ok(()) } else { Err(ShmemError::NotSymmetric(address, len)) }
    }

    /// The address of a word of the library's own symmetric area.
    fn reserved(&self, offset: u64) -> u64 {
        self.heap_base + offset
    }

    /// `shmem_malloc` / `shmem_align`: collective; the same address on every PE; `None` for 0
    /// bytes or no room (on every PE alike). Ends with a barrier.
    pub fn malloc(&mut self, size: u64, align: u64) -> Result<Option<u64>, ShmemError> {
        let offset = match self.heap.alloc(size, align) {
            Ok(offset) => offset,
            Err(ShmemError::HeapFull(_)) => None,
            Err(e) => return Err(e),
        };
        self.barrier_all()?;
        Ok(offset.map(|o| self.heap_base + o))
    }

    /// `shmem_calloc`: [`malloc`](Self::malloc) of `count * size` zeroed bytes.
    pub fn calloc(&mut self, count: u64, size: u64) -> Result<Option<u64>, ShmemError> {
        // An impossible size is no room, like any other (NULL on every PE).
        let bytes = count.saturating_mul(size);
        let offset = match self.heap.alloc(bytes, heap::MIN_ALIGN) {
            Ok(offset) => offset,
            Err(ShmemError::HeapFull(_)) => None,
            Err(e) => return Err(e),
        };
        if let Some(o) = offset {
            // SAFETY: a fresh allocation inside the mapped heap, this PE's own memory.
            unsafe { core::ptr::write_bytes((self.heap_base + o) as *mut u8, 0, bytes as usize) };
        }
        self.barrier_all()?;
        Ok(offset.map(|o| self.heap_base + o))
    }

    /// The heap offset of an address `malloc` returned, or `ForeignFree`.
    fn heap_offset(&self, address: u64) -> Result<u64, ShmemError> {
        let offset = address.wrapping_sub(self.heap_base);
        match self.heap.size_of(offset) {
            Some(_) if address >= self.heap_base => Ok(offset),
            _ => Err(ShmemError::ForeignFree(address)),
        }
    }

    /// `shmem_free`: collective (a barrier first, so no PE still uses it). NULL (0) is nothing;
    /// an address `malloc` did not return is `ForeignFree`, found before anything changes.
    pub fn free(&mut self, address: u64) -> Result<(), ShmemError> {
        if address == 0 {
            return self.barrier_all();
        }
        let offset = self.heap_offset(address)?;
        self.barrier_all()?;
        self.heap.free(offset, self.heap_base).map(drop)
    }

    /// `shmem_realloc`: collective; keeps the contents up to the smaller size. NULL is a
    /// `malloc`, size 0 a `free` (returning NULL); no room: NULL and the old block kept.
    pub fn realloc(&mut self, address: u64, size: u64) -> Result<Option<u64>, ShmemError> {
        if address == 0 {
            return self.malloc(size, heap::MIN_ALIGN);
        }
        let offset = self.heap_offset(address)?;
        if size == 0 {
            self.free(address)?;
            return Ok(None);
        }
        self.barrier_all()?;
        let result = if self.heap.resize_in_place(offset, size)? {
            Some(address)
        } else {
            let old = self.heap.size_of(offset).unwrap_or(0);
            match self.heap.alloc(size, heap::MIN_ALIGN) {
                Ok(Some(new)) => {
                    let new = self.heap_base + new;
                    // SAFETY: two distinct allocations of this PE's heap.
                    unsafe {
                        core::ptr::copy_nonoverlapping(address as *const u8, new as *mut u8, old.min(size) as usize)
                    };
                    self.heap.free(offset, self.heap_base)?;
                    Some(new)
                }
                Ok(None) | Err(ShmemError::HeapFull(_)) => None,
                Err(e) => return Err(e),
            }
        };
        self.barrier_all()?;
        Ok(result)
    }

    /// Live allocations of the symmetric heap.
    pub fn allocations(&self) -> usize {
        self.heap.live()
    }

    /// `shmem_finalize`: a barrier; PE 0 then waits until every other PE has ended, so the run
    /// does not end before them.
    pub fn finalize(&mut self) -> Result<(), ShmemError> {
        self.barrier_all()?;
        if self.me == 0 {
            for pe in 1..self.n {
                let mut pause = 1_000;
                while self.alive(pe)? {
                    self.t.sleep_us(pause);
                    pause = (pause * 2).min(100_000);
                }
            }
        }
        Ok(())
    }

    /// `shmem_global_exit`: every PE of the job ends with `status` (0..=255; others: 255).
    pub fn global_exit(&mut self, status: i64) -> ! {
        let status = u8::try_from(status).unwrap_or(u8::MAX);
        self.t.job_exit(status)
    }

    /// `shmem_pe_accessible`: a PE of the job whose process is still there.
    pub fn pe_accessible(&mut self, pe: i64) -> Result<bool, ShmemError> {
        match self.check_pe(pe) {
            Ok(pe) => self.alive(pe),
            Err(_) => Ok(false),
        }
    }

    /// `shmem_addr_accessible`: a symmetric address and a PE of the job.
    pub fn addr_accessible(&self, address: u64, pe: i64) -> bool {
        self.check_pe(pe).is_ok() && self.is_symmetric(address, 1)
    }

    /// `shmem_ptr`: the address itself for this PE (another PE's memory is not load/store
    /// reachable on Unimem: `None`).
    pub fn ptr(&self, address: u64, pe: i64) -> Option<u64> {
        (self.check_pe(pe).ok() == Some(self.me) && self.is_symmetric(address, 1)).then_some(address)
    }
}
