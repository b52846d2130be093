//! The ISA-independent part of emulation: the bus and the result record.

use crate::error::{BusError, EmulateError};
use crate::types::{Kind, Size};

/// The host-served bus that performs the forwarded access.
///
/// Data is little-endian: the byte at `addr` is bits 7:0 of the value. The
/// emulation layer makes no alignment check (the original access faulted on
/// translation, before any alignment check); a device model that cannot do
/// an unaligned or oversized access should fail it with
/// [`BusError::Rejected`].
pub trait Bus {
    /// Reads `size` bytes at `addr`. Bits above `size` in the result are
    /// ignored.
    fn read(&mut self, addr: u64, size: Size) -> Result<u128, BusError>;

    /// Writes the low `size` bytes of `value` to `addr`. Bits above `size`
    /// are always zero.
    fn write(&mut self, addr: u64, size: Size, value: u128) -> Result<(), BusError>;

    /// The two reads of a pair instruction, `size` bytes at `addrs[0]` and
    /// then at `addrs[1]` (the next `size` bytes, wrapping as the ISA's
    /// address arithmetic does). A bus that can make both in one transaction
    /// (a burst) overrides this; by default they are two reads. On failure,
    /// the address of the access that failed.
    fn read_pair(&mut self, addrs: [u64; 2], size: Size) -> Result<[u128; 2], (u64, BusError)> {
        let [a, b] = addrs;
        Ok([self.read(a, size).map_err(|e| (a, e))?, self.read(b, size).map_err(|e| (b, e))?])
    }

    /// The two writes of a pair instruction, as [`read_pair`](Bus::read_pair)
    /// reads.
    fn write_pair(&mut self, addrs: [u64; 2], size: Size, values: [u128; 2]) -> Result<(), (u64, BusError)> {
        let [a, b] = addrs;
        self.write(a, size, values[0]).map_err(|e| (a, e))?;
        self.write(b, size, values[1]).map_err(|e| (b, e))
    }
}

impl<B: Bus + ?Sized> Bus for &mut B {
    fn read(&mut self, addr: u64, size: Size) -> Result<u128, BusError> {
        (**self).read(addr, size)
    }

    fn write(&mut self, addr: u64, size: Size, value: u128) -> Result<(), BusError> {
        (**self).write(addr, size, value)
    }

    fn read_pair(&mut self, addrs: [u64; 2], size: Size) -> Result<[u128; 2], (u64, BusError)> {
        (**self).read_pair(addrs, size)
    }

    fn write_pair(&mut self, addrs: [u64; 2], size: Size, values: [u128; 2]) -> Result<(), (u64, BusError)> {
        (**self).write_pair(addrs, size, values)
    }
}

/// One completed bus access.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BusAccess {
    /// Address accessed.
    pub addr: u64,
    /// Access size.
    pub size: Size,
    /// Read (load) or write (store).
    pub kind: Kind,
    /// Value read or written (low `size` bytes significant, rest zero).
    pub value: u128,
}

const EMPTY: BusAccess = BusAccess { addr: 0, size: Size::B1, kind: Kind::Load, value: 0 };

/// Outcome of a successful execution ([`a64::execute`](crate::a64::execute),
/// [`a32::execute`](crate::a32::execute)): what the glue needs to resume.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Executed {
    /// `false` when an A32 condition check failed and the instruction was
    /// treated as a no-op (no bus access, no register write). Always `true`
    /// for A64.
    pub executed: bool,
    /// New value of the base register if it was written back.
    pub writeback: Option<u64>,
    /// Bytes to add to the faulting PC to resume after the instruction (4).
    pub pc_advance: u64,
}

impl Executed {
    pub(crate) const fn skipped() -> Executed {
        Executed { executed: false, writeback: None, pc_advance: 4 }
    }

    pub(crate) const fn done(writeback: Option<u64>) -> Executed {
        Executed { executed: true, writeback, pc_advance: 4 }
    }
}

