//! `sock-echo`: an echo server and its client over sockets (`docs/hw/sockets.md`).
//!
//! `cargo xtask run sock-echo --nodes 2 -- [NODE] [ROUND_TRIPS]`
//!
//! Spawns the server on NODE (default: the last node), connects, sends messages of every size
//! from 1 byte to 256 KiB and checks that each comes back whole, then times ROUND_TRIPS
//! (default 200) 64-byte round trips. It ends its side with a write shutdown; the server echoes
//! what is left, closes, and the client reads the end of the stream.
//!
//! The client uses the `embedded-io` traits (`Read`, `Write`, `ReadReady`), as code written
//! for the embedded ecosystem would; the server uses the stream's own calls.
//!
//! Exit status: 0; 1 = bad argument; 10.. = a check failed (the log says which).
#![no_std]
#![no_main]

use embedded_io::{Read, ReadReady, Write};
use unimem_user::args::socket_part::{Part, pack, unpack};
use unimem_user::socket::{self, Listener, Shutdown, fill_pattern};
use unimem_user::{Error, arguments, board_count, ensure, log, remote_spawn, sys};

unimem_user::entry!(main);

const PORT: u16 = 7;
const SERVER: u8 = 1;
const BUF: usize = 64 * 1024;
const SIZES: [usize; 8] = [1, 63, 64, 1000, 4096, 65_536, 100_000, 262_144];
const MESSAGE: usize = 64;

fn main() -> Result<u64, Error> {
    match sys::thread_argument() {
        Ok(arg) => match unpack(arg) {
            Part { role: SERVER, port, .. } => server(port),
            _ => {
                log!("argument {:#x} is no part", arg);
                Ok(1)
            }
        },
        Err(Error::NoArgument) => client(),
        Err(e) => Err(e),
    }
}

/// Echoes one connection until its end.
fn server(port: u16) -> Result<u64, Error> {
    let listener = Listener::bind(port)?;
    let (mut stream, peer) = listener.accept()?;
    drop(listener);
    let buf = sys::map_buffer(BUF)?;
    let mut echoed = 0u64;
    loop {
        match stream.read(buf)? {
            0 => break,
            n => {
                stream.write_all(&buf[..n])?;
                echoed += n as u64;
            }
        }
    }
    log!("sock-echo server: echoed {} bytes to node {}", echoed, peer);
    Ok(0)
}

fn client() -> Result<u64, Error> {
    let args = arguments()?;
    let nodes = board_count()?;
    let node = if args.count() > 0 { args.number(0)? } else { u64::from(nodes - 1) };
    let trips = if args.count() > 1 { args.number(1)? } else { 200 };
    if node >= u64::from(nodes) || !(1..=100_000).contains(&trips) {
        log!("usage: sock-echo [NODE] [ROUND_TRIPS 1..=100000]");
        return Ok(1);
    }
    let node = node as u16;
    remote_spawn(
        env!("CARGO_BIN_NAME"),
        pack(Part { role: SERVER, port: PORT, node: 0, count: 0 }).expect("fits"),
        node,
    )?;
    let mut stream = socket::connect_when_listening(node, PORT, 20_000_000)?;
    let out = sys::map_buffer(BUF)?;
    let back = sys::map_buffer(BUF)?;
    for (seed, &size) in SIZES.iter().enumerate() {
        let mut position = 0;
        while position < size {
            let n = (size - position).min(BUF);
            fill_pattern(seed as u64, position as u64, &mut out[..n]);
            Write::write_all(&mut stream, &out[..n])?;
            Read::read_exact(&mut stream, &mut back[..n]).map_err(|e| match e {
                embedded_io::ReadExactError::UnexpectedEof => Error::Syscall(unimem_user::SysError::ConnectionReset),
                embedded_io::ReadExactError::Other(e) => e,
            })?;
            ensure!(back[..n] == out[..n], 10, "{} bytes at {}: the echo differs", size, position);
            position += n;
        }
    }
    ensure!(!stream.read_ready()?, 11, "bytes nobody sent are waiting");
    let mut times = [0u64; 64];
    let mut message = [0u8; MESSAGE];
    for trip in 0..trips {
        fill_pattern(99, trip * MESSAGE as u64, &mut message);
        let start = sys::time_us()?;
        Write::write_all(&mut stream, &message)?;
        let mut got = [0u8; MESSAGE];
        let mut have = 0;
        while have < MESSAGE {
            match Read::read(&mut stream, &mut got[have..])? {
                0 => return Ok(12),
                n => have += n,
            }
        }
        times[(trip % 64) as usize] = sys::time_us()? - start;
        ensure!(got == message, 13, "round trip {}: the echo differs", trip);
    }
    let kept = (trips as usize).min(times.len());
    times[..kept].sort_unstable();
    stream.shutdown(Shutdown::Write)?;
    let mut rest = [0u8; 16];
    ensure!(Read::read(&mut stream, &mut rest)? == 0, 14, "the server sent more than the echo");
    let s = socket::stats()?;
    log!("bench sock_echo_round_trip_median_us: {} us", times[kept / 2]);
    log!(
        "sock-echo: {} sizes up to {} bytes echoed whole; {}-byte round trip median {} us (last {}); {} RDMA writes",
        SIZES.len(),
        SIZES[SIZES.len() - 1],
        MESSAGE,
        times[kept / 2],
        kept,
        s.rdma_writes
    );
    Ok(0)
}
