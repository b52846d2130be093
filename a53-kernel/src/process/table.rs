//! The process table: every process of this node, the run queue, the interfaces and the
//! protection domains held, and the decisions about them (spawn, start, exit, reap). Plain data
//! over a frame source and the packetizer's trusted interface, host-tested; the node's table,
//! behind its lock, and what starting and ending a process does around it are in `lifecycle`.
//! What the scheduler decides over the table (exceptions, wake-ups, deadlines) is in
//! `schedule`, which `scheduler` carries out on the cores.
//!
//! A process has its own address space (ASID = its slot + 1, at most [`MAX_DOMAINS`] at once),
//! one thread, one packetizer/mailbox interface pair whose PID names its GSAS domain, and a
//! protection domain (PD), the job it belongs to (`pds`). Domain numbers are never reused within
//! a boot, so a shared page owned by an exited process can never be claimed by a newer one.
//!
//! The process that holds its PD on this node also gets the PD's RDMA resources (what the RDMA
//! subsystem registered, [`PdResources`]): they are set up after the table's lock is released
//! (the SMMU and the R5 take a while) and before the process first runs, and taken down after
//! it ends and before its memory goes. The other subsystems learn of an exit through
//! `hooks::on_exit`.

mod schedule;

use super::MAX_DOMAINS;
use super::pds::{PdChoice, PdTable};
use crate::elf::{self, ElfError};
use crate::gsas::interfaces::{Grant, InterfaceTable, ThreadKey};
use crate::mm::user_space::{AddressSpace, FrameSource, SpaceError};
use alloc::boxed::Box;
use alloc::collections::VecDeque;
use boot::frame::ExceptionFrame;
use hal::packetizer::driver::Tif;
use hal::pldma::Pd;
use proto::gsas::{EMPTY_THREAD_ARGUMENT, Pid};
use proto::syscall::ARGS_MAX;
use proto::syscall::layout::{MIF_PAGE, PD_PAGE, PIF_PAGE, RDMA_QUEUE_SET};

pub use super::pds::PdRequest;
use super::state::Domains;
pub use super::state::{Exit, Rdma, Reap, State, Wait};
pub use schedule::{Next, Slice, Switch};

/// The node's processes, over the kernel's frames.
#[cfg(target_arch = "aarch64")]
pub type Process = ProcessOf<crate::mm::kernel_frames::KernelFrames>;
/// The node's table, over the kernel's frames.
#[cfg(target_arch = "aarch64")]
pub type Table = TableOf<crate::mm::kernel_frames::KernelFrames>;

pub struct ProcessOf<F: FrameSource> {
    pub domain: u16,
    pub name: &'static str,
    pub space: AddressSpace<F>,
    pub frame: ExceptionFrame,
    pub state: State,
    pub reap: Reap,
    pub argument: u64,
    /// The process's arguments as strings, each followed by a zero byte (`ARGS`).
    pub args: heapless::Vec<u8, ARGS_MAX>,
    pub grant: Grant,
    /// The protection domain (job) it belongs to; its domain number carries it.
    pub pd: Pd,
    /// Whether it holds its PD on this node (`pds`).
    pub holds_pd: bool,
    pub rdma: Rdma,
    /// Signals raised and not yet read (`SIGNALS`; bit n: signal n).
    pub signals: u64,
    /// A wake-up found it not blocked ([`TableOf::wake_waiter`]): it may be on its way to
    /// blocking (its call has looked and found nothing, and the scheduler has not yet recorded
    /// the wait). That block then does not happen, and the call runs again and finds what woke
    /// it; a wake-up that was not for it costs one extra look.
    pub wake_pending: bool,
}

impl<F: FrameSource> ProcessOf<F> {
    pub fn asid(&self) -> u16 {
        self.space.asid()
    }

