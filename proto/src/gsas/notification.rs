//! 64-bit mailbox notifications (seed §3.2: "classified into 16 different message types,
//! recognized by the 4 most significant bits"; `docs/hw/gsas-packets.md` "Notifications").
//!
//! ```text
//!  63    60 59                                                   0
//! +--------+------------------------------------------------------+
//! | opcode |  payload (60 bits), layout per opcode                |
//! +--------+------------------------------------------------------+
//! ```
//!
//! Choice (the seed assigns no opcode): 0x0 is never a message, 0x1..=0x7 belong to the kernel
//! (only kernel domains may send them, only the kernel may register them), 0x8..=0xF are the
//! user channels 0..=7 that processes register.

pub const OPCODE_SHIFT: u32 = 60;
pub const PAYLOAD_BITS: u32 = 60;
pub const PAYLOAD_MASK: u64 = (1 << PAYLOAD_BITS) - 1;
/// Opcodes: 4 bits (seed §3.2).
pub const OPCODES: usize = 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotificationError {
    /// Opcode 0 is never a message (it would make an all-zero word one).
    ZeroOpcode,
    /// Not a 4-bit value.
    OpcodeOutOfRange(u8),
    /// A kernel opcode with no assigned meaning (none is left today: kept for the decoder's
    /// completeness).
    Unassigned(u8),
    /// A payload whose unused bits are not zero.
    Malformed,
    /// A field does not fit its bits.
    FieldTooWide,
}

/// A 4-bit mailbox opcode, 1..=15.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MailboxOpcode(u8);

impl MailboxOpcode {
    pub const PING: Self = Self(0x1);
    pub const PONG: Self = Self(0x2);
    pub const SPAWN_REQUEST: Self = Self(0x3);
    pub const SPAWN_RESULT: Self = Self(0x4);
    pub const RDMA_COMPLETE: Self = Self(0x5);
    pub const SOCKET_DOORBELL: Self = Self(0x6);
    pub const JOB_EXIT: Self = Self(0x7);
    /// First user channel; user channel `c` is opcode `0x8 + c`.
    pub const FIRST_USER: u8 = 0x8;
    pub const USER_CHANNELS: u8 = 8;

    #[inline]
    pub const fn new(value: u8) -> Result<Self, NotificationError> {
        match value {
            0 => Err(NotificationError::ZeroOpcode),
            1..=15 => Ok(Self(value)),
            _ => Err(NotificationError::OpcodeOutOfRange(value)),
        }
    }

    #[inline]
    pub const fn user(channel: u8) -> Result<Self, NotificationError> {
        if channel >= Self::USER_CHANNELS {
            return Err(NotificationError::FieldTooWide);
        }
        Ok(Self(Self::FIRST_USER + channel))
    }

    #[inline]
    pub const fn value(self) -> u8 {
        self.0
    }

    #[inline]
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    #[inline]
    pub const fn is_user(self) -> bool {
        self.0 >= Self::FIRST_USER
    }
}

/// One 64-bit notification with a nonzero opcode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Notification(u64);

impl Notification {
    #[inline]
    pub const fn new(opcode: MailboxOpcode, payload: u64) -> Result<Self, NotificationError> {
        if payload > PAYLOAD_MASK {
            return Err(NotificationError::FieldTooWide);
        }
        Ok(Self(((opcode.0 as u64) << OPCODE_SHIFT) | payload))
    }

    #[inline]
    pub const fn from_raw(raw: u64) -> Result<Self, NotificationError> {
        match MailboxOpcode::new((raw >> OPCODE_SHIFT) as u8) {
            Ok(_) => Ok(Self(raw)),
            Err(e) => Err(e),
        }
    }

    /// The whole word, opcode included (what a kernel callback receives, seed §3.2.1).
    #[inline]
    pub const fn raw(self) -> u64 {
        self.0
    }

    #[inline]
    pub const fn opcode(self) -> MailboxOpcode {
        MailboxOpcode((self.0 >> OPCODE_SHIFT) as u8)
    }

    #[inline]
    pub const fn payload(self) -> u64 {
        self.0 & PAYLOAD_MASK
    }
}

