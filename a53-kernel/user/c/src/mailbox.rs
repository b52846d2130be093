//! `unimem_mailbox.h`: notifications (seed §3.2; `docs/hw/gsas-packets.md`, "Notifications"),
//! over the library's `notify` and the mailbox system calls.
//!
//! A message is the seed's 64-bit value, its opcode in bits [63:60]; processes use the user
//! opcodes 8..=15. The seed registers an opcode by writing `struct mailbox_action_t { char
//! action; unsigned opcode; int val; }` to its device; `unimem_mailbox_register` takes the same
//! three fields: `'r'` (read), `'s'` (signal `val`), `'e'` (the event counter, which stands for
//! the seed's eventfd: `val` is not used), `'u'` (unregister).

use core::ffi::c_char;

use proto::gsas::{MailboxOpcode, Notification};
use proto::syscall::{ANY_OPCODE, SIGNALS_MAX};
use unimem_user::sys::{self, Wake};
use unimem_user::{Error, Gsas, Link};

use crate::status::{CError, deliver, status};

/// A user opcode (8..=15); any other value is refused here, before the kernel sees it.
pub(crate) fn user_opcode(value: u32) -> Result<MailboxOpcode, CError> {
    let opcode = u8::try_from(value).ok().and_then(|v| MailboxOpcode::new(v).ok());
    opcode.filter(|o| o.is_user()).ok_or(CError::BadArgument)
}

/// The seed's `mailbox_action_t` fields as a registration: `Some(wake)` to register, `None` to
/// unregister (`'u'`).
pub(crate) fn action(action: c_char, val: i32) -> Result<Option<Wake>, CError> {
    match crate::byte(action) {
        b'r' => Ok(Some(Wake::Read)),
        b's' => {
            let signal = u8::try_from(val).ok().filter(|&s| u64::from(s) < SIGNALS_MAX);
            signal.map(|s| Some(Wake::Signal(s))).ok_or(CError::BadArgument)
        }
        b'e' => Ok(Some(Wake::Event)),
        b'u' => Ok(None),
        _ => Err(CError::BadArgument),
    }
}

/// A message to send: node and the 64-bit value (opcode 0 is never a message).
pub(crate) fn message(node: u64, message: u64) -> Result<(u16, Notification), CError> {
    let node = u16::try_from(node).map_err(|_| Error::NoSuchNode(node))?;
    let n = Notification::from_raw(message).map_err(|_| CError::BadArgument)?;
    Ok((node, n))
}

/// Sends `message` to `node` through `g`.
pub(crate) fn send<L: Link>(g: &mut Gsas<L>, node: u64, value: u64) -> Result<(), CError> {
    let (node, n) = message(node, value)?;
    Ok(g.notify(node, n)?)
}

/// Which opcode a receive asks for: a user opcode, or any (`UNIMEM_MAILBOX_ANY`).
pub(crate) fn receive_opcode(value: u32) -> Result<Option<MailboxOpcode>, CError> {
    if u64::from(value) == ANY_OPCODE {
        return Ok(None);
    }
    user_opcode(value).map(Some)
}

// ---- The exports ----

/// `uint64_t unimem_mailbox_send(uint64_t node, uint64_t message)`: a status.
#[unsafe(no_mangle)]
pub extern "C" fn unimem_mailbox_send(node: u64, message: u64) -> u64 {
    status(unimem_user::with_client(|g| Ok(send(g, node, message))).unwrap_or_else(|e| Err(e.into())))
}

/// `uint64_t unimem_mailbox_send_within(uint64_t node, uint64_t message, uint64_t within_us)`:
/// as `unimem_mailbox_send`, retried every 5 ms for up to `within_us` while the receiver has
/// not registered yet or its queue is full.
#[unsafe(no_mangle)]
pub extern "C" fn unimem_mailbox_send_within(node: u64, value: u64, within_us: u64) -> u64 {
    status(message(node, value).and_then(|(node, n)| Ok(unimem_user::notify_when_ready(node, n, within_us)?)))
}

/// `uint64_t unimem_mailbox_register(unsigned opcode, char action, int val)`: a status.
#[unsafe(no_mangle)]
pub extern "C" fn unimem_mailbox_register(opcode: u32, act: c_char, val: i32) -> u64 {
    status(user_opcode(opcode).and_then(|op| match action(act, val)? {
        Some(wake) => Ok(sys::mailbox_register(op, wake)?),
        None => Ok(sys::mailbox_unregister(op)?),
    }))
}

/// `uint64_t unimem_mailbox_unregister(unsigned opcode)`: a status.
#[unsafe(no_mangle)]
pub extern "C" fn unimem_mailbox_unregister(opcode: u32) -> u64 {
    status(user_opcode(opcode).and_then(|op| Ok(sys::mailbox_unregister(op)?)))
}

