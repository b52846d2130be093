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

/// The PD of the jobs that run without RDMA: no node ever gives it a holder (no context bank,
/// no queues), so no transfer reaches its members and they can start none. A spawn gets it when
/// its node has no PD of its share free ([`share`]), and a remote spawn of such a job keeps it.
pub const NO_RDMA: Pd = match Pd::new(PDS as u16 - 1) {
    Some(pd) => pd,
    None => panic!("PDS is not zero"),
};

/// The PDs node `node` of `nodes` may start jobs in, as a mask of `1 << p`: every `p` with
/// `p % nodes == node`, except [`NO_RDMA`] and the kernels' `crate::socket::SOCKET_PD`. The
/// shares do not overlap, so two jobs started on different nodes never have the same PD (a job's
/// members elsewhere inherit it).
pub const fn share(node: u16, nodes: u16) -> u16 {
    let mut mask = 0u16;
    let mut p = 0;
    while p < crate::socket::SOCKET_PD.raw() {
        if nodes != 0 && p % nodes == node {
            mask |= 1 << p;
        }
        p += 1;
    }
    mask
}

/// Bits of a domain number that hold the PD.
pub const PD_BITS: u32 = PDS.trailing_zeros();
/// Domain numbers a node can hand out per PD in one boot (serial 0 is the kernel's).
pub const SERIALS_PER_PD: u16 = (1 << (16 - PD_BITS)) - 1;

const _: () = assert!(PDS.is_power_of_two() && PD_BITS == 4);
const _: () = assert!(crate::socket::SOCKET_PD.raw() + 1 == NO_RDMA.raw());

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

    #[test]
    fn the_shares_split_every_pd_but_no_rdma_and_the_sockets_between_the_nodes() {
        for nodes in 1..=20u16 {
            let shares: Vec<u16> = (0..nodes).map(|node| share(node, nodes)).collect();
            let all = shares.iter().fold(0, |a, s| {
                assert_eq!(a & s, 0, "{nodes} nodes: shares overlap");
                a | s
            });
            let kernels = NO_RDMA.bit() as u16 | crate::socket::SOCKET_PD.bit() as u16;
            assert_eq!(all, !kernels, "{nodes} nodes: every PD but NO_RDMA and SOCKET_PD is someone's");
        }
        assert_eq!(share(0, 1), 0x3fff);
        assert_eq!(share(1, 4), 0b0010_0010_0010_0010);
        assert_eq!(share(2, 4), 0b0000_0100_0100_0100, "PD 14 is the sockets'");
        assert_eq!(share(3, 4), 0b0000_1000_1000_1000, "PD 15 is NO_RDMA");
        assert_eq!(share(16, 17), 0, "beyond 15 nodes, a node starts every job without RDMA");
    }

    fn proto_kernel_domain() -> u16 {
        crate::gsas::KERNEL_DOMAIN
    }
}
