//! The runtime of a program: the entry macro and the panic handler (`_start` itself, in
//! assembly, is in `arch`).
//!
//! The kernel loads the image, sets SP to `layout::STACK_TOP` and enters `_start` at EL0 with
//! x0 = 0. `_start` zeroes `.bss` (the loader zeroes it too; this keeps the program correct
//! whatever the loader does), then calls the `__unimem_main` that [`entry!`](crate::entry)
//! generates, which runs `main` and ends the process with its exit status.
//!
//! Feature `runtime` brings the panic handler alone, for images whose entry is not ours (a C
//! program linking the C library `a53-kernel/user/c`); feature `image` adds `_start`.

use crate::error::Error;

/// The exit status of a process that panicked (the panic message is logged first).
pub const PANIC_STATUS: u64 = 101;

/// What `main` may return: its value is the process's exit status.
pub trait Termination {
    fn exit_status(self) -> u64;
}

impl Termination for u64 {
    fn exit_status(self) -> u64 {
        self
    }
}

impl Termination for () {
    fn exit_status(self) -> u64 {
        0
    }
}

/// `Ok(v)`: `v`'s status; `Err(e)`: the error is logged and the status is
/// [`Error::exit_status`].
impl<T: Termination> Termination for Result<T, Error> {
    fn exit_status(self) -> u64 {
        match self {
            Ok(v) => v.exit_status(),
            Err(e) => {
                crate::log!("failed: {:?} (exit status {:#x})", e, e.exit_status());
                e.exit_status()
            }
        }
    }
}

/// An OpenSHMEM program's `main` may return `Result<u64, ShmemError>`: an error is logged
/// and becomes its exit status.
impl<T: Termination> Termination for Result<T, crate::shmem::ShmemError> {
    fn exit_status(self) -> u64 {
        match self {
            Ok(v) => v.exit_status(),
            Err(e) => {
                crate::log!("failed: {} (exit status {:#x})", e, e.exit_status());
                e.exit_status()
            }
        }
    }
}

/// Makes `main` the program's entry: `unimem_user::entry!(main);` with `fn main() -> u64`,
/// `-> ()`, or `-> Result<u64, unimem_user::Error>`.
#[macro_export]
macro_rules! entry {
    ($main:path) => {
        #[unsafe(export_name = "__unimem_main")]
        extern "C" fn __unimem_main() -> ! {
            let status = $crate::rt::Termination::exit_status($main());
            $crate::sys::exit(status)
        }
    };
}

#[cfg(all(feature = "runtime", target_os = "none", not(test)))]
#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    match info.location() {
        Some(at) => crate::log!("panicked at {}:{}: {}", at.file(), at.line(), info.message()),
        None => crate::log!("panicked: {}", info.message()),
    }
    crate::sys::exit(PANIC_STATUS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::gsas::ErrorCode;

    #[test]
    fn statuses() {
        assert_eq!(7u64.exit_status(), 7);
        assert_eq!(().exit_status(), 0);
        assert_eq!(Ok::<u64, Error>(3).exit_status(), 3);
        let e = Error::Service(ErrorCode::PermissionDenied);
        assert_eq!(Err::<u64, Error>(e).exit_status(), 0x104);
    }
}