/// The typed meaning of each opcode's payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Message {
    /// Liveness check; the kernel answers with `Pong` carrying the same nonce.
    Ping {
        nonce: u64,
    },
    Pong {
        nonce: u64,
    },
    /// Kernel-to-kernel: start registered image `image` (12 bits) with `argument` (48 bits).
    SpawnRequest {
        image: u16,
        argument: u64,
    },
    /// Answer to `SpawnRequest`: `child` (48 bits) is the new process's handle, 0 on failure.
    SpawnResult {
        image: u16,
        child: u64,
    },
    /// An RDMA transfer (60-bit id) completed; the remote-completion notice seed §3.1.2 lacks.
    RdmaComplete {
        transfer: u64,
    },
    /// Sockets over RDMA: kernel to kernel, about one connection (`crate::socket::Doorbell`
    /// gives the payload its layout).
    SocketDoorbell {
        payload: u64,
    },
    /// Kernel to kernel (`JOB_EXIT`): end the processes of job `pd` (4 bits; never PD 15, which
    /// unrelated jobs share) on the receiving node with exit status `status`. Payload: [3:0] the
    /// PD, [11:4] the status, the rest 0.
    JobExit {
        pd: u8,
        status: u8,
    },
    /// User channel 0..=7, opaque 60-bit payload.
    User {
        channel: u8,
        payload: u64,
    },
}

/// `JobExit`: where the status starts in the payload.
const JOB_EXIT_STATUS_SHIFT: u32 = 4;
/// `JobExit`: PD 15 (`proto::rdma::domain::NO_RDMA`) is no job.
const NO_JOB_PD: u8 = 15;

const fn fits(value: u64, bits: u32) -> bool {
    value >> bits == 0
}

impl Message {
    pub const fn encode(&self) -> Result<Notification, NotificationError> {
        let (opcode, payload, ok) = match *self {
            Message::Ping { nonce } => (MailboxOpcode::PING, nonce, fits(nonce, 60)),
            Message::Pong { nonce } => (MailboxOpcode::PONG, nonce, fits(nonce, 60)),
            Message::SpawnRequest { image, argument } => (
                MailboxOpcode::SPAWN_REQUEST,
                ((image as u64) << 48) | argument,
                fits(image as u64, 12) && fits(argument, 48),
            ),
            Message::SpawnResult { image, child } => {
                (MailboxOpcode::SPAWN_RESULT, ((image as u64) << 48) | child, fits(image as u64, 12) && fits(child, 48))
            }
            Message::RdmaComplete { transfer } => (MailboxOpcode::RDMA_COMPLETE, transfer, fits(transfer, 60)),
            Message::SocketDoorbell { payload } => (MailboxOpcode::SOCKET_DOORBELL, payload, fits(payload, 60)),
            Message::JobExit { pd, status } => (
                MailboxOpcode::JOB_EXIT,
                (pd as u64) | (status as u64) << JOB_EXIT_STATUS_SHIFT,
                fits(pd as u64, 4) && pd != NO_JOB_PD,
            ),
            Message::User { channel, payload } => match MailboxOpcode::user(channel) {
                Ok(op) => (op, payload, fits(payload, 60)),
                Err(e) => return Err(e),
            },
        };
        if !ok {
            return Err(NotificationError::FieldTooWide);
        }
        Notification::new(opcode, payload)
    }

