//! Sockets over RDMA, the kernel's logic (`docs/hw/sockets.md`): connections, listeners and
//! the doorbell protocol between kernels, as a state machine that says what to do (post an RDMA
//! write, send a doorbell, wake a process) and never does it. Plain logic, host-tested;
//! `socket_node` applies it to the rings, the PLDMA queues and the mailbox.
//!
//! Positions count stream bytes modulo 2^32. On the sending side, in decreasing order:
//! `written` (copied into the send ring by the process), `posted` (handed to the PLDMA),
//! `delivered` (completed and announced with a Data doorbell), `credit` (read by the peer, from
//! its Credit doorbells). On the receiving side: `arrived` (from Data doorbells), `consumed`
//! (read by the process), `announced` (sent back as Credit). The sender may have at most a
//! ring's worth unread (`written - credit` is at most `RING_BYTES`), so it never overwrites what
//! the peer has not read.

pub mod node;
#[cfg(test)]
mod tests;

use alloc::vec::Vec;
use proto::socket::{
    BACKLOG, ConnId, Doorbell, Handle, MAX_CONNECTIONS, MAX_LISTENERS, RING_BYTES, Refusal, SocketStats, ready,
    receive_ring, ring_offset, send_ring, shutdown,
};
use proto::syscall::Error;

/// A process that holds sockets: its table slot (whom to wake) and its domain number (which no
/// later process on this node has, so a handle never outlives its process).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Owner {
    pub slot: usize,
    pub domain: u16,
}

/// What the caller must do, in order, once it has let go of the sockets' lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Send `doorbell` to node `node`'s kernel.
    Notify { node: u16, doorbell: Doorbell },
    /// Post an RDMA write of `len` bytes from `local` (this node's socket space) to `remote`
    /// (node `node`'s socket space); its completion comes back with `tag`.
    Write { node: u16, local: u64, remote: u64, len: u32, tag: u64 },
    /// Wake the process in table slot `slot` if it waits on its sockets.
    Wake(usize),
}

/// Counters of what the protocol refused (`docs/hw/sockets.md`, "Bad doorbells").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Doorbells for no connection of this node (a stale generation, a stranger's node).
    pub strays: u64,
    /// Doorbells that break the protocol (a position beyond the ring); the connection is reset.
    pub violations: u64,
    /// Connects refused.
    pub refused: u64,
    /// Transfers that failed; the connection is reset.
    pub failed_writes: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Free,
    /// Our Connect is out; no Accept or Refuse yet.
    Connecting,
    /// The peer refused.
    Refused(Refusal),
    Open,
}

#[derive(Clone, Copy, Debug)]
struct Conn {
    generation: u16,
    phase: Phase,
    /// `None` once given up (closed, or its process ended), or while in a backlog.
    owner: Option<Owner>,
    /// The listener whose backlog holds it, until accepted.
    listener: Option<u8>,
    peer_node: u16,
    peer: ConnId,
    written: u32,
    posted: u32,
    delivered: u32,
    credit: u32,
    flight: Flight,
    write_shut: bool,
    fin_sent: bool,
    arrived: u32,
    consumed: u32,
    announced: u32,
    peer_fin: Option<u32>,
    reading: bool,
    stop_sent: bool,
    peer_reading: bool,
    /// Visible to the process: reads and writes fail with `ConnectionReset`.
    reset: bool,
    /// The peer's node is gone: nothing more can come from it.
    peer_gone: bool,
}

impl Conn {
    const FREE: Self = Self {
        generation: 0,
        phase: Phase::Free,
        owner: None,
        listener: None,
        peer_node: 0,
        peer: ConnId { index: 0, generation: 0 },
        written: 0,
        posted: 0,
        delivered: 0,
        credit: 0,
        flight: Flight::EMPTY,
        write_shut: false,
        fin_sent: false,
        arrived: 0,
        consumed: 0,
        announced: 0,
        peer_fin: None,
        reading: true,
        stop_sent: false,
        peer_reading: true,
        reset: false,
        peer_gone: false,
    };

