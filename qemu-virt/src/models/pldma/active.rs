//! Active Access in the engine (`docs/hw/active-access.md`): the `active` page (the access-log
//! table) and the `apt` page (the active page table), with `hal::pldma::active`'s layouts, and
//! what the receive and read-serve paths ask of them: which page is marked, whether its log has
//! room, appending an entry, whether a flush is served. State: 256 APT entries, 17 logs and
//! their flush slots, as the PL would keep.

use crate::models::{ModelError, check_size};
use crate::shm::Ddr;
use core::mem::offset_of;
use hal::pldma::Pd;
use hal::pldma::active::{
    APT_ENTRIES, APT_TAG, APT_WAYS, ActiveRegisters, AptEntry, Attr, FlushSlot, Flusher, GRANULE, KERNEL_LOG, LOG_CTRL,
    LOGS, LogCtrl, LogEntry, LogRegisters, apt_set, header, place,
};
use tock_registers::LocalRegisterCopy;

const LOG_STRIDE: u64 = size_of::<LogRegisters>() as u64;
const LOGS_END: u64 = offset_of!(ActiveRegisters, logs) as u64 + LOG_STRIDE * LOGS as u64;
const APT_REFUSED: u64 = offset_of!(ActiveRegisters, apt_refused) as u64;
const APPENDED: u64 = offset_of!(ActiveRegisters, appended) as u64;
const L_CTRL: u64 = offset_of!(LogRegisters, ctrl) as u64;
const L_PRODUCED: u64 = offset_of!(LogRegisters, produced) as u64;
const L_BASE: u64 = offset_of!(LogRegisters, base) as u64;
const L_HEADER: u64 = offset_of!(LogRegisters, header) as u64;
const L_ENTRIES: u64 = offset_of!(LogRegisters, entries) as u64;
const L_FULL: u64 = offset_of!(LogRegisters, full) as u64;
const E_STRIDE: u64 = size_of::<AptEntry>() as u64;
const E_TAG: u64 = offset_of!(AptEntry, tag) as u64;
const E_ATTR: u64 = offset_of!(AptEntry, attr) as u64;
const E_RESERVED: u64 = offset_of!(AptEntry, reserved) as u64;

/// One log of the table.
#[derive(Clone, Copy, Debug, Default)]
struct Log {
    ctrl: u32,
    base: u64,
    header: u64,
    produced: u32,
    entries: u32,
    full: u32,
    /// The flush waiting for its point, and the holder a takeover released.
    flush: FlushSlot,
}

impl Log {
    fn ctrl(&self) -> LogCtrl {
        LogCtrl::decode(self.ctrl)
    }
}

/// The two pages' state.
#[derive(Debug)]
pub struct Active {
    apt: [(u64, u32); APT_ENTRIES],
    logs: [Log; LOGS],
    refused: u32,
    /// Bit `i`: log `i` took an entry while NOTIFY was set (the `ACTIVE_LOG` cause).
    appended: u32,
}

impl Default for Active {
    fn default() -> Self {
        Self { apt: [(0, 0); APT_ENTRIES], logs: [Log::default(); LOGS], refused: 0, appended: 0 }
    }
}

/// A log the kernel just made valid: the engine zeroes the header's `produced` and `full` (at
/// this PA).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogEnabled {
    pub header: u64,
}

impl Active {
    /// The `ACTIVE_LOG` interrupt cause: a NOTIFY log took an entry since the kernel last
    /// cleared its bit.
    pub fn irq(&self) -> bool {
        self.appended != 0
    }