    pub const fn decode(n: Notification) -> Result<Self, NotificationError> {
        let p = n.payload();
        let image = (p >> 48) as u16;
        let low48 = p & ((1 << 48) - 1);
        Ok(match n.opcode().0 {
            0x1 => Message::Ping { nonce: p },
            0x2 => Message::Pong { nonce: p },
            0x3 => Message::SpawnRequest { image, argument: low48 },
            0x4 => Message::SpawnResult { image, child: low48 },
            0x5 => Message::RdmaComplete { transfer: p },
            0x6 => Message::SocketDoorbell { payload: p },
            0x7 => {
                let pd = (p & 0xf) as u8;
                if p >> (JOB_EXIT_STATUS_SHIFT + 8) != 0 || pd == NO_JOB_PD {
                    return Err(NotificationError::Malformed);
                }
                Message::JobExit { pd, status: (p >> JOB_EXIT_STATUS_SHIFT) as u8 }
            }
            op @ 0x8..=0xf => Message::User { channel: op - MailboxOpcode::FIRST_USER, payload: p },
            op => return Err(NotificationError::Unassigned(op)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opcode_is_the_top_nibble() {
        let n = Message::Ping { nonce: 0x123 }.encode().unwrap();
        assert_eq!(n.raw(), 0x1000_0000_0000_0123);
        assert_eq!(n.opcode(), MailboxOpcode::PING);
        assert_eq!(Notification::from_raw(0x0fff_ffff_ffff_ffff), Err(NotificationError::ZeroOpcode));
        assert_eq!(Notification::from_raw(u64::MAX).unwrap().opcode().value(), 0xf);
        assert_eq!(MailboxOpcode::new(16), Err(NotificationError::OpcodeOutOfRange(16)));
    }

    #[test]
    fn every_message_round_trips() {
        let all = [
            Message::Ping { nonce: PAYLOAD_MASK },
            Message::Pong { nonce: 0 },
            Message::SpawnRequest { image: 0xfff, argument: (1 << 48) - 1 },
            Message::SpawnResult { image: 1, child: 0 },
            Message::RdmaComplete { transfer: 42 },
            Message::SocketDoorbell { payload: PAYLOAD_MASK },
            Message::User { channel: 7, payload: 5 },
            Message::User { channel: 0, payload: 5 },
        ];
        for m in all {
            let n = m.encode().unwrap();
            assert_eq!(Message::decode(n), Ok(m));
            assert_eq!(Notification::from_raw(n.raw()), Ok(n));
        }
    }

    #[test]
    fn every_opcode_value_decodes_or_errors() {
        for op in 0u8..16 {
            let raw = (u64::from(op) << 60) | 1;
            match (op, Notification::from_raw(raw)) {
                (0, r) => assert_eq!(r, Err(NotificationError::ZeroOpcode)),
                (_, Ok(n)) => assert_eq!(Message::decode(n).unwrap().encode(), Ok(n)),
                (_, Err(e)) => panic!("{op}: {e:?}"),
            }
        }
    }

    #[test]
    fn oversized_fields_are_refused() {
        assert_eq!(Message::Ping { nonce: 1 << 60 }.encode(), Err(NotificationError::FieldTooWide));
        assert_eq!(Message::SpawnRequest { image: 0x1000, argument: 0 }.encode(), Err(NotificationError::FieldTooWide));
        assert_eq!(Message::SpawnResult { image: 0, child: 1 << 48 }.encode(), Err(NotificationError::FieldTooWide));
        assert_eq!(Message::SocketDoorbell { payload: 1 << 60 }.encode(), Err(NotificationError::FieldTooWide));
        assert_eq!(Message::User { channel: 8, payload: 0 }.encode(), Err(NotificationError::FieldTooWide));
        assert_eq!(Message::JobExit { pd: 16, status: 0 }.encode(), Err(NotificationError::FieldTooWide));
        assert_eq!(Message::JobExit { pd: 15, status: 0 }.encode(), Err(NotificationError::FieldTooWide), "PD 15");
    }

    #[test]
    fn a_job_exit_carries_its_pd_and_status_and_nothing_else() {
        for (pd, status) in [(0, 0), (6, 42), (14, 255)] {
            let n = Message::JobExit { pd, status }.encode().unwrap();
            assert_eq!(n.payload(), u64::from(pd) | u64::from(status) << 4);
            assert_eq!(Message::decode(n), Ok(Message::JobExit { pd, status }));
        }
        let extra = Notification::new(MailboxOpcode::JOB_EXIT, 6 | 1 << 12).unwrap();
        assert_eq!(Message::decode(extra), Err(NotificationError::Malformed));
        let fifteen = Notification::new(MailboxOpcode::JOB_EXIT, 0xf | 9 << 4).unwrap();
        assert_eq!(Message::decode(fifteen), Err(NotificationError::Malformed));
    }
}
