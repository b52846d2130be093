//! Thread-argument packings of the programs whose argument holds more than one value (the
//! table in `README.md`). Pure functions, so a kernel test can build the same arguments.

use proto::gsas::{GlobalAddress, MailboxOpcode, Notification, PAGE_SIZE};

use crate::error::Error;

/// An argument that is a node number.
pub fn node(arg: u64) -> Result<u16, Error> {
    u16::try_from(arg).map_err(|_| Error::NoSuchNode(arg))
}

/// `spawn-tree`: the counter's address (page-aligned) | depth in bits [3:0].
pub mod spawn_tree {
    use super::*;

    pub const MAX_DEPTH: u8 = 15;

    pub fn pack(counter: GlobalAddress, depth: u8) -> Option<u64> {
        (counter.is_aligned(PAGE_SIZE) && depth <= MAX_DEPTH).then(|| counter.raw() | u64::from(depth))
    }

    /// (counter, depth).
    pub fn unpack(arg: u64) -> (GlobalAddress, u8) {
        (GlobalAddress::from_raw(arg & !0xf), (arg & 0xf) as u8)
    }
}

/// `fad-bench`: the counter's address (page-aligned) | requests kept outstanding in [11:0].
pub mod fad_bench {
    use super::*;

    pub const MAX_WINDOW: u16 = 256;
    /// The FADs one process sends.
    pub const OPS: u32 = 1000;

    pub fn pack(counter: GlobalAddress, window: u16) -> Option<u64> {
        (counter.is_aligned(PAGE_SIZE) && (1..=MAX_WINDOW).contains(&window)).then(|| counter.raw() | u64::from(window))
    }

    /// (counter, window).
    pub fn unpack(arg: u64) -> (GlobalAddress, u16) {
        (GlobalAddress::from_raw(arg & !0xfff), (arg & 0xfff) as u16)
    }
}

/// `fad-latency`: the counter's address (page-aligned) | the FADs to time in [11:0].
pub mod fad_latency {
    use super::*;

    /// The most FADs one run times (its samples are kept for the median).
    pub const MAX_COUNT: u16 = 1024;

    pub fn pack(counter: GlobalAddress, count: u16) -> Option<u64> {
        (counter.is_aligned(PAGE_SIZE) && (1..=MAX_COUNT).contains(&count)).then(|| counter.raw() | u64::from(count))
    }

    /// (counter, count).
    pub fn unpack(arg: u64) -> (GlobalAddress, u16) {
        (GlobalAddress::from_raw(arg & !0xfff), (arg & 0xfff) as u16)
    }
}

/// `cas-lock`: the argument is the page's address; the count is shared with the test that
/// checks the counters.
pub mod cas_lock {
    /// The critical sections one process runs. Eight contending processes on four emulated
    /// nodes take about 100 ms per section (every failed CAS is a request to the lock's node).
    pub const ITERATIONS: u32 = 50;
}

/// `notify-sender`: node in bits [15:0], opcode in [19:16], payload in [63:20] (44 bits).
pub mod notify_sender {
    use super::*;

    pub const PAYLOAD_BITS: u32 = 44;

    pub fn pack(node: u16, opcode: MailboxOpcode, payload: u64) -> Option<u64> {
        (payload >> PAYLOAD_BITS == 0).then(|| u64::from(node) | u64::from(opcode.value()) << 16 | payload << 20)
    }

