//! MMIO trap and forward, the R5 side (QEMU board; `docs/hw/forwarding.md`).
//!
//! The R5's MPU leaves the forwarded PL window uncovered, so an access there takes a
//! background fault. The data-abort handler decodes the A32 instruction, emulates it with slot
//! `R5_SLOT` as the bus, and resumes after it. Any other abort is reported and stops the
//! firmware.

use crate::Board;
use aarch32_cpu::register::{Dfar, Dfsr};
use board::{Board as _, RegionKind};
use boot::r5::AbortFrame;
use core::sync::atomic::{AtomicU32, Ordering};
use hal::mmio_trap::{BusError, a32};
use proto::forward::{Access, Failure, ForwardError, R5_SLOT, SlotBus, Slots, Status, forward};

/// Polls of a slot before the platform counts as gone (seconds of emulated time).
const TIMEOUT_POLLS: u32 = 200_000_000;

/// CPSR mode bits of USR and SYS, the modes whose SP/LR the frame holds.
const MODE_MASK: u32 = 0x1f;
const MODE_USR: u32 = 0x10;
const MODE_SYS: u32 = 0x1f;

fn is_forwarded(addr: u32) -> bool {
    Board::A53_MEMORY.iter().any(|r| r.kind == RegionKind::Forwarded && r.contains(u64::from(addr)))
        && !Board::R5_MEMORY.iter().any(|r| r.contains(u64::from(addr)))
}

struct FrameRegs<'a>(&'a mut AbortFrame);

impl a32::RegisterFile for FrameRegs<'_> {
    fn r(&self, n: u8) -> u32 {
        match n {
            13 => self.0.sp,
            14 => self.0.lr,
            n => self.0.r[usize::from(n)],
        }
    }
    fn set_r(&mut self, n: u8, value: u32) {
        match n {
            13 => self.0.sp = value,
            14 => self.0.lr = value,
            n => self.0.r[usize::from(n)] = value,
        }
    }
    fn cpsr(&self) -> u32 {
        self.0.cpsr
    }
}

/// Accesses forwarded so far (the RDMA benchmark reports them per block).
static FORWARDED: AtomicU32 = AtomicU32::new(0);

/// Cycle-counter ticks spent in the data-abort handler on forwarded accesses (wraps).
static FORWARDED_CYCLES: AtomicU32 = AtomicU32::new(0);

/// The accesses this firmware has forwarded since it started (wraps).
pub fn forwarded_count() -> u32 {
    FORWARDED.load(Ordering::Relaxed)
}

/// The cycle-counter ticks the data-abort handler spent forwarding (trap handling, decode and
/// the host's round trip; wraps). The RDMA benchmark takes them out of the scheduler's busy
/// cycles: on the board the same access is one device store.
pub fn forwarded_cycles() -> u32 {
    FORWARDED_CYCLES.load(Ordering::Relaxed)
}

/// One request through the R5's slot: what the bus sends (`proto::forward::SlotBus`).
fn request(access: &Access) -> Result<[u128; 2], ForwardError> {
    let unmapped = ForwardError::Host(Failure { status: Status::Unmapped, second: false });
    let fwd = Board::FORWARDING.ok_or(unmapped)?;
    // SAFETY: the board reserves the slots in shared memory the MPU maps; slot R5_SLOT is ours.
    let slots = unsafe { &*(fwd.slots as usize as *const Slots) };
    // SAFETY: the platform UART's FIFO register (MPU region "platform-uart"); a single byte
    // store that only the forwarders write.
    let kick = || unsafe { ((fwd.uart.base + 0x30) as usize as *mut u32).write_volatile(R5_SLOT as u32) };
    FORWARDED.fetch_add(1, Ordering::Relaxed);
    let mut polls = 0u32;
    forward(slots, R5_SLOT, access, kick, || {
        polls += 1;
        polls > TIMEOUT_POLLS
    })
}

/// The R5 sees physical addresses: an address is forwarded as itself, if the platform serves it.
fn forwarded(addr: u64) -> Option<u64> {
    u32::try_from(addr).ok().filter(|&a| is_forwarded(a)).map(u64::from)
}

/// Why an abort could not be forwarded.
enum Unforwarded {
    NotForwarded,
    Decode(hal::mmio_trap::DecodeError),
    BankedRegister,
    Emulate(hal::mmio_trap::EmulateError),
}

fn try_forward(frame: &mut AbortFrame, dfar: u32) -> Result<(), Unforwarded> {
    if Board::FORWARDING.is_none() || !is_forwarded(dfar) {
        return Err(Unforwarded::NotForwarded);
    }
    // SAFETY: the aborted instruction is in the firmware's code (ATCM): readable.
    let word = unsafe { (frame.pc as usize as *const u32).read_volatile() };
    let access = a32::decode(frame.pc, word).map_err(Unforwarded::Decode)?;
    let mode = frame.cpsr & MODE_MASK;
    let offset_reg = match access.offset {
        a32::Offset::Reg { rm, .. } => Some(rm),
        a32::Offset::Imm(_) => None,
    };
    let uses_banked = access.transfer.iter().map(Some).chain([Some(access.rn), offset_reg]).flatten().any(|r| r >= 13);
    if uses_banked && mode != MODE_SYS && mode != MODE_USR {
        return Err(Unforwarded::BankedRegister);
    }
    let mut bus = SlotBus { translate: forwarded, request };
    let done = a32::execute(&access, &mut FrameRegs(frame), &mut bus).map_err(Unforwarded::Emulate)?;
    frame.pc = frame.pc.wrapping_add(done.pc_advance as u32);
    Ok(())
}

#[unsafe(no_mangle)]
extern "C" fn r5_data_abort(frame: &mut AbortFrame) {
    let start = crate::pmu::cycles();
    let dfar = Dfar::read().0;
    let forwarded = try_forward(frame, dfar);
    if forwarded.is_ok() {
        FORWARDED_CYCLES.fetch_add(crate::pmu::cycles().wrapping_sub(start), Ordering::Relaxed);
    }
    let Err(why) = forwarded else { return };
    let dfsr = Dfsr::read().raw_value();
    defmt::error!("data abort at PC {=u32:#010x}: DFAR {=u32:#010x}, DFSR {=u32:#010x}", frame.pc, dfar, dfsr);
    // Plain strings and numbers: core::fmt would not fit the firmware's TCM budget.
    match why {
        Unforwarded::NotForwarded => {}
        Unforwarded::Decode(e) => {
            defmt::error!("  not forwarded: instruction {=u32:#010x}: {=str}", e.word, e.reason.as_str())
        }
        Unforwarded::BankedRegister => defmt::error!("  not forwarded: SP/LR of a mode other than SYS"),
        Unforwarded::Emulate(hal::mmio_trap::EmulateError::Bus { addr, error, .. }) => {
            let what = match error {
                BusError::Unmapped => "no device model serves it",
                BusError::Rejected => "the device rejected the size or alignment",
                BusError::Timeout => "the platform never answered",
                _ => "the device failed",
            };
            defmt::error!("  the forwarded access to {=u64:#x} failed: {=str}", addr, what)
        }
        Unforwarded::Emulate(_) => defmt::error!("  not forwarded: Thumb or big-endian state"),
    }
    crate::halt()
}
