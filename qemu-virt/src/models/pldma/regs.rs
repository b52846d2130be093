//! The PLDMA's register semantics (`docs/hw/pldma.md`, the register tables): offsets and fields
//! from `hal::pldma::regs`; what a write sets in motion is returned as an [`Effect`] for the
//! engine.

use super::active::{Active, LogEnabled};
use super::fault_fifo::FaultFifo;
use super::rapf_gate::RapfGate;
use crate::counters::NodeCounters;
use crate::models::{ModelError, check_size};
use core::mem::offset_of;
use hal::pldma::rapf::RapfRequest;
use hal::pldma::regs::{
    ACTIVE_OFFSET, APT_OFFSET, CONTROL_OFFSET, COUNTERS, CTRL, ControlRegisters, FAULT_OFFSET, FaultRegisters,
    ID_VALUE, IRQ, PAGE, PD_PAGES_OFFSET, PD_STATUS, PdRegisters, caps_value,
};
use hal::pldma::{PDS, Pd};
use std::sync::atomic::Ordering;
use tock_registers::LocalRegisterCopy;

const fn control(field: usize) -> u64 {
    CONTROL_OFFSET + field as u64
}

const ID: u64 = control(offset_of!(ControlRegisters, id));
const CAPS: u64 = control(offset_of!(ControlRegisters, caps));
const CTRL_REG: u64 = control(offset_of!(ControlRegisters, ctrl));
const NODE: u64 = control(offset_of!(ControlRegisters, node));
const RINGS_LO: u64 = control(offset_of!(ControlRegisters, rings_lo));
const RINGS_HI: u64 = control(offset_of!(ControlRegisters, rings_hi));
const DESC_DOORBELL: u64 = control(offset_of!(ControlRegisters, desc_doorbell));
const CQ_NOTIFY: u64 = control(offset_of!(ControlRegisters, cq_notify));
const PD_ENABLE: u64 = control(offset_of!(ControlRegisters, pd_enable));
const PD_BUSY: u64 = control(offset_of!(ControlRegisters, pd_busy));
const IRQ_STATUS: u64 = control(offset_of!(ControlRegisters, irq_status));
const IRQ_ENABLE: u64 = control(offset_of!(ControlRegisters, irq_enable));
const CQ_PENDING: u64 = control(offset_of!(ControlRegisters, cq_pending));
const COUNTERS_REG: u64 = control(offset_of!(ControlRegisters, counters));
const FIFO_LO: u64 = FAULT_OFFSET + offset_of!(FaultRegisters, fifo_lo) as u64;
const FIFO_HI: u64 = FAULT_OFFSET + offset_of!(FaultRegisters, fifo_hi) as u64;
const FIFO_COUNT: u64 = FAULT_OFFSET + offset_of!(FaultRegisters, fifo_count) as u64;
const PD_DOORBELL: u64 = offset_of!(PdRegisters, doorbell) as u64;
const PD_RAPF: u64 = offset_of!(PdRegisters, rapf) as u64;
const PD_PD: u64 = offset_of!(PdRegisters, pd) as u64;
const PD_STATUS_REG: u64 = offset_of!(PdRegisters, status) as u64;
const PD_EVENTS_LOST: u64 = offset_of!(PdRegisters, events_lost) as u64;
const PD_RAPF_REFUSED: u64 = offset_of!(PdRegisters, rapf_refused) as u64;

/// The causes that stay until written 1.
const STICKY: u32 = (IRQ::FAULT_LOST.mask << IRQ::FAULT_LOST.shift)
    | (IRQ::EVENTS_LOST.mask << IRQ::EVENTS_LOST.shift)
    | (IRQ::DESC_REFUSED.mask << IRQ::DESC_REFUSED.shift);
/// The `pd_enable` bits that are PDs.
const PD_MASK: u32 = (1 << PDS) - 1;
/// The rings' PA alignment.
const RINGS_ALIGN: u64 = 4096;

/// What a register write asks of the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    None,
    /// `desc_doorbell`: the descriptor ring may hold new descriptors.
    Kick,
    /// ENABLE went 0 -> 1 (the caller drops the descriptors the ring holds).
    Enabled,
    /// ENABLE went 1 -> 0.
    Disabled,
    /// `pd_enable` lost these PDs: the engine drops their work.
    PdsDisabled(u16),
    /// A PD page's doorbell.
    Doorbell {
        pd: Pd,
        value: u32,
    },
    /// A PD page's `rapf`: send it with `pd` wired.
    Rapf {
        pd: Pd,
        request: RapfRequest,
    },
    /// An access log became valid: its header's engine fields are zeroed.
    LogEnabled(LogEnabled),
}

