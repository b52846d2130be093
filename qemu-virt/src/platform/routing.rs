//! Packetizer packets between nodes, both ends. A packet that node `src`'s packetizer emits
//! goes to the transport (`Transport::deliver_packet`), which carries it as one link-reliable
//! transaction (lost attempts are retried, the latency is waited) to the destination node's
//! vmbox ([`Endpoint::packet`] on that node's platform), and the vmbox's ACK or NACK comes back
//! in the same transaction: the PIF status is final when the guest's third write completes.
//!
//! # Lock order
//!
//! The sink runs inside the sender's packetizer write, so the sender's packetizer device is
//! locked, and the transport takes exactly one more lock on this host: the destination's vmbox
//! device, in `Endpoint::packet` (a destination on another host is locked there, by a thread
//! that holds nothing else). The locks of the platform, by rank:
//!
//! 1. a platform's interrupt wire (`Platform::update_irqs`);
//! 2. one device of that platform (sysblock, window, packetizer, vmbox): `Platform::access`, or
//!    `AddressMap::irq_levels`, which locks the devices one after another, never two at once;
//! 3. a vmbox device of any node, taken only in `Endpoint::packet`, under a packetizer (rank 2).
//!
//! The SMMU model's state lock is a leaf too: a bus master translating through it (from any
//! thread, holding any device lock) takes nothing else while it is held, and the model's
//! interrupt callback afterwards takes only the interrupt wire's state lock, which is a leaf as
//! well (`Platform::new`).
//!
//! Everything else (the transport's own state: the interconnect's random numbers and link
//! counters, the trace) is a leaf: nothing is locked while holding it. Every thread takes locks
//! in increasing rank, and whoever holds a vmbox waits for nothing, so threads can never wait
//! for each other in a cycle. Two nodes sending to each other at once: A holds its packetizer
//! and waits for B's vmbox, B holds its packetizer and waits for A's vmbox; both vmbox locks are
//! only ever held briefly by threads that wait for nothing, so both senders proceed.
//!
//! The destination's `update_irqs` cannot run under the sink: it locks every device of the
//! destination, its packetizer included, and packetizer-under-packetizer is exactly the cycle
//! above (A and B sending to each other would each wait for the other's packetizer). So the
//! sink only records the destination in the sender's `touched` mask when the transport says a
//! vmbox of this host saw the packet (`Carried::touched`), and `Platform::access` has the
//! transport re-sample the destination's lines (`Transport::resample_lines`, which calls
//! [`Endpoint::resample_lines`]) after it has released the sender's packetizer.

use super::Platform;
use crate::interconnect::Datagram;
use crate::models::packetizer::{OutgoingPacket, Sink};
use crate::transport::{Delivery, Endpoint, Transport};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The sink of node `src`'s packetizer. Bit `n` of `touched` is set when a packet reached node
/// `n`'s vmbox (accepted or refused: a refusal may raise `REFUSED`); node ids are 6 bits
/// (`DESTINATION.NODE`), so they fit.
pub(super) fn sink(src: usize, transport: Arc<dyn Transport>, touched: Arc<AtomicU64>) -> Sink {
    Box::new(move |packet: OutgoingPacket| {
        let dst = packet.dest_node;
        let carried = transport.deliver_packet(src, usize::from(dst), packet.dest_interface, &packet.words);
        if carried.touched
            && let Some(bit) = 1u64.checked_shl(u32::from(dst))
        {
            touched.fetch_or(bit, Ordering::AcqRel);
        }
        carried.delivery
    })
}

/// What the transport brings to this node.
impl Endpoint for Platform {
    fn packet(&self, iface: u8, bytes: &[u8]) -> Delivery {
        self.vmbox().lock().unwrap().deliver(iface, bytes)
    }

    fn datagram(&self, datagram: Datagram) {
        (self.pldma_inbox)(datagram);
    }

    fn resample_lines(&self) {
        self.update_irqs(0);
    }
}
