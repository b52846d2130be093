//! Starting and ending processes on this node: the node's process table behind its lock, the
//! spawn's environment (the program store, the kernel's frames, the RDMA subsystem's
//! resources), RDMA set-up and tear-down around the table's decisions, kill and wait.

use super::hooks;
use super::table::{Ended, Exit, Handle, Launch, Reap, SpawnEnv, SpawnError, State, Table, Teardown};
use crate::Board;
use crate::arch::mmu::tlbi_asid;
use crate::mm::kernel_frames::KernelFrames;
use crate::sync::IrqMutex;
use board::Board as _;
use core::time::Duration;
use hal::pldma::Pd;

/// Taken from interrupt handlers too (wake-ups): IRQs are masked while it is held. Lock order:
/// the table before the mailbox service, never the other way round.
pub static TABLE: IrqMutex<Table> = IrqMutex::new(Table::new());

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
    let env = SpawnEnv {
        image: super::images::named(launch.name),
        frames: KernelFrames,
        share: pd_share(),
        device_pages: Board::FORWARDING.is_none(),
        resources: hooks::pd_resources().filter(|r| (r.available)()),
        forget_asid: &tlbi_asid,
    };
    let spawned = TABLE.lock().spawn(launch, env)?;
    if let Some(setup) = spawned.rdma {
        let ok = hooks::pd_resources().is_some_and(|r| (r.attach)(&setup));
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

/// The PDs this node starts jobs in (`proto::rdma::domain::share`); a node outside any cluster
/// is alone.
fn pd_share() -> u16 {
    let (node, nodes) = crate::cluster::node_and_count();
    proto::rdma::domain::share(node, nodes)
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
    if let Some(r) = hooks::pd_resources() {
        (r.detach)(&t);
    }
    TABLE.lock().torn_down(t.slot);
}

/// Ends the process: at once if it is not running, otherwise at its next exception (a tick at
/// the latest). Its exit is [`Exit::Killed`], collected with [`wait`] as any other.
pub fn kill(handle: Handle) {
    end(handle, Exit::Killed);
}

/// Ends the process with `exit` (`Killed`, or a status the kernel imposes: a job's exit), as
/// [`kill`] does: its resources are released as at any exit.
pub fn end(handle: Handle, exit: Exit) {
    let down = {
        let mut table = TABLE.lock();
        let Some((slot, p)) = table.process(handle) else { return };
        match p.state {
            State::Exited(_) => None,
            State::Running(_) => {
                super::scheduler::kill_running(slot, exit);
                None
            }
            State::Runnable | State::Blocked { .. } => table.exit(slot, exit),
        }
    };
    if let Some(ended) = down {
        ended.finish();
    }
}

/// Ends every live process of job `pd` on this node with status `status` (`JOB_EXIT`, from any
/// node's kernel); returns how many it ended.
pub fn end_job(pd: Pd, status: u8) -> usize {
    let members = TABLE.lock().members_of(pd);
    for &handle in &members {
        end(handle, Exit::Status(u64::from(status)));
    }
    members.len()
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

/// Says on the console how a process nobody waits for (a remote spawn) ended
/// (`docs/hw/console.md`, "Process ends"): its spawner is on another node, so this is the only
/// place its end shows. Those a spawner waits for are reported by the spawner.
pub fn report_unawaited_end(process: hooks::ExitedProcess) {
    if process.reap != Reap::Auto {
        return;
    }
    match process.exit {
        Exit::Status(status) => {
            defmt::info!("remote process {=str} exited with status {=u64}", process.name, status)
        }
        other => defmt::error!("remote process {=str} ended: {}", process.name, defmt::Debug2Format(&other)),
    }
}
