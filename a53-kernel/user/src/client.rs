//! The GSAS protocol client (seed §2.2.6; `docs/hw/gsas-packets.md`): one request at a time to
//! the target node's mailbox interface 0, replies matched in the process's own mailbox interface.
//!
//! - A request goes to node N's MIF 0, N being the top 16 bits of its address. A NACK means
//!   N's MIF 0 was full: the same packet is sent again after a short pause.
//! - A reply is genuine only if its PID prefix is N's service (`Pid::atomic_service(N)`), and it
//!   is ours only if it names this process as its requester (a late reply to an earlier holder of
//!   this mailbox interface names that one); anything else in the mailbox is counted in
//!   [`Stats::stray`] and skipped, never trusted.
//!   A genuine reply must echo the request's opcode and be of the expected kind, otherwise it
//!   is a [`ProtocolError`].
//! - Waiting reads the mailbox's PACKET registers a few times, then sleeps in WAIT_MIF; no reply within the
//!   timeout is [`Error::Timeout`]. After a timeout or a protocol error the client empties its
//!   mailbox before the next request, so a late reply cannot answer a later request.
//!
//! [`Pipeline`] keeps many requests to one node outstanding (the `mif-flood` test); the typed
//! operations (`read64`, `alloc_shared`, `remote_spawn`, ...) are in `ops.rs`.

use hal::packetizer::{Destination, PACKET_BYTES, packet_from_words128, words128};
use proto::gsas::{GlobalAddress, Opcode, Pid, RawRequest, ReplyBody, ReplyPacket, Response};

use crate::check::static_check;
use crate::error::{Error, ProtocolError};
use crate::link::{Link, Sent};

/// How long a request may wait for its reply, NACKs included: generous, because emulated
/// nodes are slow and a busy service answers many requesters.
pub const DEFAULT_TIMEOUT_US: u64 = 20_000_000;
/// Packet reads of the mailbox before a waiting client sleeps in WAIT_MIF.
const SPIN_POLLS: u32 = 4;
/// Words of one reply packet.
const PACKET_WORDS: u32 = 2;

/// What the client has seen so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Requests sent (each counted once, however many NACKs it took).
    pub requests: u64,
    /// NACKs: the target's MIF 0 was full.
    pub nacks: u64,
    /// Packets in the mailbox that did not come from the service asked (skipped).
    pub stray: u64,
    /// Packets thrown away when emptying the mailbox after a timeout or protocol error.
    pub drained: u64,
    /// Description pages a remote spawn could not free.
    pub leaked: u64,
}

/// A deadline that starts when it is first needed, so a request answered at once never reads
/// the clock.
pub(crate) struct Timer {
    limit_us: u64,
    deadline: Option<u64>,
}

impl Timer {
    pub(crate) fn new(limit_us: u64) -> Self {
        Self { limit_us, deadline: None }
    }

    /// Microseconds left, or `None` once the deadline has passed.
    fn remaining(&mut self, link: &mut impl Link) -> Option<u64> {
        let now = link.now_us();
        let deadline = *self.deadline.get_or_insert(now.saturating_add(self.limit_us));
        deadline.checked_sub(now).filter(|&left| left > 0)
    }
}

pub struct Gsas<L> {
    link: L,
    /// This process's PID: the requester its replies name.
    me: Pid,
    node: u16,
    nodes: u16,
    /// BASE_DEST.WINDOW: the vmbox window of every node.
    window: u16,
    pub(crate) timeout_us: u64,
    /// A reply may still be on its way: empty the mailbox before the next request.
    pub(crate) resync: bool,
    pub(crate) stats: Stats,
}

impl<L: Link> Gsas<L> {
    /// A client of the process `me` on node `node` of `nodes`; `window` is
    /// `base_window(VMBOX_BASE)`.
    pub fn new(link: L, me: Pid, node: u16, nodes: u16, window: u16) -> Self {
        Self { link, me, node, nodes, window, timeout_us: DEFAULT_TIMEOUT_US, resync: false, stats: Stats::default() }
    }

    /// The node this process runs on (seed `getBoardPid`).
    pub fn node(&self) -> u16 {
        self.node
    }

    /// The number of nodes (seed `getNumberBoards`).
    pub fn nodes(&self) -> u16 {
        self.nodes
    }

    pub fn stats(&self) -> Stats {
        self.stats
    }

    pub fn timeout_us(&self) -> u64 {
        self.timeout_us
    }

    pub fn set_timeout_us(&mut self, us: u64) {
        self.timeout_us = us;
    }

