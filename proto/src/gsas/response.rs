//! The 128-bit response (seed §2.2.3 Fig. 9) and the 256-bit reply packet that carries it back
//! through the service's packetizer interface (`docs/hw/gsas-packets.md` "Replies").
//!
//! Reply packet, little-endian like the request:
//!
//! ```text
//! bytes  0..6   sender PID = the atomic service (packetizer prefix: node, domain 0, interface 0)
//! byte   6      kind: 0x80 status, 0x81 page data
//! byte   7      the request's opcode byte, echoed (also when it was unknown)
//! bytes  8..10  data: chunk index 0..255 (u16 LE); status: 0
//! bytes 10..16  the requester's PID (48 bits LE), as the request's prefix gave it
//! bytes 16..32  status: the 128-bit response (error u64 LE, result u64 LE)
//!               data: bytes [16 * index, 16 * index + 16) of the page
//! ```
//!
//! Choice: a reply is a full packetizer packet, not a 128-bit remote store, so the requester can
//! check from the hardware prefix that it comes from the atomic service (any thread can send
//! packets to any mailbox interface). Read4K is answered with 256 data packets in index order
//! followed by one status packet; every other request with one status packet. The reply names
//! its requester, so a process can tell its own replies from late ones to an earlier holder of
//! its mailbox interface (a process that timed out and exited) and skip them.

use super::{ErrorCode, Pid, UnknownErrorCode};
use hal::packetizer::{self, PACKET_BYTES};

pub const RESPONSE_BYTES: usize = 16;
/// Page bytes carried by one data reply.
pub const CHUNK_BYTES: usize = 16;
/// Data replies that carry one 4 KiB page.
pub const PAGE_CHUNKS: usize = 4096 / CHUNK_BYTES;

pub const KIND_STATUS: u8 = 0x80;
pub const KIND_DATA: u8 = 0x81;

/// The response: error 0 means success (seed Fig. 9); on error the result is 0 ("NULL",
/// seed §2.2.7 step 12).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Response {
    pub error: Option<ErrorCode>,
    pub result: u64,
}

impl Response {
    #[inline]
    pub const fn ok(result: u64) -> Self {
        Self { error: None, result }
    }

    #[inline]
    pub const fn err(code: ErrorCode) -> Self {
        Self { error: Some(code), result: 0 }
    }

    #[inline]
    pub const fn to_words(&self) -> [u64; 2] {
        let error = match self.error {
            Some(code) => code.as_u64(),
            None => 0,
        };
        [error, self.result]
    }

    #[inline]
    pub fn from_words(words: [u64; 2]) -> Result<Self, UnknownErrorCode> {
        let error = match words[0] {
            0 => None,
            code => Some(ErrorCode::try_from(code)?),
        };
        Ok(Self { error, result: words[1] })
    }

    #[inline]
    pub fn encode(&self) -> [u8; RESPONSE_BYTES] {
        let [e, r] = self.to_words();
        let mut out = [0; RESPONSE_BYTES];
        out[..8].copy_from_slice(&e.to_le_bytes());
        out[8..].copy_from_slice(&r.to_le_bytes());
        out
    }

    #[inline]
    pub fn decode(bytes: &[u8; RESPONSE_BYTES]) -> Result<Self, UnknownErrorCode> {
        let (e, r) = bytes.split_at(8);
        Self::from_words([le64(e), le64(r)])
    }

    /// The 128-bit word as one vmbox read returns it (error in bits `[63:0]`).
    #[inline]
    pub const fn to_u128(&self) -> u128 {
        let [e, r] = self.to_words();
        ((r as u128) << 64) | e as u128
    }

    #[inline]
    pub fn from_u128(word: u128) -> Result<Self, UnknownErrorCode> {
        Self::from_words([word as u64, (word >> 64) as u64])
    }
}

