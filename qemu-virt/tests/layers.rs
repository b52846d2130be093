//! The seam between the models and the transport, read from the sources (`docs/architecture.md`,
//! "The transport"): the platform and the models speak to `transport`'s traits and never name an
//! implementation of them (`fabric`, `ranks`) or the wiring that picks one (`cluster`); the
//! implementations never name the platform or the models they carry for; and the crate's
//! top-level modules import each other in no cycle.
//!
//! An import is a path that starts with `crate::` (also inside `use crate::{..}` groups) or
//! `super::`, outside comments and `#[cfg(test)]` modules, resolved to the longest module path
//! that exists.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The seam itself: it imports none of the modules on either side of it.
const SEAM: &str = "transport";
/// The modules that speak to the seam.
const SPEAKERS: &[&str] = &["models", "platform"];
/// The implementations of the seam, and the wiring that builds a cluster on one of them.
const IMPLEMENTATIONS: &[&str] = &["fabric", "ranks", "cluster"];
/// The implementations, which carry for the models without naming them.
const CARRIERS: &[&str] = &["fabric", "ranks"];

type Module = Vec<String>;

struct Sources {
    /// Module path -> file (relative to `src`).
    files: BTreeMap<Module, PathBuf>,
    /// Module -> the modules it imports.
    imports: BTreeMap<Module, BTreeSet<Module>>,
}

fn module_of(relative: &Path) -> Module {
    let mut parts: Vec<String> = relative.with_extension("").iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file without comments and without its `#[cfg(test)]` module (which follows
/// the code it tests, to the end of the file).
fn product_code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod ") {
        Some(at) => &text[..at],
        None => text,
    };
    text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// The paths after each `prefix` (`crate::a::b`, and the top-level names of a `{..}` group).
fn paths_after(code: &str, prefix: &str) -> Vec<Vec<String>> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut paths = Vec::new();
    for (at, _) in code.match_indices(prefix) {
        if code[..at].chars().next_back().is_some_and(|c| ident(c) || c == ':' || c == '$') {
            continue;
        }
        let rest = &code[at + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let (mut depth, mut item) = (0, String::new());
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => paths.push(split_path(&std::mem::take(&mut item))),
                    _ if depth == 0 => item.push(c),
                    _ => {}
                }
            }
            paths.push(split_path(&item));
        } else {
            let end = rest.find(|c: char| !(ident(c) || c == ':')).unwrap_or(rest.len());
            paths.push(split_path(&rest[..end]));
        }
    }
    paths
}

fn split_path(path: &str) -> Vec<String> {
    path.split("::").map(str::trim).filter(|s| !s.is_empty() && *s != "self").map(String::from).collect()
}

impl Sources {
    fn read() -> Self {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut paths = Vec::new();
        rust_files(&src, &mut paths);
        let files: BTreeMap<Module, PathBuf> = paths
            .into_iter()
            .map(|p| {
                let relative = p.strip_prefix(&src).unwrap().to_path_buf();
                (module_of(&relative), relative)
            })
            .collect();
        let mut imports = BTreeMap::new();
        for (module, file) in files.iter().filter(|(m, _)| !m.is_empty()) {
            let code = product_code(&std::fs::read_to_string(src.join(file)).unwrap());
            // `super::` is relative to the module's parent (a `mod.rs` file is its module).
            let parent: Module = module[..module.len() - 1].to_vec();
            let absolute = paths_after(&code, "crate::");
            let relative = paths_after(&code, "super::").into_iter().map(|p| [parent.clone(), p].concat());
            let targets = absolute
                .into_iter()
                .chain(relative)
                .filter_map(|path| Self::resolve(&files, &path))
                .filter(|target| target != module && !target.is_empty())
                .collect();
            imports.insert(module.clone(), targets);
        }
        Self { files, imports }
    }

    fn resolve(files: &BTreeMap<Module, PathBuf>, path: &[String]) -> Option<Module> {
        (1..=path.len()).rev().map(|n| path[..n].to_vec()).find(|m| files.contains_key(m))
    }

    /// Every import whose source module is under top-level module `from` and target under `to`.
    fn imports_between(&self, from: &str, to: &str) -> Vec<String> {
        self.imports
            .iter()
            .filter(|(m, _)| m[0] == from)
            .flat_map(|(m, targets)| targets.iter().map(move |t| (m, t)))
            .filter(|(_, t)| t[0] == to)
            .map(|(m, t)| format!("{} -> {}", self.files[m].display(), self.files[t].display()))
            .collect()
    }

    /// Top-level module -> the other top-level modules its files import.
    fn top_level(&self) -> BTreeMap<&str, BTreeSet<&str>> {
        let mut graph: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for (module, targets) in &self.imports {
            let from = graph.entry(module[0].as_str()).or_default();
            from.extend(targets.iter().map(|t| t[0].as_str()).filter(|t| *t != module[0]));
        }
        graph
    }
}

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
    let sources = Sources::read();
    let mut wrong = Vec::new();
    for speaker in SPEAKERS {
        assert!(sources.imports.keys().any(|m| m[0] == *speaker), "no module {speaker}");
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
    let sources = Sources::read();
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
    let sources = Sources::read();
    let graph = sources.top_level();
    assert!(graph.len() > 10, "the crate's sources were not found");
    if let Some(cycle) = a_cycle(&graph) {
        panic!("an import cycle between top-level modules: {}", cycle.join(" -> "));
    }
}
