//! `rdma-pair`: user-level RDMA between processes of one protection domain
//! (`unimem_user::rdma`). The thread argument is `args::rdma_pair::pack(role)`:
//!
//! - `Sweep { node }`: spawns a `Peer` on `node` (a remote spawn keeps this PD), which sends the
//!   address of its buffer in a notification (opcode 8): the way two processes exchange buffer
//!   addresses. With `node` = this node it uses its own peer buffer. Then every power of two from
//!   16 B to 1 MiB, aligned and at odd sizes and offsets, is written there and read back, checked
//!   byte for byte; a batch of small writes is polled as many handles; transfers from and to
//!   unmapped addresses must end in FaultLocal / FaultRemote. Releases the peer (opcode 9), which
//!   reports on opcode 15 whether its device region is intact.
//! - `Device { node }`: as `Sweep`, but device memory alone: this process and its peer each map
//!   a `MAP_DEVICE` region (the peer sends its address on opcode 15) and fill it; transfers from
//!   and into them, here and there, must end in fault completions with no byte changed
//!   (`docs/hw/smmu.md`, "What the engine may reach").
//! - `Victim` / `Attack { node }`: the victim fills its buffer and waits (opcode 12); the
//!   attacker, in another PD, writes at the victim's buffer address here (it lands in the
//!   attacker's own space: a PD reaches only its own address spaces) and at `node`, where its PD
//!   has no process (NoRemotePd); then tells the victim, which checks that no byte changed.
//! - `Stress { count, seed }` / `Worker { .. }`: a Worker on every node (remote spawns), a start
//!   barrier (opcodes 10, 11), `count` random-size transfers per worker, 8 in flight, each a write
//!   into the target's slice for this node followed by a read back checked byte for byte; reports
//!   (opcode 13) and waits for the release (opcode 14).
//!
//! - `Forge { node, rounds }`: a misbehaving process: RAPF Aborts from its PD page to `node`'s R5
//!   for every tid, claiming its own PD (no transaction of its PD is in flight: stale, or
//!   foreign to another PD's live one) and claiming another PD (foreign), `rounds` times; then a
//!   real 256 KiB write and read there, checked byte for byte.
//!
//! Exit status: 0; 1..=0x3f a failed check (logged); otherwise an error status (`README.md`).
#![no_std]
#![no_main]

use core::cell::UnsafeCell;
use unimem_user::args::rdma_pair::{FORGE_PER_ROUND, FORGE_TIDS, Role, pack, unpack};
use unimem_user::rand::XorShift64;
use unimem_user::rdma::{CqeStatus, Direction, HwDoorbell, Rdma, Status, Transfer};
use unimem_user::{Error, board_count, board_id, ensure, log, register, remote_spawn, sys, thread_argument};

use unimem_user::channel::{op, send, take};

unimem_user::entry!(main);

const MIB: usize = 1 << 20;
const SLACK: usize = 64;

/// A buffer in `.bss` (resident, as every page of a process).
struct Buffer<const N: usize>(UnsafeCell<[u8; N]>);
// SAFETY: a process has one thread.
unsafe impl<const N: usize> Sync for Buffer<N> {}

impl<const N: usize> Buffer<N> {
    const fn new() -> Self {
        Self(UnsafeCell::new([0; N]))
    }
    fn addr(&self) -> u64 {
        self.0.get() as u64
    }
    #[allow(clippy::mut_from_ref)]
    fn get(&self) -> &mut [u8; N] {
        // SAFETY: one thread; each caller takes the buffer once and keeps the reference.
        unsafe { &mut *self.0.get() }
    }
}

static SOURCE: Buffer<{ MIB + SLACK }> = Buffer::new();
static BACK: Buffer<{ MIB + SLACK }> = Buffer::new();
/// The buffer other processes of this PD write into.
static PEER: Buffer<{ MIB + SLACK }> = Buffer::new();

const OP_ADDRESS: u8 = 8;
const OP_RELEASE_PEER: u8 = 9;
const OP_READY: u8 = 10;
const OP_GO: u8 = 11;
const OP_VICTIM: u8 = 12;
const OP_DONE: u8 = 13;
const OP_RELEASE: u8 = 14;
/// Peer to Sweep: its device region's address, then (when released) 1 if no byte of it changed.
const OP_PEER_DEVICE: u8 = 15;
/// Seconds a transfer may take before the program gives up on it (the R5 ends it long before).
const TRANSFER_US: u64 = 60_000_000;
/// A VA no process maps (below the image, above the null page).
const UNMAPPED: u64 = 0x10_0000;

