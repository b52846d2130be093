//! Wire formats of the global shared address space (seed §2.2, §2.3, §3.2), specified in
//! `docs/hw/gsas-packets.md`: addresses, sender ids, the 256-bit request, the 128-bit response and
//! the reply packet that carries it, the RemoteSpawn description page and 64-bit mailbox
//! notifications. Decoding never panics; values that mean nothing are typed errors.

mod address;
mod check;
mod error;
mod notification;
mod opcode;
mod pid;
mod request;
mod response;
mod spawn;

pub use address::{AddressError, GlobalAddress, GlobalPage, OFFSET_BITS, PAGE_SHIFT, PAGE_SIZE, PAGES_PER_NODE};
pub use check::{MAX_ALLOC_PAGES, Sharing, static_check};
pub use error::{ErrorCode, UnknownErrorCode};
pub use notification::{
    MailboxOpcode, Message, Notification, NotificationError, OPCODES as MAILBOX_OPCODES,
    PAYLOAD_BITS as NOTIFICATION_PAYLOAD_BITS,
};
pub use opcode::{AddressUse, Opcode, UnknownOpcode, VaOp, VaWidth, va_opcode};
pub use pid::{DomainId, GENERATIONS, INTERFACES, KERNEL_DOMAIN, PID_BITS, Pid, PidError};
pub use request::{RawRequest, Request, RequestError};
pub use response::{
    CHUNK_BYTES, KIND_DATA, KIND_STATUS, PAGE_CHUNKS, RESPONSE_BYTES, ReplyBody, ReplyError, ReplyPacket, Response,
};
pub use spawn::{EMPTY_THREAD_ARGUMENT, MAX_SPAWN_NAME, SpawnDescriptionError, parse_description, write_description};