    /// (node, the notification), or `None` for opcode 0.
    pub fn unpack(arg: u64) -> Option<(u16, Notification)> {
        let opcode = MailboxOpcode::new(((arg >> 16) & 0xf) as u8).ok()?;
        Some((arg as u16, Notification::new(opcode, arg >> 20).ok()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let counter = GlobalAddress::new(3, 0x5000).unwrap();
        let arg = spawn_tree::pack(counter, 3).unwrap();
        assert_eq!(spawn_tree::unpack(arg), (counter, 3));
        assert_eq!(spawn_tree::pack(GlobalAddress::new(3, 0x5008).unwrap(), 3), None);
        assert_eq!(spawn_tree::pack(counter, 16), None);

        let arg = fad_bench::pack(counter, 16).unwrap();
        assert_eq!(fad_bench::unpack(arg), (counter, 16));
        assert_eq!(fad_bench::pack(counter, 0), None);
        assert_eq!(fad_bench::pack(counter, fad_bench::MAX_WINDOW + 1), None);

        let arg = fad_latency::pack(counter, 500).unwrap();
        assert_eq!(fad_latency::unpack(arg), (counter, 500));
        assert_eq!(fad_latency::pack(counter, 0), None);
        assert_eq!(fad_latency::pack(counter, fad_latency::MAX_COUNT + 1), None);

        let op = MailboxOpcode::new(0xb).unwrap();
        let arg = notify_sender::pack(2, op, (1 << 44) - 1).unwrap();
        let (node, n) = notify_sender::unpack(arg).unwrap();
        assert_eq!((node, n.opcode(), n.payload()), (2, op, (1 << 44) - 1));
        assert_eq!(notify_sender::pack(2, op, 1 << 44), None);
        assert_eq!(notify_sender::unpack(5), None);
    }
}

/// `rdma-bench`: the role in bits [3:0], a node in [19:4], a count in [35:20], log2 of the
/// transfer size in [41:36].
pub mod rdma_bench {
    /// The largest transfer: 16 MiB.
    pub const MAX_LOG2: u8 = 24;

    /// What the process does (`rdma-bench`'s module documentation).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Role {
        /// `count` writes of 2^`log2` bytes to `node`, one at a time.
        Writes { node: u16, count: u16, log2: u8 },
        /// Spawned by `Writes` on `node`: holds the PD here until released.
        Peer { node: u16 },
    }

    pub fn pack(role: Role) -> u64 {
        let (r, node, count, log2) = match role {
            Role::Writes { node, count, log2 } => (0, node, count, log2),
            Role::Peer { node } => (1, node, 0, 0),
        };
        r | u64::from(node) << 4 | u64::from(count) << 20 | u64::from(log2 & 0x3f) << 36
    }

    pub fn unpack(arg: u64) -> Option<Role> {
        let node = (arg >> 4) as u16;
        Some(match arg & 0xf {
            0 => {
                let log2 = (arg >> 36 & 0x3f) as u8;
                if log2 > MAX_LOG2 || arg >> 42 != 0 {
                    return None;
                }
                Role::Writes { node, count: (arg >> 20) as u16, log2 }
            }
            1 => Role::Peer { node },
            _ => return None,
        })
    }

    #[cfg(test)]
    #[test]
    fn roles_round_trip() {
        for role in [
            Role::Writes { node: 3, count: 0xffff, log2: 24 },
            Role::Writes { node: 0, count: 1, log2: 4 },
            Role::Peer { node: 0xffff },
        ] {
            assert_eq!(unpack(pack(role)), Some(role));
        }
        assert_eq!(unpack(pack(Role::Writes { node: 0, count: 1, log2: 25 })), None);
        assert_eq!(unpack(2), None);
    }
}

/// `rdma-faults`: the role in bits [3:0], a node in [19:4].
pub mod rdma_faults {
    /// How the kernel answers the PLDMA's faults during the matrix; the program only reports it.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Role {
        /// The matrix on this node: every size, with the source, the destination or both
        /// non-resident, then the error cases.
        Local,
        /// The matrix towards a `Peer` spawned on `node`, whose destination pages it evicts.
        Remote { node: u16 },
        /// Spawned by `Remote` on `node`.
        Peer { node: u16 },
        /// `cargo xtask bench pagefault`: writes of 2^`log2` bytes on this node, with every page
        /// of `side` evicted first (`faulting`) or all resident; logs the median time, named
        /// with `tag` (the kernel's strategy, which the program cannot see).
        Time { log2: u8, side: Side, faulting: bool, tag: u8 },
    }

