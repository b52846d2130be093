//! System calls (`proto::syscall`, `docs/hw/syscalls.md`): `svc #0`, number in x8, arguments in
//! x0..x5, results in x0..x2. Every argument is checked; a bad pointer or length is an error
//! return. User memory is only read through the process's own page table and the kernel's view
//! of its frames, never by dereferencing a user address.
//!
//! The calls are plain logic over what they need from the kernel below them ([`Kernel`]), and
//! host-tested against a kernel made of the host-tested parts (the process table on a test
//! arena, the mailbox service, a node's sockets); `syscall::node` is that kernel on the
//! hardware, and hands the processes' exceptions to [`handle`].

#[cfg(target_arch = "aarch64")]
pub mod node;
pub mod socket;
#[cfg(test)]
mod tests;

use crate::gsas::mailbox::{MailboxService, Received, Receiver, RecvMode, Registrant, WakeMode};
use crate::mm::user_space::{FrameSource, SpaceError};
use crate::process::state::Event;
use crate::process::table::{Exit, ProcessOf, TableOf, Wait};
use crate::rdma::active::{ActiveError, ActiveHw, ActiveTable};
use crate::socket::node::{Engine, SocketNode, Wakes};
use boot::frame::ExceptionFrame;
use hal::pldma::Pd;
use proto::gsas::MailboxOpcode;
use proto::syscall::layout::{PD_PAGE, RDMA_QUEUE_SET};
use proto::syscall::{
    ANY_OPCODE, Error, LOG_MAX, MODE_EVENT, MODE_READ, MODE_SIGNAL, NO_NODE, RECV_NONBLOCKING, SIGNALS_MAX, nr,
};

/// What the system calls need from the kernel below them. Lock order: a call holding the
/// process table (inside [`table`](Self::table)) may take the sockets or a MIF, never the other
/// way round.
pub trait Kernel {
    /// Where the processes' frames come from.
    type Frames: FrameSource;
    /// The devices below the node's sockets.
    type SocketEngine: Engine;
    /// A process's mailbox interface, the MIF it waits on (`hal::vmbox::driver::MifIrq`).
    type Mif: MifWait;

    /// Runs `f` on the process table, under its lock.
    fn table<R>(&self, f: impl FnOnce(&mut TableOf<Self::Frames>) -> R) -> R;
    /// Makes `[va, va + len)` resident in `process` for a call that reads it (or `write`s it)
    /// for the process, as a touch would (`process::paging::make_resident`).
    fn make_resident(
        &self,
        process: &mut ProcessOf<Self::Frames>,
        va: u64,
        len: usize,
        write: bool,
    ) -> Result<(), SpaceError>;
    /// `MAP` (at `address` with `MAP_FIXED`), `UNMAP` and `EVICT` for the process in `slot`
    /// (`process::paging`).
    fn map(&self, slot: usize, len: u64, flags: u64, address: u64) -> Result<u64, Error>;
    fn unmap(&self, slot: usize, va: u64, len: u64) -> Result<u64, Error>;
    fn evict(&self, slot: usize, va: u64, len: u64) -> Result<u64, Error>;
    /// Removes the `pages` pages at `va` of memory the process in `slot` does not own (an Active
    /// Access log, `AddressSpace::unmap_borrowed`) and empties the TLBs that may hold them; the
    /// pages that were mapped.
    fn unmap_borrowed(&self, slot: usize, va: u64, pages: u64) -> Result<u64, Error>;

    /// This node and how many the cluster has.
    fn node_and_count(&self) -> (u16, u16);
    /// Whether node `node` is alive (a node out of range is not).
    fn is_alive(&self, node: u64) -> bool;
    /// Microseconds since boot.
    fn uptime_us(&self) -> u64;
    /// The counter now, in ticks (a wait's deadline is one).
    fn now(&self) -> u64;
    /// The counter value `us` microseconds from now.
    fn deadline_in_us(&self, us: u64) -> u64;

    /// Runs `f` on the node's mailbox service, under its lock.
    fn mailbox<R>(&self, f: impl FnOnce(&mut MailboxService) -> R) -> R;
    /// Wakes mailbox thread `thread` (a process's slot) that an unregister let go.
    fn wake_mailbox_thread(&self, thread: u32);
    /// Runs `f` on MIF `index`, under its lock (one register operation per lock: the interrupt
    /// handler that disarms it never waits long).
    fn with_mif<R>(&self, index: u8, f: impl FnOnce(&mut Self::Mif) -> R) -> Option<R>;

