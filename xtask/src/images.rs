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

/// Builds the user programs and gathers their executables in one directory, which the kernel
/// build embeds (`UNIMEM_USER_DIR`, see `a53-kernel/build.rs`).
pub fn build_user(opts: Options) -> anyhow::Result<PathBuf> {
    let mut cmd = user_cargo("build", opts)?;
    cmd.args(["--message-format", "json-render-diagnostics"]);
    // The messages come on stdout, as JSON; the rendered diagnostics go to the terminal.
    cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::inherit());
    let out = cmd.output().context("cannot run cargo for the user programs")?;
    if !out.status.success() {
        bail!("building the user programs failed");
    }
    let dir = a53_target_dir(opts).join(A53_TARGET).join("user-images");
    std::fs::create_dir_all(&dir)?;
    // Files are replaced only when their bytes change, so that the kernel (whose build script
    // watches the directory) is not linked again for nothing.
    let mut wanted = std::collections::HashSet::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        if let Some(exe) = msg["executable"].as_str() {
            let exe = Path::new(exe);
            let name = exe.file_name().context("executable without a name")?;
            let (bytes, copy) = (std::fs::read(exe)?, dir.join(name));
            if std::fs::read(&copy).ok().as_ref() != Some(&bytes) {
                std::fs::write(&copy, &bytes)?;
            }
            wanted.insert(name.to_os_string());
        }
    }
    let rust: Vec<String> = wanted.iter().map(|n| n.to_string_lossy().into_owned()).collect();
    for name in crate::c_programs::build_into(&dir, opts, &rust)? {
        wanted.insert(name.into());
    }
    for entry in std::fs::read_dir(&dir)?.flatten() {
        if !wanted.contains(&entry.file_name()) {
            std::fs::remove_file(entry.path())?;
        }
    }
    Ok(dir)
}

pub fn build_kernel(opts: Options) -> anyhow::Result<()> {
    let user = build_user(opts)?;
    let mut cmd = kernel_cargo("build", opts)?;
    cmd.env("UNIMEM_USER_DIR", &user);
    run(cmd, "the A53 kernel")
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
    let mut host = cargo();
    host.args(["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"]);
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
    println!("lint clean: rustfmt, clippy for host, {A53_TARGET} (kernel, user programs, C library) and {R5_TARGET}");
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
    let a53 = a53_target_dir(opts).join(A53_TARGET).join(opts.profile());
    Images {
        kernel: a53.join("a53-kernel"),
        ktest: a53.join("a53-ktest"),
        r5: r5_target_dir(opts).join(R5_TARGET).join(opts.profile()).join("r5-firmware"),
    }
}

pub fn build_all(opts: Options) -> anyhow::Result<Images> {
    build_kernel(opts)?;
    build_r5(opts)?;
    let images = paths(opts);
    for image in [&images.kernel, &images.ktest, &images.r5] {
        println!("built {}", image.strip_prefix(workspace_root()).unwrap_or(image).display());
    }
    Ok(images)
}
