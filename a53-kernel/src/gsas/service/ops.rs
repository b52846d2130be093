//! The operations (seed §2.2.3 list, §2.3 semantics). Requests reach here after
//! `proto::gsas::static_check`: node, alignment and argument shape are already right.

use alloc::boxed::Box;
use alloc::vec::Vec;

use super::{AtomicService, Done, Env, MemoryFault, SpawnError, SpawnRequest, Width};
use crate::gsas::mailbox::DeliverError;
use crate::gsas::softmmu::{Access, Chunk, PageEntry, PageHasher, Sharing};
use proto::gsas::{
    DomainId, ErrorCode, GlobalPage, Notification, Opcode, PAGE_SIZE, PAGES_PER_NODE, Request, parse_description,
};

impl From<MemoryFault> for ErrorCode {
    fn from(_: MemoryFault) -> Self {
        ErrorCode::MemoryFault
    }
}

impl<H: PageHasher> AtomicService<H> {
    #[inline]
    pub(super) fn apply(&mut self, r: &Request, env: &mut Env<'_>) -> Result<Done, ErrorCode> {
        let who = r.sender.owner();
        let value = |v: u64| Ok(Done::Value(v));
        match r.opcode {
            Opcode::Read8 | Opcode::Read32 | Opcode::Read64 => {
                let (pa, _) = self.resolve(r.address, who, Access::Read)?;
                value(env.memory.load(pa, width(r.opcode))?)
            }
            Opcode::Read4K => {
                let (_, entry) = self.resolve(r.address, who, Access::Read)?;
                let mut page = Box::new([0; PAGE_SIZE as usize]);
                env.memory.read_frame(entry.frame, &mut page)?;
                Ok(Done::Page(page))
            }
            Opcode::Write8 | Opcode::Write32 | Opcode::Write64 => {
                let (pa, _) = self.resolve(r.address, who, Access::Write)?;
                env.memory.store(pa, width(r.opcode), r.arg1)?;
                value(0)
            }
            Opcode::Write128 => {
                let (pa, _) = self.resolve(r.address, who, Access::Write)?;
                env.memory.store128(pa, (u128::from(r.arg2) << 64) | u128::from(r.arg1))?;
                value(0)
            }
            Opcode::Cas => {
                let (pa, _) = self.resolve(r.address, who, Access::Write)?;
                value(u64::from(env.memory.compare_exchange64(pa, r.arg1, r.arg2)?))
            }
            Opcode::Fad => {
                let (pa, _) = self.resolve(r.address, who, Access::Write)?;
                value(env.memory.fetch_add64(pa, r.arg1)?)
            }
            Opcode::Swap => {
                let (pa, _) = self.resolve(r.address, who, Access::Write)?;
                value(env.memory.swap64(pa, r.arg1)?)
            }
            Opcode::AllocSharedPage => self.alloc(who, r.arg1, r.arg2, env).map(Done::Value),
            Opcode::FreeSharedPage => self.free(who, r.address.page(), env).map(Done::Value),
            Opcode::RemoteSpawn => {
                let (_, entry) = self.resolve(r.address, who, Access::Read)?;
                let mut page = Box::new([0; PAGE_SIZE as usize]);
                env.memory.read_frame(entry.frame, &mut page)?;
                let image = parse_description(&page[..]).map_err(|_| ErrorCode::BadArgument)?;
                let request = SpawnRequest { parent: r.sender, image, argument: r.arg1 };
                match env.spawner.spawn(&request) {
                    Ok(handle) => value(handle.get()),
                    Err(SpawnError::UnknownImage | SpawnError::NoResources) => Err(ErrorCode::SpawnFailed),
                }
            }
            Opcode::Notify => {
                let n = Notification::from_raw(r.arg1).map_err(|_| ErrorCode::BadArgument)?;
                match env.notifications.notify(r.sender, n) {
                    Ok(()) => value(0),
                    Err(DeliverError::NoReceiver) => Err(ErrorCode::NoReceiver),
                    Err(DeliverError::QueueFull) => Err(ErrorCode::QueueFull),
                    Err(DeliverError::Forbidden) => Err(ErrorCode::PermissionDenied),
                }
            }
            Opcode::VaFetch64
            | Opcode::VaSet64
            | Opcode::VaCompareSwap64
            | Opcode::VaSwap64
            | Opcode::VaFetchAdd64
            | Opcode::VaFetchAnd64
            | Opcode::VaFetchOr64
            | Opcode::VaFetchXor64
            | Opcode::VaFetch32
            | Opcode::VaSet32
            | Opcode::VaCompareSwap32
            | Opcode::VaSwap32
            | Opcode::VaFetchAdd32
            | Opcode::VaFetchAnd32
            | Opcode::VaFetchOr32
            | Opcode::VaFetchXor32 => {
                let (op, width) = r.opcode.va_op().ok_or(ErrorCode::BadOpcode)?;
                super::process_atomics::serve(r, op, width, env).map(Done::Value)
            }
        }
    }

