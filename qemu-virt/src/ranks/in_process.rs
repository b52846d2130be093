//! A [`RankLink`] between threads of one process: several "ranks" of a cluster in one test,
//! each with its own thread that hands what arrives to its handler in order. A rank can be
//! killed ([`InProcessLinks::kill`]), as a process that dies: what it was sent is dropped,
//! every rank sees it lost, and it can send nothing more.

use super::link::{Handler, LinkError, RankLink};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A message on its way to a rank, with where its reply goes if it is a request.
struct Envelope {
    from: usize,
    bytes: Vec<u8>,
    reply: Option<SyncSender<Vec<u8>>>,
}

/// What the ranks share: each one's inbox and whether it is lost.
struct Hub {
    inboxes: Vec<Sender<Envelope>>,
    /// Apart, for the ranks' threads: they end once the hub (every sender) is gone.
    lost: Arc<[AtomicBool]>,
}

/// One rank's end.
pub struct InProcessLink {
    rank: usize,
    hub: Arc<Hub>,
    /// Taken by [`serve`](RankLink::serve), which starts the rank's thread on it.
    inbox: Mutex<Option<Receiver<Envelope>>>,
}

/// The ranks of one test's cluster.
pub struct InProcessLinks {
    hub: Arc<Hub>,
    links: Vec<Arc<InProcessLink>>,
}

impl InProcessLinks {
    /// `ranks` linked ranks.
    pub fn new(ranks: usize) -> Self {
        let (inboxes, receivers): (Vec<_>, Vec<_>) = (0..ranks).map(|_| mpsc::channel()).unzip();
        let hub = Arc::new(Hub { inboxes, lost: (0..ranks).map(|_| AtomicBool::new(false)).collect() });
        let links = receivers
            .into_iter()
            .enumerate()
            .map(|(rank, inbox)| Arc::new(InProcessLink { rank, hub: hub.clone(), inbox: Mutex::new(Some(inbox)) }))
            .collect();
        Self { hub, links }
    }

    /// Rank `rank`'s end (`rank < ranks`).
    pub fn link(&self, rank: usize) -> Arc<InProcessLink> {
        self.links[rank].clone()
    }

    /// Rank `rank` dies: what it has not handled yet is dropped (its requesters see it lost),
    /// and it sends and handles nothing more.
    pub fn kill(&self, rank: usize) {
        if let Some(lost) = self.hub.lost.get(rank) {
            lost.store(true, Ordering::Release);
            // Wakes its thread, which finds itself lost and drops what is queued.
            let _ = self.hub.inboxes[rank].send(Envelope { from: rank, bytes: Vec::new(), reply: None });
        }
    }
}

impl InProcessLink {
    fn is_lost(&self, rank: usize) -> bool {
        self.hub.lost[rank].load(Ordering::Acquire)
    }

    /// Checks that this rank and `to` can talk.
    fn route(&self, to: usize) -> Result<&Sender<Envelope>, LinkError> {
        let inbox = self.hub.inboxes.get(to).ok_or(LinkError::NoSuchRank(to))?;
        if self.is_lost(self.rank) {
            return Err(LinkError::Closed);
        }
        if self.is_lost(to) {
            return Err(LinkError::Lost(to));
        }
        Ok(inbox)
    }
}

impl RankLink for InProcessLink {
    fn rank(&self) -> usize {
        self.rank
    }

    fn ranks(&self) -> usize {
        self.hub.inboxes.len()
    }

    fn send(&self, to: usize, msg: Vec<u8>) -> Result<(), LinkError> {
        let envelope = Envelope { from: self.rank, bytes: msg, reply: None };
        self.route(to)?.send(envelope).map_err(|_| LinkError::Lost(to))
    }

    fn request(&self, to: usize, msg: Vec<u8>, timeout: Duration) -> Result<Vec<u8>, LinkError> {
        let (reply, answer) = mpsc::sync_channel(1);
        let envelope = Envelope { from: self.rank, bytes: msg, reply: Some(reply) };
        self.route(to)?.send(envelope).map_err(|_| LinkError::Lost(to))?;
        answer.recv_timeout(timeout).map_err(|e| match e {
            mpsc::RecvTimeoutError::Timeout => LinkError::Timeout { rank: to, timeout },
            // The envelope was dropped unanswered: the rank died with it queued.
            mpsc::RecvTimeoutError::Disconnected => LinkError::Lost(to),
        })
    }

