//! The system-call interface between the kernel and EL0 processes (`docs/hw/syscalls.md`).
//!
//! `svc #0` with the call number in x8 and arguments in x0..x5. The kernel answers in x0 (and
//! x1, x2 where a call returns more): a value >= 0, or a negative [`Error`]. A bad pointer or
//! length is an error return, never a kernel fault.

/// Call numbers (x8).
pub mod nr {
    /// x0 = exit status. Does not return.
    pub const EXIT: u64 = 0;
    /// Gives the core to another runnable process.
    pub const YIELD: u64 = 1;
    /// x0 = pointer, x1 = length (<= `LOG_MAX`): writes a line to the node's console.
    pub const LOG: u64 = 2;
    /// Returns x0 = this node's id, x1 = the number of nodes.
    pub const NODE_INFO: u64 = 3;
    /// Returns x0 = the VA of this process's packetizer interface page, x1 = the VA of its
    /// mailbox interface page, x2 = its PID (48 bits, `proto::gsas::Pid`).
    pub const INTERFACE: u64 = 4;
    /// Returns x0 = the argument the process was spawned with, or
    /// `proto::gsas::EMPTY_THREAD_ARGUMENT` when it has none.
    pub const THREAD_ARGUMENT: u64 = 5;
    /// x0 = words, x1 = timeout in microseconds (0 = none), x2 = the node whose answer is
    /// awaited, or `NO_NODE`: sleeps until this process's mailbox interface holds at least x0
    /// words (at most its depth). Returns 0, `TimedOut`, or `Unreachable` as soon as node x2 is
    /// (or becomes) unreachable.
    pub const WAIT_MIF: u64 = 6;
    /// x0 = opcode (8..=15, the user channels), x1 = how the process learns of a notification
    /// (`MODE_READ`, `MODE_SIGNAL` or `MODE_EVENT`: the seed's `'r'`, `'s'`, `'e'`), x2 = the
    /// signal number (0..=63) for `MODE_SIGNAL`, else 0: this process receives that opcode's
    /// notifications from now on.
    pub const MAILBOX_REGISTER: u64 = 7;
    /// x0 = opcode.
    pub const MAILBOX_UNREGISTER: u64 = 8;
    /// x0 = opcode to receive, or `ANY_OPCODE`; x1 = `RECV_NONBLOCKING` or 0; x2 = for a
    /// blocking receive, a timeout in microseconds (0 = none). Returns x0 = 0, x1 = the 64-bit
    /// notification, x2 = the sender's PID; or `WouldBlock`, or `TimedOut`.
    pub const MAILBOX_RECEIVE: u64 = 9;
    /// Returns x0 = microseconds since boot.
    pub const TIME_US: u64 = 10;
    /// x0 = microseconds: sleeps at least that long.
    pub const SLEEP_US: u64 = 11;
    /// x0 = pointer, x1 = length: copies the process's arguments (`ARGS_MAX` bytes at most:
    /// each argument followed by a zero byte) there. Returns x0 = their full length, which may
    /// exceed x1 (then only x1 bytes were copied).
    pub const ARGS: u64 = 12;
    /// Returns x0 = the VA of this process's RDMA queue set (`proto::rdma::queue::QueueSet`, two
    /// pages), x1 = the VA of its PLDMA PD page, x2 = its protection domain; or `NoPd` when it
    /// holds no RDMA resources on this node (`docs/hw/pldma.md`, "Protection domains").
    pub const RDMA_QUEUES: u64 = 13;
    /// x0 = timeout in microseconds (0 = none); x5 = 0. Arms the process's completion queue and
    /// sleeps until it holds an entry (the PLDMA's completion interrupt ends the sleep). Returns
    /// 0 at once if it already holds one; `TimedOut`; `NoPd`.
    pub const RDMA_WAIT: u64 = 14;
    /// x0 = length in bytes, x1 = flags (`MAP_WRITABLE`, `MAP_DEVICE`): a new region of that
    /// many bytes (rounded up to pages) whose pages get a frame at their first touch, by the
    /// CPU or (not `MAP_DEVICE`) the PLDMA. Returns x0 = its address; `BadArgument` for length
    /// 0, an unknown flag or no room left.
    pub const MAP: u64 = 15;
    /// x0 = address, x1 = length: removes the whole region `MAP` returned there, freeing its
    /// pages. Returns x0 = the pages that were resident; `BadArgument`.
    pub const UNMAP: u64 = 16;
    /// x0 = address, x1 = length, inside one region: its pages become non-resident again (as
    /// `madvise(DONTNEED)`; the next touch gets a zeroed page). Returns x0 = the pages that were
    /// resident; `BadArgument`.
    pub const EVICT: u64 = 17;
    /// x0 = `RECV_NONBLOCKING` or 0. The process's event counter (the seed's `'e'` mode, as an
    /// eventfd): returns x0 = the notifications waiting on its `MODE_EVENT` opcodes, sleeping
    /// until there is one; they stay queued for `MAILBOX_RECEIVE`. `WouldBlock`;
    /// `NotRegistered` when it has no `MODE_EVENT` opcode.
    pub const MAILBOX_EVENT: u64 = 18;
    /// Returns x0 = the signals raised for this process since the last call (bit n: signal n),
    /// and clears them. A signal (`MODE_SIGNAL`) also ends the process's current wait, if it is
    /// in one, with `Interrupted`.
    pub const SIGNALS: u64 = 19;
    /// Sockets over RDMA (`docs/hw/sockets.md`). x0 = port (1..=65535): listens on it. Returns
    /// x0 = the listener's handle; `AddressInUse`; `Busy` when the node's listeners are taken;
    /// `NoPd` when the node has no sockets (no RDMA).
    pub const SOCKET_LISTEN: u64 = 20;
    /// x0 = listener, x1 = `socket::NONBLOCKING` or 0: takes a connection made to it, sleeping
    /// until there is one. Returns x0 = its handle, x1 = the peer's node; `WouldBlock`.
    pub const SOCKET_ACCEPT: u64 = 21;
    /// x0 = node, x1 = port, x2 = timeout in microseconds (0 = none): connects, sleeping until
    /// the peer's kernel answers. Returns x0 = the handle; `ConnectionRefused`; `Unreachable`;
    /// `TimedOut`; `Busy` when the node's connections are taken.
    pub const SOCKET_CONNECT: u64 = 22;
    /// x0 = connection, x1 = pointer, x2 = length (1..=`socket::IO_MAX`), x3 = flags: reads
    /// what has arrived, sleeping until something has. Returns x0 = the bytes read, 0 at the
    /// end of the stream; `WouldBlock`; `ConnectionReset`.
    pub const SOCKET_READ: u64 = 23;
    /// x0 = connection, x1 = pointer, x2 = length (1..=`socket::IO_MAX`), x3 = flags: copies
    /// what fits into the send ring and sends it, sleeping until something fits. Returns x0 =
    /// the bytes taken; `WouldBlock`; `ConnectionReset`; `Closed` after a write shutdown.
    pub const SOCKET_WRITE: u64 = 24;
    /// x0 = connection, x1 = `socket::shutdown::*`: ends one direction, or both.
    pub const SOCKET_SHUTDOWN: u64 = 25;
    /// x0 = a connection or a listener: gives it up (a connection's unsent data still goes; a
    /// listener's connections not yet accepted are closed).
    pub const SOCKET_CLOSE: u64 = 26;
    /// x0 = pointer to `socket::PollEntry` array, x1 = entries (1..=`socket::POLL_MAX`),
    /// x2 = timeout in microseconds (0 = return at once, `u64::MAX` = none): writes each
    /// entry's `ready`, sleeping until one is not 0. Returns x0 = the entries ready; 0 after
    /// the timeout.
    pub const SOCKET_POLL: u64 = 27;
    /// x0 = pointer to 4 words: writes the process's `socket::SocketStats`.
    pub const SOCKET_STATS: u64 = 28;
    /// x0 = pointer, x1 = length: copies the process's program name (its name in the program
    /// store, UTF-8, no terminating zero) there. Returns x0 = the name's full length, which may
    /// exceed x1 (then only x1 bytes were copied).
    pub const PROGRAM_NAME: u64 = 29;
    /// x0 = exit status (0..=255): ends every process of the caller's protection domain (its
    /// job) on every node of the cluster with that status, the caller too. Does not return. A
    /// process without RDMA (PD 15, shared by unrelated jobs) ends only itself.
    pub const JOB_EXIT: u64 = 30;
    /// Active Access (`docs/hw/active-access.md`): takes a free IUID for the caller, which must
    /// hold its PD on this node, empties its log and maps it into the caller (ring at
    /// `layout::active_log(iuid)`, header page after it). Returns x0 = the IUID, x1 = the ring's
    /// address, x2 = the header's. NoPd without RDMA; Busy when every IUID is taken.
    pub const ACTIVE_OPEN: u64 = 31;
    /// x0 = IUID (the caller's), x1 = an address in a page of the caller's own memory (a region
    /// of `MAP`, not `MAP_DEVICE`), x2 = actions (`active::*` bits; 0 unmarks the page): marks
    /// the page for the engine. BadArgument for an IUID not the caller's, an address outside its
    /// regions, or an unknown action bit; Busy when the page's APT set is full.
    pub const ACTIVE_ASSOC: u64 = 32;
    /// x0 = IUID (the caller's): gives it back. Its pages are unmarked, its log invalidated and
    /// unmapped from the caller (a later access there faults), and the IUID is free for the
    /// next `ACTIVE_OPEN`. BadArgument for an IUID not the caller's; NoPd without RDMA.
    pub const ACTIVE_CLOSE: u64 = 33;
    /// x0 = IUID (the caller's), x1 = a user mailbox opcode (8..=15) the caller receives, or 0:
    /// every entry the engine appends to the log is then told to the caller by a notification
    /// from this node's kernel on that opcode, payload the IUID, in the mode the caller
    /// registered it (`MAILBOX_REGISTER`: read, signal or event); 0 makes the log polled again.
    /// BadArgument for an IUID not the caller's or an opcode out of range; NotRegistered when
    /// the caller does not receive that opcode; NoPd without RDMA.
    pub const ACTIVE_NOTIFY: u64 = 34;
}

