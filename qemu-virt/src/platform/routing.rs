//! Packetizer packets between nodes. A packet that node `src`'s packetizer emits crosses the
//! interconnect as one link-reliable transaction (lost attempts are retried, the latency is
//! waited) to the destination node's vmbox, and the vmbox's ACK or NACK comes back in the same
//! transaction: the PIF status is final when the guest's third write completes.
//!
//! # Lock order
//!
//! The sink runs inside the sender's packetizer write, so the sender's packetizer device is
//! locked, and it takes exactly one more lock: the destination's vmbox device. The locks of the
//! platform, by rank:
//!
//! 1. a platform's interrupt wire (`Platform::update_irqs`);
//! 2. one device of that platform (sysblock, window, packetizer, vmbox): `Platform::access`, or
//!    `AddressMap::irq_levels`, which locks the devices one after another, never two at once;
//! 3. a vmbox device of any node, taken only here, under a packetizer (rank 2).
//!
//! The SMMU model's state lock is a leaf too: a bus master translating through it (from any
//! thread, holding any device lock) takes nothing else while it is held, and the model's
//! interrupt callback afterwards takes only the interrupt wire's state lock, which is a leaf as
//! well (`Platform::new`).
//!
//! Everything else (the interconnect's random numbers and link counters, the trace) is a leaf:
//! nothing is locked while holding it. Every thread takes locks in increasing rank, and whoever
//! holds a vmbox waits for nothing, so threads can never wait for each other in a cycle. Two
//! nodes sending to each other at once: A holds its packetizer and waits for B's vmbox, B holds
//! its packetizer and waits for A's vmbox; both vmbox locks are only ever held briefly by
//! threads that wait for nothing, so both senders proceed.
//!
//! The destination's `update_irqs` cannot run here: it locks every device of the destination,
//! its packetizer included, and packetizer-under-packetizer is exactly the cycle above (A and B
//! sending to each other would each wait for the other's packetizer). So the sink only records
//! the destination in the sender's `touched` mask, and `Platform::access` runs the destination's
//! `update_irqs` after it has released the sender's packetizer.

use crate::counters::NodeCounters;
use crate::fabric::Fabric;
use crate::interconnect::channel;
use crate::models::Delivery;
use crate::models::packetizer::{OutgoingPacket, Sink};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The sink of node `src`'s packetizer. Bit `n` of `touched` is set when a packet reached node
/// `n`'s vmbox (accepted or refused: a refusal may raise `REFUSED`); node ids are 6 bits
/// (`DESTINATION.NODE`), so they fit.
pub(super) fn sink(src: usize, fabric: Arc<Fabric>, touched: Arc<AtomicU64>) -> Sink {
    Box::new(move |packet: OutgoingPacket| {
        let (delivery, reached) = carry(&fabric, src, &packet);
        if reached && let Some(bit) = 1u64.checked_shl(u32::from(packet.dest_node)) {
            touched.fetch_or(bit, Ordering::AcqRel);
        }
        delivery
    })
}

/// Sends one packet and returns the destination's answer, and whether a vmbox saw the packet.
/// A node that has stopped answers `Unreachable`; one that does not exist, or has no platform
/// yet (the cluster is starting), NACK.
fn carry(fabric: &Fabric, src: usize, packet: &OutgoingPacket) -> (Delivery, bool) {
    let dst = usize::from(packet.dest_node);
    NodeCounters::bump(&fabric.counters[src].packets_sent);
    let mut reached = false;
    let delivery = if dst < fabric.nodes() {
        // As for a window store to a stopped node, the links carry the packet and the dead end
        // answers with an error response.
        fabric.interconnect.transact(src, dst);
        match (fabric.ddr(dst), fabric.platform(dst)) {
            (Some(_), Some(platform)) => {
                reached = true;
                platform.vmbox().lock().unwrap().deliver(packet.dest_interface, &packet.words)
            }
            (None, _) => Delivery::Unreachable,
            (Some(_), None) => Delivery::Nack,
        }
    } else {
        // No route: the interconnect refuses it at the sender's edge.
        Delivery::Nack
    };
    match delivery {
        Delivery::Ack => NodeCounters::bump(&fabric.counters[dst].packets_received),
        // The vmbox answers at once (`Pending` is for an asynchronous interconnect).
        Delivery::Nack | Delivery::Pending | Delivery::Unreachable => {
            NodeCounters::bump(&fabric.counters[src].packets_nacked)
        }
    }
    if let Some(t) = &fabric.trace {
        let what = match delivery {
            Delivery::Ack => "packet",
            Delivery::Unreachable => "packet to an unreachable node",
            Delivery::Nack | Delivery::Pending => "packet nacked",
        };
        t.packet(src, dst, channel::PACKETIZER, packet.words.len(), what);
    }
    (delivery, reached)
}
