//! The node's GSAS glue as decisions (`docs/hw/gsas-packets.md`): where a reply goes and what a
//! NACK does to it ([`Outbox`]), what a mailbox delivery asks of the kernel ([`run_deliveries`]),
//! which kernel callback receives an opcode ([`Handlers`]), the kernel's own notifications to
//! other nodes ([`client`]), the service's local memory ([`memory`]), ping nonces, and the launch
//! a remote spawn asks for. Plain state over
//! small traits (a packet interface, a mailbox interface's reading half, the processes), so the
//! host tests supply fakes; `gsas_node` keeps them behind its locks over the packetizer, the
//! vmbox and the process table.

pub mod client;
pub mod job_exit;
pub mod memory;
#[cfg(test)]
mod tests;

use crate::gsas::mailbox::{Delivery, KernelHandler, MailboxError, MailboxService, Receiver, Registrant, Wakeup};
use crate::gsas::service::{Replies, SpawnError, SpawnRequest};
use crate::process::table::{self, Launch, PdRequest, Reap};
use alloc::collections::VecDeque;
use board::pl;
use core::num::NonZeroU64;
use core::sync::atomic::{AtomicU64, Ordering};
use hal::packetizer::driver::{Pif, SendStatus};
use hal::packetizer::{Destination, base_dest, base_window};
use hal::vmbox::driver::MifReader;
use proto::gsas::{MAILBOX_OPCODES, MailboxOpcode, Message, Notification, Pid};

/// A packetizer interface that sends: PIF 0 for the service's replies, the kernel's own PIF for
/// its notifications.
pub trait PacketSender {
    /// Sends one packet to `destination` and returns the destination's answer.
    fn send(&mut self, payload: [u128; 2], destination: u64) -> SendStatus;
}

impl PacketSender for Pif {
    fn send(&mut self, payload: [u128; 2], destination: u64) -> SendStatus {
        Pif::send(self, payload, destination)
    }
}

/// The reading half of a mailbox interface.
pub trait PacketSource {
    /// Dequeues a whole packet, if one is there.
    fn read_packet(&mut self) -> Option<[u128; 2]>;
}

impl PacketSource for MifReader {
    fn read_packet(&mut self) -> Option<[u128; 2]> {
        MifReader::read_packet(self)
    }
}

/// The packetizer's BASE_DEST: every node's vmbox sits at this node's vmbox window
/// (`docs/hw/packetizer.md`).
pub fn base_dest_value() -> u64 {
    base_dest(base_window(pl::VMBOX_BASE))
}

/// The destination of mailbox interface `index` of `node`; `None` for a node out of range.
pub fn destination(node: u16, index: u8) -> Option<u64> {
    Destination::mailbox(node, base_window(base_dest_value()), index).ok().map(|d| d.encode())
}

/// Requests the service reads while replies wait in its outbox, at most: beyond, it sends
/// before it reads, and the requests wait in MIF 0 (NACKed to their senders once it is full).
pub const OUTBOX_DEPTH: usize = 64;

/// Replies not yet accepted by their destination (NACK: its FIFO was full), in order, each with
/// the index of its next packet. A reply's packets go out in order, and a NACK stops the whole
/// outbox: the next flush resumes with the same packet.
pub struct Outbox<'c> {
    queue: VecDeque<(Replies, usize)>,
    /// Replies dropped: no route to their requester, or the packetizer could not send them.
    dropped: &'c AtomicU64,
    /// Sends the destination refused (NACK), each retried later.
    nacks: &'c AtomicU64,
}

impl<'c> Outbox<'c> {
    pub fn new(dropped: &'c AtomicU64, nacks: &'c AtomicU64) -> Self {
        Self { queue: VecDeque::new(), dropped, nacks }
    }

    /// Queues `replies` behind those still waiting.
    pub fn push(&mut self, replies: Replies) {
        self.queue.push_back((replies, 0));
    }

    /// Whether the service should send before it reads another request ([`OUTBOX_DEPTH`]).
    pub fn is_full(&self) -> bool {
        self.queue.len() >= OUTBOX_DEPTH
    }

