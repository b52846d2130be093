//! The process table: every process of this node, the run queue, the interfaces and the
//! protection domains held.
//!
//! A process has its own address space (ASID = its slot + 1, at most [`MAX_DOMAINS`] at once),
//! one thread, one packetizer/mailbox interface pair whose PID names its GSAS domain, and a
//! protection domain (PD), the job it belongs to (`pds`). Domain numbers are never reused within
//! a boot, so a shared page owned by an exited process can never be claimed by a newer one.
//!
//! The process that holds its PD on this node also gets the PD's RDMA resources (what the RDMA
//! subsystem registered, `hooks::PdResources`): they are set up after the table's lock is
//! released (the SMMU and the R5 take a while) and before the process first runs, and taken
//! down after it ends and before its memory goes. The other subsystems learn of an exit through
//! `hooks::on_exit`.

use super::MAX_DOMAINS;
use super::hooks::{self, ExitedProcess, PdResources, Setup, Teardown};
use super::pds::{PdChoice, PdTable};
use crate::Board;
use crate::arch::mmu::tlbi_asid;
use crate::elf::{self, ElfError};
use crate::gsas::interfaces::{Grant, InterfaceTable, ThreadKey};
use crate::mm::kernel_frames::KernelFrames;
use crate::mm::user_space::{AddressSpace, SpaceError};
use crate::sync::IrqMutex;
use alloc::boxed::Box;
use alloc::collections::VecDeque;
use board::Board as _;
use boot::a53::ExceptionFrame;
use core::time::Duration;
use hal::packetizer::driver::Tif;
use hal::pldma::Pd;
use proto::gsas::{EMPTY_THREAD_ARGUMENT, Pid};
use proto::syscall::ARGS_MAX;
use proto::syscall::layout::{MIF_PAGE, PD_PAGE, PIF_PAGE, RDMA_QUEUE_SET};

pub use super::pds::PdRequest;
use super::state::Domains;
pub use super::state::{Exit, Rdma, Reap, State, Wait};

pub struct Process {
    pub domain: u16,
    pub name: &'static str,
    pub space: AddressSpace<KernelFrames>,
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
}

impl Process {
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

pub struct Table {
    pub slots: [Option<Box<Process>>; MAX_DOMAINS],
    pub run_queue: VecDeque<usize>,
    domains: Domains,
    interfaces: Option<InterfaceTable>,
    /// The packetizer's trusted interface, from `gsas_node::init`: the table grants and revokes
    /// the interfaces of the processes it holds.
    tif: Option<Tif>,
    pds: PdTable,
}

/// Taken from interrupt handlers too (wake-ups): IRQs are masked while it is held. Lock order:
/// the table before the mailbox service, never the other way round.
pub static TABLE: IrqMutex<Table> = IrqMutex::new(Table {
    slots: [const { None }; MAX_DOMAINS],
    run_queue: VecDeque::new(),
    domains: Domains::new(),
    interfaces: None,
    tif: None,
    pds: PdTable::new(),
});

impl Table {
    /// Keeps the trusted interface (once, at boot).
    pub fn take_tif(&mut self, tif: Tif) {
        self.tif = Some(tif);
    }

    /// An interface pair for the kernel's own requests (domain 0), granted in the PIDT; the
    /// same one on every call.
    pub fn kernel_interface(&mut self) -> Option<Grant> {
        let key = ThreadKey { domain: proto::gsas::KERNEL_DOMAIN, thread: u32::MAX };
        let grant = self.interfaces().acquire(key).ok()?;
        self.tif.as_mut()?.grant(usize::from(grant.index), grant.pid.raw());
        Some(grant)
    }

    /// The node's interface table, created on first use.
    fn interfaces(&mut self) -> &mut InterfaceTable {
        self.interfaces.get_or_insert_with(|| InterfaceTable::new(crate::cluster::node_id()))
    }

    pub fn process(&self, handle: Handle) -> Option<(usize, &Process)> {
        self.slots
            .iter()
            .enumerate()
            .find_map(|(i, p)| p.as_deref().filter(|p| u64::from(p.domain) == handle).map(|p| (i, p)))
    }

