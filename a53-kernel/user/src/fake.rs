//! Fakes for the host tests, here and in the C library's (feature `fakes`):
//!
//! - [`FakeNet`], a [`Link`]: the process's mailbox as a bounded queue, and one small atomic
//!   service per node with the behaviour of `docs/hw/gsas-packets.md` (static checks, memory
//!   operations, rights, alloc/free, Read4K, spawn, notify) plus switches that inject NACKs,
//!   stray packets, lost, duplicated or wrong replies;
//! - [`FakeR5`], a [`Doorbell`]: the R5 and the engine, copying between host addresses;
//! - [`FakeRegions`], [`Regions`]: `MAP` regions on the host heap.

use std::collections::{BTreeMap, VecDeque};
use std::string::String;
use std::vec::Vec;
use std::{boxed::Box, vec};

use hal::packetizer::{Destination, PACKET_BYTES, assemble, words128};
use hal::vmbox::EMPTY_SENTINEL;
use proto::gsas::{
    CHUNK_BYTES, DomainId, ErrorCode, GlobalAddress, Notification, Opcode, PAGE_CHUNKS, PAGE_SIZE, Pid, RawRequest,
    ReplyBody, ReplyPacket, Response, parse_description,
};

use proto::rdma::queue::{Cqe, CqeStatus, Direction, QueueSet, RawWqe, Wqe};

use crate::check::static_check;
use crate::error::Error;
use crate::link::{Link, Sent};
use crate::rdma::Doorbell;
use crate::unim::Regions;

pub const WINDOW: u16 = 0x2008;

struct Page {
    owner: DomainId,
    sharing: u64,
    /// Pages in the allocation, on its first page only.
    head: Option<u64>,
    data: Box<[u8; PAGE_SIZE as usize]>,
}

#[derive(Default)]
pub struct Service {
    node: u16,
    pages: BTreeMap<u64, Page>,
    next_page: u64,
    pub spawned: Vec<(String, u64)>,
    pub notified: Vec<(Pid, Notification)>,
    /// The process of the client's protection domain on this node, for process atomics: its
    /// mapped pages by page number (`None`: no such process, `NoProcess`).
    pub process: Option<BTreeMap<u64, Box<[u8; PAGE_SIZE as usize]>>>,
}

impl Service {
    fn new(node: u16) -> Self {
        Self { node, next_page: 1, ..Self::default() }
    }

    pub fn pages(&self) -> usize {
        self.pages.len()
    }

    /// Gives this node a process of the client's PD with a zeroed page mapped at `va`'s page.
    pub fn map_process_page(&mut self, va: u64) {
        let pages = self.process.get_or_insert_with(BTreeMap::new);
        pages.entry(va / PAGE_SIZE).or_insert_with(|| Box::new([0; PAGE_SIZE as usize]));
    }

    /// The 64-bit word at `va` in the process of the client's PD here (0 if unmapped).
    pub fn process_word(&self, va: u64) -> u64 {
        let page = self.process.as_ref().and_then(|p| p.get(&(va / PAGE_SIZE)));
        let at = (va % PAGE_SIZE) as usize;
        page.map_or(0, |d| u64::from_le_bytes(d[at..at + 8].try_into().unwrap()))
    }

    /// A process atomic, as the atomic service applies it (after the static checks).
    fn process_atomic(&mut self, raw: &RawRequest, op: Opcode) -> Result<u64, ErrorCode> {
        let (va_op, width) = op.va_op().ok_or(ErrorCode::BadOpcode)?;
        if width == proto::gsas::VaWidth::W32 && (raw.arg1 > u64::from(u32::MAX) || raw.arg2 > u64::from(u32::MAX)) {
            return Err(ErrorCode::BadArgument);
        }
        let pages = self.process.as_mut().ok_or(ErrorCode::NoProcess)?;
        let va = GlobalAddress::from_raw(raw.address).offset();
        let page = pages.get_mut(&(va / PAGE_SIZE)).ok_or(ErrorCode::Unmapped)?;
        let at = (va % PAGE_SIZE) as usize;
        let n = width.bytes() as usize;
        let mut b = [0; 8];
        b[..n].copy_from_slice(&page[at..at + n]);
        let old = u64::from_le_bytes(b);
        if let Some(new) = va_op.apply(old, raw.arg1, raw.arg2, width) {
            page[at..at + n].copy_from_slice(&new.to_le_bytes()[..n]);
        }
        Ok(old)
    }

