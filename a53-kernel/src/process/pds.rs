//! Which process holds which protection domain on this node (`docs/hw/pldma.md`, "Protection
//! domains"): plain logic, host-tested; the process table applies it.
//!
//! Every process is a member of a PD, the job it belongs to, which its domain number carries
//! (`proto::rdma::domain`). At most one process per PD per node *holds* it: that process gets
//! the PD's SMMU context bank, queue set and PD page, so it is the one a transfer of that PD to
//! this node reaches. How a spawn picks its PD:
//!
//! - [`PdRequest::Any`] (a local spawn: a new job): a PD of this node's share
//!   (`proto::rdma::domain::share`, so that no job started on another node has it) that is free
//!   and has no member here, the one used least recently (a round robin from the last one handed
//!   out), so that a PD just given up is not handed to an unrelated job at once. With none left
//!   the job runs without RDMA, in [`NO_RDMA`];
//! - [`PdRequest::Inherit`] (a remote spawn): the parent's PD, held if it is free here; if
//!   another process of the PD holds it here, the child is a member without RDMA resources (as
//!   a second process of a job on one node: the spawn tree of the GSAS tests does that).
//!   [`NO_RDMA`] is never held.

use hal::pldma::{PDS, Pd};
use proto::rdma::domain::NO_RDMA;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PdRequest {
    Any,
    Inherit(Pd),
}

/// A spawn's PD, and whether the process holds it here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PdChoice {
    pub pd: Pd,
    pub holds: bool,
}

impl PdChoice {
    const WITHOUT_RDMA: PdChoice = PdChoice { pd: NO_RDMA, holds: false };
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Holder {
    Free,
    /// Held by the process in this slot of the process table.
    Held(usize),
    /// Its last holder ended; its resources are being taken down.
    Draining,
}

#[derive(Debug)]
pub struct PdTable {
    holders: [Holder; PDS],
    /// Where the search of [`PdRequest::Any`] starts: after the PD it handed out last.
    cursor: usize,
}

impl Default for PdTable {
    fn default() -> Self {
        Self::new()
    }
}

impl PdTable {
    pub const fn new() -> Self {
        Self { holders: [Holder::Free; PDS], cursor: 0 }
    }

    /// The PD a spawn gets for `request`; `share` is the mask of PDs this node starts jobs in,
    /// `member(pd)` says whether a process of this node is a member of `pd` now. Nothing
    /// changes until [`hold`](Self::hold).
    pub fn choose(&self, request: PdRequest, share: u16, member: impl Fn(Pd) -> bool) -> PdChoice {
        let free = |pd: Pd| pd != NO_RDMA && self.holders[pd.index()] == Holder::Free;
        match request {
            PdRequest::Any => (0..PDS)
                .filter_map(|i| Pd::new(((self.cursor + i) % PDS) as u16))
                .find(|&pd| share & (1 << pd.raw()) != 0 && free(pd) && !member(pd))
                .map_or(PdChoice::WITHOUT_RDMA, |pd| PdChoice { pd, holds: true }),
            PdRequest::Inherit(pd) => PdChoice { pd, holds: free(pd) },
        }
    }

    /// The process in `slot` holds `pd` from now on.
    pub fn hold(&mut self, pd: Pd, slot: usize) {
        self.holders[pd.index()] = Holder::Held(slot);
        self.cursor = (pd.index() + 1) % PDS;
    }

    /// The holder of `pd` ended; its resources are being taken down.
    pub fn drain(&mut self, pd: Pd) {
        self.holders[pd.index()] = Holder::Draining;
    }

    /// `pd` may be held again.
    pub fn release(&mut self, pd: Pd) {
        self.holders[pd.index()] = Holder::Free;
    }

    /// The slot of the process that holds `pd`.
    pub fn holder(&self, pd: Pd) -> Option<usize> {
        match self.holders[pd.index()] {
            Holder::Held(slot) => Some(slot),
            Holder::Free | Holder::Draining => None,
        }
    }

