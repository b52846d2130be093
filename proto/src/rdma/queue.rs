//! A PD's RDMA queues (`docs/hw/pldma.md`, "Queue set"): the work queue its process writes,
//! the completion queue the R5 writes, and the wake-up handshake.

use crate::ipc::Ring;
use core::sync::atomic::{AtomicU32, Ordering};
use hal::pldma::USER_VA_LIMIT;

pub const WQ_ENTRIES: usize = 64;
pub const CQ_ENTRIES: usize = 64;
pub const QUEUE_SET_BYTES: u64 = 8 * 1024;

/// A work queue entry as the queue holds it (64 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawWqe {
    pub op: u8,
    pub flags: u8,
    pub node: u16,
    pub len: u32,
    pub local: u64,
    pub remote: u64,
    pub tag: u64,
    pub imm: u32,
    pub reserved0: u32,
    pub reserved1: [u64; 3],
}

/// A completion queue entry as the queue holds it (32 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawCqe {
    pub tag: u64,
    pub wq_index: u32,
    pub len: u32,
    pub status: u8,
    pub kind: u8,
    pub node: u16,
    pub imm: u32,
    pub reserved: u64,
}

const _: () = assert!(core::mem::size_of::<RawWqe>() == 64);
const _: () = assert!(core::mem::size_of::<RawCqe>() == 32);

pub type WorkQueue = Ring<RawWqe, WQ_ENTRIES>;
pub type CompletionQueue = Ring<RawCqe, CQ_ENTRIES>;

/// The 8 KiB a PD's process shares with the R5.
#[repr(C, align(64))]
pub struct QueueSet {
    /// The process produces, the R5 consumes.
    pub wq: WorkQueue,
    /// The R5 produces, the process consumes.
    pub cq: CompletionQueue,
    /// Written by the process: `arm != notified` asks for an interrupt at the next completion.
    pub arm: AtomicU32,
    _pad0: [u32; 15],
    /// Written by the R5: the `arm` value it last answered.
    pub notified: AtomicU32,
    /// Written by the R5: RemoteWrite completions dropped because the CQ was full.
    pub notify_lost: AtomicU32,
    /// Written by the R5: not 0 while it looks at this WQ at every round of its loop, so a
    /// process need not ring the doorbell ([`QueueSet::doorbell_needed`]).
    pub wq_polled: AtomicU32,
    /// Written by the R5: WQEs of this PD it refused as malformed (each got a BadRequest CQE;
    /// wraps).
    pub bad_wqes: AtomicU32,
    _pad1: [u32; 12],
}

const _: () = assert!(core::mem::size_of::<QueueSet>() as u64 <= QUEUE_SET_BYTES);

impl QueueSet {
    /// Asks the R5 for one completion interrupt ("Using the queues", step 4), unless one is
    /// asked for already (`arm != notified`). The caller looks at the CQ once more afterwards: a
    /// CQE posted before the R5 saw the new `arm` raises no interrupt.
    pub fn arm_once(&self) {
        let notified = self.notified.load(Ordering::Acquire);
        if self.arm.load(Ordering::Relaxed) == notified {
            self.arm.store(notified.wrapping_add(1), Ordering::Release);
        }
        crate::ipc::system_barrier();
    }

    /// Whether a process that just published WQEs must ring the doorbell ("Using the queues",
    /// step 2): only when the R5 does not poll this WQ. An R5 that stops polling clears
    /// `wq_polled` first and looks at the WQ once more before it waits for doorbells, so a WQE
    /// published before the process read the flag is never left behind.
    pub fn doorbell_needed(&self) -> bool {
        crate::ipc::system_barrier();
        self.wq_polled.load(Ordering::Acquire) == 0
    }

    /// Whether an interrupt is asked for and not answered yet.
    pub fn is_armed(&self) -> bool {
        self.arm.load(Ordering::Acquire) != self.notified.load(Ordering::Acquire)
    }
}