    /// The side of a transfer whose pages a `Time` run evicts.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Side {
        Source,
        Destination,
    }

    /// The largest `Time` transfer: 1 MiB, the regions' size.
    pub const TIME_MAX_LOG2: u8 = 20;

    pub fn pack(role: Role) -> u64 {
        match role {
            Role::Local => 0,
            Role::Remote { node } => 1 | u64::from(node) << 4,
            Role::Peer { node } => 2 | u64::from(node) << 4,
            Role::Time { log2, side, faulting, tag } => {
                3 | u64::from(log2) << 4
                    | u64::from(side == Side::Destination) << 12
                    | u64::from(faulting) << 13
                    | u64::from(tag) << 16
            }
        }
    }

    pub fn unpack(arg: u64) -> Option<Role> {
        let node = u16::try_from(arg >> 4).ok()?;
        match arg & 0xf {
            0 if node == 0 => Some(Role::Local),
            1 => Some(Role::Remote { node }),
            2 => Some(Role::Peer { node }),
            3 => {
                let log2 = (arg >> 4 & 0xff) as u8;
                if log2 > TIME_MAX_LOG2 || arg >> 24 != 0 || arg >> 14 & 0x3 != 0 {
                    return None;
                }
                let side = if arg >> 12 & 1 == 1 { Side::Destination } else { Side::Source };
                Some(Role::Time { log2, side, faulting: arg >> 13 & 1 == 1, tag: (arg >> 16) as u8 })
            }
            _ => None,
        }
    }

    #[cfg(test)]
    #[test]
    fn roles_round_trip() {
        let time = Role::Time { log2: 14, side: Side::Destination, faulting: true, tag: 1 };
        for role in [Role::Local, Role::Remote { node: 3 }, Role::Peer { node: 65535 }, time] {
            assert_eq!(unpack(pack(role)), Some(role));
        }
        assert_eq!(unpack(1 << 4), None, "Local names no node");
        assert_eq!(unpack(7), None);
    }
}

/// `rdma-pair`: the role in bits [3:0], a node in [19:4], a count in [35:20], a seed in [63:36].
pub mod rdma_pair {
    /// What the process does (`rdma-pair`'s module documentation).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Role {
        /// Every size from 16 B to 1 MiB, written to and read back from `node`'s peer (this
        /// node's own buffer when `node` is this node), then the isolation checks.
        Sweep { node: u16 },
        /// Spawned by a Sweep or a Device on `node`: tells it where its buffer and its device
        /// region are, then waits to be released and says whether the region is intact.
        Peer { node: u16 },
        /// Holds a pattern in its buffer and checks, when told, that nothing changed it.
        Victim,
        /// Writes at the victim's address here and at `node` under its own PD.
        Attack { node: u16 },
        /// Spawns a Worker on every other node and runs one itself: `count` transfers each.
        Stress { count: u16, seed: u32 },
        /// `count` random transfers to the Workers of every node; reports to `node`.
        Worker { node: u16, count: u16, seed: u32 },
        /// `rounds` x [`FORGE_PER_ROUND`] forged RAPF Aborts to `node`'s R5 from this process's
        /// PD page, as fast as it can write them; the engine must refuse every one; then a real
        /// write and read there, checked byte for byte.
        Forge { node: u16, rounds: u16 },
        /// Transfers from and into device memory here and at `node`'s peer (this node's own
        /// when `node` is this node) must fault and change no byte.
        Device { node: u16 },
    }

    /// RAPFs a `Forge` sends per round: one per tid of the R5's table ([`FORGE_TIDS`]) claiming
    /// its own PD, one per tid claiming another.
    pub const FORGE_PER_ROUND: u64 = 2 * FORGE_TIDS as u64;
    /// The R5's transaction table holds tids 0..256 (`r5-firmware` `rdma::MAX_TIDS`).
    pub const FORGE_TIDS: u16 = 256;

    pub fn pack(role: Role) -> u64 {
        let (r, node, count, seed) = match role {
            Role::Sweep { node } => (0, node, 0, 0),
            Role::Peer { node } => (1, node, 0, 0),
            Role::Victim => (2, 0, 0, 0),
            Role::Attack { node } => (3, node, 0, 0),
            Role::Stress { count, seed } => (4, 0, count, seed),
            Role::Worker { node, count, seed } => (5, node, count, seed),
            Role::Forge { node, rounds } => (6, node, rounds, 0),
            Role::Device { node } => (7, node, 0, 0),
        };
        r | u64::from(node) << 4 | u64::from(count) << 20 | u64::from(seed & 0x0fff_ffff) << 36
    }

    pub fn unpack(arg: u64) -> Option<Role> {
        let node = (arg >> 4) as u16;
        let count = (arg >> 20) as u16;
        let seed = (arg >> 36) as u32;
        Some(match arg & 0xf {
            0 => Role::Sweep { node },
            1 => Role::Peer { node },
            2 => Role::Victim,
            3 => Role::Attack { node },
            4 => Role::Stress { count, seed },
            5 => Role::Worker { node, count, seed },
            6 => Role::Forge { node, rounds: count },
            7 => Role::Device { node },
            _ => return None,
        })
    }

    #[cfg(test)]
    #[test]
    fn roles_round_trip() {
        for role in [
            Role::Sweep { node: 3 },
            Role::Peer { node: 0xffff },
            Role::Victim,
            Role::Attack { node: 1 },
            Role::Stress { count: 250, seed: 0x0fff_ffff },
            Role::Worker { node: 2, count: 0xffff, seed: 7 },
            Role::Forge { node: 1, rounds: 3 },
            Role::Device { node: 2 },
        ] {
            assert_eq!(unpack(pack(role)), Some(role));
        }
        assert_eq!(unpack(9), None);
    }
}

