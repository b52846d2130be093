//! The typed operations of the seed's API (D3.6 §2.3) on a [`Gsas`] client: each is one
//! request (Read4K: one request, 257 replies; remote spawn: alloc, writes, spawn, free) whose
//! result is checked for what it can be.

use proto::gsas::{
    EMPTY_THREAD_ARGUMENT, ErrorCode, GlobalAddress, MAX_SPAWN_NAME, Notification, OFFSET_BITS, Opcode, PAGE_CHUNKS,
    PAGE_SIZE, ReplyBody, Response, Sharing, VaOp, VaWidth, va_opcode, write_description,
};

use crate::check::static_check;
use crate::client::{Gsas, Timer, offset, request};
use crate::error::{Error, ProtocolError};
use crate::link::Link;

impl<L: Link> Gsas<L> {
    /// `pages` (1..=256) consecutive zeroed pages on `node`, owned by this process, shared as
    /// `sharing`; returns the address of the first (seed `allocSharedPage`).
    pub fn alloc_shared(&mut self, pages: u16, node: u16, sharing: Sharing) -> Result<GlobalAddress, Error> {
        let base = node_base(node);
        let raw = self.call(Opcode::AllocSharedPage, base, u64::from(pages), sharing.bits())?;
        let address = GlobalAddress::from_raw(raw);
        if address.node() != node || address.offset() == 0 || !address.is_aligned(PAGE_SIZE) {
            return Err(ProtocolError::BadResult(raw).into());
        }
        Ok(address)
    }

    /// Frees the allocation that starts at `address`; returns the number of pages freed.
    pub fn free_shared(&mut self, address: GlobalAddress) -> Result<u64, Error> {
        self.call(Opcode::FreeSharedPage, address, 0, 0)
    }

    pub fn read8(&mut self, address: GlobalAddress) -> Result<u8, Error> {
        let v = self.call(Opcode::Read8, address, 0, 0)?;
        u8::try_from(v).map_err(|_| ProtocolError::BadResult(v).into())
    }

    pub fn read32(&mut self, address: GlobalAddress) -> Result<u32, Error> {
        let v = self.call(Opcode::Read32, address, 0, 0)?;
        u32::try_from(v).map_err(|_| ProtocolError::BadResult(v).into())
    }

    pub fn read64(&mut self, address: GlobalAddress) -> Result<u64, Error> {
        self.call(Opcode::Read64, address, 0, 0)
    }

    pub fn write8(&mut self, address: GlobalAddress, value: u8) -> Result<(), Error> {
        self.call(Opcode::Write8, address, u64::from(value), 0).map(drop)
    }

    pub fn write32(&mut self, address: GlobalAddress, value: u32) -> Result<(), Error> {
        self.call(Opcode::Write32, address, u64::from(value), 0).map(drop)
    }

    pub fn write64(&mut self, address: GlobalAddress, value: u64) -> Result<(), Error> {
        self.call(Opcode::Write64, address, value, 0).map(drop)
    }

    /// Writes 16 bytes at `address` (8-aligned, not crossing the page end) in one atomic step:
    /// the low 64 bits at `address`, the high ones at `address + 8`.
    pub fn write128(&mut self, address: GlobalAddress, value: u128) -> Result<(), Error> {
        self.call(Opcode::Write128, address, value as u64, (value >> 64) as u64).map(drop)
    }

