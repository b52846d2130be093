//! Virtualized packetizer (seed §5.2, `docs/hw/packetizer.md`): register blocks, the destination
//! address format and the 256-bit packet the hardware assembles.

pub mod driver;
pub mod regs;

use tock_registers::LocalRegisterCopy;

use regs::{BASE_DEST, DESTINATION};

/// A packet: two 128-bit words (seed Fig. 17).
pub const PACKET_BYTES: usize = 32;
/// The sender-id prefix the hardware writes: `payload0[47:0]` (seed Fig. 17, Table 5).
pub const PREFIX_BYTES: usize = 6;
/// The bits of payload word 0 that the packetizer replaces with the PID.
pub const PREFIX_MASK: u128 = (1 << 48) - 1;
/// Byte size of one interface page (seed §2.2.3).
pub const PAGE_BYTES: u64 = 0x1000;
/// Offset of the trusted interface page from the block's base.
pub const TIF_OFFSET: u64 = 0x40000;
/// Nodes the 6-bit DESTINATION.NODE field can name.
pub const MAX_NODES: u16 = 64;

/// The packet the hardware sends for PIDT entry `pid_entry` and the two payload registers:
/// payload0 with bits `[47:0]` replaced by the PID, then payload1, little-endian.
pub fn assemble(pid_entry: u64, payload0: u128, payload1: u128) -> [u8; PACKET_BYTES] {
    let word0 = (payload0 & !PREFIX_MASK) | (u128::from(pid_entry) & PREFIX_MASK);
    packet_from_words128([word0, payload1])
}

/// The payload0/payload1 values whose packet is `packet` (prefix bits left 0).
pub fn pif_payload(packet: &[u8; PACKET_BYTES]) -> [u128; 2] {
    let [w0, w1] = words128(packet);
    [w0 & !PREFIX_MASK, w1]
}

/// The two 128-bit words of a packet, as a vmbox stores them.
pub fn words128(packet: &[u8; PACKET_BYTES]) -> [u128; 2] {
    let mut lo = [0; 16];
    let mut hi = [0; 16];
    lo.copy_from_slice(&packet[..16]);
    hi.copy_from_slice(&packet[16..]);
    [u128::from_le_bytes(lo), u128::from_le_bytes(hi)]
}

/// The packet whose two 128-bit words (first dequeued first) are `words`: the inverse of
/// [`words128`].
pub fn packet_from_words128(words: [u128; 2]) -> [u8; PACKET_BYTES] {
    let mut out = [0; PACKET_BYTES];
    out[..16].copy_from_slice(&words[0].to_le_bytes());
    out[16..].copy_from_slice(&words[1].to_le_bytes());
    out
}

/// The packet as four little-endian 64-bit words, from its two 128-bit halves (as a MIF
/// delivers them): no byte shuffling.
#[inline]
pub fn words_from_words128([low, high]: [u128; 2]) -> [u64; 4] {
    [low as u64, (low >> 64) as u64, high as u64, (high >> 64) as u64]
}

/// The packet as four little-endian 64-bit words.
pub fn words_from_bytes(packet: &[u8; PACKET_BYTES]) -> [u64; 4] {
    let mut words = [0; 4];
    for (w, chunk) in words.iter_mut().zip(packet.chunks_exact(8)) {
        let mut b = [0; 8];
        b.copy_from_slice(chunk);
        *w = u64::from_le_bytes(b);
    }
    words
}

/// The inverse of [`words_from_bytes`].
pub fn bytes_from_words(words: [u64; 4]) -> [u8; PACKET_BYTES] {
    let mut out = [0; PACKET_BYTES];
    for (chunk, w) in out.chunks_exact_mut(8).zip(words) {
        chunk.copy_from_slice(&w.to_le_bytes());
    }
    out
}

