//! Sockets over RDMA (`docs/hw/sockets.md`): the node suite on one node (connections to itself,
//! through the PLDMA's own loop), the cluster tests between nodes (node 0 drives, the last node
//! serves). The programs check their own bytes and replies; these tests check that they did, and
//! what the kernels counted.

use crate::cluster_support::{barrier, barrier_within, wait_for, whoami};
use crate::ensure;
use crate::gsas::{expect_status, expect_status_with_args, finish, judge, run_with_args_within};
use crate::testkit::{Test, TestResult};
use a53_kernel::process::lifecycle;
use a53_kernel::process::table::{Exit, Reap};
use a53_kernel::socket_node;
use alloc::format;
use alloc::string::String;
use unimem_user::args::socket_part::{Part, pack};

pub const TESTS: &[Test] = &[
    Test::new("sockets", "every_bad_input_is_refused_and_loses_nothing", bad_inputs),
    Test::new("sockets", "another_process_cannot_use_a_connection_or_listener_it_does_not_own", isolation),
    Test::new("sockets", "an_echo_of_every_size_on_one_node", echo_here),
];

/// Between nodes. The `sockets_` ones move megabytes: they run where the links lose nothing
/// (`cluster-2`, `cluster-4-sockets`), since over lossy links every lost packet costs its whole
/// 16 KiB block a timeout. The `rdma_sockets_` ones run there and over lossy links too
/// (`cluster-4-rdma`, whose filter is `cluster::rdma_`).
pub const CLUSTER_TESTS: &[Test] = &[
    Test::new("cluster", "rdma_sockets_echo_of_every_size_between_nodes", echo_across),
    Test::new("cluster", "rdma_sockets_key_value_server_answers_three_clients_right", key_value),
    Test::new("cluster", "rdma_sockets_a_peer_killed_mid_stream_resets_the_writer", peer_killed),
    Test::new("cluster", "sockets_64_mib_streamed_and_checked_by_hash", stream_64_mib),
    Test::new("cluster", "sockets_32_connections_served_by_one_polling_process", fan_in),
];

/// Run only where a node is killed on purpose (boot argument `victim=N`).
pub const VICTIM_TESTS: &[Test] =
    &[Test::new("cluster", "sockets_a_node_dying_mid_stream_resets_the_writer", node_dying)];

/// Seconds a cluster program may take, which the waiting nodes wait too.
const PROGRAM_SECONDS: u64 = 300;

fn needs_sockets() -> TestResult {
    ensure(socket_node::available(), "this node has no sockets (no RDMA)")
}

fn part(role: u8, port: u16, node: u16) -> u64 {
    pack(Part { role, port, node, count: 0 }).expect("no count")
}

/// The protocol saw no stranger, violation or failed write on this node.
fn clean_protocol() -> TestResult {
    let s = socket_node::stats();
    if s.protocol.violations != 0 || s.protocol.failed_writes != 0 || s.bad_doorbells != 0 {
        defmt::println!("socket stats: {}", defmt::Debug2Format(&s));
        return Err("the socket protocol saw violations or failed writes");
    }
    Ok(())
}

fn bad_inputs() -> TestResult {
    needs_sockets()?;
    expect_status("sock-check", part(1, 4100, 0), 0)
}

/// An owner's connection to itself; an intruder tries every handle of the node with every call.
fn isolation() -> TestResult {
    needs_sockets()?;
    let owner = lifecycle::spawn("sock-check", Some(part(2, 4200, 0)), Reap::Wait).map_err(|_| "no owner")?;
    let intruded = expect_status("sock-check", part(3, 0, 0), 0);
    let owned = match finish(owner, 60) {
        Ok(Exit::Status(0)) => Ok(()),
        _ => Err("the owner's connection was touched, or it never heard from the intruder"),
    };
    intruded.and(owned)
}

fn echo_here() -> TestResult {
    needs_sockets()?;
    let (me, _) = whoami()?;
    expect_status_with_args("sock-echo", &[&format!("{me}"), "20"], 0)?;
    clean_protocol()
}

