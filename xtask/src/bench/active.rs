//! `cargo xtask bench active`: Active Access (`docs/hw/active-access.md`) against the RMA
//! baseline, measured in the same runs, each figure beside the seed's (seed 004, Besta and
//! Hoefler, "Active Access", ICS '15, §3.3).
//!
//! `active-aa` runs on node 0 of two nodes against an owner on node 1 and prints `bench` lines:
//!
//! - the DHT (Listings 2 and 3) at 5 % and 25 % collisions, 300 inserts each:
//!   `active_dht_{P}pct_{aa,rma}_remote_ops` and `_us`, `_inserts`, `_collisions`;
//! - the cost of logging on plain puts: `active_put_{plain,logged}_us` for the same number of
//!   256 B puts (`active_put_count`), to a plain page and to a put-logging page;
//! - the owner's handler: `active_handler_us` busy in `Log::poll` for `active_handler_entries`.

use super::{Bench, required};
use crate::qemu_run::{Load, node_specs_with};

/// The seed's figures.
pub const SEED_DHT_SPEEDUP: f64 = 3.0;
pub const SEED_LOGGING_OVERHEAD: &str = "1-5 %";

/// `active-aa`'s packed roles (`unimem_user::args::active_aa`).
fn role_dht(pct: u8) -> u64 {
    2 | 1 << 4 | u64::from(pct) << 20
}
const ROLE_PUT_COST: u64 = 4 | 1 << 4;

fn run_program(bench: &Bench, role: u64) -> anyhow::Result<Vec<String>> {
    let boot_args = [format!("run=active-aa arg={role:#x} exit"), "serve exit".to_string()];
    let (lines, _) = bench.run_nodes(node_specs_with(Load::kernel(bench.images), &boot_args))?;
    for line in &lines {
        println!("{line}");
    }
    Ok(lines)
}

/// The figures of the runs' lines.
pub fn figures(lines: &[String]) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    for pct in [5, 25] {
        let get = |what: &str| required(lines, &format!("active_dht_{pct}pct_{what}"));
        let n = get("inserts")?;
        anyhow::ensure!(n > 0.0, "no inserts at {pct} %");
        let (aa_ops, rma_ops) = (get("aa_remote_ops")? / n, get("rma_remote_ops")? / n);
        let collisions = get("collisions")?;
        out.push(format!(
            "active_dht_{pct}pct_remote_ops_per_insert: AA {aa_ops:.2}, RMA {rma_ops:.2} ops ({collisions:.0} collisions in {n:.0}; seed: AA 1, RMA 1 CAS + up to 6 per collision)"
        ));
        let (aa_us, rma_us) = (get("aa_us")?, get("rma_us")?);
        anyhow::ensure!(aa_us > 0.0 && rma_us > 0.0, "nothing was timed at {pct} %");
        out.push(format!(
            "active_dht_{pct}pct_inserts_per_s: AA {:.0}, RMA {:.0} inserts/s, AA {:.2}x RMA (seed: about {SEED_DHT_SPEEDUP:.0}x on gem5)",
            n / aa_us * 1e6,
            n / rma_us * 1e6,
            rma_us / aa_us
        ));
    }
    let (plain, logged) = (required(lines, "active_put_plain_us")?, required(lines, "active_put_logged_us")?);
    let puts = required(lines, "active_put_count")?;
    anyhow::ensure!(plain > 0.0 && puts > 0.0, "no put was timed");
    out.push(format!(
        "active_put_logging_overhead: {:.1} % ({:.1} us a logged put, {:.1} us a plain one; seed: {SEED_LOGGING_OVERHEAD})",
        (logged / plain - 1.0) * 100.0,
        logged / puts,
        plain / puts
    ));
    let (busy, entries) = (required(lines, "active_handler_us")?, required(lines, "active_handler_entries")?);
    anyhow::ensure!(entries > 0.0, "the handler took no entry");
    out.push(format!(
        "active_handler_ns_per_entry: {:.0} ns (wall time in Log::poll under QEMU; the seed counts no instructions for its handlers)",
        busy / entries * 1000.0
    ));
    Ok(out)
}

pub fn run(bench: &Bench) -> anyhow::Result<()> {
    let mut lines = Vec::new();
    for role in [role_dht(5), role_dht(25), ROLE_PUT_COST] {
        lines.extend(run_program(bench, role)?);
    }
    println!("--- figures (each computed from the lines above) ---");
    for f in figures(&lines)? {
        println!("{f}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_come_from_the_lines_and_a_missing_one_is_an_error() {
        let text = "active_dht_5pct_inserts: 300 inserts
active_dht_5pct_collisions: 18 inserts
active_dht_5pct_aa_remote_ops: 300 ops
active_dht_5pct_rma_remote_ops: 375 ops
active_dht_5pct_aa_us: 100000 us
active_dht_5pct_rma_us: 300000 us
active_dht_25pct_inserts: 300 inserts
active_dht_25pct_collisions: 80 inserts
active_dht_25pct_aa_remote_ops: 300 ops
active_dht_25pct_rma_remote_ops: 660 ops
active_dht_25pct_aa_us: 100000 us
active_dht_25pct_rma_us: 1000000 us
active_put_plain_us: 1000 us
active_put_logged_us: 1030 us
active_put_count: 800 puts
active_handler_us: 400 us
active_handler_entries: 800 entries";
        let lines: Vec<String> = text.lines().map(str::to_string).collect();
        let f = figures(&lines).unwrap();
        assert!(f[0].starts_with("active_dht_5pct_remote_ops_per_insert: AA 1.00, RMA 1.25 ops"), "{}", f[0]);
        assert!(f[1].contains("AA 3000, RMA 1000 inserts/s, AA 3.00x RMA"), "{}", f[1]);
        assert!(f[3].contains("AA 10.00x RMA"), "{}", f[3]);
        assert!(f[4].starts_with("active_put_logging_overhead: 3.0 %"), "{}", f[4]);
        assert!(f[5].starts_with("active_handler_ns_per_entry: 500 ns"), "{}", f[5]);
        assert!(role_dht(25) == 0x1900012 && ROLE_PUT_COST == 0x14);
        assert!(figures(&lines[1..]).is_err());
    }
}
