//! The tree cites its documentation by path (`docs/hw/vmbox.md`, ...); a test holds every such
//! citation to a file that exists, so that a page can be renamed or moved only together with
//! the places that point at it.

#[cfg(test)]
mod tests {
    use crate::images::workspace_root;
    use std::path::{Path, PathBuf};

    /// Files that may cite documentation: sources (C headers and programs too), manifests,
    /// scripts, the docs themselves.
    fn cites_docs(path: &Path) -> bool {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        matches!(ext, "rs" | "md" | "toml" | "ld" | "x" | "sh" | "h" | "c") || path.ends_with(".ci/run")
    }

    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            let name = entry.file_name();
            if name == "target" || name == ".git" {
                continue;
            }
            if path.is_dir() {
                walk(&path, out);
            } else if cites_docs(&path) {
                out.push(path);
            }
        }
    }

    /// Every path under `docs/` that ends in `.md`, in `text`.
    fn citations(text: &str) -> Vec<&str> {
        let mut found = Vec::new();
        let mut rest = text;
        while let Some(at) = rest.find("docs/") {
            let tail = &rest[at..];
            let len = tail.find(|c: char| !(c.is_ascii_alphanumeric() || "/._-".contains(c))).unwrap_or(tail.len());
            let cited = tail[..len].trim_end_matches('.');
            if cited.ends_with(".md") {
                found.push(cited);
            }
            rest = &tail[len.max(5)..];
        }
        found
    }

    #[test]
    fn finds_citations_in_text() {
        assert_eq!(
            citations("see `docs/hw/vmbox.md`, and docs/architecture.md."),
            ["docs/hw/vmbox.md", "docs/architecture.md"]
        );
        assert!(citations("docs/hw/ and docs/x.txt").is_empty());
    }

    #[test]
    fn every_cited_doc_exists() {
        let root = workspace_root();
        let mut files = Vec::new();
        walk(&root, &mut files);
        let mut missing = Vec::new();
        for file in &files {
            let Ok(text) = std::fs::read_to_string(file) else { continue };
            for (n, line) in text.lines().enumerate() {
                for cited in citations(line) {
                    if !root.join(cited).is_file() {
                        missing.push(format!("{}:{}: {cited}", file.strip_prefix(&root).unwrap().display(), n + 1));
                    }
                }
            }
        }
        assert!(files.len() > 100, "the walk found only {} files", files.len());
        assert!(missing.is_empty(), "cited documentation that does not exist:\n{}", missing.join("\n"));
    }
}