    fn handle(&mut self, raw: &RawRequest) -> Vec<ReplyPacket> {
        let from = Pid::atomic_service(self.node);
        let to = raw.sender;
        let status = |r: Response| ReplyPacket { sender: from, to, opcode: raw.opcode, body: ReplyBody::Status(r) };
        match self.apply(raw) {
            Ok((result, None)) => vec![status(Response::ok(result))],
            Ok((result, Some(page))) => {
                let mut out: Vec<ReplyPacket> = (0..PAGE_CHUNKS)
                    .map(|i| {
                        let mut bytes = [0; CHUNK_BYTES];
                        bytes.copy_from_slice(&page[i * CHUNK_BYTES..(i + 1) * CHUNK_BYTES]);
                        ReplyPacket {
                            sender: from,
                            to,
                            opcode: raw.opcode,
                            body: ReplyBody::Data { index: i as u8, bytes },
                        }
                    })
                    .collect();
                out.push(status(Response::ok(result)));
                out
            }
            Err(code) => vec![status(Response::err(code))],
        }
    }

    #[allow(clippy::type_complexity)]
    fn apply(&mut self, raw: &RawRequest) -> Result<(u64, Option<Box<[u8; 4096]>>), ErrorCode> {
        static_check(raw, self.node)?;
        let who = raw.sender.owner();
        let op = Opcode::try_from(raw.opcode).map_err(|_| ErrorCode::BadOpcode)?;
        if op.va_op().is_some() {
            return self.process_atomic(raw, op).map(|old| (old, None));
        }
        let addr = GlobalAddress::from_raw(raw.address);
        let page_index = addr.page().index();
        let at = addr.page_offset() as usize;
        let value = |v: u64| Ok((v, None));
        let write = matches!(op, Opcode::Write8 | Opcode::Write32 | Opcode::Write64 | Opcode::Write128)
            || matches!(op, Opcode::Cas | Opcode::Fad | Opcode::Swap);
        let read = matches!(op, Opcode::Read8 | Opcode::Read32 | Opcode::Read64 | Opcode::Read4K | Opcode::RemoteSpawn);
        if read || write || op == Opcode::FreeSharedPage {
            let page = self.pages.get(&page_index).ok_or(ErrorCode::Unmapped)?;
            let allowed = page.owner == who
                || match (page.sharing, write, op) {
                    (_, _, Opcode::FreeSharedPage) => false,
                    (0, _, _) | (1, false, _) => true,
                    _ => false,
                };
            if !allowed {
                return Err(ErrorCode::PermissionDenied);
            }
        }
        let data = self.pages.get_mut(&page_index).map(|p| &mut p.data);
        let word = |d: &[u8; 4096], n: usize| {
            let mut b = [0; 8];
            b[..n].copy_from_slice(&d[at..at + n]);
            u64::from_le_bytes(b)
        };
        match (op, data) {
            (Opcode::Read8, Some(d)) => value(word(d, 1)),
            (Opcode::Read32, Some(d)) => value(word(d, 4)),
            (Opcode::Read64, Some(d)) => value(word(d, 8)),
            (Opcode::Read4K, Some(d)) => Ok((PAGE_SIZE, Some(d.clone()))),
            (Opcode::Write8, Some(d)) => {
                d[at] = raw.arg1 as u8;
                value(0)
            }
            (Opcode::Write32, Some(d)) => {
                d[at..at + 4].copy_from_slice(&(raw.arg1 as u32).to_le_bytes());
                value(0)
            }
            (Opcode::Write64, Some(d)) => {
                d[at..at + 8].copy_from_slice(&raw.arg1.to_le_bytes());
                value(0)
            }
            (Opcode::Write128, Some(d)) => {
                d[at..at + 8].copy_from_slice(&raw.arg1.to_le_bytes());
                d[at + 8..at + 16].copy_from_slice(&raw.arg2.to_le_bytes());
                value(0)
            }
            (Opcode::Cas | Opcode::Fad | Opcode::Swap, Some(d)) => {
                let old = word(d, 8);
                let (new, result) = match op {
                    Opcode::Cas if old == raw.arg1 => (raw.arg2, 1),
                    Opcode::Cas => (old, 0),
                    Opcode::Fad => (old.wrapping_add(raw.arg1), old),
                    _ => (raw.arg1, old),
                };
                d[at..at + 8].copy_from_slice(&new.to_le_bytes());
                value(result)
            }
            (Opcode::RemoteSpawn, Some(d)) => {
                let name = parse_description(&d[..]).map_err(|_| ErrorCode::BadArgument)?;
                self.spawned.push((name.into(), raw.arg1));
                value(self.spawned.len() as u64)
            }
            (Opcode::AllocSharedPage, _) => {
                let first = self.next_page;
                for i in 0..raw.arg1 {
                    let head = (i == 0).then_some(raw.arg1);
                    let page = Page { owner: who, sharing: raw.arg2, head, data: Box::new([0; 4096]) };
                    self.pages.insert(first + i, page);
                }
                self.next_page += raw.arg1;
                value(GlobalAddress::new(self.node, first * PAGE_SIZE).unwrap().raw())
            }
            (Opcode::FreeSharedPage, _) => {
                let pages = self.pages[&page_index].head.ok_or(ErrorCode::BadArgument)?;
                (0..pages).for_each(|i| drop(self.pages.remove(&(page_index + i))));
                value(pages)
            }
            (Opcode::Notify, _) => {
                self.notified.push((raw.sender, Notification::from_raw(raw.arg1).unwrap()));
                value(0)
            }
            _ => Err(ErrorCode::Unmapped),
        }
    }
}