/// `mailbox-modes`: the role in bits [3:0], a node in [19:4].
pub mod mailbox_modes {
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Role {
        /// Every mode on this node, notifying itself, and the bad registrations.
        Local,
        /// Registers the signal and event channels, then sleeps until a signal ends the sleep.
        Sleeper,
        /// Wakes the `Sleeper` on `node`: an event-mode notification, then a signal-mode one.
        Waker { node: u16 },
    }

    pub fn pack(role: Role) -> u64 {
        match role {
            Role::Local => 0,
            Role::Sleeper => 1,
            Role::Waker { node } => 2 | u64::from(node) << 4,
        }
    }

    pub fn unpack(arg: u64) -> Option<Role> {
        let node = u16::try_from(arg >> 4).ok()?;
        match arg & 0xf {
            0 if node == 0 => Some(Role::Local),
            1 if node == 0 => Some(Role::Sleeper),
            2 => Some(Role::Waker { node }),
            _ => None,
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn roles_round_trip() {
            for role in [Role::Local, Role::Sleeper, Role::Waker { node: 3 }, Role::Waker { node: 0xffff }] {
                assert_eq!(unpack(pack(role)), Some(role));
            }
            assert_eq!(unpack(3), None);
            assert_eq!(unpack(1 | 1 << 4), None);
        }
    }
}

/// The socket programs' spawned parts (`sock-echo`, `sock-perf`, `sock-kv`, `sock-check`):
/// role in [7:0], port in [23:8], a node in [39:24], a count in [63:40].
pub mod socket_part {
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Part {
        /// What the process does; each program numbers its own roles.
        pub role: u8,
        pub port: u16,
        pub node: u16,
        /// Connections, operations, or bytes: the program says.
        pub count: u32,
    }

    pub const COUNT_MAX: u32 = (1 << 24) - 1;

    /// `None` when `count` does not fit its 24 bits.
    pub fn pack(p: Part) -> Option<u64> {
        (p.count <= COUNT_MAX)
            .then(|| u64::from(p.role) | u64::from(p.port) << 8 | u64::from(p.node) << 24 | u64::from(p.count) << 40)
    }

    pub fn unpack(arg: u64) -> Part {
        Part { role: arg as u8, port: (arg >> 8) as u16, node: (arg >> 24) as u16, count: (arg >> 40) as u32 }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn parts_round_trip() {
            for p in [
                Part { role: 0, port: 0, node: 0, count: 0 },
                Part { role: 0xff, port: 0xffff, node: 0xffff, count: COUNT_MAX },
                Part { role: 3, port: 7000, node: 2, count: 32 },
            ] {
                assert_eq!(unpack(pack(p).unwrap()), p);
            }
            assert_eq!(pack(Part { role: 0, port: 0, node: 0, count: COUNT_MAX + 1 }), None);
        }
    }
}

/// `keep-registers`: the argument is the process's index (its values are its own); the rounds
/// are shared with the test that counts the switches between the processes.
pub mod keep_registers {
    /// The rounds one process holds its registers across an act (a fifth each: a yield, a
    /// sleep, a call, a spin, a forwarded access).
    pub const ROUNDS: u64 = 200;
}

/// `short-waits`: which wait, 0 = SLEEP_US, 1 = WAIT_MIF on the process's empty mailbox
/// interface (which times out); each of [`COUNT`](short_waits::COUNT) waits lasts
/// [`US`](short_waits::US).
pub mod short_waits {
    /// The waits one run makes.
    pub const COUNT: u64 = 50;
    /// How long each is asked to last, in microseconds: a hundredth of a tick.
    pub const US: u64 = 100;

