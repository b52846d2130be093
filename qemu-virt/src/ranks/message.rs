//! The messages between the ranks of a cluster, as bytes: one place for their layout.
//!
//! Every message starts with its kind (one byte); numbers are little-endian; a node is a `u16`,
//! a length a `u32` followed by that many bytes. Requests and one-way messages are [`Message`]s,
//! the answers to requests [`Reply`]s (kinds from `0x81`). Decoding checks every length
//! against what is there and every value against what it may be: a malformed message is an
//! error, never a panic, and nothing is allocated that the message does not carry.
//!
//! | kind | message | how | fields |
//! |---|---|---|---|
//! | `0x01` | [`Message::Packet`] | request, [`Reply::Delivered`] | src, dst, iface `u8`, bytes |
//! | `0x02` | [`Message::Load`] | request, [`Reply::Loaded`] | src, dst, pa `u64`, size `u32` |
//! | `0x03` | [`Message::Store`] | one way, posted | src, dst, pa `u64`, size `u32`, value `u128` |
//! | `0x04` | [`Message::Datagrams`] | one way, a burst | count `u32`, then each: src, dst, channel `u8`, payload |
//! | `0x05` | [`Message::Nodes`] | one way, to every rank | count `u16`, then each: node, flags `u8` (bit 0 alive, bit 1 done), DDR bytes `u64` |
//! | `0x81` | [`Reply::Delivered`] | | delivery `u8`: 0 ACK, 1 NACK, 2 unreachable, 3 pending |
//! | `0x82` | [`Reply::Loaded`] | | status `u8` (`proto::forward::Status`), then the value `u128` if it is 0 (`Ok`) |

use crate::interconnect::Datagram;
use crate::transport::Delivery;
use proto::forward::Status;

const PACKET: u8 = 0x01;
const LOAD: u8 = 0x02;
const STORE: u8 = 0x03;
const DATAGRAMS: u8 = 0x04;
const NODES: u8 = 0x05;
const DELIVERED: u8 = 0x81;
const LOADED: u8 = 0x82;

const ALIVE: u8 = 1 << 0;
const DONE: u8 = 1 << 1;

/// A request or one-way message between ranks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    /// A packet of node `src`'s packetizer for interface `iface` of node `dst`'s vmbox.
    Packet { src: u16, dst: u16, iface: u8, bytes: Vec<u8> },
    /// A global-window load of node `src` on node `dst`'s DDR.
    Load { src: u16, dst: u16, pa: u64, size: u32 },
    /// A global-window store, posted.
    Store { src: u16, dst: u16, pa: u64, size: u32, value: u128 },
    /// Datagrams that crossed the links, in the order they were sent.
    Datagrams(Vec<Datagram>),
    /// What the sending rank says of its nodes.
    Nodes(Vec<NodeState>),
}

/// A node as its rank publishes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeState {
    pub node: u16,
    pub alive: bool,
    pub done: bool,
    /// The size of its DDR (the window's stores are posted, so the sender checks their address).
    pub ddr_bytes: u64,
}

