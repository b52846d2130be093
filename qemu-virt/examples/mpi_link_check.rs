//! The MPI link (`qemu_virt::mpi_link`) checked on one host as if it were several: `cargo xtask
//! test mpi_link` runs it under `mpirun` on 2 and 4 ranks forced over TCP, and `cargo xtask bench
//! mpi-link` for its figures.
//!
//! Every rank prints `rank R/N: check NAME ... ok` (or `... FAILED: why`) for each check it ran,
//! `rank R/N: figure NAME: VALUE UNIT (how)` for what it measured, and `rank R/N: finished` at its
//! end. With `--lose-last-rank` the last rank kills itself after the shared checks, as a host that
//! dies would vanish, and the others check that calls to it fail instead of hanging.

use qemu_virt::mpi_link::{Handler, Kind, Link, LinkConfig, LinkError, Rank, Reply};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// One-way: "hello from R to S".
const GREETING: Kind = 1;
/// Request: answered with every byte xor 0x5a, then the server's rank (u32, little-endian).
const ECHO: Kind = 2;
/// Request to rank 0, carrying the number of ranks that take part (u32): answered when all have.
const BARRIER: Kind = 3;
/// Request that is held unanswered until the checks release it.
const HOLD: Kind = 4;
/// One-way: bytes only counted.
const SINK: Kind = 5;
/// Request: answered with the bytes counted so far (u64), after every earlier message.
const DRAINED: Kind = 6;
/// Request: answered with the payload itself.
const MIRROR: Kind = 7;
/// One-way: 1 MiB of the sender's pattern, checked by the receiver.
const BIG: Kind = 8;
/// One-way: counted like `SINK`, after a millisecond's work.
const SLOW_SINK: Kind = 9;

const MIB: usize = 1 << 20;
const CONFIG: LinkConfig = LinkConfig { heartbeat: Duration::from_millis(100), lost_after: Duration::from_secs(2) };
const LONG: Duration = Duration::from_secs(60);

/// What the handler has seen; `changed` is notified after every change.
#[derive(Default)]
struct Seen {
    greetings: Vec<(Rank, Vec<u8>)>,
    /// Each 1 MiB message: from whom, and whether it was intact.
    big: Vec<(Rank, bool)>,
    lost: Vec<Rank>,
    barrier: Vec<Reply>,
    held: Vec<Reply>,
}

struct Checker {
    rank: Rank,
    seen: Mutex<Seen>,
    changed: Condvar,
    sunk: AtomicU64,
}

impl Checker {
    fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until `done` holds of what was seen, at most `timeout`.
    fn wait_for(&self, timeout: Duration, done: impl Fn(&Seen) -> bool) -> bool {
        let seen = self.seen();
        let (seen, _) = self.changed.wait_timeout_while(seen, timeout, |s| !done(s)).unwrap_or_else(|e| e.into_inner());
        done(&seen)
    }

    fn note(&self, change: impl FnOnce(&mut Seen)) {
        change(&mut self.seen());
        self.changed.notify_all();
    }
}

impl Handler for Checker {
    fn message(&self, from: Rank, kind: Kind, payload: Vec<u8>) {
        match kind {
            GREETING => self.note(|s| s.greetings.push((from, payload))),
            SINK => {
                self.sunk.fetch_add(payload.len() as u64, Ordering::Relaxed);
            }
            SLOW_SINK => {
                std::thread::sleep(Duration::from_millis(1));
                self.sunk.fetch_add(payload.len() as u64, Ordering::Relaxed);
            }
            BIG => self.note(|s| s.big.push((from, payload == pattern(big_seed(from), MIB)))),
            _ => eprintln!("rank {}: unexpected message kind {kind} from rank {from}", self.rank),
        }
    }

    fn request(&self, from: Rank, kind: Kind, payload: Vec<u8>, reply: Reply) {
        let _ = match kind {
            ECHO => reply.send(echo_of(&payload, self.rank)),
            MIRROR => reply.send(payload),
            DRAINED => reply.send(self.sunk.load(Ordering::Relaxed).to_le_bytes().to_vec()),
            HOLD => {
                self.note(|s| s.held.push(reply));
                Ok(())
            }
            BARRIER => {
                let parties = payload.try_into().map(u32::from_le_bytes).unwrap_or(0) as usize;
                let mut seen = self.seen();
                seen.barrier.push(reply);
                if seen.barrier.len() >= parties {
                    for waiting in seen.barrier.drain(..) {
                        let _ = waiting.send(Vec::new());
                    }
                }
                Ok(())
            }
            _ => reply.refuse(&format!("no request of kind {kind} (from rank {from})")),
        };
    }

