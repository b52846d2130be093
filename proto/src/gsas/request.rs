//! The 256-bit atomic request packet (seed §2.2.3 Fig. 8; `docs/hw/gsas-packets.md` "Request").
//!
//! The packet is a little-endian 256-bit value: bit `n` is bit `n % 8` of byte `n / 8`.
//!
//! ```text
//! bytes  0..6   sender PID (48 bits)   <- written by the packetizer (PIDT entry), never by the sender
//! byte   6      reserved, must be 0
//! byte   7      opcode
//! bytes  8..16  address   (u64 LE)
//! bytes 16..24  argument 1 (u64 LE)
//! bytes 24..32  argument 2 (u64 LE)
//! ```

use super::{GlobalAddress, Opcode, Pid};
use hal::packetizer::{self, PACKET_BYTES};

/// Every field as it is on the wire, without interpretation. Every 32-byte array is one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawRequest {
    pub sender: Pid,
    pub reserved: u8,
    pub opcode: u8,
    pub address: u64,
    pub arg1: u64,
    pub arg2: u64,
}

impl RawRequest {
    /// The four little-endian 64-bit words of the packet.
    #[inline]
    pub fn from_words(words: [u64; 4]) -> Self {
        Self {
            sender: Pid::from_low_bits(words[0]),
            reserved: (words[0] >> 48) as u8,
            opcode: (words[0] >> 56) as u8,
            address: words[1],
            arg1: words[2],
            arg2: words[3],
        }
    }

    pub fn to_words(&self) -> [u64; 4] {
        let w0 = self.sender.raw() | (u64::from(self.reserved) << 48) | (u64::from(self.opcode) << 56);
        [w0, self.address, self.arg1, self.arg2]
    }

    pub fn from_bytes(bytes: &[u8; PACKET_BYTES]) -> Self {
        Self::from_words(packetizer::words_from_bytes(bytes))
    }

    pub fn to_bytes(&self) -> [u8; PACKET_BYTES] {
        packetizer::bytes_from_words(self.to_words())
    }
}

/// Why a packet is not a request. The sender is still known (it is the hardware prefix), so the
/// service can answer with an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestError {
    UnknownOpcode(u8),
    ReservedNotZero(u8),
}

/// A decoded request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// From the packetizer's trusted prefix.
    pub sender: Pid,
    pub opcode: Opcode,
    pub address: GlobalAddress,
    pub arg1: u64,
    pub arg2: u64,
}

impl Request {
    pub fn decode(bytes: &[u8; PACKET_BYTES]) -> Result<Self, RequestError> {
        Self::try_from(RawRequest::from_bytes(bytes))
    }

    pub fn encode(&self) -> [u8; PACKET_BYTES] {
        self.raw().to_bytes()
    }

    pub fn raw(&self) -> RawRequest {
        RawRequest {
            sender: self.sender,
            reserved: 0,
            opcode: self.opcode.as_u8(),
            address: self.address.raw(),
            arg1: self.arg1,
            arg2: self.arg2,
        }
    }

    pub fn to_words(&self) -> [u64; 4] {
        self.raw().to_words()
    }

    pub fn from_words(words: [u64; 4]) -> Result<Self, RequestError> {
        Self::try_from(RawRequest::from_words(words))
    }

    /// The values a CPU writes to its PIF's payload0 (offset 0x00) and payload1 (0x10). The
    /// sender field is left 0: the packetizer ignores `payload0[47:0]` and puts the PIDT entry
    /// there (seed Table 5, Fig. 17).
    pub fn pif_payload(&self) -> [u128; 2] {
        packetizer::pif_payload(&self.encode())
    }
}

impl TryFrom<RawRequest> for Request {
    type Error = RequestError;

    fn try_from(raw: RawRequest) -> Result<Self, Self::Error> {
        let opcode = Opcode::try_from(raw.opcode).map_err(|e| RequestError::UnknownOpcode(e.0))?;
        if raw.reserved != 0 {
            return Err(RequestError::ReservedNotZero(raw.reserved));
        }
        Ok(Self {
            sender: raw.sender,
            opcode,
            address: GlobalAddress::from_raw(raw.address),
            arg1: raw.arg1,
            arg2: raw.arg2,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(opcode: Opcode) -> Request {
        Request {
            sender: Pid::new(3, 7, 5, 9).unwrap(),
            opcode,
            address: GlobalAddress::from_raw(0x0001_0000_0000_2008),
            arg1: 0x1122_3344_5566_7788,
            arg2: 0x99aa_bbcc_ddee_ff00,
        }
    }

    #[test]
    fn byte_layout_is_documented_one() {
        let bytes = sample(Opcode::Cas).encode();
        assert_eq!(&bytes[0..6], &Pid::new(3, 7, 5, 9).unwrap().raw().to_le_bytes()[..6]);
        assert_eq!(bytes[6], 0);
        assert_eq!(bytes[7], 0x21);
        assert_eq!(bytes[8..16], 0x0001_0000_0000_2008u64.to_le_bytes());
        assert_eq!(bytes[16..24], 0x1122_3344_5566_7788u64.to_le_bytes());
        assert_eq!(bytes[24..32], 0x99aa_bbcc_ddee_ff00u64.to_le_bytes());
    }

    #[test]
    fn round_trip_every_opcode() {
        for op in Opcode::ALL {
            let req = sample(op);
            assert_eq!(Request::decode(&req.encode()), Ok(req));
            assert_eq!(Request::from_words(req.to_words()), Ok(req));
            let [p0, p1] = req.pif_payload();
            assert_eq!(p0 & ((1 << 48) - 1), 0, "sender bits are left to the packetizer");
            let sent = packetizer::assemble(req.sender.raw(), p0, p1);
            assert_eq!(Request::decode(&sent), Ok(req));
        }
    }

    #[test]
    fn decode_errors_are_typed() {
        let mut raw = sample(Opcode::Read8).raw();
        raw.opcode = 0xff;
        assert_eq!(Request::try_from(raw), Err(RequestError::UnknownOpcode(0xff)));
        raw.opcode = Opcode::Read8.as_u8();
        raw.reserved = 1;
        assert_eq!(Request::try_from(raw), Err(RequestError::ReservedNotZero(1)));
        assert_eq!(RawRequest::from_bytes(&raw.to_bytes()), raw);
    }
}
