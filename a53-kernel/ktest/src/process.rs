//! Processes on the process cores: what each keeps of its own when they take turns, and how
//! close to its deadline a short wait ends. Each test runs user programs and judges them by
//! their exit, and by the kernel's count of switches where that is what makes the test mean
//! something.

use crate::ensure;
use crate::gsas::{finish, judge, result_of};
use crate::testkit::{Test, TestResult};
use a53_kernel::process::table::{Exit, Reap};
use a53_kernel::process::{lifecycle, scheduler};
use alloc::vec::Vec;
use unimem_user::args::{keep_registers, short_waits};

pub const TESTS: &[Test] = &[
    Test::new(
        "process",
        "tpidr_el0_fpcr_fpsr_and_the_simd_registers_stay_with_each_process_across_every_kind_of_switch",
        registers,
    ),
    Test::new(
        "process",
        "c_programs_keep_their_thread_local_storage_rounding_mode_and_fp_values_while_taking_turns",
        c_context,
    ),
    Test::new("process", "c_programs_that_fault_are_killed_and_the_others_go_on", c_faults),
    Test::new("process", "a_sleep_of_a_hundredth_of_a_tick_ends_near_its_deadline", sleeps),
    Test::new("process", "a_mailbox_wait_of_a_hundredth_of_a_tick_times_out_near_its_deadline", mailbox_waits),
];

/// Copies at once: twice the process cores, so that they must take turns.
const KEEPERS: u64 = 4;

/// Seconds the programs may take (a few hundred milliseconds of QEMU each, unloaded).
const SECONDS: u64 = 60;

/// Every copy of `keep-registers` found its values after every act, and the cores went from one
/// copy to another often enough for that to mean something: a process switch leaves the last
/// process's TPIDR_EL0 in the register unless the kernel keeps it with the process.
fn registers() -> TestResult {
    // Each yield and sleep of a copy can hand its core to another, and those are two fifths of
    // every copy's rounds: a quarter of one copy's rounds is far below what they give.
    take_turns("keep-registers", |index| index, keep_registers::ROUNDS / 4)
}

/// The C twin of [`registers`]: copies of `c-keep-context` (its rounds' steps all yield) each
/// keep their TLS block, rounding mode and register-held doubles while they take turns. They
/// all begin at one moment of the node's clock, after every copy has been spawned (spawns take
/// milliseconds; the copies' rounds not many more), and run for at least 200 ms.
fn c_context() -> TestResult {
    let start = a53_kernel::timer::uptime_us() + 200_000;
    // Four copies yielding at every step for 200 ms: a hundred changes is far below what they
    // give.
    take_turns("c-keep-context", |index| start << 8 | index, 100)
}

/// Runs [`KEEPERS`] copies of `name` at once (thread argument: `argument` of the copy's index),
/// expects each to exit 0, and at least `changes` switches of a process core from one copy to
/// another.
fn take_turns(name: &str, argument: impl Fn(u64) -> u64, changes: u64) -> TestResult {
    let before = scheduler::process_changes();
    let handles: Vec<_> = (0..KEEPERS)
        .map(|index| lifecycle::spawn(name, Some(argument(index)), Reap::Wait))
        .collect::<Result<_, _>>()
        .map_err(|_| "cannot spawn the copies")?;
    // Every copy is waited for, so that none runs on into the next test; the first failure
    // is the result.
    let results: Vec<TestResult> = handles.into_iter().map(|h| judge(name, finish(h, SECONDS)?, 0)).collect();
    results.into_iter().collect::<TestResult>()?;
    let made = scheduler::process_changes() - before;
    defmt::println!("the process cores went from one copy of {=str} to another {=u64} times", name, made);
    ensure(made >= changes, "the copies hardly took turns: nothing was tested")
}

/// Two C programs that fault (one dereferences NULL, one runs off the end of its stack) run
/// beside one that checks its C library: the two are killed with the fault that ended them, the
/// third finishes with every check held, and the kernel goes on (the next tests run).
fn c_faults() -> TestResult {
    let spawn = |name: &str, args: &[&str]| {
        let packed =
            a53_kernel::process::launch::pack(args.iter().map(|a| a.as_bytes())).map_err(|_| "arguments too long")?;
        lifecycle::spawn_with_args(name, None, &packed, Reap::Wait).map_err(|_| "cannot spawn")
    };
    let null = spawn("c-crash", &["null"])?;
    let stack = spawn("c-crash", &["stack"])?;
    let check = spawn("libc-check", &["-n", "3", "-v", "word"])?;
    // Every process is waited for before judging, so that none runs on into the next test.
    let (null, stack, check) = (finish(null, SECONDS)?, finish(stack, SECONDS)?, finish(check, SECONDS)?);
    let faulted_at = |exit: Exit, far: fn(u64) -> bool| matches!(exit, Exit::Fault { far: f, .. } if far(f));
    ensure(faulted_at(null, |far| far == 0), "the NULL dereference did not end in a fault at address 0")?;
    let below_the_stack = |far: u64| {
        use proto::syscall::layout::{STACK_SIZE, STACK_TOP};
        let bottom = STACK_TOP - STACK_SIZE;
        (bottom - (1 << 20)..bottom).contains(&far)
    };
    ensure(faulted_at(stack, below_the_stack), "the stack overrun did not end in a fault below the stack")?;
    judge("libc-check", check, 0)
}

/// The time `short-waits` took for its waits, judged: each lasted at least what it asked for
/// (the program checks), and all of them far less than they would if each ended at the next
/// tick of 10 ms (about 0.5 s in all), with room for a loaded host.
fn waits(wait: short_waits::Wait) -> TestResult {
    /// Fifty times what the waits ask for (they take 15 to 40 ms on an unloaded host), half of
    /// what they take when each ends at the next tick.
    const BOUND_US: u64 = 250_000;
    match result_of("short-waits", short_waits::pack(wait))? {
        total if total >= short_waits::COUNT * short_waits::US => {
            defmt::println!("{=u64} waits of {=u64} us took {=u64} us", short_waits::COUNT, short_waits::US, total);
            ensure(total < BOUND_US, "the waits took as long as if each ended at a tick")
        }
        1 => Err("a wait ended before its deadline"),
        2 => Err("WAIT_MIF on an empty interface ended otherwise than by timing out"),
        status => {
            defmt::println!("short-waits exited with {=u64:#x}", status);
            Err("short-waits failed")
        }
    }
}

fn sleeps() -> TestResult {
    waits(short_waits::Wait::Sleep)
}

fn mailbox_waits() -> TestResult {
    waits(short_waits::Wait::Mailbox)
}
