//! A64 (AArch64) loads and stores.
//!
//! Supported encoding classes (ARM DDI 0487, C4.1.4 "Loads and Stores"):
//!
//! * Load/store register (unsigned immediate), (unscaled immediate),
//!   (immediate pre-indexed), (immediate post-indexed), (register offset):
//!   STRB/LDRB/LDRSB, STRH/LDRH/LDRSH, STR/LDR (W, X), LDRSW, and the
//!   SIMD&FP STR/LDR of B/H/S/D/Q, including the STUR/LDUR family.
//! * Load/store register pair (offset), (pre-indexed), (post-indexed) and
//!   load/store no-allocate pair (offset): STP/LDP (W, X, S, D, Q), LDPSW,
//!   STNP/LDNP.
//! * Load/store ordered: LDAR/STLR (B, H, W, X); atomic memory operations
//!   class: LDAPR (B, H, W, X).

mod decode;
mod emulate;
mod fmt;

pub use decode::decode;
pub use emulate::{emulate, execute};

use crate::types::{Addressing, Kind, Size, Transfer};

/// Width of the general-purpose register view used by a transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Width {
    /// 32-bit `Wn`: loads zero-extend the 32-bit result into `Xn`.
    W,
    /// 64-bit `Xn`.
    X,
}

/// Register file a transfer register number refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RegClass {
    /// General-purpose registers; register 31 is XZR/WZR.
    Gpr {
        /// Register view (W or X) named by the instruction.
        width: Width,
        /// Loads sign-extend the memory value to `width` (LDRSB, LDRSH,
        /// LDRSW, LDPSW). Always `false` for stores.
        signed: bool,
    },
    /// SIMD&FP registers V0..V31. Loads of less than 128 bits zero the
    /// upper bits of the V register.
    Simd,
}

/// Register-offset extension (the `option` field).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Extend {
    /// `option = 010`: `UXTW`, zero-extend `Wm`.
    Uxtw,
    /// `option = 011`: `LSL` (a.k.a. `UXTX`), use `Xm`.
    Lsl,
    /// `option = 110`: `SXTW`, sign-extend `Wm`.
    Sxtw,
    /// `option = 111`: `SXTX`, use `Xm`.
    Sxtx,
}

/// Offset added to the base register.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Offset {
    /// Immediate byte offset, already scaled.
    Imm(i64),
    /// `extend(Rm) << shift`. Rm = 31 is XZR.
    Reg {
        /// Offset register number.
        rm: u8,
        /// How Rm is extended.
        extend: Extend,
        /// Left shift applied after extension (0 or log2 of the access size).
        shift: u8,
    },
}

/// Memory-ordering or cache-hint semantics; informational.
///
/// The emulated bus access is the same for all of them: it completes
/// synchronously inside the abort handler, before the exception return, so
/// the interrupted context observes it in program order. A [`Bus`] that
/// forwards through shared memory must issue whatever barriers its transport
/// needs (for example a `DMB` before forwarding a store-release).
///
/// [`Bus`]: crate::Bus
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemOrder {
    /// Plain LDR/STR/LDP/STP.
    Plain,
    /// LDNP/STNP non-temporal hint.
    NonTemporal,
    /// LDAR (load-acquire, RCsc).
    Acquire,
    /// LDAPR (load-acquire, RCpc).
    AcquirePc,
    /// STLR (store-release).
    Release,
}

/// A decoded A64 load or store.
///
/// Values returned by [`decode`] satisfy: register numbers are `0..=31`;
/// `rn == 31` means SP; a `Transfer::Pair` load has `rt != rt2`; write-back
/// never targets a general-purpose transfer register; `size` is `B16` only
/// for [`RegClass::Simd`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Access {
    /// Load or store.
    pub kind: Kind,
    /// Register file of the transfer register(s) and, for GPRs, how loads
    /// extend.
    pub class: RegClass,
    /// Size of each register's memory access.
    pub size: Size,
    /// Transfer register(s).
    pub transfer: Transfer,
    /// Base register; 31 is SP.
    pub rn: u8,
    /// Offset from the base register.
    pub offset: Offset,
    /// Offset, pre-index or post-index.
    pub addressing: Addressing,
    /// Ordering / hint semantics.
    pub order: MemOrder,
}

/// Selects what register number 31 means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reg31 {
    /// The stack pointer (base registers).
    Sp,
    /// The zero register XZR/WZR (transfer and offset registers).
    Zr,
}

/// The interrupted context's registers, as saved by the exception entry.
///
/// The required methods never see register number 31: the provided methods
/// map it to [`sp`](Self::sp) / [`set_sp`](Self::set_sp) or to the zero
/// register. Which stack pointer (SP_EL0 or SP_ELx) is "the" SP of the
/// interrupted context (SPSR.M / SPSel) is the implementor's business.
pub trait RegisterFile {
    /// Reads `Xn`, `n` in `0..=30`.
    fn x(&self, n: u8) -> u64;
    /// Writes `Xn`, `n` in `0..=30`.
    fn set_x(&mut self, n: u8, value: u64);
    /// Reads the stack pointer of the interrupted context.
    fn sp(&self) -> u64;
    /// Writes the stack pointer of the interrupted context.
    fn set_sp(&mut self, value: u64);
    /// Reads the 128-bit SIMD&FP register `Vn`, `n` in `0..=31`.
    fn v(&self, n: u8) -> u128;
    /// Writes the full 128-bit SIMD&FP register `Vn`, `n` in `0..=31`.
    fn set_v(&mut self, n: u8, value: u128);

    /// Reads general register `n` (`0..=31`), with 31 meaning `r31`.
    fn gpr(&self, n: u8, r31: Reg31) -> u64 {
        match (n, r31) {
            (31, Reg31::Sp) => self.sp(),
            (31, Reg31::Zr) => 0,
            _ => self.x(n),
        }
    }

    /// Writes general register `n` (`0..=31`), with 31 meaning `r31` (writes
    /// to the zero register are discarded).
    fn set_gpr(&mut self, n: u8, r31: Reg31, value: u64) {
        match (n, r31) {
            (31, Reg31::Sp) => self.set_sp(value),
            (31, Reg31::Zr) => {}
            _ => self.set_x(n, value),
        }
    }

    /// Scalar SIMD&FP write of `size`: the low `size` bytes of `value` go to
    /// `Vn` and the rest of the 128-bit register is zeroed (ARM DDI 0487,
    /// "V[] - assignment form" used by LDR (SIMD&FP)).
    fn set_v_scalar(&mut self, n: u8, size: Size, value: u128) {
        self.set_v(n, value & size.mask());
    }
}
