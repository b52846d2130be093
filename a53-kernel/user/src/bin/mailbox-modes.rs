//! `mailbox-modes`: the mailbox's three ways of telling a process (seed §3.2.2 `'r'`, `'s'`,
//! `'e'`; `docs/hw/gsas-packets.md`, "Notifications").
//!
//! Argument: `args::mailbox_modes::pack(role)`.
//! - `Local`: event mode (the counter counts what waits and leaves it queued), signal mode (the
//!   signal is raised, read once, and ends a sleep begun while it is pending) and the refused
//!   registrations, all by notifying this node.
//! - `Sleeper`: registers channel 4 in signal mode (signal 9) and channel 5 in event mode, then
//!   sleeps 30 s: a `Waker` on another node must end the sleep early with `Interrupted`.
//! - `Waker { node }`: notifies channel 5, then channel 4, of `node`.
//!
//! Exit status: 0; 1 = bad argument; 10.. = a check failed (the log says which).
#![no_std]
#![no_main]

use unimem_user::args::mailbox_modes::{Role, unpack};
use unimem_user::sys::{self, Wake};
use unimem_user::{
    Error, MailboxOpcode, Notification, SysError, board_id, ensure, log, notify, notify_when_ready, receive,
    thread_argument,
};

unimem_user::entry!(main);

const SIGNAL: u8 = 9;
const SLEEP_US: u64 = 30_000_000;
const READY_US: u64 = 20_000_000;

fn channel(n: u8) -> MailboxOpcode {
    MailboxOpcode::user(n).expect("a user channel")
}

fn message(n: u8, payload: u64) -> Notification {
    Notification::new(channel(n), payload).expect("a 60-bit payload")
}

fn main() -> Result<u64, Error> {
    let arg = thread_argument()?;
    let Some(role) = unpack(arg) else {
        log!("argument {:#x} is no role", arg);
        return Ok(1);
    };
    match role {
        Role::Local => local(),
        Role::Sleeper => sleeper(),
        Role::Waker { node } => {
            notify_when_ready(node, message(5, 0x55), READY_US)?;
            notify_when_ready(node, message(4, 0x44), READY_US)?;
            Ok(0)
        }
    }
}

