//! Building the bare-metal images.
//!
//! Neither target uses a prebuilt standard library (stable rustup has none for the R5 and may
//! have none for the A53): `core` and `alloc` are built from `rust-src` (`-Zbuild-std`, allowed
//! on stable with `RUSTC_BOOTSTRAP=1`). Each target builds in a directory of its own, so that the
//! flag does not invalidate the host build and the two targets do not rebuild each other.

use crate::toolchain;
use anyhow::{Context, bail};
use std::path::{Path, PathBuf};
use std::process::Command;

pub const A53_TARGET: &str = "aarch64-unknown-none";
pub const R5_TARGET: &str = "armv7r-none-eabihf";

#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    pub release: bool,
    pub qfdb: bool,
}

impl Options {
    pub fn profile(self) -> &'static str {
        if self.release { "fw-release" } else { "fw-dev" }
    }

    /// Each board builds into a directory of its own, so that neither overwrites the other.
    fn target_root(self) -> PathBuf {
        let target = workspace_root().join("target");
        if self.qfdb { target.join("qfdb") } else { target }
    }
}

/// Paths of the built images.
#[derive(Clone, Debug)]
pub struct Images {
    pub kernel: PathBuf,
    pub ktest: PathBuf,
    pub r5: PathBuf,
    /// The program store (`docs/hw/program-store.md`), which every node loads beside its kernel.
    pub store: PathBuf,
}

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(workspace_root());
    cmd
}

fn run(mut cmd: Command, what: &str) -> anyhow::Result<()> {
    let status = cmd.status().with_context(|| format!("cannot run cargo for {what}"))?;
    if !status.success() {
        bail!("building {what} failed");
    }
    Ok(())
}

/// The features of `package`'s image build.
fn features(package: &str, opts: Options) -> String {
    let image = format!("{package}/image");
    if opts.qfdb { format!("{image},{package}/qfdb") } else { image }
}

/// `cargo <verb> --target <target>` with `core` and `alloc` built from source, in `target_dir`.
/// Makes sure `rust-src` is there first.
pub(crate) fn bare_metal_cargo(verb: &str, target: &str, target_dir: PathBuf) -> anyhow::Result<Command> {
    toolchain::ensure(toolchain::BUILD)?;
    let mut cmd = cargo();
    cmd.env("RUSTC_BOOTSTRAP", "1");
    cmd.args([verb, "--target", target]);
    cmd.args(["-Zbuild-std=core,alloc", "-Zbuild-std-features=compiler-builtins-mem"]);
    cmd.arg("--target-dir").arg(target_dir);
    Ok(cmd)
}

/// `cargo <verb>` (build, clippy) of the A53 images: the kernel (`a53-kernel`) and its test
/// image (`a53-ktest`, a crate of its own).
pub fn kernel_cargo(verb: &str, opts: Options) -> anyhow::Result<Command> {
    let mut cmd = bare_metal_cargo(verb, A53_TARGET, a53_target_dir(opts))?;
    cmd.args(["--package", "a53-kernel", "--package", "a53-ktest", "--bins", "--profile", opts.profile()]);
    cmd.args(["--features", &[features("a53-kernel", opts), features("a53-ktest", opts)].join(",")]);
    Ok(cmd)
}

/// `cargo <verb>` (build, clippy) of the user programs.
fn user_cargo(verb: &str, opts: Options) -> anyhow::Result<Command> {
    let mut cmd = bare_metal_cargo(verb, A53_TARGET, a53_target_dir(opts))?;
    cmd.args(["--package", "unimem-user", "--bins", "--features", "image", "--profile", "user"]);
    Ok(cmd)
}

/// `cargo <verb>` (build, clippy) of the R5 firmware.
pub fn r5_cargo(verb: &str, opts: Options) -> anyhow::Result<Command> {
    let mut cmd = bare_metal_cargo(verb, R5_TARGET, r5_target_dir(opts))?;
    cmd.args(["--package", "r5-firmware", "--profile", opts.profile()]);
    cmd.args(["--features", &features("r5-firmware", opts)]);
    Ok(cmd)
}

/// The names of the Rust programs (`a53-kernel/user/src/bin/NAME.rs`), sorted.
pub fn rust_programs() -> anyhow::Result<Vec<String>> {
    let dir = workspace_root().join("a53-kernel/user/src/bin");
    let entries = std::fs::read_dir(&dir).with_context(|| format!("cannot list {}", dir.display()))?;
    let mut names: Vec<String> =
        entries.flatten().filter_map(|e| e.file_name().to_str()?.strip_suffix(".rs").map(String::from)).collect();
    names.sort();
    Ok(names)
}

