//! What the kernel does with an exception: IRQs go to the interrupt dispatcher; synchronous
//! exceptions go through the registered fault handlers, any of which may resolve the fault
//! (emulate the access, map the page, skip the instruction) and resume; an exception nobody
//! resolves is reported with its class, ESR, FAR, ELR and all registers, and stops the kernel.

use crate::arch::cpu;
use crate::esr::{Esr, ExceptionClass};
use aarch64_cpu::registers::{ESR_EL1, FAR_EL1, Readable};
use boot::a53::{ExceptionFrame, ExceptionKind, ExceptionSource, ExceptionType};
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

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
}

pub type FaultHandler = fn(&mut ExceptionFrame, &Fault) -> Resolution;

const MAX_FAULT_HANDLERS: usize = 4;
static FAULT_HANDLERS: spin::RwLock<heapless::Vec<FaultHandler, MAX_FAULT_HANDLERS>> =
    spin::RwLock::new(heapless::Vec::new());

/// Adds a handler that is offered every synchronous exception not caught by [`catch_fault`].
pub fn register_fault_handler(handler: FaultHandler) -> Result<(), FaultHandler> {
    FAULT_HANDLERS.write().push(handler)
}

/// A fault recorded by [`catch_fault`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CaughtFault {
    pub esr: Esr,
    pub far: u64,
    pub elr: u64,
}

struct Catcher {
    armed: AtomicBool,
    esr: AtomicU64,
    far: AtomicU64,
    elr: AtomicU64,
    caught: AtomicBool,
}

static CATCHERS: [Catcher; 4] = [const {
    Catcher {
        armed: AtomicBool::new(false),
        esr: AtomicU64::new(0),
        far: AtomicU64::new(0),
        elr: AtomicU64::new(0),
        caught: AtomicBool::new(false),
    }
}; 4];

/// Runs `f`; if it takes a synchronous exception at EL1, the exception is recorded, the
/// faulting instruction is skipped and `f` continues. Returns the first fault, if any.
/// Used to probe addresses and by the exception tests.
pub fn catch_fault<R>(f: impl FnOnce() -> R) -> (R, Option<CaughtFault>) {
    let catcher = &CATCHERS[cpu::core_id()];
    catcher.caught.store(false, Ordering::Relaxed);
    catcher.armed.store(true, Ordering::SeqCst);
    let r = f();
    catcher.armed.store(false, Ordering::SeqCst);
    let caught = catcher.caught.load(Ordering::SeqCst).then(|| CaughtFault {
        esr: Esr(catcher.esr.load(Ordering::Relaxed)),
        far: catcher.far.load(Ordering::Relaxed),
        elr: catcher.elr.load(Ordering::Relaxed),
    });
    (r, caught)
}

fn try_catch(frame: &mut ExceptionFrame, fault: &Fault) -> Resolution {
    let catcher = &CATCHERS[cpu::core_id()];
    if fault.from_user || !catcher.armed.load(Ordering::SeqCst) {
        return Resolution::NotMine;
    }
    if !catcher.caught.swap(true, Ordering::SeqCst) {
        catcher.esr.store(fault.esr.0, Ordering::Relaxed);
        catcher.far.store(fault.far, Ordering::Relaxed);
        catcher.elr.store(fault.elr, Ordering::Relaxed);
    }
    frame.elr += 4;
    Resolution::Resume
}

#[unsafe(no_mangle)]
extern "C" fn kernel_exception(frame: &mut ExceptionFrame, kind: ExceptionKind) {
    match (kind.source(), kind.class()) {
        (ExceptionSource::CurrentElSpx | ExceptionSource::LowerElAarch64, ExceptionType::Irq) => {
            crate::irq::dispatch();
        }
        (ExceptionSource::CurrentElSpx | ExceptionSource::LowerElAarch64, ExceptionType::Synchronous) => {
            let fault = Fault {
                esr: Esr(ESR_EL1.get()),
                far: FAR_EL1.get(),
                elr: frame.elr,
                from_user: kind.source() == ExceptionSource::LowerElAarch64,
            };
            if try_catch(frame, &fault) == Resolution::Resume {
                return;
            }
            let handlers = FAULT_HANDLERS.read().clone();
            for handler in &handlers {
                if handler(frame, &fault) == Resolution::Resume {
                    return;
                }
            }
            fatal(frame, kind, Some(&fault));
        }
        _ => fatal(frame, kind, None),
    }
}

/// Reports an exception nobody resolved and stops the kernel.
pub fn fatal(frame: &ExceptionFrame, kind: ExceptionKind, fault: Option<&Fault>) -> ! {
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
    report_registers(frame);
    let class = fault.map(|f| f.esr.class()).unwrap_or(ExceptionClass::Unknown);
    crate::kernel::stop(crate::kernel::Stop::Exception(class))
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
