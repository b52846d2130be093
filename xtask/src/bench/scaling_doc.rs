//! `docs/scaling.md` quotes the figures of `cargo xtask bench ranks`, `bench idle` and
//! `bench mpi-link` by name; a test holds every name it quotes to one those benches print, so
//! that a figure renamed in a bench cannot leave the page quoting a line nobody prints.

#[cfg(test)]
mod tests {
    use super::super::{idle, ranks};
    use crate::host_cpu::Kind;
    use crate::images::workspace_root;
    use std::collections::{BTreeSet, HashMap};

    /// The name of every figure line the three benches print.
    fn printed() -> BTreeSet<String> {
        let sample = |nodes: usize| idle::IdleShares {
            nodes,
            per_node: vec![HashMap::from([(Kind::A53, 1.0)]); nodes],
            platform: 1.0,
            memory: vec![idle::Memory::default(); nodes],
            platform_memory: idle::Memory::default(),
        };
        let mut lines: Vec<String> = [1, 2, 4].into_iter().flat_map(|n| idle::lines(&sample(n))).collect();
        lines.extend(idle::busy_lines(&sample(idle::BUSY_NODES)));
        let check = std::fs::read_to_string(workspace_root().join("qemu-virt/examples/mpi_link_check.rs")).unwrap();
        lines.extend(check.split("figure ").skip(1).map(String::from));
        let mut names: BTreeSet<String> = lines.iter().filter_map(|l| Some(l.split_once(':')?.0.to_string())).collect();
        names.extend(ranks::FIGURES.iter().map(|f| f.to_string()));
        names
    }

    /// The figure names quoted in `text`: words in backticks made of lower-case letters,
    /// digits and underscores, with at least two underscores.
    fn quoted(text: &str) -> Vec<&str> {
        text.split('`')
            .skip(1)
            .step_by(2)
            .filter(|w| {
                w.matches('_').count() >= 2
                    && w.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            })
            .collect()
    }

    #[test]
    fn every_figure_docs_scaling_quotes_is_one_a_bench_prints() {
        let page = std::fs::read_to_string(workspace_root().join("docs/scaling.md")).unwrap();
        let printed = printed();
        let unknown: Vec<&str> = quoted(&page).into_iter().filter(|q| !printed.contains(*q)).collect();
        assert!(unknown.is_empty(), "docs/scaling.md quotes figures no bench prints: {unknown:?}");
        // The page quotes what the issue asks of it: the cost within and across ranks, what a
        // node costs, the link between ranks.
        for wanted in [
            "fad_across_vs_within_ratio",
            "rdma_64kib_write_across_vs_within_ratio",
            "idle_4_nodes_memory_per_node",
            "idle_4_nodes_host_cpu_per_node",
            "busy_2_nodes_host_cpu_per_node",
            "mpi_link_64b_round_trip_median",
            "mpi_link_64kib_message_throughput",
        ] {
            assert!(printed.contains(wanted), "no bench prints {wanted}");
            assert!(quoted(&page).contains(&wanted), "docs/scaling.md does not quote {wanted}");
        }
    }

    #[test]
    fn quoted_names_are_backticked_snake_case() {
        assert_eq!(quoted("a `fad_x_y` b `cargo xtask` `x_y` `idle_4_nodes_z`"), ["fad_x_y", "idle_4_nodes_z"]);
    }
}
