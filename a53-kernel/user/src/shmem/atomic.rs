//! Atomics on symmetric words: process atomics (`crate::va_atomic`) for another PE, CPU atomics
//! (`core::sync::atomic`, the same widths) for this one; both are atomic read-modify-write
//! instructions on the same coherent memory, so they mix.

use core::sync::atomic::{AtomicU32, AtomicU64};

use proto::gsas::{VaOp, VaWidth};

use super::{Pe, ShmemError, Transport};

/// The widths the atomics take, as Rust types (`i32`, `u32`, `i64`, `u64`).
pub trait AtomicWord: Copy {
    const WIDTH: VaWidth;
    /// Whether waits compare it as signed.
    const SIGNED: bool;
    /// The value as the wire carries it (zero-extended to 64 bits).
    fn to_bits(self) -> u64;
    fn from_bits(bits: u64) -> Self;
}

macro_rules! atomic_word {
    ($($t:ty => $w:ident, $u:ty, $s:expr;)*) => {$(
        impl AtomicWord for $t {
            const WIDTH: VaWidth = VaWidth::$w;
            const SIGNED: bool = $s;
            fn to_bits(self) -> u64 {
                self as $u as u64
            }
            fn from_bits(bits: u64) -> Self {
                bits as $u as $t
            }
        }
    )*};
}

atomic_word! {
    u32 => W32, u32, false;
    i32 => W32, u32, true;
    u64 => W64, u64, false;
    i64 => W64, u64, true;
}

/// `op` on the local word at `address` with CPU atomics; the old value.
///
/// # Safety
///
/// `address` is a live, aligned word of this process.
pub unsafe fn local(op: VaOp, width: VaWidth, address: u64, arg1: u64, arg2: u64) -> u64 {
    match width {
        // SAFETY: the caller's.
        VaWidth::W64 => op.on_u64(unsafe { AtomicU64::from_ptr(address as *mut u64) }, arg1, arg2),
        VaWidth::W32 => {
            // SAFETY: the caller's.
            let word = unsafe { AtomicU32::from_ptr(address as *mut u32) };
            u64::from(op.on_u32(word, arg1 as u32, arg2 as u32))
        }
    }
}

impl<T: Transport> Pe<T> {
    /// `unimem_shmem_atomic`: `op` on the symmetric word `address` of PE `pe`; the old value
    /// (zero-extended). CompareSwap: `arg1` = expected, `arg2` = new. Arguments are cut to the
    /// width. Refused: a bad PE, a non-symmetric or unaligned address, a PE that has ended.
    pub fn atomic(
        &mut self,
        op: VaOp,
        width: VaWidth,
        address: u64,
        arg1: u64,
        arg2: u64,
        pe: i64,
    ) -> Result<u64, ShmemError> {
        let pe = self.check_pe(pe)?;
        let bytes = width.bytes();
        if !address.is_multiple_of(bytes) {
            return Err(ShmemError::BadArgument("atomic address not aligned to its width"));
        }
        self.check_symmetric(address, bytes)?;
        let mask = match width {
            VaWidth::W32 => u64::from(u32::MAX),
            VaWidth::W64 => u64::MAX,
        };
        self.atomic_at(op, width, pe, address, arg1 & mask, arg2 & mask)
    }

    /// The atomic without the checks (the library's own words).
    pub(crate) fn atomic_at(
        &mut self,
        op: VaOp,
        width: VaWidth,
        pe: u16,
        address: u64,
        a1: u64,
        a2: u64,
    ) -> Result<u64, ShmemError> {
        if pe == self.me {
            // SAFETY: a symmetric, aligned word: mapped in this process.
            return Ok(unsafe { local(op, width, address, a1, a2) });
        }
        self.t.atomic(op, width, pe, address, a1, a2).map_err(|e| ShmemError::at(pe, e))
    }

    /// Whether PE `pe`'s process is still there: a process atomic Fetch to it answers
    /// `NoProcess` once it has gone. While the job starts, a PE not there yet counts as alive.
    pub fn alive(&mut self, pe: u16) -> Result<bool, ShmemError> {
        if pe == self.me {
            return Ok(true);
        }
        let word = self.reserved(super::Reserved::LIVENESS);
        match self.t.atomic(VaOp::Fetch, VaWidth::W64, pe, word, 0, 0) {
            Ok(_) => Ok(true),
            // Its process is there but has not mapped its heap yet.
            Err(crate::Error::Service(proto::gsas::ErrorCode::Unmapped)) => Ok(true),
            Err(e) => match ShmemError::at(pe, e) {
                ShmemError::PeGone(_) => Ok(self.starting()),
                other => Err(other),
            },
        }
    }

    /// Whether the job is still starting (the first barrier has not passed, and not for too
    /// long).
    pub(crate) fn starting(&mut self) -> bool {
        match self.starting_until {
            Some(until) => self.t.now_us() < until,
            None => false,
        }
    }

    /// Typed form of [`atomic`](Self::atomic).
    pub fn atomic_typed<W: AtomicWord>(
        &mut self,
        op: VaOp,
        address: u64,
        value: W,
        compare: W,
        pe: i64,
    ) -> Result<W, ShmemError> {
        let (a1, a2) = match op {
            VaOp::CompareSwap => (compare.to_bits(), value.to_bits()),
            _ => (value.to_bits(), 0),
        };
        self.atomic(op, W::WIDTH, address, a1, a2, pe).map(W::from_bits)
    }
}
