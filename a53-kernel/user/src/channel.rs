//! User notification channels as programs that coordinate use them: a channel is a user
//! opcode (0x8..=0xF), a message is its 60-bit payload. `send` retries while the receiver is
//! still starting up (has not registered the opcode yet), `take` blocks for the next one.

use crate::{Error, MailboxOpcode, Notification, notify_when_ready, receive};

/// How long [`send`] retries a receiver that has not registered yet.
pub const SEND_WITHIN_US: u64 = 30_000_000;

/// User opcode `value` (0x8..=0xF); a program's channels are constants, so any other value is
/// a bug in the program.
pub fn op(value: u8) -> MailboxOpcode {
    MailboxOpcode::new(value).ok().filter(|o| o.is_user()).expect("a user opcode")
}

/// Sends `payload` to `node` on channel `opcode`.
pub fn send(node: u16, opcode: u8, payload: u64) -> Result<(), Error> {
    let n = Notification::new(op(opcode), payload).map_err(|_| Error::NoArgument)?;
    notify_when_ready(node, n, SEND_WITHIN_US)
}

/// The payload of the next message on channel `opcode` (registered before), waiting for it.
pub fn take(opcode: u8) -> Result<u64, Error> {
    receive(Some(op(opcode)), true).map(|(n, _)| n.payload())
}
