//! The global shared address space on one node: processes, the atomic service, protection.
//! Each test runs user programs (`a53-kernel/user`) and judges them by their exit.

use crate::ensure;
use crate::testkit::{Test, TestResult};
use a53_kernel::process::lifecycle;
use a53_kernel::process::table::{self, Exit, Reap};
use alloc::vec::Vec;

pub const TESTS: &[Test] = &[
    Test::new("gsas", "a_process_runs_and_exits_with_its_status", hello),
    Test::new("gsas", "alloc_and_free_on_every_node", alloc_free),
    Test::new("gsas", "write128_and_read4k_round_trip", write128_read4k),
    Test::new("gsas", "another_domain_cannot_read_write_or_free_a_private_page", intruder),
    Test::new("gsas", "a_forged_pid_in_the_payload_is_ignored", forged_pid),
    Test::new("gsas", "user_access_to_the_trusted_interface_faults", touch_tif),
    Test::new("gsas", "a_full_mailbox_fifo_loses_no_reply", mif_flood),
    Test::new("gsas", "ten_thousand_malformed_requests_get_errors_and_the_service_still_serves", malformed),
    Test::new("gsas", "notifications_reach_a_blocked_receiver", notify),
    Test::new("gsas", "event_mode_counts_and_signal_mode_raises_and_interrupts", mailbox_modes),
    Test::new("gsas", "a_kernel_handler_receives_its_opcode_from_the_kernel_and_from_processes", kernel_handler),
    Test::new("gsas", "bad_system_call_arguments_get_error_returns", bad_syscalls),
    Test::new("gsas", "a_spinning_or_sleeping_process_can_be_killed", kill),
];

/// Seconds a test program may take.
const PROGRAM_SECONDS: u64 = 120;

/// Runs `name` with `arg` to its end.
pub fn run(name: &str, arg: u64) -> Result<Exit, &'static str> {
    let handle = lifecycle::spawn(name, Some(arg), Reap::Wait).map_err(|e| {
        defmt::println!("cannot spawn {=str}: {}", name, defmt::Debug2Format(&e));
        "the program could not be started"
    })?;
    finish(handle, PROGRAM_SECONDS)
}

/// Waits up to `seconds` for the process to end; one that does not is killed, so that it does
/// not run on into the next test.
pub fn finish(handle: table::Handle, seconds: u64) -> Result<Exit, &'static str> {
    lifecycle::wait_or_kill(handle, core::time::Duration::from_secs(seconds))
        .ok_or("the program did not finish in time")
}

/// Runs `count` copies of `name` with `arg` on this node at once; all must exit 0 within
/// `seconds`.
pub fn run_together(name: &str, arg: u64, count: usize, seconds: u64) -> TestResult {
    let handles: Vec<_> = (0..count)
        .map(|_| lifecycle::spawn(name, Some(arg), Reap::Wait))
        .collect::<Result<_, _>>()
        .map_err(|_| "cannot spawn")?;
    let mut result = Ok(());
    for h in handles {
        match finish(h, seconds) {
            Ok(Exit::Status(0)) => {}
            Ok(Exit::Status(s)) => {
                defmt::println!("{=str} failed with {=u64:#x}", name, s);
                result = Err("a worker failed");
            }
            Ok(Exit::Fault { .. } | Exit::Killed) => result = Err("a worker was killed"),
            Err(_) => result = Err("a worker did not finish"),
        }
    }
    result
}

/// Runs `name` with string arguments `args` to its end.
pub fn run_with_args(name: &str, args: &[&str]) -> Result<Exit, &'static str> {
    run_with_args_within(name, args, PROGRAM_SECONDS)
}

/// [`run_with_args`] for a program that may take up to `seconds`.
pub fn run_with_args_within(name: &str, args: &[&str], seconds: u64) -> Result<Exit, &'static str> {
    let packed =
        a53_kernel::process::launch::pack(args.iter().map(|a| a.as_bytes())).map_err(|_| "arguments too long")?;
    let handle = lifecycle::spawn_with_args(name, None, &packed, Reap::Wait).map_err(|e| {
        defmt::println!("cannot spawn {=str}: {}", name, defmt::Debug2Format(&e));
        "the program could not be started"
    })?;
    finish(handle, seconds)
}

