//! Execution of a decoded A32 access.

use super::{Access, Offset, RegisterFile};
use crate::emulate::{Bus, Emulated, Executed, Recorder, run_accesses};
use crate::error::EmulateError;
use crate::types::{Addressing, Kind};

const CPSR_T: u32 = 1 << 5;
const CPSR_E: u32 = 1 << 9;
const CPSR_C: u32 = 1 << 29;

/// Executes `access` against `regs` and `bus`.
///
/// First checks the condition against the CPSR flags (ARM DDI 0406C
/// A8.3.1 `ConditionPassed()`): a failed condition returns an [`Emulated`]
/// with `executed == false`, no bus access and `pc_advance == 4`. Otherwise
/// computes `offset_addr = Rn +/- offset`, accesses `offset_addr` (offset,
/// pre-index) or `Rn` (post-index), writes loaded values (LDRSB/LDRSH
/// sign-extend, LDRB/LDRH zero-extend), then writes back `offset_addr` to
/// `Rn` for pre/post-index. LDRD/STRD access `Rt` at the address and `Rt2`
/// at the address + 4. Address arithmetic wraps at 32 bits.
///
/// Rejects CPSR.E = 1 (big-endian data) and CPSR.T = 1 (Thumb state). If a
/// bus access fails, no register is modified.
///
/// [`execute`] does the same and keeps no record of the accesses: the
/// abort handler's path.
pub fn emulate(access: &Access, regs: &mut impl RegisterFile, bus: &mut impl Bus) -> Result<Emulated, EmulateError> {
    let mut recorder = Recorder::new(bus);
    let executed = execute(access, regs, &mut recorder)?;
    Ok(recorder.emulated(executed))
}

/// [`emulate`] without the record of the bus accesses.
#[inline]
pub fn execute(access: &Access, regs: &mut impl RegisterFile, bus: &mut impl Bus) -> Result<Executed, EmulateError> {
    let cpsr = regs.cpsr();
    if cpsr & CPSR_T != 0 {
        return Err(EmulateError::ThumbState);
    }
    if cpsr & CPSR_E != 0 {
        return Err(EmulateError::BigEndian);
    }
    if !access.cond.passed(cpsr) {
        return Ok(Executed::skipped());
    }

    let base = regs.r(access.rn);
    let offset = match access.offset {
        Offset::Imm(imm) => imm,
        Offset::Reg { rm, shift } => shift.apply(regs.r(rm), cpsr & CPSR_C != 0),
    };
    let offset_addr = if access.add { base.wrapping_add(offset) } else { base.wrapping_sub(offset) };
    let addr = match access.addressing {
        Addressing::PostIndex => base,
        Addressing::Offset | Addressing::PreIndex => offset_addr,
    };

    let (reg_nums, count) = access.transfer.registers();
    let step = access.size.bytes() as u32;
    let addrs = [u64::from(addr), u64::from(addr.wrapping_add(step))];
    let mut values = [0u128; 2];
    if access.kind == Kind::Store {
        for (value, &n) in values.iter_mut().zip(&reg_nums[..count]) {
            *value = u128::from(regs.r(n));
        }
    }
    run_accesses(bus, access.kind, access.size, &addrs[..count], &mut values)?;

    // All bus accesses succeeded: commit register writes.
    if access.kind == Kind::Load {
        for (&value, &n) in values.iter().zip(&reg_nums[..count]) {
            let result = if access.signed { access.size.sign_extend(value) as u32 } else { value as u32 };
            regs.set_r(n, result);
        }
    }
    let writeback = access.addressing.writeback().then(|| {
        regs.set_r(access.rn, offset_addr);
        u64::from(offset_addr)
    });
    Ok(Executed::done(writeback))
}
