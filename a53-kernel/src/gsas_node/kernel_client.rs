//! The kernel's own request interface: a PIF/MIF pair held by domain 0 (`docs/hw/gsas-packets.md`,
//! "Notifications"), through which the kernel sends notifications to other nodes' mailboxes.
//!
//! PIF 0 is the atomic service's, and a reply to a request sent through it would land in the
//! service's request FIFO; this pair's replies land in its own MIF. Sending never waits for the
//! reply (a kernel handler on the service core may send while the other node's service sends to
//! this one): replies are drained at the next send and by the MIF's interrupt, and counted.

use super::destination;
use core::sync::atomic::{AtomicU64, Ordering};
use hal::packetizer::driver::{Pif, SendStatus};
use hal::packetizer::{bytes_from_words, words_from_words128};
use hal::vmbox::driver::{MifIrq, MifReader};
use proto::gsas::{GlobalAddress, Notification, OFFSET_BITS, Opcode, Pid, ReplyBody, ReplyPacket, Request};

/// Why the kernel's notification did not leave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendError {
    /// No such node, or the kernel has no interface (before `gsas_node::init`).
    NoRoute,
    /// The target's request FIFO stayed full.
    Busy,
    /// The packetizer could not send it (the node is gone, or its link is down).
    Unreachable,
}

/// NACKed sends are retried this many times before `Busy`.
const SEND_TRIES: u32 = 64;

/// Kernel notifications the target's service accepted, and refused (its status reply).
pub static DELIVERED: AtomicU64 = AtomicU64::new(0);
pub static REFUSED: AtomicU64 = AtomicU64::new(0);

pub struct KernelClient {
    pub index: u8,
    pif: Pif,
    replies: MifReader,
}

impl KernelClient {
    /// The pair `index`, granted to the kernel (domain 0) in the PIDT: its PIF and the reading
    /// half of its MIF.
    pub fn new(index: u8, pif: Pif, replies: MifReader) -> Self {
        Self { index, pif, replies }
    }

    /// Sends `notification` to node `node`'s mailbox as the kernel; the outcome comes back later
    /// as a reply ([`drain`](Self::drain) counts it).
    pub fn notify(&mut self, node: u16, notification: Notification) -> Result<(), SendError> {
        self.drain();
        let dest = destination(node, 0).ok_or(SendError::NoRoute)?;
        let request = Request {
            // The packetizer writes the sender from the PIDT.
            sender: Pid::from_low_bits(0),
            opcode: Opcode::Notify,
            address: GlobalAddress::from_raw(u64::from(node) << OFFSET_BITS),
            arg1: notification.raw(),
            arg2: 0,
        };
        for _ in 0..SEND_TRIES {
            match self.pif.send(request.pif_payload(), dest) {
                SendStatus::Ack => return Ok(()),
                SendStatus::Nack => core::hint::spin_loop(),
                _ => return Err(SendError::Unreachable),
            }
        }
        Err(SendError::Busy)
    }

    /// Takes the replies that came, counting what the targets did with the notifications.
    pub fn drain(&mut self) {
        while let Some(packet) = self.replies.read_packet() {
            let bytes = bytes_from_words(words_from_words128(packet));
            match ReplyPacket::decode(&bytes).map(|r| r.body) {
                Ok(ReplyBody::Status(response)) if response.error.is_none() => {
                    DELIVERED.fetch_add(1, Ordering::Relaxed)
                }
                _ => REFUSED.fetch_add(1, Ordering::Relaxed),
            };
        }
    }

    /// Re-arms the reply MIF's interrupt for the next reply (one packet).
    pub fn arm(irq: &mut MifIrq) {
        irq.arm(2);
    }
}