/// Runs `name` and expects exit status `expected`.
pub fn expect_status(name: &str, arg: u64, expected: u64) -> TestResult {
    judge(name, run(name, arg)?, expected)
}

/// Runs `name` with string arguments and expects exit status `expected`.
pub fn expect_status_with_args(name: &str, args: &[&str], expected: u64) -> TestResult {
    judge(name, run_with_args(name, args)?, expected)
}

pub fn judge(name: &str, exit: Exit, expected: u64) -> TestResult {
    match exit {
        Exit::Status(s) if s == expected => Ok(()),
        Exit::Status(s) => {
            defmt::println!("{=str} exited with {=u64:#x}, not {=u64:#x}", name, s, expected);
            Err("the program reported a failure")
        }
        Exit::Fault { esr, far, elr } => {
            defmt::println!("{=str} was killed: ESR {=u64:#x} FAR {=u64:#x} ELR {=u64:#x}", name, esr, far, elr);
            Err("the program was killed by a fault")
        }
        Exit::Killed => Err("the program was killed"),
    }
}

/// Runs `name` and returns its (non-failing) exit status, which carries a result.
pub fn result_of(name: &str, arg: u64) -> Result<u64, &'static str> {
    match run(name, arg)? {
        Exit::Status(s) => Ok(s),
        Exit::Fault { .. } => Err("the program was killed by a fault"),
        Exit::Killed => Err("the program was killed"),
    }
}

/// `notify-sender`'s argument: send `payload` on user channel `opcode` to `node`.
pub fn notify_arg(node: u16, opcode: u8, payload: u64) -> Result<u64, &'static str> {
    let opcode = proto::gsas::MailboxOpcode::new(opcode).map_err(|_| "no such opcode")?;
    unimem_user::args::notify_sender::pack(node, opcode, payload).ok_or("the payload does not fit")
}

fn me() -> u64 {
    u64::from(a53_kernel::cluster::node_id())
}

fn hello() -> TestResult {
    expect_status("hello", 41, 42)
}

fn alloc_free() -> TestResult {
    expect_status("alloc-free", 0, 0)
}

fn write128_read4k() -> TestResult {
    expect_status("write128-read4k", me(), 0)
}

fn intruder() -> TestResult {
    let page = result_of("private-owner", me())?;
    ensure(page >> 48 == me(), "the private page is not on this node")?;
    expect_status("intruder", page, 0)
}

fn forged_pid() -> TestResult {
    let page = result_of("private-owner", me())?;
    expect_status("forge-pid", page, 0)
}

fn touch_tif() -> TestResult {
    match run("touch-tif", 0)? {
        Exit::Fault { .. } => Ok(()),
        Exit::Status(_) | Exit::Killed => Err("a process read the trusted interface and lived"),
    }
}

fn mif_flood() -> TestResult {
    let nacks = || a53_kernel::gsas_node::REPLY_NACKS.load(core::sync::atomic::Ordering::Relaxed);
    let before = nacks();
    expect_status("mif-flood", me(), 0)?;
    // 300 replies, 256 places: the service must have been refused, and retried.
    ensure(nacks() > before, "the program's mailbox never refused a reply: the test did not fill it")
}

fn malformed() -> TestResult {
    expect_status("malformed", me(), 0)
}

fn notify() -> TestResult {
    const OPCODE: u8 = 9;
    const PAYLOAD: u64 = 0x1234_5678;
    let receiver =
        lifecycle::spawn("notify-receiver", Some(u64::from(OPCODE)), Reap::Wait).map_err(|_| "no receiver")?;
    // The receiver registers and then blocks; give it time to get there.
    let t = a53_kernel::timer::now() + a53_kernel::timer::hz() / 2;
    a53_kernel::arch::cpu::idle_until(|| a53_kernel::timer::now() > t);
    expect_status("notify-sender", notify_arg(me() as u16, OPCODE, PAYLOAD)?, 0)?;
    match finish(receiver, PROGRAM_SECONDS).map_err(|_| "the receiver never woke")? {
        Exit::Status(p) if p == PAYLOAD => Ok(()),
        _ => Err("the receiver did not get the notification's payload"),
    }
}

