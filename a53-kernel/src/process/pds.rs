//! Which process holds which protection domain on this node (`docs/hw/pldma.md`, "Protection
//! domains"): plain logic, host-tested; the process table applies it.
//!
//! Every process is a member of a PD, the job it belongs to, which its domain number carries
//! (`proto::rdma::domain`). At most one process per PD per node *holds* it: that process gets
//! the PD's SMMU context bank, queue set and PD page, so it is the one a transfer of that PD to
//! this node reaches. How a spawn picks its PD:
//!
//! - [`PdRequest::Any`] (a local spawn): a PD no process of this node is a member of, the one
//!   used least recently (a round robin from the last one handed out), so that a PD just given
//!   up is not handed to an unrelated job at once;
//! - [`PdRequest::Exact`] (a test, `cargo xtask run`'s `pd=N`): that PD, which must be free;
//! - [`PdRequest::Inherit`] (a remote spawn): the parent's PD, held if it is free here; if
//!   another process of the PD holds it here, the child is a member without RDMA resources (as
//!   a second process of a job on one node: the spawn tree of the GSAS tests does that).

use hal::pldma::{PDS, Pd};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PdRequest {
    Any,
    Exact(Pd),
    Inherit(Pd),
}

/// A spawn's PD, and whether the process holds it here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PdChoice {
    pub pd: Pd,
    pub holds: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PdError {
    /// The PD asked for is held here (or its last holder's resources are still being taken
    /// down).
    Taken(Pd),
    /// Every PD has a member on this node.
    NoneFree,
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

    /// The PD a spawn gets for `request`; `member(pd)` says whether a process of this node is
    /// a member of `pd` now. Nothing changes until [`hold`](Self::hold).
    pub fn choose(&self, request: PdRequest, member: impl Fn(Pd) -> bool) -> Result<PdChoice, PdError> {
        let free = |pd: Pd| self.holders[pd.index()] == Holder::Free;
        match request {
            PdRequest::Any => (0..PDS)
                .filter_map(|i| Pd::new(((self.cursor + i) % PDS) as u16))
                .find(|&pd| free(pd) && !member(pd))
                .map(|pd| PdChoice { pd, holds: true })
                .ok_or(PdError::NoneFree),
            PdRequest::Exact(pd) if free(pd) => Ok(PdChoice { pd, holds: true }),
            PdRequest::Exact(pd) => Err(PdError::Taken(pd)),
            PdRequest::Inherit(pd) => Ok(PdChoice { pd, holds: free(pd) }),
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

    fn pd(p: u16) -> Pd {
        Pd::new(p).unwrap()
    }

    #[test]
    fn any_takes_the_least_recently_handed_out_pd_that_has_no_member() {
        let mut t = PdTable::new();
        let nobody = |_: Pd| false;
        assert_eq!(t.choose(PdRequest::Any, nobody), Ok(PdChoice { pd: pd(0), holds: true }));
        t.hold(pd(0), 4);
        assert_eq!(t.choose(PdRequest::Any, nobody).unwrap().pd, pd(1));
        t.hold(pd(1), 5);
        t.drain(pd(0));
        t.release(pd(0));
        assert_eq!(t.choose(PdRequest::Any, nobody).unwrap().pd, pd(2), "PD 0 was just given up: not at once");
        assert_eq!(
            t.choose(PdRequest::Any, |p| p == pd(2) || p == pd(3)).unwrap().pd,
            pd(4),
            "a PD with a member here belongs to that job"
        );
        let everyone = |_: Pd| true;
        assert_eq!(t.choose(PdRequest::Any, everyone), Err(PdError::NoneFree));
    }

    #[test]
    fn exact_needs_a_free_pd_and_inherit_falls_back_to_membership() {
        let mut t = PdTable::new();
        t.hold(pd(7), 0);
        assert_eq!(t.choose(PdRequest::Exact(pd(7)), |_| false), Err(PdError::Taken(pd(7))));
        assert_eq!(t.choose(PdRequest::Exact(pd(8)), |_| true), Ok(PdChoice { pd: pd(8), holds: true }));
        assert_eq!(t.choose(PdRequest::Inherit(pd(7)), |_| true), Ok(PdChoice { pd: pd(7), holds: false }));
        assert_eq!(t.choose(PdRequest::Inherit(pd(9)), |_| false), Ok(PdChoice { pd: pd(9), holds: true }));
        t.drain(pd(7));
        assert_eq!(t.choose(PdRequest::Exact(pd(7)), |_| false), Err(PdError::Taken(pd(7))), "still draining");
        assert!(!t.choose(PdRequest::Inherit(pd(7)), |_| false).unwrap().holds);
        assert_eq!(t.holder(pd(7)), None);
        t.release(pd(7));
        assert!(t.choose(PdRequest::Exact(pd(7)), |_| false).unwrap().holds);
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
