//! Kernel receivers of mailbox opcodes (seed §3.2.1: a driver registers an opcode and its
//! callback runs when a notification of that opcode arrives). The callback runs on the service
//! core while it serves the Notify request that carried the notification (the seed runs it in
//! the mailbox interrupt), or in the caller of [`super::notify_local`]; it must be short and may
//! not wait for another node. The registry is `gsas::node::Handlers`; this keeps the node's one.

use super::mailbox;
use crate::gsas::mailbox::{KernelHandler, MailboxError};
use crate::gsas::node::Handlers;
use proto::gsas::{MailboxOpcode, Notification, Pid};

pub use crate::gsas::node::Handler;

/// The node's kernel receivers. Taken before the mailbox's lock, never inside it.
static HANDLERS: spin::Mutex<Handlers> = spin::Mutex::new(Handlers::new());

/// Makes `handler` the receiver of `opcode` (a kernel opcode or a user channel).
pub fn register(opcode: MailboxOpcode, handler: Handler) -> Result<(), MailboxError> {
    HANDLERS.lock().register(&mut mailbox().lock(), opcode, handler)
}

/// Gives `opcode` up (its notifications are refused `NoReceiver` again).
pub fn unregister(opcode: MailboxOpcode) -> Result<(), MailboxError> {
    HANDLERS.lock().unregister(&mut mailbox().lock(), opcode)
}

/// Runs the callback `handler` names (registered by [`register`]), without the registry's lock:
/// a callback may register or deliver.
pub(super) fn run(handler: KernelHandler, notification: Notification, from: Pid) {
    let callback = HANDLERS.lock().get(handler);
    if let Some(callback) = callback {
        callback(notification, from);
    }
}
