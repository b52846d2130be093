//! A fake cluster for the host tests: each PE is a thread running the test's program, which
//! starts its [`Pe`](super::Pe) over a [`FakeTransport`]. Each PE has its own image (its
//! "globals") and heap arenas on the host; the transport translates a symmetric address of the
//! caller into the same offset of the target's arena, as the hardware finds the same VA in
//! the target's process. Transfers are applied at `quiet` (so a missing quiet shows), atomics
//! at once with host atomics. A PE whose thread has ended is gone: atomics to it answer
//! `NoProcess`, transfers end with `NoRemotePd`.

use std::boxed::Box;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use std::vec::Vec;

use proto::gsas::{ErrorCode, VaOp, VaWidth};
use proto::rdma::queue::{CqeStatus, Direction};

use super::ShmemError;
use super::transport::Transport;
use crate::error::Error;

/// The bytes of each PE's image arena.
pub const IMAGE_BYTES: usize = 64 * 1024;

type Program = dyn Fn(FakeTransport) -> Result<u64, ShmemError> + Send + Sync;

/// What `job_exit` unwinds with.
struct JobExit(u8);

pub struct Cluster {
    n: u16,
    images: Vec<(u64, u64)>,
    heaps: Mutex<Vec<Option<(u64, u64)>>>,
    alive: Vec<AtomicBool>,
    program: Box<Program>,
    /// Each PE's outcome: `Ok(status)` or its error; `Err(JobExit)` as `Ok(status)` too.
    results: Mutex<Vec<Option<Result<u64, ShmemError>>>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// Arguments of the spawns made: (node, argument).
    pub spawns: Mutex<Vec<(u16, u64)>>,
    /// Which PE called `job_exit`, with what status.
    pub job_exit: Mutex<Option<(u16, u8)>>,
    start: Instant,
}

/// One run's outcome.
pub struct Outcome {
    pub results: Vec<Option<Result<u64, ShmemError>>>,
    pub spawns: Vec<(u16, u64)>,
    pub job_exit: Option<(u16, u8)>,
}

impl Cluster {
    /// Runs `program` as PE 0 on node 0 of `n` nodes (without a thread argument, as the runner
    /// starts it); returns when every thread it spawned has ended.
    pub fn run(n: u16, program: impl Fn(FakeTransport) -> Result<u64, ShmemError> + Send + Sync + 'static) -> Outcome {
        let images = (0..n)
            .map(|_| {
                let arena: &'static mut [u64] = Box::leak(std::vec![0u64; IMAGE_BYTES / 8].into_boxed_slice());
                let start = arena.as_mut_ptr() as u64;
                (start, start + IMAGE_BYTES as u64)
            })
            .collect();
        let cluster = Arc::new(Cluster {
            n,
            images,
            heaps: Mutex::new(std::vec![None; usize::from(n)]),
            alive: (0..n).map(|_| AtomicBool::new(false)).collect(),
            program: Box::new(program),
            results: Mutex::new(std::vec![None; usize::from(n)]),
            threads: Mutex::new(Vec::new()),
            spawns: Mutex::new(Vec::new()),
            job_exit: Mutex::new(None),
            start: Instant::now(),
        });
        cluster.start_pe(0, None);
        loop {
            let next = cluster.threads.lock().unwrap().pop();
            match next {
                Some(handle) => handle.join().unwrap(),
                None => break,
            }
        }
        Outcome {
            results: cluster.results.lock().unwrap().clone(),
            spawns: cluster.spawns.lock().unwrap().clone(),
            job_exit: *cluster.job_exit.lock().unwrap(),
        }
    }

    fn start_pe(self: &Arc<Self>, node: u16, argument: Option<u64>) {
        self.alive[usize::from(node)].store(true, Ordering::SeqCst);
        let cluster = Arc::clone(self);
        let handle = std::thread::Builder::new()
            .name(std::format!("pe{node}"))
            .stack_size(1 << 20)
            .spawn(move || {
                let t = FakeTransport { cluster: Arc::clone(&cluster), node, argument, posted: Vec::new() };
                let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (cluster.program)(t)));
                // The PE has ended, whatever way: the others must see it gone.
                cluster.alive[usize::from(node)].store(false, Ordering::SeqCst);
                let result = match outcome {
                    Ok(r) => r,
                    Err(payload) => match payload.downcast::<JobExit>() {
                        Ok(exit) => Ok(u64::from(exit.0)),
                        Err(payload) => std::panic::resume_unwind(payload),
                    },
                };
                cluster.results.lock().unwrap()[usize::from(node)] = Some(result);
            })
            .unwrap();
        self.threads.lock().unwrap().push(handle);
    }

    /// `va` of PE `from` as the same symmetric object of PE `to`.
    fn translate(&self, from: u16, va: u64, to: u16) -> Option<u64> {
        let (image, to_image) = (self.images[usize::from(from)], self.images[usize::from(to)]);
        if va >= image.0 && va < image.1 {
            return Some(to_image.0 + (va - image.0));
        }
        let heaps = self.heaps.lock().unwrap();
        let (base, len) = heaps[usize::from(from)]?;
        if va >= base && va < base + len {
            let (to_base, _) = heaps[usize::from(to)]?;
            return Some(to_base + (va - base));
        }
        None
    }

    fn alive(&self, pe: u16) -> bool {
        self.alive[usize::from(pe)].load(Ordering::SeqCst)
    }
}

