//! The wire that carries one node's PL interrupt lines to its guest: one byte per line, on the
//! same UART socket that brings the forwarding kicks (`docs/hw/forwarding.md`).
//!
//! The thread that serves forwarded accesses never waits for the socket. The guest drains the
//! UART on one core, and only when that core is not itself waiting for a forwarded access; a
//! socket whose buffer is full blocks its writer (each one-byte write costs a whole socket
//! buffer entry, so a few hundred undrained bytes fill it). Were the server a blocking writer,
//! the guest would wait for the server and the server for the guest. So the server sends a
//! byte itself only if the socket takes it at once (a non-blocking send, and only while no byte
//! is waiting for the writer thread, so that the order is kept); otherwise it records which
//! lines are due, and a thread of their own writes them, one byte per due line however often it
//! was asked: a line asked for again while its byte is still unsent is already covered by that
//! byte, which the guest reads after the request. Sending at once spares a thread wake-up per
//! interrupt, which on a busy host costs the serving thread its core.

use crate::counters::NodeCounters;
use crate::transport::Local;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

#[derive(Default)]
struct State {
    /// Lines whose byte is due and not yet taken by the writer.
    due: u16,
    /// The writer has taken bytes and not finished writing them.
    writing: bool,
    /// No more bytes: the platform is gone or the guest's end closed.
    closed: bool,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

/// What the serving threads need to send a byte themselves.
struct Inline {
    socket: UnixStream,
    local: Local,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

pub(super) struct IrqWire {
    shared: Arc<Shared>,
    inline: Option<Inline>,
    writer: Option<JoinHandle<()>>,
}

impl IrqWire {
    /// Starts the writer of node `local.node`'s lines on `socket`.
    pub(super) fn new(local: Local, socket: UnixStream) -> Self {
        let shared = Arc::new(Shared { state: Mutex::default(), changed: Condvar::new() });
        let theirs = shared.clone();
        let inline = socket.try_clone().ok().map(|socket| Inline { socket, local: local.clone() });
        let writer = std::thread::Builder::new()
            .name(format!("node{} irq wire", local.node))
            .spawn(move || {
                crate::host_priority::serve_promptly();
                write_bytes(socket, &theirs, &local)
            })
            .expect("a thread for the interrupt wire");
        Self { shared, inline, writer: Some(writer) }
    }

    /// Sends one byte for each line in `lines`: now if the socket takes it, else soon, in the
    /// background.
    pub(super) fn raise(&self, lines: u16) {
        if lines == 0 {
            return;
        }
        let mut state = self.shared.state();
        if state.closed {
            return;
        }
        let mut unsent = lines;
        if let Some(inline) = self.inline.as_ref().filter(|_| state.due == 0 && !state.writing) {
            for line in (0..16u8).filter(|l| lines & (1 << l) != 0) {
                if !inline.try_send(line) {
                    break;
                }
                unsent &= !(1 << line);
            }
        }
        if unsent != 0 {
            state.due |= unsent;
            self.shared.changed.notify_all();
        }
    }

    /// Returns once every byte asked for so far has been written (or the wire has closed).
    pub fn settle(&self) {
        let mut state = self.shared.state();
        while (state.due != 0 || state.writing) && !state.closed {
            state = self.shared.changed.wait(state).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }
}

impl Drop for IrqWire {
    fn drop(&mut self) {
        self.shared.state().closed = true;
        self.shared.changed.notify_all();
        // A writer blocked on a guest that no longer reads ends when its QEMU exits and the
        // socket closes; it owns nothing the platform needs, so it is not waited for then.
        if let Some(writer) = self.writer.take()
            && !self.shared.state().writing
        {
            let _ = writer.join();
        }
    }
}

impl Inline {
    /// Sends `line`'s byte if the socket takes it without waiting.
    fn try_send(&self, line: u8) -> bool {
        // SAFETY: a send of one byte from a live buffer on a socket we own; MSG_DONTWAIT makes
        // this call non-blocking without changing the socket, which the writer thread shares.
        let sent = unsafe { libc::send(self.socket.as_raw_fd(), (&raw const line).cast(), 1, libc::MSG_DONTWAIT) };
        if sent != 1 {
            return false;
        }
        sent_byte(&self.local, line);
        true
    }
}

/// Counts and traces a byte that went out.
fn sent_byte(local: &Local, line: u8) {
    NodeCounters::bump(&local.counters.interrupts);
    if let Some(t) = &local.trace {
        t.interrupt(local.node, line);
    }
}

fn write_bytes(mut socket: UnixStream, shared: &Shared, local: &Local) {
    loop {
        let lines = {
            let mut state = shared.state();
            state.writing = false;
            shared.changed.notify_all();
            while state.due == 0 && !state.closed {
                state = shared.changed.wait(state).unwrap_or_else(|poisoned| poisoned.into_inner());
            }
            if state.closed {
                return;
            }
            state.writing = true;
            std::mem::take(&mut state.due)
        };
        for line in (0..16u8).filter(|l| lines & (1 << l) != 0) {
            if socket.write_all(&[line]).is_err() {
                let mut state = shared.state();
                (state.closed, state.writing) = (true, false);
                shared.changed.notify_all();
                return;
            }
            sent_byte(local, line);
        }
    }
}
