//! Ending a run: why ([`Stop`], the exit status a test runner reads) and how ([`stop`]: the
//! board's way). Below every subsystem: the cluster's end of run, the exception handlers and the
//! panic handler all end here.

use crate::arch::{cpu, semihosting};
use crate::console;
use crate::exception::esr::ExceptionClass;
use board::Exit;

/// Why a run ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    Success,
    Failure,
    Panic,
    Exception(ExceptionClass),
}

impl Stop {
    pub fn status(self) -> u32 {
        match self {
            Stop::Success => 0,
            Stop::Failure => 1,
            Stop::Panic => 101,
            Stop::Exception(_) => 102,
        }
    }
}

/// Ends the run the board's way: semihosting exit on QEMU, parked cores on hardware.
pub fn stop(reason: Stop) -> ! {
    console::flush();
    match <crate::Board as board::Board>::EXIT {
        Exit::Semihosting => semihosting::exit(reason.status()),
        Exit::Park => cpu::park(),
    }
}
