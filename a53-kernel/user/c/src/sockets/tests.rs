//! The socket layer on the host: over the fake network (`fake`) the calls as a C program makes
//! them, and the exports' pointer handling over the real (absent) kernel.

use std::vec;
use std::vec::Vec;

use super::addr::*;
use super::calls::fcntl::{F_GETFL, F_SETFL, O_NONBLOCK, O_RDWR};
use super::fake::FakeNet;
use super::*;
use proto::socket::IO_MAX;

/// The layer over a fake network with rings of `ring` bytes.
fn sockets(ring: usize) -> Sockets<FakeNet> {
    Sockets::new(FakeNet::new(ring))
}

/// `struct sockaddr_unimem` for `node`, `port`.
fn at(node: u32, port: u16) -> [u8; SOCKADDR_LEN] {
    SockAddr { node, port }.encode()
}

/// A listener on `port`, and a client connected to it with the server's end accepted:
/// (listener, client, server).
fn pair(s: &mut Sockets<FakeNet>, port: u16) -> (i32, i32, i32) {
    let listener = s.socket(AF_UNIMEM, SOCK_STREAM, 0).unwrap();
    s.bind(listener, Some(&at(UNIMEM_NODE_ANY, port))).unwrap();
    s.listen(listener).unwrap();
    let client = s.socket(AF_UNIMEM, SOCK_STREAM, 0).unwrap();
    s.connect(client, Some(&at(0, port))).unwrap();
    let (server, _) = s.accept(listener).unwrap();
    (listener, client, server)
}

fn send(s: &mut Sockets<FakeNet>, fd: i32, bytes: &[u8], flags: i32) -> Result<usize, Errno> {
    s.send(fd, bytes.as_ptr(), bytes.len(), flags)
}

fn recv(s: &mut Sockets<FakeNet>, fd: i32, len: usize, flags: i32) -> Result<Vec<u8>, Errno> {
    let mut buf = vec![0u8; len];
    // SAFETY: `buf` is `len` writable bytes.
    let n = unsafe { s.recv(fd, buf.as_mut_ptr(), len, flags) }?;
    buf.truncate(n);
    Ok(buf)
}

fn poll(s: &mut Sockets<FakeNet>, fds: &[(i32, i16)], timeout_ms: i32) -> (Result<usize, Errno>, Vec<i16>) {
    let mut p: Vec<PollFd> = fds.iter().map(|&(fd, events)| PollFd { fd, events, revents: -1 }).collect();
    let n = s.poll(&mut p, timeout_ms);
    (n, p.iter().map(|p| p.revents).collect())
}

#[test]
fn a_server_and_a_client_talk_through_the_lowest_free_descriptors() {
    let mut s = sockets(1 << 20);
    let (listener, client, server) = pair(&mut s, 7);
    assert_eq!((listener, client, server), (3, 4, 5), "after the console's 0, 1, 2");
    assert_eq!(s.sockname(listener), Ok(SockAddr { node: 0, port: 7 }));
    assert_eq!(s.peername(client), Ok(SockAddr { node: 0, port: 7 }));
    assert_eq!(s.sockname(client), Ok(SockAddr { node: 0, port: 0 }), "a connection has no port of its own");
    assert_eq!(s.sockname(server), Ok(SockAddr { node: 0, port: 7 }), "the listener's");
    assert_eq!(s.peername(server), Ok(SockAddr { node: 0, port: 0 }), "the node only");
    assert_eq!(s.getsockopt(listener, SOL_SOCKET, SO_ACCEPTCONN), Ok(1));
    assert_eq!(s.getsockopt(client, SOL_SOCKET, SO_ACCEPTCONN), Ok(0));
    assert_eq!(s.getsockopt(client, SOL_SOCKET, SO_TYPE), Ok(SOCK_STREAM));

    assert_eq!(send(&mut s, client, b"hello", 0), Ok(5));
    assert_eq!(recv(&mut s, server, 64, 0).unwrap(), b"hello");
    // SAFETY: a live 5-byte buffer.
    assert_eq!(s.write(server, b"world".as_ptr(), 5), Ok(5));
    let mut back = [0u8; 5];
    // SAFETY: `back` is 5 writable bytes.
    assert_eq!(unsafe { s.read(client, back.as_mut_ptr(), 5) }, Ok(5));
    assert_eq!(&back, b"world");

    s.shutdown(client, SHUT_WR).unwrap();
    assert_eq!(recv(&mut s, server, 64, 0).unwrap(), b"", "the end of the stream");
    for fd in [server, client, listener] {
        s.close(fd).unwrap();
    }
    assert_eq!(s.net().connections(), 0);
    assert_eq!(s.socket(AF_UNIMEM, SOCK_STREAM, 0), Ok(3), "the numbers are free again");
}

