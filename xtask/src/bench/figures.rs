//! The figures of `bench platform` and `bench gsas`, computed from the lines a run printed and
//! from references measured on the host in the same run (`docs/hw/forwarding.md`): a figure
//! that was not measured is an error, never a default.

use super::required;
use proto::forward::{Access, Patience, Slots, forward_timed, serve_posted};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The goals (#14), printed beside the figures.
pub const A53_ROUND_TRIP_GOAL_US: (f64, f64) = (3.0, 15.0);
pub const R5_ROUND_TRIP_GOAL_US: (f64, f64) = (5.0, 50.0);
pub const FAD_THROUGHPUT_GOAL: f64 = 10_000.0;
pub const WINDOW_VS_MEMCPY_GOAL: f64 = 1e-4;

/// The same run's reference for the forwarded round trips: one request through a slot of
/// `proto::forward` between two host threads (a guest thread posting and spinning, a server
/// thread looking), with no emulator in between: the floor of the mechanism. The median over
/// `rounds` requests.
pub fn host_slot_round_trip(rounds: usize) -> Duration {
    let slots: &'static Slots = Box::leak(Box::new(
        // SAFETY: all-zero is idle slots and no host thread looking.
        unsafe { core::mem::zeroed() },
    ));
    let stop: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));
    slots.host.begin_looking();
    let server = std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            serve_posted(slots, |_, slot, req| slot.complete(req.seq, Ok([req.access.addr.into(), 0]), 0));
            std::hint::spin_loop();
        }
    });
    let mut samples: Vec<Duration> = (0..rounds)
        .map(|i| {
            let access = Access::single(false, 4, i as u64, 0);
            let t0 = Instant::now();
            let (result, _) = forward_timed(slots, 0, &access, Patience::default(), (|| {}, || false), || 0);
            let took = t0.elapsed();
            assert_eq!(result, Ok([i as u128, 0]), "the host slot answered wrongly");
            took
        })
        .collect();
    stop.store(true, Ordering::Relaxed);
    let _ = server.join();
    samples.sort_unstable();
    samples[samples.len() / 2]
}

/// The forwarded round trips a `bench=platform` run measured, in microseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RoundTrips {
    pub a53: (f64, f64),
    pub r5: (f64, f64),
}

impl RoundTrips {
    pub fn from_lines(lines: &[String]) -> anyhow::Result<Self> {
        let get = |name: &str| required(lines, &format!("{name}_forwarded_round_trip_median"));
        let p99 = |name: &str| required(lines, &format!("{name}_forwarded_round_trip_p99"));
        Ok(Self { a53: (get("a53")?, p99("a53")?), r5: (get("r5")?, p99("r5")?) })
    }

    /// The figures, each with its goal and as a ratio to the host slot round trip `reference`.
    pub fn print(&self, reference: Duration) {
        let reference_us = reference.as_secs_f64() * 1e6;
        println!("host_slot_round_trip_median: {reference_us:.3} us (the reference, same run)");
        for (name, (median, p99), (goal_median, goal_p99)) in
            [("a53", self.a53, A53_ROUND_TRIP_GOAL_US), ("r5", self.r5, R5_ROUND_TRIP_GOAL_US)]
        {
            for (what, value, goal) in [("median", median, goal_median), ("p99", p99, goal_p99)] {
                let verdict = if value <= goal { "met" } else { "NOT met" };
                println!(
                    "{name}_forwarded_round_trip_{what}: {value:.3} us = {:.1} x the host slot round trip (goal <= {goal} us: {verdict})",
                    value / reference_us
                );
            }
        }
    }
}

/// The R5's wake-up (#21): PING round trips to a sleeping R5 against round trips to an awake
/// one, both from one `bench=platform` run, in microseconds; the difference of the medians is
/// what waking costs (the doorbell's forwarded write, the semihosting byte, QEMU's halt and
/// kick of the vCPU).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct R5Wake {
    pub asleep: (f64, f64),
    pub awake: (f64, f64),
}

pub const R5_WAKE_GOAL_US: (f64, f64) = (100.0, 1000.0);

impl R5Wake {
    pub fn from_lines(lines: &[String]) -> anyhow::Result<Self> {
        let get = |state: &str, what: &str| required(lines, &format!("r5_{state}_ping_round_trip_{what}"));
        Ok(Self {
            asleep: (get("asleep", "median")?, get("asleep", "p99")?),
            awake: (get("awake", "median")?, get("awake", "p99")?),
        })
    }

    /// The wake-up's cost: (median, p99) of the round trips to a sleeping R5 over those to an
    /// awake one.
    pub fn latency(&self) -> (f64, f64) {
        (self.asleep.0 - self.awake.0, self.asleep.1 - self.awake.0)
    }