    /// Arms the completion queue of PD `pd`'s holder for one interrupt and says whether it holds
    /// an entry already (`rdma_node::arm_and_peek`).
    fn arm_and_peek(&self, pd: Pd) -> bool;

    /// Runs `f` on the node's sockets, under their lock; `None` on a node without sockets.
    fn sockets<R>(&self, f: impl FnOnce(&mut SocketNode<Self::Frames, Self::SocketEngine>) -> R) -> Option<R>;
    /// What the sockets left for after the locks: the outbox sent, these processes woken.
    fn after_sockets(&self, wakes: Wakes);

    /// Prints a process's log line.
    fn log(&self, name: &str, domain: u16, line: &str);

    /// Runs `f` on the node's Active Access table and the engine's pages, under their locks
    /// (taken after the process table's, never with it); `None` on a node without RDMA.
    fn active<R>(&self, f: impl FnOnce(&mut ActiveTable, &mut dyn ActiveHw) -> R) -> Option<R>;

    /// Ends job `pd` with `status` on every node, this one included (`JOB_EXIT`: each node's
    /// kernel ends its members, `gsas_node::job_exit`). The caller's own end is the call's.
    fn end_job(&self, pd: Pd, status: u8);
}

/// The MIF operations `WAIT_MIF` uses (`hal::vmbox::driver::MifIrq`'s).
pub trait MifWait {
    /// Words the MIF can hold.
    fn depth(&mut self) -> u32;
    /// Words it holds now.
    fn count(&self) -> u32;
    /// Asks for the interrupt once it holds `words`.
    fn arm(&mut self, words: u32);
    fn disarm(&mut self);
    /// Disarms it unless its interrupt handler has done so already.
    fn disarm_if_armed(&mut self);
}

fn ok(frame: &mut ExceptionFrame, values: &[u64]) -> Event {
    for (i, v) in values.iter().enumerate() {
        frame.x[i] = *v;
    }
    Event::Continue
}

fn err(frame: &mut ExceptionFrame, e: Error) -> Event {
    frame.x[0] = e as i64 as u64;
    Event::Continue
}

/// Blocks and re-executes the `svc` when woken (the call then finds what it waited for).
fn block_and_retry(frame: &mut ExceptionFrame, wait: Wait, deadline: Option<u64>) -> Event {
    frame.elr -= 4;
    Event::Block { wait, deadline }
}

/// The deadline of a wait of `us` microseconds, or none for 0.
fn deadline_after_us(k: &impl Kernel, us: u64) -> Option<u64> {
    (us != 0).then(|| k.deadline_in_us(us))
}

/// A retried wait's deadline: the one kept in x5 by its first run (absolute, so that a wake-up
/// does not restart it), else `timeout_us` from now, kept there.
fn kept_deadline(k: &impl Kernel, frame: &mut ExceptionFrame, timeout_us: u64) -> Option<u64> {
    let deadline = match frame.x[5] {
        0 => deadline_after_us(k, timeout_us),
        d => Some(d),
    };
    frame.x[5] = deadline.unwrap_or(0);
    deadline
}