#[test]
fn writes_are_cut_to_the_kernels_largest_and_a_blocking_write_takes_everything() {
    let mut s = sockets(4 * IO_MAX as usize);
    let (_, client, server) = pair(&mut s, 7);
    let data: Vec<u8> = (0..3 * IO_MAX as usize + 5).map(|i| (i % 251) as u8).collect();
    assert_eq!(send(&mut s, client, &data, 0), Ok(data.len()));
    assert!(s.net().writes.iter().all(|&w| w <= IO_MAX as usize), "{:?}", s.net().writes);
    let got = recv(&mut s, server, data.len(), MSG_WAITALL).unwrap();
    assert!(got == data, "MSG_WAITALL reads every piece, byte for byte");
}

#[test]
fn a_non_blocking_socket_takes_what_fits_and_says_eagain() {
    let mut s = sockets(1000);
    let (_, client, server) = pair(&mut s, 7);
    assert_eq!(s.fcntl(client, F_GETFL, 0), Ok(O_RDWR));
    assert_eq!(s.fcntl(client, F_SETFL, i64::from(O_RDWR | O_NONBLOCK)), Ok(0));
    assert_eq!(s.fcntl(client, F_GETFL, 0), Ok(O_RDWR | O_NONBLOCK));
    assert_eq!(send(&mut s, client, &[7; 2500], 0), Ok(1000), "what the ring holds");
    assert_eq!(send(&mut s, client, &[7; 10], 0), Err(Errno::EWOULDBLOCK));
    assert_eq!(recv(&mut s, client, 10, 0), Err(Errno::EAGAIN), "nothing arrived");
    assert_eq!(recv(&mut s, server, 10, MSG_DONTWAIT).unwrap(), [7; 10], "MSG_DONTWAIT on a blocking socket");
    assert_eq!(send(&mut s, client, &[8; 20], MSG_NOSIGNAL), Ok(10), "the room that reading made");
    assert_eq!(recv(&mut s, server, 2000, 0).unwrap().len(), 1000);
    assert_eq!(recv(&mut s, server, 10, MSG_DONTWAIT), Err(Errno::EAGAIN));
    assert_eq!(recv(&mut s, server, 10, MSG_DONTWAIT | MSG_WAITALL), Err(Errno::EAGAIN), "no waiting");

    let nb = s.socket(AF_UNIMEM, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0).unwrap();
    assert_eq!(s.fcntl(nb, F_GETFL, 0), Ok(O_RDWR | O_NONBLOCK));
    s.listen(nb).unwrap();
    assert_eq!(s.accept(nb), Err(Errno::EAGAIN), "nobody connecting");
}

