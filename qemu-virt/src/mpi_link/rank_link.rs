//! The MPI link as the ranks' [`RankLink`](crate::ranks::RankLink): what the ranks' transport
//! sends goes as messages and requests of one kind ([`RANKS_KIND`]); every other kind goes to a
//! handler of the program's own (a run's barriers, the verdicts a rank gathers), on the same
//! link.
//!
//! The promises `RankLink` makes hold over MPI: one progress thread hands every message to the
//! handler, in the order each sender sent them (the link's one tag keeps MPI's non-overtaking
//! rule), and what arrives before [`serve`](crate::ranks::RankLink::serve) waits in MPI.

use super::{Ended, Handler, Kind, Link, LinkError as MpiLinkError, Rank, Reply};
use crate::ranks::{Handler as RankHandler, LinkError, RankLink};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// The kind of every message of the ranks' transport.
pub const RANKS_KIND: Kind = 0x5241;

/// One rank's end of the ranks' link, over MPI.
pub struct MpiRankLink {
    link: Link,
    /// What handles the kinds that are not [`RANKS_KIND`].
    others: Option<Arc<dyn Handler>>,
    served: OnceLock<()>,
}

impl MpiRankLink {
    /// Over `link`, which must not be serving yet; `others` handles every kind but
    /// [`RANKS_KIND`] (without it they are dropped, and requests refused).
    pub fn new(link: Link, others: Option<Arc<dyn Handler>>) -> Self {
        Self { link, others, served: OnceLock::new() }
    }

    /// The MPI link, for messages of other kinds.
    pub fn mpi(&self) -> &Link {
        &self.link
    }

    /// Ends the link ([`Link::shutdown`]): waits for every rank to do the same (or be lost).
    pub fn shutdown(self) -> Result<Ended, MpiLinkError> {
        self.link.shutdown()
    }
}

/// The ranks' error for the link's.
fn rank_error(error: MpiLinkError) -> LinkError {
    match error {
        MpiLinkError::RankLost(rank) => LinkError::Lost(rank),
        // A send that failed has lost its rank.
        MpiLinkError::Mpi { rank, .. } => LinkError::Lost(rank),
        MpiLinkError::NoSuchRank { rank, .. } => LinkError::NoSuchRank(rank),
        MpiLinkError::Timeout { rank, after } => LinkError::Timeout { rank, timeout: after },
        MpiLinkError::ShutDown => LinkError::Closed,
        other => LinkError::Other(other.to_string()),
    }
}

/// Hands the transport's kind to its handler, the rest to the program's.
struct Dispatch {
    ranks: RankHandler,
    others: Option<Arc<dyn Handler>>,
}

impl Handler for Dispatch {
    fn message(&self, from: Rank, kind: Kind, payload: Vec<u8>) {
        match (kind, &self.others) {
            (RANKS_KIND, _) => {
                (self.ranks)(from, payload);
            }
            (_, Some(others)) => others.message(from, kind, payload),
            (_, None) => {}
        }
    }

    fn request(&self, from: Rank, kind: Kind, payload: Vec<u8>, reply: Reply) {
        match (kind, &self.others) {
            (RANKS_KIND, _) => {
                let _ = reply.send((self.ranks)(from, payload).unwrap_or_default());
            }
            (_, Some(others)) => others.request(from, kind, payload, reply),
            (_, None) => {
                let _ = reply.refuse(&format!("no handler for kind {kind}"));
            }
        }
    }

    fn rank_lost(&self, rank: Rank) {
        if let Some(others) = &self.others {
            others.rank_lost(rank);
        }
    }
}

impl RankLink for MpiRankLink {
    fn rank(&self) -> usize {
        self.link.rank()
    }

    fn ranks(&self) -> usize {
        self.link.ranks()
    }

    fn send(&self, to: usize, msg: Vec<u8>) -> Result<(), LinkError> {
        self.link.send(to, RANKS_KIND, msg).map_err(rank_error)
    }

    fn request(&self, to: usize, msg: Vec<u8>, timeout: Duration) -> Result<Vec<u8>, LinkError> {
        self.link.call(to, RANKS_KIND, msg, timeout).map_err(rank_error)
    }

    fn serve(&self, handler: RankHandler) -> Result<(), LinkError> {
        self.served.set(()).map_err(|()| LinkError::AlreadyServed)?;
        let dispatch = Arc::new(Dispatch { ranks: handler, others: self.others.clone() });
        self.link.serve(dispatch).map_err(rank_error)
    }

    fn lost(&self) -> Vec<usize> {
        self.link.lost_ranks()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_links_errors_become_the_ranks_errors() {
        assert_eq!(rank_error(MpiLinkError::RankLost(3)), LinkError::Lost(3));
        assert_eq!(rank_error(MpiLinkError::NoSuchRank { rank: 5, ranks: 4 }), LinkError::NoSuchRank(5));
        let after = Duration::from_secs(1);
        assert_eq!(
            rank_error(MpiLinkError::Timeout { rank: 1, after }),
            LinkError::Timeout { rank: 1, timeout: after }
        );
        assert_eq!(rank_error(MpiLinkError::ShutDown), LinkError::Closed);
        assert!(matches!(rank_error(MpiLinkError::NotServing), LinkError::Other(_)));
    }
}