/// The answer to a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reply {
    Delivered(Delivery),
    Loaded(Result<u128, Status>),
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("an empty message")]
    Empty,
    #[error("no message is of kind {0:#04x}")]
    Kind(u8),
    #[error("the message ends before its {0}")]
    Truncated(&'static str),
    #[error("{0} bytes follow the message's end")]
    Trailing(usize),
    #[error("a message's {field} cannot be {value}")]
    Field { field: &'static str, value: u64 },
}

/// Appends fields to a message.
struct Writer(Vec<u8>);

impl Writer {
    fn new(kind: u8) -> Self {
        Self(vec![kind])
    }
    fn u8(mut self, v: u8) -> Self {
        self.0.push(v);
        self
    }
    fn u16(mut self, v: u16) -> Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u32(mut self, v: u32) -> Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u64(mut self, v: u64) -> Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u128(mut self, v: u128) -> Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// A node index: the cluster's are far below `u16::MAX` (`board::pl::MAX_NODES`).
    fn node(self, node: usize) -> Self {
        self.u16(node as u16)
    }
    fn bytes(self, bytes: &[u8]) -> Self {
        let mut w = self.u32(bytes.len() as u32);
        w.0.extend_from_slice(bytes);
        w
    }
}

/// Takes fields off the front of a message.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], WireError> {
        if self.0.len() < n {
            return Err(WireError::Truncated(what));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], WireError> {
        Ok(self.take(N, what)?.try_into().expect("N bytes"))
    }
    fn u8(&mut self, what: &'static str) -> Result<u8, WireError> {
        Ok(self.array::<1>(what)?[0])
    }
    fn u16(&mut self, what: &'static str) -> Result<u16, WireError> {
        self.array(what).map(u16::from_le_bytes)
    }
    fn u32(&mut self, what: &'static str) -> Result<u32, WireError> {
        self.array(what).map(u32::from_le_bytes)
    }
    fn u64(&mut self, what: &'static str) -> Result<u64, WireError> {
        self.array(what).map(u64::from_le_bytes)
    }
    fn u128(&mut self, what: &'static str) -> Result<u128, WireError> {
        self.array(what).map(u128::from_le_bytes)
    }
    fn bytes(&mut self, what: &'static str) -> Result<Vec<u8>, WireError> {
        let len = self.u32(what)? as usize;
        Ok(self.take(len, what)?.to_vec())
    }
    /// A count of items of at least `min_bytes` each, no more than the rest can hold.
    fn count(&mut self, len: usize, min_bytes: usize, what: &'static str) -> Result<usize, WireError> {
        if len.checked_mul(min_bytes).is_none_or(|bytes| bytes > self.0.len()) {
            return Err(WireError::Truncated(what));
        }
        Ok(len)
    }
    fn end<T>(self, value: T) -> Result<T, WireError> {
        match self.0.len() {
            0 => Ok(value),
            n => Err(WireError::Trailing(n)),
        }
    }
}

/// Splits off the kind.
fn kind(bytes: &[u8]) -> Result<(u8, Reader<'_>), WireError> {
    let (&kind, rest) = bytes.split_first().ok_or(WireError::Empty)?;
    Ok((kind, Reader(rest)))
}

