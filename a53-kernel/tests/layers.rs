//! The kernel's layers, read from its sources (`docs/architecture.md`, "Layers"): the services
//! import no subsystem, each subsystem imports only those below it, nothing imports the wiring,
//! and no import cycle spans more than two files.
//!
//! The sources are read by `support/module_graph.rs` (what counts as an import is said there).

#[allow(dead_code)]
mod support {
    pub mod module_graph;
}

use support::module_graph::{Sources, paths_after, product_code};

fn sources() -> Sources {
    Sources::read(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

/// The low-level services: they offer registration (`hooks`) instead of calling up.
const SERVICES: &[&str] = &[
    "arch",
    "irq",
    "timer",
    "console",
    "smp",
    "exception",
    "cluster",
    "rpu",
    "mm",
    "sync",
    "devices",
    "stop",
    "hooks",
];
/// The subsystems, each with the subsystems it may import.
const SUBSYSTEMS: &[(&str, &[&str])] = &[
    ("process", &[]),
    ("gsas_node", &["process"]),
    ("rdma_node", &["process"]),
    ("socket_node", &["process", "gsas_node", "rdma_node"]),
    ("syscall", &["process", "gsas_node", "rdma_node", "socket_node"]),
];
/// The wiring: imports everything, imported by nothing but the images.
const WIRING: &str = "kernel";

#[test]
fn the_parser_finds_imports_in_paths_groups_and_super() {
    let code = product_code(
        "use crate::{timer, process::{hooks, table}};\nlet x = crate::cluster::node_id(); // crate::kernel\nsuper::elf::parse();\n#[cfg(test)]\nmod tests { crate::rpu::x(); }",
    );
    let absolute = paths_after(&code, "crate::");
    assert_eq!(absolute, [vec!["timer"], vec!["process"], vec!["cluster", "node_id"]]);
    assert_eq!(paths_after(&code, "super::"), [vec!["elf", "parse"]]);
}

#[test]
fn the_services_import_no_subsystem_and_nothing_imports_the_wiring() {
    let sources = sources();
    assert!(sources.files.len() > 50, "the kernel's sources were not found");
    let mut wrong = Vec::new();
    for service in SERVICES {
        assert!(sources.files.keys().any(|m| m.first().is_some_and(|f| f == service)), "no module {service}");
        for (subsystem, _) in SUBSYSTEMS.iter().chain([&(WIRING, &[][..])]) {
            wrong.extend(sources.imports_between(service, subsystem));
        }
    }
    for (subsystem, _) in SUBSYSTEMS {
        wrong.extend(sources.imports_between(subsystem, WIRING));
    }
    assert!(wrong.is_empty(), "imports that go up a layer:\n{}", wrong.join("\n"));
}

#[test]
fn each_subsystem_imports_only_the_subsystems_below_it() {
    let sources = sources();
    let mut wrong = Vec::new();
    for (subsystem, below) in SUBSYSTEMS {
        for (other, _) in SUBSYSTEMS.iter().filter(|(o, _)| o != subsystem && !below.contains(o)) {
            wrong.extend(sources.imports_between(subsystem, other));
        }
    }
    assert!(wrong.is_empty(), "imports between subsystems against their order:\n{}", wrong.join("\n"));
}

#[test]
fn no_import_cycle_spans_more_than_two_files() {
    let long: Vec<Vec<String>> = sources().cycles().into_iter().filter(|c| c.len() > 2).collect();
    assert!(long.is_empty(), "import cycles: {long:#?}");
}
