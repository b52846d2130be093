//! The atomic service's local memory (`gsas::service::LocalMemory`): the node's frames, reached
//! in a linear map at a fixed offset from their physical addresses. Host-tested over heap memory
//! placed at a made-up physical address; `gsas_node` gives it the kernel's linear map.

use crate::gsas::service::{LocalMemory, MemoryFault, Width};
use crate::gsas::softmmu::Frame;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use proto::gsas::{PAGE_SIZE, VaOp, VaWidth};

/// Frames at `pa + offset`.
pub struct LinearMemory {
    offset: u64,
}

impl LinearMemory {
    /// # Safety
    ///
    /// Every frame the service maps is readable and writable at `pa + offset`, for as long as
    /// the memory lives, and nothing else writes it but atomically (the service passes addresses
    /// inside its frames, aligned to the access's width).
    pub const unsafe fn new(offset: u64) -> Self {
        Self { offset }
    }

    fn at<T>(&self, pa: u64) -> *mut T {
        pa.wrapping_add(self.offset) as usize as *mut T
    }
}

impl LocalMemory for LinearMemory {
    fn load(&mut self, pa: u64, width: Width) -> Result<u64, MemoryFault> {
        // SAFETY: inside a frame the service mapped, aligned to the width (`new`'s contract).
        Ok(unsafe {
            match width {
                Width::U8 => u64::from(self.at::<u8>(pa).read_volatile()),
                Width::U32 => u64::from(self.at::<u32>(pa).read_volatile()),
                Width::U64 => self.at::<u64>(pa).read_volatile(),
            }
        })
    }

    fn store(&mut self, pa: u64, width: Width, value: u64) -> Result<(), MemoryFault> {
        // SAFETY: as in `load`.
        unsafe {
            match width {
                Width::U8 => self.at::<u8>(pa).write_volatile(value as u8),
                Width::U32 => self.at::<u32>(pa).write_volatile(value as u32),
                Width::U64 => self.at::<u64>(pa).write_volatile(value),
            }
        }
        Ok(())
    }

    fn store128(&mut self, pa: u64, value: u128) -> Result<(), MemoryFault> {
        // SAFETY: as in `load` (8-byte aligned, inside one page); little-endian, low half first.
        unsafe {
            self.at::<u64>(pa).write_volatile(value as u64);
            self.at::<u64>(pa + 8).write_volatile((value >> 64) as u64);
        }
        Ok(())
    }

    fn compare_exchange64(&mut self, pa: u64, expected: u64, new: u64) -> Result<bool, MemoryFault> {
        // SAFETY: as in `load`; the atomic view keeps even a (forbidden) local access untorn.
        let atomic = unsafe { AtomicU64::from_ptr(self.at(pa)) };
        Ok(atomic.compare_exchange(expected, new, Ordering::AcqRel, Ordering::Acquire).is_ok())
    }

    fn fetch_add64(&mut self, pa: u64, addend: u64) -> Result<u64, MemoryFault> {
        // SAFETY: as in `compare_exchange64`.
        Ok(unsafe { AtomicU64::from_ptr(self.at(pa)) }.fetch_add(addend, Ordering::AcqRel))
    }

    fn swap64(&mut self, pa: u64, new: u64) -> Result<u64, MemoryFault> {
        // SAFETY: as in `compare_exchange64`.
        Ok(unsafe { AtomicU64::from_ptr(self.at(pa)) }.swap(new, Ordering::AcqRel))
    }

    fn read_frame(&mut self, frame: Frame, out: &mut [u8; PAGE_SIZE as usize]) -> Result<(), MemoryFault> {
        // SAFETY: a whole frame the service mapped.
        unsafe { core::ptr::copy_nonoverlapping(self.at::<u8>(frame.addr()), out.as_mut_ptr(), out.len()) };
        Ok(())
    }

    fn zero_frame(&mut self, frame: Frame) -> Result<(), MemoryFault> {
        // SAFETY: a whole frame the service mapped.
        unsafe { self.at::<u8>(frame.addr()).write_bytes(0, PAGE_SIZE as usize) };
        Ok(())
    }