    /// Loads the program and makes the process; it runs once [`Table::started`] says so (at
    /// once when it has no RDMA resources to set up).
    pub fn spawn(&mut self, launch: &Launch<'_>) -> Result<Spawned, SpawnError> {
        let args = heapless::Vec::from_slice(launch.args).map_err(|_| SpawnError::ArgumentsTooLong)?;
        let (image_name, elf_bytes) =
            super::images::IMAGES.iter().find(|(n, _)| *n == launch.name).ok_or(SpawnError::UnknownImage)?;
        let program = elf::parse(elf_bytes).map_err(SpawnError::BadImage)?;
        let slot = self.slots.iter().position(Option::is_none).ok_or(SpawnError::NoSlot)?;
        let PdChoice { pd, holds } = self.pds.choose(launch.pd, pd_share(), |pd| self.has_member(pd));
        let domain = self.domains.next(pd).ok_or(SpawnError::DomainsExhausted)?;
        if self.tif.is_none() {
            return Err(SpawnError::NoInterface);
        }
        let asid = slot as u16 + 1;
        // A slot's ASID is reused: nothing of the previous process may stay in any TLB.
        tlbi_asid(asid);
        let mut space = AddressSpace::new(asid, KernelFrames);
        let entry = space.load(&program).map_err(SpawnError::Memory)?;
        let stack_top = space.map_stack().map_err(SpawnError::Memory)?;
        let resources = hooks::pd_resources().filter(|_| holds);
        if let Some(r) = resources {
            map_rdma_pages(&mut space, r, pd).map_err(SpawnError::Memory)?;
            // The SMMU walks these tables without snooping the A53s' caches.
            (r.publish_tables)(&mut space);
        }
        let key = ThreadKey { domain, thread: 0 };
        let grant = self.interfaces().acquire(key).map_err(|_| SpawnError::NoInterface)?;
        if Board::FORWARDING.is_none() {
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
        self.slots[slot] = Some(Box::new(Process {
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
        }));
        if rdma.is_none() {
            self.run_queue.push_back(slot);
        }
        Ok(Spawned { handle: Handle::from(domain), slot, rdma })
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
        let process = ExitedProcess { slot, domain: p.domain };
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

    /// The slot of the process holding interface `index`.
    /// The slot of the live process of `domain`.
    pub fn slot_of_domain(&self, domain: u16) -> Option<usize> {
        self.slots.iter().position(|p| p.as_ref().is_some_and(|p| p.domain == domain))
    }

    pub fn holder_of(&self, index: u8) -> Option<usize> {
        self.slots.iter().position(|p| p.as_ref().is_some_and(|p| p.grant.index == index))
    }

    pub fn pid_of(&self, slot: usize) -> Option<Pid> {
        self.slots[slot].as_ref().map(|p| p.grant.pid)
    }
}

/// Spawns `name` without string arguments, in any PD (see [`launch`]).
pub fn spawn(name: &str, argument: Option<u64>, reap: Reap) -> Result<Handle, SpawnError> {
    launch(&Launch { reap, ..Launch::new(name, argument) })
}

/// Spawns `name` with `args` (zero-terminated strings), in any PD (see [`launch`]).
pub fn spawn_with_args(name: &str, argument: Option<u64>, args: &[u8], reap: Reap) -> Result<Handle, SpawnError> {
    launch(&Launch { args, reap, ..Launch::new(name, argument) })
}

/// Starts a process: loads it, sets up its RDMA resources if it holds its PD (a node without
/// RDMA runs it without), and wakes a process core.
pub fn launch(launch: &Launch<'_>) -> Result<Handle, SpawnError> {
    let spawned = TABLE.lock().spawn(launch)?;
    if let Some(setup) = spawned.rdma {
        let ok = hooks::registered_pd_resources().is_some_and(|r| (r.attach)(&setup));
        if !ok {
            defmt::warn!("{=str}: no RDMA for PD {=u16}", launch.name, setup.pd.raw());
        }
        let down = TABLE.lock().started(spawned.slot, ok);
        if let Some(t) = down {
            take_down(t);
        }
    }
    super::scheduler::kick();
    Ok(spawned.handle)
}

/// Maps a PD holder's queue set (and, where the board maps device pages, its PD page).
/// The PDs this node starts jobs in (`proto::rdma::domain::share`); a node outside any cluster
/// is alone.
fn pd_share() -> u16 {
    let (node, nodes) = crate::cluster::node_and_count();
    proto::rdma::domain::share(node, nodes)
}

fn map_rdma_pages(space: &mut AddressSpace<KernelFrames>, r: &PdResources, pd: Pd) -> Result<(), SpaceError> {
    space.map_uncached(RDMA_QUEUE_SET, (r.queue_set_pa)(pd), proto::syscall::layout::RDMA_QUEUE_SET_BYTES / 4096)?;
    if Board::FORWARDING.is_none() {
        space.map_device(PD_PAGE, super::state::pd_page(pd))?;
    }
    Ok(())
}

/// Takes down the RDMA resources of an ended process (the table not held), then lets its slot
/// and PD go.
/// What an ended process leaves to do once the table is let go ([`Ended::finish`]).
#[must_use]
pub struct Ended {
    process: ExitedProcess,
    teardown: Option<Teardown>,
}

impl Ended {
    /// Tells the subsystems (its mailbox registrations and its sockets go), then takes its RDMA
    /// resources down.
    pub fn finish(self) {
        hooks::exited(self.process);
        if let Some(t) = self.teardown {
            take_down(t);
        }
    }
}

pub fn take_down(t: Teardown) {
    if let Some(r) = hooks::registered_pd_resources() {
        (r.detach)(&t);
    }
    TABLE.lock().torn_down(t.slot);
}

/// Ends the process: at once if it is not running, otherwise at its next exception (a tick at
/// the latest). Its exit is [`Exit::Killed`], collected with [`wait`] as any other.
pub fn kill(handle: Handle) {
    let down = {
        let mut table = TABLE.lock();
        let Some((slot, p)) = table.process(handle) else { return };
        match p.state {
            State::Exited(_) => None,
            State::Running(_) => {
                super::scheduler::kill_running(slot);
                None
            }
            State::Runnable | State::Blocked { .. } => table.exit(slot, Exit::Killed),
        }
    };
    if let Some(ended) = down {
        ended.finish();
    }
}

/// Waits (asleep, on the calling kernel thread) until the process ends or `timeout` passes;
/// returns its exit.
pub fn wait(handle: Handle, timeout: Duration) -> Option<Exit> {
    let mut exit = None;
    let _ = crate::timer::idle_for(timeout, || {
        exit = TABLE.lock().reap(handle);
        exit.is_some()
    });
    exit
}

/// [`wait`], and a process still running after `timeout` is killed (its exit collected within
/// a second), so that nothing outlives its caller's patience; `None` then.
pub fn wait_or_kill(handle: Handle, timeout: Duration) -> Option<Exit> {
    let exit = wait(handle, timeout);
    if exit.is_none() {
        kill(handle);
        if wait(handle, Duration::from_secs(1)).is_none() {
            defmt::println!("a process did not end when killed");
        }
    }
    exit
}
