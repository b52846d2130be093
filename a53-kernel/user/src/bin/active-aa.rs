//! `active-aa`: Active Access on target (`docs/hw/active-access.md`, `unimem_user::active`): every
//! semantic of the engine, the flush and back-pressure. The seed's use cases are programs of
//! their own: `active-dht`, `active-checkpoint`, `active-count`. The thread argument is
//! `args::active_aa::pack(role)`:
//!
//! - `Semantics { node }` (the initiator): spawns an `Owner` on `node` (a remote spawn keeps this
//!   PD) and, through plain RDMA writes and reads of the owner's marked pages:
//!   1. an active put (page 0: not written, logged with its data), put logging (page 1: written
//!      and logged, one entry per packet), get logging with data (page 2) and get counting (page
//!      3, five reads, each counted once), E = 0 (page 4: not written, not in the owner's log)
//!      and a plain page (6); the owner checks its log entry by entry;
//!   2. the active flush: a put, then `flush(node)`, which must not complete before the owner's
//!      handler (asleep for `FLUSH_DELAY_US`) has taken the put;
//!   3. back-pressure: `FLOOD` active puts of 200 B (more than the log holds) while the owner's
//!      handler sleeps: every one completes, and the owner finds each exactly once with its
//!      bytes, and a non-zero `full` count (the engine refused and the initiators retried).
//! - `Owner { node }`: opens a log, marks its pages (and checks that a foreign IUID, an address
//!   in the device window and an unknown action are refused), spawns a `Peek` next to it (same
//!   job, not the PD's holder), which must get no IUID, mark nothing with the owner's IUID, and
//!   be killed when it reads the owner's log; answers each phase on opcode 10.
//!
//! - `Closer` (on this node, alone): takes IUIDs until the node has none left (`Busy`), gives
//!   one back (`Log::close`) and takes it again, gives them all back, then reads the first one's
//!   old log address: `ACTIVE_CLOSE` unmapped it, so the read must kill the process (the test
//!   expects that fault; an exit status is a failure).
//!
//! From the console: `cargo xtask run active-aa --nodes 2 --on 0 -- 0x10` (the packed role:
//! the semantics against node 1).
//!
//! Exit status: 0; 1..=0x3f a failed check (logged); otherwise an error status (`README.md`).
#![no_std]
#![no_main]

use unimem_user::active::{Entry, Log, PacketId, Seen, actions, assoc_page, flush, pattern as byte};
use unimem_user::args::active_aa::{Role, pack, unpack};
use unimem_user::channel::{op, send, take};
use unimem_user::{Error, board_id, ensure, log, register, remote_spawn, sys, thread_argument};

unimem_user::entry!(main);

const PAGE: u64 = 4096;
/// The owner's marked buffer: 8 pages.
const PAGES: u64 = 8;
const OP_ADDRESS: u8 = 8;
const OP_PHASE: u8 = 9;
const OP_RESULT: u8 = 10;
const OP_PEEK: u8 = 12;
/// Phases the initiator announces on `OP_PHASE`.
const CHECK: u64 = 1;
const FLUSHING: u64 = 2;
const FLOOD: u64 = 3;
/// The initiator has seen every transfer end: the owner may go (before, a block whose
/// completion the links lost would be resent to a node where the job's PD has no holder).
const DONE: u64 = 4;
/// How long the owner's handler sleeps before it takes the flushed put.
const FLUSH_DELAY_US: u64 = 500_000;
/// Active puts of the flood: 64 x 8 granules is the whole ring.
const FLOOD_PUTS: u64 = 96;
const FLOOD_BYTES: usize = 200;
const TRANSFER_US: u64 = 60_000_000;

fn main() -> Result<u64, Error> {
    // Started by `cargo xtask run active-aa -- ARG` (no thread argument): ARG is the packed role.
    let argument = match thread_argument() {
        Err(Error::NoArgument) => unimem_user::arguments()?.number(0)?,
        other => other?,
    };
    match unpack(argument).ok_or(Error::NoArgument)? {
        Role::Semantics { node } => initiator(node),
        Role::Owner { node } => owner(node),
        Role::Peek { node, iuid } => peek(node, iuid),
        Role::Closer => closer(),
    }
}