pub mod op {
    pub const WRITE: u8 = 0x1;
    pub const READ: u8 = 0x2;
}

pub mod wqe_flags {
    pub const NOTIFY: u8 = 1 << 0;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Local to remote.
    Write,
    /// Remote to local.
    Read,
}

/// A validated WQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wqe {
    pub direction: Direction,
    pub node: u16,
    pub len: u32,
    pub local: u64,
    pub remote: u64,
    pub tag: u64,
    /// Write only: the target's RemoteWrite CQE carries it.
    pub notify: Option<u32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WqeError {
    UnknownOp(u8),
    BadFlags(u8),
    ZeroLength,
    /// A range runs past the user half.
    BadRange,
    ReservedNotZero,
}

impl Wqe {
    pub fn encode(&self) -> RawWqe {
        RawWqe {
            op: match self.direction {
                Direction::Write => op::WRITE,
                Direction::Read => op::READ,
            },
            flags: if self.notify.is_some() { wqe_flags::NOTIFY } else { 0 },
            node: self.node,
            len: self.len,
            local: self.local,
            remote: self.remote,
            tag: self.tag,
            imm: self.notify.unwrap_or(0),
            ..RawWqe::default()
        }
    }

    /// Every rule of the WQE table; a WQE that breaks one gets a BadRequest CQE.
    pub fn decode(r: &RawWqe) -> Result<Self, WqeError> {
        let direction = match r.op {
            op::WRITE => Direction::Write,
            op::READ => Direction::Read,
            other => return Err(WqeError::UnknownOp(other)),
        };
        let notify = match (r.flags, direction) {
            (0, _) => None,
            (wqe_flags::NOTIFY, Direction::Write) => Some(r.imm),
            (other, _) => return Err(WqeError::BadFlags(other)),
        };
        if r.reserved0 != 0 || r.reserved1 != [0; 3] || (notify.is_none() && r.imm != 0) {
            return Err(WqeError::ReservedNotZero);
        }
        if r.len == 0 {
            return Err(WqeError::ZeroLength);
        }
        let fits = |va: u64| va.checked_add(u64::from(r.len)).is_some_and(|end| end <= USER_VA_LIMIT);
        if !fits(r.local) || !fits(r.remote) {
            return Err(WqeError::BadRange);
        }
        Ok(Self { direction, node: r.node, len: r.len, local: r.local, remote: r.remote, tag: r.tag, notify })
    }
}

/// How a transfer ended (`docs/hw/pldma.md`, "CQE status").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum CqeStatus {
    Ok = 0x0,
    BadRequest = 0x1,
    FaultLocal = 0x2,
    FaultRemote = 0x3,
    Timeout = 0x4,
    RemoteError = 0x5,
    LocalError = 0x6,
    NoRemotePd = 0x7,
    EngineRefused = 0x8,
}

impl CqeStatus {
    pub const ALL: [CqeStatus; 9] = [
        CqeStatus::Ok,
        CqeStatus::BadRequest,
        CqeStatus::FaultLocal,
        CqeStatus::FaultRemote,
        CqeStatus::Timeout,
        CqeStatus::RemoteError,
        CqeStatus::LocalError,
        CqeStatus::NoRemotePd,
        CqeStatus::EngineRefused,
    ];

    pub fn from_raw(raw: u8) -> Option<Self> {
        Self::ALL.get(usize::from(raw)).copied()
    }

    pub const fn name(self) -> &'static str {
        match self {
            CqeStatus::Ok => "Ok",
            CqeStatus::BadRequest => "BadRequest",
            CqeStatus::FaultLocal => "FaultLocal",
            CqeStatus::FaultRemote => "FaultRemote",
            CqeStatus::Timeout => "Timeout",
            CqeStatus::RemoteError => "RemoteError",
            CqeStatus::LocalError => "LocalError",
            CqeStatus::NoRemotePd => "NoRemotePd",
            CqeStatus::EngineRefused => "EngineRefused",
        }
    }
}