    pub fn read_active(&self, offset: u64, off: u64, size: usize) -> Result<u128, ModelError> {
        if off == APT_REFUSED || off == APPENDED {
            check_size(offset, size, &[4])?;
            return Ok(u128::from(if off == APT_REFUSED { self.refused } else { self.appended }));
        }
        if off >= LOGS_END {
            return Err(ModelError::Unmapped { offset });
        }
        let log = &self.logs[(off / LOG_STRIDE) as usize];
        let value = match off % LOG_STRIDE {
            // VALID reads 0 while SIZE_LOG2 is one the engine refuses.
            L_CTRL => u64::from(if log.ctrl().valid { log.ctrl } else { log.ctrl & !1 }),
            L_PRODUCED => u64::from(log.produced),
            L_BASE => log.base,
            L_HEADER => log.header,
            L_ENTRIES => u64::from(log.entries),
            L_FULL => u64::from(log.full),
            _ => return Err(ModelError::Unmapped { offset }),
        };
        let width = if matches!(off % LOG_STRIDE, L_BASE | L_HEADER) { 8 } else { 4 };
        check_size(offset, size, &[width])?;
        Ok(u128::from(value))
    }

    pub fn write_active(
        &mut self,
        offset: u64,
        off: u64,
        size: usize,
        value: u128,
    ) -> Result<Option<LogEnabled>, ModelError> {
        if off == APT_REFUSED {
            return Err(ModelError::ReadOnly { offset });
        }
        if off == APPENDED {
            check_size(offset, size, &[4])?;
            self.appended &= !(value as u32);
            return Ok(None);
        }
        if off >= LOGS_END {
            return Err(ModelError::Unmapped { offset });
        }
        let log = &mut self.logs[(off / LOG_STRIDE) as usize];
        let valid = log.ctrl().valid;
        match off % LOG_STRIDE {
            L_CTRL => {
                check_size(offset, size, &[4])?;
                let value = value as u32;
                let keep = LogCtrl::decode(value).valid && valid;
                // While VALID stays 1 only NOTIFY changes (PD and SIZE_LOG2 are the log's).
                let notify = LOG_CTRL::NOTIFY.mask << LOG_CTRL::NOTIFY.shift;
                log.ctrl = if keep { (log.ctrl & !notify) | (value & notify) } else { value };
                if log.ctrl().valid && !valid {
                    log.produced = 0;
                    log.full = 0;
                    log.flush = FlushSlot::default();
                    return Ok(Some(LogEnabled { header: log.header }));
                }
            }
            L_BASE | L_HEADER => {
                check_size(offset, size, &[8])?;
                if !valid {
                    let v = value as u64;
                    if off % LOG_STRIDE == L_BASE { log.base = v } else { log.header = v }
                }
            }
            L_PRODUCED | L_ENTRIES | L_FULL => return Err(ModelError::ReadOnly { offset }),
            _ => return Err(ModelError::Unmapped { offset }),
        }
        Ok(None)
    }

    pub fn read_apt(&self, offset: u64, off: u64, size: usize) -> Result<u128, ModelError> {
        let (tag, attr) = self.apt[(off / E_STRIDE) as usize];
        match off % E_STRIDE {
            E_TAG => check_size(offset, size, &[8]).map(|_| u128::from(tag)),
            E_ATTR => check_size(offset, size, &[4]).map(|_| u128::from(attr)),
            E_RESERVED => check_size(offset, size, &[4]).map(|_| 0),
            _ => Err(ModelError::Unmapped { offset }),
        }
    }

    pub fn write_apt(&mut self, offset: u64, off: u64, size: usize, value: u128) -> Result<(), ModelError> {
        let entry = &mut self.apt[(off / E_STRIDE) as usize];
        match off % E_STRIDE {
            E_TAG => check_size(offset, size, &[8]).map(|_| entry.0 = value as u64),
            E_ATTR => check_size(offset, size, &[4]).map(|_| entry.1 = value as u32),
            E_RESERVED => Err(ModelError::ReadOnly { offset }),
            _ => Err(ModelError::Unmapped { offset }),
        }
    }