pub struct FakeNet {
    pub me: Pid,
    pub mif: VecDeque<u128>,
    pub depth: usize,
    /// Replies the service could not deliver yet (it retries when the mailbox has room).
    backlog: VecDeque<[u8; PACKET_BYTES]>,
    pub services: Vec<Service>,
    pub now: u64,
    pub sent: Vec<RawRequest>,
    /// NACK this many packets before accepting.
    pub nack: u32,
    /// Packets that arrive in the mailbox before the next reply.
    pub inject: Vec<[u8; PACKET_BYTES]>,
    /// Lose the replies to this many requests.
    pub lose: u32,
    /// Echo this opcode in the next reply.
    pub wrong_opcode: Option<u8>,
    /// Send the next reply twice.
    pub duplicate: bool,
    /// Swap Read4K chunks 3 and 4.
    pub reorder: bool,
    /// Nodes that are gone: packets to them are `Unreachable`.
    pub dead: Vec<u16>,
    /// The node that dies once the next request to it has been accepted (its reply never
    /// comes).
    pub dies_after_accepting: Option<u16>,
    /// Waits that ended because the awaited node was gone.
    pub unreachable_waits: u32,
}

impl FakeNet {
    pub fn new(nodes: u16) -> Self {
        Self {
            me: Self::ME,
            mif: VecDeque::new(),
            depth: 512,
            backlog: VecDeque::new(),
            services: (0..nodes).map(Service::new).collect(),
            now: 1,
            sent: Vec::new(),
            nack: 0,
            inject: Vec::new(),
            lose: 0,
            wrong_opcode: None,
            duplicate: false,
            reorder: false,
            dead: Vec::new(),
            dies_after_accepting: None,
            unreachable_waits: 0,
        }
    }

