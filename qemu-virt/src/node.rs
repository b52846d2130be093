//! One emulated node: a QEMU process, its shared DDR, its decoded console and R5 trace.
//!
//! Start-up (`docs/architecture.md`, "One QEMU process per node"): we listen on the node's
//! sockets, QEMU connects as the client (so no early byte is lost), starts paused (`-S`), and runs
//! once [`Node::resume`] sends `cont` over QMP. Every console line and R5 trace line becomes an
//! [`Event`]; the node's `Exited` event comes after all of its lines.

use crate::console::{ConsoleError, Decoder, Line};
use crate::qemu::{self, CommandParts};
use crate::qmp::{Qmp, QmpError};
use crate::r5_wake::R5Wake;
use crate::shm::Ddr;
use crate::signal::Signal;
use board::Board as _;
use proto::trace_ring::{TraceReader, TraceRing};
use std::io::Read;
use std::os::unix::net::{UnixListener, UnixStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

type QemuBoard = board::zcu102_qemu::Zcu102Qemu;

/// How long QEMU may take to connect its sockets.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);
/// How often the R5 trace ring is drained while the R5 runs (and after each of its sleeps).
const TRACE_POLL: Duration = Duration::from_millis(10);

#[derive(Clone, Debug, Default)]
pub struct NodeSpec {
    pub index: usize,
    pub kernel: PathBuf,
    /// The R5 image; without one the node has only the four A53s.
    pub r5: Option<PathBuf>,
    pub boot_args: Option<String>,
    /// The program store (`docs/hw/program-store.md`), loaded raw at the board's
    /// `DDR_LAYOUT.program_store`; without one the node has no programs to run.
    pub program_store: Option<PathBuf>,
    /// Enter the kernel at EL2 (`virtualization=on`), as under ATF on hardware.
    pub virtualization: bool,
    pub gdb_port: Option<u16>,
    /// Put the console on a pseudo-terminal (as a board's serial port) instead of decoding it
    /// here; [`Node::console_pty`] names it.
    pub console_pty: bool,
    pub extra_args: Vec<String>,
}

impl NodeSpec {
    /// 4 A53 + 2 R5F, or the A53s alone when there is no R5 image.
    pub fn cpus(&self) -> u32 {
        if self.r5.is_some() { 6 } else { 4 }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The A53 console (UART0).
    Console,
    /// The R5 trace ring.
    R5Trace,
}

#[derive(Debug)]
pub enum Event {
    Line {
        node: usize,
        source: Source,
        line: Line,
    },
    /// QEMU ended: its exit status, or `None` if a signal killed it.
    Exited {
        node: usize,
        status: Option<i32>,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    #[error(transparent)]
    Qemu(#[from] qemu::QemuError),
    #[error(transparent)]
    Console(#[from] ConsoleError),
    #[error("node {node}: {what}: {source}")]
    Io { node: usize, what: &'static str, source: std::io::Error },
    #[error("node {node}: QEMU exited while starting ({status}); its output:\n{log}")]
    EarlyExit { node: usize, status: String, log: String },
    #[error("node {node}: QEMU did not connect within {CONNECT_TIMEOUT:?}")]
    ConnectTimeout { node: usize },
    #[error("node {node}: {source}")]
    Qmp { node: usize, source: QmpError },
    #[error("node {node}: boot arguments too long")]
    BootArgs { node: usize },
}

pub struct Node {
    pub index: usize,
    pid: i32,
    dir: PathBuf,
    memory_file: PathBuf,
    qmp: Qmp,
    uart0: Option<UnixStream>,
    uart1: UnixStream,
    ddr: Arc<Ddr>,
    alive: Arc<AtomicBool>,
    r5_wake: Option<Arc<R5Wake>>,
    waiter: Option<JoinHandle<()>>,
}

fn io(node: usize, what: &'static str) -> impl FnOnce(std::io::Error) -> NodeError {
    move |source| NodeError::Io { node, what, source }
}

/// Accepts QEMU's connection on `listener`, or reports why it never came.
fn accept(node: usize, listener: &UnixListener, child: &mut Child, log: &Path) -> Result<UnixStream, NodeError> {
    listener.set_nonblocking(true).map_err(io(node, "socket"))?;
    let deadline = Instant::now() + CONNECT_TIMEOUT;
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                stream.set_nonblocking(false).map_err(io(node, "socket"))?;
                return Ok(stream);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(io(node, "accept")(e)),
        }
        if let Ok(Some(status)) = child.try_wait() {
            let log = std::fs::read_to_string(log).unwrap_or_default();
            return Err(NodeError::EarlyExit { node, status: status.to_string(), log });
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            return Err(NodeError::ConnectTimeout { node });
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Node `node`'s DDR file, for a cluster whose runtime directory is `runtime_dir`: in
/// `/dev/shm`, named after the directory. The node removes it when it stops; a process killed
/// leaves it, for whoever cleans up after it.
pub fn memory_file(runtime_dir: &Path, node: usize) -> PathBuf {
    PathBuf::from("/dev/shm")
        .join(format!("{}-node{node}", runtime_dir.file_name().unwrap_or_default().to_string_lossy()))
}

impl Node {
    /// Starts QEMU for `spec` paused; call [`Node::resume`] to run it. When QEMU ends, its
    /// `alive` flag is cleared and `exits` raised.
    pub fn start(
        spec: &NodeSpec,
        qemu: &Path,
        runtime_dir: &Path,
        events: Sender<Event>,
        exits: Arc<Signal>,
    ) -> Result<Node, NodeError> {
        let n = spec.index;
        let dir = runtime_dir.join(format!("node{n}"));
        std::fs::create_dir_all(&dir).map_err(io(n, "runtime directory"))?;
        let memory_file = memory_file(runtime_dir, n);
        let (uart0_path, uart1_path, qmp_path) = (dir.join("uart0"), dir.join("uart1"), dir.join("qmp"));
        let r5_console_path = dir.join("r5wake");
        let listeners = [&uart0_path, &uart1_path, &qmp_path, &r5_console_path].map(|p| {
            let _ = std::fs::remove_file(p);
            UnixListener::bind(p)
        });
        let [uart0_l, uart1_l, qmp_l, r5_console_l] = listeners;
        let (uart0_l, uart1_l, qmp_l, r5_console_l) = (
            uart0_l.map_err(io(n, "bind"))?,
            uart1_l.map_err(io(n, "bind"))?,
            qmp_l.map_err(io(n, "bind"))?,
            r5_console_l.map_err(io(n, "bind"))?,
        );

        let boot_args_file = match &spec.boot_args {
            Some(text) => {
                let mut block = vec![0u8; proto::boot_args::HEADER_SIZE + proto::boot_args::MAX_TEXT];
                let len = proto::boot_args::encode(text, &mut block).ok_or(NodeError::BootArgs { node: n })?;
                let path = dir.join("bootargs.bin");
                std::fs::write(&path, &block[..len]).map_err(io(n, "boot arguments"))?;
                Some(path)
            }
            None => None,
        };
        let parts = CommandParts {
            memory_file: &memory_file,
            uart0_socket: &uart0_path,
            uart1_socket: &uart1_path,
            qmp_socket: &qmp_path,
            r5_console_socket: spec.r5.is_some().then_some(r5_console_path.as_path()),
            boot_args_file: boot_args_file.as_deref(),
            boot_args_addr: QemuBoard::BOOT_ARGS.expect("the QEMU board has boot arguments"),
            program_store_addr: QemuBoard::DDR_LAYOUT.program_store,
        };
        let log_path = dir.join("qemu.log");
        let log = std::fs::File::create(&log_path).map_err(io(n, "log file"))?;
        let mut command = Command::new(qemu);
        command
            .args(qemu::node_args(spec, &parts))
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(io(n, "log file"))?)
            .stderr(log);
        // The QEMU dies with the process that serves its platform: without it the guest could
        // not go on, and a QEMU left behind by a killed `qemu-virt` (a rank of a cluster over
        // MPI that died, a run killed by a timeout) would spin for ever. The kernel sends the
        // signal when the *thread* that started the QEMU ends: every caller starts a cluster on
        // the thread that keeps it (a program's main thread, a test's own).
        // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            command.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = command.spawn().map_err(io(n, "spawn QEMU"))?;

        let uart0 = if spec.console_pty { None } else { Some(accept(n, &uart0_l, &mut child, &log_path)?) };
        let uart1 = accept(n, &uart1_l, &mut child, &log_path)?;
        let qmp_stream = accept(n, &qmp_l, &mut child, &log_path)?;
        let qmp = Qmp::handshake(qmp_stream).map_err(|source| NodeError::Qmp { node: n, source })?;
        let ddr = Arc::new(Ddr::open(&memory_file).map_err(io(n, "map DDR"))?);
        let r5_console = match &spec.r5 {
            Some(_) => Some(accept(n, &r5_console_l, &mut child, &log_path)?),
            None => None,
        };

        let console = match &uart0 {
            Some(uart0) => {
                let mut decoder = Decoder::for_elf(&spec.kernel)?;
                let mut stream = uart0.try_clone().map_err(io(n, "socket"))?;
                let events = events.clone();
                Some(std::thread::spawn(move || {
                    let mut buf = [0u8; 4096];
                    while let Ok(len @ 1..) = stream.read(&mut buf) {
                        for line in decoder.feed(&buf[..len]) {
                            let _ = events.send(Event::Line { node: n, source: Source::Console, line });
                        }
                    }
                }))
            }
            None => None,
        };
        let (r5_wake, r5_watch) = match (&spec.r5, r5_console) {
            (Some(elf), Some(console)) => {
                let announcements = console.try_clone().map_err(io(n, "socket"))?;
                let wake = Arc::new(R5Wake::new(ddr.clone(), console));
                let decoder = Decoder::for_elf(elf)?;
                (Some(wake.clone()), Some(spawn_r5_watch(n, wake, announcements, decoder, ddr.clone(), events.clone())))
            }
            _ => (None, None),
        };
        let pid = child.id() as i32;
        let alive = Arc::new(AtomicBool::new(true));
        let alive_flag = alive.clone();
        let waiter = std::thread::spawn(move || {
            let status = child.wait().ok().and_then(|s| s.code());
            alive_flag.store(false, Ordering::Release);
            exits.raise();
            if let Some(c) = console {
                let _ = c.join();
            }
            // QEMU closed the R5's console: the watcher drained the trace one last time.
            if let Some(t) = r5_watch {
                let _ = t.join();
            }
            let _ = events.send(Event::Exited { node: n, status });
        });
        Ok(Node { index: n, pid, dir, memory_file, qmp, uart0, uart1, ddr, alive, r5_wake, waiter: Some(waiter) })
    }

    /// The node's QEMU process.
    pub fn pid(&self) -> u32 {
        self.pid as u32
    }

    /// Lets the paused node run.
    pub fn resume(&mut self) -> Result<(), NodeError> {
        self.qmp.execute("cont").map(drop).map_err(|source| NodeError::Qmp { node: self.index, source })
    }

    /// Bytes written here arrive on the node's console UART (keyboard input).
    pub fn console_input(&self) -> std::io::Result<UnixStream> {
        match &self.uart0 {
            Some(s) => s.try_clone(),
            None => Err(std::io::Error::other("the console is on a pseudo-terminal")),
        }
    }

    /// The pseudo-terminal the console is on (`NodeSpec::console_pty`).
    pub fn console_pty(&mut self) -> Result<PathBuf, NodeError> {
        let chardevs =
            self.qmp.execute("query-chardev").map_err(|source| NodeError::Qmp { node: self.index, source })?;
        chardevs
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["label"] == "uart0")
            .and_then(|c| c["filename"].as_str()?.strip_prefix("pty:").map(PathBuf::from))
            .ok_or_else(|| NodeError::Qmp { node: self.index, source: QmpError::Protocol("no pty for uart0".into()) })
    }

    /// The node's second UART (the platform channel).
    pub fn platform_channel(&self) -> std::io::Result<UnixStream> {
        self.uart1.try_clone()
    }

    pub fn ddr(&self) -> &Arc<Ddr> {
        &self.ddr
    }

    /// The R5's wake-up line (nodes with an R5 image).
    pub fn r5_wake(&self) -> Option<&Arc<R5Wake>> {
        self.r5_wake.as_ref()
    }

    /// Cleared when QEMU exits.
    pub fn alive(&self) -> &Arc<AtomicBool> {
        &self.alive
    }

    /// Kills QEMU at once (its `Exited` event still follows).
    pub fn kill(&self) {
        // SAFETY: signalling our own child process by pid; it is reaped by the waiter thread.
        unsafe { libc::kill(self.pid, libc::SIGKILL) };
    }

    /// Kills QEMU if it still runs and waits until its last events were sent.
    pub fn shut_down(&mut self) {
        self.kill();
        if let Some(w) = self.waiter.take() {
            let _ = w.join();
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.shut_down();
        let _ = std::fs::remove_file(&self.memory_file);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The R5's watcher (`R5Wake::watch`): its timer, and the drain of its trace ring (after each of
/// its sleeps, and every [`TRACE_POLL`] while it runs), until QEMU closes the console.
fn spawn_r5_watch(
    node: usize,
    wake: Arc<R5Wake>,
    announcements: UnixStream,
    mut decoder: Decoder,
    ddr: Arc<Ddr>,
    events: Sender<Event>,
) -> JoinHandle<()> {
    std::thread::Builder::new()
        .name(format!("node{node} r5 watch"))
        .spawn(move || {
            let mut reader = TraceReader::new();
            let mut bytes = Vec::new();
            wake.watch(announcements, TRACE_POLL, || {
                // SAFETY: TraceRing is made of atomics and bytes read volatilely; any bit
                // pattern is valid and torn data is detected by the reader.
                if let Some(ring) = unsafe { ddr.view::<TraceRing>(QemuBoard::TRACE_RING_BASE) }
                    && ring.is_valid()
                {
                    bytes.clear();
                    reader.poll(ring, &mut bytes);
                    for line in decoder.feed(&bytes) {
                        let _ = events.send(Event::Line { node, source: Source::R5Trace, line });
                    }
                }
            });
        })
        .expect("a thread for the R5's watcher")
}
