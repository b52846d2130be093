//! The R5's own view of the PL (`op::PL_PROBE`): identity, a scratch round trip, and timed
//! reads with the PMU cycle counter (QEMU counts it at a nominal 1 GHz).

use core::arch::asm;
use hal::sysblock::Sysblock;

fn sysblock() -> Sysblock {
    // SAFETY: the system block's address (device on hardware, forwarded on QEMU); the firmware
    // only reads it and writes the scratch register, one request at a time.
    unsafe { Sysblock::new(board::pl::SYSBLOCK_BASE as usize) }
}

/// (node id, raw ID register).
pub fn identity() -> (u16, u32) {
    let block = sysblock();
    match block.identity() {
        Ok(id) => (id.node, hal::sysblock::regs::ID_VALUE),
        Err(hal::sysblock::SysblockError::BadId(raw)) => (u16::MAX, raw),
    }
}

pub fn scratch_round_trip(value: u32) -> u32 {
    let block = sysblock();
    block.set_scratch(value);
    block.scratch()
}

fn cycles() -> u32 {
    let c: u32;
    // SAFETY: reading PMCCNTR has no side effect.
    unsafe { asm!("mrc p15, 0, {}, c9, c13, 0", out(reg) c, options(nomem, nostack)) };
    c
}

fn enable_cycle_counter() {
    // SAFETY: PMCR.E (enable) and PMCNTENSET.C (cycle counter): only timing is affected.
    unsafe {
        asm!("mcr p15, 0, {}, c9, c12, 0", in(reg) 1u32, options(nomem, nostack));
        asm!("mcr p15, 0, {}, c9, c12, 1", in(reg) 1u32 << 31, options(nomem, nostack));
    }
}

/// Times `reads` forwarded reads; returns (median, p99) in cycles.
pub fn time_reads(reads: u32) -> (u64, u64) {
    let reads = reads.min(proto::ipc::op::PL_PROBE_MAX_READS as u32) as usize;
    if reads == 0 {
        return (0, 0);
    }
    enable_cycle_counter();
    let block = sysblock();
    let mut samples = [0u32; proto::ipc::op::PL_PROBE_MAX_READS as usize];
    for s in samples.iter_mut().take(reads) {
        let start = cycles();
        core::hint::black_box(block.scratch());
        *s = cycles().wrapping_sub(start);
    }
    let samples = &mut samples[..reads];
    insertion_sort(samples);
    let p99 = samples[(reads * 99).div_ceil(100) - 1];
    (u64::from(samples[reads / 2]), u64::from(p99))
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
