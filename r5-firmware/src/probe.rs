//! The R5's own view of the PL (`op::PL_PROBE`): identity, a scratch round trip, and timed
//! reads with the PMU cycle counter (QEMU counts it at a nominal 1 GHz).

use crate::pmu::{cycles, enable_cycle_counter};
use hal::sysblock::Sysblock;

/// The probe owns the firmware's handle to the system block (made once, in `main`).
pub struct Probe {
    sysblock: Sysblock,
}

impl Probe {
    pub fn new(sysblock: Sysblock) -> Self {
        Self { sysblock }
    }

    /// The node's id and the cluster's node count, if the system block answers.
    pub fn node_and_count(&self) -> Option<(u16, u16)> {
        self.sysblock.identity().ok().map(|id| (id.node, id.node_count))
    }

    /// (node id, raw ID register).
    pub fn identity(&self) -> (u16, u32) {
        match self.sysblock.identity() {
            Ok(id) => (id.node, hal::sysblock::regs::ID_VALUE),
            Err(hal::sysblock::SysblockError::BadId(raw)) => (u16::MAX, raw),
        }
    }

    pub fn scratch_round_trip(&mut self, value: u32) -> u32 {
        self.sysblock.set_scratch(value);
        self.sysblock.scratch()
    }

    /// Times `reads` forwarded reads; returns (median, p99) in cycles.
    pub fn time_reads(&mut self, reads: u32) -> (u64, u64) {
        let reads = reads.min(proto::ipc::op::PL_PROBE_MAX_READS as u32) as usize;
        if reads == 0 {
            return (0, 0);
        }
        enable_cycle_counter();
        let mut samples = [0u32; proto::ipc::op::PL_PROBE_MAX_READS as usize];
        for s in samples.iter_mut().take(reads) {
            let start = cycles();
            core::hint::black_box(self.sysblock.scratch());
            *s = cycles().wrapping_sub(start);
        }
        let samples = &mut samples[..reads];
        insertion_sort(samples);
        let p99 = samples[(reads * 99).div_ceil(100) - 1];
        (u64::from(samples[reads / 2]), u64::from(p99))
    }
}

/// Small and good enough for 1024 samples (the generic sort would cost kilobytes of TCM).
fn insertion_sort(v: &mut [u32]) {
    for i in 1..v.len() {
        let x = v[i];
        let mut j = i;
        while j > 0 && v[j - 1] > x {
            v[j] = v[j - 1];
            j -= 1;
        }
        v[j] = x;
    }
}