    /// The physical page behind a user page the platform serves (PIF/MIF, and the PD page of a
    /// process with RDMA resources), if `va` is in one.
    pub fn interface_page(&self, va: u64) -> Option<u64> {
        let pd = (self.rdma == Rdma::Active).then_some(self.pd);
        super::state::interface_page(self.grant.index, pd, va)
    }

    /// Its PD, if it may use its RDMA queues now.
    pub fn rdma_pd(&self) -> Option<Pd> {
        (self.rdma == Rdma::Active).then_some(self.pd)
    }
}

/// What to start: the program, its arguments, who collects its exit, and its PD.
#[derive(Clone, Copy, Debug)]
pub struct Launch<'a> {
    pub name: &'a str,
    /// The thread argument (`None`: the process reads `EMPTY_THREAD_ARGUMENT`).
    pub argument: Option<u64>,
    /// String arguments, each followed by a zero byte.
    pub args: &'a [u8],
    pub reap: Reap,
    pub pd: PdRequest,
}

impl<'a> Launch<'a> {
    /// `name` with a thread argument, no string arguments, collected by the spawner, any PD.
    pub fn new(name: &'a str, argument: Option<u64>) -> Self {
        Self { name, argument, args: &[], reap: Reap::Wait, pd: PdRequest::Any }
    }
}

/// A process handle: its domain number.
pub type Handle = u64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpawnError {
    UnknownImage,
    BadImage(ElfError),
    NoSlot,
    NoInterface,
    Memory(SpaceError),
    /// All 65,535 process domain numbers of this boot have been handed out (they are never
    /// reused: pages an exited process owns still name its domain).
    DomainsExhausted,
    /// The arguments take more than `proto::syscall::ARGS_MAX` bytes.
    ArgumentsTooLong,
}

/// A spawn that the table has accepted: the process exists but has not run yet.
#[derive(Debug)]
pub struct Spawned {
    pub handle: Handle,
    pub slot: usize,
    /// Its RDMA resources, to set up before it runs.
    pub rdma: Option<Setup>,
}

pub struct TableOf<F: FrameSource> {
    pub slots: [Option<Box<ProcessOf<F>>>; MAX_DOMAINS],
    pub run_queue: VecDeque<usize>,
    domains: Domains,
    interfaces: Option<InterfaceTable>,
    /// The packetizer's trusted interface, from `gsas_node::init`: the table grants and revokes
    /// the interfaces of the processes it holds.
    tif: Option<Tif>,
    pds: PdTable,
}

/// What a spawn takes from the node, besides the table: the program, the frames, and what the
/// table cannot do itself.
pub struct SpawnEnv<'a, F: FrameSource> {
    /// The program's name and ELF image (`None`: no such program).
    pub image: Option<(&'static str, &'a [u8])>,
    pub frames: F,
    /// The PDs this node starts jobs in (`proto::rdma::domain::share`).
    pub share: u16,
    /// The board maps the interface pages and PD pages into processes (on QEMU they stay
    /// unmapped and every access is forwarded).
    pub device_pages: bool,
    /// The RDMA subsystem's resources, when the node can give any.
    pub resources: Option<&'a PdResources<F>>,
    /// Forgets every TLB entry of an ASID (a slot's ASID is reused).
    pub forget_asid: &'a dyn Fn(u16),
}

impl<F: FrameSource> TableOf<F> {
    pub const fn new() -> Self {
        Self {
            slots: [const { None }; MAX_DOMAINS],
            run_queue: VecDeque::new(),
            domains: Domains::new(),
            interfaces: None,
            tif: None,
            pds: PdTable::new(),
        }
    }

    /// Keeps the trusted interface and the node's interface table (once, at boot).
    pub fn take_tif(&mut self, tif: Tif, node: u16) {
        self.tif = Some(tif);
        self.interfaces.get_or_insert_with(|| InterfaceTable::new(node));
    }