    fn serve(&self, handler: Handler) -> Result<(), LinkError> {
        let inbox = self.inbox.lock().unwrap().take().ok_or(LinkError::AlreadyServed)?;
        let (lost, rank) = (self.hub.lost.clone(), self.rank);
        std::thread::Builder::new()
            .name(format!("rank {rank} link"))
            .spawn(move || {
                // Ends when every sender is gone (the ranks are dropped) or the rank dies.
                for envelope in inbox {
                    if lost[rank].load(Ordering::Acquire) {
                        // Dropping the inbox drops what is queued, unanswered.
                        return;
                    }
                    let reply = handler(envelope.from, envelope.bytes);
                    if let Some(to) = envelope.reply {
                        let _ = to.send(reply.unwrap_or_default());
                    }
                }
            })
            .map_err(|e| LinkError::Other(format!("no thread for rank {rank}'s link: {e}")))?;
        Ok(())
    }

    fn lost(&self) -> Vec<usize> {
        (0..self.ranks()).filter(|&r| self.is_lost(r)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// What a handler was handed: (from, bytes).
    type Seen = Arc<Mutex<Vec<(usize, Vec<u8>)>>>;

    /// A handler that answers with the bytes reversed and records what it was handed.
    fn echo(seen: Seen) -> Handler {
        Box::new(move |from, bytes| {
            seen.lock().unwrap().push((from, bytes.clone()));
            Some(bytes.into_iter().rev().collect())
        })
    }

    #[test]
    fn sends_and_requests_arrive_in_order_and_requests_are_answered() {
        let links = InProcessLinks::new(2);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (a, b) = (links.link(0), links.link(1));
        // Sent before the handler exists: held until then.
        a.send(1, vec![1]).unwrap();
        b.serve(echo(seen.clone())).unwrap();
        assert_eq!(b.serve(echo(seen.clone())), Err(LinkError::AlreadyServed));
        a.send(1, vec![2]).unwrap();
        assert_eq!(a.request(1, vec![3, 4], Duration::from_secs(10)), Ok(vec![4, 3]));
        assert_eq!(*seen.lock().unwrap(), [(0, vec![1]), (0, vec![2]), (0, vec![3, 4])]);
        assert_eq!((a.rank(), a.ranks(), b.rank()), (0, 2, 1));
        assert_eq!(a.send(2, vec![]), Err(LinkError::NoSuchRank(2)));
    }

    #[test]
    fn many_threads_request_at_once() {
        let links = InProcessLinks::new(2);
        links.link(1).serve(echo(Arc::default())).unwrap();
        let threads: Vec<_> = (0..8u8)
            .map(|i| {
                let link = links.link(0);
                std::thread::spawn(move || {
                    (0..100u8).all(|j| link.request(1, vec![i, j], Duration::from_secs(10)) == Ok(vec![j, i]))
                })
            })
            .collect();
        assert!(threads.into_iter().all(|t| t.join().unwrap()));
    }

    #[test]
    fn a_request_without_a_reply_times_out() {
        let links = InProcessLinks::new(2);
        let (a, b) = (links.link(0), links.link(1));
        b.serve(Box::new(|_, _| {
            std::thread::sleep(Duration::from_millis(300));
            None
        }))
        .unwrap();
        let timeout = Duration::from_millis(20);
        assert_eq!(a.request(1, vec![], timeout), Err(LinkError::Timeout { rank: 1, timeout }));
    }

    #[test]
    fn a_killed_rank_is_lost_to_everyone_and_its_requesters_do_not_hang() {
        let links = InProcessLinks::new(3);
        let (a, b, c) = (links.link(0), links.link(1), links.link(2));
        // Rank 1 takes a while over each message: requests queue behind the first.
        b.serve(Box::new(|_, _| {
            std::thread::sleep(Duration::from_millis(100));
            Some(vec![1])
        }))
        .unwrap();
        let waiting: Vec<_> = (0..3)
            .map(|_| {
                let a = a.clone();
                std::thread::spawn(move || a.request(1, vec![], Duration::from_secs(30)))
            })
            .collect();
        std::thread::sleep(Duration::from_millis(20));
        let start = Instant::now();
        links.kill(1);
        let answers: Vec<_> = waiting.into_iter().map(|t| t.join().unwrap()).collect();
        assert!(start.elapsed() < Duration::from_secs(5), "no hang: {:?}", start.elapsed());
        assert!(answers.contains(&Err(LinkError::Lost(1))), "{answers:?}");
        assert_eq!(a.request(1, vec![], Duration::from_secs(30)), Err(LinkError::Lost(1)));
        assert_eq!(c.send(1, vec![]), Err(LinkError::Lost(1)));
        assert_eq!(b.send(0, vec![]), Err(LinkError::Closed), "a dead rank sends nothing");
        assert_eq!((a.lost(), c.lost()), (vec![1], vec![1]));
    }
}
