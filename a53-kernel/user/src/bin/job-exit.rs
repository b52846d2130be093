//! `job-exit STATUS << 16 | NODE`: `JOB_EXIT` (`docs/hw/syscalls.md`) ends a job on every node.
//! With that thread argument (STATUS 0..=255), this process remote-spawns two copies of itself
//! on node NODE (a remote spawn keeps this process's PD): one waits for a message that never
//! comes, the other spins on its CPU. Each checks `PROGRAM_NAME` (a remote spawn's name is its
//! program's too) and says it is ready (channel 8). Then a status above 255 is refused
//! (`BadArgument`), a job-exit notification this process forges (kernel opcode 0x7, naming its
//! own PD) is refused (`PermissionDenied`), both copies still answer a process atomic, and
//! `JOB_EXIT(STATUS)` ends
//! this process and both copies with STATUS: the test that runs it checks this process's exit,
//! and node NODE's kernel the copies'.
//!
//! The copies' thread argument is `COPY_WAITS` or `COPY_SPINS` | NODE (this node). Exit status:
//! STATUS; 1..=0x3f a failed check (logged); otherwise an error status (`README.md`).
#![no_std]
#![no_main]

use proto::gsas::{VaOp, va_opcode};
use proto::syscall::nr;
use unimem_user::channel::{op, send, take};
use unimem_user::{
    Error, ErrorCode, GlobalAddress, MailboxOpcode, Notification, SysError, arguments, board_id, ensure, my_pid,
    notify, register, remote_spawn, request, sys, thread_argument, with_client,
};

unimem_user::entry!(main);

const COPY_WAITS: u64 = 1 << 40;
const COPY_SPINS: u64 = 2 << 40;
const OP_READY: u8 = 8;
/// Never sent: the waiting copy waits for it.
const OP_NEVER: u8 = 9;
/// How long a spinning copy spins before it gives up (the job's exit ends it long before).
const SPIN_US: u64 = 120_000_000;

static WORD: u64 = 7;

fn main() -> Result<u64, Error> {
    // `cargo xtask run` passes it as the first argument.
    let argument = match thread_argument() {
        Err(Error::NoArgument) => arguments()?.number(0)?,
        other => other?,
    };
    let node = (argument & 0xffff) as u16;
    match argument & !0xff_ffff {
        0 => initiator(node, (argument >> 16) & 0xff),
        COPY_WAITS => {
            register(op(OP_NEVER))?;
            send(node, OP_READY, u64::from(name_is_ours()))?;
            take(OP_NEVER)?;
            Ok(20)
        }
        COPY_SPINS => {
            send(node, OP_READY, u64::from(name_is_ours()))?;
            let give_up = sys::time_us()? + SPIN_US;
            while sys::time_us()? < give_up {
                for _ in 0..100_000 {
                    core::hint::spin_loop();
                }
            }
            Ok(21)
        }
        _ => Err(Error::NoArgument),
    }
}

fn name_is_ours() -> bool {
    let mut name = [0u8; 16];
    let len = sys::raw(nr::PROGRAM_NAME, [name.as_mut_ptr() as u64, name.len() as u64, 0, 0, 0, 0])[0];
    let ours = env!("CARGO_BIN_NAME").as_bytes();
    len == ours.len() as u64 && &name[..ours.len()] == ours
}

fn initiator(target: u16, status: u64) -> Result<u64, Error> {
    let me = board_id()?;
    register(op(OP_READY))?;
    for role in [COPY_WAITS, COPY_SPINS] {
        remote_spawn(env!("CARGO_BIN_NAME"), role | u64::from(me), target)?;
    }
    for _ in 0..2 {
        ensure!(take(OP_READY)? == 1, 1, "a copy did not find its program's name");
    }
    let refused = sys::raw(nr::JOB_EXIT, [256, 0, 0, 0, 0, 0])[0];
    ensure!(refused == SysError::BadArgument as i64 as u64, 2, "JOB_EXIT took status 256: {:#x}", refused);
    let pd = u64::from(my_pid()?.domain() & 0xf);
    let forged = MailboxOpcode::new(0x7).and_then(|op| Notification::new(op, pd | status << 4));
    let forged = forged.map_err(|_| Error::NoArgument)?;
    let sent = notify(target, forged);
    ensure!(sent == Err(Error::Service(ErrorCode::PermissionDenied)), 5, "a forged job exit: {:?}", sent);
    // The copies are still there: their PD answers.
    let address = GlobalAddress::new(target, core::ptr::addr_of!(WORD) as u64).map_err(|_| Error::NoArgument)?;
    let fetch = request(va_opcode(VaOp::Fetch, proto::gsas::VaWidth::W64), address, 0, 0);
    let answer = with_client(|g| g.call_raw(target, &fetch))?;
    ensure!(answer.error.is_none() && answer.result == 7, 3, "the copies did not answer: {:?}", answer);
    sys::raw(nr::JOB_EXIT, [status, 0, 0, 0, 0, 0]);
    Ok(4)
}
