//! `unimem_active.h`: Active Access for C programs (`docs/hw/active-access.md`), over
//! `unimem_user::active`: a log per IUID the process opened (until it closes it), the seed's
//! `assoc_page(addr, act, hlr_id)` with the IUID as the handler id, the log's entries one at a
//! time (the handler is the C program's loop, polling), and the seed's `flush(target)` over the
//! RDMA queues `unim_dma_init` opened, the target named as `unim_dma.h` names nodes.

use core::ffi::c_void;

use proto::gsas::MailboxOpcode;
use unimem_user::Error;
use unimem_user::active::{IUIDS, Log, assoc_page, flush};

use crate::dma::{UnimDmaNode, dma, node_of};
use crate::status::{CError, deliver, status};

/// The logs this process opened, by IUID.
static LOGS: spin::Mutex<[Option<Log>; IUIDS]> = spin::Mutex::new([const { None }; IUIDS]);

/// Bytes of an entry's header as `unimem_active_next` copies it.
pub const ENTRY_BYTES: u64 = 32;
/// Most bytes of an entry's data.
pub const MAX_DATA: u64 = 256;

fn with_log<T>(iuid: u32, f: impl FnOnce(&mut Log) -> Result<T, CError>) -> Result<T, CError> {
    let mut logs = LOGS.lock();
    let log = usize::try_from(iuid).ok().and_then(|i| logs.get_mut(i)).and_then(Option::as_mut);
    f(log.ok_or(CError::BadArgument)?)
}

/// `uint64_t unimem_active_open(uint32_t *iuid)`: a status; the IUID of a new (empty) log in
/// `*iuid`. `UNIMEM_E_SYSCALL + UNIMEM_SYS_NO_PD` without RDMA here, `+ BUSY` with none left.
///
/// # Safety
///
/// `iuid` is NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unimem_active_open(iuid: *mut u32) -> u64 {
    // SAFETY: forwarded from the caller.
    unsafe {
        deliver(iuid, || {
            let log = Log::open()?;
            let i = log.iuid();
            let mut logs = LOGS.lock();
            let slot = logs.get_mut(usize::from(i)).ok_or(CError::Lib(Error::Busy))?;
            *slot = Some(log);
            Ok(u32::from(i))
        })
    }
}

/// `uint64_t unimem_active_notify(uint32_t iuid, uint32_t opcode)`: a status; log `iuid` tells
/// this process of its entries on mailbox `opcode` (8..=15, which this process receives), or
/// is polled again (0) (`Log::notify_on`).
#[unsafe(no_mangle)]
pub extern "C" fn unimem_active_notify(iuid: u32, opcode: u32) -> u64 {
    let opcode = match opcode {
        0 => Ok(None),
        raw => u8::try_from(raw)
            .ok()
            .and_then(|op| MailboxOpcode::new(op).ok())
            .filter(|op| op.is_user())
            .map(Some)
            .ok_or(CError::BadArgument),
    };
    status(opcode.and_then(|op| with_log(iuid, |log| Ok(log.notify_on(op)?))))
}

/// How often `unimem_active_wait` looks at a log that does not notify.
const NAP_US: u64 = 1000;

/// `uint64_t unimem_active_wait(uint32_t iuid, uint64_t timeout_us)`: a status; returns once
/// entries wait in log `iuid`, or `UNIMEM_E_TIMEOUT` after `timeout_us`
/// (`Log::wait_for_entries`).
#[unsafe(no_mangle)]
pub extern "C" fn unimem_active_wait(iuid: u32, timeout_us: u64) -> u64 {
    status(with_log(iuid, |log| Ok(log.wait_for_entries(timeout_us, NAP_US)?)))
}