    fn rank_lost(&self, rank: Rank) {
        self.note(|s| s.lost.push(rank));
    }
}

fn echo_of(payload: &[u8], server: Rank) -> Vec<u8> {
    let mut echo: Vec<u8> = payload.iter().map(|b| b ^ 0x5a).collect();
    echo.extend_from_slice(&(server as u32).to_le_bytes());
    echo
}

/// `len` bytes of a xorshift sequence from `seed`.
fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn big_seed(rank: Rank) -> u64 {
    0x9e37_79b9 * (rank as u64 + 1)
}

type Check = Result<(), String>;

/// Prints a check's line; 1 if it failed.
fn report(tag: &str, name: &str, verdict: Check) -> usize {
    match verdict {
        Ok(()) => {
            println!("{tag}: check {name} ... ok");
            0
        }
        Err(why) => {
            println!("{tag}: check {name} ... FAILED: {why}");
            1
        }
    }
}

struct Run<'a> {
    link: &'a Link,
    checker: &'a Checker,
    failures: usize,
}

impl Run<'_> {
    fn tag(&self) -> String {
        format!("rank {}/{}", self.link.rank(), self.link.ranks())
    }

    fn report(&mut self, name: &str, verdict: Check) {
        self.failures += report(&self.tag(), name, verdict);
    }

    fn others(&self) -> Vec<Rank> {
        (0..self.link.ranks()).filter(|&r| r != self.link.rank()).collect()
    }

    /// Every rank of `parties` (0 among them) waits here until all have come.
    fn barrier(&self, parties: usize) -> Check {
        self.link.call(0, BARRIER, (parties as u32).to_le_bytes().to_vec(), LONG).map(drop).map_err(|e| e.to_string())
    }

    fn echo(&self, to: Rank, payload: Vec<u8>, timeout: Duration) -> Check {
        let expected = echo_of(&payload, to);
        let got = self.link.call(to, ECHO, payload, timeout).map_err(|e| e.to_string())?;
        if got == expected { Ok(()) } else { Err(format!("rank {to} answered {} bytes, not the echo", got.len())) }
    }

    fn greetings(&self) -> Check {
        let me = self.link.rank();
        for to in self.others() {
            self.link.send(to, GREETING, format!("hello from {me} to {to}").into_bytes()).map_err(|e| e.to_string())?;
        }
        // Itself too: a rank may call itself.
        for to in 0..self.link.ranks() {
            self.echo(to, format!("ping {me} -> {to}").into_bytes(), LONG)?;
        }
        let expected = self.others().len();
        if !self.checker.wait_for(LONG, |s| s.greetings.len() >= expected) {
            return Err(format!("{} greetings of {expected} arrived", self.checker.seen().greetings.len()));
        }
        let seen = self.checker.seen();
        for (from, text) in &seen.greetings {
            if *text != format!("hello from {from} to {me}").into_bytes() {
                return Err(format!("rank {from} greeted {:?}", String::from_utf8_lossy(text)));
            }
        }
        Ok(())
    }

    /// 16 threads, 100 calls each to the other ranks in turn, each payload its own: every
    /// answer must be the echo of the caller's own request.
    fn concurrent_calls(&self) -> Check {
        let others = self.others();
        let me = self.link.rank();
        std::thread::scope(|scope| {
            let threads: Vec<_> = (0..16usize)
                .map(|thread| {
                    let others = &others;
                    scope.spawn(move || -> Check {
                        for i in 0..100usize {
                            let to = others[(thread + i) % others.len()];
                            let mut payload = format!("rank {me} thread {thread} call {i}:").into_bytes();
                            payload
                                .extend(pattern((me * 1000 + thread * 100 + i) as u64, (thread * 37 + i * 11) % 300));
                            self.echo(to, payload, LONG).map_err(|e| format!("thread {thread}, call {i}: {e}"))?;
                        }
                        Ok(())
                    })
                })
                .collect();
            threads.into_iter().try_for_each(|t| t.join().unwrap_or_else(|_| Err("a thread panicked".into())))
        })
    }

    /// 1 MiB to the next rank and back, and 1 MiB one way from the previous rank.
    fn big_payloads(&self) -> Check {
        let (me, n) = (self.link.rank(), self.link.ranks());
        let (next, previous) = ((me + 1) % n, (me + n - 1) % n);
        let sent = pattern(me as u64 + 77, MIB);
        let back = self.link.call(next, MIRROR, sent.clone(), LONG).map_err(|e| e.to_string())?;
        if back != sent {
            return Err(format!("1 MiB mirrored by rank {next} came back different ({} bytes)", back.len()));
        }
        self.link.send(next, BIG, pattern(big_seed(me), MIB)).map_err(|e| e.to_string())?;
        if !self.checker.wait_for(LONG, |s| !s.big.is_empty()) {
            return Err(format!("no 1 MiB message from rank {previous}"));
        }
        match self.checker.seen().big[..] {
            [(from, true)] if from == previous => Ok(()),
            ref got => Err(format!("1 MiB messages received (from, intact): {got:?}")),
        }
    }

    /// A live rank that holds a request: the call ends at its timeout; the late refusal that
    /// follows is dropped.
    fn timeout_and_bad_rank(&self) -> Check {
        let (me, n) = (self.link.rank(), self.link.ranks());
        let next = (me + 1) % n;
        let started = Instant::now();
        let got = self.link.call(next, HOLD, vec![1, 2, 3], Duration::from_millis(300));
        let took = started.elapsed();
        if got != Err(LinkError::Timeout { rank: next, after: Duration::from_millis(300) }) {
            return Err(format!("a held request ended {got:?}"));
        }
        if !(Duration::from_millis(300)..Duration::from_secs(3)).contains(&took) {
            return Err(format!("a 300 ms timeout took {took:?}"));
        }
        match self.link.call(n, ECHO, vec![], LONG) {
            Err(LinkError::NoSuchRank { rank, ranks }) if rank == n && ranks == n => Ok(()),
            other => Err(format!("a call to rank {n} of {n} ended {other:?}")),
        }
    }

    /// Rank 0 measures against rank 1: 64-byte calls, and 64 KiB messages.
    fn figures(&self) -> Check {
        const ROUND_TRIPS: usize = 2000;
        const MESSAGES: usize = 1024;
        const MESSAGE: usize = 64 << 10;
        for _ in 0..200 {
            self.echo(1, vec![7; 64], LONG)?;
        }
        let mut times: Vec<Duration> = (0..ROUND_TRIPS)
            .map(|_| {
                let started = Instant::now();
                self.echo(1, vec![7; 64], LONG).map(|()| started.elapsed())
            })
            .collect::<Result<_, _>>()?;
        times.sort();
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        println!(
            "{}: figure mpi_link_64b_round_trip_median: {:.1} us ({ROUND_TRIPS} calls of 64 B to rank 1, p99 {:.1} us)",
            self.tag(),
            us(times[ROUND_TRIPS / 2]),
            us(times[ROUND_TRIPS * 99 / 100])
        );
        let before = self.drained()?;
        let started = Instant::now();
        for _ in 0..MESSAGES {
            self.link.send(1, SINK, vec![0xab; MESSAGE]).map_err(|e| e.to_string())?;
        }
        let sunk = self.drained()? - before;
        let took = started.elapsed().as_secs_f64();
        if sunk != (MESSAGES * MESSAGE) as u64 {
            return Err(format!("rank 1 counted {sunk} bytes of {}", MESSAGES * MESSAGE));
        }
        let mib = sunk as f64 / MIB as f64;
        println!(
            "{}: figure mpi_link_64kib_message_throughput: {:.0} MiB/s ({MESSAGES} messages of 64 KiB to rank 1, {mib:.0} MiB in {took:.3} s)",
            self.tag(),
            mib / took
        );
        Ok(())
    }

    /// Rank 0 keeps rank 1 receiving for longer than `lost_after`: rank 1 must still say it is
    /// alive meanwhile.
    fn busy_receiver(&self) -> Check {
        let messages = (CONFIG.lost_after.as_millis() * 13 / 10) as usize;
        let before = self.drained()?;
        let started = Instant::now();
        for _ in 0..messages {
            self.link.send(1, SLOW_SINK, vec![1; 64]).map_err(|e| e.to_string())?;
        }
        let sunk = self.drained()? - before;
        let took = started.elapsed();
        if sunk != 64 * messages as u64 {
            return Err(format!("rank 1 counted {sunk} bytes of {}", 64 * messages));
        }
        if took < CONFIG.lost_after {
            return Err(format!("rank 1 was busy only {took:?}, not the {:?} the check needs", CONFIG.lost_after));
        }
        match self.link.lost_ranks() {
            lost if lost.is_empty() => Ok(()),
            lost => Err(format!("lost {lost:?}")),
        }
    }

    fn drained(&self) -> Result<u64, String> {
        let got = self.link.call(1, DRAINED, vec![], LONG).map_err(|e| e.to_string())?;
        got.try_into().map(u64::from_le_bytes).map_err(|g: Vec<u8>| format!("DRAINED answered {} bytes", g.len()))
    }

    /// The last rank is gone: the first call to it fails once it is found lost, the next at once,
    /// and the handler heard of it.
    fn lost_rank(&self, gone: Rank) -> Check {
        std::thread::sleep(Duration::from_millis(200));
        let started = Instant::now();
        let first = self.link.call(gone, ECHO, vec![1], LONG);
        let took = started.elapsed();
        if !matches!(first, Err(LinkError::RankLost(r)) if r == gone) {
            return Err(format!("the first call to the lost rank ended {first:?} after {took:?}"));
        }
        if took > CONFIG.lost_after + Duration::from_secs(2) {
            return Err(format!("the loss took {took:?} to find (lost_after {:?})", CONFIG.lost_after));
        }
        let started = Instant::now();
        let second = self.link.call(gone, ECHO, vec![2], LONG);
        let again = started.elapsed();
        if second != Err(LinkError::RankLost(gone)) || again > Duration::from_millis(100) {
            return Err(format!("the next call ended {second:?} after {again:?}"));
        }
        if self.link.send(gone, GREETING, vec![]) != Err(LinkError::RankLost(gone)) {
            return Err("a message to the lost rank was taken".into());
        }
        if !self.checker.wait_for(Duration::from_secs(1), |s| s.lost == [gone]) {
            return Err(format!("the handler heard of the loss of {:?}", self.checker.seen().lost));
        }
        if self.link.lost_ranks() != [gone] {
            return Err(format!("lost_ranks() is {:?}", self.link.lost_ranks()));
        }
        for to in self.others().into_iter().filter(|&r| r != gone) {
            self.echo(to, b"still here".to_vec(), LONG).map_err(|e| format!("survivor rank {to}: {e}"))?;
        }
        Ok(())
    }
}

