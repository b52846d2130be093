//! The few MPI calls the link makes, each checked: the link sets `MPI_ERRORS_RETURN` on
//! `MPI_COMM_WORLD`, so a failure comes back as a code instead of ending the job. Every
//! `unsafe` block of the link is here.

use super::Rank;
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

/// The link's sends not yet complete. MPI reads each buffer until its request completes, so the
/// buffers live here until then, and are leaked rather than freed if a send never completes (a
/// send to a rank that died, with Open MPI).
#[derive(Default)]
pub struct Sends {
    requests: Vec<ffi::MPI_Request>,
    pending: Vec<(Rank, Vec<u8>)>,
}

// SAFETY: the requests are opaque handles that MPI_THREAD_MULTIPLE lets any thread complete; the
// buffers are only touched by MPI until their requests complete.
unsafe impl Send for Sends {}

impl Sends {
    /// Starts sending `buffer` to `to` with `tag`; returns at once, whatever the peer is doing.
    pub fn isend(&mut self, buffer: Vec<u8>, to: Rank, tag: i32) -> Result<(), MpiError> {
        let count = c_int::try_from(buffer.len()).map_err(|_| MpiError { call: "MPI_Isend (length)", code: -1 })?;
        let dest = c_int::try_from(to).map_err(|_| MpiError { call: "MPI_Isend (rank)", code: -1 })?;
        // SAFETY: a null request handle is overwritten by MPI_Isend.
        let mut request: ffi::MPI_Request = unsafe { ffi::RSMPI_REQUEST_NULL };
        // SAFETY: the buffer's heap block stays alive and unmoved until the request completes:
        // it is kept below, and leaked if the request never completes.
        let code = unsafe {
            ffi::MPI_Isend(buffer.as_ptr().cast::<c_void>(), count, bytes(), dest, tag, world(), &mut request)
        };
        check("MPI_Isend", code)?;
        self.requests.push(request);
        self.pending.push((to, buffer));
        Ok(())
    }

    /// The ranks the sends not yet complete go to.
    pub fn destinations(&self) -> impl Iterator<Item = Rank> + '_ {
        self.pending.iter().map(|(to, _)| *to)
    }

    /// Completes the sends that are done (one `MPI_Testsome`, so one turn of MPI's progress
    /// engine whatever their number): how many did, and the destinations of those that failed.
    pub fn reap(&mut self) -> (usize, Vec<Rank>) {
        let n = self.requests.len();
        if n == 0 {
            return (0, Vec::new());
        }
        let mut done: c_int = 0;
        let mut indices: Vec<c_int> = vec![0; n];
        // SAFETY: MPI_Status is plain data.
        let mut statuses: Vec<ffi::MPI_Status> = vec![unsafe { std::mem::zeroed() }; n];
        let count = c_int::try_from(n).unwrap_or(c_int::MAX);
        // SAFETY: the arrays hold `n` elements; the requests came from MPI_Isend and are active.
        let code = unsafe {
            ffi::MPI_Testsome(count, self.requests.as_mut_ptr(), &mut done, indices.as_mut_ptr(), statuses.as_mut_ptr())
        };
        let in_status = code == ffi::MPI_ERR_IN_STATUS as c_int;
        if (code != ffi::MPI_SUCCESS as c_int && !in_status) || done == ffi::MPI_UNDEFINED {
            return (0, Vec::new());
        }
        let done = usize::try_from(done).unwrap_or(0);
        let mut failed = Vec::new();
        let mut completed: Vec<usize> = indices[..done].iter().map(|&i| i as usize).collect();
        for (k, &i) in completed.iter().enumerate() {
            if in_status && statuses[k].MPI_ERROR != ffi::MPI_SUCCESS as c_int {
                failed.push(self.pending[i].0);
            }
        }
        // Highest first, so that each removal leaves the indices still to come in place.
        completed.sort_unstable_by(|a, b| b.cmp(a));
        for i in completed {
            self.requests.swap_remove(i);
            self.pending.swap_remove(i);
        }
        (done, failed)
    }
}

impl Drop for Sends {
    fn drop(&mut self) {
        // MPI may still read them.
        for (_, buffer) in self.pending.drain(..) {
            std::mem::forget(buffer);
        }
    }
}

/// The next message with `tag` from any rank, if one has arrived: its sender and its bytes.
pub fn try_receive(tag: i32) -> Result<Option<(Rank, Vec<u8>)>, MpiError> {
    let mut flag: c_int = 0;
    // SAFETY: both handles are overwritten by MPI_Improbe when it finds a message.
    let (mut message, mut status): (ffi::MPI_Message, ffi::MPI_Status) =
        unsafe { (ffi::RSMPI_MESSAGE_NULL, std::mem::zeroed()) };
    // SAFETY: plain out-parameters.
    let code = unsafe { ffi::MPI_Improbe(ffi::RSMPI_ANY_SOURCE, tag, world(), &mut flag, &mut message, &mut status) };
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