/// `uint64_t unimem_active_close(uint32_t iuid)`: a status; gives log `iuid` back
/// (`ACTIVE_CLOSE`): its pages unmarked, the log invalidated and unmapped, the IUID free for the
/// next `unimem_active_open` on this node. `UNIMEM_E_BAD_ARGUMENT` for an IUID this process has
/// not open.
#[unsafe(no_mangle)]
pub extern "C" fn unimem_active_close(iuid: u32) -> u64 {
    let log = usize::try_from(iuid).ok().and_then(|i| LOGS.lock().get_mut(i).and_then(Option::take));
    status(log.ok_or(CError::BadArgument).and_then(|log| Ok(log.close()?)))
}

/// `uint64_t unimem_active_flush(unim_dma_node_t node, uint64_t flushing_page, uint64_t
/// timeout_us)`: a status; the seed's `flush(target)`: returns once `node`'s handler has taken
/// every entry its log held when the flush arrived, so every active access this process issued
/// to `node` and saw complete was taken (`unimem_user::active::flush`: an RDMA read of 8 bytes
/// of the flushing page at `flushing_page` there, on the queues of `unim_dma_init`).
/// `UNIMEM_E_TIMEOUT` after `timeout_us` (0: none); `UNIMEM_E_NOT_INITIALISED` before
/// `unim_dma_init`; `UNIMEM_E_NULL` for a NULL node.
#[unsafe(no_mangle)]
pub extern "C" fn unimem_active_flush(node: *const UnimDmaNode, flushing_page: u64, timeout_us: u64) -> u64 {
    let target = node_of(node);
    status(target.and_then(|target| dma(|d| Ok(flush(d.rdma(), target, flushing_page, timeout_us)?))))
}

/// `uint64_t unimem_assoc_page(void *addr, uint64_t actions, uint32_t handler)`: the seed's
/// `assoc_page`: marks the page holding `addr` with `actions` (`UNIMEM_ACTIVE_*`; 0 unmarks)
/// for the log of IUID `handler`, which must be this process's.
#[unsafe(no_mangle)]
pub extern "C" fn unimem_assoc_page(addr: *mut c_void, actions: u64, handler: u32) -> u64 {
    let handler = u8::try_from(handler).map_err(|_| CError::BadArgument);
    status(handler.and_then(|h| Ok(assoc_page(addr as u64, actions, h)?)))
}

/// The oldest entry of log `iuid`, taken: its header's 32 bytes, its data and the data's length.
fn next(iuid: u32) -> Result<([u8; 32], [u8; MAX_DATA as usize], usize), CError> {
    with_log(iuid, |log| {
        let mut entries = log.entries();
        let Some(e) = entries.next() else {
            entries.release()?;
            return Err(Error::Syscall(unimem_user::SysError::WouldBlock).into());
        };
        let mut data = [0u8; MAX_DATA as usize];
        let n = e.data.len().min(data.len());
        data[..n].copy_from_slice(&e.data[..n]);
        let header = e.header.encode();
        entries.release()?;
        Ok((header, data, n))
    })
}

/// `uint64_t unimem_active_next(uint32_t iuid, void *entry, void *data, uint64_t *len)`: a
/// status; the oldest entry of log `iuid` taken: its 32-byte header copied to `entry` (layout:
/// `docs/hw/active-access.md`, "Log entry header"), its data to `data` (room for
/// `UNIMEM_ACTIVE_MAX_DATA` bytes), the data's length
/// in `*len`. `UNIMEM_E_WOULD_BLOCK` when none waits. A NULL `entry` or `len`, or a NULL `data`
/// for an entry with data, is refused before any entry is taken.
///
/// # Safety
///
/// `entry` is NULL or valid for 32 bytes of writes, `data` NULL or valid for
/// `UNIMEM_ACTIVE_MAX_DATA`, `len` NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unimem_active_next(iuid: u32, entry: *mut c_void, data: *mut c_void, len: *mut u64) -> u64 {
    if entry.is_null() || data.is_null() {
        // Without a data buffer only a log of metadata can be read: refuse it all the same
        // rather than take an entry whose data would be lost.
        return status(Err(CError::Null));
    }
    // SAFETY: forwarded from the caller; `entry` and `data` are not NULL, so valid for 32 and
    // `MAX_DATA` bytes (its contract), and `len` is checked by `deliver`.
    unsafe {
        deliver(len, || {
            let (header, bytes, n) = next(iuid)?;
            core::ptr::copy_nonoverlapping(header.as_ptr(), entry as *mut u8, header.len());
            core::ptr::copy_nonoverlapping(bytes.as_ptr(), data as *mut u8, n);
            Ok(n as u64)
        })
    }
}

