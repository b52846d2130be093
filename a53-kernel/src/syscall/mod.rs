//! System calls (`proto::syscall`, `docs/hw/syscalls.md`): `svc #0`, number in x8, arguments in
//! x0..x5, results in x0..x2. Every argument is checked; a bad pointer or length is an error
//! return. User memory is only read through the process's own page table and the kernel's view
//! of its frames, never by dereferencing a user address.

pub mod socket;

use crate::exception::UserEntry;
use crate::gsas::mailbox::{Received, Receiver, RecvMode, Registrant, WakeMode};
use crate::gsas_node;
use crate::process::lifecycle::TABLE;
use crate::process::scheduler::{self, Event, current};
use crate::process::table::{Exit, Wait};
use boot::a53::ExceptionFrame;
use hal::vmbox::driver::MifIrq;
use proto::gsas::MailboxOpcode;
use proto::syscall::layout::{PD_PAGE, RDMA_QUEUE_SET};
use proto::syscall::{
    ANY_OPCODE, Error, LOG_MAX, MODE_EVENT, MODE_READ, MODE_SIGNAL, NO_NODE, RECV_NONBLOCKING, SIGNALS_MAX, nr,
};

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

/// The counter value `us` microseconds from now (a wait's deadline), or none for 0.
pub(super) fn deadline_after_us(us: u64) -> Option<u64> {
    (us != 0).then(|| crate::timer::deadline_in(core::time::Duration::from_micros(us)).ticks())
}

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
pub fn handle(frame: &mut ExceptionFrame) -> Event {
    let Some(slot) = current() else { return Event::Continue };
    let args = [frame.x[0], frame.x[1], frame.x[2]];
    match frame.x[8] {
        nr::EXIT => Event::Exit(Exit::Status(args[0])),
        nr::YIELD => {
            frame.x[0] = 0;
            Event::Yield
        }
        nr::LOG => log(frame, slot, args[0], args[1]),
        nr::NODE_INFO => {
            let (node, count) = crate::cluster::node_and_count();
            ok(frame, &[u64::from(node), u64::from(count)])
        }
        nr::INTERFACE => {
            let pid = TABLE.lock().pid_of(slot);
            match pid {
                Some(pid) => {
                    ok(frame, &[proto::syscall::layout::PIF_PAGE, proto::syscall::layout::MIF_PAGE, pid.raw()])
                }
                None => err(frame, Error::BadArgument),
            }
        }
        nr::THREAD_ARGUMENT => {
            let arg = TABLE.lock().slots[slot].as_ref().map_or(proto::gsas::EMPTY_THREAD_ARGUMENT, |p| p.argument);
            ok(frame, &[arg])
        }
        nr::WAIT_MIF => wait_mif(frame, slot, args[0], args[1], args[2]),
        nr::ARGS => copy_args(frame, slot, args[0], args[1]),
        nr::MAILBOX_REGISTER => mailbox_register(frame, slot, args),
        nr::MAILBOX_UNREGISTER => mailbox_unregister(frame, slot, args[0]),
        nr::MAILBOX_RECEIVE => mailbox_receive(frame, slot, args[0], args[1]),
        nr::TIME_US => ok(frame, &[crate::timer::uptime_us()]),
        nr::SLEEP_US => {
            frame.x[0] = 0;
            match deadline_after_us(args[0]) {
                Some(d) => Event::Block { wait: Wait::Sleep, deadline: Some(d) },
                None => Event::Continue,
            }
        }
        nr::RDMA_QUEUES => {
            let pd = TABLE.lock().slots[slot].as_ref().and_then(|p| p.rdma_pd());
            match pd {
                Some(pd) => ok(frame, &[RDMA_QUEUE_SET, PD_PAGE, u64::from(pd.raw())]),
                None => err(frame, Error::NoPd),
            }
        }
        nr::RDMA_WAIT => rdma_wait(frame, slot, args[0]),
        nr::MAP => answer(frame, crate::process::paging::map(slot, args[0], args[1])),
        nr::UNMAP => answer(frame, crate::process::paging::unmap(slot, args[0], args[1])),
        nr::EVICT => answer(frame, crate::process::paging::evict(slot, args[0], args[1])),
        nr::MAILBOX_EVENT => mailbox_event(frame, slot, args[0]),
        nr::SIGNALS => {
            let raised = TABLE.lock().slots[slot].as_mut().map_or(0, |p| core::mem::take(&mut p.signals));
            ok(frame, &[raised])
        }
        nr::SOCKET_LISTEN..=nr::SOCKET_STATS => socket::handle(frame, slot),
        _ => err(frame, Error::NoSuchCall),
    }
}