fn local() -> Result<u64, Error> {
    let me = board_id()?;
    let would_block = Err(Error::Syscall(SysError::WouldBlock));
    // Event mode: an eventfd over the channel's queue.
    let r = sys::mailbox_event(false);
    ensure!(r == Err(Error::Syscall(SysError::NotRegistered)), 10, "event counter with no event channel: {:?}", r);
    sys::mailbox_register(channel(0), Wake::Event)?;
    let r = sys::mailbox_event(false);
    ensure!(r == would_block, 11, "event counter before any message: {:?}", r);
    notify(me, message(0, 7))?;
    notify(me, message(0, 8))?;
    let r = sys::mailbox_event(true);
    ensure!(r == Ok(2), 12, "event counter after two messages: {:?}", r);
    let (n, _) = receive(Some(channel(0)), false)?;
    ensure!(n.payload() == 7, 13, "first message {:#x}", n.payload());
    let r = sys::mailbox_event(false);
    ensure!(r == Ok(1), 14, "event counter after one receive: {:?}", r);
    receive(Some(channel(0)), false)?;
    let r = sys::mailbox_event(false);
    ensure!(r == would_block, 15, "event counter after both receives: {:?}", r);
    // Signal mode: raised once per delivery, read and cleared by SIGNALS.
    sys::mailbox_register(channel(1), Wake::Signal(5))?;
    let r = sys::signals();
    ensure!(r == Ok(0), 16, "signals before any: {:?}", r);
    notify(me, message(1, 3))?;
    let r = sys::signals();
    ensure!(r == Ok(1 << 5), 17, "signals after a delivery: {:?}", r);
    let r = sys::signals();
    ensure!(r == Ok(0), 18, "signals are cleared once read: {:?}", r);
    // A sleep begun while a signal is pending ends at once.
    notify(me, message(1, 4))?;
    let before = sys::time_us()?;
    let r = sys::sleep_us(SLEEP_US);
    let slept = sys::time_us()? - before;
    ensure!(r == Err(Error::Syscall(SysError::Interrupted)), 19, "sleep with a signal pending: {:?}", r);
    ensure!(slept < SLEEP_US / 2, 20, "the interrupted sleep lasted {} us", slept);
    let r = sys::signals();
    ensure!(r == Ok(1 << 5), 21, "the signal that interrupted: {:?}", r);
    for payload in [3, 4] {
        let (n, _) = receive(Some(channel(1)), false)?;
        ensure!(n.payload() == payload, 22, "signal-mode message {:#x}, not {:#x}", n.payload(), payload);
    }
    // A receive begun with a signal pending ends at once and waits no more: the next signal-mode
    // delivery raises its signal again (a receive left among the waiters would take it).
    notify(me, message(1, 5))?;
    let (n, _) = receive(Some(channel(1)), false)?;
    ensure!(n.payload() == 5, 29, "signal-mode message {:#x}, not 0x5", n.payload());
    let r = sys::mailbox_receive_within(None, SLEEP_US);
    ensure!(r == Err(Error::Syscall(SysError::Interrupted)), 26, "a receive with a signal pending: {:?}", r);
    let r = sys::signals();
    ensure!(r == Ok(1 << 5), 27, "the signal that ended the receive: {:?}", r);
    notify(me, message(1, 6))?;
    let r = sys::signals();
    ensure!(r == Ok(1 << 5), 28, "a delivery after the ended receive raised no signal: {:?}", r);
    let (n, _) = receive(Some(channel(1)), false)?;
    ensure!(n.payload() == 6, 29, "signal-mode message {:#x}, not 0x6", n.payload());
    // Refused: a signal number past 63, a taken channel, a kernel opcode.
    let r = sys::mailbox_register(channel(2), Wake::Signal(64));
    ensure!(r == Err(Error::Syscall(SysError::BadArgument)), 23, "signal 64: {:?}", r);
    let r = sys::mailbox_register(channel(0), Wake::Read);
    ensure!(r == Err(Error::Syscall(SysError::Busy)), 24, "a channel registered twice: {:?}", r);
    let kernel_opcode = MailboxOpcode::new(6).expect("opcode 6");
    let r = sys::mailbox_register(kernel_opcode, Wake::Event);
    ensure!(r == Err(Error::Syscall(SysError::BadArgument)), 25, "a kernel opcode: {:?}", r);
    log!("event and signal modes: counted, raised, read once, a pending signal ends a sleep and a receive");
    Ok(0)
}

fn sleeper() -> Result<u64, Error> {
    sys::mailbox_register(channel(4), Wake::Signal(SIGNAL))?;
    sys::mailbox_register(channel(5), Wake::Event)?;
    let before = sys::time_us()?;
    let r = sys::sleep_us(SLEEP_US);
    let slept = sys::time_us()? - before;
    ensure!(r == Err(Error::Syscall(SysError::Interrupted)), 30, "the sleep ended with {:?}", r);
    ensure!(slept < SLEEP_US, 31, "the sleep lasted {} us", slept);
    let r = sys::signals();
    ensure!(r == Ok(1 << SIGNAL), 32, "signals: {:?}", r);
    let r = sys::mailbox_event(false);
    ensure!(r == Ok(1), 33, "event counter: {:?}", r);
    let (n, from) = receive(Some(channel(5)), false)?;
    ensure!(n.payload() == 0x55, 34, "event message {:#x}", n.payload());
    let (m, _) = receive(Some(channel(4)), false)?;
    ensure!(m.payload() == 0x44, 35, "signal message {:#x}", m.payload());
    log!("woken by a signal from node {} after {} us", from.node(), slept);
    Ok(0)
}
