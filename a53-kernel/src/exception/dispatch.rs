//! What the kernel does with an exception: IRQs go to the interrupt dispatcher; synchronous
//! exceptions go through the registered fault handlers, any of which may resolve the fault
//! (emulate the access, map the page, skip the instruction) and resume; an exception nobody
//! resolves is reported with its class, ESR, FAR, ELR and all registers, and stops the kernel.
//! Exceptions from EL0 go to the process subsystem through the [`UserEntry`] it registered:
//! system calls, and the scheduler's chance to switch on the way back to EL0.

use super::fault::{Fault, FaultHandler, FaultNote, Resolution, UserEntry};
use crate::arch::cpu;
use crate::exception::esr::{Esr, ExceptionClass};
use crate::hooks::{AlreadySet, Hook};
use aarch64_cpu::registers::{ESR_EL1, FAR_EL1, Readable};
use boot::a53::{ExceptionFrame, ExceptionKind, ExceptionSource, ExceptionType};
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

static USER_ENTRY: Hook<UserEntry> = Hook::new();

/// Says who takes EL0's exceptions (boot, once, before any process runs).
pub fn set_user_entry(entry: UserEntry) -> Result<(), AlreadySet> {
    USER_ENTRY.set(entry)
}

const MAX_FAULT_HANDLERS: usize = 4;
/// The registered handlers in registration order, as addresses (0: free). Read without a lock
/// on every exception (a forwarded access is one), written only by [`register_fault_handler`].
static FAULT_HANDLERS: [AtomicUsize; MAX_FAULT_HANDLERS] = [const { AtomicUsize::new(0) }; MAX_FAULT_HANDLERS];

/// Adds a handler that is offered every synchronous exception not caught by [`catch_fault`].
pub fn register_fault_handler(handler: FaultHandler) -> Result<(), FaultHandler> {
    let taken = FAULT_HANDLERS
        .iter()
        .any(|slot| slot.compare_exchange(0, handler as usize, Ordering::AcqRel, Ordering::Acquire).is_ok());
    if taken { Ok(()) } else { Err(handler) }
}

/// The registered handlers, in registration order.
fn fault_handlers() -> impl Iterator<Item = FaultHandler> {
    FAULT_HANDLERS.iter().map(|slot| slot.load(Ordering::Acquire)).take_while(|&raw| raw != 0).map(|raw| {
        // SAFETY: a nonzero entry was stored by `register_fault_handler` from a `FaultHandler`,
        // and entries are never changed once set.
        unsafe { core::mem::transmute::<usize, FaultHandler>(raw) }
    })
}

/// A fault recorded by [`catch_fault`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CaughtFault {
    pub esr: Esr,
    pub far: u64,
    pub elr: u64,
    /// What a fault handler said about it, if one recognised it.
    pub note: Option<FaultNote>,
}

struct Catcher {
    armed: AtomicBool,
    caught: spin::Mutex<Option<CaughtFault>>,
}

static CATCHERS: [Catcher; 4] =
    [const { Catcher { armed: AtomicBool::new(false), caught: spin::Mutex::new(None) } }; 4];

/// Runs `f`; if it takes a synchronous exception at EL1, the exception is recorded, the
/// faulting instruction is skipped and `f` continues. Returns the first fault, if any.
/// Used to probe addresses and by the exception tests.
pub fn catch_fault<R>(f: impl FnOnce() -> R) -> (R, Option<CaughtFault>) {
    let catcher = &CATCHERS[cpu::core_id()];
    *catcher.caught.lock() = None;
    catcher.armed.store(true, Ordering::SeqCst);
    let r = f();
    catcher.armed.store(false, Ordering::SeqCst);
    let caught = catcher.caught.lock().take();
    (r, caught)
}

fn try_catch(frame: &mut ExceptionFrame, fault: &Fault, note: Option<FaultNote>) -> bool {
    let catcher = &CATCHERS[cpu::core_id()];
    if fault.from_user || !catcher.armed.load(Ordering::SeqCst) {
        return false;
    }
    catcher.caught.lock().get_or_insert(CaughtFault { esr: fault.esr, far: fault.far, elr: fault.elr, note });
    frame.elr += 4;
    true
}