/// The names of every user program: the Rust ones, the repository's C programs
/// (`a53-kernel/user/c-programs/NAME.c`) and those this invocation adds, sorted.
pub fn programs() -> anyhow::Result<Vec<String>> {
    let mut names = rust_programs()?;
    names.extend(crate::c_programs::all()?.into_iter().map(|p| p.name));
    names.sort();
    Ok(names)
}

/// Builds the user programs and gathers their executables in the user-images directory, from
/// which [`build_store`] writes the program store. The directory is cargo's: a file that cargo
/// no longer builds (a deleted program) is removed from it, so programs from elsewhere (C) go to
/// [`build_store`] as its `extra`, not into the directory.
pub fn build_user(opts: Options) -> anyhow::Result<PathBuf> {
    let mut cmd = user_cargo("build", opts)?;
    cmd.args(["--message-format", "json-render-diagnostics"]);
    // The messages come on stdout, as JSON; the rendered diagnostics go to the terminal.
    cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::inherit());
    let out = cmd.output().context("cannot run cargo for the user programs")?;
    if !out.status.success() {
        bail!("building the user programs failed");
    }
    let dir = user_dir(opts);
    std::fs::create_dir_all(&dir)?;
    // Files are replaced only when their bytes change, so that an unchanged program keeps its
    // modification time.
    let mut wanted = std::collections::HashSet::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        if let Some(exe) = msg["executable"].as_str() {
            let exe = Path::new(exe);
            let name = exe.file_name().context("executable without a name")?;
            write_if_changed(&dir.join(name), &std::fs::read(exe)?)?;
            wanted.insert(name.to_os_string());
        }
    }
    for entry in std::fs::read_dir(&dir)?.flatten() {
        if !wanted.contains(&entry.file_name()) {
            std::fs::remove_file(entry.path())?;
        }
    }
    Ok(dir)
}

/// Where [`build_user`] gathers the user programs.
fn user_dir(opts: Options) -> PathBuf {
    a53_target_dir(opts).join(A53_TARGET).join("user-images")
}

/// Writes the program store (`docs/hw/program-store.md`) of every program in the user-images
/// directory and every `extra` one (name, ELF file), sorted by name, and returns its path. The
/// file is rewritten only when its bytes change. Fails on a file that is not an ELF, a name the
/// store cannot hold or that two programs share, and a store larger than its DDR region.
pub fn build_store(opts: Options, extra: &[(String, PathBuf)]) -> anyhow::Result<PathBuf> {
    let dir = user_dir(opts);
    let mut programs = Vec::new();
    for entry in std::fs::read_dir(&dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).context("a program without a UTF-8 name")?;
        programs.push((name.to_string(), path.clone()));
    }
    programs.extend(extra.iter().cloned());
    let store = store_bytes(programs)?;
    let path = paths(opts).store;
    write_if_changed(&path, &store)?;
    Ok(path)
}

