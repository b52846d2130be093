#![allow(dead_code)]
pub mod fuzz_harness;