    /// An interface pair for the kernel's own requests (domain 0), granted in the PIDT; the
    /// same one on every call.
    pub fn kernel_interface(&mut self) -> Option<Grant> {
        let key = ThreadKey { domain: proto::gsas::KERNEL_DOMAIN, thread: u32::MAX };
        let grant = self.interfaces().acquire(key).ok()?;
        self.tif.as_mut()?.grant(usize::from(grant.index), grant.pid.raw());
        Some(grant)
    }

    /// The node's interface table (node 0's until [`take_tif`](Self::take_tif) says which).
    fn interfaces(&mut self) -> &mut InterfaceTable {
        self.interfaces.get_or_insert_with(|| InterfaceTable::new(0))
    }

    pub fn process(&self, handle: Handle) -> Option<(usize, &ProcessOf<F>)> {
        self.slots
            .iter()
            .enumerate()
            .find_map(|(i, p)| p.as_deref().filter(|p| u64::from(p.domain) == handle).map(|p| (i, p)))
    }

    /// Loads the program and makes the process; it runs once [`Table::started`] says so (at
    /// once when it has no RDMA resources to set up).
    pub fn spawn(&mut self, launch: &Launch<'_>, env: SpawnEnv<'_, F>) -> Result<Spawned, SpawnError> {
        let args = heapless::Vec::from_slice(launch.args).map_err(|_| SpawnError::ArgumentsTooLong)?;
        let (image_name, elf_bytes) = env.image.ok_or(SpawnError::UnknownImage)?;
        let program = elf::parse(elf_bytes).map_err(SpawnError::BadImage)?;
        let slot = self.slots.iter().position(Option::is_none).ok_or(SpawnError::NoSlot)?;
        let PdChoice { pd, holds } = self.pds.choose(launch.pd, env.share, |pd| self.has_member(pd));
        let domain = self.domains.next(pd).ok_or(SpawnError::DomainsExhausted)?;
        if self.tif.is_none() {
            return Err(SpawnError::NoInterface);
        }
        let asid = slot as u16 + 1;
        // A slot's ASID is reused: nothing of the previous process may stay in any TLB.
        (env.forget_asid)(asid);
        let mut space = AddressSpace::new(asid, env.frames);
        let entry = space.load(&program).map_err(SpawnError::Memory)?;
        let stack_top = space.map_stack().map_err(SpawnError::Memory)?;
        let resources = env.resources.filter(|_| holds);
        if let Some(r) = resources {
            map_rdma_pages(&mut space, r, pd, env.device_pages).map_err(SpawnError::Memory)?;
            // The SMMU walks these tables without snooping the A53s' caches.
            (r.publish_tables)(&mut space);
        }
        let key = ThreadKey { domain, thread: 0 };
        let grant = self.interfaces().acquire(key).map_err(|_| SpawnError::NoInterface)?;
        if env.device_pages {
            // On hardware the interface pages are real device pages in the process's map; on
            // QEMU they stay unmapped and every access is forwarded (`forward.rs`).
            let index = u64::from(grant.index) * 0x1000;
            let mapped = space
                .map_device(PIF_PAGE, board::pl::PACKETIZER_BASE + index)
                .and_then(|()| space.map_device(MIF_PAGE, board::pl::VMBOX_BASE + index));
            if let Err(e) = mapped {
                let _ = self.interfaces().release(key);
                return Err(SpawnError::Memory(e));
            }
        }
        if let Some(tif) = self.tif.as_mut() {
            tif.grant(usize::from(grant.index), grant.pid.raw());
        }
        let frame = ExceptionFrame {
            elr: entry,
            // EL0t, interrupts unmasked.
            spsr: 0,
            sp_el0: stack_top,
            ..ExceptionFrame::default()
        };
        self.domains.take(pd);
        if holds {
            self.pds.hold(pd, slot);
        }
        let rdma = resources.map(|r| Setup { pd, ttbr0: space.dma_ttbr0(), queue_pa: (r.queue_set_pa)(pd) });
        self.slots[slot] = Some(Box::new(ProcessOf {
            domain,
            name: image_name,
            space,
            frame,
            state: State::Runnable,
            reap: launch.reap,
            argument: launch.argument.unwrap_or(EMPTY_THREAD_ARGUMENT),
            args,
            grant,
            pd,
            holds_pd: holds,
            rdma: if rdma.is_some() { Rdma::Starting } else { Rdma::None },
            signals: 0,
            wake_pending: false,
        }));
        if rdma.is_none() {
            self.run_queue.push_back(slot);
        }
        Ok(Spawned { handle: Handle::from(domain), slot, rdma })
    }

