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

        let op = MailboxOpcode::new(0xb).unwrap();
        let arg = notify_sender::pack(2, op, (1 << 44) - 1).unwrap();
        let (node, n) = notify_sender::unpack(arg).unwrap();
        assert_eq!((node, n.opcode(), n.payload()), (2, op, (1 << 44) - 1));
        assert_eq!(notify_sender::pack(2, op, 1 << 44), None);
        assert_eq!(notify_sender::unpack(5), None);
    }
}