#[unsafe(no_mangle)]
extern "C" fn kernel_exception(frame: &mut ExceptionFrame, kind: ExceptionKind) {
    match (kind.source(), kind.class()) {
        (ExceptionSource::CurrentElSpx, ExceptionType::Irq) => crate::irq::dispatch(),
        (ExceptionSource::LowerElAarch64, ExceptionType::Irq) => {
            crate::irq::dispatch();
            if let Some(user) = USER_ENTRY.get() {
                (user.resume)(frame);
            }
        }
        (ExceptionSource::CurrentElSpx | ExceptionSource::LowerElAarch64, ExceptionType::Synchronous) => {
            let fault = Fault {
                esr: Esr(ESR_EL1.get()),
                far: FAR_EL1.get(),
                elr: frame.elr,
                from_user: kind.source() == ExceptionSource::LowerElAarch64,
            };
            let user = USER_ENTRY.get().filter(|_| fault.from_user);
            if let Some(user) = user
                && fault.esr.class() == ExceptionClass::Svc64
            {
                return (user.syscall)(frame);
            }
            let mut note = None;
            for handler in fault_handlers() {
                match handler(frame, &fault) {
                    Resolution::Resume => {
                        if let Some(user) = user {
                            (user.resume)(frame);
                        }
                        return;
                    }
                    Resolution::Failed(n) => note = Some(n),
                    Resolution::NotMine => {}
                }
            }
            if let Some(user) = user {
                return kill_process(frame, user, &fault, note);
            }
            if try_catch(frame, &fault, note) {
                return;
            }
            fatal(frame, kind, Some(&fault), note);
        }
        _ => fatal(frame, kind, None, None),
    }
}

/// A process took an exception nobody resolved: report it and end the process (never the
/// kernel).
fn kill_process(frame: &mut ExceptionFrame, user: &UserEntry, fault: &Fault, note: Option<FaultNote>) {
    defmt::warn!(
        "process killed: {=str} at ELR {=u64:#x}, FAR {=u64:#x}, ESR {=u64:#x}",
        fault.esr.class().name(),
        fault.elr,
        fault.far,
        fault.esr.0
    );
    if let Some(n) = note {
        defmt::warn!("  {=str} at {=u64:#x}", n.what, n.addr);
    }
    (user.killed)(frame, fault);
}

/// Reports an exception nobody resolved and stops the kernel.
pub fn fatal(frame: &ExceptionFrame, kind: ExceptionKind, fault: Option<&Fault>, note: Option<FaultNote>) -> ! {
    crate::console::enter_panic();
    let core = cpu::core_id();
    match fault {
        Some(f) if f.esr.is_abort() => defmt::error!(
            "core {=usize}: unhandled {=str} ({}) at ELR {=u64:#x}, FAR {=u64:#x}, ESR {=u64:#x}",
            core,
            f.esr.class().name(),
            defmt::Display2Format(&f.esr.fault_status()),
            f.elr,
            f.far,
            f.esr.0
        ),
        Some(f) => defmt::error!(
            "core {=usize}: unhandled {=str} at ELR {=u64:#x}, ESR {=u64:#x} (EC {=u8:#x})",
            core,
            f.esr.class().name(),
            f.elr,
            f.esr.0,
            f.esr.ec()
        ),
        None => defmt::error!(
            "core {=usize}: unexpected {=?} exception from {=?} at ELR {=u64:#x}",
            core,
            defmt::Debug2Format(&kind.class()),
            defmt::Debug2Format(&kind.source()),
            frame.elr
        ),
    }
    if let Some(n) = note {
        defmt::error!("  {=str} at {=u64:#x}", n.what, n.addr);
    }
    report_registers(frame);
    let class = fault.map(|f| f.esr.class()).unwrap_or(ExceptionClass::Unknown);
    crate::stop::stop(crate::stop::Stop::Exception(class))
}

pub fn report_registers(frame: &ExceptionFrame) {
    for i in (0..28).step_by(4) {
        defmt::error!(
            "  x{=usize:02} {=u64:016x}  x{=usize:02} {=u64:016x}  x{=usize:02} {=u64:016x}  x{=usize:02} {=u64:016x}",
            i,
            frame.x[i],
            i + 1,
            frame.x[i + 1],
            i + 2,
            frame.x[i + 2],
            i + 3,
            frame.x[i + 3]
        );
    }
    defmt::error!(
        "  x28 {=u64:016x}  x29 {=u64:016x}  x30 {=u64:016x}  sp_el0 {=u64:016x}",
        frame.x[28],
        frame.x[29],
        frame.x[30],
        frame.sp_el0
    );
    defmt::error!("  elr {=u64:016x}  spsr {=u64:08x}", frame.elr, frame.spsr);
}