#[test]
fn the_errors_a_c_programmer_expects() {
    let mut s = sockets(1 << 16);
    assert_eq!(s.socket(AF_INET, SOCK_STREAM, 0), Err(Errno::EAFNOSUPPORT));
    assert_eq!(s.socket(AF_UNIMEM, SOCK_DGRAM, 0), Err(Errno::EPROTOTYPE));
    assert_eq!(s.socket(AF_UNIMEM, SOCK_STREAM, 6), Err(Errno::EPROTONOSUPPORT));
    let (listener, client, server) = pair(&mut s, 7);
    let fresh = s.socket(AF_UNIMEM, SOCK_STREAM, 0).unwrap();

    assert_eq!(s.close(50), Err(Errno::EBADF));
    assert_eq!(s.close(-1), Err(Errno::EBADF));
    assert_eq!(send(&mut s, 50, b"x", 0), Err(Errno::EBADF));
    assert_eq!(send(&mut s, 1, b"x", 0), Err(Errno::ENOTSOCK), "the console is no socket");
    assert_eq!(s.getsockopt(2, SOL_SOCKET, SO_ERROR), Err(Errno::ENOTSOCK));

    let mut inet = at(0, 7);
    inet[..2].copy_from_slice(&(AF_INET as u16).to_ne_bytes());
    assert_eq!(s.connect(fresh, Some(&inet)), Err(Errno::EAFNOSUPPORT));
    assert_eq!(s.connect(fresh, None), Err(Errno::EFAULT));
    assert_eq!(s.connect(fresh, Some(&at(0, 7)[..8])), Err(Errno::EINVAL), "too short");
    assert_eq!(s.connect(fresh, Some(&at(0, 9))), Err(Errno::ECONNREFUSED), "nobody listens");
    assert_eq!(s.connect(fresh, Some(&at(0, 0))), Err(Errno::ECONNREFUSED), "port 0");
    assert_eq!(s.connect(fresh, Some(&at(2, 7))), Err(Errno::EHOSTUNREACH), "no node 2 of 2");
    s.net().unreachable.push(1);
    assert_eq!(s.connect(fresh, Some(&at(1, 7))), Err(Errno::EHOSTUNREACH), "node 1 died");
    assert_eq!(s.connect(client, Some(&at(0, 7))), Err(Errno::EISCONN));
    assert_eq!(s.connect(listener, Some(&at(0, 7))), Err(Errno::EISCONN));

    assert_eq!(send(&mut s, client, &[], 0), Ok(0));
    assert_eq!(s.send(client, core::ptr::null(), 3, 0), Err(Errno::EFAULT));
    assert_eq!(s.send(client, 0x10 as *const u8, 3, 0), Err(Errno::EFAULT), "the kernel refused it");
    assert_eq!(send(&mut s, client, b"abc", 0x2), Err(Errno::EOPNOTSUPP), "MSG_PEEK");
    assert_eq!(recv(&mut s, fresh, 3, 0), Err(Errno::ENOTCONN));
    assert_eq!(recv(&mut s, listener, 3, 0), Err(Errno::ENOTCONN));
    assert_eq!(s.peername(fresh), Err(Errno::ENOTCONN));
    assert_eq!(s.shutdown(listener, SHUT_RDWR), Err(Errno::ENOTCONN));
    assert_eq!(s.shutdown(server, 7), Err(Errno::EINVAL));
    assert_eq!(s.accept(fresh), Err(Errno::EINVAL));
    assert_eq!(s.listen(client), Err(Errno::EINVAL));
    assert_eq!(s.listen(listener), Ok(()), "again: nothing changes");

    assert_eq!(s.bind(listener, Some(&at(0, 8))), Err(Errno::EINVAL), "listening already");
    assert_eq!(s.bind(fresh, Some(&at(1, 8))), Err(Errno::EADDRNOTAVAIL), "another node's address");
    assert_eq!(s.bind(fresh, Some(&at(0, 7))), Err(Errno::EADDRINUSE), "this process listens there");
    s.bind(fresh, Some(&at(0, 8))).unwrap();
    assert_eq!(s.bind(fresh, Some(&at(0, 9))), Err(Errno::EINVAL), "bound already");
    s.net().listen(8).unwrap(); // another process takes the port meanwhile
    assert_eq!(s.listen(fresh), Err(Errno::EADDRINUSE));

    assert_eq!(s.getsockopt(client, 6, SO_ERROR), Err(Errno::ENOPROTOOPT), "IPPROTO_TCP");
    assert_eq!(s.getsockopt(client, SOL_SOCKET, 99), Err(Errno::ENOPROTOOPT));
    let one = 1i32.to_ne_bytes();
    assert_eq!(s.setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, Some(&one)), Ok(()));
    assert_eq!(s.setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, Some(&one[..2])), Err(Errno::EINVAL));
    assert_eq!(s.setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, None), Err(Errno::EFAULT));
    assert_eq!(s.setsockopt(listener, SOL_SOCKET, 99, Some(&one)), Err(Errno::ENOPROTOOPT));
    assert_eq!(s.fcntl(client, 99, 0), Err(Errno::EINVAL));
    assert_eq!(s.fcntl(77, F_GETFL, 0), Err(Errno::EBADF));
}

#[test]
fn every_descriptor_taken_is_emfile() {
    let mut s = sockets(1 << 16);
    for fd in fds::CONSOLE..fds::OPEN_MAX as i32 {
        assert_eq!(s.socket(AF_UNIMEM, SOCK_STREAM, 0), Ok(fd));
    }
    assert_eq!(s.socket(AF_UNIMEM, SOCK_STREAM, 0), Err(Errno::EMFILE));
    assert_eq!(s.event_fd(), Err(Errno::EMFILE));
    s.close(40).unwrap();
    assert_eq!(s.event_fd(), Ok(40));
}

