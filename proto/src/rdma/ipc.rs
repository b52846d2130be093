//! The RDMA requests of the A53/R5 IPC ring (`docs/hw/ipc.md`, `docs/hw/pldma.md`
//! "Registering a PD's queues"): typed requests, the reply statuses, the scheduler's parameters
//! and counters as they travel in a message's arguments.

use crate::ipc::{Message, op};
use hal::pldma::codes::RapfAction;
use hal::pldma::{Pd, SEQ_MASK, TID_LIMIT};

/// args[0] of every RDMA reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum RdmaStatus {
    Ok = 0,
    BadPd = 1,
    AlreadyRegistered = 2,
    NotRegistered = 3,
    /// The queue set is not page aligned inside the queue area, or overlaps another PD's.
    BadQueueAddress = 4,
    /// RDMA_FAULT_RESOLVED for a seq that is not the transaction's current one.
    Stale = 5,
    /// RDMA_FAULT_RESOLVED for a tid that is not in flight, or not the PD's.
    Foreign = 6,
    BadArgument = 7,
}

impl RdmaStatus {
    pub const ALL: [RdmaStatus; 8] = [
        RdmaStatus::Ok,
        RdmaStatus::BadPd,
        RdmaStatus::AlreadyRegistered,
        RdmaStatus::NotRegistered,
        RdmaStatus::BadQueueAddress,
        RdmaStatus::Stale,
        RdmaStatus::Foreign,
        RdmaStatus::BadArgument,
    ];

    pub fn from_raw(raw: u64) -> Option<Self> {
        Self::ALL.get(usize::try_from(raw).ok()?).copied()
    }
}

/// The scheduler's parameters (`RDMA_CONFIG`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RdmaConfig {
    pub timeout_us: u64,
    /// Blocks in flight per transfer, 1..=`MAX_WINDOW`.
    pub window: u8,
    /// Timeouts of one block that are retransmitted; the next one fails the transfer.
    pub max_timeouts: u8,
    /// WriteError/ReadError NACK retransmissions of one block before the transfer fails.
    pub max_nack_retries: u8,
}

pub const MAX_WINDOW: u8 = 4;

impl RdmaConfig {
    /// The defaults of `docs/hw/pldma.md` with the board's timeout.
    pub const fn with_timeout_us(timeout_us: u64) -> Self {
        Self { timeout_us, window: 2, max_timeouts: 32, max_nack_retries: 4 }
    }

    pub fn is_valid(&self) -> bool {
        self.timeout_us > 0 && (1..=MAX_WINDOW).contains(&self.window) && self.max_timeouts > 0
    }

    /// The request; 0 in a field keeps the current value.
    pub fn request(&self, seq: u32) -> Message {
        let args =
            [self.timeout_us, self.window.into(), self.max_timeouts.into(), self.max_nack_retries.into(), 0, 0, 0];
        Message::new(op::RDMA_CONFIG, seq, args)
    }

    /// `self` changed by a request's nonzero fields, if the result is valid.
    pub fn updated(&self, args: &[u64; 7]) -> Option<Self> {
        let keep = |new: u64, old: u8| if new == 0 { Some(old) } else { u8::try_from(new).ok() };
        let next = Self {
            timeout_us: if args[0] == 0 { self.timeout_us } else { args[0] },
            window: keep(args[1], self.window)?,
            max_timeouts: keep(args[2], self.max_timeouts)?,
            max_nack_retries: keep(args[3], self.max_nack_retries)?,
        };
        next.is_valid().then_some(next)
    }

    /// The reply's args[1..5].
    pub fn to_args(&self) -> [u64; 4] {
        [self.timeout_us, self.window.into(), self.max_timeouts.into(), self.max_nack_retries.into()]
    }
}

/// A typed RDMA request, as the R5 decodes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RdmaRequest {
    Register { pd: Pd, queue_set: u64 },
    Unregister { pd: Pd },
    FaultResolved { pd: Pd, tid: u16, seq: u16, action: RapfAction },
    Config { args: [u64; 7] },
    Stats { page: u64 },
}

