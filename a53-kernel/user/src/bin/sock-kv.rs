//! `sock-kv`: a small key-value server and its clients over sockets, memcached-like
//! (`docs/hw/sockets.md`).
//!
//! `cargo xtask run sock-kv --nodes 4 -- [OPERATIONS] [CLIENTS]`
//!
//! The server runs on the last node; CLIENTS clients (default 3, at most 8) run on the other
//! nodes in turn (on a single node, beside it). Each client does OPERATIONS (default 200) set,
//! get and delete requests on keys of its own and checks every reply against what it expects;
//! then it reports to this launcher over a socket. The launcher ends the server with `QUIT`.
//!
//! The protocol is text, one request per line:
//!
//! | request | replies |
//! |---|---|
//! | `SET key value` | `OK` |
//! | `GET key` | `VALUE value`, `MISSING` |
//! | `DEL key` | `DELETED`, `MISSING` |
//! | `QUIT` | `BYE`, and the server ends |
//! | anything else, or a key or value too long | `ERROR` |
//!
//! Keys are up to 32 bytes and values up to 64; the server holds 256 keys (then `ERROR`). It
//! serves every connection from one non-blocking loop over `poll`.
//!
//! Exit status: 0; 1 = bad argument; 10.. = a check failed (the log says which).
#![no_std]
#![no_main]

use core::fmt::Write as _;
use unimem_user::args::socket_part::{Part, pack, unpack};
use unimem_user::socket::{self, Entry, Listener, Ready, Stream};
use unimem_user::{Error, SysError, arguments, board_count, board_id, ensure, log, remote_spawn, sys};

unimem_user::entry!(main);

const PORT: u16 = 11211;
const REPORT_PORT: u16 = 11212;
const SERVER: u8 = 1;
const CLIENT: u8 = 2;
const MAX_CLIENTS: u32 = 8;
const LINE: usize = 128;
const KEYS: usize = 256;
const KEY_MAX: usize = 32;
const VALUE_MAX: usize = 64;
const CONNECTIONS: usize = 16;

fn main() -> Result<u64, Error> {
    match sys::thread_argument() {
        Ok(arg) => match unpack(arg) {
            Part { role: SERVER, port, .. } => server(port),
            // The launcher's node travels in `port`; `count` is id << 16 | operations.
            Part { role: CLIENT, port: launcher, node, count } => client(node, launcher, count >> 16, count & 0xffff),
            _ => {
                log!("argument {:#x} is no part", arg);
                Ok(1)
            }
        },
        Err(Error::NoArgument) => launcher(),
        Err(e) => Err(e),
    }
}

fn launcher() -> Result<u64, Error> {
    let args = arguments()?;
    let operations = if args.count() > 0 { args.number(0)? } else { 200 };
    let clients = if args.count() > 1 { args.number(1)? } else { 3 };
    if !(1..=0xffff).contains(&operations) || !(1..=u64::from(MAX_CLIENTS)).contains(&clients) {
        log!("usage: sock-kv [OPERATIONS 1..=65535] [CLIENTS 1..=8]");
        return Ok(1);
    }
    let (me, nodes) = (board_id()?, board_count()?);
    let server_node = nodes - 1;
    let reports = Listener::bind(REPORT_PORT)?;
    remote_spawn(
        env!("CARGO_BIN_NAME"),
        pack(Part { role: SERVER, port: PORT, node: 0, count: 0 }).expect("fits"),
        server_node,
    )?;
    for id in 0..clients as u32 {
        let node = if nodes == 1 { 0 } else { (id % u32::from(nodes - 1)) as u16 };
        let part = Part { role: CLIENT, port: me, node: server_node, count: id << 16 | operations as u32 };
        remote_spawn(env!("CARGO_BIN_NAME"), pack(part).expect("fits"), node)?;
    }
    log!("sock-kv: server on node {}, {} clients doing {} operations each", server_node, clients, operations);
    let mut failed = 0;
    for _ in 0..clients {
        let (mut report, from) = reports.accept()?;
        let mut line = [0u8; LINE];
        let text = read_line(&mut report, &mut line)?;
        log!("  node {}: {}", from, text);
        if !text.starts_with("OK") {
            failed += 1;
        }
    }
    let mut server = Stream::connect(server_node, PORT)?;
    let mut line = [0u8; LINE];
    ensure!(request(&mut server, "QUIT", &mut line)? == "BYE", 10, "the server did not say BYE");
    ensure!(failed == 0, 11, "sock-kv: {} client(s) failed", failed);
    log!("sock-kv: every reply of every client was right");
    Ok(0)
}

