//! Long fuzz run of the atomic service: `cargo run --release --example fuzz_service -- [cases] [seed]`
//! (default 1,000,000 cases). Each case is one packet; the service state is rebuilt every 256
//! cases so allocations and frees keep happening. Exits 1 with the failing packet on the first
//! broken rule (see `tests/common/fuzz_harness.rs`).

#[path = "../tests/common/fuzz_harness.rs"]
mod fuzz_harness;

use fuzz_harness::{Harness, Tally};
use proto::rand::XorShift64;

fn main() {
    let mut args = std::env::args().skip(1);
    let cases: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(1_000_000);
    let seed: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(0x5eed_1234_abcd_0001);
    let mut rng = XorShift64::new(seed);
    let mut tally = Tally::default();
    let mut harness = Harness::new();
    for case in 0..cases {
        if case % 256 == 0 {
            harness = Harness::new();
        }
        let words = std::array::from_fn(|_| rng.next_u64());
        let packet = harness.packet(words);
        if let Err(e) = harness.run(&packet, &mut tally) {
            eprintln!("case {case} (seed {seed:#x}): {e}\npacket {packet:02x?}");
            std::process::exit(1);
        }
    }
    println!(
        "{cases} cases: {} ok, {} dropped (sender interface 0), errors by code {:?}",
        tally.ok,
        tally.dropped,
        &tally.errors[1..12]
    );
}