    /// allocSharedPage (seed §2.2.7): `pages` consecutive pages owned by `owner`, zeroed, with
    /// sharing mode `flags` (choice: the seed's Argument 2 is unused; 0 = shared with all, the
    /// seed's behaviour). All or nothing: on any failure every frame taken goes back.
    fn alloc(&mut self, owner: DomainId, pages: u64, flags: u64, env: &mut Env<'_>) -> Result<u64, ErrorCode> {
        // In range: `static_check` refused the rest.
        let sharing = Sharing::from_bits(flags).ok_or(ErrorCode::BadArgument)?;
        let end = self.next_page.checked_add(pages).ok_or(ErrorCode::OutOfMemory)?;
        if end > PAGES_PER_NODE || self.mmu.free_slots() < pages as usize {
            return Err(ErrorCode::OutOfMemory);
        }
        let first = GlobalPage::new(self.node, self.next_page).map_err(|_| ErrorCode::OutOfMemory)?;
        let mut frames = Vec::with_capacity(pages as usize);
        let taken = (0..pages).try_for_each(|_| {
            let frame = env.frames.allocate().ok_or(ErrorCode::OutOfMemory)?;
            frames.push(frame);
            env.memory.zero_frame(frame).map_err(ErrorCode::from)
        });
        if let Err(code) = taken {
            frames.into_iter().for_each(|f| env.frames.free(f));
            return Err(code);
        }
        for (i, &frame) in frames.iter().enumerate() {
            let chunk = if i == 0 { Chunk::Head { pages: pages as u32 } } else { Chunk::Member };
            let entry = PageEntry { frame, owner, sharing, chunk };
            if first.checked_add(i as u64).is_none_or(|page| self.mmu.insert(page, entry).is_err()) {
                // Unreachable after the capacity checks above; undo rather than trust that.
                for page in (0..i as u64).filter_map(|j| first.checked_add(j)) {
                    let _ = self.mmu.remove(page);
                }
                frames.iter().for_each(|&f| env.frames.free(f));
                return Err(ErrorCode::OutOfMemory);
            }
        }
        self.next_page = end;
        Ok(first.base().raw())
    }

    /// freeSharedPage (seed §2.3.2): the whole allocation that starts at `page`, owner only.
    /// Returns the number of pages freed.
    fn free(&mut self, who: DomainId, page: GlobalPage, env: &mut Env<'_>) -> Result<u64, ErrorCode> {
        let entry = *self.mmu.lookup(page).ok_or(ErrorCode::Unmapped)?;
        if entry.owner != who {
            return Err(ErrorCode::PermissionDenied);
        }
        let Chunk::Head { pages } = entry.chunk else {
            return Err(ErrorCode::BadArgument);
        };
        Ok(self.release_chunk(page, pages, env.frames))
    }

    fn release_chunk(&mut self, first: GlobalPage, pages: u32, frames: &mut dyn super::FrameAllocator) -> u64 {
        let mut freed = 0;
        for i in 0..u64::from(pages) {
            if let Some(Ok(entry)) = first.checked_add(i).map(|p| self.mmu.remove(p)) {
                frames.free(entry.frame);
                freed += 1;
            }
        }
        freed
    }

    /// Frees every allocation `owner` holds (for a kernel that reclaims at process exit; the
    /// seed leaks them, §2.3.2). Returns the number of pages freed.
    pub fn release_domain(&mut self, owner: DomainId, frames: &mut dyn super::FrameAllocator) -> u64 {
        let heads: Vec<(GlobalPage, u32)> = self
            .mmu
            .iter()
            .filter_map(|(p, e)| match e.chunk {
                Chunk::Head { pages } if e.owner == owner => Some((p, pages)),
                _ => None,
            })
            .collect();
        heads.into_iter().map(|(p, n)| self.release_chunk(p, n, frames)).sum()
    }
}

fn width(op: Opcode) -> Width {
    match op {
        Opcode::Read8 | Opcode::Write8 => Width::U8,
        Opcode::Read32 | Opcode::Write32 => Width::U32,
        _ => Width::U64,
    }
}