/// Writes `bytes` to `path` unless it holds them already, so that its modification time (which
/// later builds compare) stays.
pub(crate) fn write_if_changed(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    if std::fs::read(path).ok().as_deref() != Some(bytes) {
        std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// The program store of `programs` (name, ELF file), sorted by name.
fn store_bytes(mut programs: Vec<(String, PathBuf)>) -> anyhow::Result<Vec<u8>> {
    programs.sort();
    let mut files = Vec::new();
    for (name, path) in &programs {
        let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        if !bytes.starts_with(b"\x7fELF") {
            bail!("{} is not an ELF file: it cannot be program `{name}`", path.display());
        }
        files.push((name.as_str(), bytes));
    }
    let files: Vec<(&str, &[u8])> = files.iter().map(|(name, bytes)| (*name, bytes.as_slice())).collect();
    let mut store = vec![0u8; proto::store::size(&files)];
    proto::store::write(&files, &mut store).map_err(|e| anyhow::anyhow!("cannot write the program store: {e:?}"))?;
    let region = board::layout::PROGRAM_STORE_SIZE;
    if store.len() as u64 > region {
        bail!("the program store takes {} bytes, more than its region's {region}", store.len());
    }
    Ok(store)
}

/// The programs of the program store `bytes` (name, ELF length), as the kernel's reader
/// (`proto::store::Store`) finds them.
pub fn store_programs(bytes: &[u8]) -> anyhow::Result<Vec<(String, usize)>> {
    // The reader wants the store at an 8-byte boundary, where its DDR region puts it.
    let align = proto::store::ALIGN;
    let mut buf = vec![0u8; bytes.len() + align];
    let start = buf.as_ptr().align_offset(align);
    let copy = &mut buf[start..start + bytes.len()];
    copy.copy_from_slice(bytes);
    let store = proto::store::Store::parse(copy).map_err(|e| anyhow::anyhow!("not a program store: {e:?}"))?;
    Ok(store.programs().map(|(name, elf)| (name.to_string(), elf.len())).collect())
}

/// The ELF of program `name` in the program store `bytes`, if the store holds it.
pub fn store_program(bytes: &[u8], name: &str) -> anyhow::Result<Option<Vec<u8>>> {
    let align = proto::store::ALIGN;
    let mut buf = vec![0u8; bytes.len() + align];
    let start = buf.as_ptr().align_offset(align);
    let copy = &mut buf[start..start + bytes.len()];
    copy.copy_from_slice(bytes);
    let store = proto::store::Store::parse(copy).map_err(|e| anyhow::anyhow!("not a program store: {e:?}"))?;
    Ok(store.find(name).map(<[u8]>::to_vec))
}

/// Builds the kernel and its test image. The user programs are not among their inputs: they
/// travel in the program store, so a program's change builds no kernel.
pub fn build_kernel(opts: Options) -> anyhow::Result<()> {
    run(kernel_cargo("build", opts)?, "the A53 kernel")
}

/// Checks that no user program is an input of the kernel images' builds, as cargo recorded
/// those inputs when it last built them (`a53-kernel.d`, `a53-ktest.d`: the sources of every
/// local crate they link and every file their build scripts watch): neither a program's source
/// (`a53-kernel/user/src/bin/`), the user-images directory nor the program store. Then a
/// program's change builds no kernel. Returns how many inputs were checked.
pub fn check_kernel_inputs(opts: Options) -> anyhow::Result<usize> {
    let images = paths(opts);
    let programs = [workspace_root().join("a53-kernel/user/src/bin"), user_dir(opts), images.store.clone()];
    let mut checked = 0;
    for image in [&images.kernel, &images.ktest] {
        let record = image.with_extension("d");
        let text = std::fs::read_to_string(&record).with_context(|| format!("cannot read {}", record.display()))?;
        let inputs = dep_info_inputs(&text);
        // A record that does not name the kernel's own sources is not the record of its build.
        anyhow::ensure!(
            inputs.contains(&workspace_root().join("a53-kernel/src/lib.rs")),
            "{} does not list the kernel's sources",
            record.display()
        );
        if let Some(input) = inputs.iter().find(|i| programs.iter().any(|p| i.starts_with(p))) {
            bail!("{} is an input of {}: changing a program would build it again", input.display(), image.display());
        }
        checked += inputs.len();
    }
    Ok(checked)
}

/// The inputs a dep-info file (`target: input input ...`, spaces in paths escaped as `\ `)
/// lists.
fn dep_info_inputs(text: &str) -> Vec<PathBuf> {
    let mut inputs = Vec::new();
    for line in text.lines() {
        let Some((_, deps)) = line.split_once(": ") else { continue };
        let mut word = String::new();
        let mut chars = deps.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => word.extend(chars.next()),
                c if c.is_whitespace() => {
                    inputs.extend((!word.is_empty()).then(|| PathBuf::from(std::mem::take(&mut word))))
                }
                c => word.push(c),
            }
        }
        inputs.extend((!word.is_empty()).then(|| PathBuf::from(word)));
    }
    inputs
}

pub fn build_r5(opts: Options) -> anyhow::Result<()> {
    run(r5_cargo("build", opts)?, "the R5 firmware")
}