    /// Delivers what fits into the mailbox, whole packets only.
    fn pump(&mut self) {
        while self.mif.len() + 2 <= self.depth {
            let Some(packet) = self.backlog.pop_front() else { break };
            self.mif.extend(words128(&packet));
        }
    }

    /// The client's PID.
    pub const ME: Pid = match Pid::new(0, 5, 1, 3) {
        Ok(pid) => pid,
        Err(_) => panic!("a valid PID"),
    };

    /// A packet from `sender` (any PID: a test may pose as anyone on the wire) for the client.
    pub fn packet_from(sender: Pid, opcode: u8, response: Response) -> [u8; PACKET_BYTES] {
        Self::packet_for(Self::ME, sender, opcode, response)
    }

    /// A packet from `sender` naming `to` as its requester.
    pub fn packet_for(to: Pid, sender: Pid, opcode: u8, response: Response) -> [u8; PACKET_BYTES] {
        ReplyPacket { sender, to, opcode, body: ReplyBody::Status(response) }.encode()
    }
}

impl Link for FakeNet {
    fn send(&mut self, payload: [u128; 2], destination: u64) -> Result<Sent, Error> {
        let d = Destination::decode(destination);
        if d.window != WINDOW || d.page_offset != 0 || d.interface != 0 {
            return Ok(Sent::Illegal);
        }
        if self.dead.contains(&u16::from(d.node)) {
            return Ok(Sent::Unreachable);
        }
        if self.nack > 0 {
            self.nack -= 1;
            return Ok(Sent::Nack);
        }
        if self.dies_after_accepting == Some(u16::from(d.node)) {
            self.dies_after_accepting = None;
            self.dead.push(u16::from(d.node));
            return Ok(Sent::Ack);
        }
        let raw = RawRequest::from_bytes(&assemble(self.me.raw(), payload[0], payload[1]));
        self.sent.push(raw);
        let mut replies = self.services[usize::from(d.node)].handle(&raw);
        if let Some(op) = self.wrong_opcode.take() {
            replies.iter_mut().for_each(|r| r.opcode = op);
        }
        if self.reorder && replies.len() > 5 {
            replies.swap(3, 4);
        }
        if std::mem::take(&mut self.duplicate) {
            replies.extend(replies.clone());
        }
        self.backlog.extend(self.inject.drain(..));
        if self.lose > 0 {
            self.lose -= 1;
        } else {
            self.backlog.extend(replies.iter().map(ReplyPacket::encode));
        }
        self.pump();
        Ok(Sent::Ack)
    }

    fn count(&mut self) -> u32 {
        self.mif.len() as u32
    }

    fn depth(&mut self) -> u32 {
        self.depth as u32
    }

    fn dequeue(&mut self) -> u128 {
        let word = self.mif.pop_front().unwrap_or(EMPTY_SENTINEL);
        self.pump();
        word
    }

    fn read_packet(&mut self) -> Option<[u128; 2]> {
        if self.mif.len() < 2 {
            return None;
        }
        Some([self.dequeue(), self.dequeue()])
    }

    fn wait(&mut self, words: u32, timeout_us: u64, from: u16) -> Result<(), Error> {
        if self.mif.len() >= words as usize {
            return Ok(());
        }
        if self.dead.contains(&from) {
            self.unreachable_waits += 1;
            return Err(Error::NodeUnreachable(from));
        }
        self.now += timeout_us;
        Err(Error::Timeout)
    }

    fn now_us(&mut self) -> u64 {
        self.now += 1;
        self.now
    }

    fn backoff(&mut self, attempt: u32) {
        self.now += 10 << attempt.min(6);
    }
}

/// The R5 and the engine of one node, faked: on `wait` it serves every WQE, last first (so
/// completions come out of order), copying between host addresses; tags in `fail` end with
/// FaultRemote. It can also post a stray CQE first.
pub struct FakeR5 {
    /// The queue set it serves (zeroed, leaked: a process's lives as long as the process).
    pub set: &'static QueueSet,
    /// Doorbells rung.
    pub rings: u32,
    /// Tags of the transfers that end with FaultRemote (and move nothing).
    pub fail: Vec<u64>,
    /// A completion for this tag, posted before the real ones at the next `wait`.
    pub stray: Option<u64>,
}

