//! `sock-check`: the socket calls' refusals, isolation between processes, and a peer that dies
//! mid-stream (`docs/hw/sockets.md`; the kernel tests run it).
//!
//! Argument: `args::socket_part::pack(part)`, with `role`:
//! - 1 `BadInputs`: every bad input of every call on this node, each refused with its error and
//!   nothing lost: the data of a connection survives a refused read or write, a forged doorbell
//!   and a closed peer.
//! - 2 `Owner`: listens on `port`, connects to itself, then waits on user channel 6 for the
//!   `Intruder`; afterwards its connection must still carry its bytes, unread by anyone else.
//! - 3 `Intruder`: tries every connection and listener handle of this node (every slot, the
//!   first generations) with every call: each must be refused as not its own. Then notifies
//!   the `Owner` (channel 6).
//! - 4 `Sink`: accepts one connection on `port` and reads it forever (a test kills it, or its
//!   node); it says when 1 MiB has come in.
//! - 5 `Writer`: connects to `port` on `node` and writes until the connection fails, which
//!   must be `ConnectionReset` (or the end of the stream on a read), never a hang.
//!
//! Exit status: 0; 1 = bad argument; 10.. = a check failed (the log says which).
#![no_std]
#![no_main]

use proto::socket::{ConnId, Doorbell, Handle, IO_MAX, NONBLOCKING, POLL_MAX, PollEntry, ready};
use proto::syscall::nr;
use unimem_user::args::socket_part::unpack;
use unimem_user::socket::{self, Listener, Shutdown, Stream};
use unimem_user::{
    Error, MailboxOpcode, Notification, SysError, board_count, board_id, ensure, log, notify_when_ready, receive,
    register, sys,
};

unimem_user::entry!(main);

const OWNER_CHANNEL: u8 = 6;

fn main() -> Result<u64, Error> {
    let arg = sys::thread_argument()?;
    let part = unpack(arg);
    match part.role {
        1 => bad_inputs(part.port),
        2 => owner(part.port),
        3 => intruder(),
        4 => sink(part.port),
        5 => writer(part.node, part.port),
        _ => {
            log!("argument {:#x} is no part", arg);
            Ok(1)
        }
    }
}

/// The raw call, so that lengths, flags and pointers the library never passes reach the kernel.
fn call(number: u64, args: [u64; 4]) -> Result<u64, SysError> {
    let r = sys::raw(number, [args[0], args[1], args[2], args[3], 0, 0]);
    match r[0] as i64 {
        v if v < 0 => Err(SysError::from_return(v).unwrap_or(SysError::NoSuchCall)),
        v => Ok(v as u64),
    }
}

/// A pair of connected streams on this node (client end, server end).
fn local_pair(listener: &Listener, port: u16) -> Result<(Stream, Stream), Error> {
    let client = Stream::connect(board_id()?, port)?;
    let (server, _) = listener.accept()?;
    Ok((client, server))
}

fn read_all_now(stream: &mut Stream, buf: &mut [u8]) -> Result<usize, Error> {
    stream.read(buf)
}

