//! The kernel's layers, read from its sources (`docs/architecture.md`, "Layers"): the services
//! import no subsystem, each subsystem imports only those below it, nothing imports the wiring,
//! and no import cycle spans more than two files.
//!
//! An import is a path that starts with `crate::` (also inside `use crate::{..}` groups) or
//! `super::`, outside comments and `#[cfg(test)]` modules, resolved to the longest module path
//! that exists.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

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

/// The code of a file without comments and without its `#[cfg(test)]` modules (which follow
/// the code they test, to the end of the file).
fn product_code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod ") {
        Some(at) => &text[..at],
        None => text,
    };
    text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// The paths after each `prefix` (`crate::a::b`, and the names of a `{..}` group after it).
fn paths_after(code: &str, prefix: &str) -> Vec<Vec<String>> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut paths = Vec::new();
    for (at, _) in code.match_indices(prefix) {
        if code[..at].chars().next_back().is_some_and(|c| ident(c) || c == ':') {
            continue;
        }
        let rest = &code[at + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // Top-level names of the group: `a`, `b::c` in `{a, b::{c, d}}`.
            let mut depth = 0;
            let mut item = String::new();
            for c in group.chars() {
                match c {
                    '{' => {
                        depth += 1;
                        continue;
                    }
                    '}' if depth == 0 => break,
                    '}' => {
                        depth -= 1;
                        continue;
                    }
                    ',' if depth == 0 => {
                        paths.push(split_path(&item));
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                if depth == 0 {
                    item.push(c);
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
            .filter(|(m, _)| m.first().is_none_or(|f| f != "bin"))
            .collect();
        let mut imports = BTreeMap::new();
        for (module, file) in &files {
            let code = product_code(&std::fs::read_to_string(src.join(file)).unwrap());
            // `super::` is relative to the module's parent (a `mod.rs` file is its module).
            let parent: Module = module[..module.len().saturating_sub(1)].to_vec();
            let mut targets = BTreeSet::new();
            let absolute = paths_after(&code, "crate::");
            let relative = paths_after(&code, "super::").into_iter().map(|p| [parent.clone(), p].concat());
            for path in absolute.into_iter().chain(relative) {
                if let Some(target) = Self::resolve(&files, &path)
                    && &target != module
                    && !target.is_empty()
                {
                    targets.insert(target);
                }
            }
            imports.insert(module.clone(), targets);
        }
        Self { files, imports }
    }

    fn resolve(files: &BTreeMap<Module, PathBuf>, path: &[String]) -> Option<Module> {
        (1..=path.len()).rev().map(|n| path[..n].to_vec()).find(|m| files.contains_key(m))
    }

    /// Every import whose source module starts with `from` and target with `to`.
    fn imports_between(&self, from: &str, to: &str) -> Vec<String> {
        self.imports
            .iter()
            .filter(|(m, _)| m.first().is_some_and(|f| f == from))
            .flat_map(|(m, targets)| targets.iter().map(move |t| (m, t)))
            .filter(|(_, t)| t.first().is_some_and(|f| f == to))
            .map(|(m, t)| format!("{} -> {}", self.files[m].display(), self.files[t].display()))
            .collect()
    }

    /// The import cycles (strongly connected components) of more than one file.
    fn cycles(&self) -> Vec<Vec<String>> {
        struct Tarjan<'a> {
            imports: &'a BTreeMap<Module, BTreeSet<Module>>,
            index: BTreeMap<&'a Module, usize>,
            low: BTreeMap<&'a Module, usize>,
            stack: Vec<&'a Module>,
            on_stack: BTreeSet<&'a Module>,
            components: Vec<Vec<&'a Module>>,
        }
        impl<'a> Tarjan<'a> {
            fn visit(&mut self, v: &'a Module) {
                let n = self.index.len();
                self.index.insert(v, n);
                self.low.insert(v, n);
                self.stack.push(v);
                self.on_stack.insert(v);
                for w in self.imports.get(v).into_iter().flatten() {
                    if !self.index.contains_key(w) {
                        self.visit(w);
                        let low = self.low[v].min(self.low[w]);
                        self.low.insert(v, low);
                    } else if self.on_stack.contains(w) {
                        let low = self.low[v].min(self.index[w]);
                        self.low.insert(v, low);
                    }
                }
                if self.low[v] == self.index[v] {
                    let mut component = Vec::new();
                    while let Some(w) = self.stack.pop() {
                        self.on_stack.remove(w);
                        component.push(w);
                        if w == v {
                            break;
                        }
                    }
                    self.components.push(component);
                }
            }
        }
        let mut t = Tarjan {
            imports: &self.imports,
            index: BTreeMap::new(),
            low: BTreeMap::new(),
            stack: Vec::new(),
            on_stack: BTreeSet::new(),
            components: Vec::new(),
        };
        for m in self.files.keys() {
            if !t.index.contains_key(m) {
                t.visit(m);
            }
        }
        t.components
            .into_iter()
            .filter(|c| c.len() > 1)
            .map(|c| c.into_iter().map(|m| self.files[m].display().to_string()).collect())
            .collect()
    }
}

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
    let sources = Sources::read();
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
    let sources = Sources::read();
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
    let long: Vec<Vec<String>> = Sources::read().cycles().into_iter().filter(|c| c.len() > 2).collect();
    assert!(long.is_empty(), "import cycles: {long:#?}");
}