    fn unread(&self) -> u32 {
        self.arrived.wrapping_sub(self.consumed)
    }

    fn room(&self) -> u32 {
        RING_BYTES - self.written.wrapping_sub(self.credit)
    }

    fn at_end(&self) -> bool {
        self.peer_fin == Some(self.arrived) && self.unread() == 0
    }

    fn readiness(&self) -> u16 {
        let broken = self.reset || self.peer_gone;
        let mut r = 0;
        if self.phase != Phase::Connecting && (self.unread() > 0 || self.at_end() || broken || !self.reading) {
            r |= ready::READABLE;
        }
        let write_fails = broken || self.write_shut || !self.peer_reading;
        if self.phase == Phase::Open && (self.room() > 0 || write_fails) {
            r |= ready::WRITABLE;
        }
        if broken || self.peer_fin.is_some() || !self.peer_reading || matches!(self.phase, Phase::Refused(_)) {
            r |= ready::HANGUP;
        }
        if broken {
            // Told apart from a peer that closed: a BSD layer reports it as POLLERR, SO_ERROR
            // and ECONNRESET rather than the end of the stream or EPIPE.
            r |= ready::ERROR;
        }
        if self.peer_fin.is_some() {
            // Told apart from a peer that only stopped reading: a BSD layer's POLLRDHUP and
            // POLLHUP mean the peer's stream ended.
            r |= ready::ENDED;
        }
        r
    }
}

/// Bytes of one RDMA write at most: a quarter ring, so that the reader hears of data (and
/// credits it) while the rest is still on its way.
pub const WRITE_MAX: u32 = RING_BYTES / 4;
/// RDMA writes in flight per connection at most: together, the whole ring.
pub const FLIGHT_MAX: usize = (RING_BYTES / WRITE_MAX) as usize;
/// RDMA writes in flight per node at most: the socket PD's work queue holds no more.
pub const WRITES_MAX: usize = proto::rdma::queue::WQ_ENTRIES;

/// A connection's RDMA writes in flight, in the order they were posted (each ends where the
/// next begins). Completions may come in any order; `delivered` moves over the completed prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Flight {
    ends: [u32; FLIGHT_MAX],
    done: [bool; FLIGHT_MAX],
    count: usize,
}

impl Flight {
    const EMPTY: Self = Self { ends: [0; FLIGHT_MAX], done: [false; FLIGHT_MAX], count: 0 };

    fn is_empty(&self) -> bool {
        self.count == 0
    }

    fn is_full(&self) -> bool {
        self.count == FLIGHT_MAX
    }

    fn push(&mut self, end: u32) {
        self.ends[self.count] = end;
        self.done[self.count] = false;
        self.count += 1;
    }

    /// Marks the write ending at `end` done; false if no write in flight ends there.
    fn complete(&mut self, end: u32) -> bool {
        match (0..self.count).find(|&i| self.ends[i] == end && !self.done[i]) {
            Some(i) => {
                self.done[i] = true;
                true
            }
            None => false,
        }
    }

    /// Takes the completed writes off the front; the end of the last one taken.
    fn settle(&mut self) -> Option<u32> {
        let prefix = self.done[..self.count].iter().take_while(|&&d| d).count();
        let last = prefix.checked_sub(1).map(|i| self.ends[i]);
        self.ends.copy_within(prefix..self.count, 0);
        self.done.copy_within(prefix..self.count, 0);
        self.count -= prefix;
        last
    }
}

#[derive(Clone, Copy, Debug)]
struct Listener {
    generation: u16,
    port: u16,
    owner: Option<Owner>,
}

/// What a read may take: `len` bytes from ring offset `offset` of connection `index`'s receive
/// ring (then `consumed`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Readable {
    Bytes { index: u8, offset: u32, len: u32 },
    EndOfStream,
}

