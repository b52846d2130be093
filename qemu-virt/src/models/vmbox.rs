//! Model of the virtualized mailbox (`docs/hw/vmbox.md`).

use core::mem::offset_of;
use std::collections::VecDeque;
use std::vec::Vec;

use tock_registers::LocalRegisterCopy;

use super::{Delivery, ModelError, check_size, truncate};
use hal::vmbox::regs::{ControlRegisters, DEPTH, ID, IRQ, MifRegisters, STATUS, THRESHOLD};
use hal::vmbox::{CONTROL_OFFSET, EMPTY_SENTINEL, ID_MAGIC, ID_VERSION, PAGE_BYTES, WORD_BYTES};
use proto::gsas::INTERFACES;

const DATA: u64 = offset_of!(MifRegisters, data) as u64;
const STATUS_REG: u64 = offset_of!(MifRegisters, status) as u64;
const DEPTH_REG: u64 = offset_of!(MifRegisters, depth) as u64;
const IRQ_ENABLE: u64 = offset_of!(MifRegisters, irq_enable) as u64;
const IRQ_STATUS: u64 = offset_of!(MifRegisters, irq_status) as u64;
const THRESHOLD_REG: u64 = offset_of!(MifRegisters, threshold) as u64;
const REFUSED: u64 = offset_of!(MifRegisters, refused) as u64;
const PACKET_FIRST: u64 = offset_of!(MifRegisters, packet) as u64;
const PACKET_SECOND: u64 = PACKET_FIRST + WORD_BYTES as u64;
const IRQ_SUMMARY: u64 = offset_of!(ControlRegisters, irq_summary) as u64;
const ID_REG: u64 = offset_of!(ControlRegisters, id) as u64;

type Irq = LocalRegisterCopy<u32, IRQ::Register>;

#[derive(Debug)]
struct Mif {
    fifo: VecDeque<u128>,
    irq_enable: Irq,
    irq_status: Irq,
    threshold: u16,
    refused: u32,
    /// The second word of the packet the last read of `packet[0]` took (or the sentinel), for
    /// `packet[1]`.
    kept: u128,
}

impl Mif {
    /// A read of `packet[0]`: the oldest packet's first word, its second kept; or the sentinel.
    fn take_packet(&mut self) -> u128 {
        if self.fifo.len() < 2 {
            self.kept = EMPTY_SENTINEL;
            return EMPTY_SENTINEL;
        }
        let first = self.fifo.pop_front().unwrap_or(EMPTY_SENTINEL);
        self.kept = self.fifo.pop_front().unwrap_or(EMPTY_SENTINEL);
        first
    }

    fn above_threshold(&self) -> bool {
        self.threshold != 0 && self.fifo.len() >= usize::from(self.threshold)
    }

    /// Sets the status bits whose condition holds (after an enqueue, a clear, a threshold write).
    fn assert_conditions(&mut self) {
        if !self.fifo.is_empty() {
            self.irq_status.modify(IRQ::NOT_EMPTY::SET);
        }
        if self.above_threshold() {
            self.irq_status.modify(IRQ::THRESHOLD::SET);
        }
    }

    /// All of `words` or none of them.
    fn enqueue(&mut self, words: &[u128], depth: usize) -> Delivery {
        if words.is_empty() || self.fifo.len() + words.len() > depth {
            self.refused = self.refused.saturating_add(1);
            self.irq_status.modify(IRQ::REFUSED::SET);
            return Delivery::Nack;
        }
        self.fifo.extend(words);
        self.assert_conditions();
        Delivery::Ack
    }

    fn status(&self, depth: usize) -> u32 {
        let count = self.fifo.len();
        let mut s = LocalRegisterCopy::<u32, STATUS::Register>::new(0);
        s.write(
            STATUS::COUNT.val(count as u32)
                + STATUS::EMPTY.val(u32::from(count == 0))
                + STATUS::FULL.val(u32::from(count == depth))
                + STATUS::ABOVE_THRESHOLD.val(u32::from(self.above_threshold())),
        );
        s.get()
    }

    fn line(&self) -> bool {
        self.irq_status.get() & self.irq_enable.get() != 0
    }
}

#[derive(Debug)]
pub struct VmboxModel {
    depth: usize,
    mifs: Vec<Mif>,
}

impl VmboxModel {
    /// `depth` words per FIFO, at least 2 (one packet).
    pub fn new(depth: u16) -> Result<Self, ModelError> {
        if depth < 2 {
            return Err(ModelError::InvalidConfig);
        }
        let mifs = (0..INTERFACES)
            .map(|_| Mif {
                fifo: VecDeque::with_capacity(usize::from(depth)),
                irq_enable: Irq::new(0),
                irq_status: Irq::new(0),
                threshold: 0,
                refused: 0,
                kept: EMPTY_SENTINEL,
            })
            .collect();
        Ok(Self { depth: usize::from(depth), mifs })
    }

