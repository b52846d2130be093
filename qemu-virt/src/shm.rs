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

// SAFETY: the mapping is plain shared memory; concurrent access discipline is the caller's
// (see `view`).
unsafe impl Send for Ddr {}
// SAFETY: see above.
unsafe impl Sync for Ddr {}