fn main() {
    let lose_last = std::env::args().any(|a| a == "--lose-last-rank");
    let link = match Link::init(CONFIG) {
        Ok(link) => link,
        Err(e) => {
            eprintln!("mpi_link_check: {e}");
            std::process::exit(2);
        }
    };
    let (me, n) = (link.rank(), link.ranks());
    if n < 2 {
        eprintln!("mpi_link_check: needs at least 2 ranks (run it under mpirun -np 2 or more)");
        std::process::exit(2);
    }
    let checker =
        Arc::new(Checker { rank: me, seen: Mutex::default(), changed: Condvar::new(), sunk: AtomicU64::new(0) });
    if let Err(e) = link.serve(checker.clone()) {
        eprintln!("mpi_link_check: {e}");
        std::process::exit(2);
    }
    let mut run = Run { link: &link, checker: &checker, failures: 0 };
    let verdict = run.greetings();
    run.report("every_rank_greets_and_calls_every_other", verdict);
    let _ = run.barrier(n);
    let verdict = run.concurrent_calls();
    run.report("calls_from_16_threads_come_back_to_their_callers", verdict);
    let verdict = run.big_payloads();
    run.report("a_1_mib_payload_crosses_intact_both_ways", verdict);
    let verdict = run.timeout_and_bad_rank();
    run.report("a_held_request_times_out_and_a_missing_rank_is_refused", verdict);
    let _ = run.barrier(n);
    // The held requests are answered "refused" now, after their calls timed out.
    checker.seen().held.clear();
    if me == 0 {
        let verdict = run.figures();
        run.report("figures_of_the_link", verdict);
        let verdict = run.busy_receiver();
        run.report("a_rank_busy_receiving_for_longer_than_lost_after_is_not_lost", verdict);
    }
    let _ = run.barrier(n);
    let gone = n - 1;
    if lose_last && me == gone {
        println!("{}: leaving without a word, as planned", run.tag());
        // SAFETY: kill with this process's own id.
        unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
    }
    if lose_last {
        let verdict = run.lost_rank(gone);
        run.report("a_call_to_a_lost_rank_fails_when_it_is_found_lost_then_at_once", verdict);
    }
    let (tag, mut failures) = (run.tag(), run.failures);
    let expected_lost = if lose_last { vec![gone] } else { vec![] };
    let verdict = match link.shutdown() {
        Ok(ended) if ended.lost == expected_lost && ended.finalized == expected_lost.is_empty() => Ok(()),
        other => Err(format!("ended {other:?}, expected lost {expected_lost:?}")),
    };
    failures += report(&tag, "shutdown_waits_for_every_rank_and_names_the_lost", verdict);
    println!("{tag}: finished");
    std::process::exit(if failures == 0 { 0 } else { 1 });
}