/// Where a write may copy: `len` bytes at ring offset `offset` of connection `index`'s send
/// ring (then `written`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Writable {
    pub index: u8,
    pub offset: u32,
    pub len: u32,
}

/// Every socket of one node.
pub struct Sockets {
    me: u16,
    conns: [Conn; MAX_CONNECTIONS],
    listeners: [Option<Listener>; MAX_LISTENERS],
    listener_generations: [u16; MAX_LISTENERS],
    stats: [SocketStats; crate::process::MAX_DOMAINS],
    counters: Counters,
    /// RDMA writes posted and not completed, on every connection.
    writes_in_flight: usize,
    /// The slots whose rings are mapped (bit i: slot i), the only ones a connection may take.
    rings_ready: u64,
}

impl Sockets {
    pub const fn new(me: u16) -> Self {
        Self {
            me,
            conns: [Conn::FREE; MAX_CONNECTIONS],
            listeners: [None; MAX_LISTENERS],
            listener_generations: [0; MAX_LISTENERS],
            stats: [SocketStats { connections: 0, rdma_writes: 0, bytes_out: 0, bytes_in: 0 };
                crate::process::MAX_DOMAINS],
            counters: Counters { strays: 0, violations: 0, refused: 0, failed_writes: 0 },
            writes_in_flight: 0,
            rings_ready: 0,
        }
    }

    pub fn counters(&self) -> Counters {
        self.counters
    }

    pub fn stats(&self, owner: Owner) -> SocketStats {
        self.stats.get(owner.slot).copied().unwrap_or_default()
    }

    /// Connections in use (any phase).
    pub fn connections(&self) -> usize {
        self.conns.iter().filter(|c| c.phase != Phase::Free).count()
    }

    fn id(&self, index: usize) -> ConnId {
        ConnId { index: index as u8, generation: self.conns[index].generation }
    }

    /// Slot `index` has its rings from now on (`socket_node` maps them the first time a slot
    /// is needed, and keeps them).
    pub fn rings_ready(&mut self, index: usize) {
        self.rings_ready |= 1 << index;
    }

    /// The slot whose rings should be mapped before a connection is taken: `None` while a free
    /// slot has them (or no slot is free).
    pub fn slot_to_prepare(&self) -> Option<usize> {
        let free = |i: &usize| self.conns[*i].phase == Phase::Free;
        if (0..MAX_CONNECTIONS).filter(free).any(|i| self.rings_ready & 1 << i != 0) {
            return None;
        }
        (0..MAX_CONNECTIONS).find(free)
    }

    fn allocate(&mut self) -> Option<usize> {
        let ready = |i: &usize| self.rings_ready & 1 << *i != 0 && self.conns[*i].phase == Phase::Free;
        let index = (0..MAX_CONNECTIONS).find(ready)?;
        let generation = self.conns[index].generation.wrapping_add(1);
        self.conns[index] = Conn { generation, ..Conn::FREE };
        Some(index)
    }

    /// The caller's connection behind `raw`.
    fn own_conn(&self, owner: Owner, raw: u64) -> Result<usize, Error> {
        match Handle::from_raw(raw) {
            Some(Handle::Connection(id)) => {
                let index = usize::from(id.index);
                let c = self.conns.get(index).ok_or(Error::BadArgument)?;
                let live = c.phase != Phase::Free && c.generation == id.generation;
                if live && c.owner == Some(owner) { Ok(index) } else { Err(Error::BadArgument) }
            }
            _ => Err(Error::BadArgument),
        }
    }

    fn own_listener(&self, owner: Owner, raw: u64) -> Result<usize, Error> {
        match Handle::from_raw(raw) {
            Some(Handle::Listener(id)) => {
                let index = usize::from(id.index);
                match self.listeners.get(index).copied().flatten() {
                    Some(l) if l.generation == id.generation && l.owner == Some(owner) => Ok(index),
                    _ => Err(Error::BadArgument),
                }
            }
            _ => Err(Error::BadArgument),
        }
    }

