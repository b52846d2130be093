//! The 48-bit sender id ("Thread & Node ID", seed §2.2.3 and Table 4) that the packetizer puts
//! in front of every packet, and the protection domain it names (`docs/hw/gsas-packets.md` "PID").
//!
//! ```text
//!  47          32 31          16 15            6 5         0
//! +--------------+--------------+---------------+-----------+
//! | node (16)    | domain (16)  | generation(10)| interface |
//! +--------------+--------------+---------------+-----------+
//! ```
//!
//! Choice (the seed gives only the width): `interface` is the index of the packetizer interface
//! the PID is programmed into, which is also the index of the sender's mailbox interface, where
//! replies go; `generation` counts reassignments of that interface so a PID is never reused
//! while an old holder's packets may still be in flight (it wraps after 1024 reassignments).
//! Every 48-bit value is a well-formed PID.

/// PID width (seed Table 4: PIDT entries are valid `[47:0]`).
pub const PID_BITS: u32 = 48;
pub const PID_MASK: u64 = (1 << PID_BITS) - 1;
/// Interfaces per packetizer and per vmbox: a hardware fact, defined with the blocks.
pub use hal::INTERFACES;
pub const GENERATIONS: u16 = 1 << 10;
/// The domain of a node's kernel (and its atomic service).
pub const KERNEL_DOMAIN: u16 = 0;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PidError {
    /// More than 48 bits.
    TooWide(u64),
    /// Generation does not fit 10 bits.
    Generation(u16),
    /// Interface index is not below 64.
    Interface(u8),
}

/// A protection domain of the whole system: a process (seed §2.2.4 "threads that are spawned by
/// different processes") on one node. Domain numbers are node-local, so the node is part of it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DomainId {
    pub node: u16,
    pub domain: u16,
}

impl DomainId {
    #[inline]
    pub const fn new(node: u16, domain: u16) -> Self {
        Self { node, domain }
    }

    #[inline]
    pub const fn is_kernel(self) -> bool {
        self.domain == KERNEL_DOMAIN
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pid(u64);

impl Pid {
    #[inline]
    pub const fn new(node: u16, domain: u16, generation: u16, interface: u8) -> Result<Self, PidError> {
        if generation >= GENERATIONS {
            return Err(PidError::Generation(generation));
        }
        if interface as usize >= INTERFACES {
            return Err(PidError::Interface(interface));
        }
        Ok(Self(((node as u64) << 32) | ((domain as u64) << 16) | ((generation as u64) << 6) | interface as u64))
    }

    #[inline]
    pub const fn from_raw(raw: u64) -> Result<Self, PidError> {
        if raw > PID_MASK {
            return Err(PidError::TooWide(raw));
        }
        Ok(Self(raw))
    }

    /// The PID in the low 48 bits of `raw`; the rest is ignored (what the hardware prefix is).
    #[inline]
    pub const fn from_low_bits(raw: u64) -> Self {
        Self(raw & PID_MASK)
    }

    /// The PID of a node's atomic service: kernel domain, interface 0 (seed §2.2.3).
    #[inline]
    pub const fn atomic_service(node: u16) -> Self {
        Self((node as u64) << 32)
    }

    #[inline]
    pub const fn raw(self) -> u64 {
        self.0
    }

    #[inline]
    pub const fn node(self) -> u16 {
        (self.0 >> 32) as u16
    }

    #[inline]
    pub const fn domain(self) -> u16 {
        (self.0 >> 16) as u16
    }

    #[inline]
    pub const fn generation(self) -> u16 {
        ((self.0 >> 6) & (GENERATIONS as u64 - 1)) as u16
    }

    /// The packetizer interface this PID is programmed into and the mailbox interface replies go to.
    #[inline]
    pub const fn interface(self) -> u8 {
        (self.0 & (INTERFACES as u64 - 1)) as u8
    }

    #[inline]
    pub const fn owner(self) -> DomainId {
        DomainId { node: self.node(), domain: self.domain() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip() {
        let pid = Pid::new(0xbeef, 0x1234, 0x3ff, 63).unwrap();
        assert_eq!(pid.raw(), 0xbeef_1234_ffff);
        assert_eq!((pid.node(), pid.domain(), pid.generation(), pid.interface()), (0xbeef, 0x1234, 0x3ff, 63));
        assert_eq!(pid.owner(), DomainId::new(0xbeef, 0x1234));
        assert_eq!(Pid::from_raw(pid.raw()), Ok(pid));
        assert_eq!(Pid::from_low_bits(0xffff_0000_0000_0001).raw(), 1);
    }

    #[test]
    fn rejects_out_of_range() {
        assert_eq!(Pid::new(0, 0, 1024, 0), Err(PidError::Generation(1024)));
        assert_eq!(Pid::new(0, 0, 0, 64), Err(PidError::Interface(64)));
        assert_eq!(Pid::from_raw(1 << 48), Err(PidError::TooWide(1 << 48)));
    }

    #[test]
    fn atomic_service_pid() {
        let pid = Pid::atomic_service(5);
        assert_eq!((pid.node(), pid.domain(), pid.generation(), pid.interface()), (5, KERNEL_DOMAIN, 0, 0));
    }
}
