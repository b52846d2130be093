//! The shape of the Active Access programs (`active-dht`, `active-checkpoint`, `active-count`):
//! an owner on one node, whose log takes the accesses, and a member on every other node making
//! them. The owner spawns the members (a remote spawn keeps the job's PD, so the members'
//! transfers reach the owner's pages), tells them where its memory is and when each phase
//! starts, and gathers one report per member per phase. A member that fails reports its status,
//! so the owner ends with it at once instead of waiting out its timeout.
//!
//! An owner that ends before [`Team::finish`] (a failed check, an error) tells every member to
//! end ([`ABORT`]), so none is left waiting for a phase that will not come.
//!
//! Channels (user opcodes): [`OP_ADDRESS`] and [`OP_GO`] to the members, [`OP_REPORT`] to the
//! owner. A report is the member's index in bits [3:0], a failure flag in bit 4 and its value
//! (or failed status) in [59:5].

use crate::channel::{op, send, take};
use crate::error::Error;
use crate::{board_count, board_id, receive, register, remote_spawn, sys};

/// The owner's memory, to every member.
pub const OP_ADDRESS: u8 = 8;
/// A phase starts (the payload says which), to every member.
pub const OP_GO: u8 = 9;
/// A member's report of a phase, to the owner.
pub const OP_REPORT: u8 = 10;
/// Members at most: one per other node of an 8-node cluster, and room to spare.
pub const MAX_MEMBERS: usize = 15;
/// A report's value has 55 bits.
pub const VALUE_BITS: u32 = 55;
/// The phase that ends the members: their owner gave up.
pub const ABORT: u64 = (1 << 60) - 1;

const FAILED: u64 = 1 << 4;

/// A report's payload.
pub fn report_word(index: u8, failed: bool, value: u64) -> Option<u64> {
    (usize::from(index) < MAX_MEMBERS && value >> VALUE_BITS == 0)
        .then(|| u64::from(index) | if failed { FAILED } else { 0 } | value << 5)
}

/// (index, failed, value) of a report's payload.
pub fn parse_report(word: u64) -> (u8, bool, u64) {
    ((word & 0xf) as u8, word & FAILED != 0, word >> 5)
}

/// The owner's side: its members, one per other node.
pub struct Team {
    nodes: [u16; MAX_MEMBERS],
    len: usize,
    finished: bool,
}

impl Team {
    /// Spawns `program` on every node but this one, member `k` of `n` with the thread argument
    /// `arg(k, n)`, and sends each of them `address`. `NoSuchNode` on a cluster of one node
    /// (there is nobody to make remote accesses).
    pub fn spawn(program: &str, address: u64, arg: impl Fn(u8, u8) -> u64) -> Result<Self, Error> {
        let (me, count) = (board_id()?, board_count()?);
        let mut team = Self { nodes: [0; MAX_MEMBERS], len: 0, finished: false };
        for node in (0..count).filter(|&n| n != me) {
            *team.nodes.get_mut(team.len).ok_or(Error::NoSuchNode(u64::from(node)))? = node;
            team.len += 1;
        }
        if team.len == 0 {
            return Err(Error::NoSuchNode(u64::from(me) + 1));
        }
        register(op(OP_REPORT))?;
        let n = team.len as u8;
        for (k, &node) in team.nodes().iter().enumerate() {
            remote_spawn(program, arg(k as u8, n), node)?;
        }
        for &node in team.nodes() {
            send(node, OP_ADDRESS, address)?;
        }
        Ok(team)
    }