    fn stat(&mut self, owner: Option<Owner>, f: impl FnOnce(&mut SocketStats)) {
        if let Some(s) = owner.and_then(|o| self.stats.get_mut(o.slot)) {
            f(s);
        }
    }

    // ---- The calls a process makes ----

    pub fn listen(&mut self, owner: Owner, port: u16) -> Result<u64, Error> {
        if port == 0 {
            return Err(Error::BadArgument);
        }
        if self.listeners.iter().flatten().any(|l| l.port == port) {
            return Err(Error::AddressInUse);
        }
        let index = self.listeners.iter().position(Option::is_none).ok_or(Error::Busy)?;
        let generation = self.listener_generations[index].wrapping_add(1);
        self.listener_generations[index] = generation;
        self.listeners[index] = Some(Listener { generation, port, owner: Some(owner) });
        Ok(Handle::Listener(ConnId { index: index as u8, generation }).raw())
    }

    /// A connection in the listener's backlog, now the caller's: its handle and peer node; or
    /// `None` when the backlog is empty.
    pub fn accept(&mut self, owner: Owner, listener: u64) -> Result<Option<(u64, u16)>, Error> {
        let l = self.own_listener(owner, listener)?;
        let Some(index) = self.conns.iter().position(|c| c.listener == Some(l as u8)) else { return Ok(None) };
        let c = &mut self.conns[index];
        c.listener = None;
        c.owner = Some(owner);
        let node = c.peer_node;
        self.stat(Some(owner), |s| s.connections += 1);
        Ok(Some((Handle::Connection(self.id(index)).raw(), node)))
    }

    /// Starts a connection to `port` on `node`: the Connect doorbell goes out, and
    /// [`connected`](Self::connected) says when the peer answered.
    pub fn connect(&mut self, owner: Owner, node: u16, port: u16, out: &mut Vec<Action>) -> Result<u64, Error> {
        if port == 0 {
            return Err(Error::BadArgument);
        }
        let index = self.allocate().ok_or(Error::Busy)?;
        let c = &mut self.conns[index];
        c.phase = Phase::Connecting;
        c.owner = Some(owner);
        c.peer_node = node;
        let from = self.id(index);
        out.push(Action::Notify { node, doorbell: Doorbell::Connect { port, from } });
        Ok(Handle::Connection(from).raw())
    }

    /// `Ok(true)` once the connection is open, `Ok(false)` while the peer has not answered; a
    /// refusal (`ConnectionRefused`) or a lost node (`Unreachable`) ends it.
    pub fn connected(&mut self, owner: Owner, handle: u64, out: &mut Vec<Action>) -> Result<bool, Error> {
        let index = self.own_conn(owner, handle)?;
        let c = &self.conns[index];
        let failed = match c.phase {
            Phase::Open => {
                self.stat(Some(owner), |s| s.connections += 1);
                return Ok(true);
            }
            Phase::Connecting if !c.peer_gone => return Ok(false),
            Phase::Connecting => Error::Unreachable,
            _ => Error::ConnectionRefused,
        };
        self.close(owner, handle, out)?;
        Err(failed)
    }

    /// Gives up a connection that is still connecting (the caller's timeout ran out).
    pub fn abandon(&mut self, owner: Owner, handle: u64, out: &mut Vec<Action>) {
        let _ = self.close(owner, handle, out);
    }

    /// What a read of the connection may take now; `WouldBlock` when nothing has arrived.
    pub fn readable(&self, owner: Owner, handle: u64, max: u32) -> Result<Readable, Error> {
        let index = self.own_conn(owner, handle)?;
        let c = &self.conns[index];
        if !c.reading {
            return Err(Error::Closed);
        }
        if c.unread() > 0 {
            let offset = ring_offset(c.consumed);
            let len = c.unread().min(RING_BYTES - offset).min(max);
            return Ok(Readable::Bytes { index: index as u8, offset, len });
        }
        if c.reset || c.peer_gone {
            return Err(Error::ConnectionReset);
        }
        if c.at_end() {
            return Ok(Readable::EndOfStream);
        }
        Err(Error::WouldBlock)
    }

