//! The process's own packetizer interface (PIF) and mailbox interface (MIF) pages, at the
//! addresses the INTERFACE call names (`docs/hw/packetizer.md`, `docs/hw/vmbox.md`).
//!
//! The 128-bit registers (PIF payloads, MIF DATA) are accessed with one 128-bit access each
//! (`hal::mmio`): two 64-bit halves would be two register writes, or two dequeues.

use hal::mmio::{Mmio, read_u128, read_u128_pair, write_u128_pair};
use hal::packetizer::driver::SendStatus;
use hal::packetizer::regs::{PifRegisters, STATUS as PIF_STATUS};
use hal::vmbox::EMPTY_SENTINEL;
use hal::vmbox::regs::{DEPTH as MIF_DEPTH, MifRegisters, STATUS as MIF_STATUS};
use tock_registers::LocalRegisterCopy;
use tock_registers::interfaces::{Readable, Writeable};

use crate::error::{Error, ProtocolError};
use crate::link::{Link, Sent};
use crate::sys;

/// Status polls before the PEND wait starts yielding the core.
const PEND_SPINS: u32 = 16;
/// PEND stays set for one interconnect round trip; far longer means the packetizer is stuck.
const PEND_TIMEOUT_US: u64 = 1_000_000;

pub struct Hw {
    pif: Mmio<PifRegisters>,
    mif: Mmio<MifRegisters>,
    /// PEND was seen clear after the last packet, so the next one needs no status read first.
    idle: bool,
}

impl Hw {
    /// Maps nothing: uses the pages the kernel mapped for this process.
    ///
    /// # Safety
    ///
    /// `interface` must be this process's INTERFACE answer, and no other `Hw` may be in use:
    /// the two pages are then device registers only this value touches.
    pub(crate) unsafe fn new(interface: sys::Interface) -> Result<Self, Error> {
        let page = |va: u64| va != 0 && va.is_multiple_of(0x1000);
        if !page(interface.pif) || !page(interface.mif) {
            return Err(ProtocolError::BadInterface.into());
        }
        // SAFETY: per this function's contract the kernel mapped both pages for this process
        // alone, and this is their only user.
        let (pif, mif) = unsafe { (Mmio::new(interface.pif as usize), Mmio::new(interface.mif as usize)) };
        Ok(Self { pif, mif, idle: false })
    }

    /// Polls `status` until PEND is clear; returns the status.
    fn wait_not_pending(&mut self) -> Result<LocalRegisterCopy<u32, PIF_STATUS::Register>, Error> {
        let mut deadline = None;
        let mut spins = 0;
        loop {
            let status = LocalRegisterCopy::new(self.pif.status.get());
            if !status.is_set(PIF_STATUS::PEND) {
                self.idle = true;
                return Ok(status);
            }
            if spins < PEND_SPINS {
                spins += 1;
                continue;
            }
            let now = sys::time_us()?;
            if now >= *deadline.get_or_insert(now.saturating_add(PEND_TIMEOUT_US)) {
                return Err(Error::Timeout);
            }
            sys::yield_now();
        }
    }
}

impl Link for Hw {
    fn send(&mut self, payload: [u128; 2], destination: u64) -> Result<Sent, Error> {
        if !self.idle {
            self.wait_not_pending()?;
        }
        let payloads = core::ptr::from_ref(&self.pif.payload0).cast::<u128>().cast_mut();
        // SAFETY: payload0 and payload1 are adjacent 16-byte aligned registers of our PIF page
        // (offsets 0x00 and 0x10 of a page-aligned block), written with one pair store.
        unsafe { write_u128_pair(payloads, payload) };
        self.idle = false;
        // The third write starts the packet (`docs/hw/packetizer.md`, "Sending a packet").
        self.pif.destination.set(destination);
        Ok(match SendStatus::settled(self.wait_not_pending()?) {
            SendStatus::Ack => Sent::Ack,
            SendStatus::Nack => Sent::Nack,
            SendStatus::Illegal => Sent::Illegal,
            SendStatus::Overwritten | SendStatus::Stuck => Sent::Overwritten,
            SendStatus::Unreachable => Sent::Unreachable,
        })
    }

    fn count(&mut self) -> u32 {
        self.mif.status.read(MIF_STATUS::COUNT)
    }

    fn depth(&mut self) -> u32 {
        self.mif.depth.read(MIF_DEPTH::WORDS)
    }

    fn dequeue(&mut self) -> u128 {
        let data = core::ptr::from_ref(&self.mif.data).cast::<u128>();
        // SAFETY: DATA is the 16-byte aligned register at offset 0 of our MIF page.
        unsafe { read_u128(data) }
    }

