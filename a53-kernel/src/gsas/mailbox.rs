//! The mailbox notification service (seed §3.2; `docs/hw/gsas-packets.md` "Notifications").
//!
//! Plain data: the kernel feeds it notifications (from Notify requests, see `service`), runs the
//! kernel handlers and wakes the threads it names, and calls `receive` for processes.
//!
//! - One receiver per opcode (seed §3.2: drivers and applications "register free opcodes"): a
//!   kernel handler (seed §3.2.1, runs in interrupt context: here the caller runs it) or a process
//!   with a wake mode (seed §3.2.2 `'r'`, `'s'`, `'e'`).
//! - A process's notifications wait in per-opcode bounded queues. `receive` returns the oldest
//!   one over the process's opcodes (seed §3.2.2: "the older one is read first"), or
//!   `WouldBlock` (non-blocking, seed's -EAGAIN) or `Blocked` (the caller parks the thread and
//!   calls again after the wake-up).
//! - Full queue (choice; the seed does not say): the new notification is refused, the queue is
//!   unchanged, and the sender's Notify request is answered `QueueFull`.

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use proto::gsas::{MAILBOX_OPCODES, MailboxOpcode, Notification, Pid};

/// Identifies a kernel callback; the kernel maps it to the function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KernelHandler(pub u16);

/// How a process learns that a notification arrived (seed §3.2.2 actions `'r'`, `'s'`, `'e'`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WakeMode {
    /// Only blocked `receive` calls are woken.
    Read,
    /// Also raise this signal in the process.
    Signal(u8),
    /// Also bump the process's event counter (eventfd: its value is the number of messages).
    Event,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Receiver {
    Kernel(KernelHandler),
    Process { domain: u16, wake: WakeMode },
}

/// Who asks to unregister.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Registrant {
    Kernel,
    Process(u16),
}