fn log(frame: &mut ExceptionFrame, slot: usize, ptr: u64, len: u64) -> Event {
    if len > LOG_MAX {
        return err(frame, Error::BadArgument);
    }
    let mut buf = [0u8; LOG_MAX as usize];
    let line = &mut buf[..len as usize];
    let mut table = TABLE.lock();
    let Some(p) = table.slots[slot].as_deref_mut() else { return err(frame, Error::BadArgument) };
    let resident = crate::process::paging::make_resident(p, ptr, line.len(), false);
    if resident.is_err() || p.space.read(ptr, line).is_err() {
        drop(table);
        return err(frame, Error::BadPointer);
    }
    let (domain, name) = (p.domain, p.name);
    drop(table);
    let text = core::str::from_utf8(line).unwrap_or("<not UTF-8>");
    defmt::println!("[{=str} {=u16}] {=str}", name, domain, text);
    ok(frame, &[len])
}

/// The process's arguments into its buffer; returns their whole length.
fn copy_args(frame: &mut ExceptionFrame, slot: usize, ptr: u64, len: u64) -> Event {
    let mut table = TABLE.lock();
    let Some(p) = table.slots[slot].as_deref_mut() else { return err(frame, Error::BadArgument) };
    let copied = p.args.len().min(usize::try_from(len).unwrap_or(usize::MAX));
    let resident = crate::process::paging::make_resident(p, ptr, copied, true);
    if copied > 0 && (resident.is_err() || p.space.copy_to_user(ptr, &p.args[..copied]).is_err()) {
        drop(table);
        return err(frame, Error::BadPointer);
    }
    let total = p.args.len() as u64;
    drop(table);
    ok(frame, &[total])
}

fn wait_mif(frame: &mut ExceptionFrame, slot: usize, words: u64, timeout_us: u64, node: u64) -> Event {
    let Some(index) = gsas_node::process_mif(slot) else { return err(frame, Error::BadArgument) };
    // One register operation per lock: the interrupt handler disarming this MIF never waits long.
    let Some(depth) = gsas_node::with_process_mif(index, |m| m.depth()) else {
        return err(frame, Error::BadArgument);
    };
    if words == 0 || words > u64::from(depth) {
        return err(frame, Error::BadArgument);
    }
    // Looked at on every try: a node lost while the process sleeps wakes it (`cluster`), and
    // the call, run again, ends here.
    if node != NO_NODE && !crate::cluster::is_alive(node) {
        return err(frame, Error::Unreachable);
    }
    let count = || gsas_node::with_process_mif(index, |m| m.count()).map_or(0, u64::from);
    if count() >= words {
        // Woken by the interrupt, whose handler disarmed the MIF: nothing to write then.
        gsas_node::with_process_mif(index, MifIrq::disarm_if_armed);
        return ok(frame, &[0]);
    }
    // Arm first, then look again: a word that arrives in between raises the interrupt anyway.
    gsas_node::with_process_mif(index, |m| m.arm(words as u32));
    if count() >= words {
        gsas_node::with_process_mif(index, MifIrq::disarm);
        return ok(frame, &[0]);
    }
    // A retry after the wake-up re-checks; the deadline is absolute, so it does not restart.
    let deadline = match frame.x[5] {
        0 => deadline_after_us(timeout_us),
        d => Some(d),
    };
    frame.x[5] = deadline.unwrap_or(0);
    block_and_retry(frame, Wait::Mif { words: words as u32 }, deadline)
}

