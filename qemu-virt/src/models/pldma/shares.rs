//! Each PD's share of the event ring (`docs/hw/pldma.md`, "Each PD's share of the event
//! ring"): half of the ring is reserved, [`RESERVED`] entries for each PD, and the other half
//! is shared, first come first served. An event of a PD that has its reserve full and finds the
//! shared half full is dropped and counted for that PD: a PD that floods the ring (however it
//! does) loses its own events, never another PD's that stays within its reserve.
//!
//! The engine counts each PD's unread events: it remembers the PD of every slot it wrote (4
//! bits a slot) and, before it posts, releases the slots the R5 consumed since (`tail`).

use hal::pldma::PDS;
use proto::rdma::rings::EVENT_ENTRIES;

/// Unread events of one PD that never use the shared half.
pub const RESERVED: usize = EVENT_ENTRIES / 2 / PDS;
/// The shared half.
pub const SHARED: usize = EVENT_ENTRIES - RESERVED * PDS;

#[derive(Debug)]
pub struct EventShares {
    unread: [usize; PDS],
    /// The PD of every slot written.
    slot_pd: [u8; EVENT_ENTRIES],
    /// The R5's `tail` when last looked at.
    tail: u32,
}

impl EventShares {
    /// A fresh ring whose consumer is at `tail`.
    pub fn new(tail: u32) -> Self {
        Self { unread: [0; PDS], slot_pd: [0; EVENT_ENTRIES], tail }
    }

    /// The R5 has consumed every event before `tail`: their shares are free again. A `tail`
    /// that moved back or by more than the ring (a new ring) starts afresh.
    pub fn consumed(&mut self, tail: u32) {
        let moved = tail.wrapping_sub(self.tail) as usize;
        if moved > EVENT_ENTRIES {
            *self = Self::new(tail);
            return;
        }
        for k in 0..moved {
            let slot = self.tail.wrapping_add(k as u32) as usize % EVENT_ENTRIES;
            let pd = usize::from(self.slot_pd[slot]);
            self.unread[pd] = self.unread[pd].saturating_sub(1);
        }
        self.tail = tail;
    }

    fn shared_used(&self) -> usize {
        self.unread.iter().map(|&n| n.saturating_sub(RESERVED)).sum()
    }

    /// Whether an event of `pd` may be posted now.
    pub fn admits(&self, pd: usize) -> bool {
        self.unread[pd % PDS] < RESERVED || self.shared_used() < SHARED
    }

    /// An event of `pd` was written at ring position `at`.
    pub fn posted(&mut self, pd: usize, at: u32) {
        let pd = pd % PDS;
        self.unread[pd] += 1;
        self.slot_pd[at as usize % EVENT_ENTRIES] = pd as u8;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flooding_pd_fills_the_shared_half_then_loses_only_its_own_events() {
        let mut s = EventShares::new(0);
        let mut head = 0u32;
        let mut post = |s: &mut EventShares, pd| {
            let ok = s.admits(pd);
            if ok {
                s.posted(pd, head);
                head += 1;
            }
            ok
        };
        let flood = (0..EVENT_ENTRIES).filter(|_| post(&mut s, 5)).count();
        assert_eq!(flood, RESERVED + SHARED, "its reserve and the shared half");
        for pd in (0..PDS).filter(|&p| p != 5) {
            for _ in 0..RESERVED {
                assert!(post(&mut s, pd), "PD {pd} keeps its reserve");
            }
            assert!(!post(&mut s, pd), "and no more");
        }
        assert_eq!(head as usize, EVENT_ENTRIES, "never more than the ring holds");
        // The R5 reads 100 events (the flood's): the shared half has room again.
        s.consumed(100);
        assert!(s.admits(5));
        assert!(s.admits(0), "a PD past its reserve may use the shared half again");
    }

    #[test]
    fn a_tail_that_jumps_starts_afresh() {
        let mut s = EventShares::new(10);
        s.posted(1, 10);
        s.consumed(10 + EVENT_ENTRIES as u32 + 1);
        assert_eq!(s.unread[1], 0);
        s.posted(1, 5000);
        s.consumed(3);
        assert_eq!(s.unread, [0; PDS], "moved back: afresh");
    }
}