    // The program's status is the time all the waits took: at least COUNT x US microseconds,
    // which is above every failure status (`README.md`, "Exit statuses").
    const _: () = assert!(COUNT * US >= 0x1000);

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Wait {
        Sleep,
        Mailbox,
    }

    pub fn pack(wait: Wait) -> u64 {
        match wait {
            Wait::Sleep => 0,
            Wait::Mailbox => 1,
        }
    }

    pub fn unpack(arg: u64) -> Option<Wait> {
        match arg {
            0 => Some(Wait::Sleep),
            1 => Some(Wait::Mailbox),
            _ => None,
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn waits_round_trip() {
            for wait in [Wait::Sleep, Wait::Mailbox] {
                assert_eq!(unpack(pack(wait)), Some(wait));
            }
            assert_eq!(unpack(2), None);
        }
    }
}

/// `active-aa` (`docs/hw/active-access.md`): the initiator of the Active Access checks, and the
/// owner of the marked pages it spawns.
pub mod active_aa {
    /// What the process does (`active-aa`'s module documentation).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Role {
        /// Spawns an Owner on `node` and runs every check against it.
        Semantics { node: u16 },
        /// Marks its pages and checks its log; the initiator is on `node`.
        Owner { node: u16 },
        /// Spawned by an Owner next to it (same PD, not its holder): tries to take an IUID,
        /// to mark a page with the owner's IUID `iuid`, then to read the owner's log; reports to
        /// `node` (this node) before the read, and again only if the read returned.
        Peek { node: u16, iuid: u8 },
        /// Takes every IUID the node has left, gives one back and takes it again, gives them all
        /// back, then reads its first log's old address, which must kill it.
        Closer,
    }

    pub fn pack(role: Role) -> u64 {
        match role {
            Role::Semantics { node } => u64::from(node) << 4,
            Role::Owner { node } => 1 | u64::from(node) << 4,
            Role::Peek { node, iuid } => 2 | u64::from(node) << 4 | u64::from(iuid) << 20,
            Role::Closer => 3,
        }
    }

    pub fn unpack(arg: u64) -> Option<Role> {
        if arg >> 28 != 0 {
            return None;
        }
        let node = (arg >> 4) as u16;
        match arg & 0xf {
            0 => Some(Role::Semantics { node }),
            1 => Some(Role::Owner { node }),
            2 => Some(Role::Peek { node, iuid: (arg >> 20) as u8 }),
            3 if arg == 3 => Some(Role::Closer),
            _ => None,
        }
    }

    #[cfg(test)]
    #[test]
    fn roles_round_trip() {
        for role in
            [Role::Semantics { node: 3 }, Role::Owner { node: 0xffff }, Role::Peek { node: 1, iuid: 15 }, Role::Closer]
        {
            assert_eq!(unpack(pack(role)), Some(role));
        }
        assert_eq!(unpack(4), None);
        assert_eq!(unpack(3 | 1 << 4), None);
        assert_eq!(unpack(1 << 40), None);
    }
}

/// `active-dht` (`unimem_user::active::dht`): the owner of the two volumes, and its inserters
/// (`unimem_user::active::team` members). The role in bits [3:0]; Run: the collision
/// percentage in [11:4]; Inserter: the owner's node in [19:4], its index in [23:20], the
/// inserters in [27:24], the percentage in [35:28].
pub mod active_dht {
    /// What the process does (`active-dht`'s module documentation).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Role {
        /// Holds both volumes here, with an inserter on every other node; `collide_pct` % of
        /// the elements collide (0..=100).
        Run { collide_pct: u8 },
        /// Inserter `index` of `inserters`: its share of the run's elements into the volumes
        /// of the owner on `owner`, with one active put each, then with the RMA baseline.
        Inserter { owner: u16, index: u8, inserters: u8, collide_pct: u8 },
    }