/// `ACTIVE_ASSOC` actions: the bits of the engine's APT `attr` below the IUID
/// (`hal::pldma::active::APT_ATTR`).
pub mod active {
    /// A remote put is written to memory (without it: an active put).
    pub const W: u64 = 1;
    /// A remote put is logged.
    pub const WL: u64 = 2;
    /// A remote put is logged with its data.
    pub const WLD: u64 = 4;
    /// A remote get is logged.
    pub const RL: u64 = 8;
    /// A remote get is logged with the data served.
    pub const RLD: u64 = 16;
    /// Entries go to the IUID's log (without it: the kernel's fault log).
    pub const E: u64 = 32;
    /// The IUID's flushing page.
    pub const FLUSH: u64 = 64;
    /// Every action bit.
    pub const ALL: u64 = 127;
}

/// `MAILBOX_REGISTER` modes (seed §3.2.2).
pub const MODE_READ: u64 = 0;
pub const MODE_SIGNAL: u64 = 1;
pub const MODE_EVENT: u64 = 2;
/// Signal numbers are 0..SIGNALS_MAX.
pub const SIGNALS_MAX: u64 = 64;

/// `MAP` flag: the region is writable (else read-only).
pub const MAP_WRITABLE: u64 = 1;
/// `MAP` flag: a region of device memory (Device-nGnRE for the CPU), in the device window
/// (`layout::DEVICE_WINDOW`), which no DMA reaches.
pub const MAP_DEVICE: u64 = 2;
/// `MAP` flag: the region is placed at the address in x2 (page-aligned, the whole region in
/// `layout::REGIONS_START..REGIONS_END`, overlapping no region of the process), not where `MAP`
/// would place it; not with `MAP_DEVICE`.
pub const MAP_FIXED: u64 = 4;