    fn va_atomic(&mut self, pa: u64, op: VaOp, width: VaWidth, arg1: u64, arg2: u64) -> Result<u64, MemoryFault> {
        if !pa.is_multiple_of(width.bytes()) {
            return Err(MemoryFault);
        }
        Ok(match width {
            // SAFETY: a word of a process's frame, aligned (checked), in the linear map (`new`'s
            // contract); the process reaches it only through its own (atomic or plain) accesses,
            // and the frame stays the process's while the service holds the table.
            VaWidth::W64 => op.on_u64(unsafe { AtomicU64::from_ptr(self.at(pa)) }, arg1, arg2),
            // SAFETY: as for 64 bits; the service checked that both arguments fit 32 bits.
            VaWidth::W32 => u64::from(op.on_u32(unsafe { AtomicU32::from_ptr(self.at(pa)) }, arg1 as u32, arg2 as u32)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::boxed::Box;

    /// Two frames of heap memory, seen at physical address `PA`.
    const PA: u64 = 0x4000_0000;

    fn frames() -> (Box<[u64; 1024]>, LinearMemory) {
        let mut ram = Box::new([0u64; 1024]);
        let offset = (ram.as_mut_ptr() as u64).wrapping_sub(PA);
        // SAFETY: the test only passes addresses inside `ram`, which outlives the memory's use.
        (ram, unsafe { LinearMemory::new(offset) })
    }

    #[test]
    fn accesses_reach_the_frame_at_their_physical_address_in_their_width() {
        let (ram, mut m) = frames();
        m.store(PA + 8, Width::U64, 0x1122_3344_5566_7788).unwrap();
        m.store(PA + 8, Width::U8, 0xff_aa).unwrap();
        assert_eq!(ram[1], 0x1122_3344_5566_77aa, "a byte store writes one byte");
        m.store(PA + 12, Width::U32, 0xdead_beef_0bad_f00d).unwrap();
        assert_eq!(m.load(PA + 8, Width::U64), Ok(0x0bad_f00d_5566_77aa));
        assert_eq!((m.load(PA + 12, Width::U32), m.load(PA + 15, Width::U8)), (Ok(0x0bad_f00d), Ok(0x0b)));
        m.store128(PA + 4096, 0x0102_0304_0506_0708_1112_1314_1516_1718).unwrap();
        assert_eq!((ram[512], ram[513]), (0x1112_1314_1516_1718, 0x0102_0304_0506_0708), "low half first");
    }

    #[test]
    fn atomics_return_what_was_there() {
        let (ram, mut m) = frames();
        assert_eq!(m.compare_exchange64(PA, 1, 5), Ok(false));
        assert_eq!(m.compare_exchange64(PA, 0, 5), Ok(true));
        assert_eq!(m.fetch_add64(PA, u64::MAX), Ok(5), "wrapping: adds -1");
        assert_eq!(m.swap64(PA, 9), Ok(4));
        assert_eq!(ram[0], 9);
    }

    #[test]
    fn process_atomics_do_what_the_protocol_says_at_both_widths() {
        let (ram, mut m) = frames();
        let cases = [(0x8000_0000_ffff_fff0u64, 0x0f0f_0f0f_0f0f_0f0fu64), (3, 3), (3, 4), (0, u32::MAX as u64)];
        for width in [VaWidth::W32, VaWidth::W64] {
            let cut = |v: u64| if width == VaWidth::W32 { v & 0xffff_ffff } else { v };
            for op in VaOp::ALL {
                for (before, arg1) in cases {
                    let (before, arg1, arg2) = (cut(before), cut(arg1), cut(0x1234_5678_9abc_def0));
                    m.store(PA + 16, Width::U64, 0xaaaa_aaaa_aaaa_aaaa).unwrap();
                    m.store(PA + 16, if width == VaWidth::W32 { Width::U32 } else { Width::U64 }, before).unwrap();
                    let old = m.va_atomic(PA + 16, op, width, arg1, arg2);
                    assert_eq!(old, Ok(before), "{op:?} {width:?} returns the old value");
                    let after = op.apply(before, arg1, arg2, width).unwrap_or(before);
                    let expect = if width == VaWidth::W32 { 0xaaaa_aaaa_0000_0000 | after } else { after };
                    assert_eq!(ram[2], expect, "{op:?} {width:?} {before:#x} {arg1:#x}: the word only");
                }
            }
        }
        assert_eq!(m.va_atomic(PA + 4, VaOp::Fetch, VaWidth::W64, 0, 0), Err(MemoryFault), "unaligned");
    }

    #[test]
    fn frames_are_read_and_zeroed_whole() {
        let (mut ram, mut m) = frames();
        ram.iter_mut().enumerate().for_each(|(i, w)| *w = i as u64 + 1);
        let second = Frame::new(PA + 4096).unwrap();
        let mut page = [0u8; PAGE_SIZE as usize];
        m.read_frame(second, &mut page).unwrap();
        assert_eq!(page[..8], 513u64.to_le_bytes());
        assert_eq!(page[4088..], 1024u64.to_le_bytes());
        m.zero_frame(second).unwrap();
        assert!(ram[512..].iter().all(|&w| w == 0));
        assert_eq!((ram[0], ram[511]), (1, 512), "the first frame is untouched");
    }
}
