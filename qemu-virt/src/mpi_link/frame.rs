//! The link's one message format: every MPI message the link sends is the payload followed by a
//! 16-byte trailer.
//!
//! | bytes | field | meaning |
//! |---|---|---|
//! | `0..8` | `id` | little-endian; a request's number, echoed by its reply; 0 otherwise |
//! | `8..10` | `kind` | little-endian; the user's kind of message (`Kind`), echoed by a reply |
//! | `10` | `class` | `Class`: message, request, reply, failure, heartbeat or goodbye |
//! | `11` | `version` | [`VERSION`] |
//! | `12..16` | `magic` | [`MAGIC`], so that a stray message is refused, not misread |
//!
//! The header goes last so that a payload is sent and received in place: the sender appends 16
//! bytes to its own buffer (reserve [`TRAILER_LEN`] to spare a copy) and the receiver truncates
//! the buffer MPI filled. The payload's length is the MPI message's length less the trailer.
//! Every message but the heartbeats carries the MPI tag [`TAG`] on `MPI_COMM_WORLD`, so that
//! MPI's non-overtaking rule keeps what one thread sends to a rank in the order it was sent (a
//! goodbye after the messages before it). Heartbeats carry [`HEARTBEAT_TAG`] and are received
//! first: a rank with a backlog of one peer's messages still hears at once that the others are
//! alive, instead of losing them behind the backlog.

use thiserror::Error;

/// The MPI tag of every message of the link but the heartbeats.
pub const TAG: i32 = 0x4c4b;
/// The MPI tag of heartbeats.
pub const HEARTBEAT_TAG: i32 = 0x4c48;

/// The MPI tag a message of `class` goes with.
pub fn tag(class: Class) -> i32 {
    if class == Class::Heartbeat { HEARTBEAT_TAG } else { TAG }
}
/// What the link adds to every payload.
pub const TRAILER_LEN: usize = 16;
/// The last four bytes of every message.
pub const MAGIC: [u8; 4] = *b"UMLK";
/// The format described above.
pub const VERSION: u8 = 1;

/// What a message is to the link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Class {
    /// One way, to the handler's `message`.
    Message = 1,
    /// To the handler's `request`; its `id` comes back with the answer.
    Request = 2,
    /// The answer to request `id`: the payload is the reply.
    Reply = 3,
    /// The answer to request `id` when there is none: the payload is why, in UTF-8.
    Failure = 4,
    /// "I am alive": sent to every rank while there is nothing else to say.
    Heartbeat = 5,
    /// "I send nothing new from now on": the shutdown handshake.
    Goodbye = 6,
}

impl Class {
    fn from_byte(byte: u8) -> Option<Class> {
        [Class::Message, Class::Request, Class::Reply, Class::Failure, Class::Heartbeat, Class::Goodbye]
            .into_iter()
            .find(|c| *c as u8 == byte)
    }
}

/// The link's part of a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trailer {
    pub class: Class,
    pub kind: u16,
    pub id: u64,
}

/// Why a received message is not one of the link's.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum FrameError {
    #[error("{0} bytes is shorter than the link's {TRAILER_LEN}-byte trailer")]
    TooShort(usize),
    #[error("no link magic at the end of the message")]
    NoMagic,
    #[error("the message is in format version {0}, this link speaks {VERSION}")]
    Version(u8),
    #[error("unknown message class {0}")]
    Class(u8),
}

/// Appends the trailer to `payload`: the bytes to send.
pub fn seal(mut payload: Vec<u8>, trailer: Trailer) -> Vec<u8> {
    payload.extend_from_slice(&trailer.id.to_le_bytes());
    payload.extend_from_slice(&trailer.kind.to_le_bytes());
    payload.push(trailer.class as u8);
    payload.push(VERSION);
    payload.extend_from_slice(&MAGIC);
    payload
}

/// Splits received bytes into the trailer and the payload (the same buffer, truncated).
pub fn open(mut bytes: Vec<u8>) -> Result<(Trailer, Vec<u8>), FrameError> {
    let at = bytes.len().checked_sub(TRAILER_LEN).ok_or(FrameError::TooShort(bytes.len()))?;
    let t = &bytes[at..];
    if t[12..16] != MAGIC {
        return Err(FrameError::NoMagic);
    }
    if t[11] != VERSION {
        return Err(FrameError::Version(t[11]));
    }
    let class = Class::from_byte(t[10]).ok_or(FrameError::Class(t[10]))?;
    let id = u64::from_le_bytes(t[0..8].try_into().expect("8 bytes"));
    let kind = u16::from_le_bytes([t[8], t[9]]);
    bytes.truncate(at);
    Ok((Trailer { class, kind, id }, bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_message_opens_to_its_trailer_and_payload() {
        let trailer = Trailer { class: Class::Request, kind: 0xbeef, id: 0x0102_0304_0506_0708 };
        for payload in [vec![], vec![7u8], (0..=255u8).cycle().take(70_000).collect()] {
            let sealed = seal(payload.clone(), trailer);
            assert_eq!(sealed.len(), payload.len() + TRAILER_LEN);
            assert_eq!(open(sealed), Ok((trailer, payload)));
        }
    }

    /// The layout is the table above, byte for byte.
    #[test]
    fn the_trailer_is_laid_out_as_documented() {
        let sealed = seal(vec![0xaa], Trailer { class: Class::Failure, kind: 0x1234, id: 5 });
        assert_eq!(sealed, [0xaa, 5, 0, 0, 0, 0, 0, 0, 0, 0x34, 0x12, 4, VERSION, b'U', b'M', b'L', b'K']);
    }

    /// Heartbeats alone go apart; everything else keeps one order.
    #[test]
    fn only_heartbeats_have_a_tag_of_their_own() {
        for class in [Class::Message, Class::Request, Class::Reply, Class::Failure, Class::Goodbye] {
            assert_eq!(tag(class), TAG);
        }
        assert_eq!(tag(Class::Heartbeat), HEARTBEAT_TAG);
        assert_ne!(TAG, HEARTBEAT_TAG);
    }

    #[test]
    fn every_class_survives_the_trip() {
        for class in [Class::Message, Class::Request, Class::Reply, Class::Failure, Class::Heartbeat, Class::Goodbye] {
            let trailer = Trailer { class, kind: 1, id: 2 };
            assert_eq!(open(seal(vec![], trailer)).map(|(t, _)| t), Ok(trailer));
        }
    }

    #[test]
    fn foreign_or_damaged_bytes_are_refused_with_the_reason() {
        assert_eq!(open(vec![0; 15]), Err(FrameError::TooShort(15)));
        assert_eq!(open(vec![0; 40]), Err(FrameError::NoMagic));
        let good = seal(vec![1, 2, 3], Trailer { class: Class::Message, kind: 9, id: 0 });
        let mut version = good.clone();
        version[3 + 11] = 9;
        assert_eq!(open(version), Err(FrameError::Version(9)));
        let mut class = good;
        class[3 + 10] = 0;
        assert_eq!(open(class), Err(FrameError::Class(0)));
    }
}
