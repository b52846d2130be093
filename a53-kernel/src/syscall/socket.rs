//! The socket calls (`proto::syscall::nr::SOCKET_*`, `docs/hw/sockets.md`): every argument
//! checked, user memory reached through the process's own tables, the protocol's decisions
//! (`socket::Sockets`) carried out by the node's sockets (`socket::node`). A call that would wait
//! blocks on `Wait::Socket` and runs again when one of the process's sockets changes.
//!
//! Lock order: the process table, then the sockets; the wake-ups and doorbells a call causes go
//! out once both are let go ([`Kernel::after_sockets`]).

use super::Kernel;
use crate::mm::user_space::SpaceError;
use crate::process::state::Event;
use crate::process::table::{ProcessOf, Wait};
use crate::socket::node::Rings;
use crate::socket::{Action, Owner, Readable, Sockets};
use alloc::vec::Vec;
use boot::frame::ExceptionFrame;
use proto::socket::{EVENT_COUNTER, IO_MAX, NONBLOCKING, POLL_MAX, PollEntry, SocketStats, ready};
use proto::syscall::{Error, nr};

/// A call's outcome: values for x0.., an error, or a wait (and the call again).
enum Outcome {
    Done(heapless::Vec<u64, 2>),
    Failed(Error),
    Wait { wait: Wait, deadline: Option<u64> },
}

impl From<Result<u64, Error>> for Outcome {
    fn from(r: Result<u64, Error>) -> Self {
        match r {
            Ok(v) => Outcome::Done(heapless::Vec::from_slice(&[v]).expect("one value")),
            Err(e) => Outcome::Failed(e),
        }
    }
}

/// Handles socket call `frame.x[8]` for the process in `slot`.
pub fn handle(k: &impl Kernel, frame: &mut ExceptionFrame, slot: usize) -> Event {
    let Some(domain) = super::domain_of(k, slot) else {
        return finish(frame, Outcome::Failed(Error::BadArgument));
    };
    let owner = Owner { slot, domain };
    let [a0, a1, a2, a3] = [frame.x[0], frame.x[1], frame.x[2], frame.x[3]];
    let outcome = match frame.x[8] {
        nr::SOCKET_LISTEN => listen(k, owner, a0),
        nr::SOCKET_ACCEPT => accept(k, owner, a0, a1),
        nr::SOCKET_CONNECT => connect(k, frame, owner, a0, a1, a2),
        nr::SOCKET_READ => transfer(k, owner, a0, a1, a2, a3, Direction::Read),
        nr::SOCKET_WRITE => transfer(k, owner, a0, a1, a2, a3, Direction::Write),
        nr::SOCKET_SHUTDOWN => sockets(k, |s, out| s.shutdown(owner, a0, a1, out).map(|()| 0)).into(),
        nr::SOCKET_CLOSE => sockets(k, |s, out| s.close(owner, a0, out).map(|()| 0)).into(),
        nr::SOCKET_POLL => poll(k, frame, owner, a0, a1, a2),
        nr::SOCKET_STATS => stats(k, owner, a0),
        _ => Outcome::Failed(Error::NoSuchCall),
    };
    finish(frame, outcome)
}

fn finish(frame: &mut ExceptionFrame, outcome: Outcome) -> Event {
    match outcome {
        Outcome::Done(values) => {
            for (i, v) in values.iter().enumerate() {
                frame.x[i] = *v;
            }
            Event::Continue
        }
        Outcome::Failed(e) => {
            frame.x[0] = e as i64 as u64;
            Event::Continue
        }
        Outcome::Wait { wait, deadline } => {
            frame.elr -= 4;
            Event::Block { wait, deadline }
        }
    }
}

/// Runs `f` on the sockets (with their rings at hand) and sends what it caused once the lock is
/// let go; `None` on a node without sockets.
fn with_rings<K: Kernel, R>(
    k: &K,
    f: impl FnOnce(&mut Sockets, &Rings<K::Frames>, &mut Vec<Action>) -> R,
) -> Option<R> {
    let (result, wakes) = k.sockets(|node| node.run(f))?;
    k.after_sockets(wakes);
    Some(result)
}

