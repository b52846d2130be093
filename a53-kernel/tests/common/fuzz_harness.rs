//! Shared by `tests/fuzz.rs` (short proptest run) and `examples/fuzz_service.rs` (long run):
//! random packets from random senders into the atomic service over the fakes, and the checks
//! every answer must pass.

use a53_kernel::gsas::fakes::FakeBackends;
use a53_kernel::gsas::mailbox::DeliverError;
use a53_kernel::gsas::service::{AtomicService, Outcome, ServiceConfig};
use a53_kernel::gsas::softmmu::{Frame, Sharing};
use proto::gsas::{
    AddressUse, DomainId, ErrorCode, GlobalAddress, Opcode, PAGE_CHUNKS, PAGE_SIZE, Pid, RawRequest, ReplyBody,
    ReplyPacket,
};

pub const NODE: u16 = 1;
/// The domain whose pages no random sender may change.
pub const VICTIM: DomainId = DomainId { node: NODE, domain: 100 };

/// Outcome counters, for the long run's report.
#[derive(Debug, Default)]
pub struct Tally {
    pub ok: u64,
    pub dropped: u64,
    pub errors: [u64; 16],
}

pub struct Harness {
    svc: AtomicService,
    be: FakeBackends,
    /// Victim pages that must never change: (address, frame, contents).
    protected: Vec<(u64, Frame, Vec<u8>)>,
    /// Page addresses random requests aim at.
    pub targets: Vec<u64>,
}

impl Harness {
    pub fn new() -> Self {
        let config = ServiceConfig { node: NODE, max_alloc_pages: 8, mmu_bucket_bits: 4, mmu_capacity: 48 };
        let mut h = Self {
            svc: AtomicService::new(config).unwrap(),
            be: FakeBackends::new(16),
            protected: Vec::new(),
            targets: Vec::new(),
        };
        let victim = Pid::new(NODE, VICTIM.domain, 0, 9).unwrap();
        let base = GlobalAddress::new(NODE, 0).unwrap().raw();
        let mut pages = Vec::new();
        for (count, sharing) in [(2, Sharing::Private), (1, Sharing::ReadOnly), (1, Sharing::Shared)] {
            let req = RawRequest {
                sender: victim,
                opcode: Opcode::AllocSharedPage.as_u8(),
                address: base,
                arg1: count,
                arg2: sharing.bits(),
                ..RawRequest::default()
            };
            let Outcome::Reply(r) = h.svc.handle(&req.to_bytes(), &mut h.be.env()) else { panic!() };
            let first = r.status().result;
            for i in 0..count {
                pages.push((first + i * PAGE_SIZE, sharing));
            }
        }
        for (i, &(addr, sharing)) in pages.iter().enumerate() {
            for w in 0..8u64 {
                let req = RawRequest {
                    sender: victim,
                    opcode: Opcode::Write64.as_u8(),
                    address: addr + 8 * w * 61,
                    arg1: 0x5eed_0000 + (i as u64) * 8 + w,
                    ..RawRequest::default()
                };
                h.svc.handle(&req.to_bytes(), &mut h.be.env());
            }
            let frame = h.svc.mmu().translate(GlobalAddress::from_raw(addr)).unwrap().1.frame;
            if sharing == Sharing::Shared {
                // "worker\0": a RemoteSpawn on this page succeeds until someone overwrites it.
                let req = RawRequest {
                    sender: victim,
                    opcode: Opcode::Write64.as_u8(),
                    address: addr,
                    arg1: u64::from_le_bytes(*b"worker\0\0"),
                    ..RawRequest::default()
                };
                h.svc.handle(&req.to_bytes(), &mut h.be.env());
            } else {
                h.protected.push((addr, frame, h.be.frame(frame).to_vec()));
            }
            h.targets.push(addr);
        }
        h
    }