    /// The process read `len` bytes of what [`readable`](Self::readable) offered.
    pub fn consumed(&mut self, index: u8, len: u32, out: &mut Vec<Action>) {
        let c = &mut self.conns[usize::from(index)];
        c.consumed = c.consumed.wrapping_add(len);
        let owner = c.owner;
        self.stat(owner, |s| s.bytes_in += u64::from(len));
        self.announce(usize::from(index), false, out);
    }

    /// Sends a Credit once a quarter ring has been read since the last one (or always, with
    /// `now`): a sender that waits for room has a full ring here, which the reader drains.
    fn announce(&mut self, index: usize, now: bool, out: &mut Vec<Action>) {
        let c = &mut self.conns[index];
        let unannounced = c.consumed.wrapping_sub(c.announced);
        if c.phase != Phase::Open || unannounced == 0 || !(now || unannounced >= RING_BYTES / 4) {
            return;
        }
        c.announced = c.consumed;
        out.push(Action::Notify { node: c.peer_node, doorbell: Doorbell::Credit { to: c.peer, position: c.consumed } });
    }

    /// Where a write may copy now; `WouldBlock` when the ring is full.
    pub fn writable(&self, owner: Owner, handle: u64, max: u32) -> Result<Writable, Error> {
        let index = self.own_conn(owner, handle)?;
        let c = &self.conns[index];
        if c.reset || c.peer_gone || !c.peer_reading {
            return Err(Error::ConnectionReset);
        }
        if c.write_shut {
            return Err(Error::Closed);
        }
        if c.phase != Phase::Open {
            return Err(Error::WouldBlock);
        }
        let offset = ring_offset(c.written);
        let len = c.room().min(RING_BYTES - offset).min(max);
        if len == 0 {
            return Err(Error::WouldBlock);
        }
        Ok(Writable { index: index as u8, offset, len })
    }

    /// The process copied `len` bytes where [`writable`](Self::writable) said: they go out.
    pub fn written(&mut self, index: u8, len: u32, out: &mut Vec<Action>) {
        let c = &mut self.conns[usize::from(index)];
        c.written = c.written.wrapping_add(len);
        let owner = c.owner;
        self.stat(owner, |s| s.bytes_out += u64::from(len));
        self.post(usize::from(index), out);
    }

    /// RDMA writes of what is written and not posted, [`WRITE_MAX`] bytes each (and not past
    /// the ring's end), while the connection has fewer than [`FLIGHT_MAX`] in flight and the
    /// node fewer than [`WRITES_MAX`].
    fn post(&mut self, index: usize, out: &mut Vec<Action>) {
        let id = self.id(index);
        loop {
            let c = &mut self.conns[index];
            let pending = c.written.wrapping_sub(c.posted);
            let stopped = c.phase != Phase::Open || c.reset || c.peer_gone;
            if stopped || pending == 0 || c.flight.is_full() || self.writes_in_flight == WRITES_MAX {
                return;
            }
            let offset = ring_offset(c.posted);
            let len = pending.min(WRITE_MAX).min(RING_BYTES - offset);
            c.posted = c.posted.wrapping_add(len);
            c.flight.push(c.posted);
            out.push(Action::Write {
                node: c.peer_node,
                local: send_ring(id.index) + u64::from(offset),
                remote: receive_ring(c.peer.index) + u64::from(offset),
                len,
                tag: write_tag(id, c.posted),
            });
            let owner = c.owner;
            self.writes_in_flight += 1;
            self.stat(owner, |s| s.rdma_writes += 1);
        }
    }

    pub fn shutdown(&mut self, owner: Owner, handle: u64, how: u64, out: &mut Vec<Action>) -> Result<(), Error> {
        if how == 0 || how & !shutdown::BOTH != 0 {
            return Err(Error::BadArgument);
        }
        let index = self.own_conn(owner, handle)?;
        self.shut(index, how, out);
        Ok(())
    }

