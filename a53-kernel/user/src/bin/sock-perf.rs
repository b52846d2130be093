//! `sock-perf`: stream throughput over sockets, an iperf for Unimem (`docs/hw/sockets.md`).
//!
//! `cargo xtask run sock-perf --nodes 2 --on 0 -- [NODE] [KIB] [WRITE_KIB] [CONNECTIONS] [PORT] [CHECK]`
//!
//! Spawns a sink on NODE (default: the last node), opens CONNECTIONS connections to it (default
//! 1, at most 32), and streams KIB KiB (default 8192) on each in writes of WRITE_KIB KiB (default
//! 64), all connections at once through `poll`, on PORT (default 5001). With CHECK 0 (the
//! benchmark's transport figure) nothing is generated or hashed per byte: the same bytes go out
//! again and again, and only their count is checked. The sink hashes what each connection brings
//! (FNV-1a) and sends the hash back at its end (or, unchecked, its byte count); every answer
//! must match the sender's. Prints the
//! throughput, each connection's share and the process's socket statistics.
//!
//! The sink (thread argument `socket_part::pack`, role 1, `count` = connections, `node` = 1 for
//! no hashing) accepts the connections and serves them all from one non-blocking loop.
//!
//! Exit status: 0; 1 = bad argument; 10.. = a check failed (the log says which).
#![no_std]
#![no_main]

use unimem_user::args::socket_part::{Part, pack, unpack};
use unimem_user::socket::{self, Entry, Fnv, Listener, Ready, Stream, fill_pattern};
use unimem_user::{Error, SysError, arguments, board_count, ensure, log, remote_spawn, sys};

unimem_user::entry!(main);

const SINK: u8 = 1;
const MAX_CONNECTIONS: usize = 32;
const BUF: usize = 1024 * 1024;

fn main() -> Result<u64, Error> {
    match sys::thread_argument() {
        Ok(arg) => match unpack(arg) {
            Part { role: SINK, port, count, node } if (1..=MAX_CONNECTIONS as u32).contains(&count) => {
                sink(port, count as usize, node == 0)
            }
            _ => {
                log!("argument {:#x} is no part", arg);
                Ok(1)
            }
        },
        Err(Error::NoArgument) => source(),
        Err(e) => Err(e),
    }
}

struct Options {
    node: u16,
    bytes: u64,
    write: usize,
    connections: usize,
    port: u16,
    check: bool,
}

fn options() -> Result<Option<Options>, Error> {
    let args = arguments()?;
    let nodes = board_count()?;
    let number = |i: usize, default: u64| if args.count() > i { args.number(i).ok() } else { Some(default) };
    let (Some(node), Some(kib_total), Some(kib), Some(connections), Some(port), Some(check)) =
        (number(0, u64::from(nodes - 1)), number(1, 8192), number(2, 64), number(3, 1), number(4, 5001), number(5, 1))
    else {
        return Ok(None);
    };
    let valid = node < u64::from(nodes)
        && (1..=4 << 20).contains(&kib_total)
        && (1..=1024).contains(&kib)
        && (1..=MAX_CONNECTIONS as u64).contains(&connections)
        && (1..=0xffff).contains(&port)
        && check <= 1;
    Ok(valid.then_some(Options {
        node: node as u16,
        bytes: kib_total << 10,
        write: (kib as usize) << 10,
        connections: connections as usize,
        port: port as u16,
        check: check == 1,
    }))
}

struct Sending {
    stream: Stream,
    sent: u64,
    hash: Fnv,
    done_us: u64,
}