/// Outcome of a successful emulation ([`a64::emulate`](crate::a64::emulate),
/// [`a32::emulate`](crate::a32::emulate)): an [`Executed`] and the bus
/// accesses made, for tests and tools (an abort handler calls `execute`,
/// which keeps no record).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Emulated {
    accesses: [BusAccess; 2],
    count: usize,
    /// `false` when an A32 condition check failed and the instruction was
    /// treated as a no-op (no bus access, no register write). Always `true`
    /// for A64.
    pub executed: bool,
    /// New value of the base register if it was written back.
    pub writeback: Option<u64>,
    /// Bytes to add to the faulting PC to resume after the instruction (4).
    pub pc_advance: u64,
}

impl Emulated {
    /// Bus accesses performed, in order (none when skipped, two for pairs).
    pub fn accesses(&self) -> &[BusAccess] {
        &self.accesses[..self.count]
    }

    /// Address of the first (lowest) access, if any.
    pub fn addr(&self) -> Option<u64> {
        self.accesses().first().map(|a| a.addr)
    }
}

/// A bus that records the accesses made through it: `emulate` is `execute`
/// through one of these.
pub(crate) struct Recorder<'a, B: ?Sized> {
    bus: &'a mut B,
    accesses: [BusAccess; 2],
    count: usize,
}

impl<'a, B: Bus + ?Sized> Recorder<'a, B> {
    pub(crate) fn new(bus: &'a mut B) -> Self {
        Self { bus, accesses: [EMPTY; 2], count: 0 }
    }

    fn note(&mut self, addr: u64, size: Size, kind: Kind, value: u128) {
        if let Some(slot) = self.accesses.get_mut(self.count) {
            *slot = BusAccess { addr, size, kind, value: value & size.mask() };
            self.count += 1;
        }
    }

    /// The record of `executed`.
    pub(crate) fn emulated(self, executed: Executed) -> Emulated {
        let Executed { executed, writeback, pc_advance } = executed;
        Emulated { accesses: self.accesses, count: self.count, executed, writeback, pc_advance }
    }
}

impl<B: Bus + ?Sized> Bus for Recorder<'_, B> {
    fn read(&mut self, addr: u64, size: Size) -> Result<u128, BusError> {
        let value = self.bus.read(addr, size)?;
        self.note(addr, size, Kind::Load, value);
        Ok(value)
    }

    fn write(&mut self, addr: u64, size: Size, value: u128) -> Result<(), BusError> {
        self.bus.write(addr, size, value)?;
        self.note(addr, size, Kind::Store, value);
        Ok(())
    }

    fn read_pair(&mut self, addrs: [u64; 2], size: Size) -> Result<[u128; 2], (u64, BusError)> {
        let values = self.bus.read_pair(addrs, size)?;
        self.note(addrs[0], size, Kind::Load, values[0]);
        self.note(addrs[1], size, Kind::Load, values[1]);
        Ok(values)
    }

    fn write_pair(&mut self, addrs: [u64; 2], size: Size, values: [u128; 2]) -> Result<(), (u64, BusError)> {
        self.bus.write_pair(addrs, size, values)?;
        self.note(addrs[0], size, Kind::Store, values[0]);
        self.note(addrs[1], size, Kind::Store, values[1]);
        Ok(())
    }
}

/// Performs the bus accesses of one instruction: one at `addrs[0]`, or a
/// pair at `addrs[0]` and `addrs[1]` through the bus's pair methods.
///
/// For loads, returns the values read (masked to `size`); for stores, writes
/// `values`. A pair that fails does not say whether its first access was made.
#[inline]
pub(crate) fn run_accesses(
    bus: &mut impl Bus,
    kind: Kind,
    size: Size,
    addrs: &[u64],
    values: &mut [u128; 2],
) -> Result<(), EmulateError> {
    let fail = |(addr, error)| EmulateError::Bus { addr, size, kind, error };
    match (kind, addrs) {
        (Kind::Load, [a]) => values[0] = bus.read(*a, size).map_err(|e| fail((*a, e)))? & size.mask(),
        (Kind::Store, [a]) => {
            values[0] &= size.mask();
            bus.write(*a, size, values[0]).map_err(|e| fail((*a, e)))?;
        }
        (Kind::Load, [a, b, ..]) => *values = bus.read_pair([*a, *b], size).map_err(fail)?.map(|v| v & size.mask()),
        (Kind::Store, [a, b, ..]) => {
            *values = values.map(|v| v & size.mask());
            bus.write_pair([*a, *b], size, *values).map_err(fail)?;
        }
        (_, []) => {}
    }
    Ok(())
}
