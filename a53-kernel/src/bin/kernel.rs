//! The kernel image: boots the node, then does what the boot arguments ask
//! (`docs/hw/boot-args.md`): runs one program (`run=PROGRAM arg=...`), serves the other nodes
//! (`serve`), or shows that everything is up with a small demo. With `exit` the node then ends
//! its run together with the other nodes; otherwise it serves a command loop on the console.
#![no_std]
#![no_main]

use a53_kernel::console::input as console_input;
use a53_kernel::kernel::{self, BootReport, Stop};
use a53_kernel::mm::heap;
use a53_kernel::process::launch::{self, PackedArgs};
use a53_kernel::process::lifecycle;
use a53_kernel::process::table::{Exit, Reap};
use a53_kernel::{cluster, rpu, smp, timer};
use core::sync::atomic::{AtomicU32, Ordering};
use proto::ipc::op;

/// How long a demo process may take before it is killed.
const DEMO_SECONDS: u64 = 60;

fn demo(report: &BootReport) -> Stop {
    let hello = AtomicU32::new(0);
    let answered = smp::run_on_all(&|core| {
        defmt::info!("core {=usize} reporting", core);
        hello.fetch_or(1 << core, Ordering::Relaxed);
    });
    let mut ok = true;
    if answered.is_err() || hello.load(Ordering::Relaxed).count_ones() as usize != report.cores_online {
        defmt::error!("not every online core answered");
        ok = false;
    }
    if report.rpu_firmware.is_some() {
        ok &= ping_r5();
    }
    show_heap();
    if a53_kernel::process::images::names().next().is_none() {
        defmt::error!("no programs to run: the program store was refused or holds none (see the boot line)");
        return Stop::Failure;
    }
    // Two user processes: `hello`, then `alloc-free`, which allocates and frees shared pages on
    // every node through the nodes' atomic services.
    for program in ["hello", "alloc-free"] {
        ok &= run_program(program, &PackedArgs::new(), Some(DEMO_SECONDS));
    }
    defmt::info!("demo finished");
    if ok { Stop::Success } else { Stop::Failure }
}

/// Runs `program` to its end (or kills it after `seconds`) and reports how it ended, in the
/// words `docs/hw/console.md` gives. Returns whether it exited with status 0.
fn run_program(program: &str, args: &PackedArgs, seconds: Option<u64>) -> bool {
    let handle = match lifecycle::spawn_with_args(program, None, args, Reap::Wait) {
        Ok(h) => h,
        Err(e) => {
            defmt::error!("process {=str} cannot start: {}", program, defmt::Debug2Format(&e));
            return false;
        }
    };
    let exit = match seconds {
        Some(s) => lifecycle::wait_or_kill(handle, core::time::Duration::from_secs(s)),
        None => lifecycle::wait(handle, core::time::Duration::MAX),
    };
    match exit {
        Some(Exit::Status(status)) => {
            defmt::info!("process {=str} exited with status {=u64}", program, status);
            status == 0
        }
        Some(other) => {
            defmt::error!("process {=str} ended: {}", program, defmt::Debug2Format(&other));
            false
        }
        None => {
            defmt::error!("process {=str} did not finish within {=u64} s: killed", program, seconds.unwrap_or(0));
            false
        }
    }
}

/// `run=PROGRAM arg=...`: the program this node was asked to run.
fn run_requested(program: &str) -> Stop {
    let args = match launch::pack_escaped(kernel::boot_args().values("arg")) {
        Ok(args) => args,
        Err(e) => {
            defmt::error!("process {=str} cannot start: arguments {}", program, defmt::Debug2Format(&e));
            return Stop::Failure;
        }
    };
    if run_program(program, &args, None) { Stop::Success } else { Stop::Failure }
}

fn ping_r5() -> bool {
    match rpu::call(op::PING, [0; 7]) {
        Ok(reply) => {
            defmt::info!("R5 answered ping: {=u64} requests served, {=u64} replies sent", reply.args[0], reply.args[1]);
            true
        }
        Err(e) => {
            defmt::error!("R5 did not answer: {}", defmt::Debug2Format(&e));
            false
        }
    }
}

fn show_heap() {
    let (used, free) = heap::usage();
    defmt::info!("heap: {=usize} KiB used, {=usize} KiB free", used / 1024, free / 1024);
}

/// `r`: asks the console for a line (`docs/hw/console.md`, "Asking for a line") and runs the
/// program it names.
fn run_from_console() {
    let mut line = [0u8; 128];
    defmt::println!("line? program and arguments");
    let len = console_input::read_line(&mut line);
    let Ok(text) = core::str::from_utf8(&line[..len]) else {
        return defmt::println!("not UTF-8");
    };
    match launch::parse_command(text) {
        None => {}
        Some(Ok((program, args))) => {
            run_program(program, &args, None);
        }
        Some(Err(e)) => defmt::println!("cannot run that: {}", defmt::Debug2Format(&e)),
    }
}

fn list_programs() {
    let mut names = a53_kernel::process::images::names().peekable();
    if names.peek().is_none() {
        defmt::println!("no programs: the program store was refused or holds none (see the boot line)");
    }
    for name in names {
        defmt::println!("  {=str}", name);
    }
}

const HELP: &str = "h help, c cores, p ping R5, m memory, u uptime, l list programs, r run a program, q quit";

fn command_loop() -> ! {
    if let Err(e) = console_input::enable() {
        defmt::error!("no console input: {}", defmt::Debug2Format(&e));
        kernel::stop(Stop::Failure);
    }
    defmt::println!("console ready: {=str}", HELP);
    loop {
        match console_input::read_byte() {
            b'h' => defmt::println!("{=str}", HELP),
            b'c' => defmt::println!("cores online: {=u32:#06b}", smp::online_mask()),
            b'p' => {
                ping_r5();
            }
            b'm' => show_heap(),
            b'u' => defmt::println!("up {=u64} ms, {=u64} ticks", timer::uptime_us() / 1000, timer::ticks()),
            b'l' => list_programs(),
            b'r' => run_from_console(),
            b'q' => kernel::stop(Stop::Success),
            b'\n' | b'\r' | b' ' => {}
            other => defmt::println!("unknown command {=u8:#04x}: h for help", other),
        }
    }
}

#[unsafe(no_mangle)]
extern "C" fn kernel_main(_core: usize, entry_el: u64) -> ! {
    let report = kernel::init_boot_core(entry_el);
    let args = kernel::boot_args();
    let outcome = match args.value("run") {
        Some(program) => run_requested(program),
        None if args.flag("serve") => Stop::Success,
        None => demo(&report),
    };
    if args.flag("exit") {
        cluster::finish(outcome);
    }
    command_loop()
}