impl RdmaRequest {
    /// `None` if `m` is not an RDMA request; `Err` if it is one with bad arguments.
    pub fn decode(m: &Message) -> Option<Result<Self, RdmaStatus>> {
        let pd = || u16::try_from(m.args[0]).ok().and_then(Pd::new).ok_or(RdmaStatus::BadPd);
        Some(match m.op {
            op::RDMA_REGISTER => pd().map(|pd| RdmaRequest::Register { pd, queue_set: m.args[1] }),
            op::RDMA_UNREGISTER => pd().map(|pd| RdmaRequest::Unregister { pd }),
            op::RDMA_FAULT_RESOLVED => pd().and_then(|pd| {
                let tid = u16::try_from(m.args[1]).ok().filter(|&t| t < TID_LIMIT);
                let seq = u16::try_from(m.args[2]).ok().filter(|&s| s <= SEQ_MASK);
                let action = u8::try_from(m.args[3]).ok().and_then(RapfAction::from_raw);
                match (tid, seq, action) {
                    (Some(tid), Some(seq), Some(action)) => Ok(RdmaRequest::FaultResolved { pd, tid, seq, action }),
                    _ => Err(RdmaStatus::BadArgument),
                }
            }),
            op::RDMA_CONFIG => Ok(RdmaRequest::Config { args: m.args }),
            op::RDMA_STATS => Ok(RdmaRequest::Stats { page: m.args[0] }),
            _ => return None,
        })
    }

    pub fn encode(&self, seq: u32) -> Message {
        let (op, args) = match *self {
            RdmaRequest::Register { pd, queue_set } => (op::RDMA_REGISTER, [pd.raw().into(), queue_set, 0, 0, 0, 0, 0]),
            RdmaRequest::Unregister { pd } => (op::RDMA_UNREGISTER, [pd.raw().into(), 0, 0, 0, 0, 0, 0]),
            RdmaRequest::FaultResolved { pd, tid, seq, action } => {
                (op::RDMA_FAULT_RESOLVED, [pd.raw().into(), tid.into(), seq.into(), action.raw().into(), 0, 0, 0])
            }
            RdmaRequest::Config { args } => (op::RDMA_CONFIG, args),
            RdmaRequest::Stats { page } => (op::RDMA_STATS, [page, 0, 0, 0, 0, 0, 0]),
        };
        Message::new(op, seq, args)
    }
}

/// The scheduler's counters (`RDMA_STATS`), seven per page, [`STATS_PAGES`] pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RdmaStats {
    // Page 0: retransmissions and refused messages.
    pub timeout_retransmits: u64,
    pub rapf_retransmits: u64,
    pub local_retransmits: u64,
    pub nack_retransmits: u64,
    pub stale_messages: u64,
    pub foreign_messages: u64,
    pub pf_nacks: u64,
    // Page 1: work.
    pub transfers_started: u64,
    pub transfers_completed: u64,
    pub transfers_failed: u64,
    pub blocks_sent: u64,
    pub blocks_acked: u64,
    pub read_requests_served: u64,
    pub read_requests_refused: u64,
    // Page 2: oddities.
    pub bad_wqes: u64,
    pub malformed_events: u64,
    pub descriptors_dropped: u64,
    pub remote_notifies: u64,
    pub notifies_lost: u64,
    pub cq_interrupts: u64,
    pub descriptors_refused: u64,
    // Page 3: what the work costs the R5 (filled by the firmware around the scheduler).
    /// R5 cycle-counter ticks spent in scheduler rounds that had something to do (events, WQEs,
    /// descriptors, CQEs); under QEMU's `-icount shift=0` a tick is one instruction.
    pub busy_cycles: u64,
    /// Scheduler rounds that had something to do.
    pub busy_rounds: u64,
    /// MMIO accesses the R5 made through forwarding (QEMU; 0 on the board).
    pub forwarded_accesses: u64,
    /// R5 cycle-counter ticks spent in the data-abort handler forwarding those accesses (trap,
    /// decode, the host's round trip): the emulator's share of `busy_cycles`, which a board's
    /// device store does not have. Under `-icount shift=0` a tick is one instruction.
    pub forwarded_cycles: u64,
    /// Of `timeout_retransmits`, those of blocks paused on a page fault: the safety net fired
    /// because no RAPF, fault message or ACK came within the paused timeout.
    pub paused_timeouts: u64,
    /// Paused blocks taken off pause by a `Resumed` PF-NACK (stall mode: RESUME let the
    /// block's stalled accesses go).
    pub stalls_resumed: u64,
}

