//! Runner tests of the commands a user types: each runs `cargo xtask ...` as a child process,
//! exactly as the README shows it, and checks its exit status and what it printed.

use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What a finished command left.
pub struct Finished {
    /// `None`: killed by a signal, or killed here after the timeout.
    pub status: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub timed_out: bool,
}

impl Finished {
    pub fn log(&self) -> Vec<String> {
        let mut log =
            vec![format!("exit status {:?}{}", self.status, if self.timed_out { " (timed out)" } else { "" })];
        log.extend(self.stdout.lines().map(String::from));
        log.extend(self.stderr.lines().map(|l| format!("stderr: {l}")));
        log
    }
}

fn xtask() -> Command {
    let mut cmd = Command::new(crate::started_as());
    cmd.current_dir(crate::images::workspace_root());
    cmd
}

fn drain(mut from: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = from.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// Runs `cargo xtask ARGS` without a terminal; kills it after `timeout`.
pub fn run(args: &[&str], timeout: Duration) -> std::io::Result<Finished> {
    let mut child = xtask().args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
    let out = drain(child.stdout.take().expect("piped"));
    let err = drain(child.stderr.take().expect("piped"));
    let (status, timed_out) = wait(&mut child, timeout)?;
    Ok(Finished { status, stdout: out.join().unwrap_or_default(), stderr: err.join().unwrap_or_default(), timed_out })
}

fn wait(child: &mut std::process::Child, timeout: Duration) -> std::io::Result<(Option<i32>, bool)> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok((status.code(), false));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            return Ok((child.wait()?.code(), true));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A child whose stdin, stdout and stderr are a pseudo-terminal, as in a user's terminal.
pub struct OnTerminal {
    child: std::process::Child,
    master: std::fs::File,
    /// The terminal's other end, kept open to look at its settings after the child.
    slave: OwnedFd,
    output: Arc<Mutex<String>>,
}

impl OnTerminal {
    pub fn spawn(args: &[&str]) -> std::io::Result<Self> {
        let (mut master, mut slave) = (0, 0);
        // SAFETY: openpty writes two descriptors; the optional arguments are null.
        let rc =
            unsafe { libc::openpty(&mut master, &mut slave, std::ptr::null_mut(), std::ptr::null(), std::ptr::null()) };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: both descriptors were just opened by openpty and are owned here.
        let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
        let child = xtask()
            .args(args)
            .stdin(Stdio::from(slave.try_clone()?))
            .stdout(Stdio::from(slave.try_clone()?))
            .stderr(Stdio::from(slave.try_clone()?))
            .spawn()?;
        let master = std::fs::File::from(master);
        let output = Arc::new(Mutex::new(String::new()));
        let (mut reader, sink) = (master.try_clone()?, output.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = reader.read(&mut buf) {
                sink.lock().unwrap_or_else(|e| e.into_inner()).push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Ok(Self { child, master, slave, output })
    }

    pub fn output(&self) -> String {
        self.output.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Waits until the output holds `text` (after byte `from` of it); returns where it ends.
    pub fn expect(&self, text: &str, from: usize, timeout: Duration) -> Result<usize, String> {
        let deadline = Instant::now() + timeout;
        loop {
            let out = self.output();
            if let Some(at) = out.get(from..).and_then(|o| o.find(text)) {
                return Ok(from + at + text.len());
            }
            if Instant::now() > deadline {
                return Err(format!("no {text:?} within {timeout:?}"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn type_keys(&mut self, keys: &[u8]) -> std::io::Result<()> {
        std::io::Write::write_all(&mut self.master, keys)
    }

    pub fn wait(&mut self, timeout: Duration) -> std::io::Result<(Option<i32>, bool)> {
        wait(&mut self.child, timeout)
    }

    /// Whether the terminal is back in line mode with echo, as before the child changed it.
    pub fn line_mode_restored(&self) -> bool {
        // SAFETY: termios is plain data, filled by tcgetattr for an open descriptor.
        let mut tio: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: the slave descriptor is open.
        let ok = unsafe { libc::tcgetattr(self.slave.as_raw_fd(), &mut tio) } == 0;
        ok && tio.c_lflag & libc::ICANON != 0 && tio.c_lflag & libc::ECHO != 0
    }
}

impl Drop for OnTerminal {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
