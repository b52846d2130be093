//! `cargo xtask bench active`: Active Access (`docs/hw/active-access.md`) against the RMA
//! baseline, measured in the same runs, each figure beside the seed's (seed 004, Besta and
//! Hoefler, "Active Access", ICS '15, §3.3) or, where the seed gives none, beside a goal.
//!
//! Two nodes, the program on node 0, each printing `bench` lines:
//!
//! - `active-dht` (owner on node 0, its inserter on node 1) at 5 % and 25 % collisions, 300
//!   inserts each: `active_dht_{P}pct_{aa,rma}_remote_ops` and `_us`, `_inserts`, `_collisions`;
//! - `active-checkpoint put-cost` (against an owner on node 1): the cost of logging on plain
//!   puts, `active_put_{plain,logged}_us` for the same number of 256 B puts
//!   (`active_put_count`), to a plain page and to a put-logging page.
//!
//! Then one node with its R5 under `-icount shift=0` (QEMU counts instructions only there; the
//! test image's `bench=active-icount` lets the process read the PMU): `active-checkpoint`
//! HandlerInstructions puts to its own put-logging pages and counts the instructions of the
//! checkpoint's handler (`Log::poll` marking the pages dirty) over 0, 64 and 256 entries,
//! `active_handler_{N}_entries_instructions` (medians). The figure is the difference of the two
//! non-empty polls per entry between them, so the poll's fixed cost (reading `produced`,
//! publishing `consumed`) cancels; the counter counts every vCPU of the node, but the others
//! are asleep (the process waits for them before it polls).

use super::{Bench, SERVICE_INSTRUCTIONS_GOAL, required};
use crate::qemu_run::{Load, node_specs, node_specs_with};

/// The seed's figures.
pub const SEED_DHT_SPEEDUP: f64 = 3.0;
pub const SEED_LOGGING_OVERHEAD: &str = "1-5 %";
/// The handler's goal per log entry: no more than the atomic service spends on a request
/// (the seed counts no instructions for its handlers): taking a logged access in software
/// costs no more than serving a remote atomic.
pub const HANDLER_INSTRUCTIONS_GOAL: u64 = SERVICE_INSTRUCTIONS_GOAL;
/// The entries of the two non-empty polls the handler's figure is the difference of.
const POLLS: (u32, u32) = (64, 256);

/// Runs `program` with string argument `arg` on node 0 of two nodes (node 1 serves).
fn run_program(bench: &Bench, program: &str, arg: &str) -> anyhow::Result<Vec<String>> {
    let boot_args = [format!("run={program} arg={arg} exit"), "serve exit".to_string()];
    let (lines, _) = bench.run_nodes(node_specs_with(Load::kernel(bench.images), &boot_args))?;
    for line in &lines {
        println!("{line}");
    }
    Ok(lines)
}

