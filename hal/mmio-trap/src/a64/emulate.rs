//! Execution of a decoded A64 access.

use super::{Access, Extend, Offset, Reg31, RegClass, RegisterFile, Width};
use crate::emulate::{Bus, Emulated, Executed, Recorder, run_accesses};
use crate::error::EmulateError;
use crate::types::{Addressing, Kind};

/// Executes `access` against `regs` and `bus`.
///
/// Computes the effective address from the registers (ARM DDI 0487
/// pseudocode: `address = X[n] (+ offset unless post-indexed)`), performs one
/// bus access per transfer register (pairs: at `address`, then at `address +
/// size`), writes loaded values with zero/sign extension, then applies
/// base-register write-back. Register 31 is SP as a base and XZR as a
/// transfer or offset register.
///
/// If any bus access fails, no register is modified.
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
    let base = regs.gpr(access.rn, Reg31::Sp);
    let offset = match access.offset {
        Offset::Imm(imm) => imm as u64,
        Offset::Reg { rm, extend, shift } => {
            let m = regs.gpr(rm, Reg31::Zr);
            // ExtendReg(): UXTW/SXTW take the low 32 bits of Xm.
            let extended = match extend {
                Extend::Uxtw => m & 0xffff_ffff,
                Extend::Sxtw => m as u32 as i32 as i64 as u64,
                Extend::Lsl | Extend::Sxtx => m,
            };
            extended.wrapping_shl(u32::from(shift))
        }
    };
    let offset_addr = base.wrapping_add(offset);
    let addr = match access.addressing {
        Addressing::PostIndex => base,
        Addressing::Offset | Addressing::PreIndex => offset_addr,
    };

    let (regs_nums, count) = access.transfer.registers();
    let addrs = [addr, addr.wrapping_add(access.size.bytes() as u64)];
    let mut values = [0u128; 2];
    if access.kind == Kind::Store {
        for (value, &n) in values.iter_mut().zip(&regs_nums[..count]) {
            *value = match access.class {
                RegClass::Gpr { .. } => u128::from(regs.gpr(n, Reg31::Zr)),
                RegClass::Simd => regs.v(n),
            };
        }
    }
    run_accesses(bus, access.kind, access.size, &addrs[..count], &mut values)?;

    // All bus accesses succeeded: commit register writes.
    if access.kind == Kind::Load {
        for (&value, &n) in values.iter().zip(&regs_nums[..count]) {
            match access.class {
                RegClass::Gpr { width, signed } => {
                    let extended = if signed { access.size.sign_extend(value) } else { value as u64 };
                    let result = match width {
                        Width::W => extended & 0xffff_ffff,
                        Width::X => extended,
                    };
                    regs.set_gpr(n, Reg31::Zr, result);
                }
                RegClass::Simd => regs.set_v_scalar(n, access.size, value),
            }
        }
    }
    let writeback = access.addressing.writeback().then(|| {
        regs.set_gpr(access.rn, Reg31::Sp, offset_addr);
        offset_addr
    });
    Ok(Executed::done(writeback))
}
