//! A node's DDR, shared with its QEMU process through a memory-backend file.

use memmap2::MmapRaw;
use std::path::Path;

/// The whole of a node's DDR, mapped into this process. Guest writes are visible at once.
pub struct Ddr {
    map: MmapRaw,
}

impl Ddr {
    pub fn open(path: &Path) -> std::io::Result<Self> {
        let file = std::fs::OpenOptions::new().read(true).write(true).open(path)?;
        Ok(Self { map: MmapRaw::map_raw(&file)? })
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.len() == 0
    }

    /// A typed view of guest physical memory at `pa`.
    ///
    /// # Safety
    ///
    /// `T` must be a type whose every bit pattern is valid and whose fields the guest and host
    /// only access with atomics or volatile accesses (the `hal` shared-memory formats are).
    pub unsafe fn view<T>(&self, pa: u64) -> Option<&T> {
        let end = (pa as usize).checked_add(size_of::<T>())?;
        if end > self.map.len() || !(pa as usize).is_multiple_of(align_of::<T>()) {
            return None;
        }
        // SAFETY: in bounds and aligned (checked); validity per the caller.
        Some(unsafe { &*(self.map.as_ptr().add(pa as usize) as *const T) })
    }
}

impl Ddr {
    /// Reads `size` bytes (1..=16) at byte `offset`, little-endian. Naturally aligned accesses
    /// of 1, 2, 4 and 8 bytes are single accesses, as the guest's would be.
    pub fn read(&self, offset: u64, size: u32) -> Option<u128> {
        let ptr = self.range(offset, size)?;
        // SAFETY: `range` checked bounds; the memory is shared with the guest, so accesses are
        // volatile and their size follows the guest's access.
        unsafe {
            Some(match size {
                1 => u128::from(ptr.read_volatile()),
                2 if offset.is_multiple_of(2) => u128::from((ptr as *const u16).read_volatile()),
                4 if offset.is_multiple_of(4) => u128::from((ptr as *const u32).read_volatile()),
                8 if offset.is_multiple_of(8) => u128::from((ptr as *const u64).read_volatile()),
                _ => (0..size as usize).fold(0u128, |v, i| v | u128::from(ptr.add(i).read_volatile()) << (8 * i)),
            })
        }
    }

    /// Writes the low `size` bytes (1..=16) of `value` at byte `offset`, little-endian.
    pub fn write(&self, offset: u64, size: u32, value: u128) -> Option<()> {
        let ptr = self.range(offset, size)?;
        // SAFETY: as in `read`.
        unsafe {
            match size {
                1 => ptr.write_volatile(value as u8),
                2 if offset.is_multiple_of(2) => (ptr as *mut u16).write_volatile(value as u16),
                4 if offset.is_multiple_of(4) => (ptr as *mut u32).write_volatile(value as u32),
                8 if offset.is_multiple_of(8) => (ptr as *mut u64).write_volatile(value as u64),
                _ => (0..size as usize).for_each(|i| ptr.add(i).write_volatile((value >> (8 * i)) as u8)),
            }
        }
        Some(())
    }

    /// Copies `out.len()` bytes from byte `offset` (a DMA read: volatile, 8 bytes at a time
    /// where aligned).
    pub fn read_bytes(&self, offset: u64, out: &mut [u8]) -> Option<()> {
        let ptr = self.span(offset, out.len())?;
        let mut i = 0;
        while i < out.len() {
            let at = offset as usize + i;
            if at.is_multiple_of(8) && out.len() - i >= 8 {
                // SAFETY: in bounds (`span`), aligned; shared memory is accessed volatilely.
                let w = unsafe { (ptr.add(i) as *const u64).read_volatile() };
                out[i..i + 8].copy_from_slice(&w.to_le_bytes());
                i += 8;
            } else {
                // SAFETY: in bounds (`span`).
                out[i] = unsafe { ptr.add(i).read_volatile() };
                i += 1;
            }
        }
        Some(())
    }

    /// Copies `data` to byte `offset` (a DMA write; as `read_bytes`).
    pub fn write_bytes(&self, offset: u64, data: &[u8]) -> Option<()> {
        let ptr = self.span(offset, data.len())?;
        let mut i = 0;
        while i < data.len() {
            let at = offset as usize + i;
            if at.is_multiple_of(8) && data.len() - i >= 8 {
                let w = u64::from_le_bytes(data[i..i + 8].try_into().expect("eight bytes"));
                // SAFETY: in bounds (`span`), aligned; shared memory is accessed volatilely.
                unsafe { (ptr.add(i) as *mut u64).write_volatile(w) };
                i += 8;
            } else {
                // SAFETY: in bounds (`span`).
                unsafe { ptr.add(i).write_volatile(data[i]) };
                i += 1;
            }
        }
        Some(())
    }

    fn span(&self, offset: u64, len: usize) -> Option<*mut u8> {
        let end = offset.checked_add(len as u64)?;
        (end <= self.map.len() as u64).then(|| {
            // SAFETY: in bounds (checked above).
            unsafe { self.map.as_mut_ptr().add(offset as usize) }
        })
    }

    fn range(&self, offset: u64, size: u32) -> Option<*mut u8> {
        let end = offset.checked_add(u64::from(size))?;
        (size <= 16 && end <= self.map.len() as u64).then(|| {
            // SAFETY: in bounds (checked above).
            unsafe { self.map.as_mut_ptr().add(offset as usize) }
        })
    }
}

// SAFETY: the mapping is plain shared memory; concurrent access discipline is the caller's
// (see `view`).
unsafe impl Send for Ddr {}
// SAFETY: see above.
unsafe impl Sync for Ddr {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sized_accesses_round_trip_and_stay_in_bounds() {
        let file = tempfile::NamedTempFile::new().unwrap();
        file.as_file().set_len(4096).unwrap();
        let ddr = Ddr::open(file.path()).unwrap();
        for (offset, size) in [(0, 1), (2, 2), (4, 4), (8, 8), (16, 16), (33, 8), (63, 2)] {
            let value = 0x0f1e_2d3c_4b5a_6978_8796_a5b4_c3d2_e1f0u128 & (u128::MAX >> (128 - 8 * size));
            ddr.write(offset, size, value).unwrap();
            assert_eq!(ddr.read(offset, size), Some(value), "{size} bytes at {offset}");
        }
        assert_eq!(ddr.read(4095, 2), None);
        assert_eq!(ddr.write(4090, 8, 0), None);
        assert_eq!(ddr.read(0, 32), None);
    }

    #[test]
    fn bulk_copies_at_any_alignment() {
        let file = tempfile::NamedTempFile::new().unwrap();
        file.as_file().set_len(4096).unwrap();
        let ddr = Ddr::open(file.path()).unwrap();
        let data: Vec<u8> = (0..300u32).map(|i| (i * 7) as u8).collect();
        for (offset, len) in [(0u64, 300usize), (3, 17), (13, 256), (4095, 1), (100, 0)] {
            ddr.write_bytes(offset, &data[..len]).unwrap();
            let mut back = vec![0; len];
            ddr.read_bytes(offset, &mut back).unwrap();
            assert_eq!(back, data[..len]);
        }
        assert_eq!(ddr.write_bytes(4000, &data), None, "past the end: nothing written");
        assert_eq!(ddr.read_bytes(u64::MAX, &mut [0; 2]), None);
    }
}
