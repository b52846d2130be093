//! The kernel image: boots the node, shows that everything is up, then (unless booted with
//! `exit`) serves a small command loop on the console.
#![no_std]
#![no_main]

use a53_kernel::kernel::{self, BootReport, Stop};
use a53_kernel::process::table::{self, Exit, Reap};
use a53_kernel::{console_input, heap, rpu, smp, timer};
use core::sync::atomic::{AtomicU32, Ordering};
use hal::ipc::op;

fn demo(report: &BootReport) {
    let hello = AtomicU32::new(0);
    let answered = smp::run_on_all(&|core| {
        defmt::info!("core {=usize} reporting", core);
        hello.fetch_or(1 << core, Ordering::Relaxed);
    });
    if answered.is_err() || hello.load(Ordering::Relaxed).count_ones() as usize != report.cores_online {
        defmt::error!("not every online core answered");
    }
    if report.rpu_firmware.is_some() {
        ping_r5();
    }
    show_heap();
    gsas_demo();
    defmt::info!("demo finished");
}

/// Two user processes: `hello`, then `alloc-free`, which allocates and frees shared pages on
/// every node through the nodes' atomic services.
fn gsas_demo() {
    let node = u64::from(a53_kernel::gsas_node::node_id());
    for (program, argument) in [("hello", node), ("alloc-free", 0)] {
        run_program(program, argument);
    }
}

fn run_program(program: &str, argument: u64) {
    const SECONDS: u64 = 60;
    let handle = match table::spawn(program, Some(argument), Reap::Wait) {
        Ok(h) => h,
        Err(e) => return defmt::error!("cannot start {=str}: {}", program, defmt::Debug2Format(&e)),
    };
    match table::wait_or_kill(handle, SECONDS * timer::hz()) {
        Some(Exit::Status(status)) => defmt::info!("process {=str} exited with status {=u64}", program, status),
        Some(other) => defmt::error!("process {=str} ended: {}", program, defmt::Debug2Format(&other)),
        None => defmt::error!("process {=str} did not finish within {=u64} s: killed", program, SECONDS),
    }
}

fn ping_r5() {
    match rpu::call(op::PING, [0; 7]) {
        Ok(reply) => {
            defmt::info!("R5 answered ping: {=u64} requests served, {=u64} replies sent", reply.args[0], reply.args[1])
        }
        Err(e) => defmt::error!("R5 did not answer: {}", defmt::Debug2Format(&e)),
    }
}

fn show_heap() {
    let (used, free) = heap::usage();
    defmt::info!("heap: {=usize} KiB used, {=usize} KiB free", used / 1024, free / 1024);
}

fn command_loop() -> ! {
    if let Err(e) = console_input::enable() {
        defmt::error!("no console input: {}", defmt::Debug2Format(&e));
        kernel::stop(Stop::Failure);
    }
    defmt::println!("console ready: h help, c cores, p ping R5, m memory, u uptime, q quit");
    loop {
        match console_input::read_byte() {
            b'h' => defmt::println!("h help, c cores, p ping R5, m memory, u uptime, q quit"),
            b'c' => defmt::println!("cores online: {=u32:#06b}", smp::online_mask()),
            b'p' => ping_r5(),
            b'm' => show_heap(),
            b'u' => defmt::println!("up {=u64} ms, {=u64} ticks", kernel::uptime_us() / 1000, timer::ticks()),
            b'q' => kernel::stop(Stop::Success),
            b'\n' | b'\r' | b' ' => {}
            other => defmt::println!("unknown command {=u8:#04x}: h for help", other),
        }
    }
}

#[unsafe(no_mangle)]
extern "C" fn kernel_main(_core: usize, entry_el: u64) -> ! {
    let report = kernel::init_boot_core(entry_el);
    demo(&report);
    if kernel::boot_args().flag("exit") {
        kernel::stop(Stop::Success);
    }
    command_loop()
}