fn initiator(node: u16) -> Result<u64, Error> {
    let me = board_id()?;
    register(op(OP_ADDRESS))?;
    register(op(OP_RESULT))?;
    let rdma = unimem_user::rdma::open()?;
    remote_spawn(env!("CARGO_BIN_NAME"), pack(Role::Owner { node: me }), node)?;
    let buf = take(OP_ADDRESS)?;
    log!("owner on node {} marked its pages at {:#x}", node, buf);
    let page = |k: u64| buf + k * PAGE;
    let local = sys::map_buffer(64 * 1024)?;
    let (src, back) = local.split_at_mut(32 * 1024);

    // 1. Active put: acknowledged, and the owner's page keeps its bytes.
    for (i, b) in src[..40].iter_mut().enumerate() {
        *b = byte(100, i);
    }
    rdma.write(&src[..40], node, page(0) + 16)?.wait(TRANSFER_US)?;
    rdma.read(&mut back[..40], node, page(0) + 16)?.wait(TRANSFER_US)?;
    ensure!((0..40).all(|i| back[i] == byte(0, 16 + i)), 1, "an active put was written to memory");
    // Put logging: two packets (the 256 B windows of 0x80..0x1ac), written.
    for (i, b) in src[..300].iter_mut().enumerate() {
        *b = byte(101, i);
    }
    rdma.write(&src[..300], node, page(1) + 0x80)?.wait(TRANSFER_US)?;
    rdma.read(&mut back[..300], node, page(1) + 0x80)?.wait(TRANSFER_US)?;
    ensure!(back[..300] == src[..300], 2, "a logged put did not land");
    // Get logging (with the data) and get counting (five reads).
    rdma.read(&mut back[..64], node, page(2) + 0x40)?.wait(TRANSFER_US)?;
    ensure!((0..64).all(|i| back[i] == byte(2, 0x40 + i)), 3, "a logged get served wrong bytes");
    for _ in 0..5 {
        rdma.read(&mut back[..8], node, page(3))?.wait(TRANSFER_US)?;
    }
    // E = 0: an active put whose entry goes to the kernel's log.
    rdma.write(&src[..16], node, page(4) + 8)?.wait(TRANSFER_US)?;
    rdma.read(&mut back[..16], node, page(4) + 8)?.wait(TRANSFER_US)?;
    ensure!((0..16).all(|i| back[i] == byte(4, 8 + i)), 4, "an E=0 active put was written to memory");
    // A plain page.
    rdma.write(&src[..8], node, page(6))?.wait(TRANSFER_US)?;
    send(node, OP_PHASE, CHECK)?;
    let owner = take(OP_RESULT)?;
    ensure!(owner == 0, 5, "the owner's log check failed with {}", owner);

    // 2. The active flush waits for the owner's handler.
    rdma.write(&src[..8], node, page(0))?.wait(TRANSFER_US)?;
    send(node, OP_PHASE, FLUSHING)?;
    let t0 = sys::time_us()?;
    flush(&rdma, node, page(5), TRANSFER_US)?;
    let waited = sys::time_us()? - t0;
    let owner = take(OP_RESULT)?;
    ensure!(owner == 0, 6, "the owner's flush check failed with {}", owner);
    ensure!(waited >= FLUSH_DELAY_US * 4 / 5, 7, "the flush completed after {} us, before the handler ran", waited);
    log!("flush completed after {} us (handler slept {} us)", waited, FLUSH_DELAY_US);

    // 3. Back-pressure: more active puts than the log holds, 8 in flight.
    send(node, OP_PHASE, FLOOD)?;
    let mut k = 0;
    while k < FLOOD_PUTS {
        let n = (FLOOD_PUTS - k).min(8) as usize;
        let chunk = &mut src[..n * 256];
        for (j, slot) in chunk.chunks_mut(256).enumerate() {
            let id = k + j as u64;
            slot[..8].copy_from_slice(&id.to_le_bytes());
            for (i, b) in slot.iter_mut().enumerate().take(FLOOD_BYTES).skip(8) {
                *b = byte(id, i);
            }
        }
        let chunk = &src[..n * 256];
        let mut transfers = heapless_transfers();
        for (j, slot) in chunk.chunks(256).enumerate() {
            let id = k + j as u64;
            let dst = page(7) + (id % 16) * 256;
            transfers[j] = Some(rdma.write(&slot[..FLOOD_BYTES], node, dst)?);
        }
        for t in transfers.iter().flatten() {
            t.wait(TRANSFER_US)?;
        }
        k += n as u64;
    }
    let owner = take(OP_RESULT)?;
    send(node, OP_PHASE, DONE)?;
    ensure!(owner == 0, 8, "the owner's flood check failed with {}", owner);
    Ok(0)
}

fn heapless_transfers<'a>() -> [Option<unimem_user::rdma::Transfer<'a, unimem_user::rdma::HwDoorbell>>; 8] {
    [None, None, None, None, None, None, None, None]
}

/// What the owner's handler saw of phase 1.
#[derive(Default)]
struct Phase1 {
    active_put: u32,
    logged_puts: [(u64, u16); 2],
    logged: usize,
    get_data: u32,
    /// Page 3's gets: a read retried after a lost packet is logged again, and its
    /// (node, tid, first_seq, index) tells the copies apart.
    counted: Seen<16>,
    unexpected: u32,
}

