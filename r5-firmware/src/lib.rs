//! The R5 firmware's logic, host-testable. The image (`src/main.rs`) wires it to the shared
//! rings, the trace ring and the board.
#![cfg_attr(not(test), no_std)]

pub mod clock;
pub mod idle;
pub mod once;
pub mod rdma;
pub mod service;

#[cfg(target_arch = "arm")]
pub mod arch;
#[cfg(target_arch = "arm")]
pub mod forward;
#[cfg(target_arch = "arm")]
pub mod pldma;
#[cfg(target_arch = "arm")]
pub mod pmu;
#[cfg(target_arch = "arm")]
pub mod probe;
#[cfg(target_arch = "arm")]
pub mod sleep;
#[cfg(target_arch = "arm")]
pub mod trace;

/// Stops the firmware for good (after a fatal report).
#[cfg(target_arch = "arm")]
pub fn halt() -> ! {
    loop {
        aarch32_cpu::asm::wfi();
    }
}

/// The board this firmware is built for.
pub type Board = board::Selected;

/// Reported to the A53 in the ready message: major << 16 | minor << 8 | patch.
pub const VERSION: u32 = 0x00_01_00;