pub struct FakeTransport {
    cluster: Arc<Cluster>,
    node: u16,
    argument: Option<u64>,
    posted: Vec<(Direction, u16, u64, usize, u64)>,
}

impl FakeTransport {
    pub fn node(&self) -> u16 {
        self.node
    }
}

impl Transport for FakeTransport {
    fn node_info(&mut self) -> Result<(u16, u16), Error> {
        Ok((self.node, self.cluster.n))
    }

    fn argument(&mut self) -> Option<u64> {
        self.argument
    }

    fn spawn(&mut self, argument: u64, node: u16) -> Result<(), Error> {
        if node >= self.cluster.n {
            return Err(Error::NoSuchNode(u64::from(node)));
        }
        self.cluster.spawns.lock().unwrap().push((node, argument));
        self.cluster.start_pe(node, Some(argument));
        Ok(())
    }

    fn map_heap(&mut self, bytes: u64) -> Result<u64, Error> {
        let arena: &'static mut [u64] = Box::leak(std::vec![0u64; bytes as usize / 8].into_boxed_slice());
        let base = arena.as_mut_ptr() as u64;
        self.cluster.heaps.lock().unwrap()[usize::from(self.node)] = Some((base, bytes));
        Ok(base)
    }

    fn image(&mut self) -> (u64, u64) {
        self.cluster.images[usize::from(self.node)]
    }

    unsafe fn post(&mut self, direction: Direction, pe: u16, local: u64, len: usize, remote: u64) -> Result<(), Error> {
        if pe >= self.cluster.n {
            return Err(Error::Transfer(CqeStatus::BadRequest));
        }
        self.posted.push((direction, pe, local, len, remote));
        Ok(())
    }

    fn quiet(&mut self) -> Result<(), (u16, Error)> {
        let mut first = Ok(());
        for (direction, pe, local, len, remote) in std::mem::take(&mut self.posted) {
            let result = if !self.cluster.alive(pe) {
                Err(Error::Transfer(CqeStatus::NoRemotePd))
            } else {
                match self.cluster.translate(self.node, remote, pe) {
                    None => Err(Error::Transfer(CqeStatus::FaultRemote)),
                    Some(target) => {
                        let (from, to) = match direction {
                            Direction::Write => (local, target),
                            Direction::Read => (target, local),
                        };
                        // SAFETY: both ends are live host memory (arenas are leaked; the local
                        // end is kept by the caller until this quiet).
                        unsafe { core::ptr::copy(from as *const u8, to as *mut u8, len) };
                        Ok(())
                    }
                }
            };
            if let (Err(e), Ok(())) = (result, &first) {
                first = Err((pe, e));
            }
        }
        std::sync::atomic::fence(Ordering::SeqCst);
        first
    }

    fn atomic(&mut self, op: VaOp, width: VaWidth, pe: u16, address: u64, arg1: u64, arg2: u64) -> Result<u64, Error> {
        if pe >= self.cluster.n {
            return Err(Error::NoSuchNode(u64::from(pe)));
        }
        if !self.cluster.alive(pe) {
            return Err(Error::Service(ErrorCode::NoProcess));
        }
        if !address.is_multiple_of(width.bytes()) {
            return Err(Error::Local(ErrorCode::Unaligned));
        }
        let target = self.cluster.translate(self.node, address, pe).ok_or(Error::Service(ErrorCode::Unmapped))?;
        let o = Ordering::SeqCst;
        Ok(match width {
            VaWidth::W64 => {
                // SAFETY: an aligned word of a leaked arena.
                let a = unsafe { AtomicU64::from_ptr(target as *mut u64) };
                let mut old = a.load(o);
                while let Some(new) = op.apply(old, arg1, arg2, width) {
                    match a.compare_exchange(old, new, o, o) {
                        Ok(_) => break,
                        Err(now) => old = now,
                    }
                }
                old
            }
            VaWidth::W32 => {
                // SAFETY: as above.
                let a = unsafe { AtomicU32::from_ptr(target as *mut u32) };
                let mut old = a.load(o);
                while let Some(new) = op.apply(u64::from(old), arg1, arg2, width) {
                    match a.compare_exchange(old, new as u32, o, o) {
                        Ok(_) => break,
                        Err(now) => old = now,
                    }
                }
                u64::from(old)
            }
        })
    }

    fn now_us(&mut self) -> u64 {
        self.cluster.start.elapsed().as_micros() as u64
    }

    fn sleep_us(&mut self, us: u64) {
        std::thread::sleep(Duration::from_micros(us));
    }

    fn log(&mut self, line: core::fmt::Arguments<'_>) {
        std::eprintln!("pe{}: {line}", self.node);
    }

    fn job_exit(&mut self, status: u8) -> ! {
        *self.cluster.job_exit.lock().unwrap() = Some((self.node, status));
        for a in &self.cluster.alive {
            a.store(false, Ordering::SeqCst);
        }
        std::panic::resume_unwind(Box::new(JobExit(status)))
    }
}

impl FakeTransport {
    /// PEs whose thread is still running.
    pub fn cluster_alive_count(&self) -> u64 {
        self.cluster.alive.iter().filter(|a| a.load(Ordering::SeqCst)).count() as u64
    }
}