    pub fn link(&mut self) -> &mut L {
        &mut self.link
    }

    /// The DATA register of node `node`'s MIF 0.
    fn destination(&self, node: u16) -> Result<u64, Error> {
        let missing = Error::NoSuchNode(u64::from(node));
        if node >= self.nodes {
            return Err(missing);
        }
        Destination::mailbox(node, self.window, 0).map(|d| d.encode()).map_err(|_| missing)
    }

    /// Sends `raw` to node `node`'s service, again after each NACK, until the timer runs out.
    /// `raw.sender` goes into payload0[47:0], where the packetizer replaces it.
    pub(crate) fn send(&mut self, node: u16, raw: &RawRequest, timer: &mut Timer) -> Result<(), Error> {
        let destination = self.destination(node)?;
        let payload = words128(&raw.to_bytes());
        let mut attempt = 0;
        loop {
            match self.link.send(payload, destination)? {
                Sent::Ack => {
                    self.stats.requests += 1;
                    return Ok(());
                }
                Sent::Nack => {
                    self.stats.nacks += 1;
                    timer.remaining(&mut self.link).ok_or(Error::Timeout)?;
                    self.link.backoff(attempt);
                    attempt += 1;
                }
                Sent::Illegal => return Err(Error::Illegal),
                Sent::Unreachable => return Err(Error::NodeUnreachable(node)),
                Sent::Overwritten => return Err(Error::Overwritten),
            }
        }
    }

    /// The next packet in the mailbox, whoever sent it, while waiting for node `from`'s answer.
    fn next_packet(&mut self, from: u16, timer: &mut Timer) -> Result<[u8; PACKET_BYTES], Error> {
        let mut polls = 0;
        loop {
            if let Some(words) = self.link.read_packet() {
                return Ok(packet_from_words128(words));
            }
            if polls < SPIN_POLLS {
                polls += 1;
                continue;
            }
            let left = timer.remaining(&mut self.link).ok_or(Error::Timeout)?;
            match self.link.wait(PACKET_WORDS, left, from) {
                Ok(()) | Err(Error::Timeout) => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// The next genuine reply from node `node`'s service; other packets are counted and skipped.
    pub(crate) fn next_reply(&mut self, node: u16, timer: &mut Timer) -> Result<ReplyPacket, Error> {
        let service = Pid::atomic_service(node);
        loop {
            let packet = self.next_packet(node, timer)?;
            let sender = Pid::from_low_bits(u64::from_le_bytes(packet[..8].try_into().unwrap_or_default()));
            if sender != service {
                self.stats.stray += 1;
                continue;
            }
            let reply = ReplyPacket::decode(&packet).map_err(|e| Error::Protocol(ProtocolError::BadReply(e)))?;
            if reply.to != self.me {
                self.stats.stray += 1;
                continue;
            }
            return Ok(reply);
        }
    }

    /// Throws away everything in the mailbox: replies to requests that timed out.
    pub(crate) fn drain(&mut self) {
        let queued = self.link.count();
        self.stats.drained += u64::from(queued / PACKET_WORDS);
        for _ in 0..queued {
            self.link.dequeue();
        }
        self.resync = false;
    }

    /// Records that a reply may still arrive when `result` failed after sending.
    pub(crate) fn settle<T>(&mut self, result: Result<T, Error>) -> Result<T, Error> {
        if matches!(result, Err(Error::Timeout | Error::Protocol(_))) {
            self.resync = true;
        }
        result
    }

    /// Sends `raw` and waits for its one status reply, which must echo `raw.opcode`.
    fn exchange(&mut self, node: u16, raw: &RawRequest) -> Result<Response, Error> {
        if self.resync {
            self.drain();
        }
        let mut timer = Timer::new(self.timeout_us);
        self.send(node, raw, &mut timer)?;
        let reply = self.next_reply(node, &mut timer);
        let response = reply.and_then(|reply| status_of(&reply, raw.opcode));
        self.settle(response)
    }

    /// Any request, unchecked: `raw` goes to node `node` as it is (the packetizer still puts
    /// the real PID in front). Returns the service's response, error code included. For tests
    /// that send invalid or forged requests.
    pub fn call_raw(&mut self, node: u16, raw: &RawRequest) -> Result<Response, Error> {
        self.exchange(node, raw)
    }

    /// One request to the node its address names, after the service's own static checks.
    /// Returns the result, or the service's error code as [`Error::Service`].
    pub fn call(&mut self, opcode: Opcode, address: GlobalAddress, arg1: u64, arg2: u64) -> Result<u64, Error> {
        let raw = request(opcode, address, arg1, arg2);
        static_check(&raw, address.node()).map_err(Error::Local)?;
        let response = self.exchange(address.node(), &raw)?;
        match response.error {
            None => Ok(response.result),
            Some(code) => Err(Error::Service(code)),
        }
    }

    /// Keeps several requests to node `node` outstanding at once.
    pub fn pipeline(&mut self, node: u16) -> Result<Pipeline<'_, L>, Error> {
        self.destination(node)?;
        if self.resync {
            self.drain();
        }
        Ok(Pipeline { gsas: self, node, outstanding: 0 })
    }
}

/// Requests to one node without waiting for each reply: [`post`](Self::post) them, then
/// [`collect`](Self::collect) as many replies. The service answers in order, but the caller
/// should tell replies apart by their results. Dropping a pipeline with replies outstanding
/// makes the client empty its mailbox before its next request.
pub struct Pipeline<'a, L: Link> {
    gsas: &'a mut Gsas<L>,
    node: u16,
    outstanding: u32,
}

impl<L: Link> Pipeline<'_, L> {
    /// Sends one request (checked like [`Gsas::call`]); NACKs are retried here. Read4K is
    /// `Unsupported`: its 257 replies are for [`Gsas::read4k`].
    pub fn post(&mut self, opcode: Opcode, address: GlobalAddress, arg1: u64, arg2: u64) -> Result<(), Error> {
        if opcode == Opcode::Read4K {
            return Err(Error::Unsupported);
        }
        let raw = request(opcode, address, arg1, arg2);
        static_check(&raw, self.node).map_err(Error::Local)?;
        let mut timer = Timer::new(self.gsas.timeout_us);
        self.gsas.send(self.node, &raw, &mut timer)?;
        self.outstanding += 1;
        Ok(())
    }