pub const STATS_PAGES: u64 = 4;

/// The console line a test image prints at the end of a lossy run, followed by its R5's
/// `timeout_retransmits`: the test runner weighs the nodes' sum against the datagrams the links
/// dropped.
pub const TIMEOUTS_LINE: &str = "rdma timeouts since boot:";

impl Default for RdmaStats {
    fn default() -> Self {
        Self::ZERO
    }
}

impl RdmaStats {
    pub const ZERO: Self = Self {
        timeout_retransmits: 0,
        rapf_retransmits: 0,
        local_retransmits: 0,
        nack_retransmits: 0,
        stale_messages: 0,
        foreign_messages: 0,
        pf_nacks: 0,
        transfers_started: 0,
        transfers_completed: 0,
        transfers_failed: 0,
        blocks_sent: 0,
        blocks_acked: 0,
        read_requests_served: 0,
        read_requests_refused: 0,
        bad_wqes: 0,
        malformed_events: 0,
        descriptors_dropped: 0,
        remote_notifies: 0,
        notifies_lost: 0,
        cq_interrupts: 0,
        descriptors_refused: 0,
        busy_cycles: 0,
        busy_rounds: 0,
        forwarded_accesses: 0,
        forwarded_cycles: 0,
        paused_timeouts: 0,
        stalls_resumed: 0,
    };

    /// Blocks sent again because a fault was resolved: on a RAPF, or on this node's fault
    /// message (none in stall mode, where RESUME retries the access itself).
    pub fn fault_retransmits(&self) -> u64 {
        self.rapf_retransmits + self.local_retransmits
    }

    /// Page `page`, or `None` past the last one.
    pub fn page(&self, page: u64) -> Option<[u64; 7]> {
        Some(match page {
            0 => [
                self.timeout_retransmits,
                self.rapf_retransmits,
                self.local_retransmits,
                self.nack_retransmits,
                self.stale_messages,
                self.foreign_messages,
                self.pf_nacks,
            ],
            1 => [
                self.transfers_started,
                self.transfers_completed,
                self.transfers_failed,
                self.blocks_sent,
                self.blocks_acked,
                self.read_requests_served,
                self.read_requests_refused,
            ],
            2 => [
                self.bad_wqes,
                self.malformed_events,
                self.descriptors_dropped,
                self.remote_notifies,
                self.notifies_lost,
                self.cq_interrupts,
                self.descriptors_refused,
            ],
            3 => [
                self.busy_cycles,
                self.busy_rounds,
                self.forwarded_accesses,
                self.forwarded_cycles,
                self.paused_timeouts,
                self.stalls_resumed,
                0,
            ],
            _ => return None,
        })
    }