impl Message {
    pub fn encode(&self) -> Vec<u8> {
        match self {
            Message::Packet { src, dst, iface, bytes } => {
                Writer::new(PACKET).u16(*src).u16(*dst).u8(*iface).bytes(bytes).0
            }
            Message::Load { src, dst, pa, size } => Writer::new(LOAD).u16(*src).u16(*dst).u64(*pa).u32(*size).0,
            Message::Store { src, dst, pa, size, value } => {
                Writer::new(STORE).u16(*src).u16(*dst).u64(*pa).u32(*size).u128(*value).0
            }
            Message::Datagrams(datagrams) => {
                let w = Writer::new(DATAGRAMS).u32(datagrams.len() as u32);
                datagrams.iter().fold(w, |w, d| w.node(d.src).node(d.dst).u8(d.channel).bytes(&d.payload)).0
            }
            Message::Nodes(nodes) => {
                let w = Writer::new(NODES).u16(nodes.len() as u16);
                nodes
                    .iter()
                    .fold(w, |w, n| {
                        let flags = if n.alive { ALIVE } else { 0 } | if n.done { DONE } else { 0 };
                        w.u16(n.node).u8(flags).u64(n.ddr_bytes)
                    })
                    .0
            }
        }
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, WireError> {
        let (kind, mut r) = kind(bytes)?;
        let message = match kind {
            PACKET => Message::Packet {
                src: r.u16("source")?,
                dst: r.u16("destination")?,
                iface: r.u8("interface")?,
                bytes: r.bytes("packet")?,
            },
            LOAD => Message::Load {
                src: r.u16("source")?,
                dst: r.u16("destination")?,
                pa: r.u64("address")?,
                size: r.u32("size")?,
            },
            STORE => Message::Store {
                src: r.u16("source")?,
                dst: r.u16("destination")?,
                pa: r.u64("address")?,
                size: r.u32("size")?,
                value: r.u128("value")?,
            },
            DATAGRAMS => {
                // Each datagram takes at least 9 bytes (an empty payload).
                let count = r.u32("datagram count")? as usize;
                let count = r.count(count, 9, "datagrams")?;
                let mut datagrams = Vec::with_capacity(count);
                for _ in 0..count {
                    datagrams.push(Datagram {
                        src: usize::from(r.u16("datagram source")?),
                        dst: usize::from(r.u16("datagram destination")?),
                        channel: r.u8("datagram channel")?,
                        payload: r.bytes("datagram payload")?,
                    });
                }
                Message::Datagrams(datagrams)
            }
            NODES => {
                let count = usize::from(r.u16("node count")?);
                let count = r.count(count, 11, "nodes")?;
                let mut nodes = Vec::with_capacity(count);
                for _ in 0..count {
                    let node = r.u16("node")?;
                    let flags = r.u8("node flags")?;
                    if flags & !(ALIVE | DONE) != 0 {
                        return Err(WireError::Field { field: "node flags", value: u64::from(flags) });
                    }
                    let ddr_bytes = r.u64("DDR size")?;
                    nodes.push(NodeState { node, alive: flags & ALIVE != 0, done: flags & DONE != 0, ddr_bytes });
                }
                Message::Nodes(nodes)
            }
            other => return Err(WireError::Kind(other)),
        };
        r.end(message)
    }
}

impl Reply {
    pub fn encode(&self) -> Vec<u8> {
        match self {
            Reply::Delivered(delivery) => {
                let code = match delivery {
                    Delivery::Ack => 0,
                    Delivery::Nack => 1,
                    Delivery::Unreachable => 2,
                    Delivery::Pending => 3,
                };
                Writer::new(DELIVERED).u8(code).0
            }
            Reply::Loaded(Ok(value)) => Writer::new(LOADED).u8(Status::Ok as u8).u128(*value).0,
            // An error that says `Ok` is no answer: the far end failed.
            Reply::Loaded(Err(Status::Ok)) => Writer::new(LOADED).u8(Status::DeviceError as u8).0,
            Reply::Loaded(Err(status)) => Writer::new(LOADED).u8(*status as u8).0,
        }
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, WireError> {
        let (kind, mut r) = kind(bytes)?;
        let reply = match kind {
            DELIVERED => Reply::Delivered(match r.u8("delivery")? {
                0 => Delivery::Ack,
                1 => Delivery::Nack,
                2 => Delivery::Unreachable,
                3 => Delivery::Pending,
                other => return Err(WireError::Field { field: "delivery", value: u64::from(other) }),
            }),
            LOADED => Reply::Loaded(match r.u8("status")? {
                0 => Ok(r.u128("value")?),
                code @ 1..=3 => Err(Status::from_raw(u32::from(code))),
                other => return Err(WireError::Field { field: "status", value: u64::from(other) }),
            }),
            other => return Err(WireError::Kind(other)),
        };
        r.end(reply)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages() -> Vec<Message> {
        vec![
            Message::Packet { src: 1, dst: 3, iface: 7, bytes: (0..32).collect() },
            Message::Packet { src: 0, dst: 0, iface: 0, bytes: vec![] },
            Message::Load { src: 2, dst: 111, pa: 0x7fff_fff0, size: 16 },
            Message::Store { src: 3, dst: 0, pa: u64::MAX, size: 1, value: u128::MAX },
            Message::Datagrams(vec![]),
            Message::Datagrams(vec![
                Datagram { src: 0, dst: 3, channel: 2, payload: vec![9; 80] },
                Datagram { src: 1, dst: 2, channel: 0, payload: vec![] },
            ]),
            Message::Nodes(vec![
                NodeState { node: 2, alive: true, done: false, ddr_bytes: 2 << 30 },
                NodeState { node: 3, alive: false, done: true, ddr_bytes: 0 },
            ]),
        ]
    }

    fn replies() -> Vec<Reply> {
        let deliveries = [Delivery::Ack, Delivery::Nack, Delivery::Unreachable, Delivery::Pending];
        let loads = [Ok(0), Ok(u128::MAX), Err(Status::Unmapped), Err(Status::Rejected), Err(Status::DeviceError)];
        deliveries.into_iter().map(Reply::Delivered).chain(loads.into_iter().map(Reply::Loaded)).collect()
    }

    #[test]
    fn every_message_and_reply_comes_back_as_it_went() {
        for m in messages() {
            assert_eq!(Message::decode(&m.encode()), Ok(m.clone()), "{m:?}");
        }
        for r in replies() {
            assert_eq!(Reply::decode(&r.encode()), Ok(r), "{r:?}");
        }
        assert_eq!(
            Reply::decode(&Reply::Loaded(Err(Status::Ok)).encode()),
            Ok(Reply::Loaded(Err(Status::DeviceError))),
            "an error that says Ok is a device error"
        );
    }

    #[test]
    fn the_layout_is_the_documented_one() {
        let store = Message::Store { src: 1, dst: 2, pa: 0x10, size: 8, value: 0xabcd }.encode();
        assert_eq!(store[..5], [0x03, 1, 0, 2, 0]);
        assert_eq!(store[5..13], 0x10u64.to_le_bytes());
        assert_eq!(store[13..17], 8u32.to_le_bytes());
        assert_eq!(store.len(), 1 + 2 + 2 + 8 + 4 + 16);
        let nodes = Message::Nodes(vec![NodeState { node: 5, alive: true, done: true, ddr_bytes: 1 }]).encode();
        assert_eq!(nodes, [0x05, 1, 0, 5, 0, 0b11, 1, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(Reply::Delivered(Delivery::Unreachable).encode(), [0x81, 2]);
        assert_eq!(Reply::Loaded(Err(Status::Unmapped)).encode(), [0x82, 1]);
    }

    #[test]
    fn every_truncation_is_an_error() {
        for bytes in messages().iter().map(Message::encode).chain(replies().iter().map(Reply::encode)) {
            for cut in 0..bytes.len() {
                let short = &bytes[..cut];
                assert!(Message::decode(short).is_err() && Reply::decode(short).is_err(), "{short:?}");
            }
        }
        assert_eq!(Message::decode(&[]), Err(WireError::Empty));
        assert_eq!(Message::decode(&[0x02, 1, 0]), Err(WireError::Truncated("destination")));
    }

    #[test]
    fn bad_kinds_values_and_trailing_bytes_are_errors() {
        assert_eq!(Message::decode(&[0x00]), Err(WireError::Kind(0)));
        assert_eq!(Message::decode(&Reply::Delivered(Delivery::Ack).encode()), Err(WireError::Kind(0x81)));
        assert_eq!(Reply::decode(&Message::Datagrams(vec![]).encode()), Err(WireError::Kind(0x04)));
        assert_eq!(Reply::decode(&[0x81, 4]), Err(WireError::Field { field: "delivery", value: 4 }));
        assert_eq!(Reply::decode(&[0x82, 9]), Err(WireError::Field { field: "status", value: 9 }));
        let mut flags = Message::Nodes(vec![NodeState { node: 0, alive: true, done: false, ddr_bytes: 0 }]).encode();
        flags[5] = 0x84;
        assert_eq!(Message::decode(&flags), Err(WireError::Field { field: "node flags", value: 0x84 }));
        let mut long = Message::Load { src: 0, dst: 1, pa: 0, size: 4 }.encode();
        long.push(0);
        assert_eq!(Message::decode(&long), Err(WireError::Trailing(1)));
    }

    #[test]
    fn counts_and_lengths_beyond_the_message_are_errors_without_allocating_them() {
        // Four billion datagrams claimed in a few bytes.
        assert_eq!(Message::decode(&[0x04, 0xff, 0xff, 0xff, 0xff, 0]), Err(WireError::Truncated("datagrams")));
        assert_eq!(Message::decode(&[0x05, 0xff, 0xff]), Err(WireError::Truncated("nodes")));
        // A packet that claims 4 GiB of bytes.
        let packet = [0x01, 0, 0, 1, 0, 7, 0xff, 0xff, 0xff, 0xff, 1, 2];
        assert_eq!(Message::decode(&packet), Err(WireError::Truncated("packet")));
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        let mut rng = crate::interconnect::Rng::new(5);
        for _ in 0..20_000 {
            let len = (rng.next_u64() % 48) as usize;
            let mut bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            if let Some(first) = bytes.first_mut() {
                // Mostly real kinds, so that the decoders get past the first byte.
                *first = [0x01, 0x02, 0x03, 0x04, 0x05, 0x81, 0x82, *first][(*first % 8) as usize];
            }
            let _ = Message::decode(&bytes);
            let _ = Reply::decode(&bytes);
        }
    }
}