fn byte(seed: u64, i: usize) -> u8 {
    (seed.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left((i % 61) as u32) as usize ^ i.wrapping_mul(131) ^ (i >> 9))
        as u8
}

fn main() -> Result<u64, Error> {
    let role = unpack(thread_argument()?).ok_or(Error::NoArgument)?;
    match role {
        Role::Sweep { node } => sweep(node, Checks::Transfers),
        Role::Device { node } => sweep(node, Checks::DeviceMemory),
        Role::Peer { node } => peer(node),
        Role::Victim => victim(),
        Role::Attack { node } => attack(node),
        Role::Stress { count, seed } => stress(count, seed),
        Role::Worker { node, count, seed } => worker(node, count, seed),
        Role::Forge { node, rounds } => forge(node, rounds),
    }
}

fn peer(initiator: u16) -> Result<u64, Error> {
    register(op(OP_RELEASE_PEER))?;
    let device = DeviceRegion::new(PEER_DEVICE_SEED)?;
    send(initiator, OP_ADDRESS, PEER.addr())?;
    send(initiator, OP_PEER_DEVICE, device.va)?;
    take(OP_RELEASE_PEER)?;
    send(initiator, OP_PEER_DEVICE, u64::from(device.intact()))?;
    Ok(0)
}

/// What a sweep checks against its peer.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Checks {
    /// Transfers of every size, polled handles, unmapped addresses.
    Transfers,
    /// Device regions at both ends.
    DeviceMemory,
}

fn sweep(node: u16, checks: Checks) -> Result<u64, Error> {
    let me = board_id()?;
    let rdma = unimem_user::rdma::open()?;
    let (remote, remote_device) = if node == me {
        (PEER.addr(), None)
    } else {
        register(op(OP_ADDRESS))?;
        register(op(OP_PEER_DEVICE))?;
        remote_spawn(env!("CARGO_BIN_NAME"), pack(Role::Peer { node: me }), node)?;
        let address = take(OP_ADDRESS)?;
        let device = take(OP_PEER_DEVICE)?;
        log!("peer on node {} has its buffer at {:#x}, its device region at {:#x}", node, address, device);
        (address, Some(device))
    };
    let status = match checks {
        Checks::Transfers => {
            let status = sizes(&rdma, node, remote, me == node)?;
            let status = if status == 0 { polled(&rdma, node, remote)? } else { status };
            if status == 0 { faults(&rdma, node, remote)? } else { status }
        }
        Checks::DeviceMemory => device_faults(&rdma, node, remote, remote_device)?,
    };
    if node != me {
        send(node, OP_RELEASE_PEER, 0)?;
        let intact = take(OP_PEER_DEVICE)?;
        ensure!(status != 0 || intact == 1, 16, "a byte of the peer's device region changed");
    }
    Ok(status)
}

fn sizes(rdma: &Rdma<HwDoorbell>, node: u16, remote: u64, local_peer: bool) -> Result<u64, Error> {
    let (source, back) = (SOURCE.get(), BACK.get());
    for (i, b) in source.iter_mut().enumerate() {
        *b = byte(1, i);
    }
    let mut transfers = 0;
    for k in 4..=20u32 {
        let (power, kk) = (1usize << k, k as usize);
        for (len, src_off, dst_off) in [(power, 0, 0), (power - 1 - kk % 3, 1 + kk % 7, 3 + kk % 5)] {
            let t = rdma.write(&source[src_off..src_off + len], node, remote + dst_off as u64)?;
            t.wait(TRANSFER_US)?;
            drop(t);
            if local_peer {
                let landed = &PEER.get()[dst_off..dst_off + len];
                ensure!(landed == &source[src_off..src_off + len], 1, "write of {} B: wrong bytes here", len);
            }
            back[..len + 8].fill(0);
            let t = rdma.read(&mut back[4..4 + len], node, remote + dst_off as u64)?;
            t.wait(TRANSFER_US)?;
            drop(t);
            ensure!(back[4..4 + len] == source[src_off..src_off + len], 2, "read of {} B: wrong bytes", len);
            ensure!(back[..4] == [0; 4] && back[4 + len..8 + len] == [0; 4], 3, "read of {} B wrote outside", len);
            transfers += 2;
        }
    }
    log!("{} transfers of 16 B to 1 MiB to node {}: every byte right", transfers, node);
    Ok(0)
}