    pub fn print(&self) {
        for (state, (median, p99)) in [("asleep", self.asleep), ("awake", self.awake)] {
            println!("r5_{state}_ping_round_trip: {median:.1} us median, {p99:.1} us p99");
        }
        let (median, p99) = self.latency();
        for (what, value, goal) in [("median", median, R5_WAKE_GOAL_US.0), ("p99", p99, R5_WAKE_GOAL_US.1)] {
            let verdict = if value <= goal { "met" } else { "NOT met" };
            println!(
                "r5_wake_latency_{what}: {value:.1} us (a request to a sleeping R5 over one to an awake R5; goal <= {goal} us: {verdict})"
            );
        }
    }
}

/// FAD64 throughput with 1..=`nodes` requesting nodes from a `bench=gsas-fad` run: the requests
/// of every requesting node over the slowest node's time, in operations per second.
pub fn fad_throughputs(lines: &[String], nodes: usize) -> anyhow::Result<Vec<f64>> {
    let ops_per_node =
        required(lines, "gsas_fad_requests_per_process")? * required(lines, "gsas_fad_processes_per_node")?;
    (1..=nodes)
        .map(|requesters| {
            let prefix = format!("gsas_fad_{requesters}_requesters_node");
            let times: Vec<f64> = lines
                .iter()
                .filter_map(|l| l.strip_prefix(&prefix)?.split_once("_ns: ")?.1.split(' ').next()?.parse().ok())
                .collect();
            anyhow::ensure!(times.len() == requesters, "{requesters} requesting nodes, {} timings", times.len());
            let slowest_s = times.iter().copied().fold(0.0, f64::max) / 1e9;
            anyhow::ensure!(slowest_s > 0.0, "{requesters} requesting nodes took no time");
            Ok(ops_per_node * requesters as f64 / slowest_s)
        })
        .collect()
}

/// Prints the FAD throughputs, the first (one requesting node) with its goal, each also as the
/// FADs done per host slot round trip `reference`.
pub fn print_fad_throughputs(throughputs: &[f64], reference: Duration) {
    println!("host_slot_round_trip_median: {:.3} us (the reference, same run)", reference.as_secs_f64() * 1e6);
    for (i, &ops) in throughputs.iter().enumerate() {
        let per_reference = ops * reference.as_secs_f64();
        let goal = if i == 0 {
            let verdict = if ops >= FAD_THROUGHPUT_GOAL { "met" } else { "NOT met" };
            format!(" (goal >= {FAD_THROUGHPUT_GOAL:.0} ops/s: {verdict})")
        } else {
            String::new()
        };
        println!(
            "gsas_fad64_throughput_{}_requesting_nodes: {ops:.0} ops/s = {per_reference:.2e} FADs per host slot round trip{goal}",
            i + 1
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::tests::lines;

    const PLATFORM: &str = "a53_forwarded_round_trip_median: 2.192 us
a53_forwarded_round_trip_p99: 2.496 us
r5_forwarded_round_trip_median: 2.238 us
r5_forwarded_round_trip_p99: 2.585 us";

    const FAD: &str = "gsas_fad_1_requesters_node1_ns: 200000000 ns
gsas_fad_2_requesters_node1_ns: 300000000 ns
gsas_fad_2_requesters_node0_ns: 400000000 ns
gsas_fad_requests_per_process: 1000 requests
gsas_fad_processes_per_node: 2 processes";

    #[test]
    fn round_trips_come_from_the_measured_lines_and_none_is_a_default() {
        let r = RoundTrips::from_lines(&lines(PLATFORM)).unwrap();
        assert_eq!(r, RoundTrips { a53: (2.192, 2.496), r5: (2.238, 2.585) });
        for name in ["a53_forwarded_round_trip_median", "r5_forwarded_round_trip_p99"] {
            let without: Vec<String> = lines(PLATFORM).into_iter().filter(|l| !l.starts_with(name)).collect();
            let e = RoundTrips::from_lines(&without).unwrap_err();
            assert!(e.to_string().contains(name), "{e}");
        }
    }

    #[test]
    fn fad_throughput_is_every_request_over_the_slowest_node() {
        assert_eq!(fad_throughputs(&lines(FAD), 2).unwrap(), [10_000.0, 10_000.0]);
        let missing_node: Vec<String> = lines(FAD).into_iter().filter(|l| !l.contains("requesters_node0")).collect();
        assert!(fad_throughputs(&missing_node, 2).is_err(), "a requesting node that printed no time");
        let no_count: Vec<String> = lines(FAD).into_iter().filter(|l| !l.contains("per_process")).collect();
        assert!(fad_throughputs(&no_count, 1).is_err());
    }

    #[test]
    fn the_host_slot_round_trip_is_measured() {
        let t = host_slot_round_trip(1000);
        assert!(t > Duration::ZERO && t < Duration::from_millis(100), "{t:?}");
    }
}
