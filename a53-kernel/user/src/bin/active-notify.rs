//! `active-notify`: an Active Access log telling its owner of its entries in each of the
//! mailbox's ways (`docs/hw/active-access.md`, "Notification"; `unimem_user::active::Log::
//! notify_on`). The thread argument is `args::active_notify::pack(role)`:
//!
//! - `Initiator { node }`: spawns an `Owner` on `node` (a remote spawn keeps this PD), then for
//!   each phase the owner announces (on opcode 8) waits a little, so that the owner is asleep,
//!   and puts 64 bytes to the owner's put-logging page, then says so (opcode 9).
//! - `Owner { node }`: opens a log, marks a page put-logging, and takes one put per phase:
//!   1. read mode: blocked in `Log::wait`, which sleeps in the mailbox (no polling) until the
//!      notice comes;
//!   2. signal mode: asleep for 30 s, the notice's signal ends the sleep (`Interrupted`);
//!   3. event mode: blocked in `MAILBOX_EVENT` until the notice counts;
//!   4. polled again (`notify_on(None)`): the put is logged, and nothing is told.
//!
//!   It also checks that a log cannot notify on an opcode the process does not receive. Its
//!   announcements are phase numbers; a failed check is announced as `FAILED + code`.
//!
//! From the console: `cargo xtask run active-notify --nodes 2 --on 0 -- 0x2` (the initiator
//! against node 1). Exit status: 0; 1..=0x3f a failed check (logged); otherwise an error status.
#![no_std]
#![no_main]

use unimem_user::active::{Log, actions};
use unimem_user::args::active_notify::{Role, pack, unpack};
use unimem_user::channel::{op, send, take};
use unimem_user::sys::{self, Wake};
use unimem_user::{Error, SysError, board_id, ensure, log, register, remote_spawn, thread_argument};

unimem_user::entry!(main);

const PAGE: u64 = 4096;
/// The owner announces a phase, or a failure, here.
const OP_PHASE: u8 = 8;
/// The initiator's put of the phase has completed.
const OP_PUT: u8 = 9;
/// The owner's notice opcodes: one per mode, and one it never registers.
const OP_READ: u8 = 11;
const OP_SIGNAL: u8 = 12;
const OP_EVENT: u8 = 13;
const OP_UNREGISTERED: u8 = 14;
const SIGNAL: u8 = 7;
const PHASES: u64 = 4;
/// An announcement at or above this is a failure, `FAILED + code` (a page address or a phase
/// number is far below).
const FAILED: u64 = 1 << 62;
/// How long the initiator lets the owner fall asleep before it puts.
const NAP_US: u64 = 200_000;
const WAIT_US: u64 = 30_000_000;

fn main() -> Result<u64, Error> {
    let argument = match thread_argument() {
        Err(Error::NoArgument) => unimem_user::arguments()?.number(0)?,
        other => other?,
    };
    match unpack(argument).ok_or(Error::NoArgument)? {
        Role::Initiator { node } => initiator(node),
        Role::Owner { node } => {
            let code = owner(node)?;
            if code != 0 {
                send(node, OP_PHASE, FAILED + code)?;
            }
            Ok(code)
        }
    }
}

fn initiator(node: u16) -> Result<u64, Error> {
    register(op(OP_PHASE))?;
    let rdma = unimem_user::rdma::open()?;
    remote_spawn(env!("CARGO_BIN_NAME"), pack(Role::Owner { node: board_id()? }), node)?;
    let page = take(OP_PHASE)?;
    ensure!(page < FAILED, 1, "the owner failed its set-up with {}", page - FAILED);
    let src = sys::map_buffer(PAGE as usize)?;
    for phase in 1..=PHASES {
        let said = take(OP_PHASE)?;
        ensure!(said == phase, 2, "the owner said {:#x} for phase {} (failed: {:#x} and more)", said, phase, FAILED);
        sys::sleep_us(NAP_US)?;
        src[..8].copy_from_slice(&phase.to_le_bytes());
        rdma.write(&src[..64], node, page + phase * 64)?.wait(WAIT_US)?;
        send(node, OP_PUT, phase)?;
    }
    let end = take(OP_PHASE)?;
    ensure!(end == PHASES + 1, 3, "the owner ended with {:#x}", end);
    Ok(0)
}