    pub fn pack(role: Role) -> u64 {
        match role {
            Role::Run { collide_pct } => u64::from(collide_pct) << 4,
            Role::Inserter { owner, index, inserters, collide_pct } => {
                1 | u64::from(owner) << 4
                    | u64::from(index & 0xf) << 20
                    | u64::from(inserters & 0xf) << 24
                    | u64::from(collide_pct) << 28
            }
        }
    }

    pub fn unpack(arg: u64) -> Option<Role> {
        let pct = |shift: u32| Some((arg >> shift & 0xff) as u8).filter(|&p| p <= 100);
        match arg & 0xf {
            0 if arg >> 12 == 0 => Some(Role::Run { collide_pct: pct(4)? }),
            1 if arg >> 36 == 0 => Some(Role::Inserter {
                owner: (arg >> 4) as u16,
                index: (arg >> 20 & 0xf) as u8,
                inserters: (arg >> 24 & 0xf) as u8,
                collide_pct: pct(28)?,
            }),
            _ => None,
        }
    }

    #[cfg(test)]
    #[test]
    fn roles_round_trip() {
        for role in [
            Role::Run { collide_pct: 0 },
            Role::Run { collide_pct: 100 },
            Role::Inserter { owner: 0xffff, index: 14, inserters: 15, collide_pct: 25 },
        ] {
            assert_eq!(unpack(pack(role)), Some(role));
        }
        assert_eq!(unpack(101 << 4), None);
        assert_eq!(unpack(2), None);
        assert_eq!(unpack(1 << 36 | 1), None);
    }
}

/// `active-checkpoint` (`unimem_user::active::checkpoint`): the owner of the checkpointed
/// buffer and its writers, and the two measurements of `cargo xtask bench active`. The role in
/// bits [3:0]; Run: the rounds in [11:4]; the others: a node in [19:4], Writer: its index in
/// [23:20], the writers in [27:24].
pub mod active_checkpoint {
    /// Rounds at most.
    pub const MAX_ROUNDS: u8 = 64;

    /// What the process does (`active-checkpoint`'s module documentation).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Role {
        /// Owns the buffer here, with a writer on every other node, for `rounds` rounds
        /// (1..=`MAX_ROUNDS`).
        Run { rounds: u8 },
        /// Writer `index` of `writers` of the owner on `owner`.
        Writer { owner: u16, index: u8, writers: u8 },
        /// The cost of logging on plain puts: puts to a plain page and to a put-logging page
        /// of a `CostOwner` it spawns on `node`, timed.
        PutCost { node: u16 },
        /// Drains its log while `PutCost` on `node` puts.
        CostOwner { node: u16 },
        /// The handler's instructions per log entry, on this node alone (its puts to its own
        /// pages), read from the PMU: only where the kernel lets EL0 read it (the test image's
        /// `bench=active-icount`, under `-icount`); elsewhere the read kills the process.
        HandlerInstructions,
    }

    pub fn pack(role: Role) -> u64 {
        match role {
            Role::Run { rounds } => u64::from(rounds) << 4,
            Role::Writer { owner, index, writers } => {
                1 | u64::from(owner) << 4 | u64::from(index & 0xf) << 20 | u64::from(writers & 0xf) << 24
            }
            Role::PutCost { node } => 2 | u64::from(node) << 4,
            Role::CostOwner { node } => 3 | u64::from(node) << 4,
            Role::HandlerInstructions => 4,
        }
    }

    pub fn unpack(arg: u64) -> Option<Role> {
        let node = (arg >> 4) as u16;
        match arg & 0xf {
            0 if arg >> 12 == 0 => {
                Some(Role::Run { rounds: Some((arg >> 4) as u8).filter(|r| (1..=MAX_ROUNDS).contains(r))? })
            }
            1 if arg >> 28 == 0 => {
                Some(Role::Writer { owner: node, index: (arg >> 20 & 0xf) as u8, writers: (arg >> 24 & 0xf) as u8 })
            }
            2 if arg >> 20 == 0 => Some(Role::PutCost { node }),
            3 if arg >> 20 == 0 => Some(Role::CostOwner { node }),
            4 if arg >> 4 == 0 => Some(Role::HandlerInstructions),
            _ => None,
        }
    }

    #[cfg(test)]
    #[test]
    fn roles_round_trip() {
        for role in [
            Role::Run { rounds: 1 },
            Role::Run { rounds: MAX_ROUNDS },
            Role::Writer { owner: 0xffff, index: 14, writers: 15 },
            Role::PutCost { node: 1 },
            Role::CostOwner { node: 0 },
            Role::HandlerInstructions,
        ] {
            assert_eq!(unpack(pack(role)), Some(role));
        }
        assert_eq!(unpack(0), None, "no rounds");
        assert_eq!(unpack(u64::from(MAX_ROUNDS + 1) << 4), None);
        assert_eq!(unpack(5), None);
        assert_eq!(unpack(4 | 1 << 4), None);
    }
}

