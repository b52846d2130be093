//! Short in-suite fuzzing of the atomic service (a few seconds). The long run is
//! `cargo run --release --example fuzz_service -- 1000000`; `PROPTEST_CASES=N` raises this one.

mod common;

use common::fuzz_harness::{Harness, Tally};
use proptest::prelude::*;

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(4096)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    /// Sequences of shaped and random packets from random senders: no panic, exactly one
    /// well-formed answer each (or the Read4K sequence), victim pages never change.
    #[test]
    fn service_answers_every_request_and_protects_other_domains(
        seq in proptest::collection::vec(any::<[u64; 8]>(), 1..48)
    ) {
        let mut h = Harness::new();
        let mut tally = Tally::default();
        for words in seq {
            let packet = h.packet(words);
            if let Err(e) = h.run(&packet, &mut tally) {
                prop_assert!(false, "{e}: packet {packet:02x?}");
            }
        }
    }

    /// Fully random 32-byte packets.
    #[test]
    fn random_bytes(packets in proptest::collection::vec(any::<[u8; 32]>(), 1..16)) {
        let mut h = Harness::new();
        let mut tally = Tally::default();
        for packet in packets {
            if let Err(e) = h.run(&packet, &mut tally) {
                prop_assert!(false, "{e}: packet {packet:02x?}");
            }
        }
    }
}
