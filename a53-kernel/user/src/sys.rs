//! Typed wrappers for every system call of `proto::syscall`: `svc #0`, number in x8, arguments in
//! x0..x5, results in x0..x2, a negative x0 is a `proto::syscall::Error`.
//!
//! Unused argument registers are passed as 0 (the kernel keeps WAIT_MIF's deadline in x5 across
//! a retried call, so x5 must be 0 on entry) and x0..x5 are treated as clobbered. Host builds
//! have no kernel: every call answers `NoSuchCall` there.

use proto::gsas::{EMPTY_THREAD_ARGUMENT, MailboxOpcode, Notification, Pid};
use proto::syscall::{
    ANY_OPCODE, Error as SysError, LOG_MAX, MODE_EVENT, MODE_READ, MODE_SIGNAL, NO_NODE, RECV_NONBLOCKING, nr,
};

use crate::error::{Error, ProtocolError};

/// This node and how many there are (NODE_INFO).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeInfo {
    pub node: u16,
    pub nodes: u16,
}

/// The process's interface pair (INTERFACE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interface {
    /// VA of the packetizer interface page.
    pub pif: u64,
    /// VA of the mailbox interface page.
    pub mif: u64,
    /// The PID the packetizer stamps on this process's packets.
    pub pid: Pid,
}

/// The bare call: x8 = `number`, x0..x5 = `args`; returns x0..x2 unchecked. For programs that
/// test the kernel's own checks (`bad-syscalls`); everything else uses the typed wrappers.
#[cfg(all(target_arch = "aarch64", target_os = "none"))]
#[inline(always)]
pub fn raw(number: u64, args: [u64; 6]) -> [u64; 3] {
    crate::arch::svc(number, args)
}

#[cfg(not(all(target_arch = "aarch64", target_os = "none")))]
pub fn raw(_number: u64, _args: [u64; 6]) -> [u64; 3] {
    [SysError::NoSuchCall as i64 as u64, 0, 0]
}

fn call(number: u64, a0: u64, a1: u64) -> Result<[u64; 3], Error> {
    call3(number, a0, a1, 0)
}

fn call3(number: u64, a0: u64, a1: u64, a2: u64) -> Result<[u64; 3], Error> {
    call4(number, [a0, a1, a2, 0])
}

/// A call with four arguments (x4 and x5 are 0, as the kernel's retried calls need).
pub(crate) fn call4(number: u64, args: [u64; 4]) -> Result<[u64; 3], Error> {
    let r = raw(number, [args[0], args[1], args[2], args[3], 0, 0]);
    match r[0] as i64 {
        v if v < 0 => Err(SysError::from_return(v).map_or(Error::UnknownReturn(v), Error::from)),
        _ => Ok(r),
    }
}

/// Ends the process with `status` (all 64 bits reach the kernel).
pub fn exit(status: u64) -> ! {
    #[cfg(all(target_arch = "aarch64", target_os = "none"))]
    crate::arch::svc_exit(status);
    #[cfg(not(all(target_arch = "aarch64", target_os = "none")))]
    panic!("exit({status}) without a kernel")
}

/// Gives the core to another runnable process.
pub fn yield_now() {
    let _ = call(nr::YIELD, 0, 0);
}

/// Writes one line (at most `LOG_MAX` bytes, UTF-8) to the node's console.
pub fn log(line: &[u8]) -> Result<(), Error> {
    let len = line.len().min(LOG_MAX as usize);
    call(nr::LOG, line.as_ptr() as u64, len as u64).map(drop)
}

pub fn node_info() -> Result<NodeInfo, Error> {
    let [node, nodes, _] = call(nr::NODE_INFO, 0, 0)?;
    let bad = |_| Error::Protocol(ProtocolError::BadInterface);
    Ok(NodeInfo { node: u16::try_from(node).map_err(bad)?, nodes: u16::try_from(nodes).map_err(bad)? })
}

pub fn interface() -> Result<Interface, Error> {
    let [pif, mif, pid] = call(nr::INTERFACE, 0, 0)?;
    let pid = Pid::from_raw(pid).map_err(|_| Error::Protocol(ProtocolError::BadInterface))?;
    Ok(Interface { pif, mif, pid })
}

/// The raw thread argument: `EMPTY_THREAD_ARGUMENT` when the process has none. Every 64-bit
/// value is an argument, so x0 is not checked for an error here.
pub fn thread_argument_raw() -> u64 {
    raw(nr::THREAD_ARGUMENT, [0; 6])[0]
}

/// The thread argument (seed §2.3.5 `readThreadArgument`), or `NoArgument`.
pub fn thread_argument() -> Result<u64, Error> {
    match thread_argument_raw() {
        EMPTY_THREAD_ARGUMENT => Err(Error::NoArgument),
        arg => Ok(arg),
    }
}

