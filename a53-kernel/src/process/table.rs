//! The process table: every process of this node, the run queue, and the interfaces held.
//!
//! A process is a protection domain: its own address space (ASID = its slot + 1, at most
//! [`MAX_DOMAINS`] at once), one thread, and one packetizer/mailbox interface pair whose PID
//! names the domain. Domain numbers are never reused within a boot, so a shared page owned by
//! an exited process can never be claimed by a newer one.

use super::MAX_DOMAINS;
use super::elf::{self, ElfError};
use crate::Board;
use crate::arch::mmu::tlbi_asid;
use crate::gsas::interfaces::{Grant, InterfaceTable, ThreadKey};
use crate::mm::kernel_frames::KernelFrames;
use crate::mm::user_space::{AddressSpace, SpaceError};
use crate::sync::IrqMutex;
use alloc::boxed::Box;
use alloc::collections::VecDeque;
use board::Board as _;
use boot::a53::ExceptionFrame;
use hal::packetizer::driver::Tif;
use proto::gsas::{EMPTY_THREAD_ARGUMENT, Pid};
use proto::syscall::ARGS_MAX;
use proto::syscall::layout::{MIF_PAGE, PIF_PAGE};

use super::state::Domains;
pub use super::state::{Exit, Reap, State, Wait};

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
}

impl Process {
    pub fn asid(&self) -> u16 {
        self.space.asid()
    }

