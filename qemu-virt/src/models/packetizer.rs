//! Model of the virtualized packetizer (`docs/hw/packetizer.md`).

use core::mem::offset_of;
use std::boxed::Box;

use tock_registers::LocalRegisterCopy;

use super::{Completion, Delivery, ModelError, check_size, truncate};
use hal::packetizer::regs::{BASE_DEST, DESTINATION, PAYLOAD0, PIDT_ENTRY, PifRegisters, STATUS, TifRegisters};
use hal::packetizer::{Destination, PACKET_BYTES, PAGE_BYTES, TIF_OFFSET, assemble, base_window};
use proto::gsas::INTERFACES;

const PAYLOAD0_REG: u64 = offset_of!(PifRegisters, payload0) as u64;
const PAYLOAD1_REG: u64 = offset_of!(PifRegisters, payload1) as u64;
const DEST_REG: u64 = offset_of!(PifRegisters, destination) as u64;
const STATUS_REG: u64 = offset_of!(PifRegisters, status) as u64;
const PIDT: u64 = offset_of!(TifRegisters, pidt) as u64;
const BASE_DEST_REG: u64 = offset_of!(TifRegisters, base_dest) as u64;
const PID_CONF: u64 = offset_of!(TifRegisters, pid_conf) as u64;
const CLR_REQ: u64 = offset_of!(TifRegisters, clr_req) as u64;
/// DESTINATION valid bits [39:0] (seed Table 5): everything up to the NODE field's top.
const DEST_VALID: u64 = (DESTINATION::NODE.mask << DESTINATION::NODE.shift) | ((1 << DESTINATION::NODE.shift) - 1);

/// A packet leaving the packetizer, PID prefix applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutgoingPacket {
    pub src_node: u16,
    pub dest_node: u16,
    pub dest_interface: u8,
    pub src_interface: u8,
    /// Model sequence number, for `complete` after a `Delivery::Pending`.
    pub seq: u64,
    pub words: [u8; PACKET_BYTES],
}

/// Where packets go: the interconnect. Returns the destination's answer, or `Pending`.
pub type Sink = Box<dyn FnMut(OutgoingPacket) -> Delivery + Send>;

type Status = LocalRegisterCopy<u32, STATUS::Register>;

#[derive(Clone, Copy, Debug)]
struct Pif {
    payload0: u128,
    payload1: u128,
    destination: u64,
    /// Bit 0 payload0, bit 1 payload1, bit 2 destination: written since the last packet.
    written: u8,
    status: Status,
    /// The outstanding packet's sequence number while PEND is set.
    in_flight: Option<u64>,
}

pub struct PacketizerModel {
    node: u16,
    pidt: [u64; INTERFACES],
    base_dest: u64,
    pid_conf: u64,
    pifs: [Pif; INTERFACES],
    next_seq: u64,
    sink: Sink,
}

impl core::fmt::Debug for PacketizerModel {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PacketizerModel").field("node", &self.node).field("pid_conf", &self.pid_conf).finish()
    }
}

impl PacketizerModel {
    /// Reset state: PIDT, BASE_DEST and PID_CONF zero, so nothing can be sent until the TIF
    /// is set up (seed §5.2.2).
    pub fn new(node: u16, sink: Sink) -> Self {
        let pif = Pif { payload0: 0, payload1: 0, destination: 0, written: 0, status: Status::new(0), in_flight: None };
        Self { node, pidt: [0; INTERFACES], base_dest: 0, pid_conf: 0, pifs: [pif; INTERFACES], next_seq: 0, sink }
    }

    pub fn status(&self, pif: u8) -> Option<u32> {
        self.pifs.get(usize::from(pif)).map(|p| p.status.get())
    }

    /// The interconnect's late answer for packet `seq` of interface `pif`.
    pub fn complete(&mut self, pif: u8, seq: u64, result: Completion) -> Result<(), ModelError> {
        let p = self.pifs.get_mut(usize::from(pif)).ok_or(ModelError::NoPendingPacket { pif, seq })?;
        if p.in_flight != Some(seq) {
            return Err(ModelError::NoPendingPacket { pif, seq });
        }
        Self::finish(p, if result == Completion::Ack { Delivery::Ack } else { Delivery::Nack });
        Ok(())
    }

    fn finish(p: &mut Pif, delivery: Delivery) {
        match delivery {
            Delivery::Ack => p.status.modify(STATUS::PEND::CLEAR + STATUS::ACK::SET),
            Delivery::Nack => p.status.modify(STATUS::PEND::CLEAR + STATUS::NACK::SET),
            Delivery::Unreachable => p.status.modify(STATUS::PEND::CLEAR + STATUS::UNREACH::SET),
            Delivery::Pending => return,
        }
        p.in_flight = None;
    }

