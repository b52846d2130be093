//! Who may send a RAPF (`docs/hw/pldma.md`, "Who may send a RAPF"): a `rapf` write leaves the
//! engine only as the answer to a fault of the page's PD that this engine logged and that is
//! still waiting for one. The engine remembers the attempts of the last [`PER_PD`] faults of
//! each PD (owner, tid, seq); an answer takes its attempt off the list; anything else is
//! refused at the door, so no RAPF reaches an R5 that did not ask for it, at any rate.
//!
//! Bounded state, as the PL needs: [`PER_PD`] entries of 44 bits per PD.

use hal::pldma::fault::FaultEntry;
use hal::pldma::rapf::RapfRequest;
use hal::pldma::{PDS, Pd};
use std::collections::VecDeque;

/// Faults per PD that may wait for an answer at once; the oldest is forgotten past it (its
/// block is then retransmitted by its owner's timeout).
pub const PER_PD: usize = 16;

/// An attempt that faulted here: whose, which transaction, which attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Attempt {
    owner: u16,
    tid: u16,
    seq: u16,
}

#[derive(Debug)]
pub struct RapfGate {
    /// Per PD, the attempts awaiting an answer, oldest first (at most [`PER_PD`]).
    awaiting: [VecDeque<Attempt>; PDS],
    /// Per PD, answers let through and refused so far.
    pub refused: [u32; PDS],
    /// Faults forgotten because their PD's list was full.
    pub forgotten: u64,
}

impl Default for RapfGate {
    fn default() -> Self {
        Self { awaiting: core::array::from_fn(|_| VecDeque::with_capacity(PER_PD)), refused: [0; PDS], forgotten: 0 }
    }
}

impl RapfGate {
    /// The engine logged `entry` (pushed it into the fault FIFO, or found it equal to the last
    /// entry pushed): its attempt awaits an answer.
    pub fn faulted(&mut self, entry: &FaultEntry) {
        let attempt = Attempt { owner: entry.node, tid: entry.tid, seq: entry.seq };
        let list = &mut self.awaiting[entry.pd.index()];
        if list.iter().any(|a| *a == attempt) {
            return;
        }
        if list.len() == PER_PD {
            list.pop_front();
            self.forgotten += 1;
        }
        list.push_back(attempt);
    }

    /// A `rapf` write to PD page `pd`: whether it answers a fault awaiting it (which it then
    /// takes off the list). A refusal is counted for `pd`.
    pub fn admit(&mut self, pd: Pd, request: &RapfRequest) -> bool {
        let wanted = Attempt { owner: request.node, tid: request.tid, seq: request.seq };
        let list = &mut self.awaiting[pd.index()];
        match list.iter().position(|a| *a == wanted) {
            Some(i) => {
                list.remove(i);
                true
            }
            None => {
                self.refuse(pd);
                false
            }
        }
    }

    /// Refusals of every PD so far (wraps).
    pub fn refused_total(&self) -> u32 {
        self.refused.iter().fold(0u32, |sum, &r| sum.wrapping_add(r))
    }

    /// A `rapf` write refused for another reason (a bad field, the PD disabled).
    pub fn refuse(&mut self, pd: Pd) {
        self.refused[pd.index()] = self.refused[pd.index()].wrapping_add(1);
    }

    /// The PD was disabled: its faults await nothing any more.
    pub fn forget(&mut self, pds: u16) {
        for (p, list) in self.awaiting.iter_mut().enumerate() {
            if pds & 1 << p != 0 {
                list.clear();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hal::pldma::codes::{FaultCode, RapfAction};

    fn pd(n: u16) -> Pd {
        Pd::new(n).unwrap()
    }

    fn fault(p: u16, owner: u16, tid: u16, seq: u16) -> FaultEntry {
        FaultEntry::new(FaultCode::DestinationFault, pd(p), owner, tid, seq, 0x1000)
    }

    fn rapf(owner: u16, tid: u16, seq: u16) -> RapfRequest {
        RapfRequest { node: owner, tid, seq, action: RapfAction::Retry, claimed_pd: 0 }
    }

    #[test]
    fn a_rapf_passes_once_for_a_fault_of_its_pd_and_nothing_else_passes() {
        let mut gate = RapfGate::default();
        assert!(!gate.admit(pd(3), &rapf(1, 7, 9)), "no fault yet: forged");
        gate.faulted(&fault(3, 1, 7, 9));
        gate.faulted(&fault(3, 1, 7, 9));
        assert!(!gate.admit(pd(4), &rapf(1, 7, 9)), "another PD's page");
        assert!(!gate.admit(pd(3), &rapf(2, 7, 9)), "another owner");
        assert!(!gate.admit(pd(3), &rapf(1, 7, 10)), "another attempt");
        assert!(gate.admit(pd(3), &rapf(1, 7, 9)), "the answer");
        assert!(!gate.admit(pd(3), &rapf(1, 7, 9)), "once: the entries of one attempt are one");
        assert_eq!(gate.refused[3], 4);
        assert_eq!(gate.refused[4], 1);
    }

    #[test]
    fn the_oldest_fault_is_forgotten_past_the_bound_and_a_disabled_pd_forgets_all() {
        let mut gate = RapfGate::default();
        for tid in 0..=PER_PD as u16 {
            gate.faulted(&fault(2, 0, tid, 1));
        }
        assert_eq!(gate.forgotten, 1);
        assert!(!gate.admit(pd(2), &rapf(0, 0, 1)), "forgotten: its owner's timeout resends it");
        assert!(gate.admit(pd(2), &rapf(0, PER_PD as u16, 1)));
        assert!(gate.admit(pd(2), &rapf(0, 5, 1)), "from the middle of the list");
        gate.forget(1 << 2);
        assert!(!gate.admit(pd(2), &rapf(0, 6, 1)));
    }
}