/// `active-count` (`unimem_user::active::count`): the owner of the counted objects and its
/// readers. The role in bits [3:0], the gets of each reader in [19:4]; Reader: the owner's node
/// in [35:20], its index in [39:36].
pub mod active_count {
    /// What the process does (`active-count`'s module documentation).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Role {
        /// Owns the objects here, with a reader on every other node, each making `reads` gets
        /// (at least 1; all of them together at most `count::MAX_GETS`).
        Run { reads: u16 },
        /// Reader `index` of the owner on `owner`.
        Reader { owner: u16, index: u8, reads: u16 },
    }

    pub fn pack(role: Role) -> u64 {
        match role {
            Role::Run { reads } => u64::from(reads) << 4,
            Role::Reader { owner, index, reads } => {
                1 | u64::from(reads) << 4 | u64::from(owner) << 20 | u64::from(index & 0xf) << 36
            }
        }
    }

    pub fn unpack(arg: u64) -> Option<Role> {
        let reads = Some((arg >> 4) as u16).filter(|&r| r > 0)?;
        match arg & 0xf {
            0 if arg >> 20 == 0 => Some(Role::Run { reads }),
            1 if arg >> 40 == 0 => {
                Some(Role::Reader { owner: (arg >> 20) as u16, index: (arg >> 36 & 0xf) as u8, reads })
            }
            _ => None,
        }
    }

    #[cfg(test)]
    #[test]
    fn roles_round_trip() {
        for role in
            [Role::Run { reads: 1 }, Role::Run { reads: 0xffff }, Role::Reader { owner: 0xffff, index: 14, reads: 300 }]
        {
            assert_eq!(unpack(pack(role)), Some(role));
        }
        assert_eq!(unpack(0), None, "no reads");
        assert_eq!(unpack(2 | 1 << 4), None);
        assert_eq!(unpack(1 | 1 << 4 | 1 << 40), None);
    }
}

/// `active-notify`'s argument: which side it is.
pub mod active_notify {
    /// What the process does (`active-notify`'s module documentation).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Role {
        /// Spawns an Owner on `node` and puts to its page once per phase.
        Initiator { node: u16 },
        /// Takes the puts through each way of being told; the initiator is on `node`.
        Owner { node: u16 },
    }

    pub fn pack(role: Role) -> u64 {
        match role {
            Role::Initiator { node } => u64::from(node) << 1,
            Role::Owner { node } => 1 | u64::from(node) << 1,
        }
    }

    pub fn unpack(arg: u64) -> Option<Role> {
        let node = u16::try_from(arg >> 1).ok()?;
        Some(if arg & 1 == 0 { Role::Initiator { node } } else { Role::Owner { node } })
    }

    #[cfg(test)]
    #[test]
    fn roles_round_trip() {
        for role in [Role::Initiator { node: 3 }, Role::Owner { node: 0xffff }] {
            assert_eq!(unpack(pack(role)), Some(role));
        }
        assert_eq!(unpack(1 << 40), None);
    }
}
