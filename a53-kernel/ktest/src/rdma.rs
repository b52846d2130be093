//! User-level RDMA through the kernel's front end (`docs/hw/pldma.md`): processes get a PD, an
//! SMMU context bank on their own tables and a queue set; `rdma-pair` moves and checks the bytes.
//! The node suite runs on one node; the cluster tests between nodes (node 0 drives, the others
//! serve its remote spawns).

use crate::cluster_support::{barrier, whoami};
use crate::ensure;
use crate::gsas::{finish, run};
use crate::testkit::{Test, TestResult};
use a53_kernel::arch::phys_to_virt;
use a53_kernel::mm::user_space::Touch;
use a53_kernel::process::lifecycle;
use a53_kernel::process::paging;
use a53_kernel::process::table::{self, Exit, Reap};
use a53_kernel::{rdma_node, rpu};
use board::pl::PLDMA_BASE;
use hal::pldma::regs::FAULT_OFFSET;
use proto::ipc::op;
use proto::rdma::ipc::RdmaStats;
use unimem_user::args::rdma_pair::{Role, pack};

pub const TESTS: &[Test] = &[
    Test::new("rdma", "write_and_read_every_size_16b_to_1mib_on_one_node", same_node),
    Test::new("rdma", "another_pds_memory_is_out_of_reach_and_unchanged", other_pd_here),
    Test::new("rdma", "transfers_from_and_into_device_memory_fault_and_change_no_byte", device_here),
    Test::new("rdma", "el0_access_to_the_smmu_and_pldma_registers_faults", el0_registers),
    Test::new(
        "rdma",
        "over_a_hundred_thousand_forged_rapfs_are_refused_at_the_engine_and_cost_another_job_nothing",
        forged_rapfs,
    ),
    Test::new("rdma", "faulting_source_destination_and_both_touch_ahead_with_no_timeout", faults_touch_ahead),
    Test::new("rdma", "faulting_source_destination_and_both_touch_a_page_with_no_timeout", faults_touch_a_page),
    Test::new("rdma", "faulting_source_destination_and_both_stalled_and_resumed_with_no_fault_message", faults_stall),
    Test::new("rdma", "faulting_transfers_of_four_pds_at_once_with_no_timeout", faults_four_pds),
];

/// The random-transfer stress, in the runs that ask for it (boot argument `rdma-stress`: the
/// lossy four-node run and `cargo xtask soak rdma`).
pub const STRESS_TESTS: &[Test] = &[Test::new("cluster", "rdma_random_transfers_from_every_node_all_arrive", stress)];

/// Run with boot argument `lost-block`, on links that lose the first 64 datagrams
/// (`cargo xtask test` run `cluster-2-lost-block`).
pub const LOST_BLOCK_TESTS: &[Test] =
    &[Test::new("cluster", "rdma_a_block_lost_whole_is_resent_when_its_timeout_wakes_the_sleeping_r5", lost_block)];

pub const CLUSTER_TESTS: &[Test] = &[
    Test::new("cluster", "rdma_the_r5_firmware_and_rdma_are_up_on_every_node", rdma_up),
    Test::new("cluster", "rdma_write_and_read_every_size_between_two_nodes", two_nodes),
    Test::new("cluster", "rdma_another_pd_on_a_remote_node_gets_no_byte", other_pd_remote),
    Test::new("cluster", "rdma_device_memory_on_either_node_is_out_of_the_engines_reach", device_remote),
    Test::new("cluster", "rdma_jobs_take_pds_from_their_nodes_share_then_run_without_rdma", pd_shares),
    Test::new("cluster", "rdma_faulting_writes_to_another_node_both_strategies_no_timeout", remote_faults),
];

/// Seconds an RDMA program may take.
const SECONDS: u64 = 300;

pub(crate) fn expect_zero(name: &str, exit: Exit) -> TestResult {
    match exit {
        Exit::Status(0) => Ok(()),
        other => {
            defmt::println!("{=str} ended with {}", name, defmt::Debug2Format(&other));
            Err("the program failed")
        }
    }
}