#[derive(Debug)]
pub struct RegFile {
    node: u16,
    nodes: u16,
    enabled: bool,
    error: bool,
    rings: u64,
    pd_enable: u16,
    pd_busy: u16,
    irq_enable: u32,
    sticky: u32,
    cq_pending: u16,
    /// Bit `p`: PD page `p`'s last doorbell or rapf write was refused.
    refused: u16,
    /// Which `rapf` writes may leave (`rapf_gate`), and each PD's refused ones.
    pub gate: RapfGate,
    /// Per PD: events the engine could not post (`shares`).
    events_lost: [u32; PDS],
    /// Active Access: the `active` and `apt` pages.
    pub active: Active,
}

/// Where a block offset lands.
enum Page {
    Control(u64),
    Fault(u64),
    Active(u64),
    Apt(u64),
    Pd(Pd, u64),
}

fn page_of(offset: u64) -> Result<Page, ModelError> {
    if offset < CONTROL_OFFSET + PAGE {
        Ok(Page::Control(offset))
    } else if (FAULT_OFFSET..FAULT_OFFSET + PAGE).contains(&offset) {
        Ok(Page::Fault(offset))
    } else if (ACTIVE_OFFSET..ACTIVE_OFFSET + PAGE).contains(&offset) {
        Ok(Page::Active(offset - ACTIVE_OFFSET))
    } else if (APT_OFFSET..APT_OFFSET + PAGE).contains(&offset) {
        Ok(Page::Apt(offset - APT_OFFSET))
    } else if offset >= PD_PAGES_OFFSET {
        let index = (offset - PD_PAGES_OFFSET) / PAGE;
        let pd = u16::try_from(index).ok().and_then(Pd::new).ok_or(ModelError::Unmapped { offset })?;
        Ok(Page::Pd(pd, (offset - PD_PAGES_OFFSET) % PAGE))
    } else {
        Err(ModelError::Unmapped { offset })
    }
}

impl RegFile {
    /// Reset state for node `node` of `nodes`.
    pub fn new(node: u16, nodes: u16) -> Self {
        Self {
            node,
            nodes,
            enabled: false,
            error: false,
            rings: 0,
            pd_enable: 0,
            pd_busy: 0,
            irq_enable: 0,
            sticky: 0,
            cq_pending: 0,
            refused: 0,
            gate: RapfGate::default(),
            events_lost: [0; PDS],
            active: Active::default(),
        }
    }

