//! The atomicity driver's bookkeeping (seed §2.2.4): which thread holds which packetizer and
//! mailbox interface, and the unique PID each held interface sends with.
//!
//! Choice (the seed allocates the two independently): interfaces are handed out in pairs with
//! the same index `i` (PIF i and MIF i), so the PID's interface field names both the sender's
//! PIF and the mailbox interface its replies go to. Interface 0 is the atomic service's
//! (seed §2.2.3), so 63 pairs are left for threads; the kernel takes one of them at boot for its
//! own requests (`gsas_node::kernel_client`). A thread holds at most one pair; asking again
//! returns the same one (seed §2.2.4). Each reassignment of an index bumps its 10-bit generation,
//! so a new holder never gets the PID of the previous one until 1024 reassignments later.
//!
//! The kernel programs `PIDT[i]` = [`InterfaceTable::pidt_entry`] and PID_CONF =
//! [`InterfaceTable::pid_conf`] after every change. Releasing index `i` (thread exit):
//! clear PID_CONF bit i, write CLR_REQ bit i, unmap both pages, drain MIF i until it reads the
//! empty sentinel; only then call [`InterfaceTable::release`] so the index can be handed out.

use proto::gsas::{GENERATIONS, INTERFACES, KERNEL_DOMAIN, Pid};

/// A thread: its protection domain (process) and its kernel thread id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ThreadKey {
    pub domain: u16,
    pub thread: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grant {
    /// PIF and MIF index, 1..=63.
    pub index: u8,
    pub pid: Pid,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InterfaceError {
    /// All 63 pairs are held.
    Exhausted,
    /// The thread holds no pair.
    NotHeld,
}

#[derive(Clone, Debug)]
pub struct InterfaceTable {
    node: u16,
    holders: [Option<(ThreadKey, Pid)>; INTERFACES],
    generations: [u16; INTERFACES],
}

impl InterfaceTable {
    pub fn new(node: u16) -> Self {
        Self { node, holders: [None; INTERFACES], generations: [0; INTERFACES] }
    }

    pub fn node(&self) -> u16 {
        self.node
    }

    /// The pair `key` holds, acquiring the lowest free one on first use.
    pub fn acquire(&mut self, key: ThreadKey) -> Result<Grant, InterfaceError> {
        if let Some(grant) = self.grant_of(key) {
            return Ok(grant);
        }
        let index = (1..INTERFACES).find(|&i| self.holders[i].is_none()).ok_or(InterfaceError::Exhausted)?;
        let pid = Pid::new(self.node, key.domain, self.generations[index], index as u8)
            .map_err(|_| InterfaceError::Exhausted)?;
        self.holders[index] = Some((key, pid));
        Ok(Grant { index: index as u8, pid })
    }

    pub fn grant_of(&self, key: ThreadKey) -> Option<Grant> {
        self.holders.iter().enumerate().find_map(|(i, h)| match h {
            Some((k, pid)) if *k == key => Some(Grant { index: i as u8, pid: *pid }),
            _ => None,
        })
    }

    pub fn holder(&self, index: u8) -> Option<ThreadKey> {
        self.holders.get(usize::from(index)).copied().flatten().map(|(k, _)| k)
    }

    /// Frees the thread's pair (after the release procedure in the module comment).
    pub fn release(&mut self, key: ThreadKey) -> Result<Grant, InterfaceError> {
        let grant = self.grant_of(key).ok_or(InterfaceError::NotHeld)?;
        let i = usize::from(grant.index);
        self.holders[i] = None;
        self.generations[i] = (self.generations[i] + 1) % GENERATIONS;
        Ok(grant)
    }

    /// Process exit: frees every pair of `domain`; returns them as a bitmap (bit i = index i).
    pub fn release_domain(&mut self, domain: u16) -> u64 {
        let mut released = 0;
        for i in 1..INTERFACES {
            if let Some((key, _)) = self.holders[i]
                && key.domain == domain
                && self.release(key).is_ok()
            {
                released |= 1 << i;
            }
        }
        released
    }

    pub fn free_count(&self) -> usize {
        (1..INTERFACES).filter(|&i| self.holders[i].is_none()).count()
    }

    /// What PIDT entry `index` must hold: the holder's PID, the service's for 0, else 0.
    pub fn pidt_entry(&self, index: u8) -> u64 {
        match (index, self.holders.get(usize::from(index))) {
            (0, _) => Pid::atomic_service(self.node).raw(),
            (_, Some(Some((_, pid)))) => pid.raw(),
            _ => 0,
        }
    }

    /// PID_CONF: interface 0 and every held pair.
    pub fn pid_conf(&self) -> u64 {
        (1..INTERFACES).filter(|&i| self.holders[i].is_some()).fold(1, |bits, i| bits | 1 << i)
    }
}

const _: () = assert!(KERNEL_DOMAIN == 0 && INTERFACES == 64);

#[cfg(test)]
mod tests {
    use super::*;

    const fn t(domain: u16, thread: u32) -> ThreadKey {
        ThreadKey { domain, thread }
    }

    #[test]
    fn acquire_is_idempotent_and_unique() {
        let mut table = InterfaceTable::new(3);
        let a = table.acquire(t(1, 10)).unwrap();
        let b = table.acquire(t(2, 10)).unwrap();
        assert_eq!(table.acquire(t(1, 10)), Ok(a));
        assert_eq!((a.index, b.index), (1, 2));
        assert_ne!(a.pid, b.pid);
        assert_eq!((a.pid.node(), a.pid.domain(), a.pid.interface()), (3, 1, 1));
        assert_eq!(table.pid_conf(), 0b111);
        assert_eq!(table.pidt_entry(0), Pid::atomic_service(3).raw());
        assert_eq!(table.pidt_entry(2), b.pid.raw());
        assert_eq!(table.pidt_entry(3), 0);
        assert_eq!(table.pidt_entry(200), 0);
        assert_eq!(table.holder(1), Some(t(1, 10)));
    }

    #[test]
    fn exhaustion_release_and_new_generation() {
        let mut table = InterfaceTable::new(0);
        let grants: std::vec::Vec<_> = (0..63).map(|i| table.acquire(t(1, i)).unwrap()).collect();
        assert_eq!(table.acquire(t(1, 99)), Err(InterfaceError::Exhausted));
        assert_eq!(table.pid_conf(), u64::MAX);
        let old = grants[4];
        assert_eq!(table.release(t(1, 4)), Ok(old));
        assert_eq!(table.release(t(1, 4)), Err(InterfaceError::NotHeld));
        let new = table.acquire(t(2, 99)).unwrap();
        assert_eq!(new.index, old.index);
        assert_ne!(new.pid, old.pid, "a reassigned index gets a new PID");
        assert_eq!(new.pid.generation(), 1);
    }

    #[test]
    fn release_domain_frees_only_that_domain() {
        let mut table = InterfaceTable::new(0);
        table.acquire(t(5, 1)).unwrap();
        table.acquire(t(6, 1)).unwrap();
        table.acquire(t(5, 2)).unwrap();
        assert_eq!(table.release_domain(5), 0b1010);
        assert_eq!(table.free_count(), 62);
        assert_eq!(table.holder(2), Some(t(6, 1)));
        assert_eq!(table.release_domain(5), 0);
    }

    #[test]
    fn generation_wraps() {
        let mut table = InterfaceTable::new(0);
        for _ in 0..GENERATIONS {
            table.acquire(t(1, 1)).unwrap();
            table.release(t(1, 1)).unwrap();
        }
        assert_eq!(table.acquire(t(1, 1)).unwrap().pid.generation(), 0);
    }
}