    pub fn len(&self) -> usize {
        self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Sends what can be sent now through `pif`; returns whether everything went.
    pub fn flush(&mut self, pif: &mut impl PacketSender) -> bool {
        while let Some((replies, next)) = self.queue.front_mut() {
            let to = replies.to();
            let Some(dest) = destination(to.node(), to.interface()) else {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                self.queue.pop_front();
                continue;
            };
            while *next < replies.len() {
                let Some(packet) = replies.packet(*next) else { break };
                match pif.send(packet.pif_payload(), dest) {
                    SendStatus::Ack => *next += 1,
                    SendStatus::Nack => {
                        self.nacks.fetch_add(1, Ordering::Relaxed);
                        return false;
                    }
                    _ => {
                        // Not sendable (the requester's node is gone, say): drop this reply.
                        self.dropped.fetch_add(1, Ordering::Relaxed);
                        *next = replies.len();
                    }
                }
            }
            self.queue.pop_front();
        }
        true
    }
}

/// What mailbox deliveries act on: the kernel's receivers and the processes.
pub trait Recipients {
    /// Runs the kernel receiver `handler` (registered through [`Handlers`]).
    fn run_handler(&mut self, handler: KernelHandler, notification: Notification, from: Pid);
    /// The table slot of the live process of `domain`.
    fn slot_of_domain(&mut self, domain: u16) -> Option<usize>;
    /// Wakes the process in `slot` if it waits for a notification (`Wait::Mailbox`: blocked in
    /// `MAILBOX_RECEIVE`, or on its event counter), or in a socket poll, which may watch the
    /// event counter (`Wait::Socket`).
    fn wake_mailbox_waiter(&mut self, slot: usize);
    /// Raises `signal` in the process of `domain`, ending a wait it is in
    /// (`process::table::TableOf::raise_signal`).
    fn raise_signal(&mut self, domain: u16, signal: u8);
}

/// What a delivery asks of the kernel (`docs/hw/gsas-packets.md`, "Notifications"): run the
/// opcode's kernel receiver, wake the thread blocked in `MAILBOX_RECEIVE` (its thread id is its
/// slot), raise a signal, or wake a process waiting on its event counter. Called once the
/// mailbox's lock is gone: a receiver may deliver again.
pub fn run_deliveries(deliveries: &[Delivery], to: &mut impl Recipients) {
    for &d in deliveries {
        match d {
            Delivery::Kernel { handler, notification, from } => to.run_handler(handler, notification, from),
            Delivery::Queued { wake: Wakeup::Thread(thread), .. } => to.wake_mailbox_waiter(thread as usize),
            Delivery::Queued { domain, wake: Wakeup::Signal(signal) } => to.raise_signal(domain, signal),
            Delivery::Queued { domain, wake: Wakeup::Event { .. } } => {
                if let Some(slot) = to.slot_of_domain(domain) {
                    to.wake_mailbox_waiter(slot);
                }
            }
            Delivery::Queued { wake: Wakeup::None, .. } => {}
        }
    }
}

/// A kernel receiver (seed §3.2.1): the notification and its sender.
pub type Handler = fn(Notification, Pid);

/// The callback of each kernel-registered opcode, indexed by opcode as [`KernelHandler`] is.
pub struct Handlers([Option<Handler>; MAILBOX_OPCODES]);

impl Handlers {
    pub const fn new() -> Self {
        Self([None; MAILBOX_OPCODES])
    }

    /// Makes `handler` the receiver of `opcode` in `mailbox`: refused while `opcode` has a kernel
    /// receiver already, or whatever receiver the mailbox has.
    pub fn register(
        &mut self,
        mailbox: &mut MailboxService,
        opcode: MailboxOpcode,
        handler: Handler,
    ) -> Result<(), MailboxError> {
        if self.0[opcode.index()].is_some() {
            return Err(MailboxError::AlreadyRegistered);
        }
        mailbox.register(opcode, Receiver::Kernel(KernelHandler(opcode.index() as u16)))?;
        self.0[opcode.index()] = Some(handler);
        Ok(())
    }

    /// Gives `opcode` up (its notifications are refused `NoReceiver` again).
    pub fn unregister(&mut self, mailbox: &mut MailboxService, opcode: MailboxOpcode) -> Result<(), MailboxError> {
        mailbox.unregister(opcode, Registrant::Kernel)?;
        self.0[opcode.index()] = None;
        Ok(())
    }

    /// The callback `handler` names, if it is still registered.
    pub fn get(&self, handler: KernelHandler) -> Option<Handler> {
        self.0.get(usize::from(handler.0)).copied().flatten()
    }
}

impl Default for Handlers {
    fn default() -> Self {
        Self::new()
    }
}

/// The nonce of this node's `count`th ping: the node in bits 40 and up, so that two nodes'
/// pings never share one, cut to the 60 bits a `Ping` carries.
pub fn ping_nonce(node: u16, count: u64) -> u64 {
    ((u64::from(node) << 40) | count) & ((1 << 60) - 1)
}

/// The answer to a `Ping` from another kernel: a `Pong` with its nonce (`None` for any other
/// notification).
pub fn pong_for(ping: Notification) -> Option<Notification> {
    match Message::decode(ping) {
        Ok(Message::Ping { nonce }) => Message::Pong { nonce }.encode().ok(),
        _ => None,
    }
}

/// The nonce a `Pong` carries back.
pub fn pong_nonce(pong: Notification) -> Option<u64> {
    match Message::decode(pong) {
        Ok(Message::Pong { nonce }) => Some(nonce),
        _ => None,
    }
}

/// The launch a spawn request asks for: a remote spawn keeps the parent's PD (its job), read
/// from the parent's PID, which the packetizer stamped, so the parent cannot name another PD; a
/// spawn the kernel asked for (domain 0) starts a new job. Nobody waits for the child.
pub fn launch_for<'a>(request: &SpawnRequest<'a>) -> Launch<'a> {
    let pd = match request.parent.domain() {
        proto::gsas::KERNEL_DOMAIN => PdRequest::Any,
        domain => PdRequest::Inherit(proto::rdma::domain::pd_of_domain(domain)),
    };
    Launch { reap: Reap::Auto, pd, ..Launch::new(request.image, Some(request.argument)) }
}

/// The service's answer to a launch's outcome (the child's handle, or why there is none).
pub fn spawned(launched: Result<table::Handle, table::SpawnError>) -> Result<NonZeroU64, SpawnError> {
    match launched {
        Ok(handle) => NonZeroU64::new(handle).ok_or(SpawnError::NoResources),
        Err(table::SpawnError::UnknownImage) => Err(SpawnError::UnknownImage),
        Err(_) => Err(SpawnError::NoResources),
    }
}