fn bad_inputs(port: u16) -> Result<u64, Error> {
    use SysError::*;
    let nodes = board_count()?;
    // Listening.
    ensure!(call(nr::SOCKET_LISTEN, [0, 0, 0, 0]) == Err(BadArgument), 10, "port 0 was taken");
    ensure!(call(nr::SOCKET_LISTEN, [0x1_0000, 0, 0, 0]) == Err(BadArgument), 11, "port 65536 was taken");
    let listener = Listener::bind(port)?;
    let again = Listener::bind(port);
    ensure!(again.as_ref().err() == Some(&Error::Syscall(AddressInUse)), 12, "a port in use: {:?}", again);
    // Connecting.
    let r = call(nr::SOCKET_CONNECT, [u64::from(nodes), u64::from(port), 0, 0]);
    ensure!(r == Err(BadArgument), 13, "an unknown node: {:?}", r);
    let r = Stream::connect(board_id()?, port.wrapping_add(1));
    ensure!(r.as_ref().err() == Some(&Error::Syscall(ConnectionRefused)), 14, "nobody listens: {:?}", r);
    ensure!(call(nr::SOCKET_CONNECT, [u64::from(board_id()?), 0, 0, 0]) == Err(BadArgument), 15, "port 0 connect");
    let (mut client, mut server) = local_pair(&listener, port)?;
    let h = u64::from(client.handle());
    // Reading and writing.
    let mut buf = [0u8; 64];
    let data = b"nothing is lost".as_ptr() as u64;
    ensure!(call(nr::SOCKET_WRITE, [h, data, 0, 0]) == Err(BadArgument), 16, "a zero-length write");
    ensure!(call(nr::SOCKET_WRITE, [h, data, IO_MAX + 1, 0]) == Err(BadArgument), 17, "a too-large write");
    ensure!(call(nr::SOCKET_WRITE, [h, 0x10, 8, 0]) == Err(BadPointer), 18, "a write from unmapped memory");
    ensure!(call(nr::SOCKET_WRITE, [h, data, 4, 2]) == Err(BadArgument), 19, "a write with bad flags");
    client.write_all(b"abc")?;
    let sh = u64::from(server.handle());
    ensure!(call(nr::SOCKET_READ, [sh, 0x10, 8, 0]) == Err(BadPointer), 20, "a read into unmapped memory");
    ensure!(call(nr::SOCKET_READ, [sh, buf.as_mut_ptr() as u64, 0, 0]) == Err(BadArgument), 21, "zero-length read");
    ensure!(call(nr::SOCKET_READ, [sh, buf.as_mut_ptr() as u64, IO_MAX + 1, 0]) == Err(BadArgument), 22, "huge read");
    let read_only = b"read-only".as_ptr() as u64;
    ensure!(call(nr::SOCKET_READ, [sh, read_only, 3, 0]) == Err(BadPointer), 23, "a read into read-only memory");
    let n = read_all_now(&mut server, &mut buf)?;
    ensure!(&buf[..n] == b"abc", 24, "after refused calls the stream holds {:?}", &buf[..n]);
    server.set_nonblocking(true);
    let r = server.read(&mut buf);
    ensure!(r == Err(Error::Syscall(WouldBlock)), 25, "an empty non-blocking read: {:?}", r);
    // Handles that are no handles.
    for bad in [u64::MAX, 1 << 25, h ^ 1, Handle::Listener(ConnId::from_raw(h)).raw()] {
        ensure!(call(nr::SOCKET_READ, [bad, buf.as_mut_ptr() as u64, 8, 0]) == Err(BadArgument), 26, "read {:#x}", bad);
        ensure!(call(nr::SOCKET_WRITE, [bad, data, 8, 0]) == Err(BadArgument), 27, "write {:#x}", bad);
        ensure!(call(nr::SOCKET_SHUTDOWN, [bad, 1, 0, 0]) == Err(BadArgument), 28, "shutdown {:#x}", bad);
        ensure!(call(nr::SOCKET_ACCEPT, [bad, NONBLOCKING, 0, 0]) == Err(BadArgument), 29, "accept {:#x}", bad);
    }
    ensure!(call(nr::SOCKET_SHUTDOWN, [h, 0, 0, 0]) == Err(BadArgument), 30, "shutdown of nothing");
    ensure!(call(nr::SOCKET_SHUTDOWN, [h, 4, 0, 0]) == Err(BadArgument), 31, "shutdown of a third direction");
    // Polling.
    let mut entries = [PollEntry { handle: u32::MAX, interest: ready::READABLE, ready: 0 }; POLL_MAX + 1];
    let ptr = entries.as_mut_ptr() as u64;
    ensure!(call(nr::SOCKET_POLL, [ptr, 0, 0, 0]) == Err(BadArgument), 32, "a poll of nothing");
    ensure!(call(nr::SOCKET_POLL, [ptr, POLL_MAX as u64 + 1, 0, 0]) == Err(BadArgument), 33, "too many entries");
    ensure!(call(nr::SOCKET_POLL, [0x10, 1, 0, 0]) == Err(BadPointer), 34, "a poll of unmapped memory");
    ensure!(call(nr::SOCKET_POLL, [ptr, 1, 0, 0]) == Ok(1), 35, "a poll of a bad handle finds it ready");
    ensure!(entries[0].ready == ready::INVALID, 36, "a bad handle polls as {:#x}", entries[0].ready);
    ensure!(call(nr::SOCKET_STATS, [0x10, 0, 0, 0]) == Err(BadPointer), 37, "stats into unmapped memory");
    // A doorbell forged by a process never reaches the kernels' protocol.
    let forged = Doorbell::Data { to: ConnId::from_raw(u64::from(server.handle())), position: 8 };
    let n = Notification::new(MailboxOpcode::SOCKET_DOORBELL, forged.encode()).expect("60 bits");
    ensure!(unimem_user::notify(board_id()?, n).is_err(), 38, "a process rang a socket doorbell");
    let r = server.read(&mut buf);
    ensure!(r == Err(Error::Syscall(WouldBlock)), 39, "the forged doorbell made data: {:?}", r);
    // A closed connection: its handle is gone, the peer reads the end and cannot write.
    client.write_all(b"last")?;
    drop(client);
    ensure!(call(nr::SOCKET_WRITE, [h, data, 4, 0]) == Err(BadArgument), 40, "a closed handle wrote");
    server.set_nonblocking(false);
    let n = server.read(&mut buf)?;
    ensure!(&buf[..n] == b"last", 41, "the data written before close: {:?}", &buf[..n]);
    ensure!(server.read(&mut buf)? == 0, 42, "no end of stream after close");
    let r = server.write(b"x");
    ensure!(r == Err(Error::Syscall(ConnectionReset)), 43, "a write to a closed peer: {:?}", r);
    ensure!(server.readiness()? & ready::HANGUP != 0, 44, "no hang-up after close");
    // Shut down writing: further writes are refused.
    let (mut c2, mut s2) = local_pair(&listener, port)?;
    c2.shutdown(Shutdown::Write)?;
    ensure!(c2.write(b"x") == Err(Error::Syscall(Closed)), 45, "a write after a write shutdown");
    ensure!(s2.read(&mut buf)? == 0, 46, "no end of stream after a write shutdown");
    s2.write_all(b"still")?;
    let n = c2.read(&mut buf)?;
    ensure!(&buf[..n] == b"still", 47, "the other direction after a shutdown: {:?}", &buf[..n]);
    let s = socket::stats()?;
    ensure!(s.connections == 4 && s.bytes_out == 12 && s.bytes_in == 12, 48, "statistics {:?}", s);
    log!("sock-check: every bad input refused, nothing lost ({:?})", s);
    Ok(0)
}