    /// Every PD whose bit is set in `mask`, with the slot of its holder.
    pub fn holders_in(&self, mask: u16) -> impl Iterator<Item = (Pd, usize)> + '_ {
        (0..PDS as u16)
            .filter(move |p| mask & (1 << p) != 0)
            .filter_map(Pd::new)
            .filter_map(|pd| Some((pd, self.holder(pd)?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::rdma::domain::share;

    fn pd(p: u16) -> Pd {
        Pd::new(p).unwrap()
    }

    const ALONE: u16 = share(0, 1);

    #[test]
    fn any_takes_the_least_recently_handed_out_pd_that_has_no_member() {
        let mut t = PdTable::new();
        let nobody = |_: Pd| false;
        assert_eq!(t.choose(PdRequest::Any, ALONE, nobody), PdChoice { pd: pd(0), holds: true });
        t.hold(pd(0), 4);
        assert_eq!(t.choose(PdRequest::Any, ALONE, nobody).pd, pd(1));
        t.hold(pd(1), 5);
        t.drain(pd(0));
        t.release(pd(0));
        assert_eq!(t.choose(PdRequest::Any, ALONE, nobody).pd, pd(2), "PD 0 was just given up: not at once");
        assert_eq!(
            t.choose(PdRequest::Any, ALONE, |p| p == pd(2) || p == pd(3)).pd,
            pd(4),
            "a PD with a member here belongs to that job"
        );
        let everyone = |_: Pd| true;
        assert_eq!(t.choose(PdRequest::Any, ALONE, everyone), PdChoice::WITHOUT_RDMA);
    }

    #[test]
    fn any_stays_in_the_node_share_and_runs_the_rest_without_rdma() {
        let mut t = PdTable::new();
        let nobody = |_: Pd| false;
        let node1 = share(1, 4);
        let mut handed = Vec::new();
        for slot in 0..8 {
            let choice = t.choose(PdRequest::Any, node1, nobody);
            if choice.holds {
                t.hold(choice.pd, slot);
                handed.push(choice.pd.raw());
            } else {
                assert_eq!(choice, PdChoice::WITHOUT_RDMA, "spawn {slot}");
            }
        }
        assert_eq!(handed, [1, 5, 9, 13], "node 1 of 4 starts jobs in its own four PDs");
        t.drain(pd(9));
        t.release(pd(9));
        assert_eq!(t.choose(PdRequest::Any, node1, nobody).pd, pd(9));
        assert_eq!(t.choose(PdRequest::Any, 0, nobody), PdChoice::WITHOUT_RDMA, "a node with no share");
    }

    #[test]
    fn inherit_holds_a_free_pd_and_otherwise_joins_without_rdma() {
        let mut t = PdTable::new();
        t.hold(pd(7), 0);
        assert_eq!(t.choose(PdRequest::Inherit(pd(7)), 0, |_| true), PdChoice { pd: pd(7), holds: false });
        assert_eq!(t.choose(PdRequest::Inherit(pd(9)), 0, |_| false), PdChoice { pd: pd(9), holds: true });
        assert_eq!(t.choose(PdRequest::Inherit(NO_RDMA), ALONE, |_| false), PdChoice::WITHOUT_RDMA);
        t.drain(pd(7));
        assert!(!t.choose(PdRequest::Inherit(pd(7)), 0, |_| false).holds, "still draining");
        assert_eq!(t.holder(pd(7)), None);
        t.release(pd(7));
        assert!(t.choose(PdRequest::Inherit(pd(7)), 0, |_| false).holds);
    }

    #[test]
    fn holders_are_found_by_mask() {
        let mut t = PdTable::new();
        t.hold(pd(2), 10);
        t.hold(pd(5), 11);
        t.hold(pd(6), 12);
        t.drain(pd(6));
        let found: Vec<_> = t.holders_in(0b110_0100).collect();
        assert_eq!(found, [(pd(2), 10), (pd(5), 11)]);
        assert_eq!(t.holder(pd(5)), Some(11));
        assert_eq!(t.holders_in(0).count(), 0);
    }
}