/// rustfmt check, then clippy with warnings denied on the host and both targets.
pub fn lint() -> anyhow::Result<()> {
    toolchain::ensure(toolchain::LINT)?;
    let mut fmt = cargo();
    fmt.args(["fmt", "--all", "--check"]);
    run(fmt, "rustfmt --check")?;
    // The MPI link (qemu-virt's feature `mpi`) and the ranks' command (xtask's) need Open MPI.
    crate::setup::ensure_mpi()?;
    let mut host = cargo();
    host.args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--features",
        "qemu-virt/mpi,xtask/mpi",
        "--",
        "-D",
        "warnings",
    ]);
    run(host, "clippy (host)")?;
    let opts = Options::default();
    let mut kernel = kernel_cargo("clippy", opts)?;
    kernel.args(["--", "-D", "warnings"]);
    run(kernel, "clippy (A53)")?;
    let mut r5 = r5_cargo("clippy", opts)?;
    r5.args(["--", "-D", "warnings"]);
    run(r5, "clippy (R5)")?;
    let mut user = user_cargo("clippy", opts)?;
    user.args(["--", "-D", "warnings"]);
    run(user, "clippy (user programs)")?;
    let mut c_lib = crate::c_lib::c_lib_cargo("clippy", opts)?;
    c_lib.args(["--", "-D", "warnings"]);
    run(c_lib, "clippy (C library)")?;
    println!(
        "lint clean: rustfmt, clippy for host (with the MPI link), {A53_TARGET} (kernel, user programs, C library) and {R5_TARGET}"
    );
    Ok(())
}

/// The bare-metal builds use `RUSTC_BOOTSTRAP`, which would invalidate a shared build directory.
pub(crate) fn a53_target_dir(opts: Options) -> PathBuf {
    opts.target_root().join("a53")
}

fn r5_target_dir(opts: Options) -> PathBuf {
    opts.target_root().join("r5")
}

pub fn paths(opts: Options) -> Images {
    let a53 = a53_target_dir(opts).join(A53_TARGET);
    Images {
        kernel: a53.join(opts.profile()).join("a53-kernel"),
        ktest: a53.join(opts.profile()).join("a53-ktest"),
        r5: r5_target_dir(opts).join(R5_TARGET).join(opts.profile()).join("r5-firmware"),
        // The programs have a profile of their own (`user`), whatever the kernel's.
        store: a53.join("program-store.bin"),
    }
}

/// Builds the user programs and their store, the kernel images and the R5 firmware.
/// Builds every user program, the Rust ones and the C ones, and writes the program store; its
/// path.
pub fn build_programs(opts: Options) -> anyhow::Result<PathBuf> {
    build_user(opts)?;
    let c = crate::c_programs::build(opts, &rust_programs()?)?;
    build_store(opts, &c)
}

pub fn build_all(opts: Options) -> anyhow::Result<Images> {
    build_programs(opts)?;
    build_kernel(opts)?;
    build_r5(opts)?;
    let images = paths(opts);
    for image in [&images.kernel, &images.ktest, &images.r5, &images.store] {
        println!("built {}", image.strip_prefix(workspace_root()).unwrap_or(image).display());
    }
    Ok(images)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dep_info_lists_every_input_with_escaped_spaces() {
        let text = "/t/a53-kernel: /w/a53-kernel/build.rs /w/my\\ dir/x.rs /w/a53-kernel/src/lib.rs\n";
        let inputs = dep_info_inputs(text);
        assert_eq!(
            inputs,
            [PathBuf::from("/w/a53-kernel/build.rs"), "/w/my dir/x.rs".into(), "/w/a53-kernel/src/lib.rs".into()]
        );
        assert!(dep_info_inputs("").is_empty());
    }

    /// The store holds the programs given, sorted by name, and the kernel's reader finds them;
    /// a file that is not an ELF, or a name two programs share, makes no store.
    #[test]
    fn the_store_is_written_from_elf_files_and_read_back_by_the_kernels_reader() {
        let dir = std::env::temp_dir().join(format!("unimem-store-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = |name: &str, bytes: &[u8]| {
            std::fs::write(dir.join(name), bytes).unwrap();
            (name.to_string(), dir.join(name))
        };
        let (hello, c_prog, text) =
            (file("hello", b"\x7fELF 1"), file("c-prog", b"\x7fELF 22"), file("notes", b"text"));
        let bytes = store_bytes(vec![hello.clone(), c_prog]).unwrap();
        assert_eq!(store_programs(&bytes).unwrap(), [("c-prog".to_string(), 7), ("hello".to_string(), 6)]);
        assert!(store_programs(&bytes[..bytes.len() - 1]).is_err(), "truncated");
        let not_elf = store_bytes(vec![text]).unwrap_err();
        assert!(format!("{not_elf:#}").contains("is not an ELF file"), "{not_elf:#}");
        let twice = store_bytes(vec![hello.clone(), hello]).unwrap_err();
        assert!(format!("{twice:#}").contains("DuplicateName"), "{twice:#}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