/// `uint64_t unimem_mailbox_receive(unsigned opcode, int blocking, uint64_t *message,
/// uint64_t *sender)`: the oldest message for `opcode` (or any registered one), and its
/// sender's PID; either pointer may be NULL. `UNIMEM_E_WOULD_BLOCK` when not blocking and none
/// is there.
///
/// # Safety
///
/// `message` and `sender` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unimem_mailbox_receive(
    opcode: u32,
    blocking: i32,
    message: *mut u64,
    sender: *mut u64,
) -> u64 {
    let received = receive_opcode(opcode).and_then(|op| Ok(sys::mailbox_receive(op, blocking != 0)?));
    if let Ok((n, from)) = received {
        // SAFETY: each is NULL or writable (the caller's contract).
        unsafe {
            if !message.is_null() {
                message.write(n.raw());
            }
            if !sender.is_null() {
                sender.write(from.raw());
            }
        }
    }
    status(received.map(drop))
}

/// `uint64_t unimem_mailbox_events(int blocking, uint64_t *count)`: the event counter, the
/// messages waiting on the `'e'` opcodes (they stay queued for `unimem_mailbox_receive`).
///
/// # Safety
///
/// `count` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unimem_mailbox_events(blocking: i32, count: *mut u64) -> u64 {
    // SAFETY: forwarded from the caller.
    unsafe { deliver(count, || Ok(sys::mailbox_event(blocking != 0)?)) }
}

/// `uint64_t unimem_signals(uint64_t *raised)`: the signals raised since the last call (bit n:
/// signal n), which are then cleared.
///
/// # Safety
///
/// `raised` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unimem_signals(raised: *mut u64) -> u64 {
    // SAFETY: forwarded from the caller.
    unsafe { deliver(raised, || Ok(sys::signals()?)) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use unimem_user::SysError;
    use unimem_user::fake::{FakeNet, WINDOW};

    use crate::status::{code, unimem_last_error};

    #[test]
    fn only_user_opcodes_and_the_seeds_actions_are_taken() {
        assert_eq!(user_opcode(8).map(MailboxOpcode::value), Ok(8));
        assert_eq!(user_opcode(15).map(MailboxOpcode::value), Ok(15));
        for refused in [0, 1, 7, 16, 0x108, u32::MAX] {
            assert_eq!(user_opcode(refused), Err(CError::BadArgument), "{refused}");
        }
        assert_eq!(receive_opcode(16), Ok(None), "UNIMEM_MAILBOX_ANY");
        assert_eq!(receive_opcode(3), Err(CError::BadArgument));
        assert_eq!(action(b'r' as c_char, 99), Ok(Some(Wake::Read)), "val ignored");
        assert_eq!(action(b's' as c_char, 63), Ok(Some(Wake::Signal(63))));
        assert_eq!(action(b's' as c_char, 64), Err(CError::BadArgument));
        assert_eq!(action(b's' as c_char, -1), Err(CError::BadArgument));
        assert_eq!(action(b's' as c_char, 0x109), Err(CError::BadArgument), "not cut to 9");
        assert_eq!(action(b'e' as c_char, 0), Ok(Some(Wake::Event)));
        assert_eq!(action(b'u' as c_char, 0), Ok(None));
        assert_eq!(action(b'x' as c_char, 0), Err(CError::BadArgument));
    }

    #[test]
    fn a_message_goes_to_its_node_whole() {
        let mut g = Gsas::new(FakeNet::new(2), FakeNet::ME, 0, 2, WINDOW);
        let value = 0x9 << 60 | 0x1234;
        send(&mut g, 1, value).unwrap();
        let notified = &g.link().services[1].notified;
        assert_eq!(notified.len(), 1);
        assert_eq!(notified[0].1.raw(), value, "opcode in [63:60], payload below");
        assert_eq!(send(&mut g, 1, 0x1234), Err(CError::BadArgument), "opcode 0 is never a message");
        assert_eq!(send(&mut g, 0x1_0000, value), Err(CError::Lib(Error::NoSuchNode(0x1_0000))));
        assert_eq!(send(&mut g, 5, value), Err(CError::Lib(Error::NoSuchNode(5))));
        assert_eq!(g.link().services[1].notified.len(), 1, "nothing refused was sent");
    }

    #[test]
    fn the_exports_check_arguments_before_calling_the_kernel() {
        assert_eq!(unimem_mailbox_register(3, b'r' as c_char, 0), code::BAD_ARGUMENT);
        assert_eq!(unimem_mailbox_register(9, b'q' as c_char, 0), code::BAD_ARGUMENT);
        let no_kernel = Error::Syscall(SysError::NoSuchCall).exit_status();
        assert_eq!(unimem_mailbox_register(9, b's' as c_char, 5), no_kernel, "valid: the kernel is asked");
        let mut message = 1u64;
        // SAFETY: `message` is live; `sender` is NULL.
        let r = unsafe { unimem_mailbox_receive(9, 0, &raw mut message, core::ptr::null_mut()) };
        assert_eq!((r, message), (no_kernel, 1), "untouched on failure");
        // SAFETY: NULL.
        assert_eq!(unsafe { unimem_signals(core::ptr::null_mut()) }, code::NULL);
        assert_eq!(unimem_last_error(), code::NULL);
        assert_eq!(unimem_mailbox_send_within(0, 0, 0), code::BAD_ARGUMENT, "opcode 0, refused before sending");
    }
}
