use super::*;
use alloc::collections::VecDeque;
use alloc::vec;
use proto::socket::{SPACE_BASE, receive_ring};

/// Two nodes' sockets and their socket spaces, with the doorbells and RDMA writes between them
/// held in flight until [`Net::settle`] delivers them in order.
struct Net {
    nodes: [Sockets; 2],
    memory: [Vec<u8>; 2],
    in_flight: VecDeque<(u16, Action)>,
    woken: Vec<(u16, usize)>,
    /// Writes fail instead of completing.
    fail_writes: bool,
}

const A: Owner = Owner { slot: 1, domain: 0x11 };
const B: Owner = Owner { slot: 2, domain: 0x22 };
const SPACE: usize = 2 * RING_BYTES as usize * MAX_CONNECTIONS;

impl Net {
    fn new() -> Self {
        let ready = |mut s: Sockets| {
            for i in 0..MAX_CONNECTIONS {
                s.rings_ready(i);
            }
            s
        };
        Self {
            nodes: [ready(Sockets::new(0)), ready(Sockets::new(1))],
            memory: [vec![0; SPACE], vec![0; SPACE]],
            in_flight: VecDeque::new(),
            woken: Vec::new(),
            fail_writes: false,
        }
    }

    fn take(&mut self, node: u16, out: Vec<Action>) {
        self.in_flight.extend(out.into_iter().map(|a| (node, a)));
    }

    /// Delivers everything in flight (and what that causes) in order.
    fn settle(&mut self) {
        while let Some((node, action)) = self.in_flight.pop_front() {
            let mut out = Vec::new();
            match action {
                Action::Notify { node: to, doorbell } => self.nodes[usize::from(to)].doorbell(node, doorbell, &mut out),
                Action::Write { node: to, local, remote, len, tag } => {
                    let (from, len) = ((local - SPACE_BASE) as usize, len as usize);
                    let at = (remote - SPACE_BASE) as usize;
                    if !self.fail_writes {
                        let bytes = self.memory[usize::from(node)][from..from + len].to_vec();
                        self.memory[usize::from(to)][at..at + len].copy_from_slice(&bytes);
                    }
                    self.nodes[usize::from(node)].completed(tag, !self.fail_writes, &mut out);
                }
                Action::Wake(slot) => self.woken.push((node, slot)),
            }
            self.take(if matches!(action, Action::Notify { .. }) { to_node(&action) } else { node }, out);
        }
    }

    fn call<R>(&mut self, node: u16, f: impl FnOnce(&mut Sockets, &mut Vec<Action>) -> R) -> R {
        let mut out = Vec::new();
        let r = f(&mut self.nodes[usize::from(node)], &mut out);
        self.take(node, out);
        r
    }

    /// Writes as much of `data` as fits; returns how much.
    fn write(&mut self, node: u16, owner: Owner, h: u64, data: &[u8]) -> Result<usize, Error> {
        let mut done = 0;
        while done < data.len() {
            let w = match self.nodes[usize::from(node)].writable(owner, h, (data.len() - done) as u32) {
                Ok(w) => w,
                Err(Error::WouldBlock) if done > 0 => break,
                Err(e) => return Err(e),
            };
            let at = (send_ring(w.index) - SPACE_BASE) as usize + w.offset as usize;
            self.memory[usize::from(node)][at..at + w.len as usize].copy_from_slice(&data[done..done + w.len as usize]);
            self.call(node, |s, out| s.written(w.index, w.len, out));
            done += w.len as usize;
        }
        Ok(done)
    }

