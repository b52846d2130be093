//! Distributed locks (`shmem_set_lock`, `shmem_test_lock`, `shmem_clear_lock`): a ticket lock
//! in the symmetric `long` on PE 0: the high 32 bits are the next ticket, the low 32 bits the
//! ticket served. Taking it is one fetch-add on the high half, then polling the low half;
//! releasing is a compare-and-swap that advances the low half alone (no carry into the high
//! half when it wraps). Fair (first come, first served); a holder that dies is found by the
//! wait's liveness checks.

use proto::gsas::{VaOp, VaWidth};

use super::{Pe, ShmemError, Transport};

/// The PE that holds every lock word.
const HOME: u16 = 0;
const TICKET: u64 = 1 << 32;

impl<T: Transport> Pe<T> {
    fn check_lock(&self, lock: u64) -> Result<(), ShmemError> {
        if !lock.is_multiple_of(8) {
            return Err(ShmemError::BadArgument("lock not 8-aligned"));
        }
        self.check_symmetric(lock, 8)
    }

    fn lock_op(&mut self, op: VaOp, lock: u64, a1: u64, a2: u64) -> Result<u64, ShmemError> {
        self.atomic_at(op, VaWidth::W64, HOME, lock, a1, a2)
    }

    /// `shmem_set_lock`: waits for its turn.
    pub fn set_lock(&mut self, lock: u64) -> Result<(), ShmemError> {
        self.check_lock(lock)?;
        let ticket = (self.lock_op(VaOp::FetchAdd, lock, TICKET, 0)? >> 32) as u32;
        let everyone: heapless::Vec<u16, { super::MAX_PES }> = (0..self.n).filter(|&p| p != self.me).collect();
        let mut pause = 1u64;
        let mut last_liveness = self.t.now_us();
        loop {
            let word = self.lock_op(VaOp::Fetch, lock, 0, 0)?;
            if word as u32 == ticket {
                core::sync::atomic::fence(core::sync::atomic::Ordering::Acquire);
                return Ok(());
            }
            self.t.sleep_us(pause);
            pause = (pause * 2).min(1_000);
            let now = self.t.now_us();
            if now - last_liveness >= self.liveness_period_us {
                last_liveness = now;
                for &pe in &everyone {
                    if !self.alive(pe)? {
                        return Err(ShmemError::PeGone(pe));
                    }
                }
            }
        }
    }

    /// `shmem_test_lock`: takes the lock if it is free; 0 if taken now, 1 if someone holds it.
    pub fn test_lock(&mut self, lock: u64) -> Result<i32, ShmemError> {
        self.check_lock(lock)?;
        let word = self.lock_op(VaOp::Fetch, lock, 0, 0)?;
        if (word >> 32) as u32 != word as u32 {
            return Ok(1);
        }
        let taken = self.lock_op(VaOp::CompareSwap, lock, word, word.wrapping_add(TICKET))? == word;
        if taken {
            core::sync::atomic::fence(core::sync::atomic::Ordering::Acquire);
        }
        Ok(if taken { 0 } else { 1 })
    }

    /// `shmem_clear_lock`: quiet (the holder's puts are delivered), then the next ticket's turn.
    pub fn clear_lock(&mut self, lock: u64) -> Result<(), ShmemError> {
        self.check_lock(lock)?;
        self.quiet()?;
        let mut word = self.lock_op(VaOp::Fetch, lock, 0, 0)?;
        loop {
            if (word >> 32) as u32 == word as u32 {
                return Err(ShmemError::BadArgument("shmem_clear_lock of a lock nobody holds"));
            }
            let next = (word & !0xffff_ffff) | u64::from((word as u32).wrapping_add(1));
            match self.lock_op(VaOp::CompareSwap, lock, word, next)? {
                old if old == word => return Ok(()),
                old => word = old,
            }
        }
    }
}
