//! Kernel receivers of mailbox opcodes (seed §3.2.1: a driver registers an opcode and its
//! callback runs when a notification of that opcode arrives). The callback runs on the service
//! core while it serves the Notify request that carried the notification (the seed runs it in
//! the mailbox interrupt), or in the caller of [`super::notify_local`]; it must be short and may
//! not wait for another node.

use super::mailbox;
use crate::gsas::mailbox::{KernelHandler, MailboxError, Receiver, Registrant};
use proto::gsas::{MAILBOX_OPCODES, MailboxOpcode, Notification, Pid};

/// A kernel receiver: the notification and its sender.
pub type Handler = fn(Notification, Pid);

/// The callback of each kernel-registered opcode (indexed by opcode, as `KernelHandler` is).
static HANDLERS: spin::Mutex<[Option<Handler>; MAILBOX_OPCODES]> = spin::Mutex::new([None; MAILBOX_OPCODES]);

/// Makes `handler` the receiver of `opcode` (a kernel opcode or a user channel).
pub fn register(opcode: MailboxOpcode, handler: Handler) -> Result<(), MailboxError> {
    let mut handlers = HANDLERS.lock();
    if handlers[opcode.index()].is_some() {
        return Err(MailboxError::AlreadyRegistered);
    }
    mailbox().lock().register(opcode, Receiver::Kernel(KernelHandler(opcode.index() as u16)))?;
    handlers[opcode.index()] = Some(handler);
    Ok(())
}

/// Gives `opcode` up (its notifications are refused `NoReceiver` again).
pub fn unregister(opcode: MailboxOpcode) -> Result<(), MailboxError> {
    mailbox().lock().unregister(opcode, Registrant::Kernel)?;
    HANDLERS.lock()[opcode.index()] = None;
    Ok(())
}

/// Runs the callback `handler` names (registered by [`register`]).
pub(super) fn run(handler: KernelHandler, notification: Notification, from: Pid) {
    let callback = HANDLERS.lock().get(usize::from(handler.0)).copied().flatten();
    if let Some(callback) = callback {
        callback(notification, from);
    }
}