    /// Reads what has arrived, up to `max`; `Ok(None)` at the end of the stream.
    fn read(&mut self, node: u16, owner: Owner, h: u64, max: usize) -> Result<Option<Vec<u8>>, Error> {
        let mut got = Vec::new();
        while got.len() < max {
            match self.nodes[usize::from(node)].readable(owner, h, (max - got.len()) as u32) {
                Ok(Readable::Bytes { index, offset, len }) => {
                    let at = (receive_ring(index) - SPACE_BASE) as usize + offset as usize;
                    got.extend_from_slice(&self.memory[usize::from(node)][at..at + len as usize]);
                    self.call(node, |s, out| s.consumed(index, len, out));
                }
                Ok(Readable::EndOfStream) if got.is_empty() => return Ok(None),
                Err(e) if got.is_empty() => return Err(e),
                _ => break,
            }
        }
        Ok(Some(got))
    }

    /// A listener on node 1 port 80 (B's), a connection from node 0 (A's) accepted.
    fn pair(&mut self) -> (u64, u64, u64) {
        let l = self.nodes[1].listen(B, 80).unwrap();
        let c = self.call(0, |s, out| s.connect(A, 1, 80, out)).unwrap();
        assert_eq!(self.call(0, |s, out| s.connected(A, c, out)), Ok(false));
        self.settle();
        assert_eq!(self.call(0, |s, out| s.connected(A, c, out)), Ok(true));
        let (s, node) = self.nodes[1].accept(B, l).unwrap().expect("a connection to accept");
        assert_eq!(node, 0);
        (l, c, s)
    }
}

