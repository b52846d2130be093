//! How the C API reports failure (`unimem_error.h`): a status number per error, the process's
//! last one (`unimem_last_error`), and the seed's "the application exits abnormally".
//!
//! A status is the exit status a Rust program failing with the same error ends with
//! (`unimem_user::Error::exit_status`, `UnimError::exit_status`; `README.md`, "Exit statuses"),
//! so a C program that exits with it is read the same way; the C layer adds two of its own.

use core::fmt::{self, Write};
use core::sync::atomic::{AtomicU64, Ordering};

use unimem_user::unim::UnimError;
use unimem_user::{Error, Line};

/// The statuses only the C layer gives (the others are the library's exit statuses).
pub mod code {
    /// Success.
    pub const OK: u64 = 0;
    /// A pointer that must not be NULL was.
    pub const NULL: u64 = 0x400;
    /// An argument out of its range: a mailbox opcode, mode or signal number, or a node object
    /// `unim_dma_get_node` did not give.
    pub const BAD_ARGUMENT: u64 = 0x401;
}

/// Why a call of the C API failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CError {
    /// The user library refused or failed.
    Lib(Error),
    /// The RDMA calls refused (`unimem_user::unim`).
    Unim(UnimError),
    /// A pointer that must not be NULL was.
    Null,
    /// An argument out of its range.
    BadArgument,
}

impl CError {
    /// Its status number.
    pub fn status(self) -> u64 {
        match self {
            CError::Lib(e) => e.exit_status(),
            CError::Unim(e) => e.exit_status(),
            CError::Null => code::NULL,
            CError::BadArgument => code::BAD_ARGUMENT,
        }
    }
}

impl From<Error> for CError {
    fn from(e: Error) -> Self {
        CError::Lib(e)
    }
}

/// The library's errors inside the RDMA layer's are reported as the library's, so that one
/// error has one status whichever call met it.
impl From<UnimError> for CError {
    fn from(e: UnimError) -> Self {
        match e {
            UnimError::Lib(e) => CError::Lib(e),
            e => CError::Unim(e),
        }
    }
}

impl fmt::Display for CError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CError::Lib(e) => write!(f, "{e:?}"),
            CError::Unim(e) => write!(f, "{e:?}"),
            CError::Null => f.write_str("a NULL pointer"),
            CError::BadArgument => f.write_str("an argument out of range"),
        }
    }
}

// A process has one thread. Host tests run in parallel threads, each with its own, so that
// one test's calls cannot change what another reads.
#[cfg(not(test))]
static LAST: AtomicU64 = AtomicU64::new(code::OK);
#[cfg(test)]
std::thread_local! {
    static LAST: AtomicU64 = const { AtomicU64::new(code::OK) };
}

fn set_last(status: u64) {
    #[cfg(not(test))]
    LAST.store(status, Ordering::Relaxed);
    #[cfg(test)]
    LAST.with(|l| l.store(status, Ordering::Relaxed));
}

fn last() -> u64 {
    #[cfg(not(test))]
    return LAST.load(Ordering::Relaxed);
    #[cfg(test)]
    LAST.with(|l| l.load(Ordering::Relaxed))
}

/// Notes `result` as the last call's outcome (0, or the error's status) and hands it on.
pub(crate) fn record<T>(result: Result<T, CError>) -> Result<T, CError> {
    set_last(result.as_ref().err().map_or(code::OK, |e| e.status()));
    result
}

/// The outcome as a status to return, noted as the last one.
pub(crate) fn status(result: Result<(), CError>) -> u64 {
    record(result).err().map_or(code::OK, CError::status)
}

/// The value for `out`, or a status: NULL `out` is refused before `op` runs (no request goes
/// out for a result nobody can receive), and `out` is written only on success.
///
/// # Safety
///
/// `out` is NULL or valid for one write of a `T`.
pub(crate) unsafe fn deliver<T>(out: *mut T, op: impl FnOnce() -> Result<T, CError>) -> u64 {
    let result = if out.is_null() { Err(CError::Null) } else { op() };
    match record(result) {
        Ok(value) => {
            // SAFETY: not NULL (checked above), and valid for a write (the caller's contract).
            unsafe { out.write(value) };
            code::OK
        }
        Err(e) => e.status(),
    }
}

