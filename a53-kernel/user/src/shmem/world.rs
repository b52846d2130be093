//! The process's one PE and the Rust API over it, named as Rust users know it from
//! `openshmem-rs` and Lamellar: [`init`] gives a [`World`] (`my_pe`, `n_pes`, `barrier_all`,
//! typed `put`/`get`/`p`/`g`, atomics, waits, collectives, locks), and [`World::alloc`] a
//! [`Symmetric`] array in the symmetric heap. The C exports (`unimem-c`, `src/shmem.rs`) use
//! [`with_pe`] on the same PE.

use core::marker::PhantomData;
use core::sync::atomic::{AtomicBool, Ordering};

use proto::gsas::VaOp;
use spin::Mutex;

use super::transport::hw::HwTransport;
use super::wait::Wait;
use super::{ActiveSet, AtomicWord, Cmp, DEFAULT_HEAP_BYTES, Kind, Mode, Pe, ReduceOp, ReduceType, ShmemError};
use crate::error::Error;

/// The process's PE (a process has one thread: the lock only guards against re-entry).
struct Slot(Option<Pe<HwTransport>>);

// SAFETY: a process has one thread; the slot is only reached through the mutex.
unsafe impl Send for Slot {}

static PE: Mutex<Slot> = Mutex::new(Slot(None));

/// Runs `f` on the process's PE: `NotInitialised` before `init` (and after `finalize`),
/// `Lib(Busy)` from inside `f`.
pub fn with_pe<R>(f: impl FnOnce(&mut Pe<HwTransport>) -> Result<R, ShmemError>) -> Result<R, ShmemError> {
    let mut slot = PE.try_lock().ok_or(ShmemError::Lib(Error::Busy))?;
    let pe = slot.0.as_mut().ok_or(ShmemError::NotInitialised)?;
    f(pe)
}

/// The escape hatch for benchmarks and experts: runs `f` on the process's raw RDMA queues
/// (`crate::rdma::Rdma`), which the library owns (`rdma::open` works once per process), after a
/// quiet (no transfer of the library's is in progress). Transfers `f` starts cannot outlive it
/// (a `Transfer` borrows the queues, and its drop waits for its end); it may not call back into
/// the library (`Lib(Busy)`). Targets are nodes, which are PEs here; nothing is checked (not
/// the PE, not symmetry): `cargo xtask bench shmem` measures the layer under `putmem`/`getmem`
/// with it.
pub fn with_rdma<R>(f: impl FnOnce(&crate::rdma::Rdma<crate::rdma::HwDoorbell>) -> R) -> Result<R, ShmemError> {
    with_pe(|pe| {
        pe.quiet()?;
        Ok(f(pe.transport().rdma()))
    })
}

/// `shmem_init` with the default symmetric heap ([`DEFAULT_HEAP_BYTES`]). A second call
/// returns the same world.
pub fn init() -> Result<World, ShmemError> {
    init_with_heap(DEFAULT_HEAP_BYTES)
}

/// `shmem_init` with a symmetric heap of `bytes` (above 128 KiB, at most
/// `layout::SYMMETRIC_HEAP_MAX`). Every PE runs the same program, so every PE asks for the
/// same size.
pub fn init_with_heap(bytes: u64) -> Result<World, ShmemError> {
    let mut slot = PE.try_lock().ok_or(ShmemError::Lib(Error::Busy))?;
    if slot.0.is_none() {
        let t = HwTransport::open()?;
        slot.0 = Some(Pe::start(t, bytes)?);
    }
    let pe = slot.0.as_ref().ok_or(ShmemError::NotInitialised)?;
    Ok(World { me: pe.my_pe(), n: pe.n_pes() })
}

/// Whether `finalize` has run.
static FINALIZED: AtomicBool = AtomicBool::new(false);