/// Sleeps until the process's mailbox interface holds at least `words` words, or `Timeout`
/// after `timeout_us` (0: no timeout). With `from`, the wait is for that node's answer and ends
/// with `NodeUnreachable` as soon as the node is gone.
pub fn wait_mif(words: u32, timeout_us: u64, from: Option<u16>) -> Result<(), Error> {
    let node = from.map_or(NO_NODE, u64::from);
    match call3(nr::WAIT_MIF, u64::from(words), timeout_us, node) {
        Err(Error::Syscall(SysError::Unreachable)) => Err(Error::NodeUnreachable(node as u16)),
        r => r.map(drop),
    }
}

/// Copies the process's arguments (each followed by a zero byte) into `buf`; returns their
/// whole length, which is more than `buf.len()` when they did not fit.
pub fn args(buf: &mut [u8]) -> Result<usize, Error> {
    call(nr::ARGS, buf.as_mut_ptr() as u64, buf.len() as u64).map(|r| r[0] as usize)
}

/// How a process learns that a notification arrived (seed §3.2.2 `'r'`, `'s'`, `'e'`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wake {
    /// Only a blocked `mailbox_receive` is woken.
    Read,
    /// Also raise this signal (0..=63): `signals` reads it, and it ends a wait with
    /// `Syscall(Interrupted)`.
    Signal(u8),
    /// Also count it on the event counter (`mailbox_event`).
    Event,
}

pub fn mailbox_register(opcode: MailboxOpcode, wake: Wake) -> Result<(), Error> {
    let (mode, signal) = match wake {
        Wake::Read => (MODE_READ, 0),
        Wake::Signal(n) => (MODE_SIGNAL, u64::from(n)),
        Wake::Event => (MODE_EVENT, 0),
    };
    call3(nr::MAILBOX_REGISTER, u64::from(opcode.value()), mode, signal).map(drop)
}

/// The event counter: the notifications waiting on the `Wake::Event` opcodes (they stay queued
/// for `mailbox_receive`). Blocking: sleeps until it is not zero; else `Syscall(WouldBlock)`.
pub fn mailbox_event(blocking: bool) -> Result<u64, Error> {
    call(nr::MAILBOX_EVENT, if blocking { 0 } else { RECV_NONBLOCKING }, 0).map(|r| r[0])
}

/// The signals raised since the last call (bit n: signal n); they are cleared.
pub fn signals() -> Result<u64, Error> {
    call(nr::SIGNALS, 0, 0).map(|r| r[0])
}

pub fn mailbox_unregister(opcode: MailboxOpcode) -> Result<(), Error> {
    call(nr::MAILBOX_UNREGISTER, u64::from(opcode.value()), 0).map(drop)
}

/// The oldest notification for `opcode` (or any registered opcode) and its sender's PID.
/// Non-blocking: `Syscall(WouldBlock)` when there is none.
pub fn mailbox_receive(opcode: Option<MailboxOpcode>, blocking: bool) -> Result<(Notification, Pid), Error> {
    let which = opcode.map_or(ANY_OPCODE, |op| u64::from(op.value()));
    let flags = if blocking { 0 } else { RECV_NONBLOCKING };
    let [_, word, sender] = call(nr::MAILBOX_RECEIVE, which, flags)?;
    let n = Notification::from_raw(word).map_err(|_| Error::Protocol(ProtocolError::BadNotification(word)))?;
    Ok((n, Pid::from_low_bits(sender)))
}

/// A blocking receive of the oldest notification for `opcode` (or any registered opcode) that
/// gives up after `timeout_us` (0: never) with `Syscall(TimedOut)`.
pub fn mailbox_receive_within(opcode: Option<MailboxOpcode>, timeout_us: u64) -> Result<(Notification, Pid), Error> {
    let which = opcode.map_or(ANY_OPCODE, |op| u64::from(op.value()));
    let [_, word, sender] = call3(nr::MAILBOX_RECEIVE, which, 0, timeout_us)?;
    let n = Notification::from_raw(word).map_err(|_| Error::Protocol(ProtocolError::BadNotification(word)))?;
    Ok((n, Pid::from_low_bits(sender)))
}

/// The process's RDMA resources (RDMA_QUEUES): its queue set, PD page and protection domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RdmaQueues {
    pub queue_set: u64,
    pub pd_page: u64,
    pub pd: u16,
}