    /// An event of `pd` found no room in its share of the event ring.
    pub fn event_lost(&mut self, pd: usize) {
        let lost = &mut self.events_lost[pd % PDS];
        *lost = lost.wrapping_add(1);
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    pub fn rings(&self) -> u64 {
        self.rings
    }

    pub fn pd_enabled(&self, pd: Pd) -> bool {
        self.pd_enable & pd.bit() as u16 != 0
    }

    pub fn pd_enable(&self) -> u16 {
        self.pd_enable
    }

    pub fn set_pd_busy(&mut self, busy: u16) {
        self.pd_busy = busy;
    }

    /// Sets sticky causes (`IRQ` bits).
    pub fn raise(&mut self, causes: u32) {
        self.sticky |= causes & STICKY;
    }

    pub fn status(&self, fifo: &FaultFifo) -> u32 {
        let mut s = self.sticky;
        if !fifo.is_empty() {
            s |= IRQ::FAULT::SET.value;
        }
        if self.cq_pending != 0 {
            s |= IRQ::CQ::SET.value | IRQ::CQ_PENDING.val(u32::from(self.cq_pending)).value;
        }
        if self.active.irq() {
            s |= IRQ::ACTIVE_LOG::SET.value;
        }
        s
    }

    /// The engine's interrupt output: an enabled cause.
    pub fn irq(&self, fifo: &FaultFifo) -> bool {
        self.status(fifo) & self.irq_enable != 0
    }

    pub fn read(
        &mut self,
        fifo: &mut FaultFifo,
        counters: &NodeCounters,
        offset: u64,
        size: usize,
    ) -> Result<u128, ModelError> {
        match page_of(offset)? {
            Page::Control(off) => self.read_control(fifo, counters, off, size),
            Page::Fault(off) => Self::read_fault(fifo, off, size),
            Page::Active(off) => self.active.read_active(offset, off, size),
            Page::Apt(off) => self.active.read_apt(offset, off, size),
            Page::Pd(pd, off) => {
                check_size(offset, size, &[if off == PD_RAPF { 8 } else { 4 }])?;
                match off {
                    PD_DOORBELL | PD_RAPF => Ok(0),
                    PD_PD => Ok(u128::from(pd.raw())),
                    PD_STATUS_REG => {
                        let mut s = LocalRegisterCopy::<u32, PD_STATUS::Register>::new(0);
                        s.modify(PD_STATUS::ENABLED.val(u32::from(self.pd_enabled(pd))));
                        s.modify(PD_STATUS::REFUSED.val(u32::from(self.refused & pd.bit() as u16 != 0)));
                        Ok(u128::from(s.get()))
                    }
                    PD_EVENTS_LOST => Ok(u128::from(self.events_lost[pd.index()])),
                    PD_RAPF_REFUSED => Ok(u128::from(self.gate.refused[pd.index()])),
                    _ => Err(ModelError::Unmapped { offset }),
                }
            }
        }
    }

    fn read_control(
        &self,
        fifo: &FaultFifo,
        counters: &NodeCounters,
        offset: u64,
        size: usize,
    ) -> Result<u128, ModelError> {
        if (COUNTERS_REG..COUNTERS_REG + 8 * COUNTERS as u64).contains(&offset) {
            let at = offset - COUNTERS_REG;
            let value = counters.pldma[(at / 8) as usize].load(Ordering::Relaxed);
            return match (size, at % 8) {
                (8, 0) => Ok(u128::from(value)),
                (4, 0) => Ok(u128::from(value as u32)),
                (4, 4) => Ok(u128::from((value >> 32) as u32)),
                _ => Err(ModelError::AccessSize { offset, size }),
            };
        }
        let value = match offset {
            ID => ID_VALUE,
            CAPS => caps_value(),
            CTRL_REG => (CTRL::ENABLE.val(u32::from(self.enabled)) + CTRL::ERROR.val(u32::from(self.error))).value,
            NODE => u32::from(self.node),
            RINGS_LO => self.rings as u32,
            RINGS_HI => (self.rings >> 32) as u32,
            DESC_DOORBELL | CQ_NOTIFY => 0,
            PD_ENABLE => u32::from(self.pd_enable),
            PD_BUSY => u32::from(self.pd_busy),
            IRQ_STATUS => self.status(fifo),
            IRQ_ENABLE => self.irq_enable,
            CQ_PENDING => u32::from(self.cq_pending),
            _ => return Err(ModelError::Unmapped { offset }),
        };
        check_size(offset, size, &[4])?;
        Ok(u128::from(value))
    }

    fn read_fault(fifo: &mut FaultFifo, offset: u64, size: usize) -> Result<u128, ModelError> {
        match (offset, size) {
            (FIFO_LO, 8) => Ok(u128::from(fifo.read_lo())),
            (FIFO_LO, 16) => Ok(fifo.read_both()),
            (FIFO_HI, 8) => Ok(u128::from(fifo.read_hi())),
            (FIFO_COUNT, 4) => {
                fifo.disarm();
                Ok(fifo.len() as u128)
            }
            (FIFO_LO | FIFO_HI | FIFO_COUNT, _) => Err(ModelError::AccessSize { offset, size }),
            _ => Err(ModelError::Unmapped { offset }),
        }
    }

    /// `rings_ok(pa)`: the rings fit the node's memory at `pa`.
    pub fn write(
        &mut self,
        offset: u64,
        size: usize,
        value: u128,
        rings_ok: impl Fn(u64) -> bool,
    ) -> Result<Effect, ModelError> {
        match page_of(offset)? {
            Page::Control(off) => self.write_control(off, size, value as u32, rings_ok),
            Page::Fault(off) => match off {
                FIFO_LO | FIFO_HI | FIFO_COUNT => Err(ModelError::ReadOnly { offset }),
                _ => Err(ModelError::Unmapped { offset }),
            },
            Page::Active(off) => {
                Ok(self.active.write_active(offset, off, size, value)?.map_or(Effect::None, Effect::LogEnabled))
            }
            Page::Apt(off) => self.active.write_apt(offset, off, size, value).map(|_| Effect::None),
            Page::Pd(pd, off) => self.write_pd(pd, offset, off, size, value),
        }
    }

    fn write_control(
        &mut self,
        offset: u64,
        size: usize,
        value: u32,
        rings_ok: impl Fn(u64) -> bool,
    ) -> Result<Effect, ModelError> {
        let known = matches!(
            offset,
            ID | CAPS
                | CTRL_REG
                | NODE
                | RINGS_LO
                | RINGS_HI
                | DESC_DOORBELL
                | CQ_NOTIFY
                | PD_ENABLE
                | PD_BUSY
                | IRQ_STATUS
                | IRQ_ENABLE
                | CQ_PENDING
        );
        if (COUNTERS_REG..COUNTERS_REG + 8 * COUNTERS as u64).contains(&offset) {
            return Err(ModelError::ReadOnly { offset });
        }
        if !known {
            return Err(ModelError::Unmapped { offset });
        }
        check_size(offset, size, &[4])?;
        Ok(match offset {
            ID | CAPS | NODE | PD_BUSY => return Err(ModelError::ReadOnly { offset }),
            CTRL_REG => {
                let enable = LocalRegisterCopy::<u32, CTRL::Register>::new(value).is_set(CTRL::ENABLE);
                match (self.enabled, enable) {
                    (false, true) if self.rings.is_multiple_of(RINGS_ALIGN) && rings_ok(self.rings) => {
                        (self.enabled, self.error) = (true, false);
                        Effect::Enabled
                    }
                    (false, true) => {
                        self.error = true;
                        Effect::None
                    }
                    (true, false) => {
                        self.enabled = false;
                        Effect::Disabled
                    }
                    _ => Effect::None,
                }
            }
            RINGS_LO | RINGS_HI if self.enabled => Effect::None,
            RINGS_LO => {
                self.rings = (self.rings & !0xffff_ffff) | u64::from(value);
                Effect::None
            }
            RINGS_HI => {
                self.rings = (self.rings & 0xffff_ffff) | u64::from(value) << 32;
                Effect::None
            }
            DESC_DOORBELL => Effect::Kick,
            CQ_NOTIFY => {
                if let Some(pd) = u16::try_from(value).ok().and_then(Pd::new) {
                    self.cq_pending |= pd.bit() as u16;
                }
                Effect::None
            }
            PD_ENABLE => {
                let new = (value & PD_MASK) as u16;
                let lost = self.pd_enable & !new;
                self.pd_enable = new;
                self.gate.forget(lost);
                if lost != 0 { Effect::PdsDisabled(lost) } else { Effect::None }
            }
            IRQ_STATUS => {
                self.sticky &= !(value & STICKY);
                Effect::None
            }
            IRQ_ENABLE => {
                // The `CQ_PENDING` copy is no cause: those bits cannot be enabled.
                self.irq_enable = value & !(IRQ::CQ_PENDING.mask << IRQ::CQ_PENDING.shift);
                Effect::None
            }
            CQ_PENDING => {
                self.cq_pending &= !(value as u16);
                Effect::None
            }
            _ => return Err(ModelError::Unmapped { offset }),
        })
    }

    fn write_pd(&mut self, pd: Pd, offset: u64, off: u64, size: usize, value: u128) -> Result<Effect, ModelError> {
        let (effect, ok) = match off {
            PD_DOORBELL => {
                check_size(offset, size, &[4])?;
                (Effect::Doorbell { pd, value: value as u32 }, self.pd_enabled(pd))
            }
            PD_RAPF => {
                check_size(offset, size, &[8])?;
                // Only the answer to a fault this engine logged for `pd` leaves (`rapf_gate`).
                let answer = match RapfRequest::decode(value as u64) {
                    Ok(request) if request.node < self.nodes && self.pd_enabled(pd) => {
                        self.gate.admit(pd, &request).then_some(request)
                    }
                    _ => {
                        self.gate.refuse(pd);
                        None
                    }
                };
                match answer {
                    Some(request) => (Effect::Rapf { pd, request }, true),
                    None => (Effect::None, false),
                }
            }
            PD_PD | PD_STATUS_REG | PD_EVENTS_LOST | PD_RAPF_REFUSED => return Err(ModelError::ReadOnly { offset }),
            _ => return Err(ModelError::Unmapped { offset }),
        };
        let bit = pd.bit() as u16;
        if ok {
            self.refused &= !bit;
            Ok(effect)
        } else {
            self.refused |= bit;
            Ok(Effect::None)
        }
    }
}