/// `shmem_finalize`, then the PE is gone: later calls are `NotInitialised`, but another
/// `finalize` does nothing.
pub fn finalize() -> Result<(), ShmemError> {
    let mut slot = PE.try_lock().ok_or(ShmemError::Lib(Error::Busy))?;
    let Some(pe) = slot.0.as_mut() else {
        return if FINALIZED.load(Ordering::Relaxed) { Ok(()) } else { Err(ShmemError::NotInitialised) };
    };
    pe.finalize()?;
    FINALIZED.store(true, Ordering::Relaxed);
    // The RDMA queues stay open for the process's life (`rdma::open` works once).
    core::mem::forget(slot.0.take());
    Ok(())
}

/// The job as this PE sees it: a handle, `Copy`, on the process's one PE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct World {
    me: u16,
    n: u16,
}

/// An array of `len` values of `T` at the same address in every PE (the symmetric heap).
/// Made and freed collectively ([`World::alloc`], [`World::free`]).
pub struct Symmetric<T> {
    address: u64,
    len: usize,
    _type: PhantomData<*mut T>,
}

impl<T: Copy> Symmetric<T> {
    /// Its address (the same in every PE).
    pub fn address(&self) -> u64 {
        self.address
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The address of element `index`, or `BadArgument` beyond the end.
    fn at(&self, index: usize, count: usize) -> Result<u64, ShmemError> {
        if index.checked_add(count).is_none_or(|end| end > self.len) {
            return Err(ShmemError::BadArgument("index beyond the symmetric array"));
        }
        Ok(self.address + (index * size_of::<T>()) as u64)
    }

    /// This PE's copy. Other PEs may write it (puts, atomics): order reads after them with a
    /// barrier or a wait.
    pub fn as_slice(&self) -> &[T] {
        // SAFETY: `len` values of `T` in the mapped heap, allocated for this array.
        unsafe { core::slice::from_raw_parts(self.address as *const T, self.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as above, borrowed mutably.
        unsafe { core::slice::from_raw_parts_mut(self.address as *mut T, self.len) }
    }

    /// Element `index` of this PE's copy, read afresh (another PE may have changed it).
    pub fn read(&self, index: usize) -> Result<T, ShmemError> {
        // SAFETY: a checked element of the array.
        self.at(index, 1).map(|a| unsafe { core::ptr::read_volatile(a as *const T) })
    }
}

fn as_bytes<T: Copy>(values: &[T]) -> &[u8] {
    // SAFETY: plain `Copy` values viewed as their bytes.
    unsafe { core::slice::from_raw_parts(values.as_ptr().cast(), size_of_val(values)) }
}

fn as_bytes_mut<T: Copy>(values: &mut [T]) -> &mut [u8] {
    // SAFETY: as above; the callers' `T`s are plain integers and floats (any bytes are valid).
    unsafe { core::slice::from_raw_parts_mut(values.as_mut_ptr().cast(), size_of_val(values)) }
}

/// Element types of reductions.
pub trait Reducible: Copy {
    const TYPE: ReduceType;
}

macro_rules! reducible {
    ($($t:ty => $k:ident($w:expr)),*) => {$(impl Reducible for $t { const TYPE: ReduceType = ReduceType::$k($w); })*};
}
reducible!(i8 => Signed(1), i16 => Signed(2), i32 => Signed(4), i64 => Signed(8), u8 => Unsigned(1),
    u16 => Unsigned(2), u32 => Unsigned(4), u64 => Unsigned(8), f32 => Float(4), f64 => Float(8));

impl World {
    pub fn my_pe(&self) -> u16 {
        self.me
    }

    pub fn n_pes(&self) -> u16 {
        self.n
    }

    /// Every PE: the active set of the world.
    pub fn team(&self) -> ActiveSet {
        ActiveSet::world(self.n)
    }

    pub fn barrier_all(&self) -> Result<(), ShmemError> {
        with_pe(|pe| pe.barrier_all())
    }

    pub fn sync_all(&self) -> Result<(), ShmemError> {
        with_pe(|pe| pe.sync_all())
    }

    pub fn quiet(&self) -> Result<(), ShmemError> {
        with_pe(|pe| pe.quiet())
    }

    pub fn fence(&self) -> Result<(), ShmemError> {
        with_pe(|pe| pe.fence())
    }

    /// A barrier; PE 0 then waits until every other PE has ended. Call it last.
    pub fn finalize(self) -> Result<(), ShmemError> {
        finalize()
    }

    /// Ends every PE of the job with `status` (0..=255; others become 255).
    pub fn global_exit(&self, status: i64) -> ! {
        match PE.try_lock() {
            Some(mut slot) => match slot.0.as_mut() {
                Some(pe) => pe.global_exit(status),
                None => crate::sys::job_exit(u8::try_from(status).unwrap_or(u8::MAX)),
            },
            None => crate::sys::job_exit(u8::try_from(status).unwrap_or(u8::MAX)),
        }
    }

    /// `len` values of `T`, zeroed, at the same address in every PE (collective: every PE
    /// calls it, in the same order). `HeapFull` when there is no room.
    pub fn alloc<T: Copy>(&self, len: usize) -> Result<Symmetric<T>, ShmemError> {
        let bytes = len.checked_mul(size_of::<T>()).ok_or(ShmemError::HeapFull(u64::MAX))? as u64;
        let address = with_pe(|pe| pe.calloc(1, bytes.max(1)))?.ok_or(ShmemError::HeapFull(bytes))?;
        Ok(Symmetric { address, len, _type: PhantomData })
    }

    /// Frees a symmetric array (collective).
    pub fn free<T: Copy>(&self, array: Symmetric<T>) -> Result<(), ShmemError> {
        with_pe(|pe| pe.free(array.address))
    }

    /// `src` into `dest[offset..]` on `pe`; returns when it is there.
    pub fn put<T: Copy>(&self, dest: &Symmetric<T>, offset: usize, src: &[T], pe: u16) -> Result<(), ShmemError> {
        let at = dest.at(offset, src.len())?;
        with_pe(|p| p.putmem(at, as_bytes(src), i64::from(pe)))
    }

    /// `src[offset..offset + dest.len()]` of `pe` into `dest`.
    pub fn get<T: Copy>(&self, dest: &mut [T], src: &Symmetric<T>, offset: usize, pe: u16) -> Result<(), ShmemError> {
        let at = src.at(offset, dest.len())?;
        with_pe(|p| p.getmem(as_bytes_mut(dest), at, i64::from(pe)))
    }

    /// One value into `dest[index]` on `pe`.
    pub fn p<T: Copy>(&self, dest: &Symmetric<T>, index: usize, value: T, pe: u16) -> Result<(), ShmemError> {
        self.put(dest, index, &[value], pe)
    }

    /// `src[index]` of `pe`.
    pub fn g<T: Copy + Default>(&self, src: &Symmetric<T>, index: usize, pe: u16) -> Result<T, ShmemError> {
        let mut v = [T::default()];
        self.get(&mut v, src, index, pe)?;
        Ok(v[0])
    }

    /// An atomic on `target[index]` of `pe`; the old value. `compare` only for CompareSwap.
    pub fn atomic<W: AtomicWord>(
        &self,
        op: VaOp,
        target: &Symmetric<W>,
        index: usize,
        value: W,
        compare: W,
        pe: u16,
    ) -> Result<W, ShmemError> {
        let at = target.at(index, 1)?;
        with_pe(|p| p.atomic_typed(op, at, value, compare, i64::from(pe)))
    }

    pub fn atomic_fetch_add<W: AtomicWord>(
        &self,
        target: &Symmetric<W>,
        index: usize,
        value: W,
        pe: u16,
    ) -> Result<W, ShmemError> {
        self.atomic(VaOp::FetchAdd, target, index, value, value, pe)
    }

    pub fn atomic_fetch<W: AtomicWord>(&self, target: &Symmetric<W>, index: usize, pe: u16) -> Result<W, ShmemError> {
        self.atomic(VaOp::Fetch, target, index, W::from_bits(0), W::from_bits(0), pe)
    }

    pub fn atomic_set<W: AtomicWord>(
        &self,
        target: &Symmetric<W>,
        index: usize,
        value: W,
        pe: u16,
    ) -> Result<(), ShmemError> {
        self.atomic(VaOp::Set, target, index, value, value, pe).map(drop)
    }

    pub fn atomic_swap<W: AtomicWord>(
        &self,
        target: &Symmetric<W>,
        index: usize,
        value: W,
        pe: u16,
    ) -> Result<W, ShmemError> {
        self.atomic(VaOp::Swap, target, index, value, value, pe)
    }

    /// Stores `value` if the word holds `expected`; the old value.
    pub fn atomic_compare_swap<W: AtomicWord>(
        &self,
        target: &Symmetric<W>,
        index: usize,
        expected: W,
        value: W,
        pe: u16,
    ) -> Result<W, ShmemError> {
        self.atomic(VaOp::CompareSwap, target, index, value, expected, pe)
    }

    /// Waits until `var[index]` (this PE's) `cmp` `value`.
    pub fn wait_until<W: AtomicWord>(
        &self,
        var: &Symmetric<W>,
        index: usize,
        cmp: Cmp,
        value: W,
    ) -> Result<(), ShmemError> {
        let at = var.at(index, 1)?;
        let kind = Kind { width: W::WIDTH.bytes() as usize, signed: W::SIGNED };
        let w =
            Wait { kind, mode: Mode::All, ivars: at, n: 1, status: None, cmp, values: None, value: value.to_bits() };
        with_pe(|p| p.wait(&w, true, None)).map(drop)
    }

    /// `root`'s `src` into every PE's `dest` (the root's too).
    pub fn broadcast<T: Copy>(
        &self,
        dest: &Symmetric<T>,
        src: &Symmetric<T>,
        root: u16,
        set: ActiveSet,
    ) -> Result<(), ShmemError> {
        let n = size_of::<T>() * src.len.min(dest.len);
        let root = (i64::from(root) - set.start) / set.stride.max(1);
        with_pe(|p| p.broadcast(dest.address, src.address, n, root, true, set))
    }

    /// Every member's `src` (the same length) one after the other into `dest`.
    pub fn fcollect<T: Copy>(&self, dest: &Symmetric<T>, src: &Symmetric<T>, set: ActiveSet) -> Result<(), ShmemError> {
        if dest.len < src.len * set.size.max(0) as usize {
            return Err(ShmemError::BadArgument("fcollect destination too short"));
        }
        with_pe(|p| p.fcollect(dest.address, src.address, size_of::<T>() * src.len, set))
    }

    /// Block j of `src` (`src.len() / size` values) to PE j's `dest` at block (my index).
    pub fn alltoall<T: Copy>(&self, dest: &Symmetric<T>, src: &Symmetric<T>, set: ActiveSet) -> Result<(), ShmemError> {
        let size = set.size.max(1) as usize;
        if dest.len < src.len || !src.len.is_multiple_of(size) {
            return Err(ShmemError::BadArgument("alltoall arrays must hold size equal blocks"));
        }
        with_pe(|p| p.alltoall(dest.address, src.address, size_of::<T>() * (src.len / size), set))
    }

    /// `op` over every member's `src` into every member's `dest` (`dest` may be `src`).
    pub fn reduce<T: Reducible>(
        &self,
        op: ReduceOp,
        dest: &Symmetric<T>,
        src: &Symmetric<T>,
        set: ActiveSet,
    ) -> Result<(), ShmemError> {
        let n = src.len.min(dest.len);
        with_pe(|p| p.reduce(op, T::TYPE, dest.address, src.address, n, set))
    }

    /// Takes the lock `lock[index]` (a symmetric `i64`, zero at first), waiting for its turn.
    pub fn set_lock(&self, lock: &Symmetric<i64>, index: usize) -> Result<(), ShmemError> {
        let at = lock.at(index, 1)?;
        with_pe(|p| p.set_lock(at))
    }

    /// Takes the lock if it is free: whether it did.
    pub fn test_lock(&self, lock: &Symmetric<i64>, index: usize) -> Result<bool, ShmemError> {
        let at = lock.at(index, 1)?;
        with_pe(|p| p.test_lock(at)).map(|r| r == 0)
    }

    pub fn clear_lock(&self, lock: &Symmetric<i64>, index: usize) -> Result<(), ShmemError> {
        let at = lock.at(index, 1)?;
        with_pe(|p| p.clear_lock(at))
    }
}