pub fn stats() -> Result<RdmaStats, &'static str> {
    let mut pages = [[0; 7]; proto::rdma::ipc::STATS_PAGES as usize];
    for (page, out) in pages.iter_mut().enumerate() {
        let reply = rpu::call(op::RDMA_STATS, [page as u64, 0, 0, 0, 0, 0, 0]).map_err(|_| "no RDMA_STATS reply")?;
        out.copy_from_slice(&reply.args);
    }
    Ok(RdmaStats::from_pages(pages))
}

/// Prints every timeout this node's R5 fired since boot (`proto::rdma::ipc::TIMEOUTS_LINE`),
/// which the runner weighs against the packets the links dropped at the end of a lossy run.
pub fn report_timeouts() {
    match stats() {
        Ok(s) => defmt::println!("{=str} {=u64}", proto::rdma::ipc::TIMEOUTS_LINE, s.timeout_retransmits),
        Err(e) => defmt::println!("no RDMA counters: {=str}", e),
    }
}

/// Prints the counters since `before` (the R5's and the kernel's); a slow R5 that does not answer
/// costs the report, not the test.
fn report(what: &str, before: &RdmaStats) -> TestResult {
    let Ok(s) = stats() else {
        defmt::println!("{=str}: the R5 did not answer RDMA_STATS", what);
        return Ok(());
    };
    let c = rdma_node::counters();
    defmt::println!(
        "{=str}: transfers {=u64} ok, {=u64} failed; blocks {=u64}; retransmits: timeout {=u64}, nack {=u64}; stale {=u64}, foreign {=u64}; kernel fault entries {=u64}, SMMU faults {=u64}, CQ wake-ups {=u64}",
        what,
        s.transfers_completed - before.transfers_completed,
        s.transfers_failed - before.transfers_failed,
        s.blocks_sent - before.blocks_sent,
        s.timeout_retransmits - before.timeout_retransmits,
        s.nack_retransmits - before.nack_retransmits,
        s.stale_messages - before.stale_messages,
        s.foreign_messages - before.foreign_messages,
        c.fault_entries,
        c.context_faults,
        c.cq_wakeups
    );
    Ok(())
}

/// Prints every engine counter (`docs/hw/pldma.md`, "Counters") and the R5's oddities.
fn report_engine() {
    for c in hal::pldma::regs::Counter::ALL {
        if let Some(value) = rdma_node::engine_counter(c) {
            defmt::println!("engine {}: {=u64}", defmt::Debug2Format(&c), value);
        }
    }
    if let Ok(s) = stats() {
        defmt::println!("R5: {}", defmt::Debug2Format(&s));
    }
}

/// A run that loads the R5 (boot argument `r5`) has it up, with RDMA, on every node: an R5 that
/// did not start fails here, whatever the other tests would make of it.
fn rdma_up() -> TestResult {
    ensure(rpu::is_started(), "the run loads the R5 firmware, and it did not start")?;
    needs_rdma()
}

fn needs_rdma() -> TestResult {
    ensure(rdma_node::available(), "this node has no RDMA (no R5 firmware, or the SMMU did not reset)")
}

/// What a node that does not drive an RDMA cluster test checks of its own between the test's
/// barriers, so that its result means something: its R5 failed no transfer and took no foreign
/// message, its engine lost no event; and, where the test aims at it, the work it did.
#[derive(Clone, Copy)]
struct OwnCounters {
    r5: RdmaStats,
    events_lost: u64,
    kernel: rdma_node::Counters,
}

impl OwnCounters {
    fn now() -> Result<Self, &'static str> {
        needs_rdma()?;
        let events_lost = rdma_node::engine_counter(hal::pldma::regs::Counter::EventsLost).unwrap_or(0);
        Ok(Self { r5: stats()?, events_lost, kernel: rdma_node::counters() })
    }

    /// Nothing went wrong here since `self`; returns the counters now.
    fn unharmed(&self) -> Result<Self, &'static str> {
        let now = Self::now()?;
        ensure(now.r5.transfers_failed == self.r5.transfers_failed, "a transfer of this node failed")?;
        ensure(now.r5.foreign_messages == self.r5.foreign_messages, "this node's R5 took a foreign message")?;
        ensure(now.events_lost == self.events_lost, "this node's engine lost an event")?;
        Ok(now)
    }
}

