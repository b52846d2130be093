//! Forwarded register accesses: which register an offset names (from the `hal` layouts), which
//! sizes and directions it takes, and what reading or writing it does (`docs/hw/smmu.md`,
//! "Access rules").

use super::state::{GlobalInvalidation, State};
use super::tlb::Invalidation;
use crate::models::ModelError;
use core::mem::{offset_of, size_of};
use hal::smmu500::fault::FSR_RECORD;
use hal::smmu500::regs::{
    CONTEXT_BANK_BASE, CONTEXT_BANKS, ContextBankRegisters, Gr0Registers, Gr1Registers, IDR0, IDR1, IDR2, PAGE_BYTES,
    RESUME, SCR0, SCTLR, STREAM_MATCH_GROUPS, Smmu500Registers, TLBGSTATUS, TLBIASID, TLBIVA, TLBIVMID, TLBSTATUS,
};
use tock_registers::LocalRegisterCopy;

/// IDR0-2 of the ZynqMP's MMU-500 (`docs/hw/smmu.md`, "GR0 registers").
pub fn idr0() -> u32 {
    (IDR0::SES::SET
        + IDR0::S1TS::SET
        + IDR0::S2TS::SET
        + IDR0::NTS::SET
        + IDR0::SMS::SET
        + IDR0::ATOSNS::SET
        + IDR0::NUMIRPT.val(1)
        + IDR0::BTM::SET
        + IDR0::NUMSIDB.val(15)
        + IDR0::NUMSMRG.val(STREAM_MATCH_GROUPS as u32))
    .value
}
pub fn idr1() -> u32 {
    (IDR1::NUMPAGENDXB.val(3) + IDR1::NUMSSDNDXB.val(0xf) + IDR1::NUMCB.val(CONTEXT_BANKS as u32)).value
}
pub fn idr2() -> u32 {
    (IDR2::PTFS_64K::SET + IDR2::PTFS_4K::SET + IDR2::UBS.val(5) + IDR2::OAS.val(5) + IDR2::IAS.val(5)).value
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reg {
    Scr0,
    Idr0,
    Idr1,
    Idr2,
    Gfar,
    Gfsr,
    Gfsynr0,
    Gfsynr1,
    Tlbivmid,
    Tlbiallnsnh,
    Tlbgsync,
    Tlbgstatus,
    Smr(usize),
    S2cr(usize),
    Cbar(usize),
    Cbfrsynra(usize),
    Cba2r(usize),
    Sctlr(usize),
    Resume(usize),
    Tcr2(usize),
    Ttbr0(usize),
    Tcr(usize),
    Mair0(usize),
    Mair1(usize),
    Fsr(usize),
    Far(usize),
    Fsynr0(usize),
    Tlbiva(usize),
    Tlbiasid(usize),
    Tlbiall(usize),
    Tlbsync(usize),
    Tlbstatus(usize),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Width {
    /// 4-byte accesses.
    W32,
    /// One 8-byte access, or a 4-byte access to either half.
    W64,
    /// One 8-byte access only.
    W64Whole,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Dir {
    Read,
    Write,
    ReadWrite,
}

/// A register: what it is, where it starts, its width and direction.
struct Found {
    reg: Reg,
    base: u64,
    width: Width,
    dir: Dir,
}

type Entry = (usize, fn(usize) -> Reg, Width, Dir);

const GR0: &[Entry] = &[
    (offset_of!(Gr0Registers, scr0), |_| Reg::Scr0, Width::W32, Dir::ReadWrite),
    (offset_of!(Gr0Registers, idr0), |_| Reg::Idr0, Width::W32, Dir::Read),
    (offset_of!(Gr0Registers, idr1), |_| Reg::Idr1, Width::W32, Dir::Read),
    (offset_of!(Gr0Registers, idr2), |_| Reg::Idr2, Width::W32, Dir::Read),
    (offset_of!(Gr0Registers, gfar), |_| Reg::Gfar, Width::W64, Dir::ReadWrite),
    (offset_of!(Gr0Registers, gfsr), |_| Reg::Gfsr, Width::W32, Dir::ReadWrite),
    (offset_of!(Gr0Registers, gfsynr0), |_| Reg::Gfsynr0, Width::W32, Dir::Read),
    (offset_of!(Gr0Registers, gfsynr1), |_| Reg::Gfsynr1, Width::W32, Dir::Read),
    (offset_of!(Gr0Registers, tlbivmid), |_| Reg::Tlbivmid, Width::W32, Dir::Write),
    (offset_of!(Gr0Registers, tlbiallnsnh), |_| Reg::Tlbiallnsnh, Width::W32, Dir::Write),
    (offset_of!(Gr0Registers, tlbgsync), |_| Reg::Tlbgsync, Width::W32, Dir::Write),
    (offset_of!(Gr0Registers, tlbgstatus), |_| Reg::Tlbgstatus, Width::W32, Dir::Read),
];

const CB: &[Entry] = &[
    (offset_of!(ContextBankRegisters, sctlr), Reg::Sctlr, Width::W32, Dir::ReadWrite),
    (offset_of!(ContextBankRegisters, resume), Reg::Resume, Width::W32, Dir::Write),
    (offset_of!(ContextBankRegisters, tcr2), Reg::Tcr2, Width::W32, Dir::ReadWrite),
    (offset_of!(ContextBankRegisters, ttbr0), Reg::Ttbr0, Width::W64, Dir::ReadWrite),
    (offset_of!(ContextBankRegisters, tcr), Reg::Tcr, Width::W32, Dir::ReadWrite),
    (offset_of!(ContextBankRegisters, mair0), Reg::Mair0, Width::W32, Dir::ReadWrite),
    (offset_of!(ContextBankRegisters, mair1), Reg::Mair1, Width::W32, Dir::ReadWrite),
    (offset_of!(ContextBankRegisters, fsr), Reg::Fsr, Width::W32, Dir::ReadWrite),
    (offset_of!(ContextBankRegisters, far), Reg::Far, Width::W64, Dir::Read),
    (offset_of!(ContextBankRegisters, fsynr0), Reg::Fsynr0, Width::W32, Dir::Read),
    (offset_of!(ContextBankRegisters, tlbiva), Reg::Tlbiva, Width::W64Whole, Dir::Write),
    (offset_of!(ContextBankRegisters, tlbiasid), Reg::Tlbiasid, Width::W32, Dir::Write),
    (offset_of!(ContextBankRegisters, tlbiall), Reg::Tlbiall, Width::W32, Dir::Write),
    (offset_of!(ContextBankRegisters, tlbsync), Reg::Tlbsync, Width::W32, Dir::Write),
    (offset_of!(ContextBankRegisters, tlbstatus), Reg::Tlbstatus, Width::W32, Dir::Read),
];

/// Arrays of 32-bit registers: (first offset, entries, register, direction).
type Array = (usize, usize, fn(usize) -> Reg, Dir);

const GR0_ARRAYS: &[Array] = &[
    (offset_of!(Gr0Registers, smr), STREAM_MATCH_GROUPS, Reg::Smr, Dir::ReadWrite),
    (offset_of!(Gr0Registers, s2cr), STREAM_MATCH_GROUPS, Reg::S2cr, Dir::ReadWrite),
];

const GR1_ARRAYS: &[Array] = &[
    (offset_of!(Gr1Registers, cbar), CONTEXT_BANKS, Reg::Cbar, Dir::ReadWrite),
    (offset_of!(Gr1Registers, cbfrsynra), CONTEXT_BANKS, Reg::Cbfrsynra, Dir::Read),
    (offset_of!(Gr1Registers, cba2r), CONTEXT_BANKS, Reg::Cba2r, Dir::ReadWrite),
];

fn bytes(width: Width) -> usize {
    if width == Width::W32 { 4 } else { 8 }
}

/// The register covering `offset`, or `Unmapped`.
fn find(offset: u64) -> Result<Found, ModelError> {
    let unmapped = ModelError::Unmapped { offset };
    let off = usize::try_from(offset).map_err(|_| unmapped)?;
    if off >= size_of::<Smmu500Registers>() {
        return Err(unmapped);
    }
    let (page_base, in_page) = (off - off % PAGE_BYTES, off % PAGE_BYTES);
    let (entries, arrays, index): (&[Entry], &[Array], usize) = match page_base {
        0 => (GR0, GR0_ARRAYS, 0),
        p if p == offset_of!(Smmu500Registers, gr1) => (&[], GR1_ARRAYS, 0),
        p if p >= CONTEXT_BANK_BASE => (CB, &[], (p - CONTEXT_BANK_BASE) / PAGE_BYTES),
        _ => return Err(unmapped),
    };
    let found = |start: usize, reg: Reg, width, dir| Found { reg, base: (page_base + start) as u64, width, dir };
    for &(start, reg, width, dir) in entries {
        if (start..start + bytes(width)).contains(&in_page) {
            return Ok(found(start, reg(index), width, dir));
        }
    }
    for &(start, count, reg, dir) in arrays {
        if (start..start + 4 * count).contains(&in_page) {
            let i = (in_page - start) / 4;
            return Ok(found(start + 4 * i, reg(i), Width::W32, dir));
        }
    }
    Err(unmapped)
}

/// Which part of the register an access of `size` bytes at `offset` covers: the whole value,
/// or the low or high half of a 64-bit one.
fn part(f: &Found, offset: u64, size: usize) -> Result<Option<bool>, ModelError> {
    match (f.width, offset - f.base, size) {
        (_, 0, 8) if f.width != Width::W32 => Ok(None),
        (Width::W32, 0, 4) => Ok(None),
        (Width::W64, 0, 4) => Ok(Some(false)),
        (Width::W64, 4, 4) => Ok(Some(true)),
        _ => Err(ModelError::AccessSize { offset, size }),
    }
}

impl State {
    pub fn read_register(&mut self, offset: u64, size: usize) -> Result<u128, ModelError> {
        let f = find(offset)?;
        let half = part(&f, offset, size)?;
        if f.dir == Dir::Write {
            return Err(ModelError::WriteOnly { offset });
        }
        let value = self.read_reg(f.reg);
        Ok(u128::from(match half {
            None => value,
            Some(false) => value & 0xffff_ffff,
            Some(true) => value >> 32,
        }))
    }

    pub fn write_register(&mut self, offset: u64, size: usize, value: u128) -> Result<(), ModelError> {
        let f = find(offset)?;
        let half = part(&f, offset, size)?;
        if f.dir == Dir::Read {
            return Err(ModelError::ReadOnly { offset });
        }
        let value = match half {
            None => value as u64,
            Some(high) => {
                let old = self.read_reg(f.reg);
                let shift = if high { 32 } else { 0 };
                (old & !(0xffff_ffff << shift)) | ((value as u64 & 0xffff_ffff) << shift)
            }
        };
        self.write_reg(f.reg, f.base, value)
    }

    fn read_reg(&mut self, reg: Reg) -> u64 {
        u64::from(match reg {
            Reg::Scr0 => self.scr0,
            Reg::Idr0 => idr0(),
            Reg::Idr1 => idr1(),
            Reg::Idr2 => idr2(),
            Reg::Gfar => return self.gfar,
            Reg::Gfsr => self.gfsr,
            Reg::Gfsynr0 => self.gfsynr0,
            Reg::Gfsynr1 => self.gfsynr1,
            Reg::Tlbgstatus => {
                let busy = self.gsync_busy > 0;
                self.gsync_busy = self.gsync_busy.saturating_sub(1);
                TLBGSTATUS::GSACTIVE.val(u32::from(busy)).value
            }
            Reg::Smr(g) => self.smr[g],
            Reg::S2cr(g) => self.s2cr[g],
            Reg::Cbar(b) => self.banks[b].cbar,
            Reg::Cbfrsynra(b) => self.banks[b].cbfrsynra,
            Reg::Cba2r(b) => self.banks[b].cba2r,
            Reg::Sctlr(b) => self.banks[b].sctlr,
            Reg::Tcr2(b) => self.banks[b].tcr2,
            Reg::Ttbr0(b) => return self.banks[b].ttbr0,
            Reg::Tcr(b) => self.banks[b].tcr,
            Reg::Mair0(b) => self.banks[b].mair0,
            Reg::Mair1(b) => self.banks[b].mair1,
            Reg::Fsr(b) => self.fsr(b),
            Reg::Far(b) => return self.banks[b].far,
            Reg::Fsynr0(b) => self.banks[b].fsynr0,
            Reg::Tlbstatus(b) => {
                let bank = &mut self.banks[b];
                let busy = bank.sync_busy > 0;
                bank.sync_busy = bank.sync_busy.saturating_sub(1);
                TLBSTATUS::SACTIVE.val(u32::from(busy)).value
            }
            // Write-only registers are refused before this.
            Reg::Tlbivmid
            | Reg::Tlbiallnsnh
            | Reg::Tlbgsync
            | Reg::Resume(_)
            | Reg::Tlbiva(_)
            | Reg::Tlbiasid(_)
            | Reg::Tlbiall(_)
            | Reg::Tlbsync(_) => 0,
        })
    }

    fn write_reg(&mut self, reg: Reg, offset: u64, value: u64) -> Result<(), ModelError> {
        let v32 = value as u32;
        match reg {
            Reg::Scr0 => {
                self.scr0 = v32 & !SCR0::STALLD::SET.value;
                if LocalRegisterCopy::<u32, SCR0::Register>::new(v32).is_set(SCR0::CLIENTPD) {
                    self.terminate_held(None);
                }
            }
            Reg::Gfar => self.gfar = value,
            Reg::Gfsr => self.gfsr &= !v32,
            Reg::Tlbivmid => {
                let vmid = LocalRegisterCopy::<u32, TLBIVMID::Register>::new(v32).read(TLBIVMID::VMID) as u16;
                self.global_pending.push(GlobalInvalidation::Vmid(vmid));
            }
            Reg::Tlbiallnsnh => self.global_pending.push(GlobalInvalidation::All),
            Reg::Tlbgsync => self.sync_global(),
            Reg::Smr(g) => self.smr[g] = v32,
            Reg::S2cr(g) => self.s2cr[g] = v32,
            Reg::Cbar(b) => self.banks[b].cbar = v32,
            Reg::Cba2r(b) => self.banks[b].cba2r = v32,
            Reg::Sctlr(b) => self.write_sctlr(b, offset, v32)?,
            Reg::Resume(b) => {
                let tnr = LocalRegisterCopy::<u32, RESUME::Register>::new(v32).read_as_enum(RESUME::TNR);
                self.resume(b, tnr == Some(RESUME::TNR::Value::Retry));
                self.release_if_clear(b);
            }
            Reg::Tcr2(b) => self.banks[b].tcr2 = v32,
            Reg::Ttbr0(b) => self.banks[b].ttbr0 = value,
            Reg::Tcr(b) => self.banks[b].tcr = v32,
            Reg::Mair0(b) => self.banks[b].mair0 = v32,
            Reg::Mair1(b) => self.banks[b].mair1 = v32,
            Reg::Fsr(b) => {
                self.banks[b].fsr &= !(v32 & FSR_RECORD);
                self.release_if_clear(b);
            }
            Reg::Tlbiva(b) => {
                let v = LocalRegisterCopy::<u64, TLBIVA::Register>::new(value);
                let page = v.read(TLBIVA::PAGE);
                let asid = self.tlbi_asid(b, v.read(TLBIVA::ASID) as u16);
                self.banks[b].pending.push(Invalidation::Va { page, asid });
            }
            Reg::Tlbiasid(b) => {
                let asid = LocalRegisterCopy::<u32, TLBIASID::Register>::new(v32).read(TLBIASID::ASID) as u16;
                let asid = self.tlbi_asid(b, asid);
                self.banks[b].pending.push(Invalidation::Asid(asid));
            }
            Reg::Tlbiall(b) => self.banks[b].pending.push(Invalidation::All),
            Reg::Tlbsync(b) => self.sync_bank(b),
            // Read-only registers are refused before this.
            Reg::Idr0
            | Reg::Idr1
            | Reg::Idr2
            | Reg::Gfsynr0
            | Reg::Gfsynr1
            | Reg::Tlbgstatus
            | Reg::Cbfrsynra(_)
            | Reg::Far(_)
            | Reg::Fsynr0(_)
            | Reg::Tlbstatus(_) => return Err(ModelError::ReadOnly { offset }),
        }
        Ok(())
    }

    /// An ASID as a TLBI names it, cut to the bank's ASID width.
    fn tlbi_asid(&self, bank: usize, asid: u16) -> u16 {
        let wide = LocalRegisterCopy::<u32, hal::smmu500::regs::TCR2::Register>::new(self.banks[bank].tcr2)
            .is_set(hal::smmu500::regs::TCR2::AS);
        if wide { asid } else { asid & 0xff }
    }

    /// SCTLR: enabling is refused unless the bank is set up as the model translates; turning
    /// the bank off or changing its fault mode ends what it holds.
    fn write_sctlr(&mut self, bank: usize, offset: u64, value: u32) -> Result<(), ModelError> {
        let new = LocalRegisterCopy::<u32, SCTLR::Register>::new(value);
        let b = &self.banks[bank];
        if new.is_set(SCTLR::M) && (!b.supported() || !new.is_set(SCTLR::CFRE)) {
            return Err(ModelError::Unsupported { offset });
        }
        let old = LocalRegisterCopy::<u32, SCTLR::Register>::new(b.sctlr);
        if !new.is_set(SCTLR::M) || new.read(SCTLR::CFCFG) != old.read(SCTLR::CFCFG) {
            self.terminate_held(Some(bank));
        }
        self.banks[bank].sctlr = value;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_zynqmp_id_values() {
        assert_eq!((idr0(), idr1(), idr2()), (0xfc01_3e30, 0x3000_0f10, 0x5555));
    }

    #[test]
    fn offsets_decode_to_registers() {
        let at = |o: u64| find(o).map(|f| (f.reg, f.base));
        assert_eq!(at(0x0), Ok((Reg::Scr0, 0)));
        assert_eq!(at(0x44), Ok((Reg::Gfar, 0x40)), "high half");
        assert_eq!(at(0x8bc), Ok((Reg::Smr(47), 0x8bc)));
        assert_eq!(at(0xc04), Ok((Reg::S2cr(1), 0xc04)));
        assert_eq!(at(0x143c), Ok((Reg::Cbfrsynra(15), 0x143c)));
        assert_eq!(at(0x1f7f4), Ok((Reg::Tlbstatus(15), 0x1f7f4)));
        assert_eq!(at(0x10604), Ok((Reg::Tlbiva(0), 0x10600)));
        for unmapped in [0x4, 0x8c0, 0xcc0, 0x1040, 0x2000, 0xf000, 0x10004, 0x10800, 0x20000, u64::MAX] {
            assert_eq!(at(unmapped), Err(ModelError::Unmapped { offset: unmapped }), "{unmapped:#x}");
        }
    }
}