    fn read_packet(&mut self) -> Option<[u128; 2]> {
        let packet = core::ptr::from_ref(&self.mif.packet).cast::<u128>();
        // SAFETY: PACKET is the pair of 16-byte aligned registers at offset 0x40 of our MIF
        // page, read with one pair access as the contract asks.
        let words = unsafe { read_u128_pair(packet) };
        (words[0] != EMPTY_SENTINEL).then_some(words)
    }

    fn wait(&mut self, words: u32, timeout_us: u64, from: u16) -> Result<(), Error> {
        sys::wait_mif(words, timeout_us.max(1), Some(from))
    }

    /// A clock that fails ends every wait at once rather than never.
    fn now_us(&mut self) -> u64 {
        sys::time_us().unwrap_or(u64::MAX)
    }

    fn backoff(&mut self, attempt: u32) {
        if attempt < 4 {
            sys::yield_now();
        } else {
            let _ = sys::sleep_us((10u64 << (attempt - 4).min(7)).min(1000));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::gsas::Pid;
    use std::alloc::{Layout, alloc_zeroed, dealloc};

    /// Two zeroed pages standing in for the PIF and the MIF, touched only through raw pointers.
    struct Pages(*mut u8, *mut u8);

    impl Pages {
        const LAYOUT: Layout = match Layout::from_size_align(4096, 4096) {
            Ok(l) => l,
            Err(_) => panic!(),
        };

        fn new() -> Self {
            // SAFETY: a nonzero size.
            unsafe { Self(alloc_zeroed(Self::LAYOUT), alloc_zeroed(Self::LAYOUT)) }
        }

        fn set(page: *mut u8, at: usize, bytes: &[u8]) {
            // SAFETY: `at + bytes.len()` stays inside the 4 KiB page.
            unsafe { core::ptr::copy_nonoverlapping(bytes.as_ptr(), page.add(at), bytes.len()) }
        }

        fn get<const N: usize>(page: *mut u8, at: usize) -> [u8; N] {
            let mut out = [0; N];
            // SAFETY: `at + N` stays inside the 4 KiB page.
            unsafe { core::ptr::copy_nonoverlapping(page.add(at), out.as_mut_ptr(), N) }
            out
        }
    }

    impl Drop for Pages {
        fn drop(&mut self) {
            // SAFETY: both came from `alloc_zeroed` with this layout.
            unsafe { (dealloc(self.0, Self::LAYOUT), dealloc(self.1, Self::LAYOUT)) };
        }
    }

    #[test]
    fn registers_at_the_documented_offsets() {
        let p = Pages::new();
        let interface = sys::Interface { pif: p.0 as u64, mif: p.1 as u64, pid: Pid::default() };
        // SAFETY: two pages only this test touches, and only through `hw` while it is used.
        let mut hw = unsafe { Hw::new(interface) }.unwrap();
        Pages::set(p.0, 0x30, &(1u32 << 3).to_le_bytes()); // ACK
        let payload = [0x1111_2222 << 64 | 0xaa << 56, 0x3333 << 64 | 0x4444];
        assert_eq!(hw.send(payload, 0x4_2008_1000), Ok(Sent::Ack));
        assert_eq!(u128::from_le_bytes(Pages::get(p.0, 0x00)), payload[0]);
        assert_eq!(u128::from_le_bytes(Pages::get(p.0, 0x10)), payload[1]);
        assert_eq!(u64::from_le_bytes(Pages::get(p.0, 0x20)), 0x4_2008_1000);
        for (status, sent) in [(1u32 << 2, Sent::Nack), (1 << 1, Sent::Illegal), (1 << 4 | 1 << 3, Sent::Overwritten)] {
            Pages::set(p.0, 0x30, &status.to_le_bytes());
            assert_eq!(hw.send(payload, 0), Ok(sent));
        }
        Pages::set(p.1, 0x10, &(2u32 | 1 << 17).to_le_bytes()); // COUNT 2, FULL
        Pages::set(p.1, 0x00, &7u128.to_le_bytes());
        Pages::set(p.1, 0x14, &512u32.to_le_bytes());
        assert_eq!((hw.count(), hw.dequeue(), hw.depth()), (2, 7, 512));
        Pages::set(p.1, 0x40, &9u128.to_le_bytes());
        Pages::set(p.1, 0x50, &10u128.to_le_bytes());
        assert_eq!(hw.read_packet(), Some([9, 10]), "PACKET, both halves");
        Pages::set(p.1, 0x40, &EMPTY_SENTINEL.to_le_bytes());
        assert_eq!(hw.read_packet(), None, "the sentinel in the first half: nothing queued");
        let odd = sys::Interface { pif: p.0 as u64 + 8, mif: p.1 as u64, pid: Pid::default() };
        // SAFETY: refused before any access.
        assert!(matches!(unsafe { Hw::new(odd) }, Err(Error::Protocol(ProtocolError::BadInterface))));
    }
}
