//! Fakes shared by the integration tests.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};

use mmio_trap::{Bus, BusError, Kind, Size, a32, a64};

/// A64 register file: X0..X30, SP, V0..V31.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct A64Regs {
    pub x: [u64; 31],
    pub sp: u64,
    pub v: [u128; 32],
}

impl A64Regs {
    /// Registers filled with distinctive garbage so untouched bits show.
    pub fn new() -> Self {
        let mut r = A64Regs { x: [0; 31], sp: 0x8000_0000, v: [0; 32] };
        for i in 0..31 {
            r.x[i] = 0xdead_0000_0000_0000 | (i as u64) << 8;
        }
        for i in 0..32 {
            r.v[i] = u128::from_le_bytes([0xee; 16]) ^ i as u128;
        }
        r
    }
}

impl a64::RegisterFile for A64Regs {
    fn x(&self, n: u8) -> u64 {
        assert!(n < 31, "x({n})");
        self.x[n as usize]
    }
    fn set_x(&mut self, n: u8, value: u64) {
        assert!(n < 31, "set_x({n})");
        self.x[n as usize] = value;
    }
    fn sp(&self) -> u64 {
        self.sp
    }
    fn set_sp(&mut self, value: u64) {
        self.sp = value;
    }
    fn v(&self, n: u8) -> u128 {
        self.v[n as usize]
    }
    fn set_v(&mut self, n: u8, value: u128) {
        self.v[n as usize] = value;
    }
}

/// A32 register file: r0..r14 and CPSR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct A32Regs {
    pub r: [u32; 15],
    pub cpsr: u32,
}

/// CPSR for user mode, ARM state, little-endian, flags clear.
pub const CPSR_USR: u32 = 0x10;
pub const N: u32 = 1 << 31;
pub const Z: u32 = 1 << 30;
pub const C: u32 = 1 << 29;
pub const V: u32 = 1 << 28;

impl A32Regs {
    pub fn new() -> Self {
        let mut r = A32Regs { r: [0; 15], cpsr: CPSR_USR };
        for i in 0..15 {
            r.r[i] = 0xdead_0000 | (i as u32) << 4;
        }
        r
    }
}

impl a32::RegisterFile for A32Regs {
    fn r(&self, n: u8) -> u32 {
        assert!(n < 15, "r({n})");
        self.r[n as usize]
    }
    fn set_r(&mut self, n: u8, value: u32) {
        assert!(n < 15, "set_r({n})");
        self.r[n as usize] = value;
    }
    fn cpsr(&self) -> u32 {
        self.cpsr
    }
}

/// Byte-addressed little-endian memory that logs accesses and can be told to
/// fail at given addresses.
#[derive(Debug, Default, Clone)]
pub struct FakeBus {
    pub mem: BTreeMap<u64, u8>,
    pub log: Vec<(Kind, u64, Size, u128)>,
    pub fail: BTreeSet<u64>,
}

impl FakeBus {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn poke(&mut self, addr: u64, size: Size, value: u128) {
        for i in 0..size.bytes() {
            self.mem.insert(addr.wrapping_add(i as u64), (value >> (8 * i)) as u8);
        }
    }

    pub fn peek(&self, addr: u64, size: Size) -> u128 {
        (0..size.bytes()).fold(0u128, |acc, i| {
            let b = self.mem.get(&addr.wrapping_add(i as u64)).copied().unwrap_or(0);
            acc | u128::from(b) << (8 * i)
        })
    }

    pub fn failing_at(mut self, addr: u64) -> Self {
        self.fail.insert(addr);
        self
    }
}

impl Bus for FakeBus {
    fn read(&mut self, addr: u64, size: Size) -> Result<u128, BusError> {
        if self.fail.contains(&addr) {
            return Err(BusError::Timeout);
        }
        let v = self.peek(addr, size);
        self.log.push((Kind::Load, addr, size, v));
        // Return garbage above the access size: emulate must mask it.
        Ok(v | !size.mask() & 0x5555_5555_5555_5555_5555_5555_5555_5555)
    }

    fn write(&mut self, addr: u64, size: Size, value: u128) -> Result<(), BusError> {
        assert_eq!(value & !size.mask(), 0, "bits above the access size");
        if self.fail.contains(&addr) {
            return Err(BusError::Unmapped);
        }
        self.log.push((Kind::Store, addr, size, value));
        self.poke(addr, size, value);
        Ok(())
    }
}

/// Normalises assembler text for comparison: LLVM prints the unscaled
/// encodings as LDUR/STUR and writes an explicit `lsl #0` / `uxtw #0` for
/// byte register offsets with S = 1; the library's rendering does neither.
pub fn norm_asm(s: &str) -> String {
    let s = s
        .replace(", lsl #0]", "]")
        .replace("uxtw #0]", "uxtw]")
        .replace("sxtw #0]", "sxtw]")
        .replace("sxtx #0]", "sxtx]");
    let (mn, rest) = s.split_once(' ').unwrap_or((&s, ""));
    let mn = if let Some(t) = mn.strip_prefix("ldur") {
        format!("ldr{t}")
    } else if let Some(t) = mn.strip_prefix("stur") {
        format!("str{t}")
    } else {
        mn.to_string()
    };
    format!("{mn} {rest}")
}