/// `WAIT_MIF`: the wait is for no node in particular.
pub const NO_NODE: u64 = u64::MAX;
/// Most bytes of arguments a process can have (each one and its terminating zero).
pub const ARGS_MAX: usize = 256;

/// Longest log line, in bytes.
pub const LOG_MAX: u64 = 256;
/// `MAILBOX_RECEIVE`: any opcode this process registered.
pub const ANY_OPCODE: u64 = 16;
/// `MAILBOX_RECEIVE` flag: return `WouldBlock` instead of sleeping.
pub const RECV_NONBLOCKING: u64 = 1;

/// Error returns, as negative values in x0.
#[repr(i64)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// An argument is out of range.
    BadArgument = -1,
    /// A pointer or length names memory the process does not own.
    BadPointer = -2,
    /// No such call.
    NoSuchCall = -3,
    /// Nothing there, and the caller asked not to wait.
    WouldBlock = -4,
    TimedOut = -5,
    /// The opcode has another receiver, or the resource is taken.
    Busy = -6,
    /// The process has no such registration.
    NotRegistered = -7,
    /// The node named is unreachable: it died, or its links are down.
    Unreachable = -8,
    /// The process holds no RDMA resources on this node: it does not hold its protection
    /// domain here, or the node has no RDMA (no R5 firmware, no engine).
    NoPd = -9,
    /// A signal ended the wait (`SIGNALS` says which).
    Interrupted = -10,
    /// Nobody listens on that port, or its listener's backlog is full.
    ConnectionRefused = -11,
    /// The peer closed, stopped reading, or its node died; or the transfer to it failed.
    ConnectionReset = -12,
    /// The port has a listener already.
    AddressInUse = -13,
    /// That direction of the connection was shut down.
    Closed = -14,
}