/// What a reply packet carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplyBody {
    Status(Response),
    /// One 16-byte slice of a Read4K page.
    Data {
        index: u8,
        bytes: [u8; CHUNK_BYTES],
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplyError {
    UnknownKind(u8),
    /// Index bytes of a status reply not zero, or a data index above 255.
    ReservedNotZero,
    UnknownErrorCode(u64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplyPacket {
    /// From the packetizer's trusted prefix: who sent the reply.
    pub sender: Pid,
    /// The requester it answers (the PID the request's prefix carried).
    pub to: Pid,
    /// The opcode byte of the request this answers.
    pub opcode: u8,
    pub body: ReplyBody,
}

impl ReplyPacket {
    pub fn encode(&self) -> [u8; PACKET_BYTES] {
        let mut out = [0; PACKET_BYTES];
        out[..8].copy_from_slice(&self.sender.raw().to_le_bytes());
        out[10..16].copy_from_slice(&self.to.raw().to_le_bytes()[..6]);
        out[7] = self.opcode;
        match self.body {
            ReplyBody::Status(response) => {
                out[6] = KIND_STATUS;
                out[16..].copy_from_slice(&response.encode());
            }
            ReplyBody::Data { index, bytes } => {
                out[6] = KIND_DATA;
                out[8] = index;
                out[16..].copy_from_slice(&bytes);
            }
        }
        out
    }

    pub fn decode(bytes: &[u8; PACKET_BYTES]) -> Result<Self, ReplyError> {
        let sender = Pid::from_low_bits(le64(&bytes[..8]));
        let index = u16::from_le_bytes([bytes[8], bytes[9]]);
        let mut to = [0; 8];
        to[..6].copy_from_slice(&bytes[10..16]);
        let to = Pid::from_low_bits(u64::from_le_bytes(to));
        let mut tail = [0; 16];
        tail.copy_from_slice(&bytes[16..]);
        let body = match bytes[6] {
            KIND_STATUS if index == 0 => {
                ReplyBody::Status(Response::decode(&tail).map_err(|e| ReplyError::UnknownErrorCode(e.0))?)
            }
            KIND_DATA => {
                ReplyBody::Data { index: u8::try_from(index).map_err(|_| ReplyError::ReservedNotZero)?, bytes: tail }
            }
            KIND_STATUS => return Err(ReplyError::ReservedNotZero),
            kind => return Err(ReplyError::UnknownKind(kind)),
        };
        Ok(Self { sender, to, opcode: bytes[7], body })
    }

    /// The service's PIF payload0 / payload1 writes (sender bits left to the packetizer).
    #[inline]
    pub fn pif_payload(&self) -> [u128; 2] {
        packetizer::pif_payload(&self.encode())
    }
}

fn le64(bytes: &[u8]) -> u64 {
    let mut word = [0; 8];
    word.copy_from_slice(&bytes[..8]);
    u64::from_le_bytes(word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn response_round_trip_every_code() {
        let mut all = std::vec![Response::ok(0), Response::ok(u64::MAX)];
        all.extend(ErrorCode::ALL.iter().map(|&c| Response::err(c)));
        for r in all {
            assert_eq!(Response::decode(&r.encode()), Ok(r));
            assert_eq!(Response::from_words(r.to_words()), Ok(r));
            assert_eq!(Response::from_u128(r.to_u128()), Ok(r));
        }
        let r = Response::err(ErrorCode::Unmapped);
        assert_eq!(r.to_u128(), 3);
        assert_eq!(Response::ok(0x55).encode()[8], 0x55);
        assert_eq!(Response::from_words([99, 0]), Err(UnknownErrorCode(99)));
    }

    #[test]
    fn reply_round_trip() {
        let sender = Pid::atomic_service(4);
        let to = Pid::new(3, 0x1234, 1023, 63).unwrap();
        let status =
            ReplyPacket { sender, to, opcode: 0x13, body: ReplyBody::Status(Response::err(ErrorCode::QueueFull)) };
        let data = ReplyPacket { sender, to, opcode: 0x04, body: ReplyBody::Data { index: 255, bytes: [0xab; 16] } };
        for reply in [status, data] {
            assert_eq!(ReplyPacket::decode(&reply.encode()), Ok(reply));
            let [p0, p1] = reply.pif_payload();
            assert_eq!(ReplyPacket::decode(&packetizer::assemble(sender.raw(), p0, p1)), Ok(reply));
        }
        let bytes = data.encode();
        assert_eq!((bytes[6], bytes[7], bytes[8]), (KIND_DATA, 0x04, 255));
        assert_eq!(&bytes[10..16], &to.raw().to_le_bytes()[..6]);
    }

    #[test]
    fn reply_decode_errors() {
        let ok = ReplyPacket {
            sender: Pid::default(),
            to: Pid::default(),
            opcode: 1,
            body: ReplyBody::Status(Response::ok(1)),
        }
        .encode();
        let mut b = ok;
        b[6] = 0;
        assert_eq!(ReplyPacket::decode(&b), Err(ReplyError::UnknownKind(0)));
        let mut b = ok;
        b[8] = 1;
        assert_eq!(ReplyPacket::decode(&b), Err(ReplyError::ReservedNotZero));
        let mut b = ok;
        b[6] = KIND_DATA;
        b[9] = 1;
        assert_eq!(ReplyPacket::decode(&b), Err(ReplyError::ReservedNotZero));
        let mut b = ok;
        b[16] = 200;
        assert_eq!(ReplyPacket::decode(&b), Err(ReplyError::UnknownErrorCode(200)));
    }
}