    fn shut(&mut self, index: usize, how: u64, out: &mut Vec<Action>) {
        let c = &mut self.conns[index];
        if how & shutdown::WRITE != 0 {
            c.write_shut = true;
        }
        if how & shutdown::READ != 0 && c.reading {
            c.reading = false;
            c.consumed = c.arrived;
        }
        if c.phase == Phase::Open && !c.reading && !c.stop_sent && !c.peer_gone {
            c.stop_sent = true;
            out.push(Action::Notify { node: c.peer_node, doorbell: Doorbell::Stop { to: c.peer } });
        }
        self.announce(index, true, out);
        self.finish(index, out);
    }

    /// Sends the Fin once the write side is shut and everything written is delivered, and
    /// frees the slot once nothing more can reach it.
    fn finish(&mut self, index: usize, out: &mut Vec<Action>) {
        let c = &mut self.conns[index];
        let flushed = c.flight.is_empty() && c.posted == c.written;
        if c.phase == Phase::Open && c.write_shut && flushed && !c.fin_sent && !c.peer_gone {
            c.fin_sent = true;
            out.push(Action::Notify {
                node: c.peer_node,
                doorbell: Doorbell::Fin { to: c.peer, position: c.delivered },
            });
        }
        let given_up = c.owner.is_none() && c.listener.is_none();
        let quiet = match c.phase {
            Phase::Free => false,
            Phase::Connecting => c.peer_gone,
            Phase::Refused(_) => true,
            Phase::Open => c.flight.is_empty() && (c.peer_gone || (c.fin_sent && c.peer_fin.is_some())),
        };
        if given_up && quiet {
            let generation = c.generation;
            *c = Conn { generation, ..Conn::FREE };
        }
    }

    /// Gives up a connection or a listener (a listener's backlog is closed with it).
    pub fn close(&mut self, owner: Owner, handle: u64, out: &mut Vec<Action>) -> Result<(), Error> {
        if let Ok(l) = self.own_listener(owner, handle) {
            self.close_listener(l, out);
            return Ok(());
        }
        let index = self.own_conn(owner, handle)?;
        self.conns[index].owner = None;
        self.shut(index, shutdown::BOTH, out);
        Ok(())
    }

    fn close_listener(&mut self, l: usize, out: &mut Vec<Action>) {
        self.listeners[l] = None;
        for index in 0..MAX_CONNECTIONS {
            if self.conns[index].listener == Some(l as u8) {
                self.conns[index].listener = None;
                self.shut(index, shutdown::BOTH, out);
            }
        }
    }

    /// Everything process `owner` held is closed (it ended).
    pub fn exited(&mut self, owner: Owner, out: &mut Vec<Action>) {
        for l in 0..MAX_LISTENERS {
            if self.listeners[l].is_some_and(|l| l.owner == Some(owner)) {
                self.close_listener(l, out);
            }
        }
        for index in 0..MAX_CONNECTIONS {
            if self.conns[index].phase != Phase::Free && self.conns[index].owner == Some(owner) {
                self.conns[index].owner = None;
                self.shut(index, shutdown::BOTH, out);
            }
        }
        if let Some(s) = self.stats.get_mut(owner.slot) {
            *s = SocketStats::default();
        }
    }

    /// The readiness bits of `handle` for `owner` (`ready::INVALID` when it is not theirs).
    pub fn readiness(&self, owner: Owner, handle: u64) -> u16 {
        if let Ok(l) = self.own_listener(owner, handle) {
            let waiting = self.conns.iter().any(|c| c.listener == Some(l as u8));
            return if waiting { ready::READABLE } else { 0 };
        }
        match self.own_conn(owner, handle) {
            Ok(index) => self.conns[index].readiness(),
            Err(_) => ready::INVALID,
        }
    }

    // ---- What the network and the engine say ----