/// Sixteen 16 B writes at once, collected with a non-blocking poll over the handles still open.
fn polled(rdma: &Rdma<HwDoorbell>, node: u16, remote: u64) -> Result<u64, Error> {
    const N: usize = 16;
    let source = &SOURCE.get()[..16 * N];
    let handles: [Option<Transfer<'_, HwDoorbell>>; N] =
        core::array::from_fn(|i| rdma.write(&source[16 * i..16 * (i + 1)], node, remote + 32 * i as u64).ok());
    ensure!(handles.iter().all(Option::is_some), 4, "a small write was refused");
    let mut open: [usize; N] = core::array::from_fn(|i| i);
    let mut count = N;
    let give_up = sys::time_us()? + TRANSFER_US;
    while count > 0 {
        let refs: [&Transfer<'_, HwDoorbell>; N] =
            core::array::from_fn(|k| handles[open[k.min(count - 1)]].as_ref().expect("checked above"));
        match rdma.poll(&refs[..count]) {
            Some(k) => {
                let status = refs[k].status();
                ensure!(status == Status::Done(16), 5, "small write {} ended {:?}", open[k], status);
                open.swap(k, count - 1);
                count -= 1;
            }
            None => {
                ensure!(sys::time_us()? < give_up, 6, "small writes did not end");
                sys::yield_now();
            }
        }
    }
    for i in 0..N {
        let landed = read_back(rdma, node, remote + 32 * i as u64, 16)?;
        ensure!(landed[..] == source[16 * i..16 * (i + 1)], 11, "small write {} landed wrong", i);
    }
    Ok(0)
}

fn read_back(rdma: &Rdma<HwDoorbell>, node: u16, remote: u64, len: usize) -> Result<[u8; 16], Error> {
    let mut out = [0u8; 16];
    rdma.read(&mut out[..len], node, remote)?.wait(TRANSFER_US)?;
    Ok(out)
}

fn faults(rdma: &Rdma<HwDoorbell>, node: u16, remote: u64) -> Result<u64, Error> {
    let source = &SOURCE.get()[..4096];
    // SAFETY: `UNMAPPED` is no memory of this process: nothing is aliased.
    let nowhere = unsafe { core::slice::from_raw_parts(UNMAPPED as *const u8, 4096) };
    let e = rdma.write(nowhere, node, remote)?.wait(TRANSFER_US);
    ensure!(e == Err(Error::Transfer(CqeStatus::FaultLocal)), 7, "from an unmapped source: {:?}", e);
    // The kernel of the node where the access faulted answers: on a transfer to this node, this
    // node's kernel (FaultLocal) for both ends.
    let remote_fault = if node == board_id()? { CqeStatus::FaultLocal } else { CqeStatus::FaultRemote };
    let e = rdma.write(source, node, UNMAPPED)?.wait(TRANSFER_US);
    ensure!(e == Err(Error::Transfer(remote_fault)), 8, "to an unmapped destination: {:?}", e);
    let back = &mut BACK.get()[..4096];
    let e = rdma.read(back, node, UNMAPPED)?.wait(TRANSFER_US);
    ensure!(e == Err(Error::Transfer(remote_fault)), 9, "read of an unmapped source: {:?}", e);
    let e = rdma.write(source, node, remote)?.wait(TRANSFER_US);
    ensure!(e == Ok(4096), 10, "a good transfer after the faults: {:?}", e);
    log!("unmapped source and destination end in fault completions");
    Ok(0)
}

const DEVICE_BYTES: usize = 2 * 4096;
const SWEEP_DEVICE_SEED: u64 = 0x51;
const PEER_DEVICE_SEED: u64 = 0x52;

/// A writable `MAP_DEVICE` region that holds a pattern: device memory for this process, which
/// no DMA may reach. Accessed in aligned 64-bit words only (device memory takes no unaligned
/// access), through volatile reads and writes.
struct DeviceRegion {
    va: u64,
    seed: u64,
}

impl DeviceRegion {
    fn new(seed: u64) -> Result<Self, Error> {
        use proto::syscall::{MAP_DEVICE, MAP_WRITABLE};
        let va = sys::map_with_flags(DEVICE_BYTES as u64, MAP_WRITABLE | MAP_DEVICE)?;
        let region = Self { va, seed };
        for i in 0..DEVICE_BYTES / 8 {
            // SAFETY: word i of the writable region just mapped, which only this process names.
            unsafe { region.word(i).write_volatile(region.expected(i)) };
        }
        Ok(region)
    }

    fn word(&self, i: usize) -> *mut u64 {
        (self.va as *mut u64).wrapping_add(i)
    }

    fn expected(&self, i: usize) -> u64 {
        (self.seed << 32 | i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
    }

    /// Whether every word still holds the pattern.
    fn intact(&self) -> bool {
        // SAFETY: words of the region `new` mapped and filled, read one at a time.
        (0..DEVICE_BYTES / 8).all(|i| unsafe { self.word(i).read_volatile() } == self.expected(i))
    }

    /// The region as the source of a transfer, or its destination: its address and length for
    /// the queues, which never read it through this slice.
    fn as_transfer_buffer(&self) -> (u64, usize) {
        (self.va, DEVICE_BYTES)
    }
}

/// Device memory is out of the engine's reach at both ends: a transfer from or into this
/// process's `MAP_DEVICE` region ends in FaultLocal, one aimed at the peer's (`remote_device`,
/// or this process's own on a transfer to this node) in a fault of the node that owns it; no
/// byte of either changes, and a good transfer still works afterwards.
fn device_faults(rdma: &Rdma<HwDoorbell>, node: u16, remote: u64, remote_device: Option<u64>) -> Result<u64, Error> {
    let me = board_id()?;
    let device = DeviceRegion::new(SWEEP_DEVICE_SEED)?;
    let (va, len) = device.as_transfer_buffer();
    let local_fault = Err(Error::Transfer(CqeStatus::FaultLocal));
    let remote_fault = Err(Error::Transfer(if node == me { CqeStatus::FaultLocal } else { CqeStatus::FaultRemote }));
    for direction in [Direction::Write, Direction::Read] {
        // SAFETY: the engine must refuse the region (what this checks); were it to reach it,
        // `intact` below says so. Nothing else uses the region meanwhile.
        let tag = unsafe { rdma.with_queues(|q| q.post(direction, va, len, node, remote)) }?;
        let e = wait_for(rdma, tag);
        ensure!(e == local_fault, 12, "{:?} with a local device region: {:?}", direction, e);
    }
    let there = remote_device.unwrap_or(va);
    let source = &SOURCE.get()[..len];
    let e = rdma.write(source, node, there)?.wait(TRANSFER_US);
    ensure!(e == remote_fault, 13, "write into a device region at node {}: {:?}", node, e);
    let back = &mut BACK.get()[..len];
    back.fill(0);
    let e = rdma.read(back, node, there)?.wait(TRANSFER_US);
    ensure!(e == remote_fault, 14, "read of a device region at node {}: {:?}", node, e);
    ensure!(device.intact(), 15, "a byte of this process's device region changed");
    let e = rdma.write(source, node, remote)?.wait(TRANSFER_US);
    ensure!(e == Ok(len as u32), 17, "a good transfer after the device faults: {:?}", e);
    log!("device regions here and at node {}: every transfer refused, no byte changed", node);
    Ok(0)
}

/// The end of the transfer posted as `tag`, as [`Transfer::wait`] gives it.
fn wait_for(rdma: &Rdma<HwDoorbell>, tag: u64) -> Result<u32, Error> {
    let status = rdma.with_queues(|q| q.wait(tag, TRANSFER_US));
    rdma.with_queues(|q| q.release(tag));
    status?.result()
}

const VICTIM_BYTE: u8 = 0xa5;

fn victim() -> Result<u64, Error> {
    PEER.get().fill(VICTIM_BYTE);
    register(op(OP_VICTIM))?;
    take(OP_VICTIM)?;
    ensure!(PEER.get().iter().all(|&b| b == VICTIM_BYTE), 20, "a byte of the victim's buffer changed");
    log!("no byte of the victim changed");
    Ok(0)
}

fn attack(node: u16) -> Result<u64, Error> {
    let me = board_id()?;
    let rdma = unimem_user::rdma::open()?;
    let source = &mut SOURCE.get()[..8192];
    source.fill(0x5a);
    let source = &*source;
    // The victim's buffer has this very address in the victim (same program): here it names
    // the attacker's own buffer.
    let e = rdma.write(source, me, PEER.addr())?.wait(TRANSFER_US);
    ensure!(e == Ok(8192), 21, "write at the victim's address here: {:?}", e);
    ensure!(PEER.get()[..8192].iter().all(|&b| b == 0x5a), 22, "it did not land in the attacker's own buffer");
    if node != me {
        let e = rdma.write(source, node, PEER.addr())?.wait(TRANSFER_US);
        ensure!(e == Err(Error::Transfer(CqeStatus::NoRemotePd)), 23, "to a node without the PD: {:?}", e);
        let back = &mut BACK.get()[..8192];
        let e = rdma.read(back, node, PEER.addr())?.wait(TRANSFER_US);
        ensure!(e == Err(Error::Transfer(CqeStatus::NoRemotePd)), 24, "read from there: {:?}", e);
    }
    send(me, OP_VICTIM, 1)?;
    Ok(0)
}

fn stress(count: u16, seed: u32) -> Result<u64, Error> {
    let (me, n) = (board_id()?, board_count()?);
    register(op(OP_READY))?;
    register(op(OP_DONE))?;
    let others = || (0..n).filter(move |&o| o != me);
    for other in others() {
        remote_spawn(env!("CARGO_BIN_NAME"), pack(Role::Worker { node: me, count, seed }), other)?;
    }
    for _ in others() {
        take(OP_READY)?;
    }
    for other in others() {
        send(other, OP_GO, 0)?;
    }
    let mut failed = run_worker(me, n, count, seed)?;
    for _ in others() {
        failed += take(OP_DONE)?;
    }
    for other in others() {
        send(other, OP_RELEASE, 0)?;
    }
    ensure!(failed == 0, 30, "{} transfers failed", failed);
    log!("{} nodes x {} transfers: every byte right", n, count);
    Ok(0)
}

fn worker(main: u16, count: u16, seed: u32) -> Result<u64, Error> {
    let n = board_count()?;
    register(op(OP_GO))?;
    register(op(OP_RELEASE))?;
    send(main, OP_READY, 0)?;
    take(OP_GO)?;
    let failed = run_worker(board_id()?, n, count, seed)?;
    send(main, OP_DONE, failed)?;
    take(OP_RELEASE)?;
    Ok(0)
}

/// Jobs in flight per worker, and the bytes one may move.
const IN_FLIGHT: usize = 8;
const JOB_MAX: usize = 32 * 1024;
/// Each node's slice of every peer buffer.
const SLICE: usize = IN_FLIGHT * JOB_MAX;

#[derive(Clone, Copy)]
enum Job {
    Idle,
    Writing { tag: u64, node: u16, len: usize, offset: usize, serial: u64 },
    Reading { tag: u64, len: usize, serial: u64 },
}

/// `count` transfers (a write and its read back each), `IN_FLIGHT` at once, to random nodes;
/// returns how many failed.
fn run_worker(me: u16, n: u16, count: u16, seed: u32) -> Result<u64, Error> {
    let rdma = unimem_user::rdma::open()?;
    let (source, back) = (SOURCE.get(), BACK.get());
    let mut rng = XorShift64::new(u64::from(seed) << 16 | u64::from(me) | 1);
    let mut jobs = [Job::Idle; IN_FLIGHT];
    let (mut started, mut finished, mut failed) = (0u64, 0u64, 0u64);
    let give_up = sys::time_us()? + 600_000_000;
    // The first failure stops new transfers (the ones in flight end): its counters then say
    // what went wrong, rather than a run timeout after every transfer failed the same way.
    let busy = |jobs: &[Job]| jobs.iter().any(|j| !matches!(j, Job::Idle));
    while finished < u64::from(count) && (failed == 0 || busy(&jobs)) {
        ensure!(sys::time_us()? < give_up, 31, "{} of {} transfers ended", finished, count);
        let mut progress = false;
        for (j, job) in jobs.iter_mut().enumerate() {
            let base = j * JOB_MAX;
            match *job {
                Job::Idle if started < u64::from(count) && failed == 0 => {
                    let node = rng.below(u64::from(n)) as u16;
                    let len = 1 + rng.below(JOB_MAX as u64 - 64) as usize;
                    let offset = rng.below((JOB_MAX - len) as u64) as usize;
                    let serial = started << 16 | u64::from(me);
                    for (i, b) in source[base..base + len].iter_mut().enumerate() {
                        *b = byte(serial, i);
                    }
                    let remote = PEER.addr() + (usize::from(me) * SLICE + base + offset) as u64;
                    // SAFETY: job j alone uses source[base..base + len] until this transfer ends.
                    let tag = unsafe {
                        rdma.with_queues(|q| {
                            q.post(Direction::Write, source.as_ptr() as u64 + base as u64, len, node, remote)
                        })
                    }?;
                    *job = Job::Writing { tag, node, len, offset, serial };
                    started += 1;
                    progress = true;
                }
                Job::Writing { tag, node, len, offset, serial } => match rdma.with_queues(|q| q.status(tag)) {
                    Status::Pending => {}
                    end => {
                        rdma.with_queues(|q| q.release(tag));
                        progress = true;
                        if end != Status::Done(len as u32) {
                            log!("write of {} B to node {}: {:?}", len, node, end);
                            failed += 1;
                            finished += 1;
                            *job = Job::Idle;
                            continue;
                        }
                        back[base..base + len].fill(0);
                        let remote = PEER.addr() + (usize::from(me) * SLICE + base + offset) as u64;
                        // SAFETY: job j alone uses back[base..base + len] until this ends.
                        let tag = unsafe {
                            rdma.with_queues(|q| {
                                q.post(Direction::Read, back.as_ptr() as u64 + base as u64, len, node, remote)
                            })
                        }?;
                        *job = Job::Reading { tag, len, serial };
                    }
                },
                Job::Reading { tag, len, serial } => match rdma.with_queues(|q| q.status(tag)) {
                    Status::Pending => {}
                    end => {
                        rdma.with_queues(|q| q.release(tag));
                        progress = true;
                        let right = back[base..base + len].iter().enumerate().all(|(i, &b)| b == byte(serial, i));
                        if end != Status::Done(len as u32) || !right {
                            log!("read back of {} B: {:?}, bytes right: {}", len, end, right);
                            failed += 1;
                        }
                        finished += 1;
                        *job = Job::Idle;
                    }
                },
                Job::Idle => {}
            }
        }
        if !progress {
            match sys::rdma_wait(1_000_000) {
                Ok(()) | Err(Error::Timeout) => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(failed)
}

/// Forged RAPF Abort messages from this process's PD page to `node`'s R5, `rounds` times over
/// every tid, with a sequence number that changes each round, written as fast as the process
/// can (nothing is read back between them): none answers a fault of this PD, so the engine must
/// refuse every one (`docs/hw/pldma.md`, "Who may send a RAPF"), whatever other PD's transfers
/// are in flight. Then a real transfer there must complete byte for byte.
fn forge(node: u16, rounds: u16) -> Result<u64, Error> {
    use hal::pldma::codes::RapfAction;
    use hal::pldma::rapf::RapfRequest;
    let rdma = unimem_user::rdma::open()?;
    let queues = sys::rdma_queues()?;
    // SAFETY: the kernel mapped this process's PD page there; the library's handle only rings
    // the doorbell, and this one only writes `rapf` (both single register accesses).
    let mut page = unsafe { hal::pldma::driver::PdPage::new(queues.pd_page as usize) };
    let own = queues.pd;
    let other = (own + 1) % hal::pldma::PDS as u16;
    let refused_before = rdma.counters().rapf_refused;
    for round in 0..rounds {
        for tid in 0..FORGE_TIDS {
            let seq = (tid.wrapping_mul(37).wrapping_add(round.wrapping_mul(4099))) & hal::pldma::SEQ_MASK;
            for claimed_pd in [own, other] {
                let forged = RapfRequest { node, tid, seq, action: RapfAction::Abort, claimed_pd };
                let r = page.write_rapf(&forged);
                ensure!(r.is_ok(), 40, "a well-formed RAPF did not encode: {:?}", r);
            }
        }
    }
    let sent = u64::from(rounds) * FORGE_PER_ROUND;
    let refused = u64::from(rdma.counters().rapf_refused.wrapping_sub(refused_before));
    ensure!(refused == sent, 44, "the engine refused {} of {} forged RAPFs", refused, sent);
    let source = &mut SOURCE.get()[..256 * 1024];
    for (i, b) in source.iter_mut().enumerate() {
        *b = byte(7, i);
    }
    let source = &*source;
    let e = rdma.write(source, node, PEER.addr())?.wait(TRANSFER_US);
    ensure!(e == Ok(source.len() as u32), 41, "a real write after the forgeries: {:?}", e);
    let back = &mut BACK.get()[..source.len()];
    let e = rdma.read(back, node, PEER.addr())?.wait(TRANSFER_US);
    ensure!(e == Ok(source.len() as u32), 42, "a real read after the forgeries: {:?}", e);
    ensure!(back[..] == source[..], 43, "the real transfer after the forgeries moved wrong bytes");
    log!("{} forged RAPFs to node {} refused at the engine; a real transfer after them is byte-exact", sent, node);
    Ok(0)
}
