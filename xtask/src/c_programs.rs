//! C programs (`a53-kernel/user/crt/README.md`): compiled with Debian's cross compiler against
//! picolibc, started by the stack's own runtime (`crt/crt0.S`, `crt/runtime.c`, `crt/posix.c`),
//! linked with the user library's C API (`unimem-c`), laid out as the Rust programs are
//! (`link/unimem-c.ld`).
//! Those kept in the repository (`a53-kernel/user/c-programs/NAME.c`) are built with the Rust
//! programs; `cargo xtask run prog.c` adds its own for that invocation.

use crate::images::{self, Options, workspace_root};
use crate::setup::{C_COMPILER, PICOLIBC_SPECS};
use anyhow::{Context, bail};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// A C program: its name (the first source's stem) and its source files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CProgram {
    pub name: String,
    pub sources: Vec<PathBuf>,
}

impl CProgram {
    /// The program made of `sources`, named after the first.
    pub fn from_sources(sources: Vec<PathBuf>) -> anyhow::Result<Self> {
        let first = sources.first().context("a C program needs at least one source file")?;
        for source in &sources {
            if source.extension().is_none_or(|e| e != "c") {
                bail!("{}: a C program's sources end in .c", source.display());
            }
            if !source.is_file() {
                bail!("{}: no such file", source.display());
            }
        }
        let name = first.file_stem().and_then(|s| s.to_str()).context("a source file's name must be UTF-8")?;
        Ok(Self { name: name.to_string(), sources })
    }
}

/// The directory of the repository's C programs.
pub fn repository_dir() -> PathBuf {
    workspace_root().join("a53-kernel/user/c-programs")
}

/// The C programs kept in the repository, one per `NAME.c`, sorted by name.
pub fn repository_programs() -> anyhow::Result<Vec<CProgram>> {
    let dir = repository_dir();
    let mut sources: Vec<PathBuf> = std::fs::read_dir(&dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "c"))
        .collect();
    sources.sort();
    sources.into_iter().map(|s| CProgram::from_sources(vec![s])).collect()
}

/// The programs this invocation adds (`cargo xtask run prog.c`), built with the others.
static ADDED: Mutex<Vec<CProgram>> = Mutex::new(Vec::new());

/// Builds `program` with the others from now on, in this invocation (unless it is one of the
/// repository's, which are built anyway).
pub fn add(program: CProgram) -> anyhow::Result<()> {
    let canonical = |p: &CProgram| p.sources.iter().map(|s| s.canonicalize().ok()).collect::<Vec<_>>();
    if repository_programs()?.iter().any(|r| r.name == program.name && canonical(r) == canonical(&program)) {
        return Ok(());
    }
    ADDED.lock().expect("not poisoned").push(program);
    Ok(())
}

/// The repository's C programs and this invocation's.
pub fn all() -> anyhow::Result<Vec<CProgram>> {
    let mut programs = repository_programs()?;
    programs.extend(ADDED.lock().expect("not poisoned").iter().cloned());
    Ok(programs)
}