/// Handles the call in `frame` for the process in table slot `slot`.
pub fn handle(k: &impl Kernel, frame: &mut ExceptionFrame, slot: usize) -> Event {
    let args = [frame.x[0], frame.x[1], frame.x[2]];
    match frame.x[8] {
        nr::EXIT => Event::Exit(Exit::Status(args[0])),
        nr::YIELD => {
            frame.x[0] = 0;
            Event::Yield
        }
        nr::LOG => log(k, frame, slot, args[0], args[1]),
        nr::NODE_INFO => {
            let (node, count) = k.node_and_count();
            ok(frame, &[u64::from(node), u64::from(count)])
        }
        nr::INTERFACE => match k.table(|t| t.pid_of(slot)) {
            Some(pid) => ok(frame, &[proto::syscall::layout::PIF_PAGE, proto::syscall::layout::MIF_PAGE, pid.raw()]),
            None => err(frame, Error::BadArgument),
        },
        nr::THREAD_ARGUMENT => {
            let arg = k.table(|t| t.slots[slot].as_ref().map_or(proto::gsas::EMPTY_THREAD_ARGUMENT, |p| p.argument));
            ok(frame, &[arg])
        }
        nr::WAIT_MIF => wait_mif(k, frame, slot, args[0], args[1], args[2]),
        nr::ARGS => copy_args(k, frame, slot, args[0], args[1]),
        nr::MAILBOX_REGISTER => mailbox_register(k, frame, slot, args),
        nr::MAILBOX_UNREGISTER => mailbox_unregister(k, frame, slot, args[0]),
        nr::MAILBOX_RECEIVE => mailbox_receive(k, frame, slot, args),
        nr::TIME_US => ok(frame, &[k.uptime_us()]),
        nr::SLEEP_US => {
            frame.x[0] = 0;
            match deadline_after_us(k, args[0]) {
                Some(d) => Event::Block { wait: Wait::Sleep, deadline: Some(d) },
                None => Event::Continue,
            }
        }
        nr::RDMA_QUEUES => match rdma_pd(k, slot) {
            Some(pd) => ok(frame, &[RDMA_QUEUE_SET, PD_PAGE, u64::from(pd.raw())]),
            None => err(frame, Error::NoPd),
        },
        nr::RDMA_WAIT => rdma_wait(k, frame, slot, args[0]),
        nr::MAP => answer(frame, k.map(slot, args[0], args[1], args[2])),
        nr::UNMAP => answer(frame, k.unmap(slot, args[0], args[1])),
        nr::EVICT => answer(frame, k.evict(slot, args[0], args[1])),
        nr::MAILBOX_EVENT => mailbox_event(k, frame, slot, args[0]),
        nr::SIGNALS => {
            let raised = k.table(|t| t.slots[slot].as_mut().map_or(0, |p| core::mem::take(&mut p.signals)));
            ok(frame, &[raised])
        }
        nr::SOCKET_LISTEN..=nr::SOCKET_STATS => socket::handle(k, frame, slot),
        nr::PROGRAM_NAME => program_name(k, frame, slot, args[0], args[1]),
        nr::JOB_EXIT => job_exit(k, frame, slot, args[0]),
        nr::ACTIVE_OPEN => active_open(k, frame, slot),
        nr::ACTIVE_ASSOC => active_assoc(k, frame, slot, args),
        nr::ACTIVE_CLOSE => active_close(k, frame, slot, args[0]),
        nr::ACTIVE_NOTIFY => active_notify(k, frame, slot, args[0], args[1]),
        _ => err(frame, Error::NoSuchCall),
    }
}

/// Pages of a log's mapping: its ring and its header page.
const LOG_PAGES: u64 = proto::syscall::layout::ACTIVE_LOG_STRIDE / 4096;

/// `ACTIVE_OPEN`: an IUID for the caller, its log emptied and mapped into it.
fn active_open(k: &impl Kernel, frame: &mut ExceptionFrame, slot: usize) -> Event {
    use proto::syscall::layout::{ACTIVE_LOG_RING, active_log};
    let Some(pd) = rdma_pd(k, slot) else { return err(frame, Error::NoPd) };
    let iuid = match k.active(|t, hw| t.open(hw, slot, pd)) {
        None => return err(frame, Error::NoPd),
        Some(Err(_)) => return err(frame, Error::Busy),
        Some(Ok(iuid)) => iuid,
    };
    let (ring, _) = crate::rdma::active::log_pa(usize::from(iuid));
    let va = active_log(iuid);
    let mapped = k.table(|t| t.slots[slot].as_mut().map(|p| p.space.map_uncached(va, ring, LOG_PAGES).is_ok()));
    if mapped != Some(true) {
        k.active(|t, hw| t.close(hw, slot, iuid));
        return err(frame, Error::BadArgument);
    }
    ok(frame, &[u64::from(iuid), va, va + ACTIVE_LOG_RING])
}

/// `ACTIVE_CLOSE`: the caller gives one of its IUIDs back: its log leaves the caller's address
/// space (and TLBs) first, then its pages are unmarked, the log invalidated and the IUID freed.
/// In that order: the next owner's log is mapped from the same slot of the PLDMA area.
fn active_close(k: &impl Kernel, frame: &mut ExceptionFrame, slot: usize, iuid: u64) -> Event {
    let Some(pd) = rdma_pd(k, slot) else { return err(frame, Error::NoPd) };
    let iuid = match k.active(|t, _| t.owned_by((slot, pd), iuid)) {
        None => return err(frame, Error::NoPd),
        Some(Err(_)) => return err(frame, Error::BadArgument),
        Some(Ok(iuid)) => iuid,
    };
    if k.unmap_borrowed(slot, proto::syscall::layout::active_log(iuid), LOG_PAGES).is_err() {
        // Never, for a log `ACTIVE_OPEN` mapped: the IUID stays the caller's rather than be
        // handed on while it might still be mapped here.
        return err(frame, Error::BadArgument);
    }
    match k.active(|t, hw| t.close_owned(hw, (slot, pd), iuid.into())) {
        Some(Ok(_)) => ok(frame, &[0]),
        _ => err(frame, Error::BadArgument),
    }
}