/// Runs `f` on the sockets and sends what it caused; `NoPd` on a node without sockets.
fn sockets<R>(k: &impl Kernel, f: impl FnOnce(&mut Sockets, &mut Vec<Action>) -> Result<R, Error>) -> Result<R, Error> {
    with_rings(k, |s, _, out| f(s, out)).ok_or(Error::NoPd)?
}

fn listen(k: &impl Kernel, owner: Owner, port: u64) -> Outcome {
    let Ok(port) = u16::try_from(port) else { return Outcome::Failed(Error::BadArgument) };
    sockets(k, |s, _| s.listen(owner, port)).into()
}

fn blocking(flags: u64) -> Result<bool, Error> {
    match flags {
        0 => Ok(true),
        NONBLOCKING => Ok(false),
        _ => Err(Error::BadArgument),
    }
}

fn accept(k: &impl Kernel, owner: Owner, listener: u64, flags: u64) -> Outcome {
    let block = match blocking(flags) {
        Ok(b) => b,
        Err(e) => return Outcome::Failed(e),
    };
    match sockets(k, |s, _| s.accept(owner, listener)) {
        Ok(Some((handle, node))) => Outcome::Done(heapless::Vec::from_slice(&[handle, u64::from(node)]).expect("two")),
        Ok(None) if block => Outcome::Wait { wait: Wait::Socket, deadline: None },
        Ok(None) => Outcome::Failed(Error::WouldBlock),
        Err(e) => Outcome::Failed(e),
    }
}

/// The first run sends the Connect and keeps the handle in x4 (plus one) and the deadline in
/// x5; each run after a wake-up looks at the answer, and gives the connection up once the
/// deadline has passed.
fn connect(
    k: &impl Kernel,
    frame: &mut ExceptionFrame,
    owner: Owner,
    node: u64,
    port: u64,
    timeout_us: u64,
) -> Outcome {
    let handle = match frame.x[4] {
        0 => {
            let (_, nodes) = k.node_and_count();
            let (Ok(node), Ok(port)) = (u16::try_from(node), u16::try_from(port)) else {
                return Outcome::Failed(Error::BadArgument);
            };
            if node >= nodes {
                return Outcome::Failed(Error::BadArgument);
            }
            if !k.is_alive(u64::from(node)) {
                return Outcome::Failed(Error::Unreachable);
            }
            let Some((connected, wakes)) = k.sockets(|n| n.connect(owner, node, port)) else {
                return Outcome::Failed(Error::NoPd);
            };
            k.after_sockets(wakes);
            let handle = match connected {
                Ok(h) => h,
                Err(e) => return Outcome::Failed(e),
            };
            frame.x[4] = handle + 1;
            frame.x[5] = super::deadline_after_us(k, timeout_us).unwrap_or(0);
            handle
        }
        pending => pending - 1,
    };
    let deadline = (frame.x[5] != 0).then_some(frame.x[5]);
    match sockets(k, |s, out| s.connected(owner, handle, out)) {
        Ok(true) => Outcome::Done(heapless::Vec::from_slice(&[handle]).expect("one")),
        Ok(false) if deadline.is_some_and(|d| k.now() >= d) => {
            let _ = sockets(k, |s, out| {
                s.abandon(owner, handle, out);
                Ok(())
            });
            Outcome::Failed(Error::TimedOut)
        }
        Ok(false) => Outcome::Wait { wait: Wait::Connect, deadline },
        Err(e) => Outcome::Failed(e),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    Read,
    Write,
}

/// `SOCKET_READ` and `SOCKET_WRITE`: as much as the ring gives or takes now (both pieces of a
/// wrapped ring), copied between the process's buffer and the ring under both locks. A bad
/// buffer is `BadPointer`, and what was not copied stays where it was.
fn transfer(
    k: &impl Kernel,
    owner: Owner,
    handle: u64,
    ptr: u64,
    len: u64,
    flags: u64,
    direction: Direction,
) -> Outcome {
    let block = match blocking(flags) {
        Ok(b) => b,
        Err(e) => return Outcome::Failed(e),
    };
    if len == 0 || len > IO_MAX {
        return Outcome::Failed(Error::BadArgument);
    }
    let transferred = k.table(|t| {
        let p = t.slots[owner.slot].as_deref_mut().ok_or(Error::BadArgument)?;
        let buffer = Buffer { k, p, at: ptr };
        let (result, wakes) = k
            .sockets(|node| {
                node.run(|s, rings, out| match direction {
                    Direction::Read => read(s, rings, buffer, owner, handle, len as u32, out),
                    Direction::Write => write(s, rings, buffer, owner, handle, len as u32, out),
                })
            })
            .ok_or(Error::NoPd)?;
        Ok((result, wakes))
    });
    let result = match transferred {
        Ok((result, wakes)) => {
            k.after_sockets(wakes);
            result
        }
        Err(e) => Err(e),
    };
    match result {
        Err(Error::WouldBlock) if block => Outcome::Wait { wait: Wait::Socket, deadline: None },
        r => r.into(),
    }
}

/// A process's buffer at `at`, for a read or a write call.
struct Buffer<'a, K: Kernel> {
    k: &'a K,
    p: &'a mut ProcessOf<K::Frames>,
    at: u64,
}