/// The seed's calls whose failure "exits abnormally" (§2.3.3): the value, or the process ends
/// after logging which call failed on which address, with the error's status.
pub(crate) fn or_exit<T>(call: &str, address: Option<u64>, result: Result<T, CError>) -> T {
    match record(result) {
        Ok(value) => value,
        Err(e) => {
            let _ = unimem_user::sys::log(exit_line(call, address, e).as_str().as_bytes());
            unimem_user::sys::exit(e.status())
        }
    }
}

/// The line logged before such an exit: `READ64(0x1000000001004): Local(Unaligned), exit status
/// 0x182`.
pub(crate) fn exit_line(call: &str, address: Option<u64>, e: CError) -> Line {
    let mut line = Line::new();
    // A line cannot fail to format: a long one is cut.
    let _ = match address {
        Some(a) => write!(line, "{call}({a:#x}): {e}, exit status {:#x}", e.status()),
        None => write!(line, "{call}: {e}, exit status {:#x}", e.status()),
    };
    line
}

/// `uint64_t unimem_last_error(void)`: the status of the latest call of these headers that can
/// fail (0 if it succeeded).
#[unsafe(no_mangle)]
pub extern "C" fn unimem_last_error() -> u64 {
    last()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::gsas::ErrorCode;

    #[test]
    fn statuses_are_the_librarys_and_the_c_layers_own_come_after_them() {
        assert_eq!(CError::Lib(Error::Local(ErrorCode::Unaligned)).status(), 0x182);
        assert_eq!(CError::from(UnimError::Lib(Error::Busy)), CError::Lib(Error::Busy), "flattened");
        assert_eq!(CError::from(UnimError::BothRemote).status(), UnimError::BothRemote.exit_status());
        let unim_top = UnimError::BothRemote.exit_status();
        assert!(code::NULL > unim_top && code::BAD_ARGUMENT > code::NULL, "{unim_top:#x}");
    }

    #[test]
    fn the_last_error_is_the_latest_calls_success_included() {
        assert_eq!(record::<()>(Err(CError::Null)), Err(CError::Null));
        assert_eq!(unimem_last_error(), code::NULL);
        assert_eq!(status(Err(CError::BadArgument)), code::BAD_ARGUMENT);
        assert_eq!(unimem_last_error(), code::BAD_ARGUMENT);
        assert_eq!(record(Ok(5)), Ok(5));
        assert_eq!(unimem_last_error(), code::OK, "a success clears it");
    }

    #[test]
    fn deliver_writes_only_on_success_and_refuses_null_before_running() {
        let mut out = 7u64;
        // SAFETY: `out` is a live u64 (or NULL).
        unsafe {
            assert_eq!(deliver(&raw mut out, || Ok(9)), code::OK);
            assert_eq!(out, 9);
            assert_eq!(deliver(&raw mut out, || Err(Error::Timeout.into())), Error::Timeout.exit_status());
            assert_eq!(out, 9, "untouched on failure");
            let mut ran = false;
            let null = deliver(core::ptr::null_mut::<u64>(), || {
                ran = true;
                Ok(1)
            });
            assert_eq!((null, ran), (code::NULL, false));
        }
        assert_eq!(unimem_last_error(), code::NULL);
    }

    #[test]
    fn the_exit_line_names_the_call_the_address_and_the_status() {
        let e = CError::Lib(Error::Local(ErrorCode::Unaligned));
        let line = exit_line("READ64", Some(0x1_0000_0000_1004), e);
        assert_eq!(line.as_str(), "READ64(0x1000000001004): Local(Unaligned), exit status 0x182");
        let line = exit_line("getNumberBoards", None, CError::Null);
        assert_eq!(line.as_str(), "getNumberBoards: a NULL pointer, exit status 0x400");
        assert_eq!(or_exit("READ8", Some(1), Ok(3u8)), 3, "a success returns");
    }
}