/// `ACTIVE_ASSOC`: marks (or unmarks) a page of the caller's own regions for one of its IUIDs.
fn active_assoc(k: &impl Kernel, frame: &mut ExceptionFrame, slot: usize, args: [u64; 3]) -> Event {
    let [iuid, va, bits] = args;
    let Some(pd) = rdma_pd(k, slot) else { return err(frame, Error::NoPd) };
    // Only the caller's plain memory (its image, stack and `MAP` regions; not the device window)
    // can be marked: that is what the engine reaches. The page's key is (PD, VA), and PD `pd`
    // reaches only the caller here, so a mark can only ever concern the caller's own memory.
    let own = k.table(|t| {
        t.slots[slot].as_ref().is_some_and(|p| {
            !proto::syscall::layout::in_device_window(va)
                && (p.space.region(va).is_some_and(|r| !r.device) || p.space.page(va).is_some())
        })
    });
    match k.active(|t, hw| t.assoc(hw, (slot, pd), iuid, va, bits, |_| own)) {
        None => err(frame, Error::NoPd),
        Some(Ok(())) => ok(frame, &[0]),
        Some(Err(ActiveError::Busy)) => err(frame, Error::Busy),
        Some(Err(ActiveError::BadArgument | ActiveError::BadAddress)) => err(frame, Error::BadArgument),
    }
}

/// `ACTIVE_NOTIFY`: the caller's log tells it of its entries on a mailbox opcode it receives,
/// or is polled again (opcode 0).
fn active_notify(k: &impl Kernel, frame: &mut ExceptionFrame, slot: usize, iuid: u64, opcode: u64) -> Event {
    let Some(pd) = rdma_pd(k, slot) else { return err(frame, Error::NoPd) };
    let opcode = match opcode {
        0 => None,
        raw => match (user_opcode(raw), domain_of(k, slot)) {
            (Some(op), Some(domain)) => {
                let receives =
                    k.mailbox(|m| matches!(m.receiver(op), Some(Receiver::Process { domain: d, .. }) if d == domain));
                if !receives {
                    return err(frame, Error::NotRegistered);
                }
                Some(op)
            }
            _ => return err(frame, Error::BadArgument),
        },
    };
    match k.active(|t, hw| t.notify(hw, (slot, pd), iuid, opcode)) {
        None => err(frame, Error::NoPd),
        Some(Ok(())) => ok(frame, &[0]),
        Some(Err(_)) => err(frame, Error::BadArgument),
    }
}

fn rdma_pd(k: &impl Kernel, slot: usize) -> Option<Pd> {
    k.table(|t| t.slots[slot].as_ref().and_then(|p| p.rdma_pd()))
}

fn log(k: &impl Kernel, frame: &mut ExceptionFrame, slot: usize, ptr: u64, len: u64) -> Event {
    if len > LOG_MAX {
        return err(frame, Error::BadArgument);
    }
    let mut buf = [0u8; LOG_MAX as usize];
    let line = &mut buf[..len as usize];
    let read = k.table(|t| {
        let p = t.slots[slot].as_deref_mut().ok_or(Error::BadArgument)?;
        let resident = k.make_resident(p, ptr, line.len(), false);
        if resident.is_err() || p.space.read(ptr, line).is_err() {
            return Err(Error::BadPointer);
        }
        Ok((p.domain, p.name))
    });
    let (domain, name) = match read {
        Ok(who) => who,
        Err(e) => return err(frame, e),
    };
    k.log(name, domain, core::str::from_utf8(line).unwrap_or("<not UTF-8>"));
    ok(frame, &[len])
}

/// The process's arguments into its buffer; returns their whole length.
fn copy_args(k: &impl Kernel, frame: &mut ExceptionFrame, slot: usize, ptr: u64, len: u64) -> Event {
    let copied = k.table(|t| {
        let p = t.slots[slot].as_deref_mut().ok_or(Error::BadArgument)?;
        let copied = p.args.len().min(usize::try_from(len).unwrap_or(usize::MAX));
        let resident = k.make_resident(p, ptr, copied, true);
        if copied > 0 && (resident.is_err() || p.space.copy_to_user(ptr, &p.args[..copied]).is_err()) {
            return Err(Error::BadPointer);
        }
        Ok(p.args.len() as u64)
    });
    answer(frame, copied)
}

