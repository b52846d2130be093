//! What the fault handlers and the process subsystem see of an exception, and what they answer:
//! plain data, shared by the dispatcher (`exception::dispatch`) and the handlers.

use super::esr::Esr;
use boot::frame::ExceptionFrame;

/// What the process subsystem does with exceptions from EL0 (`set_user_entry`).
pub struct UserEntry {
    /// An SVC: the system call, then the way back to EL0 (another process may run first).
    pub syscall: fn(&mut ExceptionFrame),
    /// Back to EL0 after an interrupt or a resolved fault (another process may run first).
    pub resume: fn(&mut ExceptionFrame),
    /// A fault nobody resolved (reported already): the process ends.
    pub killed: fn(&mut ExceptionFrame, &Fault),
}

/// A synchronous exception, as a fault handler sees it.
#[derive(Clone, Copy, Debug)]
pub struct Fault {
    pub esr: Esr,
    pub far: u64,
    pub elr: u64,
    pub from_user: bool,
}

/// A fault handler's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolution {
    /// The handler fixed the cause (and adjusted the frame): resume.
    Resume,
    /// Not this handler's business.
    NotMine,
    /// The handler recognised the fault but could not resolve it; the note says why and goes
    /// into the report (or to `catch_fault`'s caller).
    Failed(FaultNote),
}

/// Why a handler could not resolve a fault it recognised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultNote {
    pub what: &'static str,
    pub addr: u64,
}

pub type FaultHandler = fn(&mut ExceptionFrame, &Fault) -> Resolution;
