//! The Rust toolchain pieces the build needs, checked and installed explicitly.
//!
//! Neither bare-metal target can count on a prebuilt standard library: stable rustup serves none
//! for `armv7r-none-eabihf`, and may mark the one for `aarch64-unknown-none` unavailable. Both
//! targets therefore build `core` and `alloc` from the `rust-src` component. Nothing here relies
//! on rustup installing what `rust-toolchain.toml` lists (`RUSTUP_AUTO_INSTALL=0` turns that
//! off): each piece is looked for, installed with `rustup component add` when it is missing, and
//! when that is impossible the error says what to run.

use anyhow::{Context, bail};
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// A component of the toolchain that some xtask command needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Component {
    /// The standard library's sources: `core`/`alloc` for both targets are built from them.
    RustSrc,
    Clippy,
    Rustfmt,
}

impl Component {
    /// The name rustup knows it by.
    pub fn rustup_name(self) -> &'static str {
        match self {
            Component::RustSrc => "rust-src",
            Component::Clippy => "clippy",
            Component::Rustfmt => "rustfmt",
        }
    }

    fn is_present(self) -> bool {
        match self {
            Component::RustSrc => sysroot().is_some_and(|s| s.join("lib/rustlib/src/rust/library/core").is_dir()),
            Component::Clippy => succeeds(cargo().args(["clippy", "--version"])),
            Component::Rustfmt => succeeds(cargo().args(["fmt", "--version"])),
        }
    }
}

/// What the image builds need.
pub const BUILD: &[Component] = &[Component::RustSrc];
/// What `cargo xtask lint` needs.
pub const LINT: &[Component] = &[Component::RustSrc, Component::Clippy, Component::Rustfmt];

fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(crate::images::workspace_root());
    cmd
}

fn succeeds(cmd: &mut Command) -> bool {
    cmd.stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

/// The active toolchain's sysroot (the one `rust-toolchain.toml` selects in the workspace).
fn sysroot() -> Option<PathBuf> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out =
        Command::new(rustc).args(["--print", "sysroot"]).current_dir(crate::images::workspace_root()).output().ok()?;
    out.status.success().then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// Makes sure every one of `components` is installed: installs the missing ones with rustup, or
/// fails saying what to run.
pub fn ensure(components: &[Component]) -> anyhow::Result<()> {
    let missing: Vec<Component> = components.iter().copied().filter(|c| !c.is_present()).collect();
    if missing.is_empty() {
        return Ok(());
    }
    let names: Vec<&str> = missing.iter().map(|c| c.rustup_name()).collect();
    let command = format!("rustup component add {}", names.join(" "));
    eprintln!("installing the toolchain components this build needs: {command}");
    let status = Command::new("rustup")
        .args(["component", "add"])
        .args(&names)
        .current_dir(crate::images::workspace_root())
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(_) => bail!("`{command}` failed; run it yourself (in this directory) and try again"),
        Err(e) => bail!(
            "cannot run rustup ({e}); the build needs the toolchain components {}: with rustup, `{command}`",
            names.join(", ")
        ),
    }
    let still: Vec<&str> = missing.iter().filter(|c| !c.is_present()).map(|c| c.rustup_name()).collect();
    if !still.is_empty() {
        bail!("rustup installed {} but they are still not usable; try `{command}` in this directory", still.join(", "));
    }
    Ok(())
}

/// `cargo xtask setup`: every toolchain piece of every command, then QEMU, the C toolchain and
/// Open MPI.
pub fn setup() -> anyhow::Result<()> {
    ensure(LINT).context("the Rust toolchain")?;
    eprintln!("toolchain ready: {}", LINT.iter().map(|c| c.rustup_name()).collect::<Vec<_>>().join(", "));
    crate::setup::ensure_qemu()?;
    crate::setup::ensure_c_toolchain()?;
    let mpi = crate::setup::ensure_mpi()?;
    eprintln!("using {mpi}");
    Ok(())
}