    /// The next status reply: the opcode it echoes and the response.
    pub fn collect(&mut self) -> Result<(u8, Response), Error> {
        self.collect_within(self.gsas.timeout_us)
    }

    /// Like [`collect`](Self::collect) with its own timeout. With nothing outstanding it waits
    /// for a reply that should not exist (`Timeout` is then the good answer).
    pub fn collect_within(&mut self, timeout_us: u64) -> Result<(u8, Response), Error> {
        let mut timer = Timer::new(timeout_us);
        let reply = self.gsas.next_reply(self.node, &mut timer)?;
        self.outstanding = self.outstanding.saturating_sub(1);
        match reply.body {
            ReplyBody::Status(response) => Ok((reply.opcode, response)),
            ReplyBody::Data { .. } => Err(ProtocolError::UnexpectedData.into()),
        }
    }

    pub fn outstanding(&self) -> u32 {
        self.outstanding
    }

    /// Waits until the mailbox interface is full, without reading it: a service with more
    /// replies for this process is then refused (NACK) until the caller collects.
    pub fn wait_until_full(&mut self, timeout_us: u64) -> Result<(), Error> {
        let mut timer = Timer::new(timeout_us);
        let link = &mut self.gsas.link;
        let depth = link.depth();
        while link.count() < depth {
            let left = timer.remaining(link).ok_or(Error::Timeout)?;
            match link.wait(depth, left, self.node) {
                Ok(()) | Err(Error::Timeout) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

impl<L: Link> Drop for Pipeline<'_, L> {
    fn drop(&mut self) {
        if self.outstanding > 0 {
            self.gsas.resync = true;
        }
    }
}

/// A request with the fields the library sends (sender 0: the hardware fills it in).
pub fn request(opcode: Opcode, address: GlobalAddress, arg1: u64, arg2: u64) -> RawRequest {
    RawRequest { sender: Pid::default(), reserved: 0, opcode: opcode.as_u8(), address: address.raw(), arg1, arg2 }
}

/// `address + bytes`, for offsets inside an allocation.
pub fn offset(address: GlobalAddress, bytes: u64) -> GlobalAddress {
    GlobalAddress::from_raw(address.raw().wrapping_add(bytes))
}

/// The status in `reply`, which must answer `opcode`.
fn status_of(reply: &ReplyPacket, opcode: u8) -> Result<Response, Error> {
    if reply.opcode != opcode {
        return Err(ProtocolError::OpcodeMismatch { expected: opcode, got: reply.opcode }.into());
    }
    match reply.body {
        ReplyBody::Status(response) => Ok(response),
        ReplyBody::Data { .. } => Err(ProtocolError::UnexpectedData.into()),
    }
}
