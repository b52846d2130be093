//! A crate's modules and the imports between them, read from its sources: the one reader the
//! layering tests of the kernel (`a53-kernel/tests/layers.rs`) and of the emulator
//! (`qemu-virt/tests/layers.rs`) hold their rules to.
//!
//! An import is a path that starts with `crate::` (also inside `use crate::{..}` groups) or
//! `super::`, outside comments and `#[cfg(test)]` modules, resolved to the longest module path
//! that exists.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

pub type Module = Vec<String>;

pub struct Sources {
    /// Module path -> file (relative to `src`).
    pub files: BTreeMap<Module, PathBuf>,
    /// Module -> the modules it imports.
    pub imports: BTreeMap<Module, BTreeSet<Module>>,
}

pub fn module_of(relative: &Path) -> Module {
    let mut parts: Vec<String> = relative.with_extension("").iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

pub fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
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
pub fn product_code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod ") {
        Some(at) => &text[..at],
        None => text,
    };
    text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// The paths after each `prefix` (`crate::a::b`, and the names of a `{..}` group after it).
pub fn paths_after(code: &str, prefix: &str) -> Vec<Vec<String>> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut paths = Vec::new();
    for (at, _) in code.match_indices(prefix) {
        if code[..at].chars().next_back().is_some_and(|c| ident(c) || c == ':' || c == '$') {
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

pub fn split_path(path: &str) -> Vec<String> {
    path.split("::").map(str::trim).filter(|s| !s.is_empty() && *s != "self").map(String::from).collect()
}

impl Sources {
    /// The modules under `src` (a crate's `src`; `src/bin` left out) and their imports.
    pub fn read(src: &Path) -> Self {
        let mut paths = Vec::new();
        rust_files(src, &mut paths);
        let files: BTreeMap<Module, PathBuf> = paths
            .into_iter()
            .map(|p| {
                let relative = p.strip_prefix(src).unwrap().to_path_buf();
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
    pub fn imports_between(&self, from: &str, to: &str) -> Vec<String> {
        self.imports
            .iter()
            .filter(|(m, _)| m.first().is_some_and(|f| f == from))
            .flat_map(|(m, targets)| targets.iter().map(move |t| (m, t)))
            .filter(|(_, t)| t.first().is_some_and(|f| f == to))
            .map(|(m, t)| format!("{} -> {}", self.files[m].display(), self.files[t].display()))
            .collect()
    }

    /// The import cycles (strongly connected components) of more than one file.
    pub fn cycles(&self) -> Vec<Vec<String>> {
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

    /// Top-level module -> the other top-level modules its files import.
    pub fn top_level(&self) -> BTreeMap<&str, BTreeSet<&str>> {
        let mut graph: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for (module, targets) in &self.imports {
            // The crate root (`lib.rs`) is no top-level module of its own.
            let Some(top) = module.first() else { continue };
            let from = graph.entry(top.as_str()).or_default();
            from.extend(targets.iter().filter_map(|t| t.first()).map(String::as_str).filter(|t| *t != top));
        }
        graph
    }
}
