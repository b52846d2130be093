//! The wire that carries one node's PL interrupt lines to its guest: one byte per line, on the
//! same UART socket that brings the forwarding kicks (`docs/hw/forwarding.md`).
//!
//! The bytes are written by a thread of their own, never by the thread that serves forwarded
//! accesses. The guest drains the UART on one core, and only when that core is not itself
//! waiting for a forwarded access; a socket whose buffer is full blocks its writer (each
//! one-byte write costs a whole socket buffer entry, so a few hundred undrained bytes fill it).
//! Were the server the writer, the guest would wait for the server and the server for the
//! guest. Here the server only records which lines are due, and the writer sends them, one byte
//! per due line however often it was asked: a line asked for again while its byte is still
//! unsent is already covered by that byte, which the guest reads after the request.

use crate::counters::NodeCounters;
use crate::fabric::Fabric;
use std::io::Write;
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

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

pub(super) struct IrqWire {
    shared: Arc<Shared>,
    writer: Option<JoinHandle<()>>,
}

impl IrqWire {
    /// Starts the writer of node `node`'s lines on `socket`.
    pub(super) fn new(node: usize, socket: UnixStream, fabric: Arc<Fabric>) -> Self {
        let shared = Arc::new(Shared { state: Mutex::default(), changed: Condvar::new() });
        let theirs = shared.clone();
        let writer = std::thread::Builder::new()
            .name(format!("node{node} irq wire"))
            .spawn(move || write_bytes(node, socket, &theirs, &fabric))
            .expect("a thread for the interrupt wire");
        Self { shared, writer: Some(writer) }
    }

    /// Sends one byte for each line in `lines`, soon and in the background.
    pub(super) fn raise(&self, lines: u16) {
        if lines == 0 {
            return;
        }
        let mut state = self.shared.state();
        if !state.closed {
            state.due |= lines;
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

fn write_bytes(node: usize, mut socket: UnixStream, shared: &Shared, fabric: &Fabric) {
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
            NodeCounters::bump(&fabric.counters[node].interrupts);
            if let Some(t) = &fabric.trace {
                t.interrupt(node, line);
            }
        }
    }
}