#[test]
fn an_accept_with_no_descriptor_left_takes_no_connection() {
    let mut s = sockets(1 << 16);
    let (listener, _, _) = pair(&mut s, 7);
    let waiting = s.socket(AF_UNIMEM, SOCK_STREAM, 0).unwrap();
    s.connect(waiting, Some(&at(0, 7))).unwrap();
    while s.socket(AF_UNIMEM, SOCK_STREAM, 0).is_ok() {}
    assert_eq!(s.accept(listener), Err(Errno::EMFILE));
    s.close(waiting).unwrap();
    assert!(s.accept(listener).is_ok(), "the connection still waited");
}

#[test]
fn a_peer_that_closes_ends_the_stream_then_writes_are_epipe() {
    let mut s = sockets(1 << 16);
    let (_, client, server) = pair(&mut s, 7);
    send(&mut s, server, b"bye", 0).unwrap();
    s.close(server).unwrap();
    let events = POLLIN | POLLOUT | POLLRDHUP;
    let (n, revents) = poll(&mut s, &[(client, events)], 0);
    assert_eq!((n, revents[0]), (Ok(1), POLLIN | POLLOUT | POLLRDHUP), "the peer's end, not yet POLLHUP");
    assert_eq!(recv(&mut s, client, 10, 0).unwrap(), b"bye");
    assert_eq!(recv(&mut s, client, 10, 0).unwrap(), b"", "then the end");
    assert_eq!(send(&mut s, client, b"x", 0), Err(Errno::EPIPE));
    assert_eq!(s.getsockopt(client, SOL_SOCKET, SO_ERROR), Ok(0), "closed, not broken");
    s.shutdown(client, SHUT_WR).unwrap();
    let (_, revents) = poll(&mut s, &[(client, POLLIN)], 0);
    assert_eq!(revents[0], POLLIN | POLLHUP, "over both ways");
}

#[test]
fn shutdowns_end_reading_with_the_end_of_the_stream_and_writing_with_epipe() {
    let mut s = sockets(1 << 16);
    let (_, client, server) = pair(&mut s, 7);
    send(&mut s, server, b"unread", 0).unwrap();
    s.shutdown(client, SHUT_RD).unwrap();
    assert_eq!(recv(&mut s, client, 10, 0).unwrap(), b"", "as on Linux");
    let (_, revents) = poll(&mut s, &[(server, POLLIN | POLLOUT | POLLRDHUP)], 0);
    assert_eq!(revents[0], POLLOUT, "a write fails at once; the client's stream goes on");
    let (n, _) = poll(&mut s, &[(server, POLLIN)], 500);
    assert_eq!((n, s.net().timeouts.last()), (Ok(0), Some(&500_000)), "the kernel's wait goes on: no event");
    assert_eq!(send(&mut s, server, b"more", 0), Err(Errno::EPIPE), "nobody reads");
    s.shutdown(client, SHUT_WR).unwrap();
    assert_eq!(send(&mut s, client, b"x", 0), Err(Errno::EPIPE));
}

#[test]
fn a_broken_connection_is_econnreset_once_then_epipe() {
    let mut s = sockets(1 << 16);
    let (_, client, server) = pair(&mut s, 7);
    let (_, other, _) = pair(&mut s, 8);
    let handle = |s: &mut Sockets<FakeNet>, fd| match s.fds.get(fd).unwrap().kind {
        fds::Kind::Connected(c) => c.handle,
        k => panic!("{k:?}"),
    };
    let h = handle(&mut s, client);
    s.net().break_connection(h);
    let (_, revents) = poll(&mut s, &[(client, POLLIN), (server, POLLOUT)], 0);
    assert_eq!(revents, [POLLIN | POLLERR | POLLHUP, POLLOUT | POLLERR | POLLHUP]);
    assert_eq!(s.getsockopt(client, SOL_SOCKET, SO_ERROR), Ok(Errno::ECONNRESET.0));
    assert_eq!(s.getsockopt(client, SOL_SOCKET, SO_ERROR), Ok(0), "SO_ERROR clears it");
    assert_eq!(send(&mut s, client, b"x", 0), Err(Errno::EPIPE), "reported already");
    assert_eq!(send(&mut s, server, b"x", 0), Err(Errno::ECONNRESET));
    assert_eq!(send(&mut s, server, b"x", 0), Err(Errno::EPIPE));
    let h = handle(&mut s, other);
    s.net().break_connection(h);
    assert_eq!(recv(&mut s, other, 1, 0), Err(Errno::ECONNRESET));
    assert_eq!(s.getsockopt(other, SOL_SOCKET, SO_ERROR), Ok(0), "the read reported it");
}

