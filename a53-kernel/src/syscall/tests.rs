//! The calls against a kernel made of the host-tested parts: the process table on a test arena,
//! the mailbox service, a node's sockets, and a MIF and a clock the test sets. Every lock is a
//! `RefCell`: a call that took one twice would panic here (on the board, it would deadlock).

use super::*;
use crate::elf::Permissions;
use crate::mm::test_frames::Arena;
use crate::process::table::tests::{Node as TableNode, table};
use crate::process::table::{Launch, PdRequest};
use crate::socket::node::tests::{TWO_SLOTS, TestEngine, carry, node as socket_node};
use alloc::string::String;
use alloc::vec::Vec;
use core::cell::{Cell, RefCell};
use proto::rdma::queue::CqeStatus;
use proto::socket::{EVENT_COUNTER, NONBLOCKING, PollEntry, SocketStats, ready};

/// A MIF whose words the test sets; arming it lets `arrives_on_arm` words arrive.
#[derive(Default)]
struct TestMif {
    count: u32,
    armed: Option<u32>,
    arrives_on_arm: u32,
    disarms: u32,
}

impl MifWait for TestMif {
    fn depth(&mut self) -> u32 {
        8
    }
    fn count(&self) -> u32 {
        self.count
    }
    fn arm(&mut self, words: u32) {
        self.armed = Some(words);
        self.count += self.arrives_on_arm;
    }
    fn disarm(&mut self) {
        self.armed = None;
        self.disarms += 1;
    }
    fn disarm_if_armed(&mut self) {
        if self.armed.take().is_some() {
            self.disarms += 1;
        }
    }
}

/// Two nodes in the cluster; this is node 0.
struct TestKernel {
    spawner: TableNode,
    table: RefCell<TableOf<&'static Arena>>,
    mailbox: RefCell<MailboxService>,
    sockets: RefCell<Option<SocketNode<&'static Arena, TestEngine>>>,
    mif: RefCell<TestMif>,
    /// Bit n: node n is alive.
    alive: Cell<u64>,
    /// The counter, in ticks: one per microsecond.
    now: Cell<u64>,
    logged: RefCell<Vec<String>>,
    woken: RefCell<Vec<usize>>,
    cq_holds_entry: Cell<bool>,
    /// The jobs `end_job` was asked to end, with their status.
    ended_jobs: RefCell<Vec<(Pd, u8)>>,
    /// Active Access: the node's table and what it wrote to the engine.
    active: RefCell<crate::rdma::active::ActiveTable>,
    active_hw: RefCell<ActiveWrites>,
    /// The ASIDs whose TLB entries a take-back emptied.
    tlb_flushes: RefCell<Vec<u16>>,
}

/// The engine's Active Access pages, as the writes made to them.
#[derive(Debug, Default)]
struct ActiveWrites {
    logs: Vec<(usize, bool)>,
    apt: Vec<(usize, u64, u32)>,
    /// (log, NOTIFY) of each `ctrl` rewrite.
    ctrls: Vec<(usize, bool)>,
}

impl crate::rdma::active::ActiveHw for ActiveWrites {
    fn open_log(&mut self, log: usize, _: hal::pldma::active::LogCtrl, _: u64, _: u64) {
        self.logs.push((log, true));
    }
    fn close_log(&mut self, log: usize) {
        self.logs.push((log, false));
    }
    fn set_ctrl(&mut self, log: usize, ctrl: hal::pldma::active::LogCtrl) {
        self.ctrls.push((log, ctrl.notify));
    }
    fn write_apt(&mut self, index: usize, tag: u64, attr: u32) {
        self.apt.push((index, tag, attr));
    }
}

impl Kernel for TestKernel {
    type Frames = &'static Arena;
    type SocketEngine = TestEngine;
    type Mif = TestMif;