fn owner(initiator: u16) -> Result<u64, Error> {
    register(op(OP_PHASE))?;
    let mut log = Log::open()?;
    let buf = sys::map_buffer((PAGES * PAGE) as usize)?;
    for (i, b) in buf.iter_mut().enumerate() {
        *b = byte(i as u64 / PAGE, i % PAGE as usize);
    }
    let base = buf.as_ptr() as u64;
    let page = |k: u64| base + k * PAGE;
    log.assoc_page(page(0), actions::ACTIVE_PUT)?;
    log.assoc_page(page(1), actions::PUT_LOG)?;
    log.assoc_page(page(2), actions::GET_LOG)?;
    log.assoc_page(page(3), actions::GET_COUNT)?;
    log.assoc_page(page(4), actions::ACTIVE_PUT & !actions::E)?;
    log.assoc_page(page(5), actions::FLUSH)?;
    log.assoc_page(page(7), actions::ACTIVE_PUT)?;
    // What the kernel refuses.
    let foreign = log.iuid() ^ 1;
    ensure!(assoc_page(page(6), actions::PUT_LOG, foreign).is_err(), 20, "another IUID marked a page");
    ensure!(
        log.assoc_page(proto::syscall::layout::active_log(log.iuid()), actions::PUT_LOG).is_err(),
        21,
        "the log marked"
    );
    ensure!(log.assoc_page(page(6), 1 << 7).is_err(), 22, "an unknown action was taken");
    // Another process of this job, on this node (it does not hold the PD): it gets no IUID,
    // cannot mark a page with ours, and reading our log kills it.
    register(op(OP_PEEK))?;
    remote_spawn(env!("CARGO_BIN_NAME"), pack(Role::Peek { node: board_id()?, iuid: log.iuid() }), board_id()?)?;
    let refused = take(OP_PEEK)?;
    ensure!(refused == 0b11, 38, "the other process was given an IUID or marked a page ({:#b})", refused);
    let deadline = sys::time_us()? + 2_000_000;
    while sys::time_us()? < deadline {
        let read = unimem_user::receive(Some(op(OP_PEEK)), false).is_ok();
        ensure!(!read, 39, "another process read this process's log");
        sys::sleep_us(20_000)?;
    }
    send(initiator, OP_ADDRESS, base)?;

    // Phase 1.
    ensure!(take(OP_PHASE)? == CHECK, 23, "phase");
    let mut seen = Phase1::default();
    log.poll(|e| phase1(&mut seen, e, page(0)))?;
    ensure!(seen.unexpected == 0, 24, "{} unexpected entries", seen.unexpected);
    ensure!(seen.active_put == 1, 25, "active put logged {} times (with its data)", seen.active_put);
    let mut puts = seen.logged_puts;
    puts.sort_unstable();
    ensure!(seen.logged == 2 && puts == [(page(1) + 0x80, 128), (page(1) + 0x100, 172)], 26, "put logging: {:?}", puts);
    ensure!(seen.get_data == 1, 27, "get logging with data: {}", seen.get_data);
    ensure!(seen.counted.len() == 5, 28, "get counting: {} distinct gets", seen.counted.len());
    let unchanged =
        |k: u64, from: usize, len: usize| (from..from + len).all(|i| buf[(k * PAGE) as usize + i] == byte(k, i));
    ensure!(unchanged(0, 16, 40) && unchanged(4, 8, 16), 30, "an active put reached memory");
    ensure!(!unchanged(1, 0x80, 300), 31, "a logged put did not reach memory");
    send(initiator, OP_RESULT, 0)?;

    // Phase 2: the flush must wait for this handler.
    ensure!(take(OP_PHASE)? == FLUSHING, 32, "phase");
    sys::sleep_us(FLUSH_DELAY_US)?;
    let mut n = 0;
    log.poll(|e| n += u32::from(e.is_put() && e.header.va == page(0)))?;
    ensure!(n == 1, 33, "the flushed put: {} entries", n);
    send(initiator, OP_RESULT, 0)?;

    // Phase 3: let the log fill up, then drain it.
    ensure!(take(OP_PHASE)? == FLOOD, 34, "phase");
    sys::sleep_us(300_000)?;
    let mut got = [0u8; FLOOD_PUTS as usize];
    let mut bad = 0u32;
    let start = sys::time_us()?;
    while got.contains(&0) && sys::time_us()? - start < TRANSFER_US {
        log.poll(|e| {
            let id = e.data.get(..8).map_or(u64::MAX, |d| u64::from_le_bytes(d.try_into().unwrap_or([0xff; 8])));
            let ok = e.is_put()
                && e.data.len() == FLOOD_BYTES
                && id < FLOOD_PUTS
                && e.header.va == page(7) + (id % 16) * 256
                && (8..FLOOD_BYTES).all(|i| e.data[i] == byte(id, i));
            if ok {
                got[id as usize] += 1;
            } else {
                bad += 1;
            }
        })?;
        sys::sleep_us(1_000)?;
    }
    ensure!(bad == 0, 35, "{} flood entries were wrong", bad);
    ensure!(got.iter().all(|&g| g == 1), 36, "a flood put was lost or logged twice");
    ensure!(log.full() > 0, 37, "the log never refused a put: no back-pressure was exercised");
    log!(
        "flood: {} active puts, each logged once; the engine refused {} while the log was full",
        FLOOD_PUTS,
        log.full()
    );
    send(initiator, OP_RESULT, 0)?;
    ensure!(take(OP_PHASE)? == DONE, 51, "phase");
    Ok(0)
}

