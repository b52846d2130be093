//! `docs/architecture.md` lists the workspace's crates ("The crates": name and path) and what
//! each depends on ("The graph"); a test holds both tables to `cargo metadata`, so that a crate or
//! a dependency edge cannot come or go without the document saying so.

#[cfg(test)]
mod tests {
    use crate::images::workspace_root;
    use std::collections::{BTreeMap, BTreeSet};

    /// (path relative to the workspace, normal, build and dev dependencies within the workspace).
    type Deps = (String, [BTreeSet<String>; 3]);

    fn metadata() -> BTreeMap<String, Deps> {
        let out = std::process::Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
            .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
            .current_dir(workspace_root())
            .output()
            .expect("cargo metadata runs");
        assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let packages = doc["packages"].as_array().unwrap();
        let names: BTreeSet<String> = packages.iter().map(|p| p["name"].as_str().unwrap().to_string()).collect();
        let root = workspace_root();
        packages
            .iter()
            .map(|p| {
                let manifest = std::path::Path::new(p["manifest_path"].as_str().unwrap());
                let dir = manifest.parent().unwrap().strip_prefix(&root).unwrap().display().to_string();
                let mut deps: [BTreeSet<String>; 3] = Default::default();
                for d in p["dependencies"].as_array().unwrap() {
                    let name = d["name"].as_str().unwrap();
                    if !names.contains(name) {
                        continue;
                    }
                    let kind = match d["kind"].as_str() {
                        None => 0,
                        Some("build") => 1,
                        Some(_) => 2,
                    };
                    deps[kind].insert(name.to_string());
                }
                (p["name"].as_str().unwrap().to_string(), (dir, deps))
            })
            .collect()
    }

    /// The rows of the first table after `heading`: their cells, trimmed.
    fn table_after<'a>(doc: &'a str, heading: &str) -> Vec<Vec<&'a str>> {
        let start = doc.find(heading).unwrap_or_else(|| panic!("no `{heading}` in docs/architecture.md"));
        doc[start..]
            .lines()
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'))
            .skip(2)
            .map(|l| l.trim_matches('|').split('|').map(str::trim).collect())
            .collect()
    }

    /// The names in backticks in a cell (`a`, `b` -> [a, b]).
    fn names(cell: &str) -> BTreeSet<String> {
        cell.split(',').map(|n| n.trim().trim_matches('`').to_string()).filter(|n| !n.is_empty()).collect()
    }

    fn architecture() -> String {
        std::fs::read_to_string(workspace_root().join("docs/architecture.md")).unwrap()
    }

    #[test]
    fn the_crate_table_names_every_workspace_crate_at_its_path() {
        let doc = architecture();
        let listed: BTreeMap<String, String> = table_after(&doc, "### The crates")
            .iter()
            .map(|row| (row[0].trim_matches('`').to_string(), row[1].trim_matches('`').to_string()))
            .collect();
        let actual: BTreeMap<String, String> = metadata().into_iter().map(|(name, (dir, _))| (name, dir)).collect();
        assert_eq!(listed, actual, "docs/architecture.md, \"The crates\" (name and path)");
    }

    #[test]
    fn the_graph_table_is_every_dependency_between_workspace_crates() {
        let doc = architecture();
        let listed: BTreeMap<String, [BTreeSet<String>; 3]> = table_after(&doc, "### The graph")
            .iter()
            .map(|row| (row[0].trim_matches('`').to_string(), [names(row[1]), names(row[2]), names(row[3])]))
            .collect();
        let actual: BTreeMap<String, [BTreeSet<String>; 3]> =
            metadata().into_iter().map(|(name, (_, deps))| (name, deps)).collect();
        assert_eq!(listed, actual, "docs/architecture.md, \"The graph\" (depends on, build, dev)");
    }

    #[test]
    fn the_tables_are_read_as_written() {
        let doc =
            "### The graph\n\ntext\n\n| crate | a | b | c |\n|---|---|---|---|\n| `x` | `y`, `z` | | `x` |\n\nafter";
        let rows = table_after(doc, "### The graph");
        assert_eq!(rows, [vec!["`x`", "`y`, `z`", "", "`x`"]]);
        assert_eq!(names(rows[0][1]), BTreeSet::from(["y".to_string(), "z".to_string()]));
        assert!(names(rows[0][2]).is_empty());
    }
}
