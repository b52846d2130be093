//! A fake network for the socket layer's host tests: this node's listeners and connections in
//! memory, with the kernel's answers (`a53-kernel/src/socket`: a bounded ring per direction,
//! the end of the stream, a peer that stopped reading, a broken connection), the event counter
//! and the calls' timeouts. It cannot wait: a blocking call that would is a test's mistake and
//! panics; a poll that finds nothing returns as if its timeout had passed.

use std::collections::{BTreeMap, VecDeque};
use std::vec::Vec;

use proto::socket::{EVENT_COUNTER, PollEntry, ready};
use unimem_user::socket::Shutdown;
use unimem_user::{Error, SysError};

use super::net::Net;

/// Addresses below this are not the process's: the kernel refuses them (`BadPointer`).
pub const UNMAPPED_BELOW: usize = 0x1000;

/// One end of a connection.
#[derive(Debug, Default)]
struct End {
    /// The other end's handle.
    peer: u64,
    /// Bytes that arrived and were not read.
    inbox: VecDeque<u8>,
    /// The peer shut its writing: the stream ends after `inbox`.
    peer_fin: bool,
    /// This end still reads (no read shutdown).
    reading: bool,
    /// This end still writes (no write shutdown).
    writing: bool,
    /// The peer still reads: writes fail once it stops.
    peer_reading: bool,
    /// Reset, or the peer's node gone.
    broken: bool,
}

/// The fake.
pub struct FakeNet {
    pub me: u16,
    pub nodes: u16,
    /// Bytes one direction holds before a writer must wait.
    pub ring: usize,
    /// Nodes whose sockets are gone (`Unreachable`).
    pub unreachable: Vec<u16>,
    /// The event counter; `None` without an event opcode.
    pub events: Option<u64>,
    /// The timeout of every poll that found nothing ready.
    pub timeouts: Vec<u64>,
    /// Every sleep.
    pub slept: Vec<u64>,
    /// The length of every write call.
    pub writes: Vec<usize>,
    listeners: BTreeMap<u64, (u16, VecDeque<u64>)>,
    ends: BTreeMap<u64, End>,
    next: u64,
}

impl FakeNet {
    /// Node 0 of 2, with rings of `ring` bytes.
    pub fn new(ring: usize) -> Self {
        Self {
            me: 0,
            nodes: 2,
            ring,
            unreachable: Vec::new(),
            events: None,
            timeouts: Vec::new(),
            slept: Vec::new(),
            writes: Vec::new(),
            listeners: BTreeMap::new(),
            ends: BTreeMap::new(),
            next: 1,
        }
    }

    fn handle(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    fn end(&mut self, handle: u64) -> Result<&mut End, Error> {
        self.ends.get_mut(&handle).ok_or(Error::Syscall(SysError::BadArgument))
    }

    /// Breaks the connection of `handle` (as a lost node or a failed RDMA write does).
    pub fn break_connection(&mut self, handle: u64) {
        let peer = self.ends[&handle].peer;
        for h in [handle, peer] {
            if let Some(e) = self.ends.get_mut(&h) {
                e.broken = true;
            }
        }
    }

    /// How many connections are open (both ends count).
    pub fn connections(&self) -> usize {
        self.ends.len()
    }

    fn readiness(&self, handle: u32) -> u16 {
        if handle == EVENT_COUNTER {
            return match self.events {
                None => ready::INVALID,
                Some(0) => 0,
                Some(_) => ready::READABLE,
            };
        }
        if let Some((_, backlog)) = self.listeners.get(&u64::from(handle)) {
            return if backlog.is_empty() { 0 } else { ready::READABLE };
        }
        let Some(e) = self.ends.get(&u64::from(handle)) else { return ready::INVALID };
        let room = self.ends.get(&e.peer).is_some_and(|p| p.inbox.len() < self.ring);
        let mut r = 0;
        if !e.inbox.is_empty() || e.peer_fin || e.broken || !e.reading {
            r |= ready::READABLE;
        }
        if room || e.broken || !e.writing || !e.peer_reading {
            r |= ready::WRITABLE;
        }
        if e.broken || e.peer_fin || !e.peer_reading {
            r |= ready::HANGUP;
        }
        if e.broken {
            r |= ready::ERROR;
        }
        if e.peer_fin {
            r |= ready::ENDED;
        }
        r
    }
}

/// The address is not the process's.
fn bad(at: usize) -> bool {
    at < UNMAPPED_BELOW
}

impl Net for FakeNet {
    fn node_info(&mut self) -> Result<(u16, u16), Error> {
        Ok((self.me, self.nodes))
    }

    fn listen(&mut self, port: u16) -> Result<u64, Error> {
        if self.listeners.values().any(|(p, _)| *p == port) {
            return Err(Error::Syscall(SysError::AddressInUse));
        }
        let handle = self.handle();
        self.listeners.insert(handle, (port, VecDeque::new()));
        Ok(handle)
    }