/// The process's program-store name into its buffer; returns the name's whole length.
fn program_name(k: &impl Kernel, frame: &mut ExceptionFrame, slot: usize, ptr: u64, len: u64) -> Event {
    let copied = k.table(|t| {
        let p = t.slots[slot].as_deref_mut().ok_or(Error::BadArgument)?;
        let name = p.name.as_bytes();
        let copied = name.len().min(usize::try_from(len).unwrap_or(usize::MAX));
        let resident = k.make_resident(p, ptr, copied, true);
        if copied > 0 && (resident.is_err() || p.space.copy_to_user(ptr, &name[..copied]).is_err()) {
            return Err(Error::BadPointer);
        }
        Ok(name.len() as u64)
    });
    answer(frame, copied)
}

/// `JOB_EXIT`: the caller's job ends with `status` on every node, the caller with it. A process
/// of no job (PD 15, `NO_RDMA`) ends alone.
fn job_exit(k: &impl Kernel, frame: &mut ExceptionFrame, slot: usize, status: u64) -> Event {
    let Ok(status) = u8::try_from(status) else { return err(frame, Error::BadArgument) };
    let Some(pd) = k.table(|t| t.slots[slot].as_ref().map(|p| p.pd)) else {
        return err(frame, Error::BadArgument);
    };
    if pd != proto::rdma::domain::NO_RDMA {
        k.end_job(pd, status);
    }
    Event::Exit(Exit::Status(u64::from(status)))
}

fn wait_mif(k: &impl Kernel, frame: &mut ExceptionFrame, slot: usize, words: u64, timeout_us: u64, node: u64) -> Event {
    let Some(index) = k.table(|t| t.slots[slot].as_ref().map(|p| p.grant.index)) else {
        return err(frame, Error::BadArgument);
    };
    let Some(depth) = k.with_mif(index, |m| m.depth()) else {
        return err(frame, Error::BadArgument);
    };
    if words == 0 || words > u64::from(depth) {
        return err(frame, Error::BadArgument);
    }
    // Looked at on every try: a node lost while the process sleeps wakes it (`cluster`), and
    // the call, run again, ends here.
    if node != NO_NODE && !k.is_alive(node) {
        return err(frame, Error::Unreachable);
    }
    let count = || k.with_mif(index, |m| m.count()).map_or(0, u64::from);
    if count() >= words {
        // Woken by the interrupt, whose handler disarmed the MIF: nothing to write then.
        k.with_mif(index, MifWait::disarm_if_armed);
        return ok(frame, &[0]);
    }
    // Arm first, then look again: a word that arrives in between raises the interrupt anyway.
    k.with_mif(index, |m| m.arm(words as u32));
    if count() >= words {
        k.with_mif(index, MifWait::disarm);
        return ok(frame, &[0]);
    }
    let deadline = kept_deadline(k, frame, timeout_us);
    block_and_retry(frame, Wait::Mif { words: words as u32 }, deadline)
}

/// Arms the process's CQ and sleeps until it holds an entry (the PLDMA's CQ interrupt wakes it;
/// the call then runs again and looks).
fn rdma_wait(k: &impl Kernel, frame: &mut ExceptionFrame, slot: usize, timeout_us: u64) -> Event {
    let Some(pd) = rdma_pd(k, slot) else { return err(frame, Error::NoPd) };
    if k.arm_and_peek(pd) {
        return ok(frame, &[0]);
    }
    let deadline = kept_deadline(k, frame, timeout_us);
    block_and_retry(frame, Wait::Cq, deadline)
}

/// A call's single result, or its error.
fn answer(frame: &mut ExceptionFrame, result: Result<u64, Error>) -> Event {
    match result {
        Ok(value) => ok(frame, &[value]),
        Err(e) => err(frame, e),
    }
}

fn domain_of(k: &impl Kernel, slot: usize) -> Option<u16> {
    k.table(|t| t.slots[slot].as_ref().map(|p| p.domain))
}

/// User channels only: opcodes 8..=15 (docs/hw/gsas-packets.md, "Notifications").
fn user_opcode(raw: u64) -> Option<MailboxOpcode> {
    let op = MailboxOpcode::new(u8::try_from(raw).ok()?).ok()?;
    op.is_user().then_some(op)
}

