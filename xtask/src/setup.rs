//! Making sure the tools from Debian are there: bookworm-backports' `qemu-system-arm` (QEMU 10),
//! bookworm's C cross compiler and picolibc, and Open MPI with libclang for the MPI link,
//! installed with apt when we are root, otherwise the exact commands to run.

use anyhow::bail;
use std::path::PathBuf;
use std::process::Command;

const BACKPORTS_SOURCE: &str = "/etc/apt/sources.list.d/bookworm-backports.sources";
const BACKPORTS_ENTRY: &str = "Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n";

fn instructions() -> String {
    format!(
        "install QEMU 10 from Debian bookworm-backports:\n\
         \x20 sudo tee {BACKPORTS_SOURCE} <<'EOF'\n{BACKPORTS_ENTRY}EOF\n\
         \x20 sudo apt-get update\n\
         \x20 sudo apt-get install -y --no-install-recommends -t bookworm-backports qemu-system-arm"
    )
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn apt(args: &[&str]) -> anyhow::Result<()> {
    let status = Command::new("apt-get").args(args).env("DEBIAN_FRONTEND", "noninteractive").status()?;
    if !status.success() {
        bail!("apt-get {} failed", args.join(" "));
    }
    Ok(())
}

/// Returns QEMU's path, installing it first when possible.
pub fn ensure_qemu() -> anyhow::Result<PathBuf> {
    match qemu_virt::qemu::find() {
        Ok((path, version)) => {
            eprintln!("using {version}");
            return Ok(path);
        }
        Err(qemu_virt::qemu::QemuError::TooOld { found }) => eprintln!("{found} is too old"),
        Err(e) => eprintln!("{e}"),
    }
    let debian = std::fs::read_to_string("/etc/os-release").is_ok_and(|s| s.contains("bookworm"));
    if !(is_root() && debian) {
        bail!(
            "QEMU >= {}.{} is needed; {}",
            qemu_virt::qemu::MIN_VERSION.0,
            qemu_virt::qemu::MIN_VERSION.1,
            instructions()
        );
    }
    eprintln!("installing qemu-system-arm from bookworm-backports");
    if !std::path::Path::new(BACKPORTS_SOURCE).exists() {
        std::fs::write(BACKPORTS_SOURCE, BACKPORTS_ENTRY)?;
    }
    apt(&["update", "-qq"])?;
    apt(&["install", "-y", "-qq", "--no-install-recommends", "-t", "bookworm-backports", "qemu-system-arm"])?;
    let (path, version) = qemu_virt::qemu::find()?;
    eprintln!("installed {version}");
    Ok(path)
}

/// The C toolchain for EL0 programs: Debian bookworm's cross compiler and picolibc (a C library
/// for bare-metal targets, BSD-licensed), from the distribution's main archive.
pub const C_PACKAGES: [&str; 2] = ["gcc-aarch64-linux-gnu", "picolibc-aarch64-linux-gnu"];
pub const C_COMPILER: &str = "aarch64-linux-gnu-gcc";
/// picolibc's specs file: include paths, libraries and link options for the compiler driver.
pub const PICOLIBC_SPECS: &str = "/usr/lib/picolibc/aarch64-linux-gnu/picolibc.specs";

fn c_toolchain_present() -> bool {
    let compiler = Command::new(C_COMPILER).arg("--version").output().is_ok_and(|o| o.status.success());
    compiler && std::path::Path::new(PICOLIBC_SPECS).exists()
}

/// Makes sure the C toolchain is there, installing it with apt when we are root on bookworm,
/// otherwise saying exactly what to run.
pub fn ensure_c_toolchain() -> anyhow::Result<()> {
    if c_toolchain_present() {
        return Ok(());
    }
    let debian = std::fs::read_to_string("/etc/os-release").is_ok_and(|s| s.contains("bookworm"));
    if !(is_root() && debian) {
        bail!(
            "C programs need {C_COMPILER} and picolibc; install them with:\n\
             \x20 sudo apt-get update\n\
             \x20 sudo apt-get install -y --no-install-recommends {}",
            C_PACKAGES.join(" ")
        );
    }
    eprintln!("installing {}", C_PACKAGES.join(" "));
    apt(&["update", "-qq"])?;
    let mut install = vec!["install", "-y", "-qq", "--no-install-recommends"];
    install.extend(C_PACKAGES);
    apt(&install)?;
    if !c_toolchain_present() {
        bail!("{} installed, but {C_COMPILER} or {PICOLIBC_SPECS} is still missing", C_PACKAGES.join(" "));
    }
    Ok(())
}

/// The MPI link (`qemu-virt` feature `mpi`): Debian bookworm's Open MPI 4.1 (its launcher, its
/// library and `mpicc`, which the `mpi` crate asks how to build) and libclang (the crate's
/// bindings are generated with bindgen when it is built). Why Open MPI: `docs/architecture.md`,
/// "Between hosts: the MPI link".
pub const MPI_PACKAGES: [&str; 3] = ["openmpi-bin", "libopenmpi-dev", "libclang-dev"];

/// The launcher's version line when it is Open MPI's: the link is built and tested with it.
fn open_mpi_version() -> Option<String> {
    let out = Command::new("mpirun").arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = text.lines().next()?.trim().to_string();
    let compiler = Command::new("mpicc").arg("-show").output().is_ok_and(|o| o.status.success());
    (out.status.success() && line.contains("Open MPI") && compiler).then_some(line)
}

/// Whether bindgen will find libclang (`libclang.so`, which Debian's libclang-dev provides).
fn libclang_present() -> bool {
    let mut dirs: Vec<PathBuf> = std::env::var_os("LIBCLANG_PATH").map(PathBuf::from).into_iter().collect();
    for parent in ["/usr/lib", "/usr/lib64", "/usr/local/lib"] {
        dirs.push(parent.into());
        let Ok(entries) = std::fs::read_dir(parent) else { continue };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with("llvm-") {
                dirs.push(entry.path().join("lib"));
            } else if name.ends_with("-linux-gnu") {
                dirs.push(entry.path());
            }
        }
    }
    dirs.iter().any(|d| d.join("libclang.so").exists())
}