impl<K: Kernel> Buffer<'_, K> {
    /// Moves `n` bytes between the buffer, `done` bytes in, and a ring, one ring page at a time:
    /// `copy` moves the piece that starts `piece` bytes in (at the buffer address it is given)
    /// and says how long it was. The buffer is made resident first (`to_user`: for writing).
    fn copy_pieces(
        &mut self,
        done: u32,
        n: u32,
        to_user: bool,
        mut copy: impl FnMut(&mut ProcessOf<K::Frames>, u64, u32) -> Result<u32, SpaceError>,
    ) -> Result<(), SpaceError> {
        let at = self.at + u64::from(done);
        self.k.make_resident(self.p, at, n as usize, to_user)?;
        let mut piece = 0;
        while piece < n {
            piece += copy(self.p, at + u64::from(piece), piece)?;
        }
        Ok(())
    }
}

fn read<K: Kernel>(
    s: &mut Sockets,
    rings: &Rings<K::Frames>,
    mut buffer: Buffer<'_, K>,
    owner: Owner,
    handle: u64,
    len: u32,
    out: &mut Vec<Action>,
) -> Result<u64, Error> {
    let mut done = 0u32;
    while done < len {
        let (index, offset, n) = match s.readable(owner, handle, len - done) {
            Ok(Readable::Bytes { index, offset, len }) => (index, offset, len),
            Ok(Readable::EndOfStream) if done == 0 => return Ok(0),
            Err(e) if done == 0 => return Err(e),
            _ => break,
        };
        let copied = buffer.copy_pieces(done, n, true, |p, to, piece| {
            let bytes = rings.receive(index, offset + piece, n - piece);
            p.space.copy_to_user(to, bytes).map(|()| bytes.len() as u32)
        });
        if copied.is_err() {
            // Nothing is taken off the ring: the bytes stay for a good buffer.
            return if done == 0 { Err(Error::BadPointer) } else { Ok(u64::from(done)) };
        }
        s.consumed(index, n, out);
        done += n;
    }
    Ok(u64::from(done))
}

fn write<K: Kernel>(
    s: &mut Sockets,
    rings: &Rings<K::Frames>,
    mut buffer: Buffer<'_, K>,
    owner: Owner,
    handle: u64,
    len: u32,
    out: &mut Vec<Action>,
) -> Result<u64, Error> {
    let mut done = 0u32;
    while done < len {
        let w = match s.writable(owner, handle, len - done) {
            Ok(w) => w,
            Err(e) if done == 0 => return Err(e),
            Err(_) => break,
        };
        let copied = buffer.copy_pieces(done, w.len, false, |p, from, piece| {
            let bytes = rings.send(w.index, w.offset + piece, w.len - piece);
            p.space.read(from, bytes).map(|()| bytes.len() as u32)
        });
        if copied.is_err() {
            // Nothing is counted written: the ring's room stays as it was.
            return if done == 0 { Err(Error::BadPointer) } else { Ok(u64::from(done)) };
        }
        s.written(w.index, w.len, out);
        done += w.len;
    }
    Ok(u64::from(done))
}