/// `uint64_t unimem_active_pending(uint32_t iuid, uint64_t *pending)`: a status; whether
/// entries wait in log `iuid` (1) or not (0).
///
/// # Safety
///
/// `pending` is NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unimem_active_pending(iuid: u32, pending: *mut u64) -> u64 {
    // SAFETY: forwarded from the caller.
    unsafe { deliver(pending, || with_log(iuid, |log| Ok(u64::from(log.pending())))) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::code;

    #[test]
    fn bad_arguments_are_statuses_and_no_entry_is_taken() {
        let (mut entry, mut data, mut len, mut iuid) = ([0u8; 32], [0u8; 256], 7u64, 0u32);
        let e = entry.as_mut_ptr() as *mut c_void;
        let d = data.as_mut_ptr() as *mut c_void;
        // SAFETY: the test's buffers, of the sizes the calls need.
        unsafe {
            assert_eq!(unimem_active_next(0, core::ptr::null_mut(), d, &mut len), code::NULL);
            assert_eq!(unimem_active_next(0, e, core::ptr::null_mut(), &mut len), code::NULL);
            assert_eq!(unimem_active_next(0, e, d, core::ptr::null_mut()), code::NULL);
            // No log opened with that IUID (16 is none at all).
            assert_eq!(unimem_active_next(0, e, d, &mut len), code::BAD_ARGUMENT);
            assert_eq!(unimem_active_next(16, e, d, &mut len), code::BAD_ARGUMENT);
            assert_eq!(unimem_active_pending(3, &mut len), code::BAD_ARGUMENT);
            assert_eq!(unimem_active_open(core::ptr::null_mut()), code::NULL);
            // The host has no kernel: the call's own error, not a crash.
            assert_ne!(unimem_active_open(&mut iuid), code::OK);
        }
        assert_eq!(unimem_active_notify(0, 9), code::BAD_ARGUMENT, "no log opened");
        assert_eq!(unimem_active_notify(0, 3), code::BAD_ARGUMENT, "a kernel opcode");
        assert_eq!(unimem_active_notify(0, 256), code::BAD_ARGUMENT, "no opcode at all");
        assert_eq!(unimem_active_wait(16, 10), code::BAD_ARGUMENT);
        assert_eq!(len, 7, "nothing written on refusal");
        assert_eq!(unimem_assoc_page(core::ptr::null_mut(), 2, 256), code::BAD_ARGUMENT, "not an IUID");
        // Closing a log this process has not open, or no IUID.
        assert_eq!(unimem_active_close(3), code::BAD_ARGUMENT);
        assert_eq!(unimem_active_close(16), code::BAD_ARGUMENT);
        assert_eq!(unimem_active_close(u32::MAX), code::BAD_ARGUMENT);
    }

    #[test]
    fn a_flush_needs_a_node_and_the_rdma_queues() {
        assert_eq!(unimem_active_flush(core::ptr::null(), 0x1000, 0), code::NULL);
        let not_initialised = unimem_user::unim::UnimError::NotInitialised.exit_status();
        // The host has no kernel: `unim_dma_init` never succeeds, so the flush is refused.
        assert_eq!(crate::dma::unim_dma_init(0), -1);
        assert_eq!(unimem_active_flush(crate::dma::node_object(1), 0x1000, 0), not_initialised);
        assert_eq!(crate::status::unimem_last_error(), not_initialised, "the status is left for unimem_last_error");
    }
}
