//! The dispatcher: physical address ranges to device models.

use crate::models::MmioDevice;
use std::sync::{Arc, Mutex};

pub type SharedDevice = Arc<Mutex<dyn MmioDevice>>;

struct Entry {
    base: u64,
    size: u64,
    device: SharedDevice,
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum MapError {
    #[error("{new} at {base:#x} overlaps {existing}")]
    Overlap { new: &'static str, existing: &'static str, base: u64 },
}

#[derive(Default)]
pub struct AddressMap {
    entries: Vec<Entry>,
}

impl AddressMap {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn insert(
        &mut self,
        base: u64,
        size: u64,
        device: impl MmioDevice + 'static,
    ) -> Result<SharedDevice, MapError> {
        let device = Arc::new(Mutex::new(device));
        self.insert_shared(base, size, device.clone())?;
        Ok(device)
    }

    /// Maps a device the caller keeps a typed handle to (for calls beyond `MmioDevice`).
    pub fn insert_shared<D: MmioDevice + 'static>(
        &mut self,
        base: u64,
        size: u64,
        device: Arc<Mutex<D>>,
    ) -> Result<(), MapError> {
        let name = device.lock().unwrap().name();
        if let Some(e) = self.entries.iter().find(|e| base < e.base + e.size && e.base < base + size) {
            return Err(MapError::Overlap { new: name, existing: e.device.lock().unwrap().name(), base });
        }
        self.entries.push(Entry { base, size, device });
        self.entries.sort_by_key(|e| e.base);
        Ok(())
    }

    /// The device serving `[addr, addr + size)` entirely, and the offset into it.
    pub fn lookup(&self, addr: u64, size: u32) -> Option<(&SharedDevice, u64)> {
        let end = addr.checked_add(u64::from(size))?;
        let i = self.entries.partition_point(|e| e.base <= addr).checked_sub(1)?;
        let e = &self.entries[i];
        (end <= e.base + e.size).then(|| (&e.device, addr - e.base))
    }

    /// The PL interrupt lines the devices drive high.
    pub fn irq_levels(&self) -> u16 {
        self.entries.iter().fold(0, |acc, e| acc | e.device.lock().unwrap().irq_lines())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::forward::Status;

    struct Ram(Vec<u8>, &'static str, u16);
    impl MmioDevice for Ram {
        fn name(&self) -> &'static str {
            self.1
        }
        fn read(&mut self, offset: u64, _size: u32) -> Result<u128, Status> {
            Ok(u128::from(self.0[offset as usize]))
        }
        fn write(&mut self, offset: u64, _size: u32, value: u128) -> Result<(), Status> {
            self.0[offset as usize] = value as u8;
            Ok(())
        }
        fn irq_lines(&self) -> u16 {
            self.2
        }
    }

    #[test]
    fn dispatches_by_range_with_offsets() {
        let mut map = AddressMap::new();
        map.insert(0x8000_0000, 0x1000, Ram(vec![0; 0x1000], "a", 0)).unwrap();
        map.insert(0x8010_0000, 0x100, Ram(vec![0; 0x100], "b", 0b100)).unwrap();
        let (dev, off) = map.lookup(0x8010_0010, 4).unwrap();
        assert_eq!((dev.lock().unwrap().name(), off), ("b", 0x10));
        assert_eq!(map.lookup(0x8000_0fff, 1).unwrap().1, 0xfff);
        assert!(map.lookup(0x8000_0ffe, 4).is_none(), "an access may not straddle the end");
        assert!(map.lookup(0x8000_1000, 4).is_none(), "unmodelled address");
        assert!(map.lookup(0x7fff_ffff, 1).is_none());
        assert!(map.lookup(u64::MAX, 4).is_none());
        assert_eq!(map.irq_levels(), 0b100);
    }

    #[test]
    fn refuses_overlaps() {
        let mut map = AddressMap::new();
        map.insert(0x1000, 0x1000, Ram(vec![], "a", 0)).unwrap();
        let err = map.insert(0x1800, 0x1000, Ram(vec![], "b", 0)).err();
        assert_eq!(err, Some(MapError::Overlap { new: "b", existing: "a", base: 0x1800 }));
        assert!(map.insert(0x2000, 0x10, Ram(vec![], "c", 0)).is_ok());
    }
}
