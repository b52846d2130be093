//! `notify-receiver`: receives one notification on a user channel.
//!
//! Argument: the opcode, 8..=15. Registers it, checks that a non-blocking receive finds nothing
//! (`WouldBlock`), then blocks until a notification arrives.
//! Exit status: the notification's 60-bit payload; 1 = the argument is not a user opcode; 2 =
//! the non-blocking receive returned a notification; 3 = the notification has another opcode;
//! otherwise an error status (`README.md`), which the caller tells apart from a payload only by
//! knowing which payload it sent.
#![no_std]
#![no_main]

use unimem_user::{Error, MailboxOpcode, SysError, ensure, log, receive, register, thread_argument};

unimem_user::entry!(main);

fn main() -> Result<u64, Error> {
    let arg = thread_argument()?;
    let opcode = u8::try_from(arg).ok().and_then(|v| MailboxOpcode::new(v).ok()).filter(|op| op.is_user());
    let Some(opcode) = opcode else {
        log!("argument {:#x} is not a user opcode (8..=15)", arg);
        return Ok(1);
    };
    register(opcode)?;
    let early = receive(Some(opcode), false);
    let nothing = early == Err(Error::Syscall(SysError::WouldBlock));
    ensure!(nothing, 2, "non-blocking receive before anyone sent: {:?}", early);
    let (n, from) = receive(Some(opcode), true)?;
    log!("opcode {:#x}: payload {:#x} from {:#x}", opcode.value(), n.payload(), from.raw());
    ensure!(n.opcode() == opcode, 3, "received opcode {:#x}", n.opcode().value());
    Ok(n.payload())
}
