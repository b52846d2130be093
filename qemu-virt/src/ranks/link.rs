//! What the ranks' transport needs of the link between the processes of one cluster (MPI
//! ranks, or threads of one test process): numbered ranks, messages of bytes one way or as a
//! request with a reply, a handler for what arrives, and which ranks are lost.

use std::time::Duration;

/// Handles what arrives from rank `from`: the reply to a request (`None` answers a request
/// with no bytes), nothing for a one-way message. Runs on the link's thread: it may not wait
/// for another message.
pub type Handler = Box<dyn Fn(usize, Vec<u8>) -> Option<Vec<u8>> + Send + Sync>;

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    #[error("there is no rank {0}")]
    NoSuchRank(usize),
    #[error("rank {0} is lost")]
    Lost(usize),
    #[error("rank {rank} sent no reply within {timeout:?}")]
    Timeout { rank: usize, timeout: Duration },
    #[error("the link already has a handler")]
    AlreadyServed,
    #[error("the link is shut down")]
    Closed,
    #[error("{0}")]
    Other(String),
}

/// One rank's end of the link between the ranks of a cluster.
///
/// The ordering the transport relies on: the messages of one rank to another, one-way and
/// requests alike, reach the other's handler in the order they were sent, one after the
/// other (a posted window store is applied before a later load of the same sender), and
/// messages that arrive before [`serve`](Self::serve) are held until then.
pub trait RankLink: Send + Sync {
    /// This rank, `0..ranks()`.
    fn rank(&self) -> usize;

    /// How many ranks the cluster has.
    fn ranks(&self) -> usize;

    /// Sends `msg` to rank `to` and returns without waiting for it to arrive.
    fn send(&self, to: usize, msg: Vec<u8>) -> Result<(), LinkError>;

    /// Sends `msg` to rank `to` and waits for the handler's reply there, at most `timeout`.
    /// Many threads may wait at once. A rank that is or becomes lost answers `Lost` at once.
    fn request(&self, to: usize, msg: Vec<u8>, timeout: Duration) -> Result<Vec<u8>, LinkError>;

    /// Hands what arrives to `handler`, from now on. Once: a second handler is refused.
    fn serve(&self, handler: Handler) -> Result<(), LinkError>;

    /// The ranks known to be lost (their process died or cannot be reached), in increasing
    /// order; a rank once lost stays lost.
    fn lost(&self) -> Vec<usize>;
}