/// `Syscall(NoPd)` when the process holds no RDMA resources on this node.
pub fn rdma_queues() -> Result<RdmaQueues, Error> {
    let [queue_set, pd_page, pd] = call(nr::RDMA_QUEUES, 0, 0)?;
    let pd = u16::try_from(pd).ok().filter(|&p| usize::from(p) < hal::pldma::PDS);
    let pd = pd.ok_or(Error::Protocol(ProtocolError::BadInterface))?;
    Ok(RdmaQueues { queue_set, pd_page, pd })
}

/// Arms the completion queue and sleeps until it holds an entry (RDMA_WAIT), or `Timeout` after
/// `timeout_us` (0: none).
pub fn rdma_wait(timeout_us: u64) -> Result<(), Error> {
    call(nr::RDMA_WAIT, timeout_us, 0).map(drop)
}

/// A new region of `len` bytes (MAP), writable or read-only: its pages get a frame when first
/// touched. Returns its address.
pub fn map(len: u64, writable: bool) -> Result<u64, Error> {
    map_with_flags(len, if writable { proto::syscall::MAP_WRITABLE } else { 0 })
}

/// A new writable region of `len` bytes as a slice, for buffers too large for the 64 KiB
/// stack; it lasts as long as the process (host builds: leaked memory).
pub fn map_buffer(len: usize) -> Result<&'static mut [u8], Error> {
    #[cfg(all(target_arch = "aarch64", target_os = "none"))]
    {
        let va = map(len as u64, true)?;
        // SAFETY: a fresh writable region of `len` bytes that nothing else names; it is never
        // unmapped, so the slice lives as long as the process.
        Ok(unsafe { core::slice::from_raw_parts_mut(va as *mut u8, len) })
    }
    #[cfg(not(all(target_arch = "aarch64", target_os = "none")))]
    {
        let _ = len;
        Err(Error::Syscall(SysError::NoSuchCall))
    }
}

/// MAP with raw `flags` (`proto::syscall::MAP_WRITABLE`; others are refused).
pub fn map_with_flags(len: u64, flags: u64) -> Result<u64, Error> {
    call(nr::MAP, len, flags).map(|r| r[0])
}

/// A new region of `len` bytes placed at `va` (MAP with `MAP_FIXED`): `va` page-aligned, the
/// whole region inside `layout::REGIONS_START..REGIONS_END` and overlapping no region of the
/// process, else `Syscall(BadArgument)`. Returns its address (`va`).
pub fn map_fixed(va: u64, len: u64, writable: bool) -> Result<u64, Error> {
    let flags = proto::syscall::MAP_FIXED | if writable { proto::syscall::MAP_WRITABLE } else { 0 };
    call3(nr::MAP, len, flags, va).map(|r| r[0])
}

/// Copies the program's name (its program-store name) into `buf` (PROGRAM_NAME); returns the
/// name's full length, which is more than `buf.len()` when it did not fit.
pub fn program_name(buf: &mut [u8]) -> Result<usize, Error> {
    call(nr::PROGRAM_NAME, buf.as_mut_ptr() as u64, buf.len() as u64).map(|r| r[0] as usize)
}

/// Ends every process of this process's protection domain (its job) on every node with
/// `status` (JOB_EXIT), this one too. A process without RDMA (PD 15) ends only itself.
pub fn job_exit(status: u8) -> ! {
    let _ = call(nr::JOB_EXIT, u64::from(status), 0);
    // The kernel does not return from JOB_EXIT; a kernel without it (or a host build) has
    // answered with an error: end this process at least.
    exit(u64::from(status))
}

/// Removes the region `map` returned at `va` (UNMAP); returns the pages that were resident.
pub fn unmap(va: u64, len: u64) -> Result<u64, Error> {
    call(nr::UNMAP, va, len).map(|r| r[0])
}

/// Makes the pages of `[va, va + len)` non-resident (EVICT, `madvise(DONTNEED)`); returns how
/// many were resident. Their next touch, by the CPU or an RDMA transfer, faults them in zeroed.
pub fn evict(va: u64, len: u64) -> Result<u64, Error> {
    call(nr::EVICT, va, len).map(|r| r[0])
}

/// Microseconds since boot.
pub fn time_us() -> Result<u64, Error> {
    call(nr::TIME_US, 0, 0).map(|r| r[0])
}

/// Sleeps at least `us` microseconds.
pub fn sleep_us(us: u64) -> Result<(), Error> {
    call(nr::SLEEP_US, us, 0).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_builds_have_no_kernel() {
        assert_eq!(node_info(), Err(Error::Syscall(SysError::NoSuchCall)));
        assert_eq!(wait_mif(2, 10, None), Err(Error::Syscall(SysError::NoSuchCall)));
        assert_eq!(log(b"x"), Err(Error::Syscall(SysError::NoSuchCall)));
    }
}