    /// The physical page behind a user page the platform serves (PIF/MIF), if `va` is in one.
    pub fn interface_page(&self, va: u64) -> Option<u64> {
        super::state::interface_page(self.grant.index, va)
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

pub struct Table {
    pub slots: [Option<Box<Process>>; MAX_DOMAINS],
    pub run_queue: VecDeque<usize>,
    domains: Domains,
    interfaces: Option<InterfaceTable>,
    /// The packetizer's trusted interface, from `gsas_node::init`: the table grants and revokes
    /// the interfaces of the processes it holds.
    tif: Option<Tif>,
}

/// Taken from interrupt handlers too (wake-ups): IRQs are masked while it is held. Lock order:
/// the table before the mailbox service, never the other way round.
pub static TABLE: IrqMutex<Table> = IrqMutex::new(Table {
    slots: [const { None }; MAX_DOMAINS],
    run_queue: VecDeque::new(),
    domains: Domains::new(),
    interfaces: None,
    tif: None,
});

impl Table {
    /// Keeps the trusted interface (once, at boot).
    pub fn take_tif(&mut self, tif: Tif) {
        self.tif = Some(tif);
    }

    /// The node's interface table, created on first use.
    fn interfaces(&mut self) -> &mut InterfaceTable {
        self.interfaces.get_or_insert_with(|| InterfaceTable::new(crate::gsas_node::node_id()))
    }

    pub fn process(&self, handle: Handle) -> Option<(usize, &Process)> {
        self.slots
            .iter()
            .enumerate()
            .find_map(|(i, p)| p.as_deref().filter(|p| u64::from(p.domain) == handle).map(|p| (i, p)))
    }

    /// Loads `name` and makes it runnable; it reads `argument` as its thread argument and
    /// `args` (zero-terminated strings) as its arguments.
    pub fn spawn(&mut self, name: &str, argument: Option<u64>, args: &[u8], reap: Reap) -> Result<Handle, SpawnError> {
        let args = heapless::Vec::from_slice(args).map_err(|_| SpawnError::ArgumentsTooLong)?;
        let (image_name, elf_bytes) =
            super::images::IMAGES.iter().find(|(n, _)| *n == name).ok_or(SpawnError::UnknownImage)?;
        let program = elf::parse(elf_bytes).map_err(SpawnError::BadImage)?;
        let slot = self.slots.iter().position(Option::is_none).ok_or(SpawnError::NoSlot)?;
        let domain = self.domains.next().ok_or(SpawnError::DomainsExhausted)?;
        if self.tif.is_none() {
            return Err(SpawnError::NoInterface);
        }
        let asid = slot as u16 + 1;
        // A slot's ASID is reused: nothing of the previous process may stay in any TLB.
        tlbi_asid(asid);
        let mut space = AddressSpace::new(asid, KernelFrames);
        let entry = space.load(&program).map_err(SpawnError::Memory)?;
        let stack_top = space.map_stack().map_err(SpawnError::Memory)?;
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
        self.domains.take();
        self.slots[slot] = Some(Box::new(Process {
            domain,
            name: image_name,
            space,
            frame,
            state: State::Runnable,
            reap,
            argument: argument.unwrap_or(EMPTY_THREAD_ARGUMENT),
            args,
            grant,
        }));
        self.run_queue.push_back(slot);
        Ok(Handle::from(domain))
    }

    /// Ends the process in `slot`: it no longer sends, its mailbox registrations go, and the
    /// slot is freed now (auto-reaped) or when its spawner collects it.
    pub fn exit(&mut self, slot: usize, exit: Exit) {
        let Some(p) = self.slots[slot].as_mut() else { return };
        p.state = State::Exited(exit);
        let (domain, index, reap) = (p.domain, p.grant.index, p.reap);
        if let Some(tif) = self.tif.as_mut() {
            tif.revoke(usize::from(index));
        }
        let _ = self.interfaces().release(ThreadKey { domain, thread: 0 });
        crate::gsas_node::release_domain(domain);
        self.run_queue.retain(|&s| s != slot);
        if reap == Reap::Auto {
            self.slots[slot] = None;
        }
    }

    /// The exit of a finished process, freeing its slot.
    pub fn reap(&mut self, handle: Handle) -> Option<Exit> {
        let (slot, p) = self.process(handle)?;
        let State::Exited(exit) = p.state else { return None };
        self.slots[slot] = None;
        Some(exit)
    }

    /// The slot of the process holding interface `index`.
    pub fn holder_of(&self, index: u8) -> Option<usize> {
        self.slots.iter().position(|p| p.as_ref().is_some_and(|p| p.grant.index == index))
    }

    pub fn pid_of(&self, slot: usize) -> Option<Pid> {
        self.slots[slot].as_ref().map(|p| p.grant.pid)
    }
}

/// Spawns `name` without string arguments (see [`Table::spawn`]) and wakes a process core.
pub fn spawn(name: &str, argument: Option<u64>, reap: Reap) -> Result<Handle, SpawnError> {
    spawn_with_args(name, argument, &[], reap)
}

/// Spawns `name` with `args` (zero-terminated strings) and wakes a process core.
pub fn spawn_with_args(name: &str, argument: Option<u64>, args: &[u8], reap: Reap) -> Result<Handle, SpawnError> {
    let handle = TABLE.lock().spawn(name, argument, args, reap)?;
    super::scheduler::kick();
    Ok(handle)
}

/// Ends the process: at once if it is not running, otherwise at its next exception (a tick at
/// the latest). Its exit is [`Exit::Killed`], collected with [`wait`] as any other.
pub fn kill(handle: Handle) {
    let mut table = TABLE.lock();
    let Some((slot, p)) = table.process(handle) else { return };
    match p.state {
        State::Exited(_) => {}
        State::Running(_) => super::scheduler::kill_running(slot),
        State::Runnable | State::Blocked { .. } => table.exit(slot, Exit::Killed),
    }
}

/// Waits (asleep, on the calling kernel thread) until the process ends or `timeout_ticks` of the
/// counter pass; returns its exit.
pub fn wait(handle: Handle, timeout_ticks: u64) -> Option<Exit> {
    let give_up = crate::timer::now().saturating_add(timeout_ticks);
    let mut exit = None;
    crate::arch::cpu::idle_until(|| {
        exit = TABLE.lock().reap(handle);
        exit.is_some() || crate::timer::now() > give_up
    });
    exit
}

/// [`wait`], and a process still running after `timeout_ticks` is killed (its exit collected
/// within a second), so that nothing outlives its caller's patience; `None` then.
pub fn wait_or_kill(handle: Handle, timeout_ticks: u64) -> Option<Exit> {
    let exit = wait(handle, timeout_ticks);
    if exit.is_none() {
        kill(handle);
        if wait(handle, crate::timer::hz()).is_none() {
            defmt::println!("a process did not end when killed");
        }
    }
    exit
}