#[test]
fn poll_covers_sockets_the_console_and_the_event_counter() {
    let mut s = sockets(1 << 16);
    let (listener, client, server) = pair(&mut s, 7);
    let waiting = s.socket(AF_UNIMEM, SOCK_STREAM, 0).unwrap();
    s.connect(waiting, Some(&at(0, 7))).unwrap();
    let fresh = s.socket(AF_UNIMEM, SOCK_STREAM, 0).unwrap();
    let events = s.event_fd().unwrap();
    assert_eq!(s.event_fd(), Ok(events), "one per process");
    send(&mut s, client, b"ping", 0).unwrap();
    let asked = [
        (-1, POLLIN),
        (0, POLLIN | POLLOUT),
        (1, POLLIN | POLLOUT),
        (listener, POLLIN),
        (server, POLLIN | POLLOUT),
        (client, POLLIN),
        (fresh, POLLIN),
        (events, POLLIN),
        (99, POLLIN),
    ];
    let (n, revents) = poll(&mut s, &asked, -1);
    let expected = [0, POLLIN, POLLOUT, POLLIN, POLLIN | POLLOUT, 0, POLLHUP, POLLNVAL, POLLNVAL];
    assert_eq!(revents, expected, "an event counter without an 'e' opcode is POLLNVAL");
    assert_eq!(n, Ok(7));

    s.net().events = Some(0);
    let (n, revents) = poll(&mut s, &[(events, POLLIN), (client, POLLIN)], 250);
    assert_eq!((n, revents), (Ok(0), vec![0, 0]));
    assert_eq!(s.net().timeouts, [250_000], "one wait, in microseconds, for all of them");
    s.net().events = Some(2);
    let (n, revents) = poll(&mut s, &[(events, POLLIN), (client, POLLIN)], 250);
    assert_eq!((n, revents), (Ok(1), vec![POLLIN, 0]));
    let (_, revents) = poll(&mut s, &[(1, POLLOUT), (client, POLLIN)], -1);
    assert_eq!(revents, [POLLOUT, 0]);
    assert_eq!(s.net().timeouts.last(), Some(&0), "the console was ready: the kernel is not waited on");

    let (n, _) = poll(&mut s, &[(fresh, 0)], 100);
    assert_eq!(n, Ok(1), "POLLHUP is always reported");
    let (n, _) = poll(&mut s, &[(-1, POLLIN)], 100);
    assert_eq!((n, s.net().slept.as_slice()), (Ok(0), &[100_000][..]), "nothing to watch: a sleep");

    let many: Vec<(i32, i16)> = (0..65).map(|_| (client, POLLIN)).collect();
    assert_eq!(poll(&mut s, &many, 0).0, Err(Errno::EINVAL), "more than the kernel's 64");
}

#[test]
fn the_event_counter_reads_as_an_eventfd() {
    let mut s = sockets(1 << 16);
    let events = s.event_fd().unwrap();
    let mut value = [0u8; 8];
    // SAFETY: `value` is 8 writable bytes; the others are refused before any write.
    unsafe {
        assert_eq!(s.read(events, value.as_mut_ptr(), 8), Err(Errno::EINVAL), "no 'e' opcode");
        s.net().events = Some(3);
        assert_eq!(s.read(events, value.as_mut_ptr(), 4), Err(Errno::EINVAL), "a uint64_t or nothing");
        assert_eq!(s.read(events, core::ptr::null_mut(), 8), Err(Errno::EFAULT));
        assert_eq!(s.read(events, value.as_mut_ptr(), 8), Ok(8));
        assert_eq!(u64::from_ne_bytes(value), 3);
        s.net().events = Some(0);
        s.fcntl(events, F_SETFL, i64::from(O_NONBLOCK)).unwrap();
        assert_eq!(s.read(events, value.as_mut_ptr(), 8), Err(Errno::EAGAIN));
    }
    assert_eq!(s.write(events, value.as_ptr(), 8), Err(Errno::EINVAL));
    assert_eq!(send(&mut s, events, &value, 0), Err(Errno::ENOTSOCK));
    assert_eq!(s.close(events), Ok(()));
    assert_eq!(s.close(1), Ok(()), "the console stays");
    assert!(s.fds.get(1).is_ok());
}