fn same_node() -> TestResult {
    needs_rdma()?;
    let (me, _) = whoami()?;
    let before = stats().unwrap_or_default();
    expect_zero("rdma-pair sweep", run("rdma-pair", pack(Role::Sweep { node: me }))?)?;
    report("same node", &before)
}

/// A `MAP_DEVICE` region is out of the engine's reach (`docs/hw/smmu.md`, "What the engine
/// may reach"): as the source or the destination, local or remote.
fn device_here() -> TestResult {
    needs_rdma()?;
    let (me, _) = whoami()?;
    expect_zero("rdma-pair device", run("rdma-pair", pack(Role::Device { node: me }))?)
}

fn device_remote() -> TestResult {
    let (me, _) = whoami()?;
    let own = OwnCounters::now();
    barrier(1180)?;
    let check = || {
        needs_rdma().and_then(|()| expect_zero("rdma-pair device", run("rdma-pair", pack(Role::Device { node: 1 }))?))
    };
    let result = if me == 0 { check() } else { own.and_then(|o| o.unharmed()).map(drop) };
    barrier(1181)?;
    result
}

/// A victim of its own PD and an attacker of another on this node (and, with `remote`, at a
/// node where the attacker's PD has no process).
fn victim_and_attacker(remote: u16) -> TestResult {
    let victim = lifecycle::spawn("rdma-pair", Some(pack(Role::Victim)), Reap::Wait).map_err(|_| "no victim")?;
    let attack = run("rdma-pair", pack(Role::Attack { node: remote }));
    let victim = finish(victim, SECONDS);
    expect_zero("rdma-pair attack", attack?)?;
    expect_zero("rdma-pair victim", victim?)
}

fn other_pd_here() -> TestResult {
    needs_rdma()?;
    let (me, _) = whoami()?;
    victim_and_attacker(me)
}

fn el0_registers() -> TestResult {
    let smmu = board::SMMU_BASE;
    let control = PLDMA_BASE;
    let fault = PLDMA_BASE + FAULT_OFFSET;
    let addresses = [
        phys_to_virt(smmu) as u64,
        phys_to_virt(smmu + 0x1_0000) as u64,
        phys_to_virt(control) as u64,
        phys_to_virt(fault) as u64,
        smmu,
        control,
        fault,
    ];
    for address in addresses {
        match run("touch", address)? {
            Exit::Fault { .. } => {}
            _ => {
                defmt::println!("EL0 read {=u64:#x} and lived", address);
                return Err("a process reached a kernel-only register");
            }
        }
    }
    Ok(())
}

fn two_nodes() -> TestResult {
    let (me, _) = whoami()?;
    let own = OwnCounters::now();
    barrier(1100)?;
    // A failure on node 0 must still reach the barrier, or the others wait for it in vain.
    let sweep = || {
        needs_rdma()?;
        let before = stats().unwrap_or_default();
        expect_zero("rdma-pair sweep", run("rdma-pair", pack(Role::Sweep { node: 1 }))?)?;
        report("two nodes", &before)
    };
    let result = if me == 0 { sweep() } else { Ok(()) };
    barrier(1101)?;
    // Node 1 served the sweep's reads (a read is a request its R5 serves); the others only stay
    // unharmed.
    if me != 0 {
        let (before, after) = (own?, own?.unharmed()?);
        let served = after.r5.read_requests_served - before.r5.read_requests_served;
        ensure(me != 1 || served > 0, "node 1 served none of the sweep's reads")?;
    }
    result
}

