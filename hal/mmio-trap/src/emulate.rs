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
}

impl<B: Bus + ?Sized> Bus for &mut B {
    fn read(&mut self, addr: u64, size: Size) -> Result<u128, BusError> {
        (**self).read(addr, size)
    }

    fn write(&mut self, addr: u64, size: Size, value: u128) -> Result<(), BusError> {
        (**self).write(addr, size, value)
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

/// Outcome of a successful emulation.
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
    pub(crate) const fn skipped() -> Emulated {
        Emulated { accesses: [EMPTY; 2], count: 0, executed: false, writeback: None, pc_advance: 4 }
    }

    /// Bus accesses performed, in order (none when skipped, two for pairs).
    pub fn accesses(&self) -> &[BusAccess] {
        &self.accesses[..self.count]
    }

    /// Address of the first (lowest) access, if any.
    pub fn addr(&self) -> Option<u64> {
        self.accesses().first().map(|a| a.addr)
    }
}

/// Performs up to two bus accesses of the same kind and size.
///
/// For loads, returns the values read (masked to `size`); for stores, writes
/// `values`. Stops at the first failure.
#[inline]
pub(crate) fn run_accesses(
    bus: &mut impl Bus,
    kind: Kind,
    size: Size,
    addrs: &[u64],
    values: &mut [u128; 2],
) -> Result<Done, EmulateError> {
    let mut done = Done { accesses: [EMPTY; 2], count: 0 };
    let slots = addrs.iter().zip(values.iter_mut()).zip(done.accesses.iter_mut());
    for ((&addr, value), slot) in slots {
        let fail = |error| EmulateError::Bus { addr, size, kind, error };
        *value = match kind {
            Kind::Load => bus.read(addr, size).map_err(fail)? & size.mask(),
            Kind::Store => {
                let v = *value & size.mask();
                bus.write(addr, size, v).map_err(fail)?;
                v
            }
        };
        *slot = BusAccess { addr, size, kind, value: *value };
        done.count += 1;
    }
    Ok(done)
}

/// Bus accesses completed by [`run_accesses`].
pub(crate) struct Done {
    accesses: [BusAccess; 2],
    count: usize,
}

#[inline]
pub(crate) fn emulated(done: Done, writeback: Option<u64>) -> Emulated {
    Emulated { accesses: done.accesses, count: done.count, executed: true, writeback, pc_advance: 4 }
}