    /// The handles of the live processes of job `pd` on this node (`JOB_EXIT` ends them).
    pub fn members_of(&self, pd: Pd) -> heapless::Vec<Handle, MAX_DOMAINS> {
        self.slots
            .iter()
            .flatten()
            .filter(|p| p.pd == pd && !matches!(p.state, State::Exited(_)))
            .map(|p| Handle::from(p.domain))
            .collect()
    }

    /// Whether a process of this node (alive) belongs to `pd`.
    fn has_member(&self, pd: Pd) -> bool {
        self.slots.iter().flatten().any(|p| p.pd == pd && !matches!(p.state, State::Exited(_)))
    }

    /// The RDMA set-up of the process in `slot` is over (`ok`: it worked): it runs now, or, if
    /// it ended meanwhile, its resources are to be taken down (returned).
    pub fn started(&mut self, slot: usize, ok: bool) -> Option<Teardown> {
        let p = self.slots[slot].as_mut()?;
        let exited = matches!(p.state, State::Exited(_));
        let down = p.rdma.started(ok, exited);
        let (pd, reap) = (p.pd, p.reap);
        if !exited {
            self.run_queue.push_back(slot);
        }
        if down {
            self.pds.drain(pd);
            return Some(Teardown { slot, pd });
        }
        if exited {
            self.settle(slot, pd, reap);
        }
        None
    }

    /// The RDMA resources of the process in `slot` are down: its PD may be held again, and its
    /// slot (and memory) may go.
    pub fn torn_down(&mut self, slot: usize) {
        let Some(p) = self.slots[slot].as_mut() else { return };
        p.rdma = Rdma::None;
        let (pd, reap) = (p.pd, p.reap);
        self.pds.release(pd);
        if reap == Reap::Auto {
            self.slots[slot] = None;
        }
    }

    /// An exited process without RDMA resources: its PD goes back, and an auto-reaped slot.
    fn settle(&mut self, slot: usize, pd: Pd, reap: Reap) {
        if self.pds.holder(pd) == Some(slot) {
            self.pds.release(pd);
        }
        if reap == Reap::Auto {
            self.slots[slot] = None;
        }
    }

    /// The slot of the process that holds `pd` here.
    pub fn holder_of_pd(&self, pd: Pd) -> Option<usize> {
        self.pds.holder(pd)
    }