/// Compiles the repository's C programs and this invocation's (each replaced only when its bytes
/// change), linked with the C library (`c_lib::build_c_lib`); returns each one's name and ELF
/// file, for the program store. A name that a program in `taken` has already is refused.
pub fn build(opts: Options, taken: &[String]) -> anyhow::Result<Vec<(String, PathBuf)>> {
    let programs = all()?;
    if programs.is_empty() {
        return Ok(Vec::new());
    }
    crate::setup::ensure_c_toolchain()?;
    let lib = crate::c_lib::build_c_lib(opts)?;
    let dir = images::a53_target_dir(opts).join(images::A53_TARGET).join("c-programs");
    let scratch = dir.join("link");
    std::fs::create_dir_all(&scratch)?;
    images::write_if_changed(&scratch.join("unimem-user-memory.ld"), memory_script().as_bytes())?;
    let mut shared = shared_inputs(&lib, &scratch)?;
    let shmem = build_shmem_archive(&scratch, &shared)?;
    shared.push(shmem.clone());
    let mut built: Vec<(String, PathBuf)> = Vec::new();
    for program in &programs {
        if taken.contains(&program.name) || built.iter().any(|(name, _)| *name == program.name) {
            bail!("C program `{}`: another program has that name", program.name);
        }
        let fresh = scratch.join(&program.name);
        let command = compile_command(program, &fresh, &[&shmem, &lib], &scratch);
        // The command line, kept beside the ELF: a changed flag, source list or library path
        // makes the ELF stale as a changed input does.
        let line = scratch.join(format!("{}.command", program.name));
        let said = format!("{command:?}");
        let inputs = shared.iter().chain(&program.sources);
        if std::fs::read_to_string(&line).ok().as_deref() != Some(said.as_str()) || !newer_than(&fresh, inputs) {
            run_compiler(command, program)?;
            std::fs::write(&line, &said)?;
        }
        let out = dir.join(&program.name);
        images::write_if_changed(&out, &std::fs::read(&fresh)?)?;
        built.push((program.name.clone(), out));
    }
    Ok(built)
}

/// The layout constants the linker script includes (`proto::syscall::layout`, one source).
fn memory_script() -> String {
    use proto::syscall::layout::{IMAGE_BASE, IMAGE_END};
    format!(
        "/* generated by xtask (c_programs) from proto::syscall::layout */\n\
         IMAGE_BASE = {IMAGE_BASE:#x};\nIMAGE_END = {IMAGE_END:#x};\n"
    )
}

/// The archiver of the C toolchain (binutils, installed with the compiler).
const C_ARCHIVER: &str = "aarch64-linux-gnu-ar";

/// The C runtime's OpenSHMEM layer (`crt/shmem.c`, the typed routines of `include/shmem.h`):
/// compiled once into an archive that every C program links (when it is older than an input),
/// so that a program takes only the routines it calls. Its path.
fn build_shmem_archive(scratch: &Path, inputs: &[PathBuf]) -> anyhow::Result<PathBuf> {
    let source = workspace_root().join("a53-kernel/user/crt/shmem.c");
    let object = scratch.join("shmem.o");
    let archive = scratch.join("libunimem-shmem.a");
    let mut compile = Command::new(C_COMPILER);
    compile.args(compile_flags()).arg("-c").arg(&source).arg("-o").arg(&object);
    let line = scratch.join("libunimem-shmem.command");
    let said = format!("{compile:?}");
    if std::fs::read_to_string(&line).ok().as_deref() == Some(said.as_str()) && newer_than(&archive, inputs) {
        return Ok(archive);
    }
    let status = compile.status().with_context(|| format!("cannot run {C_COMPILER}"))?;
    if !status.success() {
        bail!("compiling the C runtime's {} failed (the compiler's messages are above)", source.display());
    }
    let _ = std::fs::remove_file(&archive);
    let status = Command::new(C_ARCHIVER)
        .arg("rcs")
        .arg(&archive)
        .arg(&object)
        .status()
        .with_context(|| format!("cannot run {C_ARCHIVER}"))?;
    if !status.success() {
        bail!("{C_ARCHIVER} could not make {}", archive.display());
    }
    std::fs::write(&line, &said)?;
    Ok(archive)
}

