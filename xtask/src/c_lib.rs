//! The C library of Unimem processes: `libunimem_c.a` (package `unimem-c`,
//! `a53-kernel/user/c`) and its headers (`a53-kernel/user/include`), which a C program links
//! with a C runtime and picolibc.
//!
//! It is built as the user programs are (profile `user`, `core` built from `rust-src`, in
//! their target directory), and the archive is checked after each build: it must define every
//! function the library's headers declare, and neither `_start` nor `main`, which are the C
//! runtime's. The POSIX layer's headers ([`RUNTIME_HEADERS`]) declare what the runtime defines
//! over the library (`crt/posix.c`); `unimem-c`'s host tests hold the runtime to them.

use crate::images::{self, A53_TARGET, Options};
use anyhow::{Context, bail};
use object::{Object, ObjectSymbol};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The headers C programs include.
pub fn include_dir() -> PathBuf {
    images::workspace_root().join("a53-kernel/user/include")
}

/// The headers of the POSIX layer: their functions (`socket`, `poll`, ...) are the C runtime's,
/// not the library's. (`unimem-c`'s host tests check that no header mixes the two.)
pub const RUNTIME_HEADERS: [&str; 3] = ["poll.h", "sys/socket.h", "unimem_socket.h"];

/// The headers of the runtime's OpenSHMEM layer: their routines are defined by `crt/shmem.c`
/// over the library's core (`unimem_shmem.h`), and declared by X-macros, so only the
/// preprocessor lists them ([`shmem_functions`]).
pub const SHMEM_HEADERS: [&str; 1] = ["shmem.h"];

/// `cargo <verb>` (build, clippy) of the C library for the A53.
pub fn c_lib_cargo(verb: &str, opts: Options) -> anyhow::Result<Command> {
    let mut cmd = images::bare_metal_cargo(verb, A53_TARGET, images::a53_target_dir(opts))?;
    cmd.args(["--package", "unimem-c", "--lib", "--profile", "user"]);
    Ok(cmd)
}

/// Builds the C library; the path of `libunimem_c.a`, once checked.
pub fn build_c_lib(opts: Options) -> anyhow::Result<PathBuf> {
    let status = c_lib_cargo("build", opts)?.status().context("cannot run cargo for the C library")?;
    if !status.success() {
        bail!("building the C library failed");
    }
    let archive = images::a53_target_dir(opts).join(A53_TARGET).join("user").join("libunimem_c.a");
    let bytes = std::fs::read(&archive).with_context(|| format!("cannot read {}", archive.display()))?;
    check_archive(&bytes, &declared_functions(&include_dir())?)
        .with_context(|| format!("{} does not fit its headers", archive.display()))?;
    Ok(archive)
}

/// The global symbols the members of the archive `bytes` define.
fn defined_symbols(bytes: &[u8]) -> anyhow::Result<BTreeSet<String>> {
    let archive = object::read::archive::ArchiveFile::parse(bytes).context("not an archive")?;
    let mut defined = BTreeSet::new();
    for member in archive.members() {
        let member = member?;
        let name = String::from_utf8_lossy(member.name()).into_owned();
        let file = object::File::parse(member.data(bytes)?).with_context(|| format!("member {name}"))?;
        for symbol in file.symbols().filter(|s| s.is_global() && s.is_definition()) {
            defined.insert(symbol.name()?.to_string());
        }
    }
    Ok(defined)
}

/// Every function `declared` is defined, and neither `_start` nor `main`.
fn check_archive(archive: &[u8], declared: &BTreeSet<String>) -> anyhow::Result<()> {
    let defined = defined_symbols(archive)?;
    let missing: Vec<&String> = declared.difference(&defined).collect();
    if !missing.is_empty() {
        bail!("declared in the headers but not defined: {missing:?}");
    }
    for entry in ["_start", "main"] {
        if defined.contains(entry) {
            bail!("it defines `{entry}`, which belongs to the C runtime");
        }
    }
    Ok(())
}

/// The functions the library's headers in `dir` declare (the top-level headers but the POSIX
/// layer's, [`RUNTIME_HEADERS`]): in each statement outside comments and preprocessor lines
/// that is not a `typedef`, the name before the first `(`. (`unimem-c`'s host tests read the
/// headers the same way to hold them to the Rust side.)
pub(crate) fn declared_functions(dir: &Path) -> anyhow::Result<BTreeSet<String>> {
    let mut names = BTreeSet::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let path = entry?.path();
        let runtime = path.file_name().is_some_and(|n| {
            let n = n.to_string_lossy();
            RUNTIME_HEADERS.contains(&n.as_ref()) || SHMEM_HEADERS.contains(&n.as_ref())
        });
        if path.extension().is_some_and(|e| e == "h") && !runtime {
            names.extend(declared_in(&path)?);
        }
    }
    Ok(names)
}