    /// The holders of the PDs whose bit is set in `mask`, with their slots.
    pub fn cq_holders(&self, mask: u16) -> impl Iterator<Item = (Pd, usize)> + '_ {
        self.pds.holders_in(mask)
    }

    /// The slots of the processes that may use their RDMA queues now.
    pub fn rdma_slots(&self) -> impl Iterator<Item = usize> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, p)| p.as_ref().is_some_and(|p| p.rdma == Rdma::Active))
            .map(|(i, _)| i)
    }

    /// Ends the process in `slot`: it no longer sends, its mailbox registrations go, and the
    /// slot is freed now (auto-reaped) or when its spawner collects it. A process with RDMA
    /// resources keeps its slot and memory until they are down: the caller takes them down
    /// (returned) once it has released the table.
    #[must_use]
    pub fn exit(&mut self, slot: usize, exit: Exit) -> Option<Ended> {
        let p = self.slots[slot].as_mut()?;
        if matches!(p.state, State::Exited(_)) {
            return None;
        }
        let process = ExitedProcess { slot, domain: p.domain, name: p.name, exit, reap: p.reap };
        Some(Ended { process, teardown: self.end(slot, exit) })
    }

    fn end(&mut self, slot: usize, exit: Exit) -> Option<Teardown> {
        let p = self.slots[slot].as_mut()?;
        p.state = State::Exited(exit);
        let down = p.rdma.exit();
        let (domain, index, reap, pd, rdma) = (p.domain, p.grant.index, p.reap, p.pd, p.rdma);
        if let Some(tif) = self.tif.as_mut() {
            tif.revoke(usize::from(index));
        }
        let _ = self.interfaces().release(ThreadKey { domain, thread: 0 });
        self.run_queue.retain(|&s| s != slot);
        if down {
            self.pds.drain(pd);
            return Some(Teardown { slot, pd });
        }
        if rdma == Rdma::None {
            self.settle(slot, pd, reap);
        }
        None
    }

    /// The exit of a finished process, freeing its slot (once its RDMA resources are down).
    pub fn reap(&mut self, handle: Handle) -> Option<Exit> {
        let (slot, p) = self.process(handle)?;
        let State::Exited(exit) = p.state else { return None };
        if p.rdma != Rdma::None {
            return None;
        }
        self.slots[slot] = None;
        Some(exit)
    }

    /// The domain of the process in `slot`, if one is there.
    pub fn slot_domain(&self, slot: usize) -> Option<u16> {
        self.slots.get(slot)?.as_ref().map(|p| p.domain)
    }

    /// The slot of the live process of `domain`.
    pub fn slot_of_domain(&self, domain: u16) -> Option<usize> {
        self.slots.iter().position(|p| p.as_ref().is_some_and(|p| p.domain == domain))
    }

    /// Raises `signal` in the process of `domain` (`SIGNALS` reads it); returns its slot when
    /// this ends a wait it is in, with `Interrupted` (`docs/hw/gsas-packets.md`,
    /// "Notifications": a wait for its mailbox interface is not interruptible).
    pub fn raise_signal(&mut self, domain: u16, signal: u8) -> Option<usize> {
        let slot = self.slot_of_domain(domain)?;
        let p = self.slots[slot].as_mut()?;
        p.signals |= 1 << signal;
        matches!(p.state, State::Blocked { wait, .. } if wait.interruptible()).then_some(slot)
    }

    pub fn holder_of(&self, index: u8) -> Option<usize> {
        self.slots.iter().position(|p| p.as_ref().is_some_and(|p| p.grant.index == index))
    }

    pub fn pid_of(&self, slot: usize) -> Option<Pid> {
        self.slots[slot].as_ref().map(|p| p.grant.pid)
    }
}

impl<F: FrameSource> Default for TableOf<F> {
    fn default() -> Self {
        Self::new()
    }
}

/// Maps a PD holder's queue set (and, where the board maps device pages, its PD page).
fn map_rdma_pages<F: FrameSource>(
    space: &mut AddressSpace<F>,
    r: &PdResources<F>,
    pd: Pd,
    device_pages: bool,
) -> Result<(), SpaceError> {
    space.map_uncached(RDMA_QUEUE_SET, (r.queue_set_pa)(pd), proto::syscall::layout::RDMA_QUEUE_SET_BYTES / 4096)?;
    if device_pages {
        space.map_device(PD_PAGE, super::state::pd_page(pd))?;
    }
    Ok(())
}

/// What an ended process leaves to do once the table is let go (`Ended::finish`, in
/// `lifecycle`): tell the subsystems, and take its RDMA resources down.
#[must_use]
#[derive(Debug)]
pub struct Ended {
    pub process: ExitedProcess,
    pub teardown: Option<Teardown>,
}

/// A process that ended, as the subsystems know it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExitedProcess {
    pub slot: usize,
    pub domain: u16,
    /// Its program's name.
    pub name: &'static str,
    /// How it ended.
    pub exit: Exit,
    /// Who learns of its end: its spawner (`Wait`), or nobody (`Auto`: a remote spawn).
    pub reap: Reap,
}