    /// Stores `new` if the word holds `expected`; returns whether it did (seed §2.3.4).
    pub fn cas64(&mut self, address: GlobalAddress, expected: u64, new: u64) -> Result<bool, Error> {
        match self.call(Opcode::Cas, address, expected, new)? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(ProtocolError::BadResult(v).into()),
        }
    }

    /// Adds `addend` (wrapping); returns the old value.
    pub fn fad64(&mut self, address: GlobalAddress, addend: i64) -> Result<u64, Error> {
        self.call(Opcode::Fad, address, addend as u64, 0)
    }

    /// Stores `new`; returns the old value.
    pub fn swap64(&mut self, address: GlobalAddress, new: u64) -> Result<u64, Error> {
        self.call(Opcode::Swap, address, new, 0)
    }

    /// Reads the page at `address` atomically into `page` (256 data replies, then the status
    /// reply); returns the bytes read, 4096.
    pub fn read4k(&mut self, address: GlobalAddress, page: &mut [u8; PAGE_SIZE as usize]) -> Result<usize, Error> {
        let raw = request(Opcode::Read4K, address, 0, 0);
        let node = address.node();
        static_check(&raw, node).map_err(Error::Local)?;
        if self.resync {
            self.drain();
        }
        let mut timer = Timer::new(self.timeout_us);
        self.send(node, &raw, &mut timer)?;
        let result = self.read4k_replies(node, page, &mut timer);
        self.settle(result)
    }

    fn read4k_replies(&mut self, node: u16, page: &mut [u8; 4096], timer: &mut Timer) -> Result<usize, Error> {
        let op = Opcode::Read4K.as_u8();
        let mut chunks = 0;
        loop {
            let reply = self.next_reply(node, timer)?;
            if reply.opcode != op {
                return Err(ProtocolError::OpcodeMismatch { expected: op, got: reply.opcode }.into());
            }
            match reply.body {
                ReplyBody::Data { index, bytes } => {
                    if usize::from(index) != chunks {
                        return Err(ProtocolError::ChunkOrder { expected: chunks, got: usize::from(index) }.into());
                    }
                    page[chunks * 16..(chunks + 1) * 16].copy_from_slice(&bytes);
                    chunks += 1;
                }
                ReplyBody::Status(Response { error: Some(code), .. }) if chunks == 0 => {
                    return Err(Error::Service(code));
                }
                ReplyBody::Status(Response { error: None, result }) if chunks == PAGE_CHUNKS && result == PAGE_SIZE => {
                    return Ok(PAGE_SIZE as usize);
                }
                ReplyBody::Status(_) => return Err(ProtocolError::MissingData { chunks }.into()),
            }
        }
    }

    /// Runs `program` (an image the target kernel registered) on node `node` with thread
    /// argument `arg`: the description goes into a private page allocated there, written with
    /// this library's writes, and the page is freed afterwards (seed §2.2.8, §2.3.5). Returns
    /// the child's nonzero handle.
    pub fn remote_spawn(&mut self, program: &str, arg: u64, node: u16) -> Result<u64, Error> {
        if arg == EMPTY_THREAD_ARGUMENT {
            return Err(Error::Local(ErrorCode::BadArgument));
        }
        let mut description = [0u8; MAX_SPAWN_NAME + 1];
        let len = write_description(program, &mut description).map_err(|_| Error::Local(ErrorCode::BadArgument))?;
        let page = self.alloc_shared(1, node, Sharing::Private)?;
        let spawned = self.spawn_from(page, &description[..len], arg);
        if self.free_shared(page).is_err() {
            self.stats.leaked += 1;
        }
        match spawned? {
            0 => Err(ProtocolError::BadResult(0).into()),
            handle => Ok(handle),
        }
    }

    fn spawn_from(&mut self, page: GlobalAddress, description: &[u8], arg: u64) -> Result<u64, Error> {
        // The page is zeroed at allocation: only the chunks holding the name need writing.
        for (i, chunk) in description.chunks(16).enumerate() {
            let mut bytes = [0; 16];
            bytes[..chunk.len()].copy_from_slice(chunk);
            self.write128(offset(page, 16 * i as u64), u128::from_le_bytes(bytes))?;
        }
        self.call(Opcode::RemoteSpawn, page, arg, 0)
    }

    /// A process atomic (`docs/hw/gsas-packets.md`, opcodes 0x50..=0x5F): `op` at `width` on the
    /// virtual address `va` in the process of this process's protection domain on `node`;
    /// returns the old value (zero-extended). Refused here, as the service would refuse it:
    /// `va` beyond 48 bits or not aligned to the width (`Local(Unaligned)` /
    /// `Local(BadArgument)`), a 32-bit form's argument above `u32::MAX` (`Local(BadArgument)`).
    /// `Service(NoProcess)`: no process of this PD on `node` (or this process has no PD).
    pub fn va_atomic(
        &mut self,
        op: VaOp,
        width: VaWidth,
        node: u16,
        va: u64,
        arg1: u64,
        arg2: u64,
    ) -> Result<u64, Error> {
        let address = GlobalAddress::new(node, va).map_err(|_| Error::Local(ErrorCode::BadArgument))?;
        let (uses1, uses2) = va_opcode(op, width).uses_args();
        let (arg1, arg2) = (if uses1 { arg1 } else { 0 }, if uses2 { arg2 } else { 0 });
        if width == VaWidth::W32 && (arg1 > u64::from(u32::MAX) || arg2 > u64::from(u32::MAX)) {
            return Err(Error::Local(ErrorCode::BadArgument));
        }
        let old = self.call(va_opcode(op, width), address, arg1, arg2)?;
        if width == VaWidth::W32 && old > u64::from(u32::MAX) {
            return Err(ProtocolError::BadResult(old).into());
        }
        Ok(old)
    }

    /// Sends notification `n` to node `node`'s mailbox service (opcode Notify, 0x40).
    pub fn notify(&mut self, node: u16, n: Notification) -> Result<(), Error> {
        let base = node_base(node);
        self.call(Opcode::Notify, base, n.raw(), 0).map(drop)
    }
}

/// Offset 0 of node `node`: the address of requests that only name a node (alloc, Notify).
fn node_base(node: u16) -> GlobalAddress {
    GlobalAddress::from_raw(u64::from(node) << OFFSET_BITS)
}