/// A decoded PIF destination address (`docs/hw/packetizer.md` "Destination address").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Destination {
    /// Target node (X coordinate of the route).
    pub node: u8,
    /// Must equal BASE_DEST.WINDOW, the vmbox window every node has at the same local address.
    pub window: u16,
    /// Mailbox interface on the target node.
    pub interface: u8,
    /// Must be 0.
    pub page_offset: u16,
}

/// Why a destination cannot be encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DestinationError {
    /// The node does not fit the DESTINATION field.
    NodeOutOfRange(u16),
    /// There is no such mailbox interface.
    InterfaceOutOfRange(u8),
}

impl Destination {
    /// The DATA register of mailbox interface `interface` of node `node`'s vmbox.
    pub fn mailbox(node: u16, window: u16, interface: u8) -> Result<Self, DestinationError> {
        if node >= MAX_NODES {
            return Err(DestinationError::NodeOutOfRange(node));
        }
        if usize::from(interface) >= crate::INTERFACES {
            return Err(DestinationError::InterfaceOutOfRange(interface));
        }
        Ok(Self { node: node as u8, window, interface, page_offset: 0 })
    }

    /// The fields of a raw DESTINATION value.
    pub fn decode(raw: u64) -> Self {
        let r = LocalRegisterCopy::<u64, DESTINATION::Register>::new(raw);
        Self {
            node: r.read(DESTINATION::NODE) as u8,
            window: r.read(DESTINATION::WINDOW) as u16,
            interface: r.read(DESTINATION::INTERFACE) as u8,
            page_offset: r.read(DESTINATION::PAGE_OFFSET) as u16,
        }
    }

    /// The raw DESTINATION value.
    pub fn encode(&self) -> u64 {
        let mut r = LocalRegisterCopy::<u64, DESTINATION::Register>::new(0);
        r.write(
            DESTINATION::NODE.val(u64::from(self.node))
                + DESTINATION::WINDOW.val(u64::from(self.window))
                + DESTINATION::INTERFACE.val(u64::from(self.interface))
                + DESTINATION::PAGE_OFFSET.val(u64::from(self.page_offset)),
        );
        r.get()
    }
}

/// BASE_DEST.WINDOW of a BASE_DEST value.
pub fn base_window(base_dest: u64) -> u16 {
    LocalRegisterCopy::<u64, BASE_DEST::Register>::new(base_dest).read(BASE_DEST::WINDOW) as u16
}

/// A BASE_DEST value for window `window`.
pub fn base_dest(window: u16) -> u64 {
    BASE_DEST::WINDOW.val(u64::from(window)).value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assemble_puts_the_pid_in_front() {
        let packet = assemble(0xffff_1234_5678_9abc, u128::MAX, 7);
        assert_eq!(&packet[..6], &[0xbc, 0x9a, 0x78, 0x56, 0x34, 0x12]);
        assert_eq!(&packet[6..16], &[0xff; 10]);
        assert_eq!(packet[16], 7);
        assert_eq!(pif_payload(&packet), [!PREFIX_MASK, 7]);
        assert_eq!(bytes_from_words(words_from_bytes(&packet)), packet);
        assert_eq!(packet_from_words128(words128(&packet)), packet);
        assert_eq!(words_from_words128(words128(&packet)), words_from_bytes(&packet));
    }

    #[test]
    fn destination_round_trip() {
        let d = Destination::mailbox(63, 0xabcd, 5).unwrap();
        let raw = d.encode();
        assert_eq!(raw, (63 << 34) | (0xabcd << 18) | (5 << 12));
        assert_eq!(Destination::decode(raw), d);
        assert_eq!(Destination::mailbox(64, 0, 0), Err(DestinationError::NodeOutOfRange(64)));
        assert_eq!(Destination::mailbox(300, 0, 0), Err(DestinationError::NodeOutOfRange(300)));
        assert_eq!(Destination::mailbox(0, 0, 64), Err(DestinationError::InterfaceOutOfRange(64)));
        assert_eq!(base_window(base_dest(0xabcd) | 0x3ffff), 0xabcd);
        assert_eq!(Destination::decode(u64::MAX).node, 63);
    }
}