/// `SOCKET_POLL`: reads the entries, writes their `ready`, and sleeps (until the deadline kept
/// in x5) while none is ready. An entry may watch the mailbox event counter instead of a socket
/// (`EVENT_COUNTER`).
fn poll(k: &impl Kernel, frame: &mut ExceptionFrame, owner: Owner, ptr: u64, count: u64, timeout_us: u64) -> Outcome {
    let Some(count) = usize::try_from(count).ok().filter(|c| (1..=POLL_MAX).contains(c)) else {
        return Outcome::Failed(Error::BadArgument);
    };
    let bytes = count * PollEntry::BYTES;
    let mut buf = [0u8; POLL_MAX * PollEntry::BYTES];
    let buf = &mut buf[..bytes];
    let polled = k.table(|t| {
        let p = t.slots[owner.slot].as_deref_mut().ok_or(Error::BadArgument)?;
        if k.make_resident(p, ptr, bytes, true).is_err() || p.space.read(ptr, buf).is_err() {
            return Err(Error::BadPointer);
        }
        // Asked before the sockets' lock is taken (the mailbox's and the sockets' are never
        // held together), and only by a poll that watches the counter; a delivery after this
        // wakes the wait below (`gsas_node`).
        let watched = buf.chunks_exact(PollEntry::BYTES).any(|e| e[..4] == EVENT_COUNTER.to_le_bytes());
        let events = if watched { k.mailbox(|m| m.event_count(owner.domain)) } else { None };
        let (ready, wakes) = k
            .sockets(|node| {
                node.run(|s, _, _| {
                    let mut ready = 0u64;
                    for chunk in buf.chunks_exact_mut(PollEntry::BYTES) {
                        let mut e = PollEntry::from_bytes(chunk.try_into().expect("an entry"));
                        let now = match e.handle {
                            EVENT_COUNTER => event_readiness(events),
                            handle => s.readiness(owner, u64::from(handle)),
                        };
                        let always = if e.interest & ready::ASKED_ONLY != 0 { ASKED_ALWAYS } else { ALWAYS };
                        e.ready = now & (e.interest | always);
                        ready += u64::from(e.ready != 0);
                        chunk.copy_from_slice(&e.to_bytes());
                    }
                    ready
                })
            })
            .ok_or(Error::NoPd)?;
        let written = p.space.copy_to_user(ptr, buf);
        Ok((ready, wakes, written))
    });
    let ready = match polled {
        Ok((ready, wakes, written)) => {
            k.after_sockets(wakes);
            if written.is_err() {
                return Outcome::Failed(Error::BadPointer);
            }
            ready
        }
        Err(e) => return Outcome::Failed(e),
    };
    if ready > 0 || timeout_us == 0 {
        return Ok(ready).into();
    }
    // `u64::MAX` waits with no deadline (which `kept_deadline` gives for 0).
    let forever = timeout_us == u64::MAX;
    let deadline = super::kept_deadline(k, frame, if forever { 0 } else { timeout_us });
    Outcome::Wait { wait: Wait::Socket, deadline }
}

/// The readiness bits reported whatever the interest.
const ALWAYS: u16 = ready::HANGUP | ready::INVALID | ready::ERROR | ready::ENDED;
/// The readiness bits reported whatever the interest, when it has `ASKED_ONLY`.
const ASKED_ALWAYS: u16 = ready::INVALID | ready::ERROR;

/// The readiness of the `EVENT_COUNTER` entry: readable while notifications wait on the event
/// opcodes, invalid without one (nothing could ever make it readable).
fn event_readiness(count: Option<usize>) -> u16 {
    match count {
        None => ready::INVALID,
        Some(0) => 0,
        Some(_) => ready::READABLE,
    }
}

fn stats(k: &impl Kernel, owner: Owner, ptr: u64) -> Outcome {
    let Some(stats) = with_rings(k, |s, _, _| s.stats(owner)) else { return Outcome::Failed(Error::NoPd) };
    let mut bytes = [0u8; SocketStats::WORDS * 8];
    for (chunk, word) in bytes.chunks_exact_mut(8).zip(stats.to_words()) {
        chunk.copy_from_slice(&word.to_le_bytes());
    }
    let copied = k.table(|t| {
        let p = t.slots[owner.slot].as_deref_mut().ok_or(Error::BadArgument)?;
        if k.make_resident(p, ptr, bytes.len(), true).is_err() || p.space.copy_to_user(ptr, &bytes).is_err() {
            return Err(Error::BadPointer);
        }
        Ok(0)
    });
    copied.into()
}
