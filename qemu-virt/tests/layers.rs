//! The seam between the models and the transport, read from the sources (`docs/architecture.md`,
//! "The transport"): the platform and the models speak to `transport`'s traits and never name an
//! implementation of them (`fabric`, `ranks`) or the wiring that picks one (`cluster`); the
//! implementations never name the platform or the models they carry for; and the crate's
//! top-level modules import each other in no cycle.
//!
//! The sources are read by the kernel's `a53-kernel/tests/support/module_graph.rs`, the one
//! reader both crates' layering tests use (what counts as an import is said there).

#[allow(dead_code)]
#[path = "../../a53-kernel/tests/support/module_graph.rs"]
mod module_graph;

use module_graph::{Sources, paths_after, product_code};
use std::collections::{BTreeMap, BTreeSet};

fn sources() -> Sources {
    Sources::read(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

/// The seam itself: it imports none of the modules on either side of it.
const SEAM: &str = "transport";
/// The modules that speak to the seam.
const SPEAKERS: &[&str] = &["models", "platform"];
/// The implementations of the seam, and the wiring that builds a cluster on one of them.
const IMPLEMENTATIONS: &[&str] = &["fabric", "ranks", "cluster"];
/// The implementations, which carry for the models without naming them.
const CARRIERS: &[&str] = &["fabric", "ranks"];

/// A cycle of `graph`, if it has one (depth first, the path back to the module seen twice).
fn a_cycle<'a>(graph: &BTreeMap<&'a str, BTreeSet<&'a str>>) -> Option<Vec<&'a str>> {
    fn visit<'a>(
        at: &'a str,
        graph: &BTreeMap<&'a str, BTreeSet<&'a str>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<Vec<&'a str>> {
        if let Some(start) = path.iter().position(|m| *m == at) {
            return Some([&path[start..], &[at]].concat());
        }
        if !done.insert(at) {
            return None;
        }
        path.push(at);
        for next in graph.get(at).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|m| visit(m, graph, &mut Vec::new(), &mut done))
}

#[test]
fn the_parser_finds_imports_in_paths_groups_and_super() {
    let code = product_code(
        "use crate::{fabric, platform::{Platform, Looker}};\nlet x = crate::models::window::Window::new(); // crate::cluster\nsuper::routing::sink();\n#[cfg(test)]\nmod tests { crate::cluster::x(); }",
    );
    assert_eq!(
        paths_after(&code, "crate::"),
        [vec!["fabric"], vec!["platform"], vec!["models", "window", "Window", "new"]]
    );
    assert_eq!(paths_after(&code, "super::"), [vec!["routing", "sink"]]);
}

#[test]
fn the_cycle_finder_finds_a_cycle_and_only_a_cycle() {
    let graph = |edges: &[(&'static str, &'static str)]| {
        let mut g: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for (a, b) in edges {
            g.entry(a).or_default().insert(b);
        }
        g
    };
    assert_eq!(a_cycle(&graph(&[("a", "b"), ("b", "c"), ("a", "c")])), None);
    assert_eq!(a_cycle(&graph(&[("a", "b"), ("b", "c"), ("c", "b")])), Some(vec!["b", "c", "b"]));
}

#[test]
fn the_models_and_the_platform_name_no_implementation_of_the_transport() {
    let sources = sources();
    let mut wrong = Vec::new();
    for speaker in SPEAKERS {
        assert!(sources.imports.keys().any(|m| m.first().is_some_and(|f| f == speaker)), "no module {speaker}");
        for implementation in IMPLEMENTATIONS {
            wrong.extend(sources.imports_between(speaker, implementation));
        }
    }
    assert!(wrong.is_empty(), "imports across the seam:\n{}", wrong.join("\n"));
    for speaker in SPEAKERS {
        assert!(!sources.imports_between(speaker, SEAM).is_empty(), "{speaker} does not speak to the seam");
    }
}

#[test]
fn the_transports_name_neither_the_platform_nor_the_models_and_the_seam_names_no_side() {
    let sources = sources();
    let mut wrong = Vec::new();
    for (carrier, side) in CARRIERS.iter().flat_map(|c| SPEAKERS.iter().map(move |s| (c, s))) {
        wrong.extend(sources.imports_between(carrier, side));
    }
    for side in SPEAKERS.iter().chain(IMPLEMENTATIONS) {
        wrong.extend(sources.imports_between(SEAM, side));
    }
    assert!(wrong.is_empty(), "imports across the seam:\n{}", wrong.join("\n"));
    for carrier in CARRIERS {
        assert!(!sources.imports_between(carrier, SEAM).is_empty(), "{carrier} does not implement the seam");
    }
}

#[test]
fn the_top_level_modules_import_each_other_in_no_cycle() {
    let sources = sources();
    let graph = sources.top_level();
    assert!(graph.len() > 10, "the crate's sources were not found");
    if let Some(cycle) = a_cycle(&graph) {
        panic!("an import cycle between top-level modules: {}", cycle.join(" -> "));
    }
}