/// Node 0 runs `program` with `args` (the last node serves its spawns); everyone waits. Barrier
/// generations rise in the order the tests run, between the RDMA tests' and the stress's (1300):
/// a node that passes a barrier and writes a lower generation would hold the others back.
fn from_node_0(generation: u64, program: &str, args: &[String]) -> TestResult {
    needs_sockets()?;
    let (me, _) = whoami()?;
    barrier(generation)?;
    let args: alloc::vec::Vec<&str> = args.iter().map(String::as_str).collect();
    let result = if me == 0 {
        run_with_args_within(program, &args, PROGRAM_SECONDS).and_then(|e| judge(program, e, 0))
    } else {
        Ok(())
    };
    barrier_within(generation + 1, PROGRAM_SECONDS)?;
    result.and(clean_protocol())
}

fn last_node() -> Result<u16, &'static str> {
    whoami().map(|(_, n)| n - 1)
}

fn echo_across() -> TestResult {
    from_node_0(1270, "sock-echo", &[format!("{}", last_node()?), String::from("50")])
}

/// 64 MiB in 64 KiB writes, hashed at both ends.
fn stream_64_mib() -> TestResult {
    let args = [
        format!("{}", last_node()?),
        String::from("65536"),
        String::from("64"),
        String::from("1"),
        String::from("5001"),
    ];
    from_node_0(1276, "sock-perf", &args)
}

/// 32 connections at once, 128 KiB each, to a sink that serves them all from one `poll` loop.
fn fan_in() -> TestResult {
    let args = [
        format!("{}", last_node()?),
        String::from("128"),
        String::from("16"),
        String::from("32"),
        String::from("5002"),
    ];
    from_node_0(1278, "sock-perf", &args)
}

/// The server on the last node, three clients on the others (in turn), every reply checked.
fn key_value() -> TestResult {
    from_node_0(1272, "sock-kv", &[String::from("120"), String::from("3")])
}

/// The last node's sink is killed once data flows; node 0's writer must see `ConnectionReset`.
fn peer_killed() -> TestResult {
    const PORT: u16 = 4300;
    needs_sockets()?;
    let (me, n) = whoami()?;
    let victim = n - 1;
    barrier(1274)?;
    let result = if me == victim {
        let before = socket_node::stats().doorbells_received;
        let sink = lifecycle::spawn("sock-check", Some(part(4, PORT, 0)), Reap::Wait).map_err(|_| "no sink")?;
        let flowing = wait_for(60, || socket_node::stats().doorbells_received >= before + 16);
        lifecycle::kill(sink);
        let killed = matches!(finish(sink, 10), Ok(Exit::Killed));
        flowing.map_err(|_| "no data reached the sink")?;
        ensure(killed, "the sink was not killed")
    } else if me == 0 {
        expect_status("sock-check", part(5, PORT, victim), 0)
    } else {
        Ok(())
    };
    barrier_within(1275, PROGRAM_SECONDS)?;
    result
}

/// Node `victim=N` (a boot argument; run `cluster-2-sockets-kill`): its sink reads until the
/// runner kills the whole node (at the sink's "1 MiB in" line); node 0's writer must see
/// `ConnectionReset` once its kernel learns the node is gone.
fn node_dying() -> TestResult {
    const PORT: u16 = 4400;
    needs_sockets()?;
    let (me, _) = whoami()?;
    let victim = a53_kernel::kernel::boot_args().value("victim").and_then(|v| v.parse::<u16>().ok());
    let victim = victim.ok_or("no victim=N boot argument: no node will die")?;
    barrier(1280)?;
    let result = if me == victim {
        // The runner kills this node while the sink reads; reaching the end is the failure.
        let sink = lifecycle::spawn("sock-check", Some(part(4, PORT, 0)), Reap::Wait).map_err(|_| "no sink")?;
        let _ = finish(sink, PROGRAM_SECONDS);
        Err("the node was not killed")
    } else if me == 0 {
        expect_status("sock-check", part(5, PORT, victim), 0)
    } else {
        Ok(())
    };
    barrier_within(1281, PROGRAM_SECONDS)?;
    result
}