/// What the RDMA subsystem sets up for a process that holds its PD, given by it at boot
/// (`hooks::set_pd_resources`); without it no process gets RDMA resources.
pub struct PdResources<F: FrameSource> {
    /// Whether the node can give any (an R5 and an SMMU that came up).
    pub available: fn() -> bool,
    /// The physical address of `pd`'s queue set.
    pub queue_set_pa: fn(Pd) -> u64,
    /// Shows the space's tables to the SMMU (cleans what changed to the point of coherency).
    pub publish_tables: fn(&mut AddressSpace<F>),
    /// Attaches the PD's context bank to the space and registers its queues; false if it could
    /// not (the process then runs without RDMA; the subsystem says why).
    pub attach: fn(&Setup) -> bool,
    /// Takes an ended holder's resources down (its memory may go afterwards).
    pub detach: fn(&Teardown),
    /// Drops the SMMU's translations of `pages` pages from `va` in `pd`'s bank.
    pub invalidate: fn(pd: Pd, va: u64, pages: usize),
}

/// What a PD holder's resources are set up with, once its space is loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setup {
    pub pd: Pd,
    /// The bank's TTBR0: the process's DMA view (`AddressSpace::dma_ttbr0`) and ASID.
    pub ttbr0: u64,
    /// The PA of its queue set.
    pub queue_pa: u64,
}

