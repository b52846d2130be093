//! What the OpenSHMEM layer needs from below, as a trait so that the whole layer (launch,
//! heap, RMA, atomics, waits, collectives, locks) runs on the host against a fake cluster of
//! threads (`fake.rs`). Addresses given to it are the *caller's* symmetric addresses: the real
//! transport uses them unchanged (every PE has them at the same VA), the fake translates them
//! into the target PE's memory.

use proto::gsas::{VaOp, VaWidth};
use proto::rdma::queue::Direction;

use crate::error::Error;

pub trait Transport {
    /// This node and how many there are.
    fn node_info(&mut self) -> Result<(u16, u16), Error>;
    /// The process's thread argument, `None` without one.
    fn argument(&mut self) -> Option<u64>;
    /// Starts this same program on `node` with thread argument `argument`.
    fn spawn(&mut self, argument: u64, node: u16) -> Result<(), Error>;
    /// Maps the symmetric heap (`bytes`, writable, zeroed pages on first touch); returns its
    /// address.
    fn map_heap(&mut self, bytes: u64) -> Result<u64, Error>;
    /// The program's image (text, rodata, data, bss): `(start, end)`, the same in every PE.
    fn image(&mut self) -> (u64, u64);
    /// Posts a transfer between `[local, local + len)` here and the symmetric address `remote`
    /// on `pe` (another PE); it ends at the next [`quiet`](Self::quiet).
    ///
    /// # Safety
    ///
    /// The local range stays valid (and, for a read, unread) until the next `quiet`.
    unsafe fn post(&mut self, direction: Direction, pe: u16, local: u64, len: usize, remote: u64) -> Result<(), Error>;
    /// Waits until every posted transfer has ended; the first failure (with its PE).
    fn quiet(&mut self) -> Result<(), (u16, Error)>;
    /// A process atomic on the symmetric address `address` of PE `pe` (another PE); the old
    /// value.
    fn atomic(&mut self, op: VaOp, width: VaWidth, pe: u16, address: u64, arg1: u64, arg2: u64) -> Result<u64, Error>;
    /// Microseconds since some fixed time.
    fn now_us(&mut self) -> u64;
    /// Sleeps about `us` microseconds, giving the core away.
    fn sleep_us(&mut self, us: u64);
    /// Logs one line.
    fn log(&mut self, line: core::fmt::Arguments<'_>);
    /// Ends every PE of the job with `status`.
    fn job_exit(&mut self, status: u8) -> !;
}

/// The real transport: `unimem_user::rdma` for RMA, process atomics (`crate::va_atomic`), the
/// system calls for the rest. Host builds have no kernel: there every call fails
/// (`NoSuchCall`), as the system calls do.
pub mod hw {
    use super::*;
    use crate::rdma::{HwDoorbell, Rdma, Status};
    use proto::syscall::layout;

    /// Transfers longer than this are cut (a WQE's length is 32 bits).
    const MAX_TRANSFER: usize = 1 << 30;

    pub struct HwTransport {
        rdma: Rdma<HwDoorbell>,
        /// Tags of the transfers posted and not yet ended, with their PE.
        posted: heapless::Vec<(u64, u16), { proto::rdma::queue::WQ_ENTRIES }>,
    }

    #[cfg(all(target_arch = "aarch64", target_os = "none"))]
    unsafe extern "C" {
        /// The end of the program's image (both linker scripts define it).
        static __image_end: u8;
    }

    impl HwTransport {
        /// Opens the process's RDMA queues (`Syscall(NoPd)` without RDMA).
        pub fn open() -> Result<Self, Error> {
            Ok(Self { rdma: crate::rdma::open()?, posted: heapless::Vec::new() })
        }

        /// The process's RDMA queues, which this transport owns (`rdma::open` works once per
        /// process): for [`shmem::with_rdma`](crate::shmem::with_rdma) only.
        pub(crate) fn rdma(&self) -> &Rdma<HwDoorbell> {
            &self.rdma
        }
    }

    impl Transport for HwTransport {
        fn node_info(&mut self) -> Result<(u16, u16), Error> {
            crate::sys::node_info().map(|i| (i.node, i.nodes))
        }

        fn argument(&mut self) -> Option<u64> {
            crate::sys::thread_argument().ok()
        }

        fn spawn(&mut self, argument: u64, node: u16) -> Result<(), Error> {
            let mut name = [0u8; proto::gsas::MAX_SPAWN_NAME];
            let len = crate::sys::program_name(&mut name)?;
            let name = name.get(..len).and_then(|n| core::str::from_utf8(n).ok());
            let name = name.ok_or(Error::Local(proto::gsas::ErrorCode::BadArgument))?;
            crate::remote_spawn(name, argument, node).map(drop)
        }

        fn map_heap(&mut self, bytes: u64) -> Result<u64, Error> {
            crate::sys::map_fixed(layout::SYMMETRIC_HEAP, bytes, true)
        }

        fn image(&mut self) -> (u64, u64) {
            #[cfg(all(target_arch = "aarch64", target_os = "none"))]
            let end = core::ptr::addr_of!(__image_end) as u64;
            #[cfg(not(all(target_arch = "aarch64", target_os = "none")))]
            let end = layout::IMAGE_BASE;
            (layout::IMAGE_BASE, end)
        }

        unsafe fn post(
            &mut self,
            direction: Direction,
            pe: u16,
            local: u64,
            len: usize,
            remote: u64,
        ) -> Result<(), Error> {
            let mut done = 0;
            while done < len {
                let piece = (len - done).min(MAX_TRANSFER);
                let (l, r) = (local + done as u64, remote + done as u64);
                // SAFETY: the caller keeps the local range for the transfer until `quiet`.
                let posted = self.rdma.with_queues(|q| unsafe { q.post(direction, l, piece, pe, r) });
                match posted {
                    Ok(tag) => {
                        // Room: at most WQ_ENTRIES are in progress, and `posted` holds those.
                        let _ = self.posted.push((tag, pe));
                        done += piece;
                    }
                    Err(Error::Busy) => self.quiet().map_err(|(_, e)| e)?,
                    Err(e) => return Err(e),
                }
            }
            Ok(())
        }

        fn quiet(&mut self) -> Result<(), (u16, Error)> {
            let mut first = Ok(());
            for (tag, pe) in core::mem::take(&mut self.posted) {
                let ended = self.rdma.with_queues(|q| {
                    let status = q.wait(tag, 0);
                    if status.is_ok() {
                        q.release(tag);
                    }
                    status
                });
                let result = match ended {
                    Ok(Status::Done(_)) => Ok(()),
                    Ok(s) => s.result().map(drop),
                    Err(e) => Err(e),
                };
                if let (Err(e), Ok(())) = (result, &first) {
                    first = Err((pe, e));
                }
            }
            first
        }

        fn atomic(
            &mut self,
            op: VaOp,
            width: VaWidth,
            pe: u16,
            address: u64,
            arg1: u64,
            arg2: u64,
        ) -> Result<u64, Error> {
            crate::va_atomic(op, width, pe, address, arg1, arg2)
        }

        fn now_us(&mut self) -> u64 {
            crate::sys::time_us().unwrap_or(0)
        }

        fn sleep_us(&mut self, us: u64) {
            let _ = crate::sys::sleep_us(us);
        }

        fn log(&mut self, line: core::fmt::Arguments<'_>) {
            crate::log::log_args(line);
        }

        fn job_exit(&mut self, status: u8) -> ! {
            crate::sys::job_exit(status)
        }
    }
}
