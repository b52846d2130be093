//! The seed's API (D3.6 §2.3) as free functions over the process's one client, with `Result`
//! errors where the seed "exits abnormally". The client is opened on first use (NODE_INFO and
//! INTERFACE) and kept for the life of the process.

use hal::packetizer::base_window;
use proto::gsas::{ErrorCode, GlobalAddress, MailboxOpcode, Notification, PAGE_SIZE, Pid};
use spin::Mutex;

use crate::client::{Gsas, Stats};
use crate::error::Error;
use crate::hw::Hw;
use crate::sys;
use proto::gsas::{Sharing, VaOp, VaWidth};

static CLIENT: Mutex<Option<Gsas<Hw>>> = Mutex::new(None);

/// Runs `f` on the process's client, opening it on first use. `Busy` if called from inside `f`.
pub fn with_client<R>(f: impl FnOnce(&mut Gsas<Hw>) -> Result<R, Error>) -> Result<R, Error> {
    let mut slot = CLIENT.try_lock().ok_or(Error::Busy)?;
    let client = match &mut *slot {
        Some(client) => client,
        empty => {
            let info = sys::node_info()?;
            let interface = sys::interface()?;
            let me = interface.pid;
            // SAFETY: the interface pair is this process's, and `CLIENT` (locked here) holds the
            // only `Hw`.
            let hw = unsafe { Hw::new(interface)? };
            let window = base_window(board::pl::VMBOX_BASE);
            empty.insert(Gsas::new(hw, me, info.node, info.nodes, window))
        }
    };
    f(client)
}

/// The number of nodes (seed `getNumberBoards`).
pub fn board_count() -> Result<u16, Error> {
    sys::node_info().map(|i| i.nodes)
}

/// This node (seed `getBoardPid`).
pub fn board_id() -> Result<u16, Error> {
    sys::node_info().map(|i| i.node)
}

/// The PID the packetizer stamps on this process's packets.
pub fn my_pid() -> Result<Pid, Error> {
    sys::interface().map(|i| i.pid)
}

/// The thread argument (seed `readThreadArgument`), `NoArgument` without one.
pub fn thread_argument() -> Result<u64, Error> {
    sys::thread_argument()
}

/// How long a request may wait for its answer (NACKs included) before `Timeout`; 20 s unless
/// set. A node that dies ends the wait at once with `NodeUnreachable`, whatever this is.
pub fn set_request_timeout_us(us: u64) -> Result<(), Error> {
    with_client(|g| {
        g.set_timeout_us(us);
        Ok(())
    })
}

pub fn stats() -> Result<Stats, Error> {
    with_client(|g| Ok(g.stats()))
}

/// `pages` consecutive zeroed pages on `node`, readable and writable by every domain (seed
/// `allocSharedPage`).
pub fn alloc_shared(pages: u16, node: u16) -> Result<GlobalAddress, Error> {
    alloc_shared_with(pages, node, Sharing::Shared)
}

pub fn alloc_shared_with(pages: u16, node: u16, sharing: Sharing) -> Result<GlobalAddress, Error> {
    with_client(|g| g.alloc_shared(pages, node, sharing))
}

/// Frees the allocation starting at `address`; returns the pages freed.
pub fn free_shared(address: GlobalAddress) -> Result<u64, Error> {
    with_client(|g| g.free_shared(address))
}

pub fn read8(address: GlobalAddress) -> Result<u8, Error> {
    with_client(|g| g.read8(address))
}

pub fn read32(address: GlobalAddress) -> Result<u32, Error> {
    with_client(|g| g.read32(address))
}

pub fn read64(address: GlobalAddress) -> Result<u64, Error> {
    with_client(|g| g.read64(address))
}

/// Atomic read of a whole page; returns 4096.
pub fn read4k(address: GlobalAddress, page: &mut [u8; PAGE_SIZE as usize]) -> Result<usize, Error> {
    with_client(|g| g.read4k(address, page))
}

pub fn write8(address: GlobalAddress, value: u8) -> Result<(), Error> {
    with_client(|g| g.write8(address, value))
}

pub fn write32(address: GlobalAddress, value: u32) -> Result<(), Error> {
    with_client(|g| g.write32(address, value))
}

pub fn write64(address: GlobalAddress, value: u64) -> Result<(), Error> {
    with_client(|g| g.write64(address, value))
}

/// Low 64 bits at `address`, high 64 bits at `address + 8`, atomically.
pub fn write128(address: GlobalAddress, value: u128) -> Result<(), Error> {
    with_client(|g| g.write128(address, value))
}

/// Whether the word held `expected` and now holds `new`.
pub fn cas64(address: GlobalAddress, expected: u64, new: u64) -> Result<bool, Error> {
    with_client(|g| g.cas64(address, expected, new))
}

/// Adds `addend`; returns the old value.
pub fn fad64(address: GlobalAddress, addend: i64) -> Result<u64, Error> {
    with_client(|g| g.fad64(address, addend))
}

/// Stores `new`; returns the old value.
pub fn swap64(address: GlobalAddress, new: u64) -> Result<u64, Error> {
    with_client(|g| g.swap64(address, new))
}

/// A process atomic on the virtual address `va` in the process of this process's protection
/// domain on `node` (`Gsas::va_atomic`): returns the old value; `Service(NoProcess)` when no
/// process of this PD lives there.
pub fn va_atomic(op: VaOp, width: VaWidth, node: u16, va: u64, arg1: u64, arg2: u64) -> Result<u64, Error> {
    with_client(|g| g.va_atomic(op, width, node, va, arg1, arg2))
}

/// Runs image `program` on `node` with argument `arg` (seed `remoteFork`); returns the child's
/// handle.
pub fn remote_spawn(program: &str, arg: u64, node: u16) -> Result<u64, Error> {
    with_client(|g| g.remote_spawn(program, arg, node))
}

/// Sends `n` to `node` (GSAS Notify); `Service(NoReceiver)` if nobody registered its opcode.
pub fn notify(node: u16, n: Notification) -> Result<(), Error> {
    with_client(|g| g.notify(node, n))
}

/// [`notify`], retried every 5 ms for up to `within_us` while the receiver has not registered
/// for the opcode yet or its queue is full (a peer that is still starting up).
pub fn notify_when_ready(node: u16, n: Notification, within_us: u64) -> Result<(), Error> {
    let start = sys::time_us()?;
    loop {
        match notify(node, n) {
            Err(Error::Service(ErrorCode::NoReceiver | ErrorCode::QueueFull))
                if sys::time_us()? - start < within_us =>
            {
                sys::sleep_us(5_000)?
            }
            r => return r,
        }
    }
}

/// Receives `opcode`'s notifications from now on (user channels 0x8..=0xF), woken by a
/// blocked `receive` only.
pub fn register(opcode: MailboxOpcode) -> Result<(), Error> {
    sys::mailbox_register(opcode, sys::Wake::Read)
}

pub fn unregister(opcode: MailboxOpcode) -> Result<(), Error> {
    sys::mailbox_unregister(opcode)
}

/// The oldest notification for `opcode` (`None`: any registered one) and its sender. With
/// `blocking` false and nothing queued: `Syscall(WouldBlock)`.
pub fn receive(opcode: Option<MailboxOpcode>, blocking: bool) -> Result<(Notification, Pid), Error> {
    sys::mailbox_receive(opcode, blocking)
}