    /// The attributes of `pd`'s page at `va`, and the log its entries go to: the set's ways in
    /// order, the first valid match wins.
    pub fn lookup(&self, pd: Pd, va: u64) -> Option<(Attr, usize)> {
        let set = apt_set(va);
        let page = (va >> 12) & ((1 << 36) - 1);
        let attr = (0..APT_WAYS).find_map(|way| {
            let (tag, attr) = self.apt[set * APT_WAYS + way];
            let t = LocalRegisterCopy::<u64, APT_TAG::Register>::new(tag);
            (t.is_set(APT_TAG::VALID) && t.read(APT_TAG::PD) == u64::from(pd.raw()) && t.read(APT_TAG::PAGE) == page)
                .then(|| Attr::decode(attr))
        })?;
        let own = &self.logs[usize::from(attr.iuid) % KERNEL_LOG];
        let log = if attr.e && own.ctrl().valid && u16::from(own.ctrl().pd) == pd.raw() {
            usize::from(attr.iuid) % KERNEL_LOG
        } else {
            KERNEL_LOG
        };
        Some((attr, log))
    }

    fn consumed(&self, ddr: &Ddr, log: usize) -> Option<u32> {
        ddr.read(self.logs[log].header + header::CONSUMED, 4).map(|v| v as u32)
    }

    /// Whether `log` has room for an entry of `granules` now (an invalid log has none).
    pub fn room(&self, ddr: &Ddr, log: usize, granules: u32) -> bool {
        let l = &self.logs[log];
        let c = l.ctrl();
        c.valid && self.consumed(ddr, log).and_then(|done| place(l.produced, done, c.granules(), granules)).is_some()
    }

    /// An attempt of `who`'s read of `log`'s flushing page: whether it is served now, by the
    /// log's flush slot (`FlushSlot::ask`); an invalid log serves none.
    pub fn flush(&mut self, ddr: &Ddr, log: usize, who: Flusher) -> bool {
        let consumed = self.consumed(ddr, log);
        let l = &mut self.logs[log];
        let c = l.ctrl();
        c.valid && consumed.is_some_and(|done| l.flush.ask(who, l.produced, done, c.granules()))
    }

    /// An access found no room in `log`: counted, and the header's copy updated.
    pub fn refuse(&mut self, ddr: &Ddr, log: usize) {
        self.refused = self.refused.wrapping_add(1);
        let l = &mut self.logs[log];
        l.full = l.full.wrapping_add(1);
        if l.ctrl().valid {
            let _ = ddr.write(l.header + header::FULL, 4, u128::from(l.full));
        }
    }

    /// Appends `entry` (its `granules` and `serial` are filled here) and `data` to `log`, then
    /// publishes `produced`. `None` (and nothing written) if the log has no room; else whether
    /// the log's NOTIFY set its bit of `appended` (the interrupt line may have risen).
    pub fn append(&mut self, ddr: &Ddr, log: usize, mut entry: LogEntry, data: &[u8]) -> Option<bool> {
        let granules = hal::pldma::active::entry_granules(data.len());
        let l = self.logs[log];
        let c = l.ctrl();
        let pad = (if c.valid { self.consumed(ddr, log) } else { None })
            .and_then(|done| place(l.produced, done, c.granules(), granules))?;
        let size = c.granules();
        let at = |count: u32| l.base + GRANULE * u64::from(count % size);
        let mut produced = l.produced;
        if pad > 0 {
            let _ = ddr.write_bytes(at(produced), &LogEntry::pad(pad as u8).encode());
            produced = produced.wrapping_add(pad);
        }
        entry.granules = granules as u8;
        entry.serial = l.entries;
        let start = at(produced);
        let _ = ddr.write_bytes(start + GRANULE, data);
        let _ = ddr.write_bytes(start, &entry.encode());
        produced = produced.wrapping_add(granules);
        // The entry's bytes before the index that publishes them.
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        let _ = ddr.write(l.header + header::PRODUCED, 4, u128::from(produced));
        let l = &mut self.logs[log];
        l.produced = produced;
        l.entries = l.entries.wrapping_add(1);
        if c.notify {
            self.appended |= 1 << log;
        }
        Some(c.notify)
    }
}