impl Error {
    pub fn from_return(value: i64) -> Option<Self> {
        Some(match value {
            -1 => Error::BadArgument,
            -2 => Error::BadPointer,
            -3 => Error::NoSuchCall,
            -4 => Error::WouldBlock,
            -5 => Error::TimedOut,
            -6 => Error::Busy,
            -7 => Error::NotRegistered,
            -8 => Error::Unreachable,
            -9 => Error::NoPd,
            -10 => Error::Interrupted,
            -11 => Error::ConnectionRefused,
            -12 => Error::ConnectionReset,
            -13 => Error::AddressInUse,
            -14 => Error::Closed,
            _ => return None,
        })
    }
}

/// Where things are in a process's address space (TTBR0, 39-bit VA).
pub mod layout {
    /// Programs are linked here.
    pub const IMAGE_BASE: u64 = 0x0000_0000_0040_0000;
    /// Highest address an image may use.
    pub const IMAGE_END: u64 = 0x0000_0000_4000_0000;
    /// The packetizer interface page, then the mailbox interface page.
    pub const PIF_PAGE: u64 = 0x0000_0040_0000_0000;
    pub const MIF_PAGE: u64 = PIF_PAGE + 0x1000;
    /// The RDMA queue set (two pages, normal non-cacheable) and the PLDMA PD page (device; on
    /// QEMU unmapped and forwarded like the interface pages), for processes that hold their PD.
    pub const RDMA_QUEUE_SET: u64 = PIF_PAGE + 0x2000;
    pub const RDMA_QUEUE_SET_BYTES: u64 = crate::rdma::queue::QUEUE_SET_BYTES;
    pub const PD_PAGE: u64 = RDMA_QUEUE_SET + RDMA_QUEUE_SET_BYTES;
    /// Regions (`nr::MAP`) are placed here, one after the other, a page apart.
    pub const REGIONS_START: u64 = 0x0000_0010_0000_0000;
    pub const REGIONS_END: u64 = 0x0000_0030_0000_0000;
    /// Where the OpenSHMEM library maps its symmetric heap (`MAP_FIXED`), the same address in
    /// every process of a job, and the most address space it may take there (pages are resident
    /// only once touched).
    pub const SYMMETRIC_HEAP: u64 = 0x0000_0020_0000_0000;
    pub const SYMMETRIC_HEAP_MAX: u64 = 1 << 30;
    /// The device window: the gigabyte of the interface pages. Everything a process has mapped
    /// as device memory lies in it (its PIF, MIF and PD pages, its queue set, its `MAP_DEVICE`
    /// regions), and its SMMU context bank's view leaves it out: no DMA reaches it
    /// (`docs/hw/smmu.md`, "What the engine may reach").
    pub const DEVICE_WINDOW: u64 = PIF_PAGE;
    pub const DEVICE_WINDOW_SIZE: u64 = 1 << 30;
    /// `MAP_DEVICE` regions are placed here, one after the other, a page apart.
    pub const DEVICE_REGIONS_START: u64 = DEVICE_WINDOW + 0x1000_0000;
    pub const DEVICE_REGIONS_END: u64 = DEVICE_WINDOW + DEVICE_WINDOW_SIZE;