pub mod cqe_kind {
    pub const LOCAL: u8 = 0x0;
    pub const REMOTE_WRITE: u8 = 0x1;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cqe {
    /// The completion of this process's WQE.
    Local { tag: u64, wq_index: u32, len: u32, status: CqeStatus, node: u16 },
    /// A NOTIFY write from `node` has landed in this process's memory.
    RemoteWrite { node: u16, imm: u32 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CqeError {
    UnknownKind(u8),
    UnknownStatus(u8),
    ReservedNotZero,
}

impl Cqe {
    pub fn encode(&self) -> RawCqe {
        match *self {
            Cqe::Local { tag, wq_index, len, status, node } => {
                RawCqe { tag, wq_index, len, status: status as u8, kind: cqe_kind::LOCAL, node, ..RawCqe::default() }
            }
            Cqe::RemoteWrite { node, imm } => RawCqe { kind: cqe_kind::REMOTE_WRITE, node, imm, ..RawCqe::default() },
        }
    }

    /// For the user library: what the R5 posted.
    pub fn decode(r: &RawCqe) -> Result<Self, CqeError> {
        if r.reserved != 0 {
            return Err(CqeError::ReservedNotZero);
        }
        match r.kind {
            cqe_kind::LOCAL => {
                let status = CqeStatus::from_raw(r.status).ok_or(CqeError::UnknownStatus(r.status))?;
                if r.imm != 0 {
                    return Err(CqeError::ReservedNotZero);
                }
                Ok(Cqe::Local { tag: r.tag, wq_index: r.wq_index, len: r.len, status, node: r.node })
            }
            cqe_kind::REMOTE_WRITE => {
                if r.tag != 0 || r.wq_index != 0 || r.len != 0 || r.status != 0 {
                    return Err(CqeError::ReservedNotZero);
                }
                Ok(Cqe::RemoteWrite { node: r.node, imm: r.imm })
            }
            other => Err(CqeError::UnknownKind(other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hal::doc_table;
    const DOC: &str = include_str!("../../../docs/hw/pldma.md");
    use core::mem::offset_of;
    use std::string::String;
    use std::vec::Vec;

    #[test]
    fn arming_asks_for_one_interrupt_until_the_r5_answers() {
        // SAFETY: zero bytes are a fresh queue set (atomics and plain integers).
        let set: std::boxed::Box<QueueSet> = std::boxed::Box::new(unsafe { core::mem::zeroed() });
        assert!(!set.is_armed());
        set.arm_once();
        assert!(set.is_armed());
        assert_eq!(set.arm.load(Ordering::Relaxed), 1);
        set.arm_once();
        assert_eq!(set.arm.load(Ordering::Relaxed), 1, "armed already: unchanged");
        set.notified.store(1, Ordering::Relaxed);
        assert!(!set.is_armed(), "answered");
        set.arm_once();
        assert_eq!(set.arm.load(Ordering::Relaxed), 2);
    }

    fn named(rows: &[(&str, usize)]) -> Vec<(String, usize)> {
        rows.iter().map(|(n, o)| ((*n).into(), *o)).collect()
    }

    #[test]
    fn layouts_match_the_doc() {
        let set = [
            ("wq", offset_of!(QueueSet, wq)),
            ("cq", offset_of!(QueueSet, cq)),
            ("arm", offset_of!(QueueSet, arm)),
            ("notified", offset_of!(QueueSet, notified)),
            ("notify_lost", offset_of!(QueueSet, notify_lost)),
            ("wq_polled", offset_of!(QueueSet, wq_polled)),
            ("bad_wqes", offset_of!(QueueSet, bad_wqes)),
        ];
        assert_eq!(doc_table(DOC, "Queue set (one per PD"), named(&set));
        assert_eq!(offset_of!(QueueSet, cq) - offset_of!(QueueSet, wq), size_of::<WorkQueue>());
        let wqe = [
            ("op", offset_of!(RawWqe, op)),
            ("flags", offset_of!(RawWqe, flags)),
            ("node", offset_of!(RawWqe, node)),
            ("len", offset_of!(RawWqe, len)),
            ("local", offset_of!(RawWqe, local)),
            ("remote", offset_of!(RawWqe, remote)),
            ("tag", offset_of!(RawWqe, tag)),
            ("imm", offset_of!(RawWqe, imm)),
            ("reserved0", offset_of!(RawWqe, reserved0)),
            ("reserved1", offset_of!(RawWqe, reserved1)),
        ];
        assert_eq!(doc_table(DOC, "Work queue entry"), named(&wqe));
        let cqe = [
            ("tag", offset_of!(RawCqe, tag)),
            ("wq_index", offset_of!(RawCqe, wq_index)),
            ("len", offset_of!(RawCqe, len)),
            ("status", offset_of!(RawCqe, status)),
            ("kind", offset_of!(RawCqe, kind)),
            ("node", offset_of!(RawCqe, node)),
            ("imm", offset_of!(RawCqe, imm)),
            ("reserved", offset_of!(RawCqe, reserved)),
        ];
        assert_eq!(doc_table(DOC, "Completion queue entry"), named(&cqe));
        let statuses: Vec<(String, usize)> = CqeStatus::ALL.iter().map(|s| (s.name().into(), *s as usize)).collect();
        assert_eq!(doc_table(DOC, "CQE status"), statuses);
    }

    #[test]
    fn wqes_round_trip_and_bad_ones_are_refused() {
        let w = Wqe {
            direction: Direction::Write,
            node: 3,
            len: 1 << 20,
            local: 0x1000,
            remote: 0x2000,
            tag: 42,
            notify: Some(7),
        };
        assert_eq!(Wqe::decode(&w.encode()), Ok(w));
        let r = Wqe { direction: Direction::Read, notify: None, ..w };
        assert_eq!(Wqe::decode(&r.encode()), Ok(r));
        let bad = |f: fn(&mut RawWqe)| {
            let mut raw = w.encode();
            f(&mut raw);
            Wqe::decode(&raw)
        };
        assert_eq!(bad(|r| r.op = 0), Err(WqeError::UnknownOp(0)));
        assert_eq!(bad(|r| r.op = 3), Err(WqeError::UnknownOp(3)));
        assert_eq!(bad(|r| r.flags = 2), Err(WqeError::BadFlags(2)));
        assert_eq!(bad(|r| r.op = op::READ), Err(WqeError::BadFlags(1)), "NOTIFY on a read");
        assert_eq!(bad(|r| r.len = 0), Err(WqeError::ZeroLength));
        assert_eq!(bad(|r| r.local = USER_VA_LIMIT - 1), Err(WqeError::BadRange));
        assert_eq!(bad(|r| r.remote = u64::MAX), Err(WqeError::BadRange));
        assert_eq!(bad(|r| r.reserved1[0] = 1), Err(WqeError::ReservedNotZero));
        assert_eq!(
            bad(|r| {
                r.flags = 0;
                r.imm = 1
            }),
            Err(WqeError::ReservedNotZero)
        );
    }

    #[test]
    fn cqes_round_trip() {
        for c in [
            Cqe::Local { tag: u64::MAX, wq_index: 7, len: 9, status: CqeStatus::Timeout, node: 2 },
            Cqe::RemoteWrite { node: 4, imm: 0xfeed },
        ] {
            assert_eq!(Cqe::decode(&c.encode()), Ok(c));
        }
        let mut raw = Cqe::RemoteWrite { node: 1, imm: 1 }.encode();
        raw.kind = 5;
        assert_eq!(Cqe::decode(&raw), Err(CqeError::UnknownKind(5)));
        raw.kind = 0;
        raw.imm = 0;
        raw.status = 9;
        assert_eq!(Cqe::decode(&raw), Err(CqeError::UnknownStatus(9)));
    }
}
