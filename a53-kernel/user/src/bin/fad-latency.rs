//! `fad-latency`: `count` x `fad64(counter, 1)`, one at a time, each timed (`sys::time_us`);
//! logs the median and the 99th percentile as `bench fad64_to_node<N>_median_us: <us> us` and
//! `..._p99_us`, N the counter's node (`cargo xtask bench ranks`: the cost of a remote FAD to a
//! node of the same rank and to one of another).
//!
//! Argument: `args::fad_latency` (the counter's page | the count).
//! Exit status: 0; 1 = old values not increasing; otherwise an error status (`README.md`), a
//! reply's error among them.
#![no_std]
#![no_main]

use unimem_user::args::fad_latency::{MAX_COUNT, unpack};
use unimem_user::{Error, ensure, log, sys, thread_argument, with_client};

unimem_user::entry!(main);

fn main() -> Result<u64, Error> {
    let (counter, count) = unpack(thread_argument()?);
    let count = usize::from(count.clamp(1, MAX_COUNT));
    let mut samples = [0u64; MAX_COUNT as usize];
    let status = with_client(|g| {
        let mut last = None;
        for sample in samples.iter_mut().take(count) {
            let t0 = sys::time_us()?;
            let old = g.fad64(counter, 1)?;
            *sample = sys::time_us()? - t0;
            ensure!(last.is_none_or(|l| old > l), 1, "old value {} after {:?}", old, last);
            last = Some(old);
        }
        Ok(0)
    })?;
    if status != 0 {
        return Ok(status);
    }
    let samples = &mut samples[..count];
    samples.sort_unstable();
    let node = counter.node();
    log!("bench fad64_to_node{}_median_us: {} us", node, samples[count / 2]);
    log!("bench fad64_to_node{}_p99_us: {} us", node, samples[(count * 99).div_ceil(100) - 1]);
    Ok(0)
}