fn mailbox_modes() -> TestResult {
    use unimem_user::args::mailbox_modes::{Role, pack};
    expect_status("mailbox-modes", pack(Role::Local), 0)
}

/// What the test's kernel handler saw: payload and sender, last one first.
static HANDLED: spin::Mutex<heapless::Vec<(u64, u64), 4>> = spin::Mutex::new(heapless::Vec::new());

fn record(n: proto::gsas::Notification, from: proto::gsas::Pid) {
    let _ = HANDLED.lock().push((n.payload(), from.raw()));
}

/// A kernel handler takes user channel 7: a notification the kernel sends itself and one a
/// process sends both run it, with their senders; the kernel's ping service answers the
/// kernel's own Ping; a channel nobody holds refuses; after unregistering, the channel is free
/// for a process again.
fn kernel_handler() -> TestResult {
    use a53_kernel::gsas_node::{self, handlers};
    use proto::gsas::{MailboxOpcode, Message, Pid};
    const CHANNEL: u8 = 7;
    let op = MailboxOpcode::user(CHANNEL).map_err(|_| "channel 7")?;
    let user = |payload| Message::User { channel: CHANNEL, payload }.encode().map_err(|_| "a user message");
    HANDLED.lock().clear();
    handlers::register(op, record).map_err(|_| "cannot register the kernel handler")?;
    let result = (|| {
        ensure(handlers::register(op, record).is_err(), "a second kernel handler for the channel")?;
        gsas_node::notify_local(user(0x11)?).map_err(|_| "the kernel's own notification was refused")?;
        let kernel = Pid::atomic_service(me() as u16).raw();
        ensure(HANDLED.lock().as_slice() == [(0x11, kernel)], "the handler did not run for the kernel's notification")?;
        expect_status("notify-sender", notify_arg(me() as u16, op.value(), 0x22)?, 0)?;
        let handled = HANDLED.lock().clone();
        ensure(handled.len() == 2 && handled[1].0 == 0x22, "the handler did not run for the process's notification")?;
        ensure(Pid::from_low_bits(handled[1].1).domain() != 0, "the process's notification came from the kernel")?;
        // A kernel opcode: the kernel's ping service answers its own Ping.
        ensure(
            gsas_node::ping(me() as u16, core::time::Duration::from_secs(1)) == Ok(true),
            "no Pong to the kernel's own Ping",
        )?;
        let unclaimed = Message::User { channel: 6, payload: 1 }.encode().map_err(|_| "channel 6")?;
        ensure(gsas_node::notify_local(unclaimed).is_err(), "a notification with no receiver was delivered")
    })();
    handlers::unregister(op).map_err(|_| "cannot unregister the kernel handler")?;
    result?;
    // The channel is free again: a process takes it.
    let receiver =
        lifecycle::spawn("notify-receiver", Some(u64::from(op.value())), Reap::Wait).map_err(|_| "no receiver")?;
    let t = a53_kernel::timer::now() + a53_kernel::timer::hz() / 2;
    a53_kernel::arch::cpu::idle_until(|| a53_kernel::timer::now() > t);
    expect_status("notify-sender", notify_arg(me() as u16, op.value(), 0x33)?, 0)?;
    match finish(receiver, PROGRAM_SECONDS)? {
        Exit::Status(0x33) => Ok(()),
        _ => Err("the process did not get the channel back"),
    }
}

fn bad_syscalls() -> TestResult {
    expect_status("bad-syscalls", 0, 0)
}

fn kill() -> TestResult {
    for (how, arg) in [("spinning", 0), ("sleeping", 1)] {
        let handle = lifecycle::spawn("spin", Some(arg), Reap::Wait).map_err(|_| "cannot spawn spin")?;
        let t = a53_kernel::timer::now() + a53_kernel::timer::hz() / 10;
        a53_kernel::arch::cpu::idle_until(|| a53_kernel::timer::now() > t);
        lifecycle::kill(handle);
        match lifecycle::wait(handle, core::time::Duration::from_secs(1)) {
            Some(Exit::Killed) => {}
            other => {
                defmt::println!("{=str} spin: {}", how, defmt::Debug2Format(&other));
                return Err("the process did not end as killed");
            }
        }
    }
    // Its slot and interface went back: a normal program still runs.
    expect_status("hello", 1, 2)
}
