//! Counters per node, printed at the end of a run and available to tests.

use hal::pldma::regs::{COUNTERS as PLDMA_COUNTERS, Counter};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Default)]
pub struct NodeCounters {
    pub forwarded_reads: AtomicU64,
    pub forwarded_writes: AtomicU64,
    pub forward_errors: AtomicU64,
    pub interrupts: AtomicU64,
    /// Packets this node sent: packetizer packets and datagrams.
    pub packets_sent: AtomicU64,
    /// Packets that reached this node: datagrams delivered, packetizer packets its vmbox accepted.
    pub packets_received: AtomicU64,
    /// Packetizer packets this node sent that came back NACK (full MIF, missing or stopped node).
    pub packets_nacked: AtomicU64,
    pub packets_dropped: AtomicU64,
    pub packets_duplicated: AtomicU64,
    pub window_accesses: AtomicU64,
    /// The PLDMA engine's counters, indexed by `hal::pldma::regs::Counter` (its `counters`
    /// registers read these).
    pub pldma: [AtomicU64; PLDMA_COUNTERS],
    /// `rapf` writes the engine refused (no fault awaited them; `docs/hw/pldma.md`).
    pub rapf_refused: AtomicU64,
}

/// A consistent-enough copy of a node's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub forwarded_reads: u64,
    pub forwarded_writes: u64,
    pub forward_errors: u64,
    pub interrupts: u64,
    pub packets_sent: u64,
    pub packets_received: u64,
    pub packets_nacked: u64,
    pub packets_dropped: u64,
    pub packets_duplicated: u64,
    pub window_accesses: u64,
    pub pldma: [u64; PLDMA_COUNTERS],
    pub rapf_refused: u64,
    /// WQEs the R5 refused as malformed, summed over the node's queue sets (filled in by
    /// `Cluster::counters` from the node's memory).
    pub bad_wqes: u64,
}

impl Snapshot {
    pub fn pldma(&self, c: Counter) -> u64 {
        self.pldma[c.index()]
    }
}

impl NodeCounters {
    pub fn pldma(&self, c: Counter) -> &AtomicU64 {
        &self.pldma[c.index()]
    }

    pub fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> Snapshot {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Snapshot {
            forwarded_reads: get(&self.forwarded_reads),
            forwarded_writes: get(&self.forwarded_writes),
            forward_errors: get(&self.forward_errors),
            interrupts: get(&self.interrupts),
            packets_sent: get(&self.packets_sent),
            packets_received: get(&self.packets_received),
            packets_nacked: get(&self.packets_nacked),
            packets_dropped: get(&self.packets_dropped),
            packets_duplicated: get(&self.packets_duplicated),
            window_accesses: get(&self.window_accesses),
            pldma: core::array::from_fn(|i| get(&self.pldma[i])),
            rapf_refused: get(&self.rapf_refused),
            bad_wqes: 0,
        }
    }
}

impl fmt::Display for Snapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "forwarded {} reads, {} writes ({} errors), {} interrupts, {} window accesses, packets {} sent, {} received, {} nacked, {} dropped, {} duplicated",
            self.forwarded_reads,
            self.forwarded_writes,
            self.forward_errors,
            self.interrupts,
            self.window_accesses,
            self.packets_sent,
            self.packets_received,
            self.packets_nacked,
            self.packets_dropped,
            self.packets_duplicated
        )?;
        // What one job's misdeeds cost it (`docs/hw/pldma.md`, "One job cannot cost another
        // its events"), then the engine's counters, when it did something.
        write!(
            f,
            "; rdma: {} bad WQEs, {} events lost, {} RAPFs refused",
            self.bad_wqes,
            self.pldma(Counter::EventsLost),
            self.rapf_refused
        )?;
        if self.pldma.iter().any(|&c| c != 0) {
            write!(f, "; pldma")?;
            for c in Counter::ALL {
                write!(f, " {} {}", c.name(), self.pldma(c))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_and_display_carry_every_counter() {
        let c = NodeCounters::default();
        NodeCounters::bump(&c.packets_sent);
        NodeCounters::bump(&c.packets_sent);
        NodeCounters::bump(&c.packets_nacked);
        let s = c.snapshot();
        assert_eq!((s.packets_sent, s.packets_nacked, s.packets_received), (2, 1, 0));
        assert!(
            s.to_string().ends_with(
                "packets 2 sent, 0 received, 1 nacked, 0 dropped, 0 duplicated; rdma: 0 bad WQEs, 0 events lost, 0 RAPFs refused"
            ),
            "{s}"
        );
        NodeCounters::bump(c.pldma(Counter::BlocksSent));
        let s = c.snapshot();
        assert_eq!(s.pldma(Counter::BlocksSent), 1);
        assert!(s.to_string().contains("; pldma descriptors 0 blocks_sent 1 "), "{s}");
    }
}