impl Receiver {
    fn registrant(&self) -> Registrant {
        match *self {
            Receiver::Kernel(_) => Registrant::Kernel,
            Receiver::Process { domain, .. } => Registrant::Process(domain),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MailboxError {
    /// Processes may register the user opcodes 0x8..=0xF only.
    KernelOpcode,
    AlreadyRegistered,
    NotRegistered,
    NotOwner,
    /// Too many threads blocked in `receive`.
    TooManyWaiters,
    InvalidConfig,
}

/// Why a notification was not delivered; the Notify request's error code says the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeliverError {
    NoReceiver,
    QueueFull,
    /// A kernel opcode (0x1..=0x7) from a non-kernel domain.
    Forbidden,
}

/// What the kernel must do after a delivery.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// Call the handler with the notification.
    Kernel { handler: KernelHandler, notification: Notification, from: Pid },
    /// Queued for `domain`; `wake` says whom to wake.
    Queued { domain: u16, wake: Wakeup },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wakeup {
    /// Nobody waits and the mode is `Read`.
    None,
    /// This thread was blocked in `receive`: make it runnable.
    Thread(u32),
    Signal(u8),
    /// eventfd: `pending` notifications now wait.
    Event {
        pending: usize,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecvMode {
    Blocking,
    NonBlocking,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Received {
    Message {
        notification: Notification,
        from: Pid,
    },
    /// Non-blocking and nothing queued.
    WouldBlock,
    /// Blocking and nothing queued: the thread now waits; `deliver` will name it.
    Blocked,
}

/// What `unregister` dropped and whom it woke (their `receive` then fails with `NotRegistered`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unregistered {
    pub dropped: usize,
    pub woken: Vec<u32>,
}

#[derive(Clone, Copy, Debug)]
struct Queued {
    seq: u64,
    notification: Notification,
    from: Pid,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Waiter {
    domain: u16,
    thread: u32,
    filter: Option<MailboxOpcode>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MailboxStats {
    pub delivered: u64,
    pub refused_full: u64,
    pub refused_no_receiver: u64,
    pub refused_forbidden: u64,
}

#[derive(Debug)]
pub struct MailboxService {
    receivers: [Option<Receiver>; MAILBOX_OPCODES],
    queues: [VecDeque<Queued>; MAILBOX_OPCODES],
    queue_capacity: usize,
    waiters: Vec<Waiter>,
    max_waiters: usize,
    seq: u64,
    stats: MailboxStats,
}

impl MailboxService {
    pub fn new(queue_capacity: usize, max_waiters: usize) -> Result<Self, MailboxError> {
        if queue_capacity == 0 || max_waiters == 0 {
            return Err(MailboxError::InvalidConfig);
        }
        Ok(Self {
            receivers: [None; MAILBOX_OPCODES],
            queues: core::array::from_fn(|_| VecDeque::with_capacity(queue_capacity)),
            queue_capacity,
            waiters: Vec::with_capacity(max_waiters),
            max_waiters,
            seq: 0,
            stats: MailboxStats::default(),
        })
    }

    pub fn stats(&self) -> MailboxStats {
        self.stats
    }

    pub fn receiver(&self, opcode: MailboxOpcode) -> Option<Receiver> {
        self.receivers[opcode.index()]
    }

    pub fn register(&mut self, opcode: MailboxOpcode, receiver: Receiver) -> Result<(), MailboxError> {
        if matches!(receiver, Receiver::Process { .. }) && !opcode.is_user() {
            return Err(MailboxError::KernelOpcode);
        }
        let slot = &mut self.receivers[opcode.index()];
        if slot.is_some() {
            return Err(MailboxError::AlreadyRegistered);
        }
        *slot = Some(receiver);
        Ok(())
    }

    /// Unregisters; queued notifications of the opcode are dropped and threads blocked on
    /// exactly this opcode are woken.
    pub fn unregister(&mut self, opcode: MailboxOpcode, who: Registrant) -> Result<Unregistered, MailboxError> {
        let receiver = self.receivers[opcode.index()].ok_or(MailboxError::NotRegistered)?;
        if receiver.registrant() != who {
            return Err(MailboxError::NotOwner);
        }
        self.receivers[opcode.index()] = None;
        let dropped = self.queues[opcode.index()].len();
        self.queues[opcode.index()].clear();
        let mut woken = Vec::new();
        if let Registrant::Process(domain) = who {
            // Threads waiting on any opcode stay blocked if the domain still has another one.
            let still_registered = self.opcodes_of(domain, None).next().is_some();
            self.waiters.retain(|w| {
                let orphaned = w.domain == domain && (w.filter == Some(opcode) || !still_registered);
                if orphaned {
                    woken.push(w.thread);
                }
                !orphaned
            });
        }
        Ok(Unregistered { dropped, woken })
    }

    /// Process exit: every registration, queue and waiter of `domain` goes.
    pub fn release_domain(&mut self, domain: u16) -> usize {
        let mut dropped = 0;
        for op in 1..MAILBOX_OPCODES {
            if self.receivers[op].is_some_and(|r| r.registrant() == Registrant::Process(domain)) {
                self.receivers[op] = None;
                dropped += self.queues[op].len();
                self.queues[op].clear();
            }
        }
        self.waiters.retain(|w| w.domain != domain);
        dropped
    }

    /// Opcodes registered by process `domain` that match `filter`.
    fn opcodes_of(&self, domain: u16, filter: Option<MailboxOpcode>) -> impl Iterator<Item = usize> + '_ {
        (1..MAILBOX_OPCODES).filter(move |&op| {
            filter.is_none_or(|f| f.index() == op)
                && matches!(self.receivers[op], Some(Receiver::Process { domain: d, .. }) if d == domain)
        })
    }

    /// Notifications waiting for `domain` (filtered): the eventfd value of seed §3.2.2.
    pub fn pending(&self, domain: u16, filter: Option<MailboxOpcode>) -> usize {
        self.opcodes_of(domain, filter).map(|op| self.queues[op].len()).sum()
    }

    /// The event counter of `domain` (seed §3.2.2 `'e'`, an eventfd): the notifications waiting
    /// on its `Event` opcodes; `None` when it registered none in that mode.
    pub fn event_count(&self, domain: u16) -> Option<usize> {
        let event = |&op: &usize| matches!(self.receivers[op], Some(Receiver::Process { wake: WakeMode::Event, .. }));
        let mut opcodes = self.opcodes_of(domain, None).filter(event).peekable();
        opcodes.peek()?;
        Some(opcodes.map(|op| self.queues[op].len()).sum())
    }

    pub fn deliver(&mut self, from: Pid, notification: Notification) -> Result<Delivery, DeliverError> {
        let result = self.route(from, notification);
        match result {
            Ok(_) => self.stats.delivered += 1,
            Err(DeliverError::QueueFull) => self.stats.refused_full += 1,
            Err(DeliverError::NoReceiver) => self.stats.refused_no_receiver += 1,
            Err(DeliverError::Forbidden) => self.stats.refused_forbidden += 1,
        }
        result
    }

    /// [`deliver`](Self::deliver), but only if the opcode's receiver is process `domain`
    /// (`NoReceiver` otherwise): for the kernel's own notices to one process, which must not
    /// reach whoever else holds the opcode.
    pub fn deliver_to(&mut self, domain: u16, from: Pid, notification: Notification) -> Result<Delivery, DeliverError> {
        match self.receivers[notification.opcode().index()] {
            Some(Receiver::Process { domain: d, .. }) if d == domain => self.deliver(from, notification),
            _ => {
                self.stats.refused_no_receiver += 1;
                Err(DeliverError::NoReceiver)
            }
        }
    }

    fn route(&mut self, from: Pid, notification: Notification) -> Result<Delivery, DeliverError> {
        let op = notification.opcode();
        if !op.is_user() && !from.owner().is_kernel() {
            return Err(DeliverError::Forbidden);
        }
        let (domain, wake) = match self.receivers[op.index()].ok_or(DeliverError::NoReceiver)? {
            Receiver::Kernel(handler) => return Ok(Delivery::Kernel { handler, notification, from }),
            Receiver::Process { domain, wake } => (domain, wake),
        };
        let queue = &mut self.queues[op.index()];
        if queue.len() >= self.queue_capacity {
            return Err(DeliverError::QueueFull);
        }
        self.seq += 1;
        queue.push_back(Queued { seq: self.seq, notification, from });
        let waiter = self.waiters.iter().position(|w| w.domain == domain && w.filter.is_none_or(|f| f == op));
        let wake = match (waiter, wake) {
            (Some(i), _) => Wakeup::Thread(self.waiters.remove(i).thread),
            (None, WakeMode::Read) => Wakeup::None,
            (None, WakeMode::Signal(s)) => Wakeup::Signal(s),
            (None, WakeMode::Event) => Wakeup::Event { pending: self.event_count(domain).unwrap_or(0) },
        };
        Ok(Delivery::Queued { domain, wake })
    }

    /// Thread `thread` of `domain` no longer waits in `receive` (its wait ran out or a signal
    /// ended it): a delivery must not count it as woken.
    pub fn cancel_wait(&mut self, domain: u16, thread: u32) {
        self.waiters.retain(|w| w.thread != thread || w.domain != domain);
    }

    /// The oldest notification for `domain` among its opcodes (or only `filter`).
    pub fn receive(
        &mut self,
        domain: u16,
        thread: u32,
        filter: Option<MailboxOpcode>,
        mode: RecvMode,
    ) -> Result<Received, MailboxError> {
        let oldest = self
            .opcodes_of(domain, filter)
            .filter_map(|op| self.queues[op].front().map(|q| (q.seq, op)))
            .min()
            .map(|(_, op)| op);
        if let Some(q) = oldest.and_then(|op| self.queues[op].pop_front()) {
            return Ok(Received::Message { notification: q.notification, from: q.from });
        }
        if self.opcodes_of(domain, filter).next().is_none() {
            return Err(MailboxError::NotRegistered);
        }
        match mode {
            RecvMode::NonBlocking => Ok(Received::WouldBlock),
            RecvMode::Blocking => {
                self.waiters.retain(|w| w.thread != thread || w.domain != domain);
                if self.waiters.len() >= self.max_waiters {
                    return Err(MailboxError::TooManyWaiters);
                }
                self.waiters.push(Waiter { domain, thread, filter });
                Ok(Received::Blocked)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::gsas::Message;

    const KERNEL: u16 = 0;
    const APP: u16 = 4;

    fn user(channel: u8, payload: u64) -> Notification {
        Message::User { channel, payload }.encode().unwrap()
    }

    fn from_app() -> Pid {
        Pid::new(2, 9, 0, 3).unwrap()
    }

    fn from_kernel() -> Pid {
        Pid::new(2, KERNEL, 0, 5).unwrap()
    }

    fn service() -> MailboxService {
        MailboxService::new(2, 4).unwrap()
    }

    #[test]
    fn registration_rules() {
        let mut m = service();
        let ping = MailboxOpcode::PING;
        let u0 = MailboxOpcode::user(0).unwrap();
        assert_eq!(
            m.register(ping, Receiver::Process { domain: APP, wake: WakeMode::Read }),
            Err(MailboxError::KernelOpcode)
        );
        m.register(ping, Receiver::Kernel(KernelHandler(1))).unwrap();
        assert_eq!(m.register(ping, Receiver::Kernel(KernelHandler(2))), Err(MailboxError::AlreadyRegistered));
        m.register(u0, Receiver::Process { domain: APP, wake: WakeMode::Read }).unwrap();
        assert_eq!(m.unregister(u0, Registrant::Process(APP + 1)), Err(MailboxError::NotOwner));
        assert_eq!(m.unregister(u0, Registrant::Kernel), Err(MailboxError::NotOwner));
        assert_eq!(m.unregister(u0, Registrant::Process(APP)), Ok(Unregistered { dropped: 0, woken: Vec::new() }));
        assert_eq!(m.unregister(u0, Registrant::Process(APP)), Err(MailboxError::NotRegistered));
        assert!(matches!(MailboxService::new(0, 1), Err(MailboxError::InvalidConfig)));
    }

    #[test]
    fn kernel_handler_and_permissions() {
        let mut m = service();
        let ping = Message::Ping { nonce: 7 }.encode().unwrap();
        assert_eq!(m.deliver(from_kernel(), ping), Err(DeliverError::NoReceiver));
        m.register(MailboxOpcode::PING, Receiver::Kernel(KernelHandler(3))).unwrap();
        assert_eq!(m.deliver(from_app(), ping), Err(DeliverError::Forbidden));
        assert_eq!(
            m.deliver(from_kernel(), ping),
            Ok(Delivery::Kernel { handler: KernelHandler(3), notification: ping, from: from_kernel() })
        );
        assert_eq!(
            m.stats(),
            MailboxStats { delivered: 1, refused_full: 0, refused_no_receiver: 1, refused_forbidden: 1 }
        );
    }

    #[test]
    fn a_notice_to_one_process_reaches_it_or_nobody() {
        let mut m = service();
        let u3 = MailboxOpcode::user(3).unwrap();
        let notice = user(3, 5);
        assert_eq!(m.deliver_to(APP, from_kernel(), notice), Err(DeliverError::NoReceiver), "nobody holds it");
        m.register(u3, Receiver::Process { domain: APP + 1, wake: WakeMode::Read }).unwrap();
        assert_eq!(m.deliver_to(APP, from_kernel(), notice), Err(DeliverError::NoReceiver), "another process's");
        assert_eq!(m.pending(APP + 1, None), 0, "which gets nothing");
        m.unregister(u3, Registrant::Process(APP + 1)).unwrap();
        m.register(u3, Receiver::Process { domain: APP, wake: WakeMode::Signal(4) }).unwrap();
        assert_eq!(
            m.deliver_to(APP, from_kernel(), notice),
            Ok(Delivery::Queued { domain: APP, wake: Wakeup::Signal(4) }),
            "its own: delivered in its mode"
        );
        assert_eq!(m.stats().refused_no_receiver, 2);
    }

    #[test]
    fn a_wait_given_up_does_not_swallow_the_next_wake_up() {
        let mut m = service();
        let u2 = MailboxOpcode::user(2).unwrap();
        m.register(u2, Receiver::Process { domain: APP, wake: WakeMode::Signal(6) }).unwrap();
        assert_eq!(m.receive(APP, 1, Some(u2), RecvMode::Blocking), Ok(Received::Blocked));
        // The receive timed out: the delivery raises the signal instead of waking the thread.
        m.cancel_wait(APP, 1);
        assert_eq!(m.deliver(from_app(), user(2, 1)), Ok(Delivery::Queued { domain: APP, wake: Wakeup::Signal(6) }));
    }

    #[test]
    fn queue_order_full_and_nonblocking() {
        let mut m = service();
        let (u0, u1) = (MailboxOpcode::user(0).unwrap(), MailboxOpcode::user(1).unwrap());
        m.register(u0, Receiver::Process { domain: APP, wake: WakeMode::Read }).unwrap();
        m.register(u1, Receiver::Process { domain: APP, wake: WakeMode::Event }).unwrap();
        assert_eq!(
            m.deliver(from_app(), user(1, 10)),
            Ok(Delivery::Queued { domain: APP, wake: Wakeup::Event { pending: 1 } })
        );
        assert_eq!(m.deliver(from_app(), user(0, 11)), Ok(Delivery::Queued { domain: APP, wake: Wakeup::None }));
        m.deliver(from_app(), user(0, 12)).unwrap();
        assert_eq!(m.deliver(from_app(), user(0, 13)), Err(DeliverError::QueueFull));
        assert_eq!(m.pending(APP, None), 3);
        assert_eq!(m.pending(APP, Some(u0)), 2);
        let got: Vec<u64> = (0..3)
            .map(|_| match m.receive(APP, 1, None, RecvMode::NonBlocking).unwrap() {
                Received::Message { notification, .. } => notification.payload(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(got, [10, 11, 12], "oldest first across opcodes; the refused one is not there");
        assert_eq!(m.receive(APP, 1, None, RecvMode::NonBlocking), Ok(Received::WouldBlock));
        assert_eq!(m.receive(APP + 1, 1, None, RecvMode::NonBlocking), Err(MailboxError::NotRegistered));
    }

    #[test]
    fn the_event_counter_counts_only_event_opcodes_and_receive_consumes_them() {
        let mut m = service();
        let (u0, u1, u2) =
            (MailboxOpcode::user(0).unwrap(), MailboxOpcode::user(1).unwrap(), MailboxOpcode::user(2).unwrap());
        assert_eq!(m.event_count(APP), None);
        m.register(u0, Receiver::Process { domain: APP, wake: WakeMode::Event }).unwrap();
        m.register(u1, Receiver::Process { domain: APP, wake: WakeMode::Event }).unwrap();
        m.register(u2, Receiver::Process { domain: APP, wake: WakeMode::Read }).unwrap();
        assert_eq!(m.event_count(APP), Some(0));
        m.deliver(from_app(), user(2, 1)).unwrap();
        assert_eq!(m.event_count(APP), Some(0), "a read-mode opcode does not count");
        assert_eq!(
            m.deliver(from_app(), user(0, 2)),
            Ok(Delivery::Queued { domain: APP, wake: Wakeup::Event { pending: 1 } })
        );
        assert_eq!(
            m.deliver(from_app(), user(1, 3)),
            Ok(Delivery::Queued { domain: APP, wake: Wakeup::Event { pending: 2 } })
        );
        assert_eq!(m.event_count(APP + 1), None);
        assert!(matches!(m.receive(APP, 1, Some(u0), RecvMode::NonBlocking), Ok(Received::Message { .. })));
        assert_eq!(m.event_count(APP), Some(1), "receiving takes the message off the counter");
    }

    #[test]
    fn blocking_receive_is_woken_by_delivery() {
        let mut m = service();
        let u2 = MailboxOpcode::user(2).unwrap();
        let u3 = MailboxOpcode::user(3).unwrap();
        m.register(u2, Receiver::Process { domain: APP, wake: WakeMode::Signal(10) }).unwrap();
        m.register(u3, Receiver::Process { domain: APP, wake: WakeMode::Read }).unwrap();
        assert_eq!(m.receive(APP, 77, Some(u3), RecvMode::Blocking), Ok(Received::Blocked));
        assert_eq!(m.deliver(from_app(), user(2, 1)), Ok(Delivery::Queued { domain: APP, wake: Wakeup::Signal(10) }));
        assert_eq!(m.deliver(from_app(), user(3, 2)), Ok(Delivery::Queued { domain: APP, wake: Wakeup::Thread(77) }));
        assert_eq!(
            m.receive(APP, 77, Some(u3), RecvMode::Blocking),
            Ok(Received::Message { notification: user(3, 2), from: from_app() })
        );
        for t in 0..4 {
            assert_eq!(m.receive(APP, 100 + t, Some(u3), RecvMode::Blocking), Ok(Received::Blocked));
        }
        assert_eq!(m.receive(APP, 200, Some(u3), RecvMode::Blocking), Err(MailboxError::TooManyWaiters));
        let un = m.unregister(u3, Registrant::Process(APP)).unwrap();
        assert_eq!(un.woken, [100, 101, 102, 103]);
        assert_eq!(m.release_domain(APP), 1, "the queued u2 notification");
        assert_eq!(m.receiver(u2), None);
    }
}