fn phase1(seen: &mut Phase1, e: &Entry<'_>, base: u64) {
    let h = &e.header;
    let k = h.va.wrapping_sub(base) / PAGE;
    match (k, e.is_put()) {
        (0, true) if h.va == base + 16 && h.len == 40 && (0..40).all(|i| e.data.get(i) == Some(&byte(100, i))) => {
            seen.active_put += 1
        }
        (1, true) if e.data.is_empty() && seen.logged < 2 => {
            seen.logged_puts[seen.logged] = (h.va, h.len);
            seen.logged += 1;
        }
        (2, false) if h.len == 64 && (0..64).all(|i| e.data.get(i) == Some(&byte(2, 0x40 + i))) => seen.get_data += 1,
        (3, false) if e.data.is_empty() && seen.counted.first(PacketId::of(h)).is_ok() => {}
        _ => seen.unexpected += 1,
    }
}

fn closer() -> Result<u64, Error> {
    let mut logs: [Option<Log>; unimem_user::active::IUIDS] = [const { None }; unimem_user::active::IUIDS];
    let mut taken = 0;
    let busy = loop {
        match Log::open() {
            Ok(log) if taken < logs.len() => {
                logs[taken] = Some(log);
                taken += 1;
            }
            Ok(_) => break false,
            Err(e) => break e == Error::Syscall(unimem_user::SysError::Busy),
        }
    };
    ensure!(busy && taken > 0, 60, "{} IUIDs taken, then not Busy", taken);
    let iuids = |logs: &[Option<Log>]| logs.iter().flatten().fold(0u32, |m, l| m | 1 << l.iuid());
    let held = iuids(&logs);
    log!("took {} IUIDs ({:#x}) before Busy", taken, held);
    // One given back is the next one taken; the node is out of IUIDs again.
    let last = logs[taken - 1].take().map(|l| (l.iuid(), l.close()));
    ensure!(matches!(last, Some((_, Ok(())))), 61, "closing an IUID failed");
    let again = Log::open()?;
    ensure!(Some(again.iuid()) == last.map(|l| l.0), 62, "the IUID given back was not the one taken again");
    logs[taken - 1] = Some(again);
    ensure!(iuids(&logs) == held && Log::open().is_err(), 63, "not the same IUIDs, or one more");
    // All given back (the last by dropping it); then the first log's old place must be gone.
    let first = logs[0].as_ref().map_or(0, Log::iuid);
    for log in logs.iter_mut().take(taken - 1).filter_map(Option::take) {
        ensure!(log.close().is_ok(), 64, "closing an IUID failed");
    }
    drop(logs);
    let old = proto::syscall::layout::active_log(first);
    // SAFETY: deliberately not: the log was unmapped by `ACTIVE_CLOSE`, and this load must
    // fault (the process is killed, which is what the test expects).
    let word = unsafe { core::ptr::read_volatile(old as *const u32) };
    log!("read {:#x} at the closed log's address {:#x}", word, old);
    Ok(65)
}

fn peek(owner: u16, iuid: u8) -> Result<u64, Error> {
    let no_iuid = matches!(Log::open(), Err(Error::Syscall(unimem_user::SysError::NoPd)));
    let buf = sys::map_buffer(PAGE as usize)?;
    let no_mark = assoc_page(buf.as_ptr() as u64, actions::PUT_LOG, iuid).is_err();
    send(owner, OP_PEEK, u64::from(no_iuid) | u64::from(no_mark) << 1)?;
    // SAFETY: deliberately not: the owner's log is not mapped here, and this load must fault.
    let word = unsafe { core::ptr::read_volatile(proto::syscall::layout::active_log(iuid) as *const u32) };
    send(owner, OP_PEEK, u64::from(word) | 1 << 40)?;
    Ok(0)
}
