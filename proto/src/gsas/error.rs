//! Error codes of the response's 64-bit error field (seed §2.2.3 Fig. 9: "0 = success"; the seed
//! defines no other value). See `docs/hw/gsas-packets.md` "Error codes".

#[repr(u64)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorCode {
    /// The opcode byte names no operation.
    BadOpcode = 1,
    /// The address is not a multiple of the operation's alignment (seed §2.4.1 Table 1), or the
    /// access would cross the end of its page.
    Unaligned = 2,
    /// No shared page is mapped at the address on this node.
    Unmapped = 3,
    /// The page belongs to another protection domain and is not shared with the sender for this
    /// access, or only the owner may do this (free), or a kernel-only notification.
    PermissionDenied = 4,
    /// No frame or no software-MMU entry or no virtual range left.
    OutOfMemory = 5,
    /// A field is out of range: reserved byte not zero, an unused argument not zero, a value
    /// wider than the operation, a page count of 0 or over the limit, a malformed spawn
    /// description, a free that does not name the start of an allocation, ...
    BadArgument = 6,
    /// The address names another node: this service serves its own partition only.
    WrongNode = 7,
    /// The spawner refused the description.
    SpawnFailed = 8,
    /// The local memory refused an access to a mapped frame (an internal inconsistency).
    MemoryFault = 9,
    /// Notify: no one registered the notification's opcode on this node.
    NoReceiver = 10,
    /// Notify: the receiver's queue is full; the notification was not queued.
    QueueFull = 11,
    /// A process atomic: the sender has no protection domain (a kernel domain, or PD 15: no
    /// RDMA), or no process of its domain lives on this node.
    NoProcess = 12,
}

/// A 64-bit error field that is neither 0 nor an [`ErrorCode`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnknownErrorCode(pub u64);

impl ErrorCode {
    pub const ALL: [ErrorCode; 12] = [
        ErrorCode::BadOpcode,
        ErrorCode::Unaligned,
        ErrorCode::Unmapped,
        ErrorCode::PermissionDenied,
        ErrorCode::OutOfMemory,
        ErrorCode::BadArgument,
        ErrorCode::WrongNode,
        ErrorCode::SpawnFailed,
        ErrorCode::MemoryFault,
        ErrorCode::NoReceiver,
        ErrorCode::QueueFull,
        ErrorCode::NoProcess,
    ];

    pub const fn as_u64(self) -> u64 {
        self as u64
    }
}

impl TryFrom<u64> for ErrorCode {
    type Error = UnknownErrorCode;

    fn try_from(value: u64) -> Result<Self, Self::Error> {
        ErrorCode::ALL.into_iter().find(|e| e.as_u64() == value).ok_or(UnknownErrorCode(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_distinct_nonzero_and_decode() {
        for (i, e) in ErrorCode::ALL.iter().enumerate() {
            assert_ne!(e.as_u64(), 0);
            assert_eq!(ErrorCode::try_from(e.as_u64()), Ok(*e));
            assert!(ErrorCode::ALL[..i].iter().all(|o| o.as_u64() != e.as_u64()));
        }
        assert_eq!(ErrorCode::try_from(0), Err(UnknownErrorCode(0)));
        assert_eq!(ErrorCode::try_from(13), Err(UnknownErrorCode(13)));
        assert_eq!(ErrorCode::try_from(u64::MAX), Err(UnknownErrorCode(u64::MAX)));
    }
}
