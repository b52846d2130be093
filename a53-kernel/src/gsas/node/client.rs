//! The kernel's own request interface (`docs/hw/gsas-packets.md`, "Notifications"): a PIF/MIF
//! pair held by domain 0, through which the kernel sends notifications to other nodes' mailboxes.
//!
//! PIF 0 is the atomic service's, and a reply to a request sent through it would land in the
//! service's request FIFO; this pair's replies land in its own MIF. Sending never waits for the
//! reply (a kernel handler on the service core may send while the other node's service sends to
//! this one): replies are drained at the next send and by the MIF's interrupt, and counted.

use super::{PacketSender, PacketSource, destination};
use core::sync::atomic::{AtomicU64, Ordering};
use hal::packetizer::driver::SendStatus;
use hal::packetizer::{bytes_from_words, words_from_words128};
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
pub const SEND_TRIES: u32 = 64;

/// What the targets did with the kernel's notifications, as their status replies say.
#[derive(Clone, Copy)]
pub struct Tally<'c> {
    pub delivered: &'c AtomicU64,
    pub refused: &'c AtomicU64,
}

/// The pair `index`: its PIF, the reading half of its MIF, and where replies are counted.
pub struct KernelClient<'c, P: PacketSender, R: PacketSource> {
    pub index: u8,
    pif: P,
    replies: R,
    tally: Tally<'c>,
}

impl<'c, P: PacketSender, R: PacketSource> KernelClient<'c, P, R> {
    /// The pair `index`, granted to the kernel (domain 0) in the PIDT.
    pub fn new(index: u8, pif: P, replies: R, tally: Tally<'c>) -> Self {
        Self { index, pif, replies, tally }
    }

    /// Sends `notification` to node `node`'s mailbox as the kernel; the outcome comes back later
    /// as a reply ([`drain`](Self::drain) counts it). A full target FIFO (NACK) is retried
    /// [`SEND_TRIES`] times.
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

    /// Takes the replies that came, counting what the targets did with the notifications: a
    /// status without error is a delivery; an error, or a packet that is no status, a refusal.
    pub fn drain(&mut self) {
        while let Some(packet) = self.replies.read_packet() {
            let bytes = bytes_from_words(words_from_words128(packet));
            let counter = match ReplyPacket::decode(&bytes).map(|r| r.body) {
                Ok(ReplyBody::Status(response)) if response.error.is_none() => self.tally.delivered,
                _ => self.tally.refused,
            };
            counter.fetch_add(1, Ordering::Relaxed);
        }
    }
}
