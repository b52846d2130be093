//! The answer to a receiver fault FIFO entry (`docs/hw/pldma.md`, "Fault handling").
//!
//! The kernel first tries to give the faulting page a frame (`process::paging`: a page of a
//! region that is not resident yet, and with touch-ahead the rest of its 16 KiB block): then the
//! answer is Retry, and the R5 sends the block again at once. A fault no mapping can cure (an
//! address outside every region of the process, a write to a read-only region, a bus error)
//! gets Abort, and the transfer ends with one error CQE (FaultLocal or FaultRemote) instead of
//! being retried until its timeouts run out.

use hal::pldma::Pd;
use hal::pldma::codes::{FaultCode, RapfAction};
use hal::pldma::fault::FaultEntry;
use hal::pldma::rapf::RapfRequest;
use proto::rdma::ipc::RdmaRequest;

/// Where the answer goes: the R5 that owns the transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The owner is this node's R5: `RDMA_FAULT_RESOLVED` over the IPC ring.
    Local(RdmaRequest),
    /// The owner is another node's R5: a RAPF written to this node's PD page `pd`, which the
    /// engine sends there under the page's (wired) PD.
    Remote { pd: Pd, rapf: RapfRequest },
}

/// The action for `entry`, given whether its page now has a frame (`resolved`).
pub fn action(entry: &FaultEntry, resolved: bool) -> RapfAction {
    if page_access(entry).is_some() && resolved { RapfAction::Retry } else { RapfAction::Abort }
}

/// The access a page could cure: `Some(write)` for a source (read) or destination (write)
/// page fault; `None` for a bus error, which no mapping changes.
pub fn page_access(entry: &FaultEntry) -> Option<bool> {
    match entry.code {
        FaultCode::DestinationFault => Some(true),
        FaultCode::SourceFault => Some(false),
        _ => None,
    }
}

/// The last answered faults: several packets of one block that fault on one page push several
/// entries (the engine only drops one equal to the last it pushed); the first answer covers
/// them all, so the kernel skips entries of an attempt it answered lately (the seed compares
/// with the last two entries of the same source).
#[derive(Debug, Default)]
pub struct Recent {
    answered: [Option<(u16, u16, u16)>; 4],
    next: usize,
}

impl Recent {
    pub const fn new() -> Self {
        Self { answered: [None; 4], next: 0 }
    }

    /// Whether `entry`'s attempt (owner, tid, seq) was answered lately; if not, it is now.
    pub fn seen(&mut self, entry: &FaultEntry) -> bool {
        let key = Some((entry.node, entry.tid, entry.seq));
        if self.answered.contains(&key) {
            return true;
        }
        self.answered[self.next] = key;
        self.next = (self.next + 1) % self.answered.len();
        false
    }
}

/// The answer to `entry` on node `me`, with `action`.
pub fn answer(entry: &FaultEntry, me: u16, action: RapfAction) -> Answer {
    if entry.node == me {
        Answer::Local(RdmaRequest::FaultResolved { pd: entry.pd, tid: entry.tid, seq: entry.seq, action })
    } else {
        let rapf = RapfRequest { node: entry.node, tid: entry.tid, seq: entry.seq, action, claimed_pd: entry.pd.raw() };
        Answer::Remote { pd: entry.pd, rapf }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RESIDENT_ACTION: RapfAction = RapfAction::Abort;

    #[test]
    fn a_fault_owned_here_goes_to_the_r5_and_one_owned_elsewhere_to_its_pd_page() {
        let pd = Pd::new(6).unwrap();
        let local = FaultEntry::new(FaultCode::SourceFault, pd, 2, 0x3fff, 17, 0x40_1234);
        assert_eq!(
            answer(&local, 2, RESIDENT_ACTION),
            Answer::Local(RdmaRequest::FaultResolved { pd, tid: 0x3fff, seq: 17, action: RapfAction::Abort })
        );
        let remote = FaultEntry::new(FaultCode::DestinationFault, pd, 1, 9, 0x3fff, 0x7f_0000);
        let Answer::Remote { pd: page, rapf } = answer(&remote, 2, RESIDENT_ACTION) else {
            panic!("a remote owner gets a RAPF")
        };
        assert_eq!(page, pd, "written to the PD page of the faulting access's PD");
        assert_eq!(rapf, RapfRequest { node: 1, tid: 9, seq: 0x3fff, action: RapfAction::Abort, claimed_pd: 6 });
        assert!(rapf.encode().is_ok(), "the engine takes it");
        let back = RdmaRequest::FaultResolved { pd, tid: 1, seq: 2, action: RapfAction::Abort };
        assert_eq!(RdmaRequest::decode(&back.encode(3)), Some(Ok(back)), "the R5 takes it");
    }

    #[test]
    fn only_a_page_fault_that_got_its_page_is_retried() {
        let pd = Pd::new(2).unwrap();
        let entry = |code| FaultEntry::new(code, pd, 0, 1, 2, 0x1000);
        assert_eq!(action(&entry(FaultCode::DestinationFault), true), RapfAction::Retry);
        assert_eq!(action(&entry(FaultCode::SourceFault), true), RapfAction::Retry);
        assert_eq!(action(&entry(FaultCode::SourceFault), false), RapfAction::Abort, "outside every region");
        assert_eq!(action(&entry(FaultCode::DestinationBusError), true), RapfAction::Abort);
        assert_eq!(action(&entry(FaultCode::SourceBusError), true), RapfAction::Abort);
    }

    #[test]
    fn entries_of_an_attempt_answered_lately_are_skipped() {
        let pd = Pd::new(2).unwrap();
        let mut recent = Recent::new();
        let e = |node, tid, seq, page| FaultEntry::new(FaultCode::DestinationFault, pd, node, tid, seq, page);
        assert!(!recent.seen(&e(1, 5, 9, 0x1000)));
        assert!(recent.seen(&e(1, 5, 9, 0x2000)), "another packet of the same attempt");
        assert!(!recent.seen(&e(1, 5, 10, 0x1000)), "the retransmission's fault is new");
        assert!(!recent.seen(&e(0, 5, 9, 0x1000)), "another owner");
        for tid in 0..4 {
            assert!(!recent.seen(&e(2, tid, 0, 0)));
        }
        assert!(!recent.seen(&e(1, 5, 9, 0x1000)), "forgotten after four others");
    }
}