    /// The third register write of interface `i`: check, assemble, send (seed §5.2.3).
    fn start(&mut self, i: usize) {
        let window = base_window(self.base_dest);
        let p = &mut self.pifs[i];
        p.written = 0;
        p.status.set(0);
        let dest = Destination::decode(p.destination);
        if self.pid_conf & (1 << i) == 0 || dest.window != window || dest.page_offset != 0 {
            p.status.modify(STATUS::ILLEGAL::SET);
            return;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        p.status.modify(STATUS::PEND::SET);
        p.in_flight = Some(seq);
        let packet = OutgoingPacket {
            src_node: self.node,
            dest_node: u16::from(dest.node),
            dest_interface: dest.interface,
            src_interface: i as u8,
            seq,
            words: assemble(self.pidt[i], p.payload0, p.payload1),
        };
        let delivery = (self.sink)(packet);
        Self::finish(&mut self.pifs[i], delivery);
    }

    pub fn read(&mut self, offset: u64, size: usize) -> Result<u128, ModelError> {
        let page = offset / PAGE_BYTES;
        let reg = offset % PAGE_BYTES;
        if let Some(p) = self.pifs.get(page as usize) {
            return match reg {
                PAYLOAD0_REG => check_size(offset, size, &[16]).map(|()| p.payload0),
                PAYLOAD1_REG => check_size(offset, size, &[16]).map(|()| p.payload1),
                DEST_REG => check_size(offset, size, &[8, 16]).map(|()| u128::from(p.destination)),
                STATUS_REG => check_size(offset, size, &[4, 8, 16]).map(|()| u128::from(p.status.get())),
                _ => Err(ModelError::Unmapped { offset }),
            };
        }
        if offset < TIF_OFFSET {
            return Err(ModelError::Unmapped { offset });
        }
        let value = match offset - TIF_OFFSET {
            r if r < PIDT + 8 * INTERFACES as u64 && r.is_multiple_of(8) => self.pidt[(r / 8) as usize],
            BASE_DEST_REG => self.base_dest,
            PID_CONF => self.pid_conf,
            CLR_REQ => 0,
            _ => return Err(ModelError::Unmapped { offset }),
        };
        check_size(offset, size, &[8])?;
        Ok(u128::from(value))
    }

    pub fn write(&mut self, offset: u64, size: usize, value: u128) -> Result<(), ModelError> {
        let page = (offset / PAGE_BYTES) as usize;
        let reg = offset % PAGE_BYTES;
        if page < INTERFACES {
            let bit = match reg {
                PAYLOAD0_REG | PAYLOAD1_REG => check_size(offset, size, &[16]).map(|()| 1 << (reg / 0x10)),
                DEST_REG => check_size(offset, size, &[8, 16]).map(|()| 0b100),
                STATUS_REG => Err(ModelError::ReadOnly { offset }),
                _ => Err(ModelError::Unmapped { offset }),
            }?;
            let p = &mut self.pifs[page];
            if p.status.is_set(STATUS::PEND) {
                // Single buffer per interface (seed §5.2.4): the write is lost, and flagged.
                p.status.modify(STATUS::OVERWR_BUF::SET);
                return Ok(());
            }
            let value = truncate(value, size);
            match reg {
                PAYLOAD0_REG => p.payload0 = value & PAYLOAD0::DATA.mask << PAYLOAD0::DATA.shift,
                PAYLOAD1_REG => p.payload1 = value,
                _ => p.destination = value as u64 & DEST_VALID,
            }
            p.written |= bit;
            if p.written == 0b111 {
                self.start(page);
            }
            return Ok(());
        }
        if offset < TIF_OFFSET {
            return Err(ModelError::Unmapped { offset });
        }
        let reg = offset - TIF_OFFSET;
        let known = (reg < PIDT + 8 * INTERFACES as u64 && reg.is_multiple_of(8))
            || [BASE_DEST_REG, PID_CONF, CLR_REQ].contains(&reg);
        if !known {
            return Err(ModelError::Unmapped { offset });
        }
        check_size(offset, size, &[8])?;
        let value = value as u64;
        match reg {
            BASE_DEST_REG => self.base_dest = value & BASE_DEST::WINDOW.mask << BASE_DEST::WINDOW.shift,
            PID_CONF => self.pid_conf = value,
            CLR_REQ => {
                for (i, p) in self.pifs.iter_mut().enumerate() {
                    if value & (1 << i) != 0 {
                        p.written = 0;
                        p.status.set(0);
                        p.in_flight = None;
                    }
                }
            }
            r => self.pidt[(r / 8) as usize] = value & PIDT_ENTRY::PID.mask,
        }
        Ok(())
    }
}