/// Arms the process's CQ and sleeps until it holds an entry (the PLDMA's CQ interrupt wakes it;
/// the call then runs again and looks).
fn rdma_wait(frame: &mut ExceptionFrame, slot: usize, timeout_us: u64) -> Event {
    let pd = TABLE.lock().slots[slot].as_ref().and_then(|p| p.rdma_pd());
    let Some(pd) = pd else { return err(frame, Error::NoPd) };
    if crate::rdma_node::arm_and_peek(pd) {
        return ok(frame, &[0]);
    }
    let deadline = match frame.x[5] {
        0 => deadline_after_us(timeout_us),
        d => Some(d),
    };
    frame.x[5] = deadline.unwrap_or(0);
    block_and_retry(frame, Wait::Cq, deadline)
}

/// A call's single result, or its error.
fn answer(frame: &mut ExceptionFrame, result: Result<u64, Error>) -> Event {
    match result {
        Ok(value) => ok(frame, &[value]),
        Err(e) => err(frame, e),
    }
}

fn domain_of(slot: usize) -> Option<u16> {
    TABLE.lock().slots[slot].as_ref().map(|p| p.domain)
}

/// User channels only: opcodes 8..=15 (docs/hw/gsas-packets.md, "Notifications").
fn user_opcode(raw: u64) -> Option<MailboxOpcode> {
    let op = MailboxOpcode::new(u8::try_from(raw).ok()?).ok()?;
    op.is_user().then_some(op)
}

fn mailbox_register(frame: &mut ExceptionFrame, slot: usize, [opcode, mode, signal]: [u64; 3]) -> Event {
    let wake = match (mode, signal) {
        (MODE_READ, 0) => WakeMode::Read,
        (MODE_SIGNAL, n) if n < SIGNALS_MAX => WakeMode::Signal(n as u8),
        (MODE_EVENT, 0) => WakeMode::Event,
        _ => return err(frame, Error::BadArgument),
    };
    let (Some(op), Some(domain)) = (user_opcode(opcode), domain_of(slot)) else {
        return err(frame, Error::BadArgument);
    };
    match gsas_node::mailbox().lock().register(op, Receiver::Process { domain, wake }) {
        Ok(()) => ok(frame, &[0]),
        Err(_) => err(frame, Error::Busy),
    }
}

fn mailbox_unregister(frame: &mut ExceptionFrame, slot: usize, opcode: u64) -> Event {
    let (Some(op), Some(domain)) = (user_opcode(opcode), domain_of(slot)) else {
        return err(frame, Error::BadArgument);
    };
    let result = gsas_node::mailbox().lock().unregister(op, Registrant::Process(domain));
    match result {
        Ok(done) => {
            for thread in done.woken {
                gsas_node::wake_mailbox_thread(thread);
            }
            ok(frame, &[0])
        }
        Err(_) => err(frame, Error::NotRegistered),
    }
}

/// The event counter (`MODE_EVENT` opcodes' waiting notifications), sleeping until it is not
/// zero; a delivery to one of those opcodes wakes the process (`gsas_node::run_deliveries`).
fn mailbox_event(frame: &mut ExceptionFrame, slot: usize, flags: u64) -> Event {
    let Some(domain) = domain_of(slot) else { return err(frame, Error::BadArgument) };
    if flags & !RECV_NONBLOCKING != 0 {
        return err(frame, Error::BadArgument);
    }
    let count = gsas_node::mailbox().lock().event_count(domain);
    match count {
        None => err(frame, Error::NotRegistered),
        Some(0) if flags & RECV_NONBLOCKING != 0 => err(frame, Error::WouldBlock),
        Some(0) => block_and_retry(frame, Wait::Mailbox, None),
        Some(n) => ok(frame, &[n as u64]),
    }
}

fn mailbox_receive(frame: &mut ExceptionFrame, slot: usize, opcode: u64, flags: u64) -> Event {
    let Some(domain) = domain_of(slot) else { return err(frame, Error::BadArgument) };
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
    let received = gsas_node::mailbox().lock().receive(domain, slot as u32, filter, mode);
    match received {
        Ok(Received::Message { notification, from }) => ok(frame, &[0, notification.raw(), from.raw()]),
        Ok(Received::WouldBlock) => err(frame, Error::WouldBlock),
        Ok(Received::Blocked) => block_and_retry(frame, Wait::Mailbox, None),
        Err(_) => err(frame, Error::NotRegistered),
    }
}
