//! What the GSAS client needs from below: send one packet through the process's packetizer
//! interface, read its mailbox interface, sleep, tell the time. [`crate::Hw`] does it with the
//! real registers and system calls; the host tests use a fake with a simulated service.

use crate::error::Error;

/// How the destination answered a packet (`docs/hw/packetizer.md`, "Status bits").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sent {
    /// The destination queued the whole packet.
    Ack,
    /// The destination's FIFO had no room (or the interconnect could not deliver): nothing was
    /// queued; the same packet may be sent again.
    Nack,
    /// Unsendable: nothing was sent.
    Illegal,
    /// A register write collided with a pending packet.
    Overwritten,
    /// The destination node is gone: nothing was queued, and sending again will not help.
    Unreachable,
}

pub trait Link {
    /// Sends one packet: payload0 (bits [47:0] are replaced by the hardware), payload1, and the
    /// destination address. Returns once the packetizer has the destination's answer.
    fn send(&mut self, payload: [u128; 2], destination: u64) -> Result<Sent, Error>;

    /// Words queued in the mailbox interface now (status COUNT).
    fn count(&mut self) -> u32;

    /// Words the mailbox interface holds at most (DEPTH).
    fn depth(&mut self) -> u32;

    /// Dequeues one word; called only when `count` said it is there.
    fn dequeue(&mut self) -> u128;

    /// Dequeues a whole packet (two words) if one is queued: one read, which says whether there
    /// was one (`docs/hw/vmbox.md`, "PACKET").
    fn read_packet(&mut self) -> Option<[u128; 2]>;

    /// Sleeps until the mailbox interface holds at least `words` words; `Timeout` after
    /// `timeout_us`, `NodeUnreachable` as soon as node `from` (whose answer is awaited) is gone.
    /// May return early: the caller looks at `count` again.
    fn wait(&mut self, words: u32, timeout_us: u64, from: u16) -> Result<(), Error>;

    /// Microseconds since boot.
    fn now_us(&mut self) -> u64;

    /// A short pause before sending a refused packet again (`attempt` counts from 0).
    fn backoff(&mut self, attempt: u32);
}