/// The handler's instructions: one node with its R5 under `-icount`.
fn run_counted(bench: &Bench) -> anyhow::Result<Vec<String>> {
    let mut spec = node_specs(1, Load::ktest(bench.images, true), "bench=active-icount").remove(0);
    spec.extra_args = vec!["-icount".into(), "shift=0".into()];
    let (lines, _) = bench.run_nodes(vec![spec])?;
    for line in &lines {
        println!("icount: {line}");
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
    let poll = |entries: u32| required(lines, &format!("active_handler_{entries}_entries_instructions"));
    let (empty, few, many) = (poll(0)?, poll(POLLS.0)?, poll(POLLS.1)?);
    anyhow::ensure!(many > few, "the poll of {} entries took no more instructions than of {}", POLLS.1, POLLS.0);
    let per_entry = (many - few) / f64::from(POLLS.1 - POLLS.0);
    let met = if per_entry <= HANDLER_INSTRUCTIONS_GOAL as f64 { "met" } else { "NOT met" };
    out.push(format!(
        "active_handler_instructions_per_entry: {per_entry:.1} instructions (the checkpoint's handler in Log::poll, marking the entry's page dirty; polls of {} and {} entries, one node under -icount; goal <= {HANDLER_INSTRUCTIONS_GOAL}, the atomic service's per request, the seed counts none: {met})",
        POLLS.0, POLLS.1
    ));
    out.push(format!(
        "active_handler_poll_fixed_instructions: {empty:.0} instructions (a poll that finds no entry: reading `produced`, publishing `consumed`; {:.1} per entry over a poll of {})",
        many / f64::from(POLLS.1),
        POLLS.1
    ));
    Ok(out)
}

pub fn run(bench: &Bench) -> anyhow::Result<()> {
    let mut lines = Vec::new();
    for pct in ["5", "25"] {
        lines.extend(run_program(bench, "active-dht", pct)?);
    }
    lines.extend(run_program(bench, "active-checkpoint", "put-cost")?);
    lines.extend(run_counted(bench)?);
    println!("--- figures (each computed from the lines above) ---");
    for f in figures(&lines)? {
        println!("{f}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINES: &str = "active_dht_5pct_inserts: 300 inserts
active_dht_5pct_collisions: 18 inserts
active_dht_5pct_aa_remote_ops: 300 ops
active_dht_5pct_rma_remote_ops: 372 ops
active_dht_5pct_aa_us: 100000 us
active_dht_5pct_rma_us: 300000 us
active_dht_25pct_inserts: 300 inserts
active_dht_25pct_collisions: 80 inserts
active_dht_25pct_aa_remote_ops: 300 ops
active_dht_25pct_rma_remote_ops: 620 ops
active_dht_25pct_aa_us: 100000 us
active_dht_25pct_rma_us: 1000000 us
active_put_plain_us: 1000 us
active_put_logged_us: 1030 us
active_put_count: 800 puts
active_handler_0_entries_instructions: 200 instructions
active_handler_64_entries_instructions: 6600 instructions
active_handler_256_entries_instructions: 25800 instructions";

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_string).collect()
    }

    #[test]
    fn figures_come_from_the_lines_and_a_missing_one_is_an_error() {
        let f = figures(&lines(LINES)).unwrap();
        assert!(f[0].starts_with("active_dht_5pct_remote_ops_per_insert: AA 1.00, RMA 1.24 ops"), "{}", f[0]);
        assert!(f[1].contains("AA 3000, RMA 1000 inserts/s, AA 3.00x RMA"), "{}", f[1]);
        assert!(f[3].contains("AA 10.00x RMA"), "{}", f[3]);
        assert!(f[4].starts_with("active_put_logging_overhead: 3.0 %"), "{}", f[4]);
        // (25800 - 6600) / (256 - 64) = 100 per entry: the fixed 200 cancels.
        assert!(f[5].starts_with("active_handler_instructions_per_entry: 100.0 instructions"), "{}", f[5]);
        assert!(f[5].ends_with(": met)"), "{}", f[5]);
        assert!(f[6].starts_with("active_handler_poll_fixed_instructions: 200 instructions"), "{}", f[6]);
        assert!(f[6].contains("100.8 per entry over a poll of 256"), "{}", f[6]);
        for (k, missing) in LINES.lines().enumerate() {
            let without: Vec<String> =
                lines(LINES).into_iter().enumerate().filter(|(i, _)| *i != k).map(|l| l.1).collect();
            let e = figures(&without).unwrap_err().to_string();
            let name = missing.split(':').next().unwrap();
            assert!(e.contains(name), "{name}: {e}");
        }
    }

    /// The harness reads lines the programs print: each name it asks for is one a program's
    /// source logs (`bench NAME: ...`), so a renamed line fails here, not in a bench run.
    #[test]
    fn the_programs_print_every_line_the_figures_read() {
        let source = |name: &str| {
            std::fs::read_to_string(crate::images::workspace_root().join(format!("a53-kernel/user/src/bin/{name}.rs")))
                .unwrap()
        };
        let (dht, checkpoint) = (source("active-dht"), source("active-checkpoint"));
        for line in LINES.lines() {
            let name = line.split(':').next().unwrap();
            let (program, logged) = if let Some(what) = name.strip_prefix("active_dht_25pct_") {
                (&dht, format!("\"bench active_dht_{{}}pct_{what}: "))
            } else if name.starts_with("active_dht_5pct_") {
                continue;
            } else if name.starts_with("active_handler_") {
                (&checkpoint, "\"bench active_handler_{}_entries_instructions: ".to_string())
            } else {
                (&checkpoint, format!("\"bench {name}: "))
            };
            assert!(program.contains(&logged), "no program logs {logged}");
        }
        assert!(checkpoint.contains("const POLL_PAGES: [usize; 3] = [0, 4, 16];"), "polls of 0, 64 and 256 entries");
    }

    #[test]
    fn the_handler_figure_follows_its_lines_and_its_goal() {
        let slow = LINES.replace("256_entries_instructions: 25800", "256_entries_instructions: 38000");
        let f = figures(&lines(&slow)).unwrap();
        // (38000 - 6600) / 192 = 163.5, above the goal.
        assert!(f[5].starts_with("active_handler_instructions_per_entry: 163.5 instructions"), "{}", f[5]);
        assert!(f[5].ends_with(": NOT met)"), "{}", f[5]);
        let flat = LINES.replace("256_entries_instructions: 25800", "256_entries_instructions: 6600");
        assert!(figures(&lines(&flat)).is_err(), "a poll of more entries that costs nothing more is no figure");
    }
}