    /// The kernel's side: the counters from the three pages' replies.
    pub fn from_pages(pages: [[u64; 7]; STATS_PAGES as usize]) -> Self {
        let [p0, p1, p2, p3] = pages;
        Self {
            timeout_retransmits: p0[0],
            rapf_retransmits: p0[1],
            local_retransmits: p0[2],
            nack_retransmits: p0[3],
            stale_messages: p0[4],
            foreign_messages: p0[5],
            pf_nacks: p0[6],
            transfers_started: p1[0],
            transfers_completed: p1[1],
            transfers_failed: p1[2],
            blocks_sent: p1[3],
            blocks_acked: p1[4],
            read_requests_served: p1[5],
            read_requests_refused: p1[6],
            bad_wqes: p2[0],
            malformed_events: p2[1],
            descriptors_dropped: p2[2],
            remote_notifies: p2[3],
            notifies_lost: p2[4],
            cq_interrupts: p2[5],
            descriptors_refused: p2[6],
            busy_cycles: p3[0],
            busy_rounds: p3[1],
            forwarded_accesses: p3[2],
            forwarded_cycles: p3[3],
            paused_timeouts: p3[4],
            stalls_resumed: p3[5],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip_and_bad_arguments_are_typed() {
        let pd = Pd::new(4).unwrap();
        for r in [
            RdmaRequest::Register { pd, queue_set: 0x0510_2000 },
            RdmaRequest::Unregister { pd },
            RdmaRequest::FaultResolved { pd, tid: 0x3fff, seq: 5, action: RapfAction::Abort },
            RdmaRequest::Config { args: [1, 2, 3, 4, 0, 0, 0] },
            RdmaRequest::Stats { page: 2 },
        ] {
            assert_eq!(RdmaRequest::decode(&r.encode(7)), Some(Ok(r)));
        }
        let m = |op, args| Message::new(op, 0, args);
        assert_eq!(RdmaRequest::decode(&m(op::PING, [0; 7])), None);
        assert_eq!(RdmaRequest::decode(&m(op::RDMA_REGISTER, [16, 0, 0, 0, 0, 0, 0])), Some(Err(RdmaStatus::BadPd)));
        assert_eq!(
            RdmaRequest::decode(&m(op::RDMA_UNREGISTER, [u64::MAX, 0, 0, 0, 0, 0, 0])),
            Some(Err(RdmaStatus::BadPd))
        );
        assert_eq!(
            RdmaRequest::decode(&m(op::RDMA_FAULT_RESOLVED, [1, 0x4000, 0, 0, 0, 0, 0])),
            Some(Err(RdmaStatus::BadArgument))
        );
        assert_eq!(
            RdmaRequest::decode(&m(op::RDMA_FAULT_RESOLVED, [1, 1, 1, 2, 0, 0, 0])),
            Some(Err(RdmaStatus::BadArgument)),
            "action 2"
        );
    }

    #[test]
    fn config_updates_keep_zero_fields_and_refuse_bad_values() {
        let c = RdmaConfig::with_timeout_us(1000);
        assert_eq!(c.updated(&[0; 7]), Some(c));
        let d = c.updated(&[50, 4, 0, 0, 0, 0, 0]).unwrap();
        assert_eq!((d.timeout_us, d.window, d.max_timeouts), (50, 4, 32));
        assert_eq!(c.updated(&[0, 5, 0, 0, 0, 0, 0]), None, "window above the maximum");
        assert_eq!(c.updated(&[0, 0, 256, 0, 0, 0, 0]), None, "does not fit");
        assert_eq!(RdmaRequest::decode(&d.request(1)), Some(Ok(RdmaRequest::Config { args: d.request(1).args })));
    }

    #[test]
    fn stats_travel_in_pages() {
        let s = RdmaStats {
            timeout_retransmits: 1,
            read_requests_refused: 2,
            descriptors_refused: 3,
            forwarded_accesses: 4,
            forwarded_cycles: 5,
            paused_timeouts: 6,
            stalls_resumed: 7,
            ..Default::default()
        };
        let pages = [s.page(0).unwrap(), s.page(1).unwrap(), s.page(2).unwrap(), s.page(3).unwrap()];
        assert_eq!(RdmaStats::from_pages(pages), s);
        assert_eq!(s.page(STATS_PAGES), None);
    }
}