    /// A doorbell from node `from`'s kernel.
    pub fn doorbell(&mut self, from: u16, doorbell: Doorbell, out: &mut Vec<Action>) {
        match doorbell {
            Doorbell::Connect { port, from: peer } => self.on_connect(from, port, peer, out),
            Doorbell::Accept { to, from: peer } => {
                let Some(index) = self.peer_conn(from, to, |c| c.phase == Phase::Connecting) else { return };
                let c = &mut self.conns[index];
                c.phase = Phase::Open;
                c.peer = peer;
                wake(c.owner, out);
                if c.owner.is_none() {
                    // Given up while connecting: closed at once.
                    self.shut(index, shutdown::BOTH, out);
                }
            }
            Doorbell::Refuse { to, why } => {
                let Some(index) = self.peer_conn(from, to, |c| c.phase == Phase::Connecting) else { return };
                self.counters.refused += 1;
                self.conns[index].phase = Phase::Refused(why);
                wake(self.conns[index].owner, out);
                self.finish(index, out);
            }
            Doorbell::Data { to, position } => {
                let Some(index) = self.open_conn(from, to) else { return };
                let c = &mut self.conns[index];
                let ahead = position.wrapping_sub(c.arrived);
                if c.peer_fin.is_some() || ahead > RING_BYTES - c.unread() {
                    self.violation(index, out);
                    return;
                }
                c.arrived = position;
                if !c.reading {
                    c.consumed = position;
                    self.announce(index, true, out);
                }
                wake(self.conns[index].owner, out);
            }
            Doorbell::Credit { to, position } => {
                let Some(index) = self.open_conn(from, to) else { return };
                let c = &mut self.conns[index];
                if position.wrapping_sub(c.credit) > c.delivered.wrapping_sub(c.credit) {
                    self.violation(index, out);
                    return;
                }
                c.credit = position;
                wake(c.owner, out);
            }
            Doorbell::Fin { to, position } => {
                let Some(index) = self.open_conn(from, to) else { return };
                let c = &mut self.conns[index];
                if c.peer_fin.is_some() || position != c.arrived {
                    self.violation(index, out);
                    return;
                }
                c.peer_fin = Some(position);
                wake(c.owner, out);
                self.finish(index, out);
            }
            Doorbell::Stop { to } => {
                let Some(index) = self.open_conn(from, to) else { return };
                let c = &mut self.conns[index];
                c.peer_reading = false;
                // What is not posted will never be read: dropped.
                c.written = c.posted;
                c.write_shut = true;
                wake(c.owner, out);
                self.finish(index, out);
            }
        }
    }

    fn on_connect(&mut self, from: u16, port: u16, peer: ConnId, out: &mut Vec<Action>) {
        let refuse = |why| Action::Notify { node: from, doorbell: Doorbell::Refuse { to: peer, why } };
        let Some(l) = self.listeners.iter().position(|l| l.is_some_and(|l| l.port == port)) else {
            self.counters.refused += 1;
            out.push(refuse(Refusal::NoListener));
            return;
        };
        let waiting = self.conns.iter().filter(|c| c.listener == Some(l as u8)).count();
        let index = if waiting < BACKLOG { self.allocate() } else { None };
        let Some(index) = index else {
            self.counters.refused += 1;
            out.push(refuse(Refusal::Full));
            return;
        };
        let c = &mut self.conns[index];
        c.phase = Phase::Open;
        c.listener = Some(l as u8);
        c.peer_node = from;
        c.peer = peer;
        out.push(Action::Notify { node: from, doorbell: Doorbell::Accept { to: peer, from: self.id(index) } });
        wake(self.listeners[l].and_then(|l| l.owner), out);
    }

    /// The connection a doorbell from `from` names, if it is that node's peer and `state` holds.
    fn peer_conn(&mut self, from: u16, to: ConnId, state: impl Fn(&Conn) -> bool) -> Option<usize> {
        let index = usize::from(to.index);
        let found = self.conns.get(index).is_some_and(|c| {
            c.phase != Phase::Free && c.generation == to.generation && c.peer_node == from && state(c)
        });
        if !found {
            self.counters.strays += 1;
        }
        found.then_some(index)
    }