/// Node 0 writes one 16 KiB block to node 1 over links that lose its 64 packets: no ACK, no
/// NACK, no event at all comes back, so the R5 sleeps with the block's retransmission deadline
/// as its timeout, and only its timer can wake it to send the block again. The write must end
/// well (the peer checks every byte), after at least one timeout, with the R5 asleep meanwhile.
fn lost_block() -> TestResult {
    use unimem_user::args::rdma_bench::{Role, pack};
    let (me, _) = whoami()?;
    barrier(1150)?;
    let write = || -> TestResult {
        needs_rdma()?;
        let before = stats()?;
        let (_, rings_before) = rpu::r5_sleep_state().ok_or("no R5")?;
        let sleeps_before = rpu::r5_sleeps().ok_or("no R5")?;
        expect_zero("rdma-bench", run("rdma-bench", pack(Role::Writes { node: 1, count: 1, log2: 14 }))?)?;
        let after = stats()?;
        let sleeps = rpu::r5_sleeps().ok_or("no R5")?.wrapping_sub(sleeps_before);
        let (_, rings_after) = rpu::r5_sleep_state().ok_or("no R5")?;
        defmt::println!(
            "lost block: {=u64} timeout retransmissions, {=u32} R5 sleeps, {=u32} doorbells",
            after.timeout_retransmits - before.timeout_retransmits,
            sleeps,
            rings_after.wrapping_sub(rings_before)
        );
        ensure(after.transfers_failed == before.transfers_failed, "the write failed")?;
        ensure(after.timeout_retransmits > before.timeout_retransmits, "no timeout fired: no block was lost")?;
        ensure(sleeps > 0, "the R5 never slept")
    };
    let own = OwnCounters::now();
    let result = if me == 0 { write() } else { own.and_then(|o| o.unharmed()).map(drop) };
    barrier(1151)?;
    result
}

fn other_pd_remote() -> TestResult {
    let (me, n) = whoami()?;
    let own = OwnCounters::now();
    barrier(1200)?;
    let result = if me == 0 { needs_rdma().and_then(|()| victim_and_attacker(n - 1)) } else { Ok(()) };
    barrier(1201)?;
    // The attacker's PD has no process on the last node: its engine refuses the packets there
    // (NoRemotePd), and nothing there is harmed.
    if me != 0 {
        own?.unharmed()?;
    }
    result
}

/// Every node starts jobs (sleeping `spin`s) until one runs without RDMA: the ones before hold
/// distinct PDs of the node's share (`proto::rdma::domain::share`), so no two nodes' jobs share
/// a PD, and the one after is in `NO_RDMA` and holds nothing.
fn pd_shares() -> TestResult {
    use proto::rdma::domain::{NO_RDMA, share};
    let (me, n) = whoami()?;
    barrier(1250)?;
    let mut jobs = heapless::Vec::<table::Handle, { hal::pldma::PDS }>::new();
    let mut check = || -> TestResult {
        let mut held = 0u16;
        loop {
            let handle = lifecycle::spawn("spin", Some(1), Reap::Wait).map_err(|_| "cannot spawn")?;
            jobs.push(handle).map_err(|_| "more jobs with RDMA than there are PDs")?;
            let (pd, holds) =
                lifecycle::TABLE.lock().process(handle).map(|(_, p)| (p.pd, p.holds_pd)).ok_or("no process")?;
            if pd == NO_RDMA {
                ensure(!holds, "a process holds NO_RDMA")?;
                break;
            }
            ensure(holds, "a new job does not hold its PD")?;
            ensure(share(me, n) & (1 << pd.raw()) != 0, "a new job's PD is not of this node's share")?;
            ensure(held & (1 << pd.raw()) == 0, "two jobs got one PD")?;
            held |= 1 << pd.raw();
        }
        ensure(held != 0, "no job got a PD")
    };
    let result = check();
    for &job in &jobs {
        lifecycle::kill(job);
        let _ = finish(job, 10);
    }
    barrier(1251)?;
    result
}