fn to_node(action: &Action) -> u16 {
    match action {
        Action::Notify { node, .. } => *node,
        _ => unreachable!(),
    }
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

#[test]
fn a_stream_crosses_both_ways_through_ring_wraps_and_flow_control() {
    let mut net = Net::new();
    let (_, c, s) = net.pair();
    let data = pattern(5 * RING_BYTES as usize / 2 + 123, 7);
    let mut sent = 0;
    let mut received = Vec::new();
    while received.len() < data.len() {
        sent += net.write(0, A, c, &data[sent..]).unwrap_or(0);
        // A full ring: the writer must wait until the reader reads.
        assert!(sent - received.len() <= RING_BYTES as usize);
        net.settle();
        received.extend(net.read(1, B, s, 10_000).unwrap().unwrap());
        net.settle();
    }
    assert_eq!(received, data);
    // And back.
    assert_eq!(net.write(1, B, s, b"pong"), Ok(4));
    net.settle();
    assert_eq!(net.read(0, A, c, 100), Ok(Some(b"pong".to_vec())));
    let stats = net.nodes[0].stats(A);
    assert_eq!((stats.connections, stats.bytes_out, stats.bytes_in), (1, data.len() as u64, 4));
    assert!(stats.rdma_writes >= 3, "a wrapped ring takes more than one write: {stats:?}");
    assert!(net.woken.contains(&(1, B.slot)), "the reader was woken by the data");
}

#[test]
fn a_full_ring_blocks_the_writer_until_a_credit_comes() {
    let mut net = Net::new();
    let (_, c, s) = net.pair();
    assert_eq!(net.write(0, A, c, &pattern(RING_BYTES as usize + 10, 1)), Ok(RING_BYTES as usize));
    net.settle();
    assert_eq!(net.nodes[0].writable(A, c, 10), Err(Error::WouldBlock));
    assert_eq!(net.nodes[0].readiness(A, c) & ready::WRITABLE, 0);
    // Less than a quarter ring read: no credit yet.
    net.read(1, B, s, 100).unwrap();
    net.settle();
    assert_eq!(net.nodes[0].writable(A, c, 10), Err(Error::WouldBlock));
    net.read(1, B, s, RING_BYTES as usize / 4).unwrap();
    net.settle();
    assert!(net.nodes[0].writable(A, c, 10).is_ok());
    assert_ne!(net.nodes[0].readiness(A, c) & ready::WRITABLE, 0);
}

#[test]
fn close_gives_the_peer_its_data_then_the_end_and_frees_both_slots() {
    let mut net = Net::new();
    let (l, c, s) = net.pair();
    net.write(0, A, c, b"last words").unwrap();
    net.call(0, |n, out| n.close(A, c, out)).unwrap();
    net.settle();
    assert_eq!(net.read(1, B, s, 100), Ok(Some(b"last words".to_vec())));
    assert_eq!(net.read(1, B, s, 100), Ok(None), "end of stream");
    // A stopped reading: B's writes fail.
    assert_eq!(net.write(1, B, s, b"x"), Err(Error::ConnectionReset));
    assert_ne!(net.nodes[1].readiness(B, s) & ready::HANGUP, 0);
    assert_eq!(net.nodes[1].readiness(B, s) & ready::ERROR, 0, "a peer that closed broke nothing");
    assert_eq!(net.nodes[0].connections(), 0, "A's end is free once B's Fin came");
    net.call(1, |n, out| n.close(B, s, out)).unwrap();
    net.settle();
    assert_eq!(net.nodes[1].connections(), 0);
    assert_eq!(net.nodes[0].readable(A, c, 1), Err(Error::BadArgument), "a closed handle is no handle");
    net.call(1, |n, out| n.close(B, l, out)).unwrap();
    assert_eq!(net.nodes[1].accept(B, l), Err(Error::BadArgument));
}

#[test]
fn shutdown_of_writing_keeps_the_other_direction() {
    let mut net = Net::new();
    let (_, c, s) = net.pair();
    net.write(0, A, c, b"request").unwrap();
    net.call(0, |n, out| n.shutdown(A, c, shutdown::WRITE, out)).unwrap();
    net.settle();
    assert_eq!(net.write(0, A, c, b"more"), Err(Error::Closed));
    assert_ne!(net.nodes[1].readiness(B, s) & ready::ENDED, 0, "the Fin came, behind the request");
    assert_eq!(net.read(1, B, s, 100), Ok(Some(b"request".to_vec())));
    assert_eq!(net.read(1, B, s, 100), Ok(None));
    net.write(1, B, s, b"reply").unwrap();
    net.settle();
    assert_eq!(net.read(0, A, c, 100), Ok(Some(b"reply".to_vec())));
    assert_eq!(net.call(0, |n, out| n.shutdown(A, c, 0, out)), Err(Error::BadArgument));
    assert_eq!(net.call(0, |n, out| n.shutdown(A, c, 4, out)), Err(Error::BadArgument));
}

#[test]
fn a_peer_that_stops_reading_hangs_up_without_ending_its_stream() {
    let mut net = Net::new();
    let (_, c, s) = net.pair();
    net.call(1, |n, out| n.shutdown(B, s, shutdown::READ, out)).unwrap();
    net.settle();
    let r = net.nodes[0].readiness(A, c);
    assert_eq!(r & (ready::HANGUP | ready::ENDED | ready::ERROR), ready::HANGUP, "{r:#x}");
    assert_eq!(net.write(0, A, c, b"x"), Err(Error::ConnectionReset));
    net.write(1, B, s, b"still writing").unwrap();
    net.call(1, |n, out| n.shutdown(B, s, shutdown::WRITE, out)).unwrap();
    net.settle();
    assert_ne!(net.nodes[0].readiness(A, c) & ready::ENDED, 0);
    assert_eq!(net.read(0, A, c, 100), Ok(Some(b"still writing".to_vec())));
    assert_eq!(net.read(0, A, c, 100), Ok(None));
}

#[test]
fn connects_are_refused_without_a_listener_and_with_a_full_backlog() {
    let mut net = Net::new();
    let c = net.call(0, |s, out| s.connect(A, 1, 81, out)).unwrap();
    net.settle();
    assert_eq!(net.call(0, |s, out| s.connected(A, c, out)), Err(Error::ConnectionRefused));
    assert_eq!(net.nodes[0].connections(), 0, "a refused connection frees its slot");
    net.nodes[1].listen(B, 81).unwrap();
    assert_eq!(net.nodes[1].listen(A, 81), Err(Error::AddressInUse));
    assert_eq!(net.nodes[1].listen(A, 0), Err(Error::BadArgument));
    let handles: Vec<u64> = (0..=BACKLOG).map(|_| net.call(0, |s, out| s.connect(A, 1, 81, out)).unwrap()).collect();
    net.settle();
    let results: Vec<_> = handles.iter().map(|&h| net.call(0, |s, out| s.connected(A, h, out))).collect();
    assert!(results[..BACKLOG].iter().all(|r| *r == Ok(true)));
    assert_eq!(results[BACKLOG], Err(Error::ConnectionRefused));
    assert_eq!(net.nodes[1].counters().refused, 2);
}

#[test]
fn another_process_cannot_use_a_handle_and_an_exit_closes_everything() {
    let mut net = Net::new();
    let (l, c, s) = net.pair();
    let other = Owner { slot: 3, domain: 0x33 };
    assert_eq!(net.nodes[0].writable(other, c, 1), Err(Error::BadArgument));
    assert_eq!(net.nodes[1].readable(other, s, 1), Err(Error::BadArgument));
    assert_eq!(net.nodes[1].accept(other, l), Err(Error::BadArgument));
    assert_eq!(net.call(1, |n, out| n.close(other, s, out)), Err(Error::BadArgument));
    assert_eq!(net.nodes[1].readiness(other, s), ready::INVALID);
    // Same slot, a later process: a new domain, so not the owner either.
    let later = Owner { slot: A.slot, domain: 0x44 };
    assert_eq!(net.nodes[0].writable(later, c, 1), Err(Error::BadArgument));
    assert_eq!(net.nodes[0].readiness(A, u64::MAX), ready::INVALID);
    net.call(1, |n, out| n.exited(B, out));
    net.settle();
    assert_eq!(net.write(0, A, c, b"x"), Err(Error::ConnectionReset));
    assert_eq!(net.read(0, A, c, 1), Ok(None), "B's end closed: end of stream");
    net.call(0, |n, out| n.exited(A, out));
    net.settle();
    assert_eq!((net.nodes[0].connections(), net.nodes[1].connections()), (0, 0));
    assert_eq!(net.nodes[1].listen(B, 80).map(|_| ()), Ok(()), "the listener went with its process");
}

#[test]
fn strangers_and_stale_doorbells_change_nothing_and_bad_positions_reset() {
    let mut net = Net::new();
    let (_, c, s) = net.pair();
    let id_of = |h: u64| match Handle::from_raw(h) {
        Some(Handle::Connection(id)) => id,
        _ => unreachable!(),
    };
    let (ca, sb) = (id_of(c), id_of(s));
    let mut out = Vec::new();
    // From a node that is not the peer, and with a stale generation.
    net.nodes[1].doorbell(0x7, Doorbell::Data { to: sb, position: 10 }, &mut out);
    let stale = ConnId { generation: sb.generation.wrapping_sub(1), ..sb };
    net.nodes[1].doorbell(0, Doorbell::Data { to: stale, position: 10 }, &mut out);
    net.nodes[1].doorbell(0, Doorbell::Stop { to: stale }, &mut out);
    assert_eq!(net.nodes[1].counters().strays, 3);
    assert_eq!(net.nodes[1].readable(B, s, 10), Err(Error::WouldBlock));
    assert!(out.is_empty());
    // A credit for data never delivered, and data beyond the ring: protocol violations.
    net.nodes[0].doorbell(1, Doorbell::Credit { to: ca, position: 5 }, &mut out);
    assert_eq!(net.nodes[0].counters().violations, 1);
    assert_eq!(net.nodes[0].writable(A, c, 1), Err(Error::ConnectionReset));
    net.nodes[1].doorbell(0, Doorbell::Data { to: sb, position: RING_BYTES + 1 }, &mut out);
    assert_eq!(net.nodes[1].counters().violations, 1);
    assert_eq!(net.nodes[1].readable(B, s, 10), Err(Error::Closed));
}

#[test]
fn a_lost_node_resets_its_connections_and_fails_connects_to_it() {
    let mut net = Net::new();
    let (_, c, _) = net.pair();
    net.write(0, A, c, b"unsent?").unwrap();
    let pending = net.call(0, |s, out| s.connect(A, 1, 80, out)).unwrap();
    // The write stays in flight; the Connect never arrives.
    net.in_flight.retain(|(_, a)| matches!(a, Action::Write { .. }));
    let write = net.in_flight.pop_front().expect("the write in flight");
    net.call(0, |s, out| s.node_lost(1, out));
    assert_eq!(net.write(0, A, c, b"x"), Err(Error::ConnectionReset));
    assert_eq!(net.nodes[0].readable(A, c, 1), Err(Error::ConnectionReset));
    assert_ne!(net.nodes[0].readiness(A, c) & ready::HANGUP, 0);
    assert_ne!(net.nodes[0].readiness(A, c) & ready::ERROR, 0, "broken, not closed");
    assert_eq!(net.call(0, |s, out| s.connected(A, pending, out)), Err(Error::Unreachable));
    net.call(0, |s, out| s.close(A, c, out)).unwrap();
    assert_eq!(net.nodes[0].connections(), 1, "its send ring is the source of a write in flight");
    // The engine gives the write up: now nothing more can come from the lost node or go to it.
    net.fail_writes = true;
    net.in_flight.push_back(write);
    net.settle();
    assert_eq!(net.nodes[0].connections(), 0);
}

#[test]
fn a_failed_write_resets_the_connection_and_tells_the_peer_to_stop() {
    let mut net = Net::new();
    let (_, c, s) = net.pair();
    net.fail_writes = true;
    net.write(0, A, c, b"doomed").unwrap();
    net.settle();
    assert_eq!(net.nodes[0].counters().failed_writes, 1);
    assert_eq!(net.write(0, A, c, b"x"), Err(Error::ConnectionReset));
    assert_eq!(net.write(1, B, s, b"x"), Err(Error::ConnectionReset), "B was told to stop");
    net.call(0, |n, out| n.close(A, c, out)).unwrap();
    net.call(1, |n, out| n.close(B, s, out)).unwrap();
    net.settle();
    assert_eq!((net.nodes[0].connections(), net.nodes[1].connections()), (0, 0));
}

#[test]
fn a_connect_given_up_before_the_answer_is_closed_when_it_comes() {
    let mut net = Net::new();
    let l = net.nodes[1].listen(B, 80).unwrap();
    let c = net.call(0, |s, out| s.connect(A, 1, 80, out)).unwrap();
    net.call(0, |s, out| s.abandon(A, c, out));
    net.settle();
    let (s, _) = net.nodes[1].accept(B, l).unwrap().unwrap();
    assert_eq!(net.read(1, B, s, 10), Ok(None), "the abandoned end sent its Fin");
    net.call(1, |n, out| n.close(B, s, out)).unwrap();
    net.settle();
    assert_eq!((net.nodes[0].connections(), net.nodes[1].connections()), (0, 0));
}

#[test]
fn writes_in_flight_complete_in_any_order_and_data_is_announced_in_order() {
    let mut net = Net::new();
    let (_, c, s) = net.pair();
    let data = pattern(3 * WRITE_MAX as usize, 9);
    assert_eq!(net.write(0, A, c, &data), Ok(data.len()));
    let writes: Vec<_> = net.in_flight.drain(..).collect();
    assert_eq!(writes.len(), 3, "a quarter ring per write, all posted at once: {writes:?}");
    // The last write completes first: nothing can be announced until the first one has.
    for (node, action) in writes.into_iter().rev() {
        net.in_flight.push_back((node, action));
        net.settle();
        let announced = net.nodes[1].readable(B, s, u32::MAX);
        let expected = if net.nodes[0].writes_in_flight == 0 { 3 * WRITE_MAX } else { 0 };
        match announced {
            Ok(Readable::Bytes { len, .. }) => assert_eq!(len, expected),
            Err(Error::WouldBlock) => assert_eq!(expected, 0),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(net.read(1, B, s, data.len()), Ok(Some(data)));
    // A completion for no write in flight is a stray.
    let mut out = Vec::new();
    let id = match Handle::from_raw(c) {
        Some(Handle::Connection(id)) => id,
        _ => unreachable!(),
    };
    net.nodes[0].completed(write_tag(id, 12345), true, &mut out);
    assert_eq!(net.nodes[0].counters().strays, 1);
    assert!(out.is_empty());
}

#[test]
fn the_node_never_has_more_writes_in_flight_than_its_work_queue_holds() {
    let mut net = Net::new();
    net.nodes[1].listen(B, 80).unwrap();
    let mut handles = Vec::new();
    for _ in 0..WRITES_MAX / FLIGHT_MAX + 2 {
        let c = net.call(0, |s, out| s.connect(A, 1, 80, out)).unwrap();
        net.settle();
        assert_eq!(net.call(0, |s, out| s.connected(A, c, out)), Ok(true));
        handles.push(c);
    }
    // Fill every ring: each connection wants FLIGHT_MAX writes.
    let data = pattern(RING_BYTES as usize, 3);
    for &c in &handles {
        net.write(0, A, c, &data).unwrap();
    }
    let posted = net.in_flight.iter().filter(|(_, a)| matches!(a, Action::Write { .. })).count();
    assert_eq!(posted, WRITES_MAX);
    assert_eq!(net.nodes[0].writes_in_flight, WRITES_MAX);
    // As writes complete, the connections that waited get theirs posted.
    net.settle();
    assert_eq!(net.nodes[0].writes_in_flight, 0);
    for c in handles {
        assert_eq!(net.nodes[0].writable(A, c, 1), Err(Error::WouldBlock), "every ring delivered and full");
    }
}

#[test]
fn a_connection_takes_only_a_slot_whose_rings_are_mapped() {
    let mut s = Sockets::new(0);
    let mut out = Vec::new();
    assert_eq!(s.slot_to_prepare(), Some(0));
    assert_eq!(s.connect(A, 1, 80, &mut out), Err(Error::Busy), "no slot has rings");
    s.doorbell(1, Doorbell::Connect { port: 80, from: ConnId { index: 0, generation: 1 } }, &mut out);
    s.listen(A, 80).unwrap();
    out.clear();
    s.doorbell(1, Doorbell::Connect { port: 80, from: ConnId { index: 0, generation: 1 } }, &mut out);
    assert!(matches!(out[..], [Action::Notify { doorbell: Doorbell::Refuse { why: Refusal::Full, .. }, .. }]));
    s.rings_ready(0);
    assert_eq!(s.slot_to_prepare(), None, "a free slot has its rings");
    s.connect(A, 1, 80, &mut out).unwrap();
    assert_eq!(s.slot_to_prepare(), Some(1), "the next free slot needs them");
}

#[test]
fn writes_the_engine_forgot_reset_their_connections_and_free_the_queue() {
    let mut net = Net::new();
    let (_, c, s) = net.pair();
    net.write(0, A, c, b"lost in the R5").unwrap();
    assert_eq!(net.nodes[0].writes_in_flight, 1);
    net.in_flight.retain(|(_, a)| !matches!(a, Action::Write { .. }));
    net.call(0, |n, out| n.writes_lost(out));
    assert_eq!(net.nodes[0].writes_in_flight, 0);
    assert_eq!(net.write(0, A, c, b"x"), Err(Error::ConnectionReset));
    net.settle();
    assert_eq!(net.write(1, B, s, b"x"), Err(Error::ConnectionReset), "the peer was told to stop");
}