/// Makes sure Open MPI and libclang are there, installing them with apt when we are root on
/// bookworm, otherwise failing with what to run; returns Open MPI's version line.
pub fn ensure_mpi() -> anyhow::Result<String> {
    if let Some(version) = open_mpi_version().filter(|_| libclang_present()) {
        return Ok(version);
    }
    let debian = std::fs::read_to_string("/etc/os-release").is_ok_and(|s| s.contains("bookworm"));
    if !(is_root() && debian) {
        bail!(
            "the MPI link needs Open MPI (mpirun, mpicc) and libclang; run `cargo xtask setup` as root on Debian \
             bookworm, or install them with:\n\
             \x20 sudo apt-get update\n\
             \x20 sudo apt-get install -y --no-install-recommends {}\n\
             (with MPICH installed too, make Open MPI the default: `sudo update-alternatives --set mpirun \
             /usr/bin/mpirun.openmpi` and `--set mpi /usr/bin/mpicc.openmpi`)",
            MPI_PACKAGES.join(" ")
        );
    }
    eprintln!("installing {}", MPI_PACKAGES.join(" "));
    apt(&["update", "-qq"])?;
    let mut install = vec!["install", "-y", "-qq", "--no-install-recommends"];
    install.extend(MPI_PACKAGES);
    apt(&install)?;
    match open_mpi_version() {
        Some(version) if libclang_present() => Ok(version),
        Some(_) => bail!("{} installed, but libclang.so is still missing", MPI_PACKAGES.join(" ")),
        None => bail!(
            "{} installed, but `mpirun --version` does not say Open MPI or `mpicc -show` fails: is another MPI \
             the default? `sudo update-alternatives --set mpirun /usr/bin/mpirun.openmpi`",
            MPI_PACKAGES.join(" ")
        ),
    }
}
