//! The A53's interrupted context as the exception vectors save it (`a53::vectors`, whose
//! assembly fixes the layout). Plain data, so that code which only reads and writes a frame
//! (the kernel's process table, its system calls) builds and is tested on the host too.

/// The interrupted context, as saved by the vectors (layout fixed by the assembly).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ExceptionFrame {
    /// x0..x30.
    pub x: [u64; 31],
    pub sp_el0: u64,
    pub elr: u64,
    pub spsr: u64,
    /// q0..q31 (the full 128-bit SIMD&FP registers).
    pub q: [u128; 32],
    pub fpcr: u64,
    pub fpsr: u64,
    /// The EL0 thread pointer (a C library keeps its thread-local storage behind it). Part of
    /// the frame so that it stays with the process the frame belongs to: a process that sets it
    /// finds it again after any switch, and a new process starts with 0.
    pub tpidr_el0: u64,
}
