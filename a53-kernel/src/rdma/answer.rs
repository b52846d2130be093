//! The answer to a receiver fault FIFO entry (`docs/hw/pldma.md`, "Fault handling").
//!
//! Every user buffer is resident in this kernel: a process's pages are all mapped when it
//! starts and stay mapped until it ends. An access the SMMU refused therefore named an address
//! outside every region of the process (or wrote to a read-only one), and no mapping can make it
//! succeed: the answer is always Abort, and the transfer ends with one error CQE (FaultLocal or
//! FaultRemote) instead of being retried until its timeouts run out. Demand paging will map the
//! page first and answer Retry where it can.

use hal::pldma::Pd;
use hal::pldma::codes::RapfAction;
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

/// The action for a fault on resident memory (above).
pub const RESIDENT_ACTION: RapfAction = RapfAction::Abort;

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
    use hal::pldma::codes::FaultCode;

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
}