    /// A packet (or any burst) from the interconnect for interface `interface`: enqueued whole
    /// or refused whole (the fix of seed §5.1.2). Bursts are whole 128-bit words.
    pub fn deliver(&mut self, interface: u8, bytes: &[u8]) -> Delivery {
        let Some(mif) = self.mifs.get_mut(usize::from(interface)) else {
            return Delivery::Nack;
        };
        if !bytes.len().is_multiple_of(WORD_BYTES) {
            return mif.enqueue(&[], 0);
        }
        let words: Vec<u128> = bytes
            .chunks_exact(WORD_BYTES)
            .map(|c| {
                let mut w = [0; WORD_BYTES];
                w.copy_from_slice(c);
                u128::from_le_bytes(w)
            })
            .collect();
        mif.enqueue(&words, self.depth)
    }

    /// The block's interrupt output: any interface's (IRQ_STATUS & IRQ_ENABLE) != 0.
    pub fn irq_line(&self) -> bool {
        self.mifs.iter().any(Mif::line)
    }

    pub fn interface_irq(&self, interface: u8) -> bool {
        self.mifs.get(usize::from(interface)).is_some_and(Mif::line)
    }

    /// Words queued in an interface (0 for a bad index).
    pub fn queued(&self, interface: u8) -> usize {
        self.mifs.get(usize::from(interface)).map_or(0, |m| m.fifo.len())
    }

    fn summary(&self) -> u64 {
        self.mifs.iter().enumerate().filter(|(_, m)| m.line()).fold(0, |bits, (i, _)| bits | 1 << i)
    }

    fn locate(&self, offset: u64) -> Result<(Option<usize>, u64), ModelError> {
        let page = offset / PAGE_BYTES;
        if page < INTERFACES as u64 {
            Ok((Some(page as usize), offset % PAGE_BYTES))
        } else if offset / PAGE_BYTES == CONTROL_OFFSET / PAGE_BYTES {
            Ok((None, offset % PAGE_BYTES))
        } else {
            Err(ModelError::Unmapped { offset })
        }
    }

    pub fn read(&mut self, offset: u64, size: usize) -> Result<u128, ModelError> {
        let depth = self.depth;
        let value = match self.locate(offset)? {
            (Some(i), DATA) => {
                check_size(offset, size, &[16])?;
                self.mifs[i].fifo.pop_front().unwrap_or(EMPTY_SENTINEL)
            }
            (Some(i), PACKET_FIRST) => {
                check_size(offset, size, &[16])?;
                self.mifs[i].take_packet()
            }
            (Some(i), PACKET_SECOND) => {
                check_size(offset, size, &[16])?;
                core::mem::replace(&mut self.mifs[i].kept, EMPTY_SENTINEL)
            }
            (Some(i), reg) => {
                check_size(offset, size, &[4])?;
                let mif = &self.mifs[i];
                u128::from(match reg {
                    STATUS_REG => mif.status(depth),
                    DEPTH_REG => DEPTH::WORDS.val(depth as u32).value,
                    IRQ_ENABLE => mif.irq_enable.get(),
                    IRQ_STATUS => mif.irq_status.get(),
                    THRESHOLD_REG => THRESHOLD::LEVEL.val(u32::from(mif.threshold)).value,
                    REFUSED => mif.refused,
                    _ => return Err(ModelError::Unmapped { offset }),
                })
            }
            (None, IRQ_SUMMARY) => {
                check_size(offset, size, &[8])?;
                u128::from(self.summary())
            }
            (None, ID_REG) => {
                check_size(offset, size, &[4])?;
                u128::from((ID::MAGIC.val(u32::from(ID_MAGIC)) + ID::VERSION.val(u32::from(ID_VERSION))).value)
            }
            (None, _) => return Err(ModelError::Unmapped { offset }),
        };
        Ok(value)
    }

    pub fn write(&mut self, offset: u64, size: usize, value: u128) -> Result<(), ModelError> {
        let depth = self.depth;
        let (Some(i), reg) = self.locate(offset)? else {
            return match offset % PAGE_BYTES {
                IRQ_SUMMARY | ID_REG => Err(ModelError::ReadOnly { offset }),
                _ => Err(ModelError::Unmapped { offset }),
            };
        };
        let mif = &mut self.mifs[i];
        if reg == DATA {
            check_size(offset, size, &[16])?;
            // A refused CPU write is counted and flagged like a refused packet.
            let _ = mif.enqueue(&[value], depth);
            return Ok(());
        }
        if reg == PACKET_FIRST || reg == PACKET_SECOND {
            return Err(ModelError::ReadOnly { offset });
        }
        if ![STATUS_REG, DEPTH_REG, IRQ_ENABLE, IRQ_STATUS, THRESHOLD_REG, REFUSED].contains(&reg) {
            return Err(ModelError::Unmapped { offset });
        }
        check_size(offset, size, &[4])?;
        let value = truncate(value, 4) as u32;
        match reg {
            IRQ_ENABLE => mif.irq_enable.set(value & IRQ_BITS),
            IRQ_STATUS => {
                mif.irq_status.set(mif.irq_status.get() & !value);
                mif.assert_conditions();
            }
            THRESHOLD_REG => {
                mif.threshold = LocalRegisterCopy::<u32, THRESHOLD::Register>::new(value).read(THRESHOLD::LEVEL) as u16;
                mif.assert_conditions();
            }
            REFUSED => mif.refused = 0,
            _ => return Err(ModelError::ReadOnly { offset }),
        }
        Ok(())
    }
}

const IRQ_BITS: u32 = IRQ::NOT_EMPTY::SET.value | IRQ::THRESHOLD::SET.value | IRQ::REFUSED::SET.value;