/// Reads one line (without its newline), a byte at a time: requests and replies are short.
fn read_line<'a>(stream: &mut Stream, buf: &'a mut [u8; LINE]) -> Result<&'a str, Error> {
    let mut len = 0;
    loop {
        let mut byte = [0u8; 1];
        match stream.read(&mut byte)? {
            0 => return Err(Error::Syscall(SysError::ConnectionReset)),
            _ if byte[0] == b'\n' => break,
            _ if len == LINE => return Err(Error::Unsupported),
            _ => {
                buf[len] = byte[0];
                len += 1;
            }
        }
    }
    core::str::from_utf8(&buf[..len]).map_err(|_| Error::Unsupported)
}

fn request<'a>(stream: &mut Stream, line: &str, reply: &'a mut [u8; LINE]) -> Result<&'a str, Error> {
    stream.write_all(line.as_bytes())?;
    stream.write_all(b"\n")?;
    read_line(stream, reply)
}

/// A line of at most `LINE` bytes, built with `write!`.
struct Text(heapless::String<LINE>);

impl Text {
    fn new(args: core::fmt::Arguments<'_>) -> Self {
        let mut s = heapless::String::new();
        let _ = s.write_fmt(args);
        Self(s)
    }
}

fn client(server: u16, launcher: u16, id: u32, operations: u32) -> Result<u64, Error> {
    let outcome = exercise(server, id, operations);
    let mut report = socket::connect_when_listening(launcher, REPORT_PORT, 20_000_000)?;
    let text = match outcome {
        None => Text::new(format_args!("OK client {} did {} operations\n", id, operations)),
        Some(why) => Text::new(format_args!("FAIL client {}: {}\n", id, why.0.as_str())),
    };
    report.write_all(text.0.as_bytes())?;
    Ok(0)
}

/// Sets, gets and deletes keys of its own, and checks every reply; why it failed, if it did.
fn exercise(server: u16, id: u32, operations: u32) -> Option<Text> {
    let fail = |e: Error| Some(Text::new(format_args!("{:?}", e)));
    let mut stream = match socket::connect_when_listening(server, PORT, 20_000_000) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let mut present = [None::<u32>; 16];
    let mut reply = [0u8; LINE];
    for op in 0..operations {
        let slot = (op as usize * 7) % present.len();
        let key = Text::new(format_args!("c{}-k{}", id, slot));
        let (line, expected) = match op % 4 {
            0 | 1 => {
                present[slot] = Some(op);
                (Text::new(format_args!("SET {} v{}-{}", key.0, id, op)), Text::new(format_args!("OK")))
            }
            2 => (
                Text::new(format_args!("GET {}", key.0)),
                match present[slot] {
                    Some(v) => Text::new(format_args!("VALUE v{}-{}", id, v)),
                    None => Text::new(format_args!("MISSING")),
                },
            ),
            _ => (
                Text::new(format_args!("DEL {}", key.0)),
                match present[slot].take() {
                    Some(_) => Text::new(format_args!("DELETED")),
                    None => Text::new(format_args!("MISSING")),
                },
            ),
        };
        let got = match request(&mut stream, line.0.as_str(), &mut reply) {
            Ok(got) => got,
            Err(e) => return fail(e),
        };
        if got != expected.0.as_str() {
            return Some(Text::new(format_args!("`{}` got `{}`, not `{}`", line.0, got, expected.0)));
        }
    }
    let got = match request(&mut stream, "NONSENSE", &mut reply) {
        Ok(got) => got,
        Err(e) => return fail(e),
    };
    if got != "ERROR" {
        return Some(Text::new(format_args!("a bad request got `{}`", got)));
    }
    None
}

struct Store {
    keys: [[u8; KEY_MAX]; KEYS],
    key_lens: [u8; KEYS],
    values: [[u8; VALUE_MAX]; KEYS],
    value_lens: [u8; KEYS],
}

impl Store {
    fn find(&self, key: &[u8]) -> Option<usize> {
        (0..KEYS)
            .find(|&i| self.key_lens[i] as usize == key.len() && !key.is_empty() && &self.keys[i][..key.len()] == key)
    }