fn mailbox_register(
    k: &impl Kernel,
    frame: &mut ExceptionFrame,
    slot: usize,
    [opcode, mode, signal]: [u64; 3],
) -> Event {
    let wake = match (mode, signal) {
        (MODE_READ, 0) => WakeMode::Read,
        (MODE_SIGNAL, n) if n < SIGNALS_MAX => WakeMode::Signal(n as u8),
        (MODE_EVENT, 0) => WakeMode::Event,
        _ => return err(frame, Error::BadArgument),
    };
    let (Some(op), Some(domain)) = (user_opcode(opcode), domain_of(k, slot)) else {
        return err(frame, Error::BadArgument);
    };
    match k.mailbox(|m| m.register(op, Receiver::Process { domain, wake })) {
        Ok(()) => ok(frame, &[0]),
        Err(_) => err(frame, Error::Busy),
    }
}

fn mailbox_unregister(k: &impl Kernel, frame: &mut ExceptionFrame, slot: usize, opcode: u64) -> Event {
    let (Some(op), Some(domain)) = (user_opcode(opcode), domain_of(k, slot)) else {
        return err(frame, Error::BadArgument);
    };
    match k.mailbox(|m| m.unregister(op, Registrant::Process(domain))) {
        Ok(done) => {
            for thread in done.woken {
                k.wake_mailbox_thread(thread);
            }
            ok(frame, &[0])
        }
        Err(_) => err(frame, Error::NotRegistered),
    }
}

/// The event counter (`MODE_EVENT` opcodes' waiting notifications), sleeping until it is not
/// zero; a delivery to one of those opcodes wakes the process (`gsas_node::run_deliveries`).
fn mailbox_event(k: &impl Kernel, frame: &mut ExceptionFrame, slot: usize, flags: u64) -> Event {
    let Some(domain) = domain_of(k, slot) else { return err(frame, Error::BadArgument) };
    if flags & !RECV_NONBLOCKING != 0 {
        return err(frame, Error::BadArgument);
    }
    match k.mailbox(|m| m.event_count(domain)) {
        None => err(frame, Error::NotRegistered),
        Some(0) if flags & RECV_NONBLOCKING != 0 => err(frame, Error::WouldBlock),
        Some(0) => block_and_retry(frame, Wait::Mailbox, None),
        Some(n) => ok(frame, &[n as u64]),
    }
}

fn mailbox_receive(
    k: &impl Kernel,
    frame: &mut ExceptionFrame,
    slot: usize,
    [opcode, flags, timeout_us]: [u64; 3],
) -> Event {
    let Some(domain) = domain_of(k, slot) else { return err(frame, Error::BadArgument) };
    let filter = match opcode {
        ANY_OPCODE => None,
        raw => match user_opcode(raw) {
            Some(op) => Some(op),
            None => return err(frame, Error::BadArgument),
        },
    };
    if flags & !RECV_NONBLOCKING != 0 {
        return err(frame, Error::BadArgument);
    }
    let mode = if flags & RECV_NONBLOCKING != 0 { RecvMode::NonBlocking } else { RecvMode::Blocking };
    // The thread id is the slot: one thread per process.
    match k.mailbox(|m| m.receive(domain, slot as u32, filter, mode)) {
        Ok(Received::Message { notification, from }) => ok(frame, &[0, notification.raw(), from.raw()]),
        Ok(Received::WouldBlock) => err(frame, Error::WouldBlock),
        Ok(Received::Blocked) if signal_pending(k, slot) => {
            // The wait would end before it begins (`Interrupted`): it must not stay among the
            // mailbox's waiters, where it would take the next delivery's wake-up (a signal or
            // an event counted) for a thread no longer waiting. Looked at after registering: a
            // signal raised since takes the waiter away itself (`gsas_node`, `raise_signal`).
            k.mailbox(|m| m.cancel_wait(domain, slot as u32));
            err(frame, Error::Interrupted)
        }
        Ok(Received::Blocked) => {
            let deadline = kept_deadline(k, frame, timeout_us);
            block_and_retry(frame, Wait::Mailbox, deadline)
        }
        Err(_) => err(frame, Error::NotRegistered),
    }
}

/// A signal is raised in the process of `slot` and not read yet: an interruptible wait of it
/// ends at once.
fn signal_pending(k: &impl Kernel, slot: usize) -> bool {
    k.table(|t| t.slots[slot].as_ref().is_some_and(|p| p.signals != 0))
}