/// `rdma-faults`' matrix on this node with the kernel answering faults by `touch`, in terminate
/// or `stall` mode: every transfer completes byte for byte, the errors end in FaultLocal, the
/// kernel resolved faults, and no timeout fired; in stall mode RESUME retried stalled accesses
/// and no block was sent again for a fault.
fn faults_with(touch: Touch, stall: bool) -> TestResult {
    use unimem_user::args::rdma_faults::{Role, pack};
    needs_rdma()?;
    let before = stats()?;
    let kernel_before = rdma_node::counters();
    paging::set_rdma_touch(touch);
    let mode = rdma_node::set_stall_mode(stall);
    let exit = run("rdma-faults", pack(Role::Local));
    rdma_node::set_stall_mode(mode);
    paging::set_rdma_touch(Touch::Block);
    expect_zero("rdma-faults", exit?)?;
    let after = stats()?;
    let kernel_after = rdma_node::counters();
    let resolved = kernel_after.faults_resolved - kernel_before.faults_resolved;
    let resumed = kernel_after.stalls_resumed - kernel_before.stalls_resumed;
    let retransmitted = after.fault_retransmits() - before.fault_retransmits();
    if stall {
        // Stalled accesses are retried by RESUME: no fault message, no block sent again (the
        // error cases end with Abort, which retransmits nothing).
        ensure(resumed > 0, "no stalled access was resumed")?;
        ensure(retransmitted == 0, "a block was retransmitted in stall mode")?;
        ensure(after.stalls_resumed > before.stalls_resumed, "no block was taken off pause by a Resumed PF-NACK")?;
    }
    defmt::println!(
        "faults ({}, stall {=bool}): {=u64} resolved by the kernel, {=u64} stalls resumed ({=u64} with no record), {=u64} retransmitted on RAPF or fault message, {=u64} PF-NACKs, {=u64} timeouts ({=u64} of paused blocks)",
        defmt::Debug2Format(&touch),
        stall,
        resolved,
        resumed,
        kernel_after.unrecorded_stalls - kernel_before.unrecorded_stalls,
        retransmitted,
        after.pf_nacks - before.pf_nacks,
        after.timeout_retransmits - before.timeout_retransmits,
        after.paused_timeouts - before.paused_timeouts
    );
    ensure(resolved > 0, "the kernel resolved no fault")?;
    ensure(after.timeout_retransmits == before.timeout_retransmits, "a timeout fired")
}

/// `rdma-faults`' matrix from node 0 to node 1, with touch-ahead then touch-a-page on both
/// nodes: every write lands byte for byte, and no timeout fires on node 0's R5, except on lossy
/// links (boot argument `lossy`), where a timeout is how a dropped packet is sent again. In stall
/// mode (boot argument `smmu-stall`, both nodes) the faults of both sides are stalled and
/// resumed: node 0 resumes its source's, and no block is sent again for a fault, even on lossy
/// links.
fn remote_faults() -> TestResult {
    use unimem_user::args::rdma_faults::{Role, pack};
    let (me, n) = whoami()?;
    let stall = rdma_node::stall_mode();
    let mut result = Ok(());
    for (round, touch) in [Touch::Block, Touch::Page].into_iter().enumerate() {
        paging::set_rdma_touch(touch);
        barrier(1260 + 2 * round as u64)?;
        let own = OwnCounters::now();
        if me == 0 && n > 1 && result.is_ok() {
            result = (|| {
                needs_rdma()?;
                let (before, kernel_before) = (stats()?, rdma_node::counters());
                expect_zero("rdma-faults remote", run("rdma-faults", pack(Role::Remote { node: 1 }))?)?;
                let (after, kernel_after) = (stats()?, rdma_node::counters());
                let lossy = a53_kernel::kernel::boot_args().flag("lossy");
                ensure(lossy || after.timeout_retransmits == before.timeout_retransmits, "a timeout fired")?;
                if stall {
                    let resent = after.fault_retransmits() - before.fault_retransmits();
                    ensure(resent == 0, "a block was retransmitted for a fault in stall mode")?;
                    ensure(kernel_after.stalls_resumed > kernel_before.stalls_resumed, "no source stall resumed")?;
                }
                Ok(())
            })();
        }
        barrier(1261 + 2 * round as u64)?;
        if me != 0 && result.is_ok() {
            // The destination's pages are node 1's: its kernel gave them their frames.
            result = own.and_then(|o| o.unharmed().map(|now| (o, now))).and_then(|(before, now)| {
                let resolved = now.kernel.faults_resolved - before.kernel.faults_resolved;
                ensure(me != 1 || resolved > 0, "node 1 resolved none of the writes' faults")
            });
        }
    }
    paging::set_rdma_touch(Touch::Block);
    result
}

