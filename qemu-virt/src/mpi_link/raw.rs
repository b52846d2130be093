//! The few MPI calls the link makes, each checked: the link sets `MPI_ERRORS_RETURN` on
//! `MPI_COMM_WORLD`, so a failure comes back as a code instead of ending the job. Every
//! `unsafe` block of the link is here.

use super::Rank;
use super::frame::TAG;
use mpi::ffi;
use std::fmt;
use std::os::raw::{c_char, c_int, c_void};

/// A failed MPI call: which, and the library's own words for its code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MpiError {
    pub call: &'static str,
    pub code: i32,
}

impl fmt::Display for MpiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = vec![0u8; 512];
        let mut len: c_int = 0;
        // SAFETY: MPI_MAX_ERROR_STRING is 256 in Open MPI and MPICH, well under the buffer.
        let rc = unsafe { ffi::MPI_Error_string(self.code, text.as_mut_ptr().cast::<c_char>(), &mut len) };
        text.truncate(if rc == 0 { usize::try_from(len).unwrap_or(0).min(512) } else { 0 });
        write!(f, "{} failed with code {}: {}", self.call, self.code, String::from_utf8_lossy(&text))
    }
}

fn check(call: &'static str, code: c_int) -> Result<(), MpiError> {
    if code == ffi::MPI_SUCCESS as c_int { Ok(()) } else { Err(MpiError { call, code }) }
}

fn world() -> ffi::MPI_Comm {
    // SAFETY: reading a constant the C shim of mpi-sys initialised.
    unsafe { ffi::RSMPI_COMM_WORLD }
}

fn bytes() -> ffi::MPI_Datatype {
    // SAFETY: as above.
    unsafe { ffi::RSMPI_UINT8_T }
}

/// Makes MPI errors on `MPI_COMM_WORLD` come back as codes.
pub fn errors_return() -> Result<(), MpiError> {
    // SAFETY: MPI is initialised (the caller holds the universe); both handles are predefined.
    check("MPI_Comm_set_errhandler", unsafe { ffi::MPI_Comm_set_errhandler(world(), ffi::RSMPI_ERRORS_RETURN) })
}

/// A message on its way: MPI reads `buffer` until the request completes, so the buffer lives
/// here until then, and is leaked rather than freed if the send never completes.
pub struct InFlight {
    request: ffi::MPI_Request,
    buffer: Vec<u8>,
    pub to: Rank,
    done: bool,
}

// SAFETY: the request is an opaque handle that MPI_THREAD_MULTIPLE lets any thread test; the
// buffer is only touched by MPI until the request completes.
unsafe impl Send for InFlight {}

/// Starts sending `buffer` to `to`; returns at once, whatever the peer is doing.
pub fn isend(buffer: Vec<u8>, to: Rank) -> Result<InFlight, MpiError> {
    let count = c_int::try_from(buffer.len()).map_err(|_| MpiError { call: "MPI_Isend (length)", code: -1 })?;
    let dest = c_int::try_from(to).map_err(|_| MpiError { call: "MPI_Isend (rank)", code: -1 })?;
    // SAFETY: a null request handle is overwritten by MPI_Isend.
    let mut request: ffi::MPI_Request = unsafe { ffi::RSMPI_REQUEST_NULL };
    // SAFETY: the buffer stays alive and unmoved (its heap block) until the request completes:
    // `InFlight` owns it and leaks it if it is dropped before.
    let code =
        unsafe { ffi::MPI_Isend(buffer.as_ptr().cast::<c_void>(), count, bytes(), dest, TAG, world(), &mut request) };
    check("MPI_Isend", code)?;
    Ok(InFlight { request, buffer, to, done: false })
}

impl InFlight {
    /// Whether the send has completed (the buffer is then free); an error if it failed.
    pub fn test(&mut self) -> Result<bool, MpiError> {
        if self.done {
            return Ok(true);
        }
        let mut flag: c_int = 0;
        // SAFETY: the request came from MPI_Isend and has not completed, so it is valid.
        let code = unsafe { ffi::MPI_Test(&mut self.request, &mut flag, ffi::RSMPI_STATUS_IGNORE) };
        if code != ffi::MPI_SUCCESS as c_int {
            // A failed request is complete: MPI no longer reads the buffer.
            self.done = true;
            return Err(MpiError { call: "MPI_Test", code });
        }
        self.done = flag != 0;
        Ok(self.done)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if !self.done {
            // MPI may still read it (a send to a rank that died never completes).
            std::mem::forget(std::mem::take(&mut self.buffer));
        }
    }
}

/// The next message of the link from any rank, if one has arrived: its sender and its bytes.
pub fn try_receive() -> Result<Option<(Rank, Vec<u8>)>, MpiError> {
    let mut flag: c_int = 0;
    // SAFETY: both handles are overwritten by MPI_Improbe when it finds a message.
    let (mut message, mut status): (ffi::MPI_Message, ffi::MPI_Status) =
        unsafe { (ffi::RSMPI_MESSAGE_NULL, std::mem::zeroed()) };
    // SAFETY: plain out-parameters.
    let code = unsafe { ffi::MPI_Improbe(ffi::RSMPI_ANY_SOURCE, TAG, world(), &mut flag, &mut message, &mut status) };
    check("MPI_Improbe", code)?;
    if flag == 0 {
        return Ok(None);
    }
    let mut count: c_int = 0;
    // SAFETY: the status was filled by MPI_Improbe.
    check("MPI_Get_count", unsafe { ffi::MPI_Get_count(&status, bytes(), &mut count) })?;
    let mut buffer = vec![0u8; usize::try_from(count).unwrap_or(0)];
    // SAFETY: the buffer holds `count` bytes, the size of the matched message.
    let code = unsafe {
        ffi::MPI_Mrecv(buffer.as_mut_ptr().cast::<c_void>(), count, bytes(), &mut message, ffi::RSMPI_STATUS_IGNORE)
    };
    check("MPI_Mrecv", code)?;
    let from = usize::try_from(status.MPI_SOURCE).map_err(|_| MpiError { call: "MPI_Improbe (source)", code: -1 })?;
    Ok(Some((from, buffer)))
}