    fn set(&mut self, key: &[u8], value: &[u8]) -> bool {
        if key.is_empty() || key.len() > KEY_MAX || value.len() > VALUE_MAX {
            return false;
        }
        let Some(i) = self.find(key).or_else(|| (0..KEYS).find(|&i| self.key_lens[i] == 0)) else { return false };
        self.keys[i][..key.len()].copy_from_slice(key);
        self.key_lens[i] = key.len() as u8;
        self.values[i][..value.len()].copy_from_slice(value);
        self.value_lens[i] = value.len() as u8;
        true
    }

    fn value(&self, i: usize) -> &[u8] {
        &self.values[i][..self.value_lens[i] as usize]
    }

    /// The reply to one request line, and whether the server ends.
    fn serve(&mut self, line: &[u8], reply: &mut heapless::Vec<u8, { LINE + 8 }>) -> bool {
        let mut words = line.splitn(3, |&b| b == b' ');
        let (verb, key, value) = (words.next().unwrap_or(b""), words.next(), words.next());
        let answer: &[u8] = match (verb, key, value) {
            (b"SET", Some(k), Some(v)) if self.set(k, v) => b"OK",
            (b"GET", Some(k), None) => match self.find(k) {
                Some(i) => {
                    let _ = reply.extend_from_slice(b"VALUE ");
                    let _ = reply.extend_from_slice(self.value(i));
                    b""
                }
                None => b"MISSING",
            },
            (b"DEL", Some(k), None) => match self.find(k) {
                Some(i) => {
                    self.key_lens[i] = 0;
                    b"DELETED"
                }
                None => b"MISSING",
            },
            (b"QUIT", None, None) => b"BYE",
            _ => b"ERROR",
        };
        let _ = reply.extend_from_slice(answer);
        let _ = reply.push(b'\n');
        verb == b"QUIT"
    }
}

struct Client {
    stream: Stream,
    line: heapless::Vec<u8, LINE>,
}

fn server(port: u16) -> Result<u64, Error> {
    let mut store = Store {
        keys: [[0; KEY_MAX]; KEYS],
        key_lens: [0; KEYS],
        values: [[0; VALUE_MAX]; KEYS],
        value_lens: [0; KEYS],
    };
    let mut listener = Listener::bind(port)?;
    listener.set_nonblocking(true);
    let mut clients: heapless::Vec<Client, CONNECTIONS> = heapless::Vec::new();
    let mut served = 0u64;
    loop {
        let mut entries: heapless::Vec<Entry, { CONNECTIONS + 1 }> = heapless::Vec::new();
        let _ = entries.push(Entry { handle: listener.handle(), interest: Ready::READABLE, ready: 0 });
        for c in &clients {
            let _ = entries.push(Entry { handle: c.stream.handle(), interest: Ready::READABLE, ready: 0 });
        }
        socket::poll(&mut entries, u64::MAX)?;
        if entries[0].ready & Ready::READABLE != 0 && !clients.is_full() {
            let (mut stream, _) = listener.accept()?;
            stream.set_nonblocking(true);
            let _ = clients.push(Client { stream, line: heapless::Vec::new() });
        }
        let mut i = 0;
        while i < clients.len() {
            let (quit, gone) = serve_client(&mut store, &mut clients[i], &mut served)?;
            if quit {
                log!("sock-kv server: {} requests served", served);
                return Ok(0);
            }
            if gone {
                clients.swap_remove(i);
            } else {
                i += 1;
            }
        }
    }
}

/// Serves the complete lines one client sent; (QUIT came, the client is gone).
fn serve_client(store: &mut Store, c: &mut Client, served: &mut u64) -> Result<(bool, bool), Error> {
    let mut buf = [0u8; 512];
    let n = match c.stream.read(&mut buf) {
        Ok(0) | Err(Error::Syscall(SysError::ConnectionReset)) => return Ok((false, true)),
        Ok(n) => n,
        Err(Error::Syscall(SysError::WouldBlock)) => return Ok((false, false)),
        Err(e) => return Err(e),
    };
    for &b in &buf[..n] {
        if b != b'\n' {
            if c.line.push(b).is_err() {
                c.line.clear();
            }
            continue;
        }
        let mut reply = heapless::Vec::new();
        let quit = store.serve(&c.line, &mut reply);
        c.line.clear();
        *served += 1;
        c.stream.write_all(&reply)?;
        if quit {
            return Ok((true, false));
        }
    }
    Ok((false, false))
}
