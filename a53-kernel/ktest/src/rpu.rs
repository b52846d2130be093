//! The A53 <-> R5 request/response rings.

use crate::ensure;
use crate::testkit::{Test, TestResult};
use a53_kernel::rpu;
use proto::ipc::{Message, op};

pub const TESTS: &[Test] = &[
    Test::new("rpu", "firmware_answers_ping", ping),
    Test::new("rpu", "thousand_messages_round_trip_in_order", round_trip),
    Test::new("rpu", "unknown_request_gets_an_error_reply", unknown),
    Test::new("rpu", "r5_trace_reaches_the_host", trace),
    Test::new("rpu", "r5_reaches_the_pl_through_forwarding", r5_pl_access),
    Test::new("rpu", "firmware_follows_a_kernel_that_reinitialises_the_rings", reconnect),
];

fn started() -> TestResult {
    ensure(rpu::is_started(), "the RPU did not start")
}

fn ping() -> TestResult {
    started()?;
    let reply = rpu::call(op::PING, [0; 7]).map_err(|_| "no reply to ping")?;
    ensure(reply.op == op::PING | op::REPLY, "wrong reply op")
}

fn payload(i: u64) -> [u64; 7] {
    core::array::from_fn(|k| i.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(k as u32 * 9))
}

fn round_trip() -> TestResult {
    started()?;
    const COUNT: u64 = 1000;
    let first_seq = rpu::next_seq();
    let (mut sent, mut received) = (0u64, 0u64);
    let give_up = a53_kernel::timer::now() + 20 * a53_kernel::timer::hz();
    while received < COUNT {
        // Keep the ring as full as it will go: a full ring refuses, it never drops.
        while sent < COUNT {
            let msg = Message::new(op::ECHO, first_seq.wrapping_add(sent as u32), payload(sent));
            if rpu::send(msg).is_err() {
                break;
            }
            sent += 1;
        }
        if let Some(reply) = rpu::try_recv() {
            ensure(reply.op == op::ECHO | op::REPLY, "wrong reply op")?;
            ensure(reply.seq == first_seq.wrapping_add(received as u32), "reply out of order or lost")?;
            ensure(reply.args == payload(received), "reply payload differs")?;
            received += 1;
        } else if a53_kernel::timer::now() > give_up {
            return Err("replies stopped arriving");
        }
    }
    // Keep later sequence numbers clear of the ones used here.
    for _ in 0..COUNT {
        rpu::next_seq();
    }
    ensure(rpu::try_recv().is_none(), "more replies than requests")
}

fn unknown() -> TestResult {
    started()?;
    let reply = rpu::call(0x7777, [1, 2, 3, 0, 0, 0, 0]).map_err(|_| "no reply to an unknown op")?;
    ensure(reply.op == op::UNKNOWN && reply.args[0] == 0x7777, "unknown op not reported back")
}

fn trace() -> TestResult {
    started()?;
    let nonce = a53_kernel::timer::now() & 0xffff_ffff;
    let reply = rpu::call(op::TRACE_NONCE, [nonce, 0, 0, 0, 0, 0, 0]).map_err(|_| "no reply")?;
    ensure(reply.args[0] == nonce, "wrong nonce in reply")?;
    // The runner fails this test unless the R5 trace it drains contains this exact text.
    defmt::println!("expect r5-trace: trace nonce {=u64:#x}", nonce);
    Ok(())
}

/// `crash=r5-fault`: asks the R5 to load from DDR its MPU does not cover. The firmware must
/// fault, report it in its trace (the runner checks) and never reply.
pub fn r5_fault_self_test() -> a53_kernel::kernel::Stop {
    use a53_kernel::kernel::Stop;
    if !rpu::is_started() {
        defmt::error!("the RPU did not start");
        return Stop::Failure;
    }
    let seq = rpu::next_seq();
    if rpu::send(Message::new(op::FAULT_TEST, seq, [op::FAULT_TEST_KEY, 0x4000_0000, 0, 0, 0, 0, 0])).is_err() {
        return Stop::Failure;
    }
    let until = a53_kernel::timer::now() + a53_kernel::timer::hz();
    while a53_kernel::timer::now() < until {
        if let Some(reply) = rpu::try_recv() {
            defmt::error!("the R5 replied ({=u32:#x}) instead of faulting", reply.op);
            return Stop::Failure;
        }
    }
    defmt::println!("the R5 went silent after the fault self-test");
    Stop::Success
}

fn r5_pl_access() -> TestResult {
    started()?;
    let (me, _) = crate::cluster_support::whoami()?;
    let reply = rpu::call(op::PL_PROBE, [0xfeed_f00d, 8, 0, 0, 0, 0, 0]).map_err(|_| "no reply")?;
    ensure(reply.args[2] == u64::from(hal::sysblock::regs::ID_VALUE), "the R5 read a wrong ID register")?;
    ensure(reply.args[0] == u64::from(me), "the R5 sees a different node id")?;
    ensure(reply.args[1] == 0xfeed_f00d, "the R5's scratch write did not read back")?;
    ensure(reply.args[3] == 8 && reply.args[4] > 0, "the R5 did not time its reads")
}

fn reconnect() -> TestResult {
    started()?;
    for _ in 0..3 {
        rpu::reconnect().map_err(|_| "the firmware did not answer the new boot nonce")?;
        let reply = rpu::call(op::ECHO, [42; 7]).map_err(|_| "no reply after reconnecting")?;
        ensure(reply.args == [42; 7], "wrong echo after reconnecting")?;
    }
    Ok(())
}
