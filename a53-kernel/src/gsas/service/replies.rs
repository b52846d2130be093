//! The reply sequence for one request (`docs/hw/gsas-packets.md` "Replies"): one status packet, or
//! for a successful Read4K 256 data packets in index order and then the status packet.
//!
//! The kernel sends packet `i` through PIF 0 and moves to `i + 1` on ACK; on NACK (the
//! requester's FIFO is full) it keeps the sequence and retries later, serving other requests in
//! between. The page was copied when the request was applied, so the Read4K is atomic however
//! long the transfer takes.

use alloc::boxed::Box;

use proto::gsas::{CHUNK_BYTES, PAGE_CHUNKS, PAGE_SIZE, Pid, ReplyBody, ReplyPacket, Response};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replies {
    from: Pid,
    to: Pid,
    opcode: u8,
    status: Response,
    page: Option<Box<[u8; PAGE_SIZE as usize]>>,
}

impl Replies {
    #[inline]
    pub(super) fn new(from: Pid, to: Pid, opcode: u8, status: Response, page: Option<Box<[u8; 4096]>>) -> Self {
        Self { from, to, opcode, status, page }
    }

    /// The requester: replies go to mailbox interface `to.interface()` of node `to.node()`.
    pub fn to(&self) -> Pid {
        self.to
    }

    pub fn status(&self) -> Response {
        self.status
    }

    /// The Read4K snapshot, if this answers a successful Read4K.
    pub fn page(&self) -> Option<&[u8; PAGE_SIZE as usize]> {
        self.page.as_deref()
    }

    /// Packets in the sequence: 1, or `PAGE_CHUNKS + 1`.
    pub fn len(&self) -> usize {
        if self.page.is_some() { PAGE_CHUNKS + 1 } else { 1 }
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    pub fn packet(&self, i: usize) -> Option<ReplyPacket> {
        let body = match (&self.page, i) {
            (Some(page), i) if i < PAGE_CHUNKS => {
                let mut bytes = [0; CHUNK_BYTES];
                bytes.copy_from_slice(&page[i * CHUNK_BYTES..(i + 1) * CHUNK_BYTES]);
                ReplyBody::Data { index: i as u8, bytes }
            }
            _ if i + 1 == self.len() => ReplyBody::Status(self.status),
            _ => return None,
        };
        Some(ReplyPacket { sender: self.from, to: self.to, opcode: self.opcode, body })
    }

    pub fn packets(&self) -> impl Iterator<Item = ReplyPacket> + '_ {
        (0..self.len()).filter_map(|i| self.packet(i))
    }
}