/// Four `rdma-faults` matrices at once, each process a job of its own PD: the kernel resolves
/// faults of several PDs and transfers in flight together; every byte lands, no timeout fires.
fn faults_four_pds() -> TestResult {
    use unimem_user::args::rdma_faults::{Role, pack};
    needs_rdma()?;
    let before = stats()?;
    let mut jobs = heapless::Vec::<table::Handle, 4>::new();
    for _ in 0..4 {
        let handle =
            lifecycle::spawn("rdma-faults", Some(pack(Role::Local)), Reap::Wait).map_err(|_| "cannot spawn")?;
        let _ = jobs.push(handle);
    }
    let mut pds = 0u16;
    for &job in &jobs {
        if let Some((_, p)) = lifecycle::TABLE.lock().process(job) {
            pds |= 1 << p.pd.raw();
        }
    }
    let mut result = ensure(pds.count_ones() == 4, "the four processes do not have four PDs");
    for &job in &jobs {
        let exit = finish(job, SECONDS).and_then(|exit| expect_zero("rdma-faults", exit));
        result = result.and(exit);
    }
    let after = stats()?;
    result?;
    if after.timeout_retransmits != before.timeout_retransmits {
        defmt::println!(
            "timeouts {=u64}; posts (refused, lost) {}; kernel {}; R5 {}",
            after.timeout_retransmits - before.timeout_retransmits,
            defmt::Debug2Format(&rpu::post_counters()),
            defmt::Debug2Format(&rdma_node::counters()),
            defmt::Debug2Format(&after)
        );
        report_engine();
    }
    ensure(after.timeout_retransmits == before.timeout_retransmits, "a timeout fired")
}

fn faults_touch_ahead() -> TestResult {
    faults_with(Touch::Block, false)
}

fn faults_touch_a_page() -> TestResult {
    faults_with(Touch::Page, false)
}

fn faults_stall() -> TestResult {
    faults_with(Touch::Block, true)
}

/// Transfers per node in the suite: 4 nodes x 256 = 1024.
const STRESS_TRANSFERS: u16 = 256;

fn stress() -> TestResult {
    let (me, n) = whoami()?;
    barrier(1300)?;
    // As in `two_nodes`: node 0's failure must still reach the barrier.
    let drive = || {
        needs_rdma()?;
        let before = stats().unwrap_or_default();
        let count = arg_u64("rdma-transfers").map_or(STRESS_TRANSFERS, |c| c.div_ceil(u64::from(n)) as u16);
        let seed = arg_u64("rdma-seed").unwrap_or(0x5eed) as u32;
        let handle = lifecycle::spawn("rdma-pair", Some(pack(Role::Stress { count, seed })), Reap::Wait)
            .map_err(|_| "cannot spawn")?;
        let outcome = finish(handle, 1800).and_then(|exit| expect_zero("rdma-pair stress", exit));
        // Whether it passed or not: a failure's counters say where the blocks went.
        report("stress", &before)?;
        outcome
    };
    let own = OwnCounters::now();
    let result = if me == 0 { drive() } else { Ok(()) };
    barrier(1301)?;
    // Every node's engine and R5 counters: where a failure's blocks went.
    report_engine();
    // Each node's worker moved its share: its own R5 started transfers and failed none.
    let own = own.and_then(|before| before.unharmed().map(|now| (before, now)));
    let started = own.map(|(before, now)| now.r5.transfers_started - before.r5.transfers_started);
    result.and(started.and_then(|s| ensure(s > 0, "this node's worker started no transfer")))
}

/// A number from the boot arguments (`rdma-transfers=N`, `rdma-seed=N`: the soak's).
fn arg_u64(name: &str) -> Option<u64> {
    a53_kernel::kernel::boot_args().value(name)?.parse().ok()
}