    /// Active Access logs (`nr::ACTIVE_OPEN`): IUID `i`'s 16 KiB ring at
    /// `active_log(i)`, its header page right after it, in the device window (no DMA reaches
    /// them).
    pub const ACTIVE_LOGS: u64 = DEVICE_WINDOW + 0x10_0000;
    /// The stride of the logs: ring and header page.
    pub const ACTIVE_LOG_STRIDE: u64 = 0x5000;
    /// The ring's bytes (the header page follows it).
    pub const ACTIVE_LOG_RING: u64 = 0x4000;
    /// Where IUID `iuid`'s ring is mapped.
    pub const fn active_log(iuid: u8) -> u64 {
        ACTIVE_LOGS + iuid as u64 * ACTIVE_LOG_STRIDE
    }
    const _: () = assert!(ACTIVE_LOGS + 17 * ACTIVE_LOG_STRIDE <= DEVICE_REGIONS_START);

    /// Whether `va` lies in the device window.
    pub const fn in_device_window(va: u64) -> bool {
        va >= DEVICE_WINDOW && va < DEVICE_WINDOW + DEVICE_WINDOW_SIZE
    }
    /// The stack: it grows down from here; an unmapped guard page lies below it.
    pub const STACK_TOP: u64 = 0x0000_007f_ffff_0000;
    pub const STACK_SIZE: u64 = 64 * 1024;
    /// The end of the user address space (2^39).
    pub const USER_END: u64 = 1 << 39;

    // The layout fits in the user half, in this order, with a guard page below the stack.
    const _: () = assert!(IMAGE_BASE < IMAGE_END && IMAGE_END <= REGIONS_START);
    const _: () = assert!(REGIONS_START < REGIONS_END && REGIONS_END <= PIF_PAGE);
    const _: () = assert!(REGIONS_START <= SYMMETRIC_HEAP && SYMMETRIC_HEAP + SYMMETRIC_HEAP_MAX <= REGIONS_END);
    const _: () = assert!(MIF_PAGE + 0x1000 <= RDMA_QUEUE_SET);
    const _: () = assert!(PD_PAGE + 0x1000 <= STACK_TOP - STACK_SIZE - 0x1000);
    // The device window is one whole gigabyte (one entry of the first-level table, which the
    // SMMU's view leaves invalid) and holds every device page.
    const _: () = assert!(DEVICE_WINDOW.is_multiple_of(DEVICE_WINDOW_SIZE));
    const _: () = assert!(PD_PAGE + 0x1000 <= DEVICE_REGIONS_START);
    const _: () = assert!(DEVICE_REGIONS_END <= STACK_TOP - STACK_SIZE - 0x1000);
    const _: () = assert!(STACK_TOP < USER_END);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_round_trip_through_their_return_values() {
        for e in [
            Error::BadArgument,
            Error::BadPointer,
            Error::NoSuchCall,
            Error::WouldBlock,
            Error::TimedOut,
            Error::Busy,
            Error::NotRegistered,
            Error::Unreachable,
            Error::NoPd,
            Error::Interrupted,
            Error::ConnectionRefused,
            Error::ConnectionReset,
            Error::AddressInUse,
            Error::Closed,
        ] {
            assert_eq!(Error::from_return(e as i64), Some(e));
        }
        assert_eq!(Error::from_return(0), None);
        assert_eq!(Error::from_return(5), None);
    }