    fn table<R>(&self, f: impl FnOnce(&mut TableOf<&'static Arena>) -> R) -> R {
        f(&mut self.table.borrow_mut())
    }
    fn make_resident(
        &self,
        process: &mut ProcessOf<&'static Arena>,
        va: u64,
        len: usize,
        write: bool,
    ) -> Result<(), SpaceError> {
        process.space.make_resident(va, len, write).map(drop)
    }
    fn map(&self, slot: usize, len: u64, flags: u64, address: u64) -> Result<u64, Error> {
        self.table(|t| t.map(slot, len, flags, address))
    }
    fn unmap(&self, _slot: usize, _va: u64, _len: u64) -> Result<u64, Error> {
        Err(Error::BadArgument)
    }
    fn evict(&self, _slot: usize, _va: u64, _len: u64) -> Result<u64, Error> {
        Ok(3)
    }
    fn unmap_borrowed(&self, slot: usize, va: u64, pages: u64) -> Result<u64, Error> {
        let taken = self.table(|t| t.take_back(slot, None, |space| space.unmap_borrowed(va, pages)))?;
        self.tlb_flushes.borrow_mut().push(taken.asid);
        Ok(taken.pages as u64)
    }
    fn node_and_count(&self) -> (u16, u16) {
        (0, 2)
    }
    fn is_alive(&self, node: u64) -> bool {
        node < 64 && self.alive.get() & 1 << node != 0
    }
    fn uptime_us(&self) -> u64 {
        self.now.get()
    }
    fn now(&self) -> u64 {
        self.now.get()
    }
    fn deadline_in_us(&self, us: u64) -> u64 {
        self.now.get() + us
    }
    fn mailbox<R>(&self, f: impl FnOnce(&mut MailboxService) -> R) -> R {
        f(&mut self.mailbox.borrow_mut())
    }
    fn wake_mailbox_thread(&self, thread: u32) {
        self.woken.borrow_mut().push(thread as usize);
    }
    fn with_mif<R>(&self, _index: u8, f: impl FnOnce(&mut TestMif) -> R) -> Option<R> {
        Some(f(&mut self.mif.borrow_mut()))
    }
    fn arm_and_peek(&self, _pd: Pd) -> bool {
        self.cq_holds_entry.get()
    }
    fn sockets<R>(&self, f: impl FnOnce(&mut SocketNode<&'static Arena, TestEngine>) -> R) -> Option<R> {
        self.sockets.borrow_mut().as_mut().map(f)
    }
    fn after_sockets(&self, wakes: Wakes) {
        self.woken.borrow_mut().extend_from_slice(wakes.slots());
    }
    fn log(&self, name: &str, domain: u16, line: &str) {
        self.logged.borrow_mut().push(alloc::format!("[{name} {domain}] {line}"));
    }
    fn active<R>(
        &self,
        f: impl FnOnce(&mut crate::rdma::active::ActiveTable, &mut dyn crate::rdma::active::ActiveHw) -> R,
    ) -> Option<R> {
        let mut hw = self.active_hw.borrow_mut();
        Some(f(&mut self.active.borrow_mut(), &mut *hw))
    }
    fn end_job(&self, pd: Pd, status: u8) {
        // The table's lock must be free: the node's kernel ends the local members under it.
        drop(self.table.borrow_mut());
        self.ended_jobs.borrow_mut().push((pd, status));
    }
}

impl TestKernel {
    /// A kernel with one process in slot 0 (arguments `args`), with sockets if `sockets`.
    fn new(args: &[u8], sockets: bool) -> Self {
        let spawner = TableNode::new(false);
        let mut t = table();
        spawner.spawn(&mut t, &Launch { args, ..Launch::new("prog", None) }).unwrap();
        Self {
            spawner,
            table: RefCell::new(t),
            mailbox: RefCell::new(MailboxService::new(4, 4).unwrap()),
            sockets: RefCell::new(sockets.then(|| socket_node(0, TWO_SLOTS))),
            mif: RefCell::default(),
            alive: Cell::new(0b11),
            now: Cell::new(1_000),
            logged: RefCell::default(),
            woken: RefCell::default(),
            cq_holds_entry: Cell::new(false),
            ended_jobs: RefCell::default(),
            active: RefCell::default(),
            active_hw: RefCell::default(),
            tlb_flushes: RefCell::default(),
        }
    }

    /// A second process; its slot.
    fn spawn(&self) -> usize {
        self.spawner.spawn(&mut self.table.borrow_mut(), &Launch::new("prog", None)).unwrap().slot
    }

    /// A region of the process in `slot` holding `bytes` (read-only unless `writable`).
    fn buffer(&self, slot: usize, bytes: &[u8], writable: bool) -> u64 {
        let permissions = Permissions { read: true, write: writable, execute: false };
        self.table(|t| {
            let space = &mut t.slots[slot].as_mut().unwrap().space;
            let va = space.map_region(bytes.len().max(1) as u64, permissions, false).unwrap();
            space.make_resident(va, bytes.len(), false).unwrap();
            space.write(va, bytes).unwrap();
            va
        })
    }

    fn read(&self, slot: usize, va: u64, len: usize) -> Vec<u8> {
        let mut out = alloc::vec![0; len];
        self.table(|t| t.slots[slot].as_ref().unwrap().space.read(va, &mut out)).unwrap();
        out
    }

    /// Makes call `nr` with `args` from the process in `slot`; its event and frame.
    fn call_in(&self, slot: usize, frame: &mut ExceptionFrame, nr: u64, args: &[u64]) -> Event {
        frame.x[..args.len()].copy_from_slice(args);
        frame.x[8] = nr;
        handle(self, frame, slot)
    }

    /// A fresh call from slot 0: its event, x0 and the frame.
    fn call(&self, nr: u64, args: &[u64]) -> (Event, u64, ExceptionFrame) {
        let mut frame = fresh_frame();
        let event = self.call_in(0, &mut frame, nr, args);
        (event, frame.x[0], frame)
    }
}

const ELR: u64 = 0x40_0000;

fn fresh_frame() -> ExceptionFrame {
    ExceptionFrame { elr: ELR, ..ExceptionFrame::default() }
}

fn error(e: Error) -> u64 {
    e as i64 as u64
}

/// The call was answered with `x0` and will not run again.
fn answered(result: (Event, u64, ExceptionFrame), x0: u64) {
    let (event, value, frame) = result;
    assert_eq!((event, value, frame.elr), (Event::Continue, x0, ELR));
}

#[test]
fn an_unknown_call_is_refused_and_the_process_goes_on() {
    let k = TestKernel::new(b"", false);
    answered(k.call(999, &[]), error(Error::NoSuchCall));
    let (event, _, _) = k.call(nr::EXIT, &[42]);
    assert_eq!(event, Event::Exit(Exit::Status(42)));
}

#[test]
fn a_log_line_is_read_through_the_process_tables_and_bad_ones_are_refused() {
    let k = TestKernel::new(b"", false);
    let va = k.buffer(0, b"hello, node", false);
    answered(k.call(nr::LOG, &[va, 5]), 5);
    assert_eq!(k.logged.borrow().len(), 1);
    assert!(k.logged.borrow()[0].ends_with("] hello"), "{:?}", k.logged.borrow());
    answered(k.call(nr::LOG, &[va, LOG_MAX + 1]), error(Error::BadArgument));
    answered(k.call(nr::LOG, &[0x7000_0000, 4]), error(Error::BadPointer));
    answered(k.call(nr::LOG, &[va + 4090, 16]), error(Error::BadPointer));
    assert_eq!(k.logged.borrow().len(), 1, "a refused line prints nothing");
}

#[test]
fn args_are_copied_as_far_as_the_buffer_goes_and_their_whole_length_returned() {
    let k = TestKernel::new(b"one\0two\0", false);
    let va = k.buffer(0, &[0xff; 16], true);
    answered(k.call(nr::ARGS, &[va, 5]), 8);
    assert_eq!(k.read(0, va, 6), b"one\0t\xff");
    let read_only = k.buffer(0, &[0; 16], false);
    answered(k.call(nr::ARGS, &[read_only, 16]), error(Error::BadPointer));
    answered(k.call(nr::ARGS, &[0, 0]), 8);
}

#[test]
fn a_sleep_blocks_until_its_deadline_and_a_sleep_of_nothing_does_not() {
    let k = TestKernel::new(b"", false);
    let (event, x0, _) = k.call(nr::SLEEP_US, &[250]);
    assert_eq!((event, x0), (Event::Block { wait: Wait::Sleep, deadline: Some(1_250) }, 0));
    answered(k.call(nr::SLEEP_US, &[0]), 0);
}

#[test]
fn wait_mif_checks_its_arguments_and_arms_before_it_sleeps() {
    let k = TestKernel::new(b"", false);
    answered(k.call(nr::WAIT_MIF, &[0, 0, NO_NODE]), error(Error::BadArgument));
    answered(k.call(nr::WAIT_MIF, &[9, 0, NO_NODE]), error(Error::BadArgument));
    k.alive.set(0b01);
    answered(k.call(nr::WAIT_MIF, &[1, 0, 1]), error(Error::Unreachable));

    // Nothing there: armed for two words, and asleep until the deadline, kept in x5.
    let (event, _, mut frame) = k.call(nr::WAIT_MIF, &[2, 500, 0]);
    assert_eq!(event, Event::Block { wait: Wait::Mif { words: 2 }, deadline: Some(1_500) });
    assert_eq!((frame.elr, frame.x[5], k.mif.borrow().armed), (ELR - 4, 1_500, Some(2)));
    // Run again after a wake-up that was not for it: the same deadline, not a new one.
    k.now.set(1_200);
    frame.elr = ELR;
    let event = k.call_in(0, &mut frame, nr::WAIT_MIF, &[2, 500, 0]);
    assert_eq!(event, Event::Block { wait: Wait::Mif { words: 2 }, deadline: Some(1_500) });

    // The words came (the interrupt disarmed it): the call ends without touching the MIF.
    *k.mif.borrow_mut() = TestMif { count: 2, ..TestMif::default() };
    answered(k.call(nr::WAIT_MIF, &[2, 0, 0]), 0);
    assert_eq!(k.mif.borrow().disarms, 0);
    // A word that arrives between the first look and the arming: found, and the MIF disarmed.
    *k.mif.borrow_mut() = TestMif { count: 1, arrives_on_arm: 1, ..TestMif::default() };
    answered(k.call(nr::WAIT_MIF, &[2, 0, 0]), 0);
    assert_eq!((k.mif.borrow().armed, k.mif.borrow().disarms), (None, 1));
}

#[test]
fn the_mailbox_calls_take_user_opcodes_and_the_modes_the_abi_names() {
    let k = TestKernel::new(b"", false);
    let user = 9;
    answered(k.call(nr::MAILBOX_REGISTER, &[3, MODE_READ, 0]), error(Error::BadArgument));
    answered(k.call(nr::MAILBOX_REGISTER, &[user, 7, 0]), error(Error::BadArgument));
    answered(k.call(nr::MAILBOX_REGISTER, &[user, MODE_SIGNAL, SIGNALS_MAX]), error(Error::BadArgument));
    answered(k.call(nr::MAILBOX_REGISTER, &[user, MODE_READ, 1]), error(Error::BadArgument));
    answered(k.call(nr::MAILBOX_RECEIVE, &[user, RECV_NONBLOCKING]), error(Error::NotRegistered));
    answered(k.call(nr::MAILBOX_REGISTER, &[user, MODE_READ, 0]), 0);
    answered(k.call(nr::MAILBOX_REGISTER, &[user, MODE_READ, 0]), error(Error::Busy));

    answered(k.call(nr::MAILBOX_RECEIVE, &[3, 0]), error(Error::BadArgument));
    answered(k.call(nr::MAILBOX_RECEIVE, &[user, 0x80]), error(Error::BadArgument));
    answered(k.call(nr::MAILBOX_RECEIVE, &[user, RECV_NONBLOCKING]), error(Error::WouldBlock));
    let (event, _, frame) = k.call(nr::MAILBOX_RECEIVE, &[ANY_OPCODE, 0]);
    assert_eq!((event, frame.elr), (Event::Block { wait: Wait::Mailbox, deadline: None }, ELR - 4));
    // With a timeout the wait has a deadline, kept in x5 for the retried call.
    let (event, _, frame) = k.call(nr::MAILBOX_RECEIVE, &[ANY_OPCODE, 0, 250]);
    let Event::Block { wait: Wait::Mailbox, deadline: Some(d) } = event else { panic!("{event:?}") };
    assert_eq!((d, frame.x[5]), (k.deadline_in_us(250), d));

    // Unregistering lets the blocked thread (the slot) go, to find the opcode gone.
    answered(k.call(nr::MAILBOX_UNREGISTER, &[user]), 0);
    assert_eq!(*k.woken.borrow(), [0]);
    answered(k.call(nr::MAILBOX_UNREGISTER, &[user]), error(Error::NotRegistered));
    answered(k.call(nr::MAILBOX_EVENT, &[RECV_NONBLOCKING]), error(Error::NotRegistered));
    answered(k.call(nr::MAILBOX_EVENT, &[2]), error(Error::BadArgument));
}

#[test]
fn a_receive_with_a_signal_pending_ends_interrupted_and_leaves_no_waiter() {
    use crate::gsas::mailbox::{Delivery, Wakeup};
    use proto::gsas::Message;
    let k = TestKernel::new(b"", false);
    let (read_op, signal_op) = (9, 10);
    answered(k.call(nr::MAILBOX_REGISTER, &[read_op, MODE_READ, 0]), 0);
    answered(k.call(nr::MAILBOX_REGISTER, &[signal_op, MODE_SIGNAL, 5]), 0);
    k.table(|t| t.slots[0].as_mut().unwrap().signals = 1 << 3);
    answered(k.call(nr::MAILBOX_RECEIVE, &[read_op, 0]), error(Error::Interrupted));
    // The signal-mode delivery raises its signal: no waiter of the ended receive takes it.
    let domain = domain_of(&k, 0).unwrap();
    let channel = MailboxOpcode::new(signal_op as u8).unwrap().value() - MailboxOpcode::FIRST_USER;
    let notification = Message::User { channel, payload: 1 }.encode().unwrap();
    let from = proto::gsas::Pid::new(2, 9, 0, 3).unwrap();
    let delivered = k.mailbox(|m| m.deliver(from, notification));
    assert_eq!(delivered, Ok(Delivery::Queued { domain, wake: Wakeup::Signal(5) }));
    // Once the signal is read, a receive blocks as before.
    answered(k.call(nr::SIGNALS, &[]), 1 << 3);
    let (event, _, _) = k.call(nr::MAILBOX_RECEIVE, &[read_op, 0]);
    assert_eq!(event, Event::Block { wait: Wait::Mailbox, deadline: None });
}

#[test]
fn a_process_without_a_pd_has_no_rdma_calls() {
    let k = TestKernel::new(b"", false);
    answered(k.call(nr::RDMA_QUEUES, &[]), error(Error::NoPd));
    k.cq_holds_entry.set(true);
    answered(k.call(nr::RDMA_WAIT, &[0]), error(Error::NoPd));
}

#[test]
fn socket_calls_on_a_node_without_sockets_are_no_pd() {
    let k = TestKernel::new(b"", false);
    answered(k.call(nr::SOCKET_LISTEN, &[7]), error(Error::NoPd));
    answered(k.call(nr::SOCKET_CONNECT, &[1, 7, 0]), error(Error::NoPd));
    let va = k.buffer(0, &[0; 64], true);
    answered(k.call(nr::SOCKET_READ, &[1, va, 64, 0]), error(Error::NoPd));
    answered(k.call(nr::SOCKET_POLL, &[va, 1, 0]), error(Error::NoPd));
    answered(k.call(nr::SOCKET_STATS, &[va]), error(Error::NoPd));
}

#[test]
fn a_connect_checks_its_peer_and_gives_up_at_its_deadline() {
    let k = TestKernel::new(b"", true);
    answered(k.call(nr::SOCKET_CONNECT, &[2, 7, 0]), error(Error::BadArgument));
    answered(k.call(nr::SOCKET_CONNECT, &[1, 0x1_0000, 0]), error(Error::BadArgument));
    k.alive.set(0b01);
    answered(k.call(nr::SOCKET_CONNECT, &[1, 7, 0]), error(Error::Unreachable));
    k.alive.set(0b11);
    let (event, _, mut frame) = k.call(nr::SOCKET_CONNECT, &[1, 7, 300]);
    assert_eq!(event, Event::Block { wait: Wait::Connect, deadline: Some(1_300) });
    assert_ne!(frame.x[4], 0, "the handle is kept for the runs to come");
    k.now.set(1_300);
    frame.elr = ELR;
    let event = k.call_in(0, &mut frame, nr::SOCKET_CONNECT, &[1, 7, 300]);
    assert_eq!((event, frame.x[0]), (Event::Continue, error(Error::TimedOut)));
}

/// A connection within node 0 between slot 0 (which connected) and a second process (which
/// listened and accepted): the two handles and the second slot.
fn local_connection(k: &TestKernel) -> (u64, u64, usize) {
    let server = k.spawn();
    let mut frame = fresh_frame();
    k.call_in(server, &mut frame, nr::SOCKET_LISTEN, &[7]);
    let listener = frame.x[0];
    let (event, client, _) = k.call(nr::SOCKET_CONNECT, &[0, 7, 0]);
    assert_eq!(event, Event::Continue, "a connection within the node opens within the call");
    let mut frame = fresh_frame();
    k.call_in(server, &mut frame, nr::SOCKET_ACCEPT, &[listener, NONBLOCKING]);
    assert_eq!(frame.x[1], 0, "the peer is node 0");
    (client, frame.x[0], server)
}

#[test]
fn socket_bytes_cross_between_process_buffers_and_bad_buffers_lose_nothing() {
    let k = TestKernel::new(b"", true);
    let (client, server_end, server) = local_connection(&k);
    answered(k.call(nr::SOCKET_WRITE, &[client, 0x7000_0000, 5, 0]), error(Error::BadPointer));
    answered(k.call(nr::SOCKET_WRITE, &[client, 0, 0, 0]), error(Error::BadArgument));
    answered(k.call(nr::SOCKET_WRITE, &[client, 0, 5, 3]), error(Error::BadArgument));
    let data = k.buffer(0, b"hello", false);
    answered(k.call(nr::SOCKET_WRITE, &[client, data, 5, 0]), 5);
    {
        let mut sockets = k.sockets.borrow_mut();
        let node = sockets.as_mut().unwrap();
        assert_eq!(carry(node, None, CqeStatus::Ok).len(), 1, "one RDMA write to the node itself");
        k.after_sockets(node.completions());
    }

    let into = |writable| {
        let mut frame = fresh_frame();
        let buffer = k.buffer(server, &[0; 8], writable);
        k.call_in(server, &mut frame, nr::SOCKET_READ, &[server_end, buffer, 8, NONBLOCKING]);
        (frame.x[0], buffer)
    };
    assert_eq!(into(false).0, error(Error::BadPointer));
    let (read, buffer) = into(true);
    assert_eq!(read, 5, "the bytes a bad buffer could not take stayed for a good one");
    assert_eq!(k.read(server, buffer, 5), b"hello");
    assert_eq!(into(true).0, error(Error::WouldBlock));
}

#[test]
fn poll_checks_its_entries_reports_readiness_and_keeps_its_deadline() {
    let k = TestKernel::new(b"", true);
    let (client, _, _) = local_connection(&k);
    answered(k.call(nr::SOCKET_POLL, &[0, 0, 0]), error(Error::BadArgument));
    answered(k.call(nr::SOCKET_POLL, &[0, proto::socket::POLL_MAX as u64 + 1, 0]), error(Error::BadArgument));
    answered(k.call(nr::SOCKET_POLL, &[0x7000_0000, 1, 0]), error(Error::BadPointer));

    let entry = |interest| PollEntry { handle: client as u32, interest, ready: 0 }.to_bytes();
    let readable = k.buffer(0, &entry(ready::READABLE), true);
    let (event, _, mut frame) = k.call(nr::SOCKET_POLL, &[readable, 1, 400]);
    assert_eq!(event, Event::Block { wait: Wait::Socket, deadline: Some(1_400) });
    frame.elr = ELR;
    k.now.set(1_100);
    let event = k.call_in(0, &mut frame, nr::SOCKET_POLL, &[readable, 1, 400]);
    assert_eq!(event, Event::Block { wait: Wait::Socket, deadline: Some(1_400) }, "the first run's deadline");

    let writable = k.buffer(0, &entry(ready::WRITABLE), true);
    answered(k.call(nr::SOCKET_POLL, &[writable, 1, 400]), 1);
    let bytes = k.read(0, writable, PollEntry::BYTES);
    let polled = PollEntry::from_bytes(bytes.as_slice().try_into().unwrap());
    assert_eq!(polled.ready, ready::WRITABLE);
}

#[test]
fn a_poll_that_asks_only_for_its_bits_sleeps_through_a_hang_up() {
    let k = TestKernel::new(b"", true);
    let (client, server_end, server) = local_connection(&k);
    let mut frame = fresh_frame();
    k.call_in(server, &mut frame, nr::SOCKET_SHUTDOWN, &[server_end, proto::socket::shutdown::READ]);
    let entry = |interest| k.buffer(0, &PollEntry { handle: client as u32, interest, ready: 0 }.to_bytes(), true);
    let always = entry(ready::READABLE);
    answered(k.call(nr::SOCKET_POLL, &[always, 1, 400]), 1);
    let polled = PollEntry::from_bytes(k.read(0, always, PollEntry::BYTES).try_into().unwrap());
    assert_eq!(polled.ready, ready::HANGUP, "the peer stopped reading");
    let asked = entry(ready::READABLE | ready::ASKED_ONLY);
    let (event, _, _) = k.call(nr::SOCKET_POLL, &[asked, 1, 400]);
    assert_eq!(event, Event::Block { wait: Wait::Socket, deadline: Some(1_400) }, "nothing it asked for holds");
    answered(k.call(nr::SOCKET_POLL, &[entry(ready::WRITABLE | ready::ASKED_ONLY), 1, 400]), 1);
}

#[test]
fn poll_watches_the_event_counter_beside_the_sockets() {
    let k = TestKernel::new(b"", true);
    let (client, _, _) = local_connection(&k);
    let entries = |interest| {
        let mut bytes = PollEntry { handle: EVENT_COUNTER, interest, ready: 0 }.to_bytes().to_vec();
        bytes.extend(PollEntry { handle: client as u32, interest: ready::READABLE, ready: 0 }.to_bytes());
        k.buffer(0, &bytes, true)
    };
    let polled = |va| {
        let bytes = k.read(0, va, 2 * PollEntry::BYTES);
        [0, 1].map(|i| PollEntry::from_bytes(bytes[i * 8..][..8].try_into().unwrap()).ready)
    };
    let without = entries(ready::READABLE);
    answered(k.call(nr::SOCKET_POLL, &[without, 2, 400]), 1);
    assert_eq!(polled(without), [ready::INVALID, 0], "no event opcode: nothing could ever make it readable");

    let user = 9;
    answered(k.call(nr::MAILBOX_REGISTER, &[user, MODE_EVENT, 0]), 0);
    let va = entries(ready::READABLE);
    let (event, _, _) = k.call(nr::SOCKET_POLL, &[va, 2, 400]);
    assert_eq!(event, Event::Block { wait: Wait::Socket, deadline: Some(1_400) }, "the counter is 0");
    let from = proto::gsas::Pid::new(1, 9, 0, 3).unwrap();
    let message = proto::gsas::Notification::new(MailboxOpcode::new(user as u8).unwrap(), 5).unwrap();
    k.mailbox(|m| m.deliver(from, message)).unwrap();
    answered(k.call(nr::SOCKET_POLL, &[va, 2, 400]), 1);
    assert_eq!(polled(va), [ready::READABLE, 0]);
    answered(k.call(nr::SOCKET_POLL, &[entries(0), 2, 0]), 0);
}

#[test]
fn socket_stats_go_to_a_writable_buffer_only() {
    let k = TestKernel::new(b"", true);
    let (client, _, _) = local_connection(&k);
    let data = k.buffer(0, b"abc", false);
    answered(k.call(nr::SOCKET_WRITE, &[client, data, 3, 0]), 3);
    let words = SocketStats::WORDS;
    let read_only = k.buffer(0, &alloc::vec![0; words * 8], false);
    answered(k.call(nr::SOCKET_STATS, &[read_only]), error(Error::BadPointer));
    let out = k.buffer(0, &alloc::vec![0; words * 8], true);
    answered(k.call(nr::SOCKET_STATS, &[out]), 0);
    let stats = k.read(0, out, words * 8);
    assert!(stats.iter().any(|&b| b != 0), "the connection and its three bytes are counted");
}

#[test]
fn map_fixed_places_a_region_at_the_address_and_refuses_what_the_abi_refuses() {
    use proto::syscall::layout::{REGIONS_END, SYMMETRIC_HEAP, SYMMETRIC_HEAP_MAX};
    use proto::syscall::{MAP_DEVICE, MAP_FIXED, MAP_WRITABLE};
    let k = TestKernel::new(b"", false);
    let rw_fixed = MAP_FIXED | MAP_WRITABLE;
    answered(k.call(nr::MAP, &[SYMMETRIC_HEAP_MAX, rw_fixed, SYMMETRIC_HEAP]), SYMMETRIC_HEAP);
    let refused: [(u64, u64, u64); 6] = [
        (4096, rw_fixed, SYMMETRIC_HEAP + SYMMETRIC_HEAP_MAX - 4096),
        (4096, rw_fixed, SYMMETRIC_HEAP + SYMMETRIC_HEAP_MAX + 8),
        (8192, rw_fixed, REGIONS_END - 4096),
        (0, rw_fixed, REGIONS_END - 8192),
        (4096, MAP_FIXED | MAP_DEVICE, SYMMETRIC_HEAP - 8192),
        (4096, 8 | MAP_FIXED, SYMMETRIC_HEAP - 8192),
    ];
    for [len, flags, at] in refused.map(|(l, f, a)| [l, f, a]) {
        answered(k.call(nr::MAP, &[len, flags, at]), error(Error::BadArgument));
    }
    let placed = k.call(nr::MAP, &[4096, MAP_WRITABLE, 0]).1;
    assert!(!(SYMMETRIC_HEAP..SYMMETRIC_HEAP + SYMMETRIC_HEAP_MAX).contains(&placed));
    // The heap is a region: a call writes into it through its pages, resident on demand.
    let mut frame = fresh_frame();
    assert_eq!(k.call_in(0, &mut frame, nr::PROGRAM_NAME, &[SYMMETRIC_HEAP + 4096, 64]), Event::Continue);
    assert_eq!((frame.x[0], k.read(0, SYMMETRIC_HEAP + 4096, 4)), (4, b"prog".to_vec()));
}

#[test]
fn program_name_copies_what_fits_and_returns_the_whole_length() {
    let k = TestKernel::new(b"", false);
    let va = k.buffer(0, &[0xff; 8], true);
    answered(k.call(nr::PROGRAM_NAME, &[va, 2]), 4);
    assert_eq!(k.read(0, va, 3), b"pr\xff");
    answered(k.call(nr::PROGRAM_NAME, &[va, 8]), 4);
    assert_eq!(k.read(0, va, 5), b"prog\xff", "no terminating zero");
    answered(k.call(nr::PROGRAM_NAME, &[0, 0]), 4);
    let read_only = k.buffer(0, &[0; 8], false);
    answered(k.call(nr::PROGRAM_NAME, &[read_only, 8]), error(Error::BadPointer));
    answered(k.call(nr::PROGRAM_NAME, &[0x7000_0000, 8]), error(Error::BadPointer));
    answered(k.call(nr::PROGRAM_NAME, &[va + 4094, 8]), error(Error::BadPointer));
    assert_eq!(k.read(0, read_only, 8), [0; 8], "a refused copy writes nothing");
}

#[test]
fn job_exit_ends_the_callers_job_everywhere_and_a_process_of_no_job_alone() {
    let k = TestKernel::new(b"", false);
    answered(k.call(nr::JOB_EXIT, &[256]), error(Error::BadArgument));
    answered(k.call(nr::JOB_EXIT, &[u64::MAX]), error(Error::BadArgument));
    assert!(k.ended_jobs.borrow().is_empty(), "a refused call ends nothing");
    let pd = k.table(|t| t.slots[0].as_ref().unwrap().pd);
    assert_ne!(pd, proto::rdma::domain::NO_RDMA);
    let (event, _, _) = k.call(nr::JOB_EXIT, &[7]);
    assert_eq!(event, Event::Exit(Exit::Status(7)));
    assert_eq!(*k.ended_jobs.borrow(), [(pd, 7)]);

    let launch = Launch { pd: PdRequest::Inherit(proto::rdma::domain::NO_RDMA), ..Launch::new("prog", None) };
    let lone = k.spawner.spawn(&mut k.table.borrow_mut(), &launch).unwrap().slot;
    let mut frame = fresh_frame();
    assert_eq!(k.call_in(lone, &mut frame, nr::JOB_EXIT, &[255]), Event::Exit(Exit::Status(255)));
    assert_eq!(k.ended_jobs.borrow().len(), 1, "PD 15 is shared by unrelated jobs: nobody else ends");
}

impl TestKernel {
    /// A kernel whose node has RDMA: the process in slot 0 holds its PD.
    fn with_rdma() -> Self {
        let spawner = TableNode::new(true);
        let mut t = table();
        spawner.spawn(&mut t, &Launch::new("prog", None)).unwrap();
        // The set-up worked (as `lifecycle` records it once the bank is attached).
        t.slots[0].as_mut().unwrap().rdma.started(true, false);
        Self { spawner, table: RefCell::new(t), ..Self::new(b"", false) }
    }

    /// A further holder (a new job); its slot.
    fn spawn_holder(&self) -> usize {
        let slot = self.spawn();
        self.table(|t| t.slots[slot].as_mut().unwrap().rdma.started(true, false));
        slot
    }
}

#[test]
fn active_calls_need_rdma_and_mark_only_the_caller_s_regions_for_its_own_iuid() {
    use proto::syscall::active;
    use proto::syscall::layout::{ACTIVE_LOG_RING, REGIONS_END, STACK_TOP, active_log};
    let plain = TestKernel::new(b"", false);
    answered(plain.call(nr::ACTIVE_OPEN, &[]), error(Error::NoPd));
    answered(plain.call(nr::ACTIVE_ASSOC, &[0, 0x10_0000_0000, active::WL]), error(Error::NoPd));

    let k = TestKernel::with_rdma();
    let pd = k.table(|t| t.slots[0].as_ref().unwrap().rdma_pd()).expect("slot 0 holds its PD");
    let (event, iuid, frame) = k.call(nr::ACTIVE_OPEN, &[]);
    assert_eq!((event, iuid), (Event::Continue, 0));
    assert_eq!((frame.x[1], frame.x[2]), (active_log(0), active_log(0) + ACTIVE_LOG_RING));
    assert_eq!(k.active_hw.borrow().logs, [(0, true)]);

    let region = k.buffer(0, &[0; 64], true);
    let put_log = active::W | active::WL | active::E;
    answered(k.call(nr::ACTIVE_ASSOC, &[0, region, put_log]), 0);
    let (index, tag, attr) = k.active_hw.borrow().apt[0];
    assert_eq!(tag, hal::pldma::active::apt_tag(pd, region));
    assert_eq!(index / hal::pldma::active::APT_WAYS, hal::pldma::active::apt_set(region));
    assert_eq!(u64::from(attr), put_log, "IUID 0");
    // The image and the stack are the caller's plain memory too (the engine reaches them).
    answered(k.call(nr::ACTIVE_ASSOC, &[0, ELR, put_log]), 0);
    answered(k.call(nr::ACTIVE_ASSOC, &[0, STACK_TOP - 8, put_log]), 0);
    answered(k.call(nr::ACTIVE_ASSOC, &[0, ELR, 0]), 0);
    answered(k.call(nr::ACTIVE_ASSOC, &[0, STACK_TOP - 8, 0]), 0);
    let marks = k.active_hw.borrow().apt.len();
    // Not the caller's plain memory (the log itself, a device region, nothing mapped), an unknown
    // bit, a forged IUID: refused.
    let device = k.table(|t| {
        let rw = Permissions { read: true, write: true, execute: false };
        t.slots[0].as_mut().unwrap().space.map_region(4096, rw, true).unwrap()
    });
    for va in [active_log(0), device, REGIONS_END - 0x1000] {
        answered(k.call(nr::ACTIVE_ASSOC, &[0, va, put_log]), error(Error::BadArgument));
    }
    answered(k.call(nr::ACTIVE_ASSOC, &[0, region, 1 << 7]), error(Error::BadArgument));
    answered(k.call(nr::ACTIVE_ASSOC, &[7, region, put_log]), error(Error::BadArgument));
    answered(k.call(nr::ACTIVE_ASSOC, &[u64::MAX, region, put_log]), error(Error::BadArgument));
    // Another job's holder takes IUID 1; the first process cannot use it, nor it IUID 0.
    let other = k.spawn_holder();
    assert!(k.table(|t| t.slots[other].as_ref().unwrap().rdma_pd()).is_some());
    let mut frame = fresh_frame();
    k.call_in(other, &mut frame, nr::ACTIVE_OPEN, &[]);
    assert_eq!(frame.x[0], 1);
    answered(k.call(nr::ACTIVE_ASSOC, &[1, region, put_log]), error(Error::BadArgument));
    let theirs = k.buffer(other, &[0; 64], true);
    let mut frame = fresh_frame();
    k.call_in(other, &mut frame, nr::ACTIVE_ASSOC, &[0, theirs, put_log]);
    assert_eq!(frame.x[0], error(Error::BadArgument));
    assert_eq!(k.active_hw.borrow().apt.len(), marks, "nothing refused reached the engine");
}

#[test]
fn a_log_notifies_only_on_an_opcode_its_owner_receives() {
    use proto::syscall::{MODE_READ, MODE_SIGNAL};
    let plain = TestKernel::new(b"", false);
    answered(plain.call(nr::ACTIVE_NOTIFY, &[0, 8]), error(Error::NoPd));
    let k = TestKernel::with_rdma();
    answered(k.call(nr::ACTIVE_OPEN, &[]), 0);
    answered(k.call(nr::ACTIVE_NOTIFY, &[0, 9]), error(Error::NotRegistered));
    // Another process holds opcode 10: not the caller's to be told on.
    let other = k.spawn_holder();
    let mut frame = fresh_frame();
    k.call_in(other, &mut frame, nr::MAILBOX_REGISTER, &[10, MODE_READ, 0]);
    assert_eq!(frame.x[0], 0);
    answered(k.call(nr::ACTIVE_NOTIFY, &[0, 10]), error(Error::NotRegistered));
    // A kernel opcode, an opcode past 15, an IUID not the caller's: refused.
    answered(k.call(nr::MAILBOX_REGISTER, &[9, MODE_SIGNAL, 3]), 0);
    for (iuid, opcode) in [(0, 2), (0, 16), (1, 9), (u64::MAX, 9)] {
        answered(k.call(nr::ACTIVE_NOTIFY, &[iuid, opcode]), error(Error::BadArgument));
    }
    assert!(k.active_hw.borrow().ctrls.is_empty(), "nothing refused reached the engine");
    answered(k.call(nr::ACTIVE_NOTIFY, &[0, 9]), 0);
    answered(k.call(nr::ACTIVE_NOTIFY, &[0, 0]), 0);
    assert_eq!(k.active_hw.borrow().ctrls, [(0, true), (0, false)], "NOTIFY set, then cleared");
    let op = proto::gsas::MailboxOpcode::user(1).unwrap();
    answered(k.call(nr::ACTIVE_NOTIFY, &[0, 9]), 0);
    let notices: Vec<_> = k.active.borrow().notices(1).collect();
    assert_eq!(notices, [crate::rdma::active::LogNotice { slot: 0, iuid: 0, opcode: op }]);
}

#[test]
fn a_log_closed_is_unmapped_unmarked_and_its_iuid_free_again() {
    use proto::syscall::active;
    use proto::syscall::layout::{ACTIVE_LOG_RING, active_log};
    let plain = TestKernel::new(b"", false);
    answered(plain.call(nr::ACTIVE_CLOSE, &[0]), error(Error::NoPd));
    let k = TestKernel::with_rdma();
    answered(k.call(nr::ACTIVE_OPEN, &[]), 0);
    answered(k.call(nr::ACTIVE_OPEN, &[]), 1);
    let mapped = |slot: usize, va: u64| k.table(|t| t.slots[slot].as_ref().unwrap().space.translate(va).is_some());
    assert!(mapped(0, active_log(0)) && mapped(0, active_log(0) + ACTIVE_LOG_RING), "ring and header");
    let region = k.buffer(0, &[0; 8192], true);
    answered(k.call(nr::ACTIVE_ASSOC, &[0, region, active::W | active::WL | active::E]), 0);
    answered(k.call(nr::ACTIVE_ASSOC, &[1, region + 0x1000, active::FLUSH]), 0);
    // Another holder's IUID 2; IUIDs not open, or none at all: refused, nothing changed.
    let other = k.spawn_holder();
    let mut frame = fresh_frame();
    k.call_in(other, &mut frame, nr::ACTIVE_OPEN, &[]);
    assert_eq!(frame.x[0], 2);
    let (apt, logs) = (k.active_hw.borrow().apt.len(), k.active_hw.borrow().logs.len());
    for iuid in [2, 3, 16, u64::MAX] {
        answered(k.call(nr::ACTIVE_CLOSE, &[iuid]), error(Error::BadArgument));
    }
    let mut frame = fresh_frame();
    k.call_in(other, &mut frame, nr::ACTIVE_CLOSE, &[0]);
    assert_eq!(frame.x[0], error(Error::BadArgument), "the other process cannot close the first's");
    assert_eq!((k.active_hw.borrow().apt.len(), k.active_hw.borrow().logs.len()), (apt, logs));
    assert!(k.tlb_flushes.borrow().is_empty() && mapped(0, active_log(0)));

    answered(k.call(nr::ACTIVE_CLOSE, &[0]), 0);
    // Unmapped (a later access faults: nothing translates there), the TLBs emptied, its page
    // unmarked and its log invalid; IUID 1 and its page kept.
    assert!(!mapped(0, active_log(0)) && !mapped(0, active_log(0) + ACTIVE_LOG_RING));
    assert!(mapped(0, active_log(1)) && mapped(other, active_log(2)));
    let asid = k.table(|t| t.slots[0].as_ref().unwrap().space.asid());
    assert_eq!(*k.tlb_flushes.borrow(), [asid]);
    let hw = k.active_hw.borrow();
    assert_eq!((&hw.apt[apt..], &hw.logs[logs..]), (&[(hw.apt[0].0, 0, 0)][..], &[(0, false)][..]));
    drop(hw);
    answered(k.call(nr::ACTIVE_CLOSE, &[0]), error(Error::BadArgument));
    answered(k.call(nr::ACTIVE_ASSOC, &[0, region, active::W | active::WL | active::E]), error(Error::BadArgument));
    // The IUID is free: the other process takes it, mapped in its own space only.
    let mut frame = fresh_frame();
    k.call_in(other, &mut frame, nr::ACTIVE_OPEN, &[]);
    assert_eq!((frame.x[0], frame.x[1]), (0, active_log(0)));
    assert!(mapped(other, active_log(0)) && !mapped(0, active_log(0)));
}