/// What every C source of a program or of the runtime is compiled with.
fn compile_flags() -> Vec<String> {
    let mut args: Vec<String> = [
        &format!("--specs={PICOLIBC_SPECS}"),
        // A static executable at fixed addresses: the kernel loads PT_LOAD segments, nothing more.
        "-static",
        "-fno-pie",
        "-no-pie",
        // `_start` is the runtime's (crt/crt0.S), not picolibc's, which writes CPACR_EL1.
        "-nostartfiles",
        "-O2",
        "-g",
        "-Wall",
        // What this system offers that picolibc's headers only declare when told.
        "-D_POSIX_TIMERS=1",
        "-D_POSIX_MONOTONIC_CLOCK=200112L",
        // printf and scanf with doubles.
        "-DPICOLIBC_DOUBLE_PRINTF_SCANF",
        // One section per function and object, so that the link keeps only what is reached.
        "-ffunction-sections",
        "-fdata-sections",
    ]
    .map(String::from)
    .to_vec();
    args.push(format!("-I{}", crate::c_lib::include_dir().display()));
    args
}

/// What every C program is compiled and linked with.
fn compiler_args(scratch: &Path) -> Vec<String> {
    let user = workspace_root().join("a53-kernel/user");
    let mut args = compile_flags();
    // Only what is reached from `_start` (and the constructors): a program that does not call
    // OpenSHMEM holds none of it, the launch mark included (`shmem_launch`).
    args.push("-Wl,--gc-sections".to_string());
    // fflush(NULL), which picolibc's fflush does not take: the runtime's wrapper (crt/runtime.c).
    args.push("-Wl,--wrap=fflush".to_string());
    args.push(format!("-L{}", scratch.display()));
    args.push(format!("-L{}", user.join("link").display()));
    args.extend(["-Tunimem-c.ld", "-Wl,-z,max-page-size=4096"].map(String::from));
    args.push(user.join("crt/crt0.S").display().to_string());
    args.push(user.join("crt/runtime.c").display().to_string());
    // The socket calls and poll (`sys/socket.h`, `poll.h`) over the C library's descriptors.
    args.push(user.join("crt/posix.c").display().to_string());
    args
}

/// What every C program is built from besides its sources: the runtime, the headers (the
/// library's and the test programs' own), the linker scripts, the library and picolibc's specs.
fn shared_inputs(lib: &Path, scratch: &Path) -> anyhow::Result<Vec<PathBuf>> {
    fn files_below(dir: &Path, keep: &dyn Fn(&Path) -> bool, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            if path.is_dir() {
                files_below(&path, keep, out)?;
            } else if keep(&path) {
                out.push(path);
            }
        }
        Ok(())
    }
    let user = workspace_root().join("a53-kernel/user");
    let mut inputs = vec![
        lib.to_path_buf(),
        scratch.join("unimem-user-memory.ld"),
        user.join("link/unimem-c.ld"),
        PathBuf::from(PICOLIBC_SPECS),
    ];
    files_below(&user.join("crt"), &|_| true, &mut inputs)?;
    files_below(&crate::c_lib::include_dir(), &|_| true, &mut inputs)?;
    files_below(&repository_dir(), &|p| p.extension().is_some_and(|e| e == "h"), &mut inputs)?;
    Ok(inputs)
}

/// Whether `out` exists and was written after every one of `inputs` (an input that cannot be
/// read counts as newer).
fn newer_than<'a>(out: &Path, inputs: impl IntoIterator<Item = &'a PathBuf>) -> bool {
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let Some(built) = modified(out) else { return false };
    inputs.into_iter().all(|input| modified(input).is_some_and(|m| m <= built))
}

/// The compiler's command that compiles and links `program` into `out`, with the archives
/// `libs` (in that order).
fn compile_command(program: &CProgram, out: &Path, libs: &[&Path], scratch: &Path) -> Command {
    let mut cmd = Command::new(C_COMPILER);
    cmd.args(compiler_args(scratch));
    cmd.args(&program.sources);
    cmd.args(libs);
    cmd.arg("-o").arg(out);
    cmd
}