/// One put of phase `phase` at `page`: exactly one entry, of the phase's 64 bytes.
fn took_the_put(log: &mut Log, page: u64, phase: u64) -> Result<bool, Error> {
    let mut seen = 0;
    let mut right = true;
    log.poll(|e| {
        seen += 1;
        right &= e.header.va == page + phase * 64 && e.header.len == 64;
    })?;
    Ok(seen == 1 && right)
}

fn owner(initiator: u16) -> Result<u64, Error> {
    register(op(OP_PUT))?;
    let mut log = Log::open()?;
    let buf = sys::map_buffer(PAGE as usize)?;
    let page = buf.as_ptr() as u64;
    log.assoc_page(page, actions::PUT_LOG)?;
    let r = log.notify_on(Some(op(OP_UNREGISTERED)));
    ensure!(r == Err(Error::Syscall(SysError::NotRegistered)), 10, "notices on an opcode not ours: {:?}", r);
    send(initiator, OP_PHASE, page)?;

    // 1. Read mode: `wait` sleeps in the mailbox until the notice.
    sys::mailbox_register(op(OP_READ), Wake::Read)?;
    log.notify_on(Some(op(OP_READ)))?;
    send(initiator, OP_PHASE, 1)?;
    let mut seen = 0;
    let n = log.wait(WAIT_US, WAIT_US, |e| seen += usize::from(e.header.va == page + 64))?;
    ensure!(n == 1 && seen == 1, 11, "read mode: {} entries, {} of the put", n, seen);
    ensure!(take(OP_PUT)? == 1, 12, "phase 1's put");

    // 2. Signal mode: the notice's signal ends a long sleep.
    sys::mailbox_register(op(OP_SIGNAL), Wake::Signal(SIGNAL))?;
    log.notify_on(Some(op(OP_SIGNAL)))?;
    let _ = sys::signals()?;
    send(initiator, OP_PHASE, 2)?;
    let slept = sys::sleep_us(WAIT_US);
    ensure!(slept == Err(Error::Syscall(SysError::Interrupted)), 13, "signal mode: the sleep ended {:?}", slept);
    let raised = sys::signals()?;
    ensure!(raised == 1 << SIGNAL, 14, "signal mode: signals {:#x}", raised);
    ensure!(took_the_put(&mut log, page, 2)?, 15, "signal mode: the log did not hold the put");
    let (notice, _) = unimem_user::receive(Some(op(OP_SIGNAL)), false)?;
    ensure!(log.is_notice(&notice), 16, "signal mode: the notice was {:#x}", notice.raw());
    ensure!(take(OP_PUT)? == 2, 17, "phase 2's put");

    // 3. Event mode: the counter counts the notice.
    sys::mailbox_register(op(OP_EVENT), Wake::Event)?;
    log.notify_on(Some(op(OP_EVENT)))?;
    send(initiator, OP_PHASE, 3)?;
    let counted = sys::mailbox_event(true)?;
    ensure!(counted >= 1, 18, "event mode: counter {}", counted);
    ensure!(took_the_put(&mut log, page, 3)?, 19, "event mode: the log did not hold the put");
    let (notice, _) = unimem_user::receive(Some(op(OP_EVENT)), false)?;
    ensure!(log.is_notice(&notice), 20, "event mode: the notice was {:#x}", notice.raw());
    ensure!(take(OP_PUT)? == 3, 21, "phase 3's put");

    // 4. Polled again: logged, nothing told.
    log.notify_on(None)?;
    send(initiator, OP_PHASE, 4)?;
    ensure!(take(OP_PUT)? == 4, 22, "phase 4's put");
    ensure!(log.pending(), 23, "polled: the put was not logged");
    let r = sys::mailbox_event(false);
    ensure!(r == Err(Error::Syscall(SysError::WouldBlock)), 24, "polled: a notice came ({:?})", r);
    ensure!(sys::signals()? == 0, 25, "polled: a signal came");
    ensure!(took_the_put(&mut log, page, 4)?, 26, "polled: the log did not hold the put");
    log!("a log told its owner in read, signal and event mode, and nothing once polled");
    send(initiator, OP_PHASE, PHASES + 1)?;
    Ok(0)
}
