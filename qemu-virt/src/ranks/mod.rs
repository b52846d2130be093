//! One cluster spread over several processes, the ranks (`docs/architecture.md`, "The
//! transport"): each runs a share of the nodes ([`NodeMap`]) with a [`Fabric`](crate::fabric::Fabric)
//! for them, and a [`RankTransport`] carries what goes to the other ranks' nodes as
//! [`message`]s over a [`RankLink`] (MPI between hosts; [`InProcessLinks`] between the threads of
//! one test).

mod in_process;
mod link;
pub mod message;
mod transport;

pub use in_process::{InProcessLink, InProcessLinks};
pub use link::{Handler, LinkError, RankLink};
pub use transport::{RankError, RankTransport};

use std::ops::Range;

/// Which rank runs which node: contiguous blocks, every rank at least one node, the first
/// ranks one node fewer when they do not share evenly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeMap {
    /// Rank r runs nodes `starts[r]..starts[r + 1]`.
    starts: Vec<usize>,
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("{nodes} nodes cannot be shared by {ranks} ranks: every rank runs at least one node")]
pub struct NodeMapError {
    pub nodes: usize,
    pub ranks: usize,
}

impl NodeMap {
    /// `nodes` nodes in `ranks` contiguous blocks (`1 <= ranks <= nodes`).
    pub fn blocks(nodes: usize, ranks: usize) -> Result<Self, NodeMapError> {
        if ranks == 0 || ranks > nodes {
            return Err(NodeMapError { nodes, ranks });
        }
        Ok(Self { starts: (0..=ranks).map(|r| r * nodes / ranks).collect() })
    }

    pub fn nodes(&self) -> usize {
        self.starts[self.starts.len() - 1]
    }

    pub fn ranks(&self) -> usize {
        self.starts.len() - 1
    }

    /// The rank that runs node `node`, if the cluster has it.
    pub fn rank_of(&self, node: usize) -> Option<usize> {
        (node < self.nodes()).then(|| self.starts.partition_point(|&start| start <= node) - 1)
    }

    /// The nodes rank `rank` runs (none for a rank the cluster does not have).
    pub fn nodes_of(&self, rank: usize) -> Range<usize> {
        match (self.starts.get(rank), self.starts.get(rank + 1)) {
            (Some(&start), Some(&end)) => start..end,
            _ => 0..0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_share_the_nodes_in_order() {
        let map = NodeMap::blocks(4, 2).unwrap();
        assert_eq!((map.nodes(), map.ranks()), (4, 2));
        assert_eq!((map.nodes_of(0), map.nodes_of(1), map.nodes_of(2)), (0..2, 2..4, 0..0));
        assert_eq!((0..5).map(|n| map.rank_of(n)).collect::<Vec<_>>(), [Some(0), Some(0), Some(1), Some(1), None]);
        let uneven = NodeMap::blocks(16, 3).unwrap();
        assert_eq!([uneven.nodes_of(0), uneven.nodes_of(1), uneven.nodes_of(2)], [0..5, 5..10, 10..16]);
        for node in 0..16 {
            assert!(uneven.nodes_of(uneven.rank_of(node).unwrap()).contains(&node));
        }
        assert_eq!(NodeMap::blocks(4, 4).unwrap().nodes_of(3), 3..4);
        assert_eq!(NodeMap::blocks(3, 1).unwrap().nodes_of(0), 0..3);
    }

    #[test]
    fn a_rank_without_a_node_is_an_error() {
        assert_eq!(NodeMap::blocks(2, 3), Err(NodeMapError { nodes: 2, ranks: 3 }));
        assert_eq!(NodeMap::blocks(2, 0), Err(NodeMapError { nodes: 2, ranks: 0 }));
        assert!(NodeMap::blocks(0, 1).is_err());
    }
}