    /// A packet from eight random words: a quarter fully random, the rest shaped like requests
    /// (known opcodes, addresses near the mapped pages, small arguments) so that they get past
    /// the first checks.
    pub fn packet(&mut self, w: [u64; 8]) -> [u8; 32] {
        self.be.sink.refuse = match w[7] % 16 {
            0 => Some(DeliverError::NoReceiver),
            1 => Some(DeliverError::QueueFull),
            2 => Some(DeliverError::Forbidden),
            _ => None,
        };
        if w[0].is_multiple_of(4) {
            let mut b = [0; 32];
            for (chunk, x) in b.chunks_exact_mut(8).zip(&w[1..5]) {
                chunk.copy_from_slice(&x.to_le_bytes());
            }
            return b;
        }
        let opcode = if w[1].is_multiple_of(8) {
            (w[1] >> 8) as u8
        } else {
            Opcode::ALL[((w[1] >> 8) % Opcode::ALL.len() as u64) as usize].as_u8()
        };
        let reserved = if w[1] % 16 == 1 { (w[1] >> 16) as u8 } else { 0 };
        let node = if w[2].is_multiple_of(8) { (w[2] >> 48) as u16 } else { NODE };
        let domain = match w[2] % 5 {
            0 => (w[2] >> 32) as u16,
            d => d as u16,
        };
        let domain = if DomainId::new(node, domain) == VICTIM { domain + 1 } else { domain };
        let sender = Pid::new(node, domain, ((w[2] >> 8) % 1024) as u16, ((w[2] >> 20) % 64) as u8).unwrap();
        let known = Opcode::try_from(opcode).ok();
        let node_only = known.is_some_and(|op| op.address_use() == AddressUse::NodeOnly);
        let page = match w[3] % 8 {
            0 => w[3] >> 2,
            _ if node_only => GlobalAddress::new(NODE, 0).unwrap().raw(),
            1 | 2 => GlobalAddress::new(NODE, ((w[3] >> 8) % 24) * PAGE_SIZE).unwrap().raw(),
            _ => self.targets[((w[3] >> 8) as usize) % self.targets.len()],
        };
        let offset = match (w[3] >> 4) % 4 {
            0 | 1 => 0,
            2 => ((w[4] >> 32) % PAGE_SIZE) & !7,
            _ => (w[4] >> 32) % PAGE_SIZE,
        };
        let (uses1, uses2) = known.map_or((true, true), Opcode::uses_args);
        let arg1 = match w[5] % 6 {
            _ if !uses1 && !w[5].is_multiple_of(8) => 0,
            0 => 0,
            1 => w[4] % 10,
            2 => w[4] & 0xff,
            3 => (w[4] % 16) << 60 | w[6] >> 4,
            _ => w[4],
        };
        let arg2 = match w[6] % 4 {
            _ if !uses2 && !w[6].is_multiple_of(8) => 0,
            0 | 1 => 0,
            2 => w[7] % 4,
            _ => w[7],
        };
        RawRequest { sender, reserved, opcode, address: page.wrapping_add(offset), arg1, arg2 }.to_bytes()
    }

    /// Runs one packet; `Err` describes the first broken rule.
    pub fn run(&mut self, packet: &[u8; 32], tally: &mut Tally) -> Result<(), String> {
        let raw = RawRequest::from_bytes(packet);
        let outcome = self.svc.handle(packet, &mut self.be.env());
        match outcome {
            Outcome::Dropped(_) => {
                if raw.sender.interface() != 0 {
                    return Err("dropped a request from a thread interface".into());
                }
                tally.dropped += 1;
            }
            Outcome::Reply(r) => {
                if raw.sender.interface() == 0 {
                    return Err("answered interface 0".into());
                }
                if r.to() != raw.sender {
                    return Err(format!("reply to {:?}, sender {:?}", r.to(), raw.sender));
                }
                let s = r.status();
                let read4k = raw.opcode == Opcode::Read4K.as_u8() && s.error.is_none();
                let want = if read4k { PAGE_CHUNKS + 1 } else { 1 };
                if r.len() != want || r.packets().count() != want {
                    return Err(format!("{} replies, want {want}", r.len()));
                }
                for (i, p) in r.packets().enumerate() {
                    if ReplyPacket::decode(&p.encode()) != Ok(p) {
                        return Err(format!("reply {i} does not round-trip: {p:?}"));
                    }
                    if p.sender != Pid::atomic_service(NODE) || p.opcode != raw.opcode {
                        return Err(format!("reply {i} header {p:?}"));
                    }
                    let ok = match p.body {
                        ReplyBody::Data { index, .. } => i < PAGE_CHUNKS && usize::from(index) == i,
                        ReplyBody::Status(st) => i == want - 1 && st == s,
                    };
                    if !ok {
                        return Err(format!("reply {i} out of place: {p:?}"));
                    }
                }
                match s.error {
                    None => tally.ok += 1,
                    Some(e) => {
                        if s.result != 0 {
                            return Err(format!("error {e:?} with result {:#x}", s.result));
                        }
                        if raw.opcode == Opcode::Read4K.as_u8() && e == ErrorCode::BadOpcode {
                            return Err("Read4K is a known opcode".into());
                        }
                        tally.errors[e.as_u64() as usize] += 1;
                    }
                }
                if read4k && s.result != PAGE_SIZE {
                    return Err("Read4K result is not 4096".into());
                }
            }
        }
        for (addr, frame, bytes) in &self.protected {
            let now = self.svc.mmu().translate(GlobalAddress::from_raw(*addr)).map(|(_, e)| (e.frame, e.owner));
            if now != Some((*frame, VICTIM)) {
                return Err(format!("victim page {addr:#x} remapped: {now:?}"));
            }
            if self.be.frame(*frame)[..] != bytes[..] {
                return Err(format!("victim page {addr:#x} changed"));
            }
        }
        if self.be.frames.bad_frees != 0 {
            return Err("a frame was freed twice".into());
        }
        Ok(())
    }
}