/// The functions the POSIX layer's headers in `dir` declare ([`RUNTIME_HEADERS`]), which the C
/// runtime defines over the library.
#[cfg(test)]
pub(crate) fn runtime_functions(dir: &Path) -> anyhow::Result<BTreeSet<String>> {
    let mut names = BTreeSet::new();
    for header in RUNTIME_HEADERS {
        names.extend(declared_in(&dir.join(header))?);
    }
    Ok(names)
}

/// The functions the OpenSHMEM layer's headers in `dir` declare ([`SHMEM_HEADERS`]) beyond
/// the library's: the headers run through the C preprocessor (`cpp`, the compiler with `-E`),
/// then read as [`declared_functions`] reads the others.
#[cfg(test)]
pub(crate) fn shmem_functions(
    dir: &Path,
    cpp: &mut dyn FnMut(&str) -> anyhow::Result<String>,
) -> anyhow::Result<BTreeSet<String>> {
    let library = declared_functions(dir)?;
    let mut names = BTreeSet::new();
    for header in SHMEM_HEADERS {
        let expanded = cpp(&format!("#include <{header}>\n"))?;
        let own = lines_from(&expanded, &|file| file.ends_with(&format!("/{header}")));
        names.extend(declared_in_text(&own).into_iter().filter(|n| !library.contains(n)));
    }
    Ok(names)
}

/// The lines of the preprocessor's output `expanded` that came from a file `from` accepts (by
/// the line markers, `# LINE "FILE" FLAGS`); a macro's expansion belongs to the file where the
/// macro was used.
#[cfg(test)]
pub(crate) fn lines_from(expanded: &str, from: &dyn Fn(&str) -> bool) -> String {
    let mut keep = false;
    let mut out = String::new();
    for line in expanded.lines() {
        if let Some((_, rest)) = line.strip_prefix("# ").and_then(|marker| marker.split_once(" \"")) {
            keep = rest.split_once('"').is_some_and(|(file, _)| from(file));
            continue;
        }
        if keep {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The functions header `path` declares (see [`declared_functions`]).
fn declared_in(path: &Path) -> anyhow::Result<BTreeSet<String>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(declared_in_text(&text))
}

/// The functions a header's `text` declares (see [`declared_functions`]).
fn declared_in_text(text: &str) -> BTreeSet<String> {
    let mut code = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("/*") {
        code.push_str(&rest[..start]);
        rest = rest[start..].split_once("*/").map_or("", |(_, after)| after);
    }
    code.push_str(rest);
    let code: String = code
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .map(|l| l.replace("extern \"C\" {", "") + "\n")
        .collect();
    let statements: Vec<&str> = code.split(';').collect();
    let mut names = BTreeSet::new();
    for statement in &statements[..statements.len() - 1] {
        let s = statement.trim().trim_start_matches('}').trim();
        let Some(paren) = s.find('(').filter(|_| !s.starts_with("typedef")) else { continue };
        let before = s[..paren].trim_end();
        let start = before.rfind(|c: char| !(c.is_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
        names.insert(before[start..].to_string());
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The C runtime is written against these names (`unimem_sys.h`).
    #[test]
    fn the_headers_declare_the_runtime_primitives() {
        let declared = declared_functions(&include_dir()).unwrap();
        for name in [
            "unimem_sys_exit",
            "unimem_sys_log",
            "unimem_sys_time_us",
            "unimem_sys_sleep_us",
            "unimem_sys_map",
            "unimem_sys_args",
            "unimem_sys_yield",
            "unimem_sys_node",
            "unimem_sys_nodes",
        ] {
            assert!(declared.contains(name), "{name}");
        }
        assert!(declared.contains("READ64") && declared.contains("unim_dma_submit_transfer"));
        assert!(declared.contains("unimem_sock_socket"), "the library's socket layer");
        assert!(!declared.contains("unim_comp_cb_t"), "a typedef is no function");
        assert!(!declared.contains("poll") && !declared.contains("unimem_mailbox_event_fd"), "the runtime's");
        for header in RUNTIME_HEADERS {
            assert!(include_dir().join(header).is_file(), "{header}");
        }
    }
}
