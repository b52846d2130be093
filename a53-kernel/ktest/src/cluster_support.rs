//! Helpers for tests that run on every node of a cluster at once: access to another node's
//! memory through the global address window, and a barrier built on it.
//!
//! Rendezvous words live in each node's `TEST_RENDEZVOUS` page (fresh QEMU memory is zero, so
//! nothing needs clearing): word `i` of block `BARRIER` / `ROLL_CALL` in node 0's page belongs
//! to node `i`; word `i` of block `FLAGS` in a node's own page is set by node `i`.

use a53_kernel::arch::phys_to_virt;
use board::layout::TEST_RENDEZVOUS;
use board::pl::window_address;

pub const BARRIER: u64 = 0x000;
pub const ROLL_CALL: u64 = 0x100;
pub const FLAGS: u64 = 0x200;
/// Values one node publishes for all (word `i` in node 0's page).
pub const VALUES: u64 = 0x300;

/// Publishes `value` as value `index` (in node 0's rendezvous page).
pub fn publish(index: u16, value: u64) {
    // SAFETY: node 0's rendezvous page is reserved for these words.
    unsafe { remote::<u64>(0, rendezvous(VALUES, index)).write_volatile(value) };
}

/// Reads value `index` that some node published.
pub fn published(index: u16) -> u64 {
    // SAFETY: as in `publish`.
    unsafe { remote::<u64>(0, rendezvous(VALUES, index)).read_volatile() }
}

/// This node's id and the cluster's size, from the system block.
pub fn whoami() -> Result<(u16, u16), &'static str> {
    let id = a53_kernel::cluster::identity().map_err(|_| "no system block")?;
    Ok((id.node, id.node_count))
}

/// What a node that only watches a cluster test checks of its own: that it still sees the nodes
/// doing the work as reachable (a test's failure must not leave them lost to the others).
pub fn sees_alive(nodes: &[u16]) -> Result<(), &'static str> {
    if nodes.iter().all(|&n| a53_kernel::cluster::is_alive(u64::from(n))) {
        Ok(())
    } else {
        Err("a node doing the work became unreachable from here")
    }
}

/// The kernel's pointer to physical address `pa` of node `node`, through the window.
pub fn remote<T>(node: u16, pa: u64) -> *mut T {
    phys_to_virt(window_address(node, pa).expect("address outside the window")) as *mut T
}

/// The kernel's pointer to this node's own physical address `pa`.
pub fn local<T>(pa: u64) -> *mut T {
    phys_to_virt(pa) as *mut T
}

pub fn rendezvous(block: u64, index: u16) -> u64 {
    TEST_RENDEZVOUS + block + 8 * u64::from(index)
}

/// How a waiting node paces its looks at another node's words: asleep between them, so that it
/// leaves the host's CPUs to the nodes doing the work.
#[derive(Clone, Copy)]
enum Looks {
    /// Every millisecond: a wait ends within a millisecond of the others.
    Prompt,
    /// After an eighth of the wait so far, 1 to 16 ms: a long wait costs at most an eighth more
    /// and looks far less often (each look is a window load per node, a round trip over MPI to
    /// a node of another rank). Only for waits known to be long: the many short barriers of the
    /// cluster runs paced so took `cluster-4` from 11 s to 36 s.
    Patient,
}

impl Looks {
    fn pause(self, waited: u64) {
        let ms = a53_kernel::timer::hz() / 1000;
        let ticks = match self {
            Looks::Prompt => ms,
            Looks::Patient => (waited / 8).clamp(ms, 16 * ms),
        };
        a53_kernel::timer::sleep_until(a53_kernel::timer::now() + ticks);
    }
}

/// Waits until `ready()` or `seconds` pass.
pub fn wait_for(seconds: u64, ready: impl FnMut() -> bool) -> Result<(), &'static str> {
    wait_looking(seconds, Looks::Prompt, ready)
}

fn wait_looking(seconds: u64, looks: Looks, mut ready: impl FnMut() -> bool) -> Result<(), &'static str> {
    let started = a53_kernel::timer::now();
    let give_up = started + seconds * a53_kernel::timer::hz();
    while !ready() {
        let now = a53_kernel::timer::now();
        if now > give_up {
            return Err("timed out waiting for the other nodes");
        }
        looks.pause(now - started);
    }
    Ok(())
}

/// Every node calls this with the same, increasing `generation`; it returns when all have (a
/// node that is gone does not count: its survivors go on without it).
pub fn barrier(generation: u64) -> Result<(), &'static str> {
    barrier_within(generation, 60)
}

/// [`barrier`], waiting up to `seconds` for the others (after a long piece of work on one node).
pub fn barrier_within(generation: u64, seconds: u64) -> Result<(), &'static str> {
    barrier_looking(generation, seconds, Looks::Prompt)
}

/// [`barrier_within`] for nodes that wait long while another works alone (a benchmark's timed
/// node): they look less often as they wait ([`Looks::Patient`]).
pub fn patient_barrier(generation: u64, seconds: u64) -> Result<(), &'static str> {
    barrier_looking(generation, seconds, Looks::Patient)
}

fn barrier_looking(generation: u64, seconds: u64, looks: Looks) -> Result<(), &'static str> {
    let (me, n) = whoami()?;
    // SAFETY: the rendezvous page is reserved for these words; the window forwards the store.
    unsafe { remote::<u64>(0, rendezvous(BARRIER, me)).write_volatile(generation) };
    wait_looking(seconds, looks, || {
        (0..n).all(|i| {
            // SAFETY: as above; reads of other nodes' words.
            !a53_kernel::cluster::is_alive(u64::from(i))
                || unsafe { remote::<u64>(0, rendezvous(BARRIER, i)).read_volatile() } >= generation
        })
    })
}
