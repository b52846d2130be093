//! Finding QEMU and building a node's command line (`docs/architecture.md`, "One QEMU process per
//! node").

use std::path::{Path, PathBuf};
use std::process::Command;

pub const QEMU_BINARY: &str = "qemu-system-aarch64";
/// The QEMU every fact of the emulated platform was checked on (`docs/architecture.md`):
/// Debian bookworm-backports' 10.0. Bookworm's own 7.2 is not used.
pub const MIN_VERSION: (u32, u32) = (10, 0);

#[derive(Debug, thiserror::Error)]
pub enum QemuError {
    #[error("{QEMU_BINARY} was not found on PATH")]
    NotFound,
    #[error("cannot run {QEMU_BINARY} --version: {0}")]
    Version(String),
    #[error("QEMU {found} is too old: at least {}.{} is needed", MIN_VERSION.0, MIN_VERSION.1)]
    TooOld { found: String },
}

/// Parses "QEMU emulator version 10.0.2 (Debian ...)" into (10, 0).
pub fn parse_version(output: &str) -> Option<(u32, u32)> {
    let rest = output.split("version ").nth(1)?;
    let mut parts = rest.split(|c: char| !c.is_ascii_digit());
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// Finds QEMU and checks its version; returns the binary's path and version text.
pub fn find() -> Result<(PathBuf, String), QemuError> {
    let path = std::env::var_os("PATH")
        .and_then(|paths| std::env::split_paths(&paths).map(|d| d.join(QEMU_BINARY)).find(|p| p.is_file()))
        .ok_or(QemuError::NotFound)?;
    let out = Command::new(&path).arg("--version").output().map_err(|e| QemuError::Version(e.to_string()))?;
    let text = String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or_default().to_string();
    let version = parse_version(&text).ok_or_else(|| QemuError::Version(text.clone()))?;
    if version < MIN_VERSION {
        return Err(QemuError::TooOld { found: text });
    }
    Ok((path, text))
}

/// What a node's QEMU needs to know about its files and sockets.
pub struct CommandParts<'a> {
    pub memory_file: &'a Path,
    pub uart0_socket: &'a Path,
    pub uart1_socket: &'a Path,
    pub qmp_socket: &'a Path,
    /// The semihosting console's socket, on which the R5 sleeps and is woken
    /// (`docs/hw/ipi.md`, "On QEMU"); nodes without an R5 have none.
    pub r5_console_socket: Option<&'a Path>,
    pub boot_args_file: Option<&'a Path>,
    pub boot_args_addr: u64,
    /// Where the node's program store goes (`NodeSpec::program_store`).
    pub program_store_addr: u64,
}

/// Builds the arguments for one node (without the binary).
pub fn node_args(spec: &crate::NodeSpec, parts: &CommandParts<'_>) -> Vec<String> {
    let machine = if spec.virtualization {
        "xlnx-zcu102,memory-backend=ram,virtualization=on"
    } else {
        "xlnx-zcu102,memory-backend=ram"
    };
    let mut args: Vec<String> = vec![
        // Named vCPU threads ("CPU 4/TCG"), so the platform can find the R5's (see node.rs).
        "-name".into(),
        format!("node{},debug-threads=on", spec.index),
        "-M".into(),
        machine.into(),
        "-smp".into(),
        spec.cpus().to_string(),
        "-m".into(),
        "2G".into(),
        "-object".into(),
        format!("memory-backend-file,id=ram,size=2G,mem-path={},share=on", parts.memory_file.display()),
        "-display".into(),
        "none".into(),
        "-audio".into(),
        "none".into(),
        "-chardev".into(),
        if spec.console_pty {
            "pty,id=uart0".into()
        } else {
            format!("socket,id=uart0,path={}", parts.uart0_socket.display())
        },
        "-serial".into(),
        "chardev:uart0".into(),
        "-chardev".into(),
        format!("socket,id=uart1,path={}", parts.uart1_socket.display()),
        "-serial".into(),
        "chardev:uart1".into(),
        "-chardev".into(),
        format!("socket,id=qmp,path={}", parts.qmp_socket.display()),
        "-mon".into(),
        "chardev=qmp,mode=control".into(),
        "-S".into(),
    ];
    args.push("-semihosting-config".into());
    match parts.r5_console_socket {
        Some(path) => {
            args.push("enable=on,target=native,chardev=r5wake".into());
            args.push("-chardev".into());
            args.push(format!("socket,id=r5wake,path={}", path.display()));
        }
        None => args.push("enable=on,target=native".into()),
    }
    if let Some(r5) = &spec.r5 {
        args.push("-device".into());
        args.push(format!("loader,file={}", r5.display()));
    }
    args.push("-device".into());
    args.push(format!("loader,file={},cpu-num=0", spec.kernel.display()));
    if let Some(file) = parts.boot_args_file {
        args.push("-device".into());
        args.push(format!("loader,file={},addr={:#x},force-raw=on", file.display(), parts.boot_args_addr));
    }
    if let Some(store) = &spec.program_store {
        args.push("-device".into());
        args.push(format!("loader,file={},addr={:#x},force-raw=on", store.display(), parts.program_store_addr));
    }
    if let Some(port) = spec.gdb_port {
        args.push("-gdb".into());
        args.push(format!("tcp::{port}"));
    }
    args.extend(spec.extra_args.iter().cloned());
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_qemu_version_lines() {
        assert_eq!(parse_version("QEMU emulator version 10.0.2 (Debian 1:10.0.2+ds-2)"), Some((10, 0)));
        assert_eq!(parse_version("QEMU emulator version 7.2.15"), Some((7, 2)));
        assert_eq!(parse_version("something else"), None);
        assert!((7, 2) < MIN_VERSION && (10, 0) == MIN_VERSION);
    }

    /// The store is loaded raw at the board's region, as `docs/hw/program-store.md` shows it.
    #[test]
    fn a_node_loads_its_program_store_at_the_boards_region() {
        use board::Board as _;
        let path = |p: &str| std::path::PathBuf::from(p);
        let (memory, socket) = (path("/dev/shm/ram"), path("/tmp/s"));
        let parts = CommandParts {
            memory_file: &memory,
            uart0_socket: &socket,
            uart1_socket: &socket,
            qmp_socket: &socket,
            r5_console_socket: None,
            boot_args_file: None,
            boot_args_addr: 0,
            program_store_addr: board::zcu102_qemu::Zcu102Qemu::DDR_LAYOUT.program_store,
        };
        let mut spec = crate::NodeSpec { kernel: path("/k"), ..Default::default() };
        let loaders = |spec: &crate::NodeSpec| {
            node_args(spec, &parts).into_iter().filter(|a| a.contains("program-store")).collect::<Vec<_>>()
        };
        assert!(loaders(&spec).is_empty(), "no store given, none loaded");
        spec.program_store = Some(path("/t/program-store.bin"));
        let expected =
            format!("loader,file=/t/program-store.bin,addr={:#x},force-raw=on", board::layout::PROGRAM_STORE_BASE);
        assert_eq!(loaders(&spec), [expected]);
    }
}
