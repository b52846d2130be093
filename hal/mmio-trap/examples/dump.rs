//! Reads lines `a64 WORD` / `a32 WORD` (hex) from stdin and prints, per line,
//! `WORD<TAB>ok<TAB>assembly` or `WORD<TAB>err<TAB>reason`. Used by
//! `tools/diff_llvm.py` to compare the decoders against `llvm-mc`.
use std::io::{BufRead, Write};

fn main() {
    let stdin = std::io::stdin();
    let mut out = std::io::BufWriter::new(std::io::stdout());
    for line in stdin.lock().lines() {
        let line = line.unwrap();
        let mut parts = line.split_whitespace();
        let (Some(isa), Some(word)) = (parts.next(), parts.next()) else {
            continue;
        };
        let word = u32::from_str_radix(word.trim_start_matches("0x"), 16).unwrap();
        let result = match isa {
            "a64" => mmio_trap::a64::decode(0, word).map(|a| a.to_string()),
            _ => mmio_trap::a32::decode(0, word).map(|a| a.to_string()),
        };
        match result {
            Ok(text) => writeln!(out, "{word:08x}\tok\t{text}").unwrap(),
            Err(e) => writeln!(out, "{word:08x}\terr\t{:?}", e.reason).unwrap(),
        }
    }
}