/// Rounds of forged RAPFs (`rdma-pair` Forge): 196 x 512 = 100,352 messages.
const FORGE_ROUNDS: u16 = 196;

/// The board's retransmission settings (`board::qfdb`): 1 ms, 32 timeouts before a block fails.
const BOARD_TIMEOUT_US: u64 = 1_000;
const BOARD_MAX_TIMEOUTS: u64 = 32;

/// A misbehaving process (`rdma-pair` Forge) writes over 10^5 RAPF Aborts from its PD page, as
/// fast as it can, for every tid of this node's R5, claiming its own PD and another one, while
/// a process of another PD (`rdma-bench`) has 16 x 1 MiB of writes in flight here, under the
/// board's retransmission settings. The engine must refuse every forgery at the door
/// (`docs/hw/pldma.md`, "Who may send a RAPF"): none reaches the R5, no event of anybody is
/// lost, the victim's writes all complete and land byte for byte with no Timeout, and the
/// forger's own real transfer afterwards is byte-exact.
fn forged_rapfs() -> TestResult {
    use board::Board as _;
    use unimem_user::args::rdma_pair::FORGE_PER_ROUND;
    needs_rdma()?;
    let (me, _) = whoami()?;
    let board = [BOARD_TIMEOUT_US, 0, BOARD_MAX_TIMEOUTS, 0, 0, 0, 0];
    rpu::call(op::RDMA_CONFIG, board).map_err(|_| "no RDMA_CONFIG reply")?;
    let result = forge_beside_a_victim(me, FORGE_PER_ROUND * u64::from(FORGE_ROUNDS));
    let qemu = [a53_kernel::Board::RDMA_TIMEOUT_US, 0, u64::from(a53_kernel::Board::RDMA_MAX_TIMEOUTS), 0, 0, 0, 0];
    rpu::call(op::RDMA_CONFIG, qemu).map_err(|_| "no RDMA_CONFIG reply")?;
    result
}

fn forge_beside_a_victim(me: u16, forged: u64) -> TestResult {
    use unimem_user::args::rdma_bench;
    let before = stats()?;
    let lost = || rdma_node::engine_counter(hal::pldma::regs::Counter::EventsLost).unwrap_or(0);
    let lost_before = lost();
    let writes = rdma_bench::Role::Writes { node: me, count: 16, log2: 20 };
    let victim = lifecycle::spawn("rdma-bench", Some(rdma_bench::pack(writes)), Reap::Wait).map_err(|_| "no victim")?;
    let victim_pd = lifecycle::TABLE.lock().process(victim).map(|(_, p)| p.pd).ok_or("no victim process")?;
    let forger = run("rdma-pair", pack(Role::Forge { node: me, rounds: FORGE_ROUNDS }));
    let victim = finish(victim, SECONDS);
    expect_zero("rdma-pair forge", forger?)?;
    expect_zero("rdma-bench victim", victim?)?;
    let after = stats()?;
    report("forged RAPFs", &before)?;
    // A forged RAPF that reached the R5 would be foreign (half claim another PD) or stale; an
    // ACK of an attempt a (1 ms) timeout resent is stale too, so stale ones count only past the
    // timeouts.
    let timeouts = after.timeout_retransmits - before.timeout_retransmits;
    let stale = after.stale_messages - before.stale_messages;
    let reached = (after.foreign_messages - before.foreign_messages) + stale.saturating_sub(timeouts);
    let lost = lost() - lost_before;
    let victim_lost = rdma_node::pd_counters(victim_pd).map_or(u32::MAX, |c| c.0);
    defmt::println!(
        "{=u64} forged RAPFs: {=u64} reached the R5, {=u64} events lost, {=u32} of the victim's, {=u64} timeouts",
        forged,
        reached,
        lost,
        victim_lost,
        timeouts
    );
    ensure(after.transfers_failed == before.transfers_failed, "a transfer failed")?;
    ensure(reached == 0, "a forged RAPF reached the R5")?;
    ensure(lost == 0 && victim_lost == 0, "an event was lost")
}
