//! The system calls on the hardware: the kernel they run over ([`ThisKernel`]: the node's
//! process table, paging, mailbox service, MIFs, PLDMA and sockets) and how the exception layer
//! hands EL0's exceptions to them ([`USER_ENTRY`]).

use super::{Kernel, MifWait};
use crate::exception::UserEntry;
use crate::gsas::mailbox::MailboxService;
use crate::mm::kernel_frames::KernelFrames;
use crate::mm::user_space::SpaceError;
use crate::process::lifecycle::TABLE;
use crate::process::scheduler::{self, Event, current};
use crate::process::table::{Exit, Process, Table};
use crate::rdma::active::{ActiveHw, ActiveTable};
use crate::socket::node::{SocketNode, Wakes};
use crate::{cluster, gsas_node, process, rdma_node, socket_node, timer};
use boot::a53::ExceptionFrame;
use core::time::Duration;
use hal::pldma::Pd;
use hal::vmbox::driver::MifIrq;
use proto::syscall::Error;

/// How the exception layer hands EL0's exceptions to the processes (`kernel::wire`): a system
/// call is handled here, and every way back to EL0 is the scheduler's chance to switch.
pub const USER_ENTRY: UserEntry = UserEntry {
    syscall: |frame| {
        let event = handle(frame);
        scheduler::switch_point(frame, event);
    },
    resume: |frame| scheduler::switch_point(frame, Event::Continue),
    killed: |frame, fault| {
        let exit = Exit::Fault { esr: fault.esr.0, far: fault.far, elr: fault.elr };
        scheduler::switch_point(frame, Event::Exit(exit));
    },
};

/// Handles the call in `frame` for the process running on this core.
fn handle(frame: &mut ExceptionFrame) -> Event {
    let Some(slot) = current() else { return Event::Continue };
    super::handle(&ThisKernel, frame, slot)
}

/// This node's kernel, as the calls see it.
pub struct ThisKernel;

impl Kernel for ThisKernel {
    type Frames = KernelFrames;
    type SocketEngine = socket_node::Hardware;
    type Mif = MifIrq;

    fn table<R>(&self, f: impl FnOnce(&mut Table) -> R) -> R {
        f(&mut TABLE.lock())
    }

    fn make_resident(&self, process: &mut Process, va: u64, len: usize, write: bool) -> Result<(), SpaceError> {
        process::paging::make_resident(process, va, len, write)
    }

    fn map(&self, slot: usize, len: u64, flags: u64, address: u64) -> Result<u64, Error> {
        process::paging::map(slot, len, flags, address)
    }

    fn unmap(&self, slot: usize, va: u64, len: u64) -> Result<u64, Error> {
        process::paging::unmap(slot, va, len)
    }

    fn evict(&self, slot: usize, va: u64, len: u64) -> Result<u64, Error> {
        process::paging::evict(slot, va, len)
    }

    fn unmap_borrowed(&self, slot: usize, va: u64, pages: u64) -> Result<u64, Error> {
        process::paging::unmap_borrowed(slot, va, pages)
    }

    fn node_and_count(&self) -> (u16, u16) {
        cluster::node_and_count()
    }

    fn is_alive(&self, node: u64) -> bool {
        cluster::is_alive(node)
    }

    fn uptime_us(&self) -> u64 {
        timer::uptime_us()
    }

    fn now(&self) -> u64 {
        timer::now()
    }

    fn deadline_in_us(&self, us: u64) -> u64 {
        timer::deadline_in(Duration::from_micros(us)).ticks()
    }

    fn mailbox<R>(&self, f: impl FnOnce(&mut MailboxService) -> R) -> R {
        f(&mut gsas_node::mailbox().lock())
    }

    fn wake_mailbox_thread(&self, thread: u32) {
        gsas_node::wake_mailbox_thread(thread);
    }

    fn with_mif<R>(&self, index: u8, f: impl FnOnce(&mut MifIrq) -> R) -> Option<R> {
        gsas_node::with_process_mif(index, f)
    }

    fn arm_and_peek(&self, pd: Pd) -> bool {
        rdma_node::arm_and_peek(pd)
    }

    fn sockets<R>(&self, f: impl FnOnce(&mut SocketNode<KernelFrames, socket_node::Hardware>) -> R) -> Option<R> {
        socket_node::with_node(f)
    }

    fn after_sockets(&self, wakes: Wakes) {
        socket_node::after(wakes);
    }

    fn log(&self, name: &str, domain: u16, line: &str) {
        defmt::println!("[{=str} {=u16}] {=str}", name, domain, line);
    }

    fn active<R>(&self, f: impl FnOnce(&mut ActiveTable, &mut dyn ActiveHw) -> R) -> Option<R> {
        rdma_node::with_active(|t, hw| f(t, hw))
    }

    fn end_job(&self, pd: Pd, status: u8) {
        crate::gsas_node::job_exit::send(pd, status);
    }
}

impl MifWait for MifIrq {
    fn depth(&mut self) -> u32 {
        MifIrq::depth(self)
    }
    fn count(&self) -> u32 {
        MifIrq::count(self)
    }
    fn arm(&mut self, words: u32) {
        MifIrq::arm(self, words);
    }
    fn disarm(&mut self) {
        MifIrq::disarm(self);
    }
    fn disarm_if_armed(&mut self) {
        MifIrq::disarm_if_armed(self);
    }
}