impl FakeR5 {
    /// An R5 over a fresh (zeroed) queue set, with no failures or strays to come.
    pub fn new() -> Self {
        // SAFETY: zero bytes are a fresh queue set.
        let set: &'static QueueSet = Box::leak(Box::new(unsafe { core::mem::zeroed() }));
        Self { set, rings: 0, fail: Vec::new(), stray: None }
    }
}

impl Default for FakeR5 {
    fn default() -> Self {
        Self::new()
    }
}

impl Doorbell for FakeR5 {
    fn ring(&mut self, _head: u32) {
        self.rings += 1;
    }

    fn engine_counts(&self) -> (u32, u32) {
        (0, 0)
    }

    fn wait(&mut self, _timeout_us: u64) -> Result<(), Error> {
        // SAFETY: the fake is the WQ's consumer and the CQ's producer.
        let (mut wq, mut cq) = unsafe { (self.set.wq.consumer(), self.set.cq.producer()) };
        if let Some(tag) = self.stray.take() {
            let c = Cqe::Local { tag, wq_index: 0, len: 1, status: CqeStatus::Ok, node: 0 };
            cq.push(c.encode()).unwrap();
        }
        let mut taken: Vec<(u32, RawWqe)> = Vec::new();
        while let Some(raw) = wq.pop() {
            taken.push((self.set.wq.consumed() - 1, raw));
        }
        if taken.is_empty() {
            return Err(Error::Timeout);
        }
        for (wq_index, raw) in taken.into_iter().rev() {
            let w = Wqe::decode(&raw).unwrap();
            let (from, to) = match w.direction {
                Direction::Write => (w.local, w.remote),
                Direction::Read => (w.remote, w.local),
            };
            let failed = self.fail.contains(&w.tag);
            if !failed {
                // SAFETY: the tests give host addresses of live buffers as both ends.
                unsafe { core::ptr::copy(from as *const u8, to as *mut u8, w.len as usize) };
            }
            let status = if failed { CqeStatus::FaultRemote } else { CqeStatus::Ok };
            let len = if failed { 0 } else { w.len };
            let c = Cqe::Local { tag: w.tag, wq_index, len, status, node: w.node };
            cq.push(c.encode()).unwrap();
        }
        Ok(())
    }
}

/// `MAP` and `UNMAP` on the host heap: each region is a zeroed block of whole pages whose host
/// address stands for its virtual address (so [`FakeR5`] can copy into it).
#[derive(Default)]
pub struct FakeRegions {
    blocks: Vec<Box<[u8]>>,
    /// Refuse every `map`, as the kernel does when no room is left (`BadArgument`).
    pub full: bool,
}

impl FakeRegions {
    /// The regions mapped and not unmapped: (address, length).
    pub fn live(&self) -> Vec<(u64, u64)> {
        self.blocks.iter().map(|b| (b.as_ptr() as u64, b.len() as u64)).collect()
    }
}

impl Regions for FakeRegions {
    fn map(&mut self, len: u64) -> Result<u64, Error> {
        if len == 0 || self.full {
            return Err(proto::syscall::Error::BadArgument.into());
        }
        let bytes = len.next_multiple_of(PAGE_SIZE) as usize;
        let block = vec![0u8; bytes].into_boxed_slice();
        let at = block.as_ptr() as u64;
        self.blocks.push(block);
        Ok(at)
    }

    fn unmap(&mut self, addr: u64, len: u64) -> Result<u64, Error> {
        let whole = len.next_multiple_of(PAGE_SIZE);
        let found = self.blocks.iter().position(|b| b.as_ptr() as u64 == addr && b.len() as u64 == whole);
        let index = found.ok_or(Error::from(proto::syscall::Error::BadArgument))?;
        self.blocks.swap_remove(index);
        Ok(whole / PAGE_SIZE)
    }
}