#[test]
fn listen_without_a_port_takes_a_free_ephemeral_one() {
    let mut s = sockets(1 << 16);
    let first = *calls::EPHEMERAL_PORTS.start();
    s.net().listen(first).unwrap(); // another process's
    let a = s.socket(AF_UNIMEM, SOCK_STREAM, 0).unwrap();
    s.listen(a).unwrap();
    assert_eq!(s.sockname(a).map(|a| a.port), Ok(first + 1));
    let b = s.socket(AF_UNIMEM, SOCK_STREAM, 0).unwrap();
    s.bind(b, Some(&at(UNIMEM_NODE_ANY, 0))).unwrap();
    assert_eq!(s.sockname(b).map(|a| a.port), Ok(0), "bound to any port: none yet");
    s.listen(b).unwrap();
    assert_eq!(s.sockname(b).map(|a| a.port), Ok(first + 2));
}

/// The exports over the host's kernel, which has no calls: what they decide before asking it.
#[test]
fn the_exports_handle_c_pointers_and_return_minus_errno() {
    let fd = unimem_sock_socket(AF_UNIMEM, SOCK_STREAM, 0);
    assert_eq!(fd, 3);
    assert_eq!(unimem_sock_socket(AF_INET, SOCK_STREAM, 0), -Errno::EAFNOSUPPORT.0);
    // SAFETY: every pointer is NULL or names live memory of the size given.
    unsafe {
        assert_eq!(unimem_sock_connect(fd, core::ptr::null(), 16), -Errno::EFAULT.0);
        let mut value = 0i32;
        let mut len = 4u32;
        let (v, l) = ((&raw mut value).cast(), &raw mut len);
        assert_eq!(unimem_sock_getsockopt(fd, SOL_SOCKET, SO_TYPE, v, l), 0);
        assert_eq!((value, len), (SOCK_STREAM, 4));
        l.write(2);
        assert_eq!(unimem_sock_getsockopt(fd, SOL_SOCKET, SO_TYPE, v, l), -Errno::EINVAL.0);
        assert_eq!(unimem_sock_getsockopt(fd, SOL_SOCKET, SO_TYPE, v, core::ptr::null_mut()), -Errno::EFAULT.0);
        assert_eq!(unimem_sock_getsockopt(9, SOL_SOCKET, SO_TYPE, v, core::ptr::null_mut()), -Errno::EBADF.0);
        assert_eq!(unimem_sock_getpeername(fd, core::ptr::null_mut(), l), -Errno::ENOTCONN.0, "its own error first");
        assert_eq!(unimem_sock_poll(core::ptr::null_mut(), 1, 0), -Errno::EFAULT.0);
        assert_eq!(unimem_sock_poll(core::ptr::null_mut(), 0, 0), 0, "nothing, at once");
        let mut byte = 0u8;
        assert_eq!(unimem_sock_read(1, (&raw mut byte).cast(), 1), -i64::from(Errno::EBADF.0), "the runtime's");
        assert_eq!(unimem_sock_recv(fd, (&raw mut byte).cast(), 1, 0), -i64::from(Errno::ENOTCONN.0));
    }
    assert_eq!(unimem_sock_fcntl(fd, F_SETFL, i64::from(O_NONBLOCK)), 0);
    assert_eq!(unimem_sock_fcntl(fd, F_GETFL, 0), O_RDWR | O_NONBLOCK);
    assert_eq!(unimem_sock_event_fd(), 4);
    assert_eq!(unimem_sock_close(fd), 0);
    assert_eq!(unimem_sock_close(fd), -Errno::EBADF.0);
}

#[test]
fn an_address_goes_out_cut_to_the_room_given_with_its_whole_length() {
    let a = SockAddr { node: 1, port: 80 };
    let mut out = [0xffu8; 20];
    let mut len = 20u32;
    // SAFETY: `out` has `len` writable bytes.
    unsafe { address_out(out.as_mut_ptr().cast(), &raw mut len, a) };
    assert_eq!((&out[..16], len), (&a.encode()[..], 16));
    assert_eq!(out[16..], [0xff; 4], "nothing past the address");
    let mut short = [0xffu8; 4];
    len = 4;
    // SAFETY: `short` has `len` writable bytes.
    unsafe { address_out(short.as_mut_ptr().cast(), &raw mut len, a) };
    assert_eq!((&short[..], len), (&a.encode()[..4], 16), "cut, and the length it would need");
    let mut buf = [0u8; SOCKADDR_LEN];
    let long = [a.encode().as_slice(), &[9; 8]].concat();
    // SAFETY: `long` is 24 readable bytes.
    let bytes = unsafe { address_in(long.as_ptr().cast(), long.len() as u32, &mut buf) };
    assert_eq!(bytes.map(SockAddr::parse), Some(Ok(a)), "a longer sockaddr (a sockaddr_storage) is fine");
}
