//! The cluster's looker (`docs/hw/forwarding.md`): one thread that, once a node's server has
//! been kicked, looks at every node's request slots and serves what it finds, until it has found
//! nothing for [`SPIN`]. While it looks, no guest of the cluster kicks, so a burst of accesses on
//! any node costs no kick and no wake-up.
//!
//! One looker for the whole cluster, not one per node: on a host with fewer cores than busy
//! nodes, a looking thread per node would take the cores the nodes' vCPUs need, and a node whose
//! server did not look would pay a kick and a wake-up for every access.

use super::Platform;
use board::Board as _;
use proto::forward::{Slots, look};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long the looker keeps looking after the last access it found, at first: the gap between
/// two accesses of a burst (a copy through the window, a packet's words, a request and its
/// reply on another node) is a few microseconds of guest work, and an idle cluster's looker
/// sleeps.
const SPIN: Duration = Duration::from_micros(50);
/// The longest it keeps looking. A guest that was off its host core for longer than the looker
/// looked (on a busy host), or that paid a kick, finds no looker and kicks; the kick costs it
/// tens of microseconds, longer than the looker waits, so a stream of accesses could go on
/// kicking for good. So a session that a kick starts soon after the last one ended looks twice
/// as long, up to this.
const SPIN_MAX: Duration = Duration::from_micros(800);
/// A session that starts within this of the last one's end doubles the wait.
const RESTART_SOON: Duration = Duration::from_millis(1);

type QemuBoard = board::zcu102_qemu::Zcu102Qemu;

#[derive(Default)]
struct Shared {
    /// A server asked the looker to look (cleared when it starts).
    nudged: Mutex<bool>,
    wake: Condvar,
    /// The looker is in a looking session: a nudge would change nothing.
    looking: AtomicBool,
    stop: AtomicBool,
    /// The platforms of the nodes this host runs, once all of them exist. Weak: the platforms'
    /// servers hold the looker's nudge, and whoever built them (the cluster) owns them.
    platforms: OnceLock<Vec<Weak<Platform>>>,
}

/// What a node's server holds: asks the looker to look.
#[derive(Clone)]
pub struct Nudge(Arc<Shared>);

impl Nudge {
    /// A guest kicked: it is likely to access again soon.
    pub fn nudge(&self) {
        if !self.0.looking.load(Ordering::Acquire) {
            self.0.wake();
        }
    }
}

pub struct Looker {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Looker {
    /// Starts the looker; it looks at the nodes [`set_platforms`](Self::set_platforms) gives it.
    pub fn spawn() -> Self {
        let shared = Arc::new(Shared::default());
        let me = shared.clone();
        // On a host with one core a looking thread only keeps the guests it waits for off the
        // core: there it looks once and sleeps.
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let thread = std::thread::spawn(move || {
            if cores > 1 {
                crate::host_priority::serve_promptly();
            }
            let (mut spin, mut ended, mut wakes_seen) = (SPIN, Instant::now(), 0);
            while me.wait_for_nudge() {
                spin = match cores {
                    1 => Duration::ZERO,
                    _ if ended.elapsed() < RESTART_SOON => (spin * 2).min(SPIN_MAX),
                    _ => SPIN,
                };
                me.looking.store(true, Ordering::Release);
                look_once(me.platforms.get().map_or(&[], Vec::as_slice), spin, cores > 1, &mut wakes_seen);
                me.looking.store(false, Ordering::Release);
                ended = Instant::now();
            }
        });
        Self { shared, thread: Some(thread) }
    }

    /// The platforms whose request slots the looker looks at (once; later calls change nothing).
    pub fn set_platforms(&self, platforms: &[Arc<Platform>]) {
        let _ = self.shared.platforms.set(platforms.iter().map(Arc::downgrade).collect());
    }

    pub fn nudge(&self) -> Nudge {
        Nudge(self.shared.clone())
    }

    /// Ends the looker (after its current session).
    pub fn stop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        self.shared.wake();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Looker {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Shared {
    /// Wakes the looker if it sleeps (under the lock it sleeps on, so that no wake-up is lost
    /// between its look at the flags and its sleep).
    fn wake(&self) {
        *self.nudged.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.wake.notify_one();
    }

    /// Sleeps until nudged; `false` once the looker is to stop.
    fn wait_for_nudge(&self) -> bool {
        let mut nudged = self.nudged.lock().unwrap_or_else(|p| p.into_inner());
        while !*nudged && !self.stop.load(Ordering::Acquire) {
            nudged = self.wake.wait(nudged).unwrap_or_else(|p| p.into_inner());
        }
        *nudged = false;
        !self.stop.load(Ordering::Acquire)
    }
}

/// One looking session over every running node's slots (`proto::forward::look`), until none
/// has posted anything for `spin`.
/// `wakes_seen`: the R5 wake bytes sent by the end of the last session; one sent since (by
/// this session's serving, or by the server whose kick started it) demotes the looker.
fn look_once(platforms: &[Weak<Platform>], spin: Duration, rt: bool, wakes_seen: &mut u64) {
    let slots_pa = QemuBoard::FORWARDING.expect("the QEMU board forwards").slots;
    let nodes: Vec<Arc<Platform>> = platforms.iter().filter_map(Weak::upgrade).collect();
    let served: Vec<(&Platform, &Slots)> = nodes
        .iter()
        .filter_map(|platform| {
            let ddr = platform.local.ddr()?;
            // SAFETY: the slots and flags are atomics; any bit pattern is valid.
            let slots = unsafe { ddr.view::<Slots>(slots_pa) }?;
            Some((&**platform, slots))
        })
        .collect();
    let areas: Vec<&Slots> = served.iter().map(|(_, slots)| *slots).collect();
    let mut idle_since = Instant::now();
    let mut demoted = false;
    let keep_looking = |idle_looks: u32| {
        if idle_looks == 0 {
            idle_since = Instant::now();
        }
        std::hint::spin_loop();
        // An R5 was woken: its QEMU's main loop and its vCPU must run, and a real-time looker
        // would keep them off a core of a small host for the rest of the session (up to
        // SPIN_MAX). The looker goes on looking as an ordinary thread.
        if rt && !demoted && crate::r5_wake::wakes_sent() != *wakes_seen {
            crate::host_priority::serve_fairly();
            demoted = true;
        }
        idle_since.elapsed() < spin
    };
    look(&areas, |node, cpu, slot, request| served[node].0.serve(cpu, slot, &request), keep_looking);
    *wakes_seen = crate::r5_wake::wakes_sent();
    if demoted {
        crate::host_priority::serve_promptly();
    }
}