    /// `0x40_0000_2000`: hex digits in groups of four from the right, as the doc writes them.
    fn grouped(value: u64) -> String {
        let digits = format!("{value:x}");
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(4) {
                out.push('_');
            }
            out.push(c);
        }
        format!("0x{out}")
    }

    #[test]
    fn the_address_table_in_the_doc_is_the_layout() {
        use layout::*;
        let doc = include_str!("../../docs/hw/syscalls.md");
        let rows: [(u64, Option<u64>, &str); 9] = [
            (REGIONS_START, Some(REGIONS_END), "regions (`MAP`)"),
            (DEVICE_WINDOW, Some(DEVICE_WINDOW + DEVICE_WINDOW_SIZE), "**the device window**"),
            (PIF_PAGE, None, "this process's PIF page"),
            (MIF_PAGE, None, "this process's MIF page"),
            (RDMA_QUEUE_SET, Some(RDMA_QUEUE_SET + RDMA_QUEUE_SET_BYTES), "the RDMA queue set"),
            (PD_PAGE, None, "the PLDMA PD page"),
            (ACTIVE_LOGS, Some(active_log(17)), "Active Access logs"),
            (DEVICE_REGIONS_START, Some(DEVICE_REGIONS_END), "device regions"),
            (STACK_TOP - STACK_SIZE, Some(STACK_TOP), "the stack"),
        ];
        for (start, end, what) in rows {
            let range = match end {
                Some(end) => format!("`{} .. {}`", grouped(start), grouped(end)),
                None => format!("`{}`", grouped(start)),
            };
            let row = format!("| {range} | {what}");
            assert!(doc.contains(&row), "docs/hw/syscalls.md has no row {row}");
        }
        assert!(doc.contains(&format!("`0x{:04x}_{:04x} ..`", IMAGE_BASE >> 16, IMAGE_BASE & 0xffff)));
        assert!(doc.contains(&format!("1 = `MAP_WRITABLE`, {MAP_DEVICE} = `MAP_DEVICE`")));
    }

    #[test]
    fn active_actions_are_the_apt_attr_bits() {
        use hal::pldma::active::Attr;
        let none = Attr::default();
        let bit = |a: Attr| u64::from(a.encode());
        assert_eq!(
            [active::W, active::WL, active::WLD, active::RL, active::RLD, active::E, active::FLUSH],
            [
                bit(Attr { w: true, ..none }),
                bit(Attr { wl: true, ..none }),
                bit(Attr { wld: true, ..none }),
                bit(Attr { rl: true, ..none }),
                bit(Attr { rld: true, ..none }),
                bit(Attr { e: true, ..none }),
                bit(Attr { flush: true, ..none })
            ]
        );
        let all = Attr { w: true, wl: true, wld: true, rl: true, rld: true, e: true, flush: true, iuid: 0 };
        assert_eq!(active::ALL, bit(all));
        let doc = include_str!("../../docs/hw/syscalls.md");
        assert!(doc.contains(&format!("| {} | ACTIVE_OPEN |", nr::ACTIVE_OPEN)));
        assert!(doc.contains(&format!("| {} | ACTIVE_ASSOC |", nr::ACTIVE_ASSOC)));
        assert!(doc.contains(&format!("| {} | ACTIVE_CLOSE |", nr::ACTIVE_CLOSE)));
        assert!(doc.contains(&format!("| {} | ACTIVE_NOTIFY |", nr::ACTIVE_NOTIFY)));
    }
}
