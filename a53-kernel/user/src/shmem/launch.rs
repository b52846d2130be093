//! Who this process is in the job (user README, "OpenSHMEM"): PE 0 is the
//! process the runner started (its thread argument is anything but a PE tag); it spawns the
//! same program on nodes 1..N-1 with the tag `0x5E << 40 | n_pes << 16 | pe`. PEs are nodes.

use super::ShmemError;

/// The tag's marker in bits [47:40].
const TAG_MARK: u64 = 0x5E;

/// The most PEs the library serves (its per-PE counters are arrays of this many).
pub const MAX_PES: usize = 256;

/// The thread argument of PE `pe` of `n_pes`.
pub const fn tag(pe: u16, n_pes: u16) -> u64 {
    TAG_MARK << 40 | (n_pes as u64) << 16 | pe as u64
}

/// `(pe, n_pes)` if `argument` is a PE tag.
pub const fn untag(argument: u64) -> Option<(u16, u16)> {
    if argument >> 40 != TAG_MARK || (argument >> 32) & 0xff != 0 {
        return None;
    }
    let (pe, n) = ((argument & 0xffff) as u16, ((argument >> 16) & 0xffff) as u16);
    if pe >= n { None } else { Some((pe, n)) }
}

/// This process's place in the job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Role {
    pub me: u16,
    pub n_pes: u16,
    /// PE 0 of a new job: it starts the others.
    pub starts_the_others: bool,
}

/// The role of a process on `node` of `nodes` with thread argument `argument`. A tagged
/// process must run on the node of its PE; PE 0 must be node 0; at most [`MAX_PES`] PEs.
pub fn role(argument: Option<u64>, node: u16, nodes: u16) -> Result<Role, ShmemError> {
    match argument.and_then(untag) {
        Some((pe, n_pes)) if pe == node && n_pes <= nodes => Ok(Role { me: pe, n_pes, starts_the_others: false }),
        Some(_) => Err(ShmemError::BadLaunch(node)),
        None if node != 0 || usize::from(nodes) > MAX_PES || nodes == 0 => Err(ShmemError::BadLaunch(node)),
        None => Ok(Role { me: 0, n_pes: nodes, starts_the_others: true }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_round_trip_and_anything_else_is_pe_zero() {
        assert_eq!(tag(3, 4), 0x5E00_0004_0003);
        assert_eq!(untag(tag(3, 4)), Some((3, 4)));
        assert_eq!(untag(tag(4, 4)), None, "pe must be below n_pes");
        assert_eq!(untag(tag(1, 2) | 1 << 33), None);
        assert_eq!(untag(7), None);
        assert_eq!(role(None, 0, 4), Ok(Role { me: 0, n_pes: 4, starts_the_others: true }));
        assert_eq!(role(Some(12345), 0, 2), Ok(Role { me: 0, n_pes: 2, starts_the_others: true }));
        assert_eq!(role(Some(tag(2, 4)), 2, 4), Ok(Role { me: 2, n_pes: 4, starts_the_others: false }));
        assert_eq!(role(Some(tag(2, 4)), 1, 4), Err(ShmemError::BadLaunch(1)), "PE 2 on node 1");
        assert_eq!(role(None, 1, 4), Err(ShmemError::BadLaunch(1)), "PE 0 must be node 0");
    }
}