    fn open_conn(&mut self, from: u16, to: ConnId) -> Option<usize> {
        self.peer_conn(from, to, |c| c.phase == Phase::Open && !c.peer_gone)
    }

    /// A peer broke the protocol: the connection is reset, and the peer told to stop.
    fn violation(&mut self, index: usize, out: &mut Vec<Action>) {
        self.counters.violations += 1;
        self.conns[index].reset = true;
        wake(self.conns[index].owner, out);
        self.shut(index, shutdown::READ, out);
    }

    /// The RDMA write with `tag` completed (`ok`) or failed.
    pub fn completed(&mut self, tag: u64, ok: bool, out: &mut Vec<Action>) {
        let (id, end) = split_tag(tag);
        let index = usize::from(id.index);
        let found = self
            .conns
            .get_mut(index)
            .is_some_and(|c| c.phase == Phase::Open && c.generation == id.generation && c.flight.complete(end));
        if !found {
            self.counters.strays += 1;
            return;
        }
        let node_was_full = self.writes_in_flight == WRITES_MAX;
        self.writes_in_flight -= 1;
        let c = &mut self.conns[index];
        let delivered = c.flight.settle();
        if ok && !c.reset {
            if let Some(end) = delivered {
                c.delivered = end;
                if !c.peer_gone {
                    out.push(Action::Notify {
                        node: c.peer_node,
                        doorbell: Doorbell::Data { to: c.peer, position: end },
                    });
                }
            }
            self.post(index, out);
            if node_was_full {
                for other in 0..MAX_CONNECTIONS {
                    self.post(other, out);
                }
            }
        } else if !ok {
            self.write_failed(index, out);
        }
        self.finish(index, out);
    }

    /// A write of the connection failed: it is reset (both calls answer ConnectionReset), what
    /// was not posted is dropped, and the peer is told to stop.
    fn write_failed(&mut self, index: usize, out: &mut Vec<Action>) {
        self.counters.failed_writes += 1;
        let c = &mut self.conns[index];
        c.reset = true;
        c.write_shut = true;
        c.written = c.posted;
        wake(c.owner, out);
        self.shut(index, shutdown::READ, out);
    }

    /// Every write in flight is lost (the R5 forgot the queues): their connections are reset,
    /// as for a failed write.
    pub fn writes_lost(&mut self, out: &mut Vec<Action>) {
        for index in 0..MAX_CONNECTIONS {
            let c = &mut self.conns[index];
            if c.flight.is_empty() {
                continue;
            }
            self.writes_in_flight -= c.flight.count;
            c.flight = Flight::EMPTY;
            self.write_failed(index, out);
            self.finish(index, out);
        }
    }

    /// Node `node` is unreachable: its connections are reset, and connects to it fail.
    pub fn node_lost(&mut self, node: u16, out: &mut Vec<Action>) {
        for index in 0..MAX_CONNECTIONS {
            let c = &mut self.conns[index];
            if c.phase == Phase::Free || c.peer_node != node || c.peer_gone {
                continue;
            }
            c.peer_gone = true;
            c.reset = c.phase == Phase::Open;
            wake(c.owner, out);
            self.finish(index, out);
        }
    }

    /// This node's id (the doorbells it sends to itself for local connections).
    pub fn node(&self) -> u16 {
        self.me
    }
}

fn wake(owner: Option<Owner>, out: &mut Vec<Action>) {
    if let Some(o) = owner {
        let action = Action::Wake(o.slot);
        if !out.contains(&action) {
            out.push(action);
        }
    }
}

/// An RDMA write's tag: the connection and the position its data ends at.
fn write_tag(id: ConnId, end: u32) -> u64 {
    id.raw() << 32 | u64::from(end)
}

fn split_tag(tag: u64) -> (ConnId, u32) {
    (ConnId::from_raw(tag >> 32 & 0xff_ffff), tag as u32)
}