    fn accept(&mut self, listener: u64, nonblocking: bool) -> Result<(u64, u16), Error> {
        let (_, backlog) = self.listeners.get_mut(&listener).ok_or(Error::Syscall(SysError::BadArgument))?;
        match backlog.pop_front() {
            Some(handle) => Ok((handle, self.me)),
            None if nonblocking => Err(Error::Syscall(SysError::WouldBlock)),
            None => panic!("a blocking accept with nobody connecting would wait for ever"),
        }
    }

    fn connect(&mut self, node: u16, port: u16, _timeout_us: u64) -> Result<u64, Error> {
        if self.unreachable.contains(&node) {
            return Err(Error::Syscall(SysError::Unreachable));
        }
        let listener = self.listeners.iter().find(|(_, (p, _))| *p == port).map(|(h, _)| *h);
        let Some(listener) = listener.filter(|_| node == self.me) else {
            return Err(Error::Syscall(SysError::ConnectionRefused));
        };
        let (client, server) = (self.handle(), self.handle());
        let open = |peer| End { peer, reading: true, writing: true, peer_reading: true, ..End::default() };
        self.ends.insert(client, open(server));
        self.ends.insert(server, open(client));
        self.listeners.get_mut(&listener).expect("found above").1.push_back(server);
        Ok(client)
    }

    unsafe fn read(&mut self, connection: u64, buf: *mut u8, len: usize, nonblocking: bool) -> Result<usize, Error> {
        let e = self.end(connection)?;
        if !e.reading {
            return Err(Error::Syscall(SysError::Closed));
        }
        if !e.inbox.is_empty() {
            if bad(buf as usize) {
                return Err(Error::Syscall(SysError::BadPointer));
            }
            let n = len.min(e.inbox.len());
            for (i, b) in e.inbox.drain(..n).enumerate() {
                // SAFETY: `buf` is `len` writable bytes (the caller's contract), `i` < `n` <= `len`.
                unsafe { buf.add(i).write(b) };
            }
            return Ok(n);
        }
        match () {
            () if e.broken => Err(Error::Syscall(SysError::ConnectionReset)),
            () if e.peer_fin => Ok(0),
            () if nonblocking => Err(Error::Syscall(SysError::WouldBlock)),
            () => panic!("a blocking read of an empty connection would wait for ever"),
        }
    }

    fn write(&mut self, connection: u64, buf: *const u8, len: usize, nonblocking: bool) -> Result<usize, Error> {
        self.writes.push(len);
        let ring = self.ring;
        let e = self.end(connection)?;
        if e.broken || !e.peer_reading {
            return Err(Error::Syscall(SysError::ConnectionReset));
        }
        if !e.writing {
            return Err(Error::Syscall(SysError::Closed));
        }
        let peer = e.peer;
        let inbox = &mut self.end(peer)?.inbox;
        let n = len.min(ring - inbox.len());
        if n == 0 {
            assert!(nonblocking, "a blocking write into a full ring would wait for ever");
            return Err(Error::Syscall(SysError::WouldBlock));
        }
        if bad(buf as usize) {
            return Err(Error::Syscall(SysError::BadPointer));
        }
        // SAFETY: the socket layer hands on the caller's `len` readable bytes.
        inbox.extend(unsafe { core::slice::from_raw_parts(buf, n) });
        Ok(n)
    }

    fn shutdown(&mut self, connection: u64, how: Shutdown) -> Result<(), Error> {
        let e = self.end(connection)?;
        let peer = e.peer;
        let (write, read) = (how != Shutdown::Read, how != Shutdown::Write);
        if write {
            e.writing = false;
        }
        if read {
            e.reading = false;
            e.inbox.clear();
        }
        if let Some(p) = self.ends.get_mut(&peer) {
            p.peer_fin |= write;
            p.peer_reading &= !read;
        }
        Ok(())
    }

    fn close(&mut self, handle: u64) {
        if let Some((_, backlog)) = self.listeners.remove(&handle) {
            for waiting in backlog {
                self.close(waiting);
            }
            return;
        }
        if self.shutdown(handle, Shutdown::Both).is_ok() {
            self.ends.remove(&handle);
        }
    }

    fn poll(&mut self, entries: &mut [PollEntry], timeout_us: u64) -> Result<usize, Error> {
        for e in entries.iter_mut() {
            let always = match e.interest & ready::ASKED_ONLY {
                0 => ready::HANGUP | ready::INVALID | ready::ERROR | ready::ENDED,
                _ => ready::INVALID | ready::ERROR,
            };
            e.ready = self.readiness(e.handle) & (e.interest | always);
        }
        let ready = entries.iter().filter(|e| e.ready != 0).count();
        if ready == 0 {
            self.timeouts.push(timeout_us);
        }
        Ok(ready)
    }

    fn events(&mut self, blocking: bool) -> Result<u64, Error> {
        match self.events {
            None => Err(Error::Syscall(SysError::NotRegistered)),
            Some(0) if !blocking => Err(Error::Syscall(SysError::WouldBlock)),
            Some(0) => panic!("a blocking read of an empty event counter would wait for ever"),
            Some(n) => Ok(n),
        }
    }

    fn sleep_us(&mut self, us: u64) -> Result<(), Error> {
        self.slept.push(us);
        Ok(())
    }
}