    /// The members' nodes, by index.
    pub fn nodes(&self) -> &[u16] {
        &self.nodes[..self.len]
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The run went to its end: the members end on their own (dropping the team then tells
    /// them nothing).
    pub fn finish(mut self) {
        self.finished = true;
    }

    /// Starts phase `phase` on every member.
    pub fn start(&self, phase: u64) -> Result<(), Error> {
        self.nodes().iter().try_for_each(|&node| send(node, OP_GO, phase))
    }

    /// Waits up to `timeout_us` for one report of every member, running `meanwhile` between
    /// looks (the owner's handler draining its log): every member's value, by index; `None` if
    /// a member reported a failure (logged here); `Timeout` if a report does not come.
    pub fn gather(
        &self,
        timeout_us: u64,
        mut meanwhile: impl FnMut() -> Result<(), Error>,
    ) -> Result<Option<[u64; MAX_MEMBERS]>, Error> {
        let mut values = [0u64; MAX_MEMBERS];
        let mut got = 0u32;
        let start = sys::time_us()?;
        while got.count_ones() as usize != self.len {
            meanwhile()?;
            match receive(Some(op(OP_REPORT)), false) {
                Ok((n, _)) => {
                    let (index, failed, value) = parse_report(n.payload());
                    if failed {
                        let node = self.nodes().get(usize::from(index)).copied().unwrap_or(u16::MAX);
                        log!("member {} on node {} failed with status {:#x}", index, node, value);
                        return Ok(None);
                    }
                    let bit = 1u32 << index;
                    if usize::from(index) >= self.len || got & bit != 0 {
                        return Err(Error::Protocol(crate::error::ProtocolError::BadInterface));
                    }
                    got |= bit;
                    values[usize::from(index)] = value;
                }
                Err(Error::Syscall(crate::SysError::WouldBlock)) if sys::time_us()? - start > timeout_us => {
                    return Err(Error::Timeout);
                }
                Err(Error::Syscall(crate::SysError::WouldBlock)) => sys::yield_now(),
                Err(e) => return Err(e),
            }
        }
        Ok(Some(values))
    }
}

impl Drop for Team {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        // Best effort, no retries: a member that already ended has nothing to be told.
        let Ok(abort) = crate::Notification::new(op(OP_GO), ABORT) else { return };
        for &node in self.nodes() {
            let _ = crate::notify(node, abort);
        }
    }
}

/// A member's side: member `index` of the owner on `owner`.
pub struct Member {
    owner: u16,
    index: u8,
    aborted: core::cell::Cell<bool>,
}

impl Member {
    /// Runs `work` as member `index` of the owner on `owner`: registers the team's channels,
    /// and if `work` fails (an error, or a non-zero status from `ensure!`) reports it to the
    /// owner. Returns the program's exit status.
    pub fn run(owner: u16, index: u8, work: impl FnOnce(&Member) -> Result<u64, Error>) -> Result<u64, Error> {
        register(op(OP_ADDRESS))?;
        register(op(OP_GO))?;
        let member = Self { owner, index, aborted: core::cell::Cell::new(false) };
        let status = match work(&member) {
            Ok(status) => status,
            Err(e) => e.exit_status(),
        };
        if member.aborted.get() {
            log!("member {}: the owner gave up", index);
        } else if status != 0 {
            // The owner may already be gone: the status is what matters then.
            let _ = member.send(true, status & ((1 << VALUE_BITS) - 1));
        }
        Ok(status)
    }

    /// The owner's memory (waits for it).
    pub fn address(&self) -> Result<u64, Error> {
        take(OP_ADDRESS)
    }

    /// The next phase the owner starts (waits for it); `Timeout` if the owner gave up (the
    /// member then ends without a report).
    pub fn phase(&self) -> Result<u64, Error> {
        match take(OP_GO)? {
            ABORT => {
                self.aborted.set(true);
                Err(Error::Timeout)
            }
            phase => Ok(phase),
        }
    }

    /// Reports `value` (below 2^55) for the phase.
    pub fn report(&self, value: u64) -> Result<(), Error> {
        self.send(false, value)
    }

    fn send(&self, failed: bool, value: u64) -> Result<(), Error> {
        let word = report_word(self.index, failed, value).ok_or(Error::NoArgument)?;
        send(self.owner, OP_REPORT, word)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_round_trip_and_out_of_range_ones_are_refused() {
        for (index, failed, value) in [(0, false, 0), (14, true, (1 << VALUE_BITS) - 1), (3, false, 300)] {
            let word = report_word(index, failed, value).unwrap();
            assert!(word >> 60 == 0, "a notification payload has 60 bits");
            assert_eq!(parse_report(word), (index, failed, value));
        }
        assert_eq!(report_word(15, false, 0), None);
        assert_eq!(report_word(0, false, 1 << VALUE_BITS), None);
    }
}