fn source() -> Result<u64, Error> {
    let Some(o) = options()? else {
        log!("usage: sock-perf [NODE] [KIB 1..=4194304] [WRITE_KIB 1..=1024] [CONNECTIONS 1..=32] [PORT] [CHECK 0|1]");
        return Ok(1);
    };
    let part = Part { role: SINK, port: o.port, node: u16::from(!o.check), count: o.connections as u32 };
    remote_spawn(env!("CARGO_BIN_NAME"), pack(part).expect("fits"), o.node)?;
    let mut conns: heapless::Vec<Sending, MAX_CONNECTIONS> = heapless::Vec::new();
    for _ in 0..o.connections {
        let mut stream = socket::connect_when_listening(o.node, o.port, 20_000_000)?;
        stream.set_nonblocking(true);
        let _ = conns.push(Sending { stream, sent: 0, hash: Fnv::default(), done_us: 0 });
    }
    log!(
        "{} connection(s) to node {}: {} KiB each in {} KiB writes",
        o.connections,
        o.node,
        o.bytes >> 10,
        o.write >> 10
    );
    let buf = sys::map_buffer(BUF)?;
    let start = sys::time_us()?;
    let mut open = o.connections;
    while open > 0 {
        let mut entries: heapless::Vec<Entry, MAX_CONNECTIONS> = conns
            .iter()
            .filter(|c| c.sent < o.bytes)
            .map(|c| Entry { handle: c.stream.handle(), interest: Ready::WRITABLE, ready: 0 })
            .collect();
        socket::poll(&mut entries, u64::MAX)?;
        for (i, c) in conns.iter_mut().enumerate().filter(|(_, c)| c.sent < o.bytes) {
            let entry = entries.iter().find(|e| e.handle == c.stream.handle()).copied().unwrap_or_default();
            ensure!(
                entry.ready & (Ready::HANGUP | Ready::INVALID) == 0,
                10,
                "connection {}: hang-up {:#x}",
                i,
                entry.ready
            );
            if entry.ready & Ready::WRITABLE == 0 {
                continue;
            }
            let len = (o.bytes - c.sent).min(o.write as u64).min(BUF as u64) as usize;
            if o.check {
                fill_pattern(i as u64, c.sent, &mut buf[..len]);
            }
            match c.stream.write(&buf[..len]) {
                Ok(n) => {
                    if o.check {
                        c.hash.update(&buf[..n]);
                    }
                    c.sent += n as u64;
                }
                Err(Error::Syscall(SysError::WouldBlock)) => {}
                Err(e) => return Err(e),
            }
            if c.sent == o.bytes {
                c.stream.shutdown(socket::Shutdown::Write)?;
                c.done_us = sys::time_us()?;
                open -= 1;
            }
        }
    }
    let mut status = 0;
    for (i, c) in conns.iter_mut().enumerate() {
        c.stream.set_nonblocking(false);
        let mut hash = [0u8; 8];
        c.stream.read_exact(&mut hash)?;
        let (got, expected) = (u64::from_le_bytes(hash), if o.check { c.hash.0 } else { c.sent });
        if got != expected {
            log!("connection {}: the sink answered {:#x}, not {:#x} (hash, or bytes unchecked)", i, got, expected);
            status = 11;
        }
    }
    let end = sys::time_us()?;
    let total = o.bytes * o.connections as u64;
    let mbps = |bytes: u64, us: u64| bytes / us.max(1);
    log!("sock-perf: {} bytes in {} us: {} MB/s", total, end - start, mbps(total, end - start));
    log!("bench sock_perf_bytes: {} B", total);
    log!("bench sock_perf_us: {} us", end - start);
    for (i, c) in conns.iter().enumerate() {
        log!("  connection {}: {} bytes, {} MB/s, hash {:#x}", i, c.sent, mbps(c.sent, c.done_us - start), c.hash.0);
    }
    let s = socket::stats()?;
    log!(
        "  process: {} connections, {} RDMA writes, {} bytes out, {} bytes in",
        s.connections,
        s.rdma_writes,
        s.bytes_out,
        s.bytes_in
    );
    if status == 0 && o.check {
        log!("sock-perf: every hash matches");
    }
    Ok(status)
}

struct Receiving {
    stream: Stream,
    hash: Fnv,
    bytes: u64,
    ended: bool,
}

/// Accepts `count` connections and reads them all to their end from one non-blocking loop;
/// answers each with its hash.
fn sink(port: u16, count: usize, check: bool) -> Result<u64, Error> {
    let mut listener = Listener::bind(port)?;
    listener.set_nonblocking(true);
    let mut conns: heapless::Vec<Receiving, MAX_CONNECTIONS> = heapless::Vec::new();
    let buf = sys::map_buffer(BUF)?;
    let mut ended = 0;
    while ended < count {
        let mut entries: heapless::Vec<Entry, { MAX_CONNECTIONS + 1 }> = heapless::Vec::new();
        if conns.len() < count {
            let _ = entries.push(Entry { handle: listener.handle(), interest: Ready::READABLE, ready: 0 });
        }
        for c in conns.iter().filter(|c| !c.ended) {
            let _ = entries.push(Entry { handle: c.stream.handle(), interest: Ready::READABLE, ready: 0 });
        }
        socket::poll(&mut entries, 30_000_000)?;
        ensure!(entries.iter().any(|e| e.ready != 0), 12, "sink: nothing happened in 30 s");
        if conns.len() < count {
            match listener.accept() {
                Ok((stream, _)) => {
                    let mut stream = stream;
                    stream.set_nonblocking(true);
                    let _ = conns.push(Receiving { stream, hash: Fnv::default(), bytes: 0, ended: false });
                }
                Err(Error::Syscall(SysError::WouldBlock)) => {}
                Err(e) => return Err(e),
            }
        }
        for c in conns.iter_mut().filter(|c| !c.ended) {
            match c.stream.read(buf) {
                Ok(0) => {
                    c.ended = true;
                    ended += 1;
                    c.stream.set_nonblocking(false);
                    let answer = if check { c.hash.0 } else { c.bytes };
                    c.stream.write_all(&answer.to_le_bytes())?;
                }
                Ok(n) => {
                    if check {
                        c.hash.update(&buf[..n]);
                    }
                    c.bytes += n as u64;
                }
                Err(Error::Syscall(SysError::WouldBlock)) => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(0)
}