/// Runs the compiler's command for `program`; its messages go to the terminal as it printed
/// them.
fn run_compiler(mut cmd: Command, program: &CProgram) -> anyhow::Result<()> {
    let status = cmd.status().with_context(|| format!("cannot run {C_COMPILER}"))?;
    if !status.success() {
        bail!("compiling the C program `{}` failed (the compiler's messages are above)", program.name);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// The names `source` calls: every identifier followed by `(`, outside comments and string
    /// and character literals. A text check: a macro defined or used like a function counts too.
    fn called_names(source: &str) -> BTreeSet<String> {
        let mut code = String::with_capacity(source.len());
        let mut rest = source;
        while let Some(start) = rest.find(['/', '"', '\'']) {
            code.push_str(&rest[..start]);
            let from = &rest[start..];
            rest = if let Some(comment) = from.strip_prefix("/*") {
                comment.split_once("*/").map_or("", |(_, after)| after)
            } else if from.starts_with("//") {
                from.find('\n').map_or("", |end| &from[end..])
            } else if let Some(after) = from.strip_prefix('/') {
                code.push('/');
                after
            } else {
                // A literal: up to the next unescaped quote of its kind.
                let quote = from.as_bytes()[0];
                let mut escaped = false;
                let end = from.bytes().enumerate().skip(1).find(|&(_, b)| {
                    let closes = b == quote && !escaped;
                    escaped = b == b'\\' && !escaped;
                    closes
                });
                code.push(' ');
                end.map_or("", |(i, _)| &from[i + 1..])
            };
        }
        code.push_str(rest);
        let mut names = BTreeSet::new();
        let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
        for (at, _) in code.match_indices('(') {
            let before = code[..at].trim_end();
            let start = before.rfind(|c: char| !is_ident(c)).map_or(0, |i| i + 1);
            let name = &before[start..];
            if name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
                names.insert(name.to_string());
            }
        }
        names
    }

    #[test]
    fn a_program_is_named_after_its_first_source_and_takes_only_c_files() {
        let dir = repository_dir();
        let first = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()).find(|p| p.is_file()).unwrap();
        let program = CProgram::from_sources(vec![first.clone()]).unwrap();
        assert_eq!(program.name, first.file_stem().unwrap().to_str().unwrap());
        assert!(CProgram::from_sources(vec![]).is_err());
        assert!(CProgram::from_sources(vec![dir.join("missing.c")]).is_err());
        assert!(CProgram::from_sources(vec![workspace_root().join("README.md")]).is_err());
    }

    #[test]
    fn the_memory_script_has_the_layouts_addresses() {
        let script = memory_script();
        assert!(script.contains(&format!("IMAGE_BASE = {:#x};", proto::syscall::layout::IMAGE_BASE)));
        assert!(script.contains(&format!("IMAGE_END = {:#x};", proto::syscall::layout::IMAGE_END)));
    }

    /// A program is compiled again when it is missing or any input is newer, never otherwise.
    #[test]
    fn an_elf_is_up_to_date_only_when_written_after_every_input() {
        use std::time::{Duration, SystemTime};
        let dir = std::env::temp_dir().join(format!("c-programs-newer-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let at = |name: &str, seconds: u64| {
            let path = dir.join(name);
            let file = std::fs::File::create(&path).unwrap();
            file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(seconds)).unwrap();
            path
        };
        let (old, new, out) = (at("old.c", 1_000), at("new.h", 3_000), at("prog", 2_000));
        assert!(newer_than(&out, [&old]));
        assert!(!newer_than(&out, [&old, &new]), "an input written after the ELF");
        assert!(!newer_than(&out, [&dir.join("gone.c")]), "an input that cannot be read");
        assert!(!newer_than(&dir.join("missing"), [&old]), "no ELF yet");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn calls_are_found_outside_comments_and_literals() {
        let source = "/* READ8(x) */ int main(void) { // WRITE8(y)\n  printf(\"FAD64(z) \\\" CAS64(w)\");\n  \
                      char c = '('; SWAP64 (p); if (a / b) unim_dma_poll(); }";
        let names: Vec<String> = called_names(source).into_iter().collect();
        assert_eq!(names, ["SWAP64", "if", "main", "printf", "unim_dma_poll"]);
    }

    /// The C preprocessor's output (with its line markers) for the C source `input` (`-` reads
    /// `stdin` instead), with the flags of every C program; None without the C toolchain.
    fn preprocess(input: &str, stdin: Option<&str>) -> Option<String> {
        use std::io::Write;
        let mut cmd = Command::new(C_COMPILER);
        cmd.args(compile_flags()).args(["-E", "-x", "c", input]);
        cmd.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped());
        let mut child = cmd.spawn().ok()?;
        let mut pipe = child.stdin.take().unwrap();
        pipe.write_all(stdin.unwrap_or("").as_bytes()).unwrap();
        drop(pipe);
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{C_COMPILER} -E {input} failed");
        Some(String::from_utf8(out.stdout).unwrap())
    }

    /// Every function the C headers declare is reached by the repository's C programs, which
    /// the runner tests run on target (`testing/command_tests.rs`): the POSIX layer's (sockets,
    /// `poll`, `fcntl`) and the OpenSHMEM layer's (`shmem.h`, `crt/shmem.c`) are called by a
    /// program, and the library's by a program or by the runtime (`crt/*.c`, in every program)
    /// on the way from a POSIX or OpenSHMEM call. A function added to a header comes with a
    /// program that reaches it. The OpenSHMEM layer's typed routines are declared by X-macros
    /// over its type tables, and `c-shmem.c` calls each family through the same tables: the
    /// names are those the preprocessor gives (declarations from `shmem.h`, calls from the
    /// program's own lines, macros expanded; the C11 generic routines count for none of the
    /// typed routines they pick from).
    #[test]
    fn every_function_the_headers_declare_is_called_by_a_c_program() {
        let calls_in = |sources: &mut dyn Iterator<Item = PathBuf>| {
            let mut called = BTreeSet::new();
            for source in sources {
                called.extend(called_names(&std::fs::read_to_string(source).unwrap()));
            }
            called
        };
        let sources: Vec<PathBuf> = repository_programs().unwrap().into_iter().flat_map(|p| p.sources).collect();
        let mut programs = calls_in(&mut sources.iter().cloned());
        let crt = workspace_root().join("a53-kernel/user/crt");
        let runtime = calls_in(&mut ["runtime.c", "posix.c", "shmem.c"].into_iter().map(|f| crt.join(f)));
        let include = crate::c_lib::include_dir();
        let posix = crate::c_lib::runtime_functions(&include).unwrap();
        let library = crate::c_lib::declared_functions(&include).unwrap();
        let shmem = if preprocess("-", Some("")).is_some() {
            for source in &sources {
                let path = source.display().to_string();
                let expanded = preprocess(&path, None).unwrap();
                programs.extend(called_names(&crate::c_lib::lines_from(&expanded, &|file| file == path)));
            }
            let mut cpp = |text: &str| Ok(preprocess("-", Some(text)).unwrap());
            let shmem = crate::c_lib::shmem_functions(&include, &mut cpp).unwrap();
            assert!(shmem.contains("shmem_ctx_longdouble_iget") && shmem.len() > 1000, "shmem.h was read");
            shmem
        } else {
            eprintln!("skipped for shmem.h: {C_COMPILER} or picolibc is not installed");
            BTreeSet::new()
        };
        let missing: Vec<&String> = posix
            .iter()
            .chain(&shmem)
            .filter(|f| !programs.contains(*f))
            .chain(library.iter().filter(|f| !programs.contains(*f) && !runtime.contains(*f)))
            .collect();
        assert!(posix.contains("socket") && library.contains("READ64"), "the headers were read");
        assert!(library.contains("unimem_shmem_atomic") && !library.contains("shmem_int_put"), "the library's");
        assert!(
            missing.is_empty(),
            "declared in {}, reached by no program in {}: {missing:?}",
            include.display(),
            repository_dir().display()
        );
    }
}