fn owner(port: u16) -> Result<u64, Error> {
    let channel = MailboxOpcode::user(OWNER_CHANNEL).expect("a user channel");
    register(channel)?;
    let listener = Listener::bind(port)?;
    let (mut client, mut server) = local_pair(&listener, port)?;
    client.write_all(b"mine alone")?;
    log!("sock-check owner: ready on port {}", port);
    let (n, _) = receive(Some(channel), true)?;
    ensure!(n.payload() == 0, 10, "the intruder reports {} failed checks", n.payload());
    let mut buf = [0u8; 32];
    let got = server.read(&mut buf)?;
    ensure!(&buf[..got] == b"mine alone", 11, "the owner's bytes were touched: {:?}", &buf[..got]);
    server.write_all(b"still mine")?;
    let got = client.read(&mut buf)?;
    ensure!(&buf[..got] == b"still mine", 12, "the owner's connection is broken: {:?}", &buf[..got]);
    Ok(0)
}

fn intruder() -> Result<u64, Error> {
    let mut failures = 0u64;
    let mut buf = [0u8; 16];
    for index in 0..proto::socket::MAX_CONNECTIONS as u8 {
        for generation in 0..4u16 {
            for handle in
                [Handle::Connection(ConnId { index, generation }), Handle::Listener(ConnId { index, generation })]
            {
                let h = handle.raw();
                let refused = |r: Result<u64, SysError>| r == Err(SysError::BadArgument);
                let all = refused(call(nr::SOCKET_READ, [h, buf.as_mut_ptr() as u64, 16, NONBLOCKING]))
                    && refused(call(nr::SOCKET_WRITE, [h, buf.as_ptr() as u64, 16, NONBLOCKING]))
                    && refused(call(nr::SOCKET_SHUTDOWN, [h, 3, 0, 0]))
                    && refused(call(nr::SOCKET_ACCEPT, [h, NONBLOCKING, 0, 0]))
                    && refused(call(nr::SOCKET_CLOSE, [h, 0, 0, 0]));
                let mut entry = [PollEntry { handle: h as u32, interest: ready::READABLE | ready::WRITABLE, ready: 0 }];
                let polled = socket::poll(&mut entry, 0).is_ok() && entry[0].ready == ready::INVALID;
                if !all || !polled {
                    log!("sock-check intruder: handle {:#x} of another process answered", h);
                    failures += 1;
                }
            }
        }
    }
    let n = Notification::new(MailboxOpcode::user(OWNER_CHANNEL).expect("a user channel"), failures).expect("fits");
    notify_when_ready(board_id()?, n, 20_000_000)?;
    Ok(if failures == 0 { 0 } else { 10 })
}

fn sink(port: u16) -> Result<u64, Error> {
    let listener = Listener::bind(port)?;
    let (mut stream, _) = listener.accept()?;
    let buf = sys::map_buffer(64 * 1024)?;
    let mut read = 0;
    loop {
        let n = stream.read(buf)?;
        if n == 0 {
            log!("sock-check sink: the stream ended; it should have been killed first");
            return Ok(10);
        }
        if read < SINK_MARK && read + n >= SINK_MARK {
            // The runner kills this node when it sees this line (`cluster-2-sockets-kill`).
            log!("sock-check sink: 1 MiB in, reading on");
        }
        read += n;
    }
}

/// What the sink reads before it says so.
const SINK_MARK: usize = 1 << 20;

fn writer(node: u16, port: u16) -> Result<u64, Error> {
    let mut stream = socket::connect_when_listening(node, port, 20_000_000)?;
    let buf = sys::map_buffer(64 * 1024)?;
    let mut written = 0u64;
    let failure = loop {
        match stream.write(buf) {
            Ok(n) => written += n as u64,
            Err(e) => break e,
        }
    };
    ensure!(failure == Error::Syscall(SysError::ConnectionReset), 10, "the write failed with {:?}", failure);
    let mut tail = [0u8; 16];
    let r = stream.read(&mut tail);
    ensure!(matches!(r, Ok(0) | Err(Error::Syscall(SysError::ConnectionReset))), 11, "then a read: {:?}", r);
    log!("sock-check writer: {} bytes written, then {:?}", written, failure);
    Ok(0)
}
