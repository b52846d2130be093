//! Protection domains and GSAS domains (`docs/hw/pldma.md`, "Protection domains").
//!
//! Every process is a member of one protection domain (PD) 0..16, the job it belongs to: the
//! processes of one PD on different nodes may move data between each other with the PLDMA, and
//! nobody else may. Its GSAS domain number (`proto::gsas::DomainId`, per node, never reused
//! within a boot) carries the PD in its low four bits, so that any node can tell a sender's PD
//! from the PID the packetizer stamps on its packets: a remote spawn learns the parent's PD from
//! the request's trusted prefix, not from anything the parent wrote.
//!
//! ```text
//!  15                 4 3      0
//! +--------------------+--------+
//! | serial (1..=4095)  |   PD   |     domain 0 (serial 0) is the kernel's
//! +--------------------+--------+
//! ```

use hal::pldma::{PDS, Pd};

/// Bits of a domain number that hold the PD.
pub const PD_BITS: u32 = PDS.trailing_zeros();
/// Domain numbers a node can hand out per PD in one boot (serial 0 is the kernel's).
pub const SERIALS_PER_PD: u16 = (1 << (16 - PD_BITS)) - 1;

const _: () = assert!(PDS.is_power_of_two() && PD_BITS == 4);

/// The PD a process with domain number `domain` belongs to.
pub const fn pd_of_domain(domain: u16) -> Pd {
    match Pd::new(domain & (PDS as u16 - 1)) {
        Some(pd) => pd,
        None => Pd::ZERO,
    }
}

/// The domain number of the `serial`-th process of PD `pd` (serial 1..=[`SERIALS_PER_PD`]).
pub const fn domain_of(pd: Pd, serial: u16) -> Option<u16> {
    if serial == 0 || serial > SERIALS_PER_PD {
        return None;
    }
    Some(serial << PD_BITS | pd.raw())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pd_travels_in_the_low_bits_of_the_domain() {
        for p in 0..PDS as u16 {
            let pd = Pd::new(p).unwrap();
            for serial in [1, 2, 77, SERIALS_PER_PD] {
                let domain = domain_of(pd, serial).unwrap();
                assert_eq!(pd_of_domain(domain), pd);
                assert_ne!(domain, proto_kernel_domain());
            }
            assert_eq!(domain_of(pd, 0), None, "serial 0 would be the kernel's domain for PD 0");
            assert_eq!(domain_of(pd, SERIALS_PER_PD + 1), None);
        }
        assert_eq!(domain_of(Pd::new(3).unwrap(), 5), Some(0x53));
        assert_eq!(domain_of(Pd::new(15).unwrap(), SERIALS_PER_PD), Some(u16::MAX));
    }

    fn proto_kernel_domain() -> u16 {
        crate::gsas::KERNEL_DOMAIN
    }
}