/// What an ended holder leaves to take down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Teardown {
    pub slot: usize,
    pub pd: Pd,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::elf::tests::elf;
    use crate::mm::test_frames::Arena;
    use core::cell::Cell;
    use object::elf::{EM_AARCH64, PF_R, PF_X};
    use proto::syscall::layout::IMAGE_BASE;
    use std::vec::Vec;

    /// A trusted interface over plain memory (the registers are only written).
    pub(crate) fn tif() -> Tif {
        let page: &'static mut [u64; 512] = std::boxed::Box::leak(std::boxed::Box::new([0; 512]));
        // SAFETY: a page of the test's own memory, for this driver alone.
        unsafe { Tif::new(page.as_mut_ptr() as usize) }
    }

    pub(crate) fn program() -> Vec<u8> {
        elf(EM_AARCH64, IMAGE_BASE, &[(IMAGE_BASE, &[0xd5, 0x03, 0x20, 0x1f], 4, PF_R | PF_X)])
    }

    /// The RDMA subsystem, as far as the table sees it: queue set `pd` at `0x8000 * (pd + 1)`.
    fn resources() -> PdResources<&'static Arena> {
        PdResources {
            available: || true,
            queue_set_pa: |pd| 0x8000 * (u64::from(pd.raw()) + 1),
            publish_tables: |_| {},
            attach: |_| true,
            detach: |_| {},
            invalidate: |_, _, _| {},
        }
    }

    /// A node's spawn environment: the frames, one program (`"prog"`), and, with `rdma`, the
    /// RDMA subsystem's resources.
    pub(crate) struct Node {
        pub(crate) arena: &'static Arena,
        image: Vec<u8>,
        resources: Option<PdResources<&'static Arena>>,
        forgotten: Cell<Vec<u16>>,
    }

    impl Node {
        pub(crate) fn new(rdma: bool) -> Self {
            let arena: &'static Arena = std::boxed::Box::leak(std::boxed::Box::new(Arena::new(256)));
            Self { arena, image: program(), resources: rdma.then(resources), forgotten: Cell::default() }
        }

        pub(crate) fn spawn(
            &self,
            table: &mut TableOf<&'static Arena>,
            launch: &Launch<'_>,
        ) -> Result<Spawned, SpawnError> {
            let forget = |asid| {
                let mut seen = self.forgotten.take();
                seen.push(asid);
                self.forgotten.set(seen);
            };
            let image = (launch.name == "prog").then_some(("prog", &self.image[..]));
            let env = SpawnEnv {
                image,
                frames: self.arena,
                share: 0xffff,
                device_pages: false,
                resources: self.resources.as_ref(),
                forget_asid: &forget,
            };
            table.spawn(launch, env)
        }
    }

    /// A table that can spawn (it has the trusted interface, node 3's).
    pub(crate) fn table() -> TableOf<&'static Arena> {
        let mut t = TableOf::new();
        t.take_tif(tif(), 3);
        t
    }

    #[test]
    fn a_spawn_loads_the_program_and_queues_it_and_bad_spawns_are_refused() {
        let node = Node::new(false);
        let mut t = TableOf::new();
        let launch = Launch::new("prog", Some(7));
        assert_eq!(node.spawn(&mut t, &launch).err(), Some(SpawnError::NoInterface), "no trusted interface yet");
        let mut t = table();
        let s = node.spawn(&mut t, &launch).unwrap();
        assert_eq!((s.slot, s.rdma), (0, None));
        assert_eq!(t.run_queue.iter().copied().collect::<Vec<_>>(), [0], "runnable at once without RDMA");
        let p = t.slots[0].as_ref().unwrap();
        assert_eq!((p.frame.elr, p.argument, p.state, p.asid()), (IMAGE_BASE, 7, State::Runnable, 1));
        let f = &p.frame;
        assert_eq!(
            (f.x, f.q, f.fpcr, f.fpsr, f.tpidr_el0),
            ([0; 31], [0; 32], 0, 0, 0),
            "it starts with nothing of another's"
        );
        assert_eq!(node.forgotten.take(), [1], "the slot's ASID is forgotten before use");
        assert_eq!(t.pid_of(0).map(|pid| pid.node()), Some(3), "the PID names the node the table was given");
        assert_eq!(t.process(s.handle).map(|(slot, _)| slot), Some(0));
        assert_eq!(node.spawn(&mut t, &Launch::new("nothing", None)).err(), Some(SpawnError::UnknownImage));
        let long = [b'a'; ARGS_MAX + 1];
        let too_long = Launch { args: &long, ..launch };
        assert_eq!(node.spawn(&mut t, &too_long).err(), Some(SpawnError::ArgumentsTooLong));
        for _ in 1..MAX_DOMAINS {
            node.spawn(&mut t, &launch).unwrap();
        }
        assert_eq!(node.spawn(&mut t, &launch).err(), Some(SpawnError::NoSlot));
    }

    #[test]
    fn an_exit_is_reaped_once_and_frees_the_slot() {
        let node = Node::new(false);
        let mut t = table();
        let s = node.spawn(&mut t, &Launch::new("prog", None)).unwrap();
        let ended = t.exit(s.slot, Exit::Status(5)).unwrap();
        assert_eq!((ended.process.slot, ended.process.name, ended.process.exit), (s.slot, "prog", Exit::Status(5)));
        assert!(ended.teardown.is_none(), "nothing to take down without RDMA");
        assert!(t.exit(s.slot, Exit::Status(6)).is_none(), "it ended once");
        assert!(t.run_queue.is_empty());
        assert_eq!(t.reap(s.handle), Some(Exit::Status(5)));
        assert!(t.slots[s.slot].is_none());
        assert_eq!(t.reap(s.handle), None, "collected once");
        let auto = Launch { reap: Reap::Auto, ..Launch::new("prog", None) };
        let a = node.spawn(&mut t, &auto).unwrap();
        let _ = t.exit(a.slot, Exit::Killed).unwrap();
        assert!(t.slots[a.slot].is_none(), "an auto-reaped process goes at once");
        drop(t);
        assert_eq!(node.arena.used(), 0, "every frame of both processes went back");
    }

    #[test]
    fn a_pd_holder_runs_once_its_rdma_is_set_up_and_keeps_its_slot_until_it_is_down() {
        let node = Node::new(true);
        let mut t = table();
        let s = node.spawn(&mut t, &Launch::new("prog", None)).unwrap();
        let setup = s.rdma.expect("a holder with RDMA");
        let p = t.slots[s.slot].as_ref().unwrap();
        assert_eq!(
            setup,
            Setup { pd: p.pd, ttbr0: p.space.dma_ttbr0(), queue_pa: 0x8000 * (u64::from(p.pd.raw()) + 1) }
        );
        assert!(t.run_queue.is_empty(), "not before its set-up");
        assert_eq!(t.holder_of_pd(setup.pd), Some(s.slot));
        assert!(t.started(s.slot, true).is_none());
        assert_eq!(t.rdma_slots().collect::<Vec<_>>(), [s.slot]);
        assert_eq!(t.run_queue.iter().copied().collect::<Vec<_>>(), [s.slot]);
        // Another process of the same job on this node joins the PD without holding it.
        let member = Launch { pd: PdRequest::Inherit(setup.pd), ..Launch::new("prog", None) };
        let m = node.spawn(&mut t, &member).unwrap();
        assert_eq!((m.rdma, t.holder_of_pd(setup.pd)), (None, Some(s.slot)));
        let other = node.spawn(&mut t, &Launch::new("prog", None)).unwrap();
        assert_eq!(&t.members_of(setup.pd)[..], [s.handle, m.handle], "a job's exit ends both, not the other job");
        assert_eq!(&t.members_of(t.slots[other.slot].as_ref().unwrap().pd)[..], [other.handle]);
        // The holder ends: its resources come down before its slot and PD go.
        let ended = t.exit(s.slot, Exit::Status(0)).unwrap();
        assert_eq!(ended.teardown, Some(Teardown { slot: s.slot, pd: setup.pd }));
        assert_eq!(t.reap(s.handle), None, "its memory stays while the engine may use it");
        t.torn_down(s.slot);
        assert_eq!(t.reap(s.handle), Some(Exit::Status(0)));
        assert_eq!(t.holder_of_pd(setup.pd), None, "the PD may be held again");
    }

    #[test]
    fn a_holder_that_ends_during_its_set_up_is_taken_down_when_the_set_up_ends() {
        let node = Node::new(true);
        let mut t = table();
        let s = node.spawn(&mut t, &Launch::new("prog", None)).unwrap();
        let pd = s.rdma.unwrap().pd;
        assert!(t.exit(s.slot, Exit::Killed).unwrap().teardown.is_none(), "not set up yet: nothing to take down now");
        assert_eq!(t.started(s.slot, true), Some(Teardown { slot: s.slot, pd }), "taken down as its set-up ends");
        assert!(t.run_queue.is_empty(), "it never runs");
        t.torn_down(s.slot);
        assert_eq!(t.reap(s.handle), Some(Exit::Killed));
    }

    #[test]
    fn a_signal_is_kept_and_ends_an_interruptible_wait_only() {
        let node = Node::new(false);
        let mut t = table();
        let s = node.spawn(&mut t, &Launch::new("prog", None)).unwrap();
        let domain = s.handle as u16;
        let block = |t: &mut TableOf<_>, wait| {
            t.slots[s.slot].as_mut().unwrap().state = State::Blocked { wait, deadline: None }
        };
        let signals = |t: &TableOf<_>| t.slots[s.slot].as_ref().unwrap().signals;
        assert_eq!(t.raise_signal(domain, 3), None, "a runnable process has no wait to end");
        block(&mut t, Wait::Mif { words: 4 });
        assert_eq!(t.raise_signal(domain, 5), None, "a wait for its mailbox interface goes on");
        block(&mut t, Wait::Mailbox);
        assert_eq!(t.raise_signal(domain, 5), Some(s.slot));
        assert_eq!(signals(&t), 1 << 3 | 1 << 5, "every signal is kept for SIGNALS");
        assert_eq!(t.raise_signal(domain + 1, 1), None, "no such process");
    }
}
